// "Remind me" of an upcoming sale (views/partials_remind.html): the button shows whether the shopper is
// reminded, asks for or drops the reminder, and offers to log in, or to add a verified e-mail address
// (409 email_required), when that is what is missing. The shopper's reminders are asked once a page, by a
// signed-in shopper on a page with a sale still to start, one indexed read of the shopper's own rows; in a
// sale's last quarter hour, when its crowd gathers and reloads, the page makes no such read (no database
// read for a crowd's page loads) and says what this browser last learnt (kept in localStorage with every
// answer): a shopper who asked here is told so, not offered it again.
(function () {
  "use strict";
  var signedIn = /(^|; )sk_in=1/.test(document.cookie);
  var CROWD = 15 * 60 * 1000, KEY = "sk_reminded";
  // What this browser learnt is its signed-in shopper's: a page seen logged out, and the login and register
  // pages (accounts.js), forget it.
  if (!signedIn) { try { localStorage.removeItem(KEY); } catch (e) { /* nothing kept */ } }
  var boxes = Array.prototype.slice.call(document.querySelectorAll("[data-remind]")).filter(function (box) {
    return Date.parse(box.dataset.starts) > Date.now();
  });
  if (!boxes.length) return;
  function known() {
    try { return JSON.parse(localStorage.getItem(KEY) || "{}") || {}; } catch (e) { return {}; }
  }
  function remember(id, on) {
    try {
      var k = known();
      if (on) { k[id] = 1; } else { delete k[id]; }
      localStorage.setItem(KEY, JSON.stringify(k));
    } catch (e) { /* private mode: the page still works, it only forgets */ }
  }
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
      window.api("POST", path).then(function () { remember(box.dataset.remind, true); show(box, true); })
        .catch(function (e) { btn.disabled = false; fail(box, e); });
    });
    var off = box.querySelector("[data-remind-off]");
    off.addEventListener("click", function () {
      off.disabled = true;
      box.dataset.touched = "1";
      window.api("DELETE", path).then(function () { off.disabled = false; remember(box.dataset.remind, false); show(box, false); })
        .catch(function (e) { off.disabled = false; fail(box, e); });
    });
  });
  if (!signedIn) return;
  var crowd = boxes.every(function (box) { return Date.parse(box.dataset.starts) - Date.now() < CROWD; });
  if (crowd) {
    var k = known();
    boxes.forEach(function (box) { if (k[box.dataset.remind]) show(box, true); });
    return;
  }
  window.api("GET", "/api/me/reminders").then(function (list) {
    var on = {};
    (list || []).forEach(function (r) { on[r.activity_id] = true; });
    try { localStorage.setItem(KEY, JSON.stringify(on)); } catch (e) { /* as above */ }
    // A box clicked while the list was on its way shows what the click answered, which is newer.
    boxes.forEach(function (box) { if (!box.dataset.touched) show(box, !!on[box.dataset.remind]); });
  }).catch(function () { /* the button still works: it says so on a click */ });
})();
