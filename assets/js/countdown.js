// Counts down every element with data-starts and data-ends, corrected for the offset between this
// browser's clock and the server's (data-server-time on <body>); the server checks the window itself.
(function () {
  "use strict";
  var serverTime = Date.parse(document.body.dataset.serverTime || "");
  var offset = isNaN(serverTime) ? 0 : serverTime - Date.now();
  function fmt(ms) {
    var s = Math.max(0, Math.floor(ms / 1000));
    var d = Math.floor(s / 86400), h = Math.floor(s % 86400 / 3600), m = Math.floor(s % 3600 / 60);
    var pad = function (n) { return n < 10 ? "0" + n : "" + n; };
    return (d > 0 ? d + "d " : "") + pad(h) + ":" + pad(m) + ":" + pad(s % 60);
  }
  function tick() {
    var now = Date.now() + offset;
    document.querySelectorAll("[data-starts][data-ends]").forEach(function (el) {
      var starts = Date.parse(el.dataset.starts), ends = Date.parse(el.dataset.ends);
      if (now < starts) el.textContent = el.dataset.labelStarts + " " + fmt(starts - now);
      else if (now < ends) el.textContent = el.dataset.labelEnds + " " + fmt(ends - now);
      else el.textContent = el.dataset.labelOver;
    });
  }
  tick();
  setInterval(tick, 1000);
})();
