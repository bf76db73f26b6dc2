// The phone's page for a login code: scan on open, show where the PC is (and warn when it is not on this
// phone's network), have the person pick the number the PC shows among three (on one network) or type it
// (elsewhere), then Confirm or Cancel.
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
  var pick = box.querySelector(".qr-pick"), choices = box.querySelector(".qr-choices");
  var type = box.querySelector(".qr-type"), typed = box.querySelector("#qr-typed");
  var confirmBtn = box.querySelector(".confirm");
  function done(text) { actions.hidden = true; pick.hidden = true; type.hidden = true; msg.textContent = text; }
  function fail(e) { done(e.code === "bad_code" ? box.dataset.msgBadCode : e.message); }
  function picked() {
    if (!type.hidden) return /^[0-9]{2}$/.test(typed.value.trim()) ? typed.value.trim() : "";
    var c = choices.querySelector("input:checked");
    return c ? c.value : "";
  }
  function ready() {
    confirmBtn.disabled = !picked();
    if (!confirmBtn.disabled) confirmBtn.removeAttribute("title");
  }
  typed.addEventListener("input", ready);
  api("POST", "/api/qr/login/" + id + "/scan").then(function (r) {
    box.querySelector("dd.pc-ip").textContent = r.pc.ip;
    if (r.pc.city) {
      box.querySelector("dd.pc-city").textContent = r.pc.city;
      box.querySelectorAll(".pc-city").forEach(function (el) { el.hidden = false; });
    }
    box.querySelector("dd.pc-ua").textContent = browserName(r.pc.user_agent);
    box.querySelector("dd.pc-when").textContent = new Date(r.pc.created_at).toLocaleString(document.documentElement.lang || undefined, { dateStyle: "medium", timeStyle: "short" });
    box.querySelector(".qr-elsewhere").hidden = r.same_network;
    (r.choices || []).forEach(function (n) {
      var label = document.createElement("label"), input = document.createElement("input"), span = document.createElement("span");
      input.type = "radio"; input.name = "qr-code"; input.value = n;
      input.addEventListener("change", ready);
      span.textContent = n;
      label.appendChild(input); label.appendChild(span);
      choices.appendChild(label);
    });
    info.hidden = false; actions.hidden = false;
    if (r.choices) pick.hidden = false; else type.hidden = false;
  }).catch(fail);
  confirmBtn.addEventListener("click", function () {
    if (!picked()) return;
    api("POST", "/api/qr/login/" + id + "/confirm", { code: picked() }).then(function () { done(box.dataset.msgConfirmed); })
      .catch(fail);
  });
  box.querySelector(".cancel").addEventListener("click", function () {
    api("POST", "/api/qr/login/" + id + "/cancel").then(function () { done(box.dataset.msgCancelled); })
      .catch(fail);
  });
})();
