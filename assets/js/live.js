// The live dashboard: figures every two seconds, and the chart drawn anew by the server.
(function () {
  "use strict";
  var box = document.getElementById("live"), chart = document.getElementById("chart");
  function fill(row, st) {
    if (!row) return;
    row.querySelectorAll("[data-f]").forEach(function (td) { td.textContent = st[td.dataset.f]; });
  }
  function refresh() {
    api("GET", box.dataset.stats).then(function (st) {
      fill(box.querySelector('tr[data-item="all"]'), st);
      st.items.forEach(function (it) { fill(box.querySelector('tr[data-item="' + it.id + '"]'), it); });
    }).catch(function () {});
    var img = new Image();
    img.onload = function () { chart.src = img.src; };
    img.src = box.dataset.chart + "?t=" + Date.now();
  }
  refresh();
  setInterval(refresh, 2000);
})();
