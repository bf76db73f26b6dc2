// The address book and an order's delivery address: add or edit (every bad field shown beside it, in the
// page's language, all at once, what was typed kept), delete after a question, and choose one for an
// unpaid order.
(function () {
  "use strict";
  function showErrors(form, e) {
    form.querySelectorAll("[data-error-for]").forEach(function (el) { el.textContent = ""; });
    var general = form.querySelector(".form-error");
    general.textContent = "";
    if (e && e.fields) {
      Object.keys(e.fields).forEach(function (name) {
        var el = form.querySelector('[data-error-for="' + name + '"]');
        // The page's own sentence for a field, else the server's reason (the phone's says which rule).
        if (el) el.textContent = el.dataset.msg || e.fields[name];
      });
      var first = form.querySelector('[name="' + Object.keys(e.fields)[0] + '"]');
      if (first) first.focus();
      return;
    }
    if (e) general.textContent = e.code === "conflict" && general.dataset.full ? general.dataset.full : e.message;
  }
  function choose(order, id) {
    return api("POST", "/api/orders/" + order + "/address", { address_id: id });
  }
  document.querySelectorAll("form[data-address-form]").forEach(function (form) {
    form.addEventListener("submit", function (ev) {
      ev.preventDefault();
      var body = {};
      form.querySelectorAll("input[name]").forEach(function (i) { body[i.name] = i.value; });
      var button = form.querySelector("button[type=submit]");
      button.disabled = true;
      showErrors(form, null);
      var sent = form.dataset.edit ? api("PUT", "/api/addresses/" + form.dataset.edit, body) : api("POST", "/api/addresses", body);
      sent.then(function (a) {
        return form.dataset.order ? choose(form.dataset.order, a.id) : a;
      }).then(function () { location.reload(); })
        .catch(function (e) { showErrors(form, e); button.disabled = false; });
    });
    var cancel = form.querySelector("[data-edit-cancel]");
    if (cancel) cancel.addEventListener("click", function () { editing(form.closest("li"), false); });
  });
  document.querySelectorAll("form[data-choose-address]").forEach(function (form) {
    form.addEventListener("submit", function (ev) {
      ev.preventDefault();
      var picked = form.querySelector("input[name=address_id]:checked");
      if (!picked) return;
      choose(form.dataset.chooseAddress, Number(picked.value)).then(function () { location.reload(); })
        .catch(function (e) { form.querySelector(".form-error").textContent = e.message; });
    });
  });
  // Editing shows the address's own form, filled in, where the address was; "Cancel" puts it back, unchanged.
  function editing(li, on) {
    var form = li.querySelector("form[data-edit]"), edit = li.querySelector("[data-edit-address]");
    form.hidden = !on;
    li.querySelector(".delivery").hidden = on;
    edit.hidden = on;
    li.querySelector("[data-delete-address]").hidden = on;
    edit.setAttribute("aria-expanded", on ? "true" : "false");
    if (on) { asking(li, false); form.querySelector("input[name]").focus(); } else { form.reset(); showErrors(form, null); edit.focus(); }
  }
  // Deleting asks first, beside the address: "Delete this address?" with Delete and Keep it.
  function asking(li, on) {
    var ask = li.querySelector(".ask"), del = li.querySelector("[data-delete-address]");
    ask.hidden = !on;
    del.hidden = on;
    if (on) ask.querySelector("[data-delete-no]").focus();
  }
  document.querySelectorAll(".address-book li[data-address]").forEach(function (li) {
    var id = li.dataset.address;
    li.querySelector("[data-edit-address]").addEventListener("click", function () { editing(li, true); });
    li.querySelector("[data-delete-address]").addEventListener("click", function () { asking(li, true); });
    li.querySelector("[data-delete-no]").addEventListener("click", function () {
      asking(li, false); li.querySelector("[data-delete-address]").focus();
    });
    var yes = li.querySelector("[data-delete-yes]");
    yes.addEventListener("click", function () {
      yes.disabled = true;
      api("DELETE", "/api/addresses/" + id).then(function () { location.reload(); })
        .catch(function (e) { document.getElementById("book-error").textContent = e.message; yes.disabled = false; });
    });
  });
})();
