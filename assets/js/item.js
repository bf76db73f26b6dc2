// The item page: the Buy button follows the sale's window by the server's clock, the captcha, the buy
// itself (path, then buy), and the result, polled until the order is made.
(function () {
  "use strict";
  var box = document.getElementById("item");
  var id = box.dataset.item, total = +box.dataset.total;
  var starts = Date.parse(box.dataset.saleStarts), ends = Date.parse(box.dataset.saleEnds);
  var words = JSON.parse(box.dataset.words || "{}");
  var form = document.getElementById("buy-form"), btn = document.getElementById("buy");
  var answer = document.getElementById("captcha-answer"), img = document.getElementById("captcha-img");
  var status = document.getElementById("buy-status"), loginLink = document.getElementById("login-to-buy");
  var stockLeft = document.getElementById("stock-left"), stockBar = document.getElementById("stock-bar");
  var loggedIn = false, left = +box.dataset.left, busy = false, final = false, captchaId = null;

  function w(key) { return words[key] || key; }
  function say(text, kind) { status.textContent = text; status.className = "buy-status " + (kind || ""); }
  function sayError(e) {
    var key = "err." + (e.code || (e.status ? "other" : "network"));
    say(words[key] ? w(key) : (e.message || w("err.other")), "bad");
    if (e.code === "sold_out" || e.code === "already_bought" || e.code === "ended") final = true;
    if (e.code === "unauthenticated") { loggedIn = false; form.hidden = true; loginLink.hidden = false; }
  }
  function open() { var now = window.serverNow(); return now >= starts && now < ends; }
  function update() {
    btn.disabled = !loggedIn || busy || final || left <= 0 || !open();
    if (left <= 0 && !final) { final = true; if (!status.textContent) say(w("err.sold_out"), "bad"); }
    if (window.serverNow() >= ends && !final) { final = true; say(w("err.ended"), "bad"); }
  }
  function showStock(n) {
    left = n;
    stockLeft.textContent = n;
    stockBar.style.width = (total > 0 ? Math.floor(n * 100 / total) : 0) + "%";
  }
  function refreshItem() {
    var sent = Date.now();
    api("GET", "/api/items/" + id).then(function (it) {
      // A fresh server time, corrected for half the round trip, keeps the countdown honest.
      window.serverOffset = Date.parse(it.server_time) + (Date.now() - sent) / 2 - Date.now();
      showStock(it.stock_left);
      update();
    }).catch(function () {});
  }
  function newCaptcha() {
    answer.value = "";
    return api("GET", "/api/captcha").then(function (c) { captchaId = c.captcha_id; img.dataset.captchaId = c.captcha_id; img.src = c.image; })
      .catch(function (e) { sayError(e); });
  }
  function follow() {
    api("GET", "/api/items/" + id + "/result").then(function (r) {
      if (r.status === "queued") { setTimeout(follow, 1000); return; }
      busy = false;
      if (r.status === "success") {
        final = true;
        form.hidden = true; // bought: the captcha and the button have done their job
        status.innerHTML = "";
        var msg = document.createElement("span");
        msg.textContent = w("buy.success") + " ";
        var no = document.createElement("strong");
        no.className = "order-no"; no.textContent = r.order_no;
        var link = document.createElement("a");
        link.href = "/orders/" + r.order_no; link.className = "btn"; link.textContent = w("buy.pay");
        status.appendChild(msg); status.appendChild(no); status.appendChild(document.createTextNode(" ")); status.appendChild(link);
        status.className = "buy-status good";
      } else if (r.status === "failed") { say(r.message || w("err.failed"), "bad"); newCaptcha(); }
      else if (r.status === "sold_out") { final = true; say(w("err.sold_out"), "bad"); }
      update();
    }).catch(function () { setTimeout(follow, 2000); });
  }

  form.addEventListener("submit", function (ev) {
    ev.preventDefault();
    if (btn.disabled) return;
    busy = true; update();
    say(w("buy.wait"));
    var started = Date.now();
    // The button stays disabled a few seconds after a click, whatever the answer: no double clicks.
    var release = function () {
      setTimeout(function () { if (busy !== "queued") { busy = false; update(); } }, Math.max(0, 3000 - (Date.now() - started)));
    };
    api("POST", "/api/items/" + id + "/path", { captcha_id: captchaId, captcha_answer: answer.value.trim() })
      .then(function (p) { return api("POST", "/api/items/" + id + "/buy/" + p.path); })
      .then(function () { busy = "queued"; say(w("buy.queued")); follow(); })
      .catch(function (e) { sayError(e); if (!final) newCaptcha(); release(); });
  });
  document.getElementById("captcha-new").addEventListener("click", newCaptcha);

  api("GET", "/api/me").then(function () {
    loggedIn = true; form.hidden = false;
    newCaptcha();
    return api("GET", "/api/items/" + id + "/result").then(function (r) {
      if (r.status === "success" || r.status === "queued") { busy = "queued"; follow(); }
    });
  }).catch(function () { loginLink.hidden = false; }).then(update);

  refreshItem();
  setInterval(refreshItem, 2000);
  setInterval(update, 200);
})();
