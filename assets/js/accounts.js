// The login page (password and QR code) and the register page.
(function () {
  "use strict";
  function nextURL() {
    return localPath(new URLSearchParams(location.search).get("next") || "/");
  }
  // Registration asks for a captcha: a new picture at the start and after every answer.
  var captchaImg = document.getElementById("captcha-img"), captchaId = null;
  function newCaptcha() {
    if (!captchaImg) return;
    var answer = document.getElementById("captcha-answer");
    answer.value = "";
    api("GET", "/api/captcha").then(function (c) { captchaId = c.captcha_id; captchaImg.dataset.captchaId = c.captcha_id; captchaImg.src = c.image; })
      .catch(function () { setTimeout(newCaptcha, 1000); });
  }
  if (captchaImg) {
    document.getElementById("captcha-new").addEventListener("click", newCaptcha);
    newCaptcha();
  }
  function showError(form, e) { window.showErrors(form, e); }
  document.querySelectorAll("form[data-account]").forEach(function (form) {
    form.addEventListener("submit", function (ev) {
      ev.preventDefault();
      var btn = form.querySelector("button[type=submit]");
      btn.disabled = true;
      form.querySelector(".form-error").textContent = "";
      var body = { username: form.username.value, password: form.password.value };
      if (captchaImg) { body.captcha_id = captchaId; body.captcha_answer = form.captcha.value.trim(); }
      api("POST", form.dataset.account, body).then(function () { location.href = nextURL(); })
        .catch(function (e) {
          showError(form, e); btn.disabled = false;
          if (captchaImg && e.code !== "bad_request") newCaptcha(); // the captcha was used, or may have been
        });
    });
  });

  var panel = document.getElementById("qr-panel");
  if (!panel) return;
  var img = panel.querySelector("img"), status = panel.querySelector(".qr-status"), again = panel.querySelector(".qr-again");
  var number = panel.querySelector(".qr-number");
  var timer = null;
  function say(key) { status.textContent = panel.dataset[key]; }
  function start() {
    clearInterval(timer);
    again.hidden = true; number.hidden = true;
    say("msgPending");
    api("POST", "/api/qr/login").then(function (code) {
      img.src = code.image; img.hidden = false;
      timer = setInterval(function () { poll(code.qr_id); }, 1000);
    }).catch(function (e) { status.textContent = e.message; again.hidden = false; });
  }
  function poll(id) {
    api("GET", "/api/qr/login/" + id).then(function (r) {
      // Scanned: the number to pick on the phone takes the code's place, so a person matches the two.
      if (r.state === "scanned" && r.code) { say("msgMatch"); number.textContent = r.code; number.hidden = false; img.hidden = true; }
      else if (r.state === "scanned") say("msgScanned");
      if (r.state !== "scanned") number.hidden = true;
      if (r.state === "confirmed") { clearInterval(timer); say("msgConfirmed"); location.href = nextURL(); }
      if (r.state === "expired" || r.state === "cancelled") {
        clearInterval(timer); say(r.state === "expired" ? "msgExpired" : "msgCancelled");
        img.hidden = true; again.hidden = false;
      }
    }).catch(function () { /* a lost poll: the next one tries again */ });
  }
  again.addEventListener("click", start);
  start();
})();
