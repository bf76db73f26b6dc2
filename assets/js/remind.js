// "Remind me" of an upcoming sale (views/partials_remind.html): the button shows whether the shopper is
// reminded, asks for or drops the reminder, and offers to log in, or to add a verified e-mail address
// (409 email_required), when that is what is missing. The shopper's reminders are asked once a page, by a
// signed-in shopper on a page with a sale still to start (its crowd's last minutes included: a shopper who
// asked is told so, not offered it again); one indexed read of the shopper's own rows.
(function () {
  "use strict";
  var boxes = Array.prototype.slice.call(document.querySelectorAll("[data-remind]")).filter(function (box) {
    return Date.parse(box.dataset.starts) > Date.now();
  });
  if (!boxes.length) return;
  var signedIn = /(^|; )sk_in=1/.test(document.cookie);
  function show(box, on) {
    var btn = box.querySelector("[data-remind-button]");
    btn.textContent = on ? box.dataset.wordOn : box.dataset.wordButton;
    btn.setAttribute("aria-pressed", on ? "true" : "false");
    btn.disabled = on;
    box.querySelector("[data-remind-off]").hidden = !on;
    box.querySelector(".remind-email").hidden = true;
  }
  function fail(box, e) {
    var err = box.querySelector(".form-error");
    err.textContent = "";
    if (e.code === "email_required") {
      box.querySelector(".remind-email").hidden = false;
    } else if (e.status === 401) {
      var login = box.querySelector("[data-remind-login]");
      login.href = "/login?next=" + encodeURIComponent(location.pathname);
      box.querySelector(".remind-login").hidden = false;
    } else {
      err.textContent = e.message || box.dataset.wordFailed;
    }
  }
  boxes.forEach(function (box) {
    var path = "/api/activities/" + box.dataset.remind + "/reminder";
    box.querySelector("[data-remind-button]").addEventListener("click", function (ev) {
      var btn = ev.currentTarget;
      btn.disabled = true;
      box.dataset.touched = "1";
      window.api("POST", path).then(function () { show(box, true); })
        .catch(function (e) { btn.disabled = false; fail(box, e); });
    });
    var off = box.querySelector("[data-remind-off]");
    off.addEventListener("click", function () {
      off.disabled = true;
      box.dataset.touched = "1";
      window.api("DELETE", path).then(function () { off.disabled = false; show(box, false); })
        .catch(function (e) { off.disabled = false; fail(box, e); });
    });
  });
  if (!signedIn) return;
  window.api("GET", "/api/me/reminders").then(function (list) {
    var on = {};
    (list || []).forEach(function (r) { on[r.activity_id] = true; });
    // A box clicked while the list was on its way shows what the click answered, which is newer.
    boxes.forEach(function (box) { if (!box.dataset.touched) show(box, !!on[box.dataset.remind]); });
  }).catch(function () { /* the button still works: it says so on a click */ });
})();
