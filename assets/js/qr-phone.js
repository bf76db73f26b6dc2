// The phone's page for a login code: scan on open, show where the PC is, then Confirm or Cancel.
(function () {
  "use strict";
  // browserName says a user agent as a person reads it: "Chrome · Windows" (the raw string when unknown).
  function browserName(ua) {
    ua = ua || "";
    var browser = /Edg\//.test(ua) ? "Edge" : /OPR\/|Opera/.test(ua) ? "Opera" : /Firefox\//.test(ua) ? "Firefox" :
      /MicroMessenger/.test(ua) ? "WeChat" : /Chrome\/|Chromium\/|CriOS/.test(ua) ? "Chrome" : /Safari\//.test(ua) ? "Safari" : "";
    var os = /Windows/.test(ua) ? "Windows" : /iPhone|iPad/.test(ua) ? "iOS" : /Android/.test(ua) ? "Android" :
      /Mac OS X|Macintosh/.test(ua) ? "macOS" : /Linux/.test(ua) ? "Linux" : "";
    if (!browser && !os) return ua;
    return (browser || "?") + (os ? " · " + os : "");
  }
  var box = document.getElementById("qr-phone");
  var id = box.dataset.qrId;
  var info = box.querySelector(".pc"), msg = box.querySelector(".qr-message"), actions = box.querySelector(".actions");
  function done(text) { actions.hidden = true; msg.textContent = text; }
  api("POST", "/api/qr/login/" + id + "/scan").then(function (r) {
    box.querySelector(".pc-ip").textContent = r.pc.ip;
    box.querySelector(".pc-ua").textContent = browserName(r.pc.user_agent);
    box.querySelector(".pc-when").textContent = new Date(r.pc.created_at).toLocaleString();
    info.hidden = false; actions.hidden = false;
  }).catch(function (e) { done(e.message); });
  box.querySelector(".confirm").addEventListener("click", function () {
    api("POST", "/api/qr/login/" + id + "/confirm").then(function () { done(box.dataset.msgConfirmed); })
      .catch(function (e) { done(e.message); });
  });
  box.querySelector(".cancel").addEventListener("click", function () {
    api("POST", "/api/qr/login/" + id + "/cancel").then(function () { done(box.dataset.msgCancelled); })
      .catch(function (e) { done(e.message); });
  });
})();
