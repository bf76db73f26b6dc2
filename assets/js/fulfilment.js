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
  // What the last file did stays on the page until the merchant dismisses it: kept for this tab, so the
  // reload that shows the orders shipped does not wipe it.
  var key = "shipments:" + up.dataset.upload, out = up.querySelector(".upload-result");
  function keep(r) { try { sessionStorage.setItem(key, JSON.stringify(r)); } catch (e) { /* private mode: until the reload */ } }
  function kept() { try { return JSON.parse(sessionStorage.getItem(key) || "null"); } catch (e) { return null; } }
  function forget() { try { sessionStorage.removeItem(key); } catch (e) {} }
  function show(r) {
    out.textContent = "";
    var box = document.createElement("div");
    box.className = "notice upload-summary";
    var p = document.createElement("p");
    p.textContent = up.dataset.done.replace("{shipped}", r.shipped).replace("{corrected}", r.corrected)
      .replace("{unchanged}", r.unchanged).replace("{skipped}", r.skipped).replace("{bad}", r.bad);
    box.appendChild(p);
    if (r.errors && r.errors.length) {
      var ul = document.createElement("ul");
      ul.className = "row-errors";
      r.errors.forEach(function (e) {
        var li = document.createElement("li");
        var why = e.message; // in the page's words, with the fields' labels
        li.textContent = up.dataset.line.replace("{line}", e.line) + (e.order_no ? (document.documentElement.lang === "zh-CN" ? "（" : " (") + e.order_no + (document.documentElement.lang === "zh-CN" ? "）" : ")") : "") + (document.documentElement.lang === "zh-CN" ? "：" : ": ") + why;
        ul.appendChild(li);
      });
      box.appendChild(ul);
    }
    var close = document.createElement("button");
    close.type = "button";
    close.className = "btn secondary small dismiss";
    close.textContent = up.dataset.dismiss;
    close.addEventListener("click", function () { forget(); out.textContent = ""; });
    box.appendChild(close);
    out.appendChild(box);
  }
  var last = kept();
  if (last) show(last);
  up.addEventListener("submit", function (ev) {
    ev.preventDefault();
    var err = up.querySelector(".form-error"), btn = up.querySelector("button[type=submit]");
    err.textContent = "";
    var file = up.file.files[0];
    if (!file) { up.file.focus(); return; }
    if (up.dataset.max && file.size > +up.dataset.max) {
      err.textContent = up.dataset.tooLarge.replace("{0}", Math.floor(up.dataset.max / 1048576));
      return;
    }
    forget();
    out.textContent = "";
    var body = new FormData();
    body.append("file", file);
    btn.disabled = true;
    api("POST", up.dataset.upload, body).then(function (r) {
      btn.disabled = false;
      keep(r);
      show(r);
      // The list then shows them shipped; the summary, kept, is shown again after the reload.
      if (r.shipped || r.corrected) setTimeout(function () { location.reload(); }, 1500);
    }).catch(function (e) { btn.disabled = false; err.textContent = e.message; });
  });
})();
