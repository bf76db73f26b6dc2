// Counts down every element with data-starts and data-ends (a sale) or data-deadline (an order to pay),
// by the server's clock: the offset between this browser's clock and the server's is read from
// <body data-server-time>, and pages that learn a server time tell window.syncClock.
(function () {
  "use strict";
  // Behind nginx, a page or an answer may come from its cache, a second or two old: its server time is
  // then behind the server's clock, never ahead of it. So the offset is the largest of the recent
  // samples (each corrected for half its round trip), and a fresh answer sets it right.
  var samples = [];
  window.serverOffset = 0;
  window.syncClock = function (serverTime, sentAt) {
    var t = Date.parse(serverTime || "");
    if (isNaN(t)) return;
    var now = Date.now();
    samples.push(t + (now - (sentAt || now)) / 2 - now);
    if (samples.length > 20) samples.shift();
    window.serverOffset = Math.max.apply(null, samples);
  };
  window.syncClock(document.body.dataset.serverTime);
  window.serverNow = function () { return Date.now() + window.serverOffset; };
  function fmt(ms) {
    var s = Math.max(0, Math.ceil(ms / 1000));
    var d = Math.floor(s / 86400), h = Math.floor(s % 86400 / 3600), m = Math.floor(s % 3600 / 60);
    var pad = function (n) { return n < 10 ? "0" + n : "" + n; };
    return (d > 0 ? d + "d " : "") + pad(h) + ":" + pad(m) + ":" + pad(s % 60);
  }
  window.fmtCountdown = fmt;
  function tick() {
    var now = window.serverNow();
    document.querySelectorAll("[data-starts][data-ends]").forEach(function (el) {
      var starts = Date.parse(el.dataset.starts), ends = Date.parse(el.dataset.ends);
      if (now < starts) el.textContent = el.dataset.labelStarts + " " + fmt(starts - now);
      else if (now < ends) el.textContent = el.dataset.labelEnds + " " + fmt(ends - now);
      else el.textContent = el.dataset.labelOver;
    });
    document.querySelectorAll("[data-deadline]").forEach(function (el) {
      var left = Date.parse(el.dataset.deadline) - now;
      el.textContent = left > 0 ? fmt(left) : el.dataset.labelOver;
    });
  }
  tick();
  setInterval(tick, 250);
})();
