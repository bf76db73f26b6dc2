// The e-mail pages: add or change the account's address (/account/email), verify it (/verify-email,
// by a POST: a mail scanner that opens the link uses nothing), ask for a reset link (/forgot) and choose
// a new password with one (/reset). Every bad field is shown beside it, in the page's language.
(function () {
  "use strict";
  function token() { return new URLSearchParams(location.search).get("token") || ""; }
  function done(form, text) {
    var el = form.querySelector(".form-done");
    el.textContent = text; el.hidden = false;
  }
  function wire(selector, send, ok) {
    var form = document.querySelector(selector);
    if (!form) return;
    form.addEventListener("submit", function (ev) {
      ev.preventDefault();
      var btn = form.querySelector("button[type=submit]");
      btn.disabled = true;
      form.querySelector(".form-done").hidden = true;
      window.showErrors(form, { fields: {}, message: "" });
      send(form).then(function (r) { ok(form, r); })
        .catch(function (e) {
          window.showErrors(form, e);
          var again = form.querySelector(".again");
          if (again && e.code === "bad_token") again.hidden = false;
          btn.disabled = false;
        });
    });
  }
  wire("form[data-email-form]", function (form) {
    var body = { email: form.email.value.trim() };
    if (form.current_password) body.current_password = form.current_password.value; // replacing a verified address
    return window.api("POST", "/api/me/email", body);
  }, function (form, r) {
    done(form, form.dataset.sent.replace("{email}", (r && (r.email_pending || r.email)) || form.email.value.trim()));
    form.querySelector("button[type=submit]").disabled = false;
  });
  wire("form[data-forgot-form]", function (form) {
    return window.api("POST", "/api/auth/password-reset", { email: form.email.value.trim() });
  }, function (form) {
    done(form, form.dataset.sent);
    form.querySelector("button[type=submit]").disabled = false;
  });
  wire("form[data-verify-form]", function () {
    return window.api("POST", "/api/auth/verify-email", { token: token() });
  }, function (form) {
    done(form, form.dataset.done);
    form.querySelector("button[type=submit]").hidden = true;
  });
  wire("form[data-reset-form]", function (form) {
    return window.api("POST", "/api/auth/password-reset/confirm", { token: token(), new_password: form.new_password.value });
  }, function (form) {
    done(form, form.dataset.done);
    form.querySelector("button[type=submit]").hidden = true;
    form.querySelector(".field").hidden = true;
    form.querySelector(".done-login").hidden = false;
  });
})();
