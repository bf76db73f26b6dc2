// The pages' one way to call the JSON API: it fetches the CSRF token once and sends it with every
// state-changing request, and turns error bodies into exceptions with the contract's code.
(function () {
  "use strict";
  var token = null;
  function csrf() {
    if (token) return Promise.resolve(token);
    return fetch("/api/csrf", { credentials: "same-origin" })
      .then(function (r) { return r.json(); })
      .then(function (j) { token = j.token; return token; });
  }
  function api(method, url, body) {
    var headers = { "Accept": "application/json" };
    var p = Promise.resolve();
    if (method !== "GET") {
      p = csrf().then(function (t) { headers["X-CSRF-Token"] = t; });
    }
    if (body !== undefined) headers["Content-Type"] = "application/json";
    return p.then(function () {
      return fetch(url, {
        method: method, headers: headers, credentials: "same-origin",
        body: body === undefined ? undefined : JSON.stringify(body)
      });
    }).then(function (r) {
      if (r.status === 204) return null;
      return r.json().then(function (j) {
        if (!r.ok) {
          var e = new Error(j.message || "request failed");
          e.code = j.error; e.status = r.status;
          throw e;
        }
        return j;
      });
    });
  }
  window.api = api;

  // The language switch comes back to the page it was clicked on.
  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("a[data-keep-path]").forEach(function (a) {
      a.addEventListener("click", function () { a.href = a.pathname + "?back=" + encodeURIComponent(location.pathname + location.search); });
    });
  });

  // The header shows who is logged in; pages stay the same for everyone, so they can be cached.
  document.addEventListener("DOMContentLoaded", function () {
    var nav = document.getElementById("nav-account");
    if (!nav) return;
    api("GET", "/api/me").then(function (me) {
      nav.innerHTML = "";
      if (me.role === "merchant" || me.role === "admin") {
        var console = document.createElement("a");
        console.href = me.role === "admin" ? "/admin" : "/merchant";
        console.textContent = me.role === "admin" ? nav.dataset.admin : nav.dataset.merchant;
        nav.appendChild(console);
      }
      var who = document.createElement("span");
      who.textContent = me.username;
      who.className = "who";
      var out = document.createElement("button");
      out.type = "button"; out.className = "linklike"; out.textContent = nav.dataset.logout;
      out.addEventListener("click", function () {
        api("POST", "/api/auth/logout").then(function () { location.href = "/"; });
      });
      nav.appendChild(who); nav.appendChild(out);
    }).catch(function () { /* not logged in: the links stay */ });
  });
})();
