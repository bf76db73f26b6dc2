// The live dashboard: figures every two seconds, and the chart drawn anew by the server.
(function () {
  "use strict";
  var box = document.getElementById("live"), chart = document.getElementById("chart");
  function money(cents) { return "¥" + Math.floor(cents / 100) + "." + ("0" + cents % 100).slice(-2); }
  function fill(row, st) {
    if (!row) return;
    row.querySelectorAll("[data-f]").forEach(function (td) {
      var v = st[td.dataset.f];
      td.textContent = td.hasAttribute("data-money") ? money(v || 0) : v;
    });
  }
  function refresh() {
    api("GET", box.dataset.stats).then(function (st) {
      fill(box.querySelector('tr[data-item="all"]'), st);
      st.items.forEach(function (it) {
        fill(box.querySelector('tr[data-item="' + it.id + '"]'), it);
        if (it.line) {
          // The draw: the seed's hash from the room's opening, the seed itself once the draw is written.
          it.line.draw = it.line.seed ? "seed " + it.line.seed : (it.line.seed_hash ? "SHA-256 " + it.line.seed_hash : "");
          fill(box.querySelector('tr[data-line="' + it.id + '"]'), it.line);
        }
      });
    }).catch(function () {});
    // nginx in front (admins only): its connections and requests, and what it answered itself.
    var edge = document.getElementById("edge");
    if (edge) {
      api("GET", edge.dataset.edge).then(function (e) {
        edge.hidden = !e.configured;
        if (!e.configured) return;
        var v = {
          connections: e.status ? (e.up ? e.connections : edge.dataset.down) : "",
          requests: e.status && e.up ? e.requests : "",
          hit: e.log ? (e.answers.hit || 0) : edge.dataset.nolog,
          sold_out: e.log ? (e.answers.sold_out || 0) : edge.dataset.nolog
        };
        edge.querySelectorAll("[data-e]").forEach(function (td) { td.textContent = v[td.dataset.e]; });
      }).catch(function () {});
    }
    var img = new Image();
    img.onload = function () { chart.src = img.src; };
    img.src = box.dataset.chart + "?t=" + Date.now();
  }
  refresh();
  setInterval(refresh, 2000);
})();
