// The account page: log a device out (this one too, which is a logout), log out everywhere else, and
// change the password (every bad field shown beside it at once, in the page's language; nothing typed is
// lost).
(function () {
  "use strict";
  var errorLine = document.getElementById("devices-error");
  document.querySelectorAll("[data-end-session]").forEach(function (b) {
    b.addEventListener("click", function () {
      var row = b.closest("li");
      b.disabled = true;
      errorLine.textContent = "";
      api("DELETE", "/api/me/sessions/" + b.dataset.endSession).then(function () {
        if (row.hasAttribute("data-current")) { location.assign("/"); return; }
        row.remove();
      }).catch(function (e) {
        // Ended already (elsewhere, or it expired): it is gone either way.
        if (e.status === 404) { row.remove(); return; }
        errorLine.textContent = e.message; b.disabled = false;
      });
    });
  });
  var others = document.getElementById("end-others");
  if (others) {
    others.addEventListener("click", function () {
      others.disabled = true;
      errorLine.textContent = "";
      api("POST", "/api/me/sessions/end-others").then(function () {
        document.querySelectorAll("#devices li:not([data-current])").forEach(function (li) { li.remove(); });
        others.hidden = true;
        document.getElementById("devices-done").hidden = false;
      }).catch(function (e) { errorLine.textContent = e.message; others.disabled = false; });
    });
  }
  var form = document.getElementById("password-form");
  form.addEventListener("submit", function (ev) {
    ev.preventDefault();
    var button = form.querySelector("button[type=submit]");
    var done = document.getElementById("password-done");
    done.hidden = true;
    button.disabled = true;
    var body = { current_password: form.current_password.value, new_password: form.new_password.value };
    api("POST", "/api/me/password", body).then(function () {
      form.reset();
      form.querySelectorAll(".field-error, .form-error").forEach(function (el) { el.textContent = ""; });
      done.hidden = false;
      document.querySelectorAll("#devices li:not([data-current])").forEach(function (li) { li.remove(); });
      button.disabled = false;
    }).catch(function (e) {
      // A wrong current password is that field's mistake.
      if (e.code === "bad_credentials") e.fields = { current_password: e.message };
      showErrors(form, e);
      button.disabled = false;
    });
  });
})();
