// Paying an order: the payment's QR code for a phone, then the order page follows the order until paid.
(function () {
  "use strict";
  var box = document.getElementById("pay-box");
  var no = box.dataset.order, qr = document.getElementById("pay-qr"), err = document.getElementById("pay-error");
  var payButton = document.getElementById("pay-start"), current = null;
  function follow() {
    api("GET", "/api/orders/" + no).then(function (o) {
      if (o.status !== "pending_payment") { location.reload(); return; }
      // The payer cancelled this payment (or it was closed): its code can no longer be paid. A new one.
      if (o.payment && o.payment.payment_id === current && o.payment.status === "closed") {
        qr.hidden = true;
        err.textContent = box.dataset.cancelled;
        payButton.hidden = false; payButton.disabled = false;
        current = null;
        return;
      }
      setTimeout(follow, 2000);
    }).catch(function () { setTimeout(follow, 4000); });
  }
  document.getElementById("order-cancel").addEventListener("click", function (ev) {
    if (!window.confirm(ev.target.dataset.confirm)) return;
    ev.target.disabled = true;
    err.textContent = "";
    var payButton = document.getElementById("pay-start"), payWas = payButton.disabled;
    payButton.disabled = true; // no payment is started while the order is being cancelled
    api("POST", "/api/orders/" + no + "/cancel").then(function () { location.reload(); })
      .catch(function (e) {
        if (e.code === "order_state") { location.reload(); return; } // paid or cancelled meanwhile: show it
        err.textContent = e.message; ev.target.disabled = false; payButton.disabled = payWas;
      });
  });
  // The provider chosen (when the shop offers several): choosing another while a code is shown hides it,
  // and Pay asks for a payment there.
  var choice = document.getElementById("pay-choice");
  function chosen() {
    var c = choice && choice.querySelector("input[name=provider]:checked");
    return c ? c.value : "";
  }
  if (choice) choice.addEventListener("change", function () {
    if (qr.hidden) return;
    qr.hidden = true; current = null;
    payButton.hidden = false; payButton.disabled = false;
  });
  document.getElementById("pay-start").addEventListener("click", function (ev) {
    ev.target.disabled = true;
    err.textContent = "";
    var provider = chosen();
    api("POST", "/api/orders/" + no + "/pay", provider ? { provider: provider } : undefined).then(function (p) {
      current = p.payment_id;
      qr.querySelector("img").src = p.image;
      qr.querySelectorAll(".pay-scan").forEach(function (el) { el.hidden = el.dataset.provider !== p.provider; });
      // A web page can be opened here; WeChat Pay's weixin:// code only by scanning it.
      var link = document.getElementById("pay-link"), web = /^https?:\/\//.test(p.pay_url);
      link.href = web ? p.pay_url : "#";
      document.getElementById("pay-link-line").hidden = !web;
      qr.hidden = false;
      ev.target.hidden = true;
      follow();
    }).catch(function (e) { err.textContent = e.message; ev.target.disabled = false; });
  });
})();
