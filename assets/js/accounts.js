// The login page (password and QR code) and the register page.
(function () {
  "use strict";
  // Whoever logs in here may be someone else than who used this browser before: what remind.js learnt of
  // the last account's reminders is forgotten.
  try { localStorage.removeItem("sk_reminded"); } catch (e) { /* nothing kept */ }
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
  // Registration carries a proof of work, solved from the moment the form shows while the person types.
  var regForm = document.querySelector('form[data-account="/api/auth/register"]');
  var regPow = regForm && window.Pow ? new window.Pow("purpose=register") : null;
  if (regPow) regPow.start();
  function showError(form, e) { window.showErrors(form, e); }
  document.querySelectorAll("form[data-account]").forEach(function (form) {
    form.addEventListener("submit", function (ev) {
      ev.preventDefault();
      var btn = form.querySelector("button[type=submit]");
      btn.disabled = true;
      form.querySelector(".form-error").textContent = "";
      var body = { username: form.username.value, password: form.password.value };
      if (captchaImg) { body.captcha_id = captchaId; body.captcha_answer = form.captcha.value.trim(); }
      var proof = Promise.resolve(null);
      if (regPow && form === regForm) {
        // Not solved yet: the page says it waits for the browser's check, then sends by itself.
        if (!regPow.ready()) form.querySelector(".form-error").textContent = form.dataset.powWait || "";
        proof = regPow.take();
      }
      proof.then(function (p) {
        if (p) body.altcha = p;
        return api("POST", form.dataset.account, body);
      }).then(function () { location.href = nextURL(); })
        .catch(function (e) {
          showError(form, e); btn.disabled = false;
          // A proof is used by every answer; so is the captcha (checked with the fields, its wrong answer
          // said among theirs) but by a bad proof's, which leaves it to send again with the new proof.
          // What was typed in the other fields stays.
          if (regPow && form === regForm) regPow.start();
          if (captchaImg && e.code !== "bad_pow") newCaptcha();
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
  // A phone's screen has no use for a code to scan with a phone: the panel hides (and asks for no code)
  // while the screen is as narrow as a phone's; the password form stays.
  var phone = window.matchMedia ? window.matchMedia("(max-width: 500px)") : null, started = false;
  function fit() {
    panel.hidden = !!(phone && phone.matches);
    if (panel.hidden) { clearInterval(timer); started = false; return; }
    if (!started) { started = true; start(); }
  }
  if (phone && phone.addEventListener) phone.addEventListener("change", fit);
  fit();
})();
