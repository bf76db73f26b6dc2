// The pages' one way to call the JSON API: it sends the CSRF token with every state-changing request,
// and turns error bodies into exceptions with the contract's code. A logged-in page's one request on load
// is GET /api/me (who, and the CSRF token), shared by every script through window.whoami(); a logged-out
// page asks GET /api/csrf when it first needs a token (a login or registration form).
(function () {
  "use strict";
  var token = null, me = null;
  // signedIn: the hint cookie says a session may be there (the session itself is HttpOnly).
  function signedIn() { return /(^|; )sk_in=1/.test(document.cookie); }
  // whoami answers {id, username, role, csrf_token} once per page, however many scripts ask; it rejects
  // (as a 401) without asking when the page is logged out.
  function whoami() {
    if (!me) {
      if (!signedIn()) {
        var e = new Error("log in first");
        e.code = "unauthenticated"; e.status = 401;
        return Promise.reject(e);
      }
      me = api("GET", "/api/me").then(function (j) {
        if (j.csrf_token) token = j.csrf_token;
        return j;
      });
    }
    return me;
  }
  window.whoami = whoami;
  function fetchCSRF() {
    return fetch("/api/csrf", { credentials: "same-origin" })
      .then(function (r) { return r.json(); })
      .then(function (j) { token = j.token; return token; });
  }
  function csrf() {
    if (token) return Promise.resolve(token);
    if (me || signedIn()) {
      return whoami().then(function () { return token || fetchCSRF(); }, fetchCSRF);
    }
    return fetchCSRF();
  }
  function api(method, url, body) {
    var headers = { "Accept": "application/json" };
    var p = Promise.resolve();
    if (method !== "GET") {
      p = csrf().then(function (t) { headers["X-CSRF-Token"] = t; });
    }
    // A FormData body (a file upload) goes as multipart/form-data, with the boundary the browser sets.
    var form = typeof FormData !== "undefined" && body instanceof FormData;
    if (body !== undefined && !form) headers["Content-Type"] = "application/json";
    return p.then(function () {
      return fetch(url, {
        method: method, headers: headers, credentials: "same-origin",
        body: body === undefined || form ? body : JSON.stringify(body)
      });
    }).then(function (r) {
      if (r.status === 204) return null;
      return r.json().then(function (j) {
        if (!r.ok) {
          var e = new Error(j.message || "request failed");
          e.code = j.error; e.status = r.status; e.fields = j.fields;
          throw e;
        }
        return j;
      });
    });
  }
  window.api = api;

  // showErrors shows an API error on a form: each bad field's reason beside it (the server says them in
  // the page's language, all at once), the first one focused; what has no place beside a field goes in
  // the form's own error line.
  function showErrors(form, e) {
    form.querySelectorAll(".field-error, .form-error").forEach(function (el) { el.textContent = ""; });
    var fields = e.fields || {};
    if (e.code === "bad_captcha") fields = { captcha_answer: e.message };
    var first = null, unplaced = [];
    Object.keys(fields).forEach(function (name) {
      var slot = form.querySelector('[data-error-for="' + name + '"]');
      if (!slot) { unplaced.push(fields[name]); return; }
      slot.textContent = fields[name];
      if (!first) first = form.querySelector('[name="' + name + '"]');
    });
    var general = form.querySelector(".form-error");
    // What has no place of its own: the whole message when no field is named, else only those reasons.
    if (general && Object.keys(fields).length === 0) general.textContent = e.message;
    else if (general && unplaced.length) general.textContent = unplaced.join(" · ");
    if (first) first.focus();
  }
  window.showErrors = showErrors;

  // localPath is handlers.LocalPath for the pages: target when it is a plain path on this site, else "/".
  // One "/" then not "/" or "\", printable ASCII only (no "\", no tab, space or line break), every "%"
  // followed by two hex digits, 2,048 at most.
  function localPath(target) {
    if (typeof target !== "string" || target.length === 0 || target.length > 2048 || target.charAt(0) !== "/") return "/";
    if (target.charAt(1) === "/" || target.charAt(1) === "\\") return "/";
    for (var i = 0; i < target.length; i++) {
      var c = target.charCodeAt(i);
      if (c < 0x21 || c > 0x7e || c === 0x5c) return "/";
      if (c === 0x25 && !/^[0-9A-Fa-f]{2}$/.test(target.substr(i + 1, 2))) return "/";
    }
    return target;
  }
  window.localPath = localPath;

  // Times are shown in the reader's own time zone and the page's language: <time data-local> holds UTC.
  document.addEventListener("DOMContentLoaded", function () {
    var lang = document.documentElement.lang || undefined;
    document.querySelectorAll("time[data-local]").forEach(function (el) {
      var d = new Date(el.getAttribute("datetime"));
      if (!isNaN(d)) el.textContent = d.toLocaleString(lang, { dateStyle: "medium", timeStyle: "short" });
    });
    // A form's times are in the reader's zone: say which (the zone's name and its offset from UTC).
    document.querySelectorAll("[data-tz]").forEach(function (el) {
      var off = -new Date().getTimezoneOffset(), sign = off >= 0 ? "+" : "-";
      off = Math.abs(off);
      var utc = "UTC" + sign + ("0" + Math.floor(off / 60)).slice(-2) + ":" + ("0" + off % 60).slice(-2);
      var zone = (window.Intl && Intl.DateTimeFormat().resolvedOptions().timeZone) || "";
      el.textContent = el.dataset.tz.replace("{zone}", zone ? zone + " (" + utc + ")" : utc);
    });
  });

  // The captcha's digits spoken, for a person who cannot see the picture (in the page's language).
  document.addEventListener("click", function (ev) {
    var btn = ev.target.closest && ev.target.closest("[data-captcha-audio]");
    var img = document.getElementById("captcha-img"), audio = document.getElementById("captcha-audio");
    if (!btn || !img || !audio || !img.dataset.captchaId) return;
    audio.src = "/api/captcha/" + encodeURIComponent(img.dataset.captchaId) + "/audio?lang=" + (document.documentElement.lang === "zh-CN" ? "zh" : "en");
    audio.hidden = false;
    audio.controls = true;
    audio.play().catch(function () {});
  });

  // Bars take their width from data-pct: the Content-Security-Policy allows no inline style attributes.
  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("[data-pct]").forEach(function (el) { el.style.width = el.dataset.pct + "%"; });
  });

  // An item's image that cannot be loaded (an address elsewhere that broke) shows the drawn placeholder.
  document.addEventListener("error", function (ev) {
    var img = ev.target;
    if (img.tagName === "IMG" && img.dataset.fallback && img.src.indexOf(img.dataset.fallback) < 0) img.src = img.dataset.fallback;
  }, true);

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
    // Logged out (no hint that a session is there): nothing to ask.
    if (!signedIn()) return;
    whoami().then(function (me) {
      nav.innerHTML = "";
      if (me.role === "merchant" || me.role === "admin") {
        var console = document.createElement("a");
        console.href = me.role === "admin" ? "/admin" : "/merchant";
        console.textContent = me.role === "admin" ? nav.dataset.admin : nav.dataset.merchant;
        nav.appendChild(console);
        if (me.role === "merchant") { // its sales decided since it last looked: a badge on the link
          api("GET", "/api/merchant/decisions").then(function (d) {
            if (!(d.unseen > 0)) return;
            var badge = document.createElement("span");
            badge.className = "badge unseen";
            badge.id = "unseen-decisions";
            badge.textContent = d.unseen;
            badge.title = nav.dataset.unseen;
            console.appendChild(document.createTextNode(" "));
            console.appendChild(badge);
          }).catch(function () {});
        }
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
    }).catch(function () {
      // The session ended (expired, logged out elsewhere): the links stay, and the hint goes.
      document.cookie = "sk_in=; Path=/; Max-Age=0; SameSite=Lax";
    });
  });
})();
