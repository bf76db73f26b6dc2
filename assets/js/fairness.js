// The dashboards' live fairness figures: each approved queue sale's report (GET
// /api/activities/{id}/report, which its merchant and the admins may read at any time), asked every few
// seconds while the page is seen, and nothing while it is hidden.
(function () {
  "use strict";
  var box = document.getElementById("fairness-live");
  if (!box) return;
  var lang = document.documentElement.lang || undefined;
  var sales = Array.prototype.slice.call(box.querySelectorAll("[data-report]"));
  var busy = {};

  function value(it, figure) {
    if (figure.indexOf("refused.") === 0) return (it.refused || {})[figure.slice(8)] || 0;
    return it[figure];
  }
  function shown(figure, v) {
    if (v === undefined || v === null) return "–";
    if (figure === "sold_out_after_seconds") return box.dataset.seconds.replace("%d", v);
    return String(v);
  }
  // A rule the page has no row for (a rule added since) gets one, named by its code.
  function rowFor(tbody, code, items) {
    var figure = "refused." + code;
    var tr = tbody.querySelector('tr[data-figure="' + figure + '"]');
    if (tr) return;
    var last = tbody.querySelectorAll("tr.refused");
    tr = document.createElement("tr");
    tr.dataset.figure = figure; tr.className = "refused";
    var th = document.createElement("th");
    th.scope = "row"; th.textContent = box.dataset.refused + (document.documentElement.lang === "zh-CN" ? "：" : ": ") + code;
    tr.appendChild(th);
    items.forEach(function (it) {
      var td = document.createElement("td");
      td.dataset.item = it.item_id; tr.appendChild(td);
    });
    var after = last[last.length - 1];
    tbody.insertBefore(tr, after ? after.nextSibling : tbody.firstChild);
  }
  function fill(sale, r) {
    var tbody = sale.querySelector("tbody"), byID = {};
    r.items.forEach(function (it) {
      byID[it.item_id] = it;
      Object.keys(it.refused || {}).forEach(function (code) { rowFor(tbody, code, r.items); });
    });
    tbody.querySelectorAll("tr[data-figure]").forEach(function (tr) {
      var figure = tr.dataset.figure;
      tr.querySelectorAll("td[data-item]").forEach(function (td) {
        var it = byID[td.dataset.item];
        td.textContent = shown(figure, it ? value(it, figure) : undefined);
      });
    });
    sale.querySelector(".fair-when").textContent = box.dataset.updated + " " + new Date().toLocaleTimeString(lang);
  }
  function refresh() {
    if (document.visibilityState !== "visible") return;
    sales.forEach(function (sale) {
      var url = sale.dataset.report;
      if (busy[url]) return;
      busy[url] = true;
      api("GET", url).then(function (r) { fill(sale, r); })
        .catch(function () { sale.querySelector(".fair-when").textContent = box.dataset.failed; })
        .then(function () { busy[url] = false; });
    });
  }
  refresh();
  setInterval(refresh, 3000);
  document.addEventListener("visibilitychange", refresh);
})();
