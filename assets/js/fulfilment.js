// The merchant's orders page: Ship (or correct) one order, and send the CSV back to ship many.
(function () {
  "use strict";
  function showErrors(form, e) { window.showErrors(form, e); }
  document.querySelectorAll("form[data-ship]").forEach(function (form) {
    form.addEventListener("submit", function (ev) {
      ev.preventDefault();
      var btn = form.querySelector("button");
      btn.disabled = true;
      api("POST", "/api/merchant/orders/" + encodeURIComponent(form.dataset.ship) + "/ship",
        { carrier: form.carrier.value, tracking_no: form.tracking_no.value })
        .then(function () { location.reload(); })
        .catch(function (e) { showErrors(form, e); btn.disabled = false; });
    });
  });

  var up = document.getElementById("shipments-form");
  if (!up) return;
  up.addEventListener("submit", function (ev) {
    ev.preventDefault();
    var out = up.querySelector(".upload-result"), err = up.querySelector(".form-error"), btn = up.querySelector("button");
    out.textContent = ""; err.textContent = "";
    var file = up.file.files[0];
    if (!file) { up.file.focus(); return; }
    var body = new FormData();
    body.append("file", file);
    btn.disabled = true;
    api("POST", up.dataset.upload, body).then(function (r) {
      btn.disabled = false;
      var p = document.createElement("p");
      p.className = "notice";
      p.textContent = up.dataset.done.replace("{shipped}", r.shipped).replace("{corrected}", r.corrected)
        .replace("{unchanged}", r.unchanged).replace("{skipped}", r.skipped).replace("{bad}", r.bad);
      out.appendChild(p);
      if (r.errors.length) {
        var ul = document.createElement("ul");
        ul.className = "row-errors";
        r.errors.forEach(function (e) {
          var li = document.createElement("li");
          var why = e.message; // in the page's words, with the fields' labels
          li.textContent = up.dataset.line.replace("{line}", e.line) + (e.order_no ? " (" + e.order_no + ")" : "") + ": " + why;
          ul.appendChild(li);
        });
        out.appendChild(ul);
      } else if (r.shipped || r.corrected) {
        setTimeout(function () { location.reload(); }, 1500);
      }
    }).catch(function (e) { btn.disabled = false; err.textContent = e.message; });
  });
})();
