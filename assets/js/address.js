// The address book and an order's delivery address: add (every bad field shown beside it, in the page's
// language, all at once), delete, and choose one for an unpaid order.
(function () {
  "use strict";
  function showErrors(form, e) {
    form.querySelectorAll("[data-error-for]").forEach(function (el) { el.textContent = ""; });
    var general = form.querySelector(".form-error");
    general.textContent = "";
    if (e && e.fields) {
      Object.keys(e.fields).forEach(function (name) {
        var el = form.querySelector('[data-error-for="' + name + '"]');
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
      api("POST", "/api/addresses", body).then(function (a) {
        return form.dataset.order ? choose(form.dataset.order, a.id) : a;
      }).then(function () { location.reload(); })
        .catch(function (e) { showErrors(form, e); button.disabled = false; });
    });
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
  document.querySelectorAll("[data-delete-address]").forEach(function (b) {
    b.addEventListener("click", function () {
      b.disabled = true;
      api("DELETE", "/api/addresses/" + b.dataset.deleteAddress).then(function () { location.reload(); })
        .catch(function (e) { document.getElementById("book-error").textContent = e.message; b.disabled = false; });
    });
  });
})();
