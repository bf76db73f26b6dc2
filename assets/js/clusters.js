// The admin's page of an item's flagged clusters: each cluster from GET /api/admin/items/{id}/clusters,
// its evidence in words, the open appeals of its accounts, and Clear / Confirm with a reason.
(function () {
  "use strict";
  var box = document.getElementById("clusters");
  if (!box) return;
  var id = box.dataset.item, words = JSON.parse(box.dataset.words || "{}"), appeals = JSON.parse(box.dataset.appeals || "[]");
  var list = document.getElementById("clusters-list"), lang = document.documentElement.lang || undefined;

  function w(key) { return words[key] || key; }
  function fmt(key) {
    var s = w(key), args = Array.prototype.slice.call(arguments, 1);
    return s.replace(/%[sd]/g, function () { return args.length ? String(args.shift()) : ""; });
  }
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function when(iso) {
    var d = new Date(iso);
    return isNaN(d) ? "" : d.toLocaleString(lang, { dateStyle: "medium", timeStyle: "short" });
  }
  // The evidence of one signal, in words: what was seen, with its figures.
  function evidence(c, signal) {
    var li = el("li", "signal-" + signal, w("clu.sig." + signal));
    var detail = [];
    if (signal === "prefix_crowd") (c.prefixes || []).forEach(function (p) { detail.push(fmt("clu.prefix", p.prefix, p.accounts)); });
    if (signal === "burst" && c.accounts_made_from) detail.push(fmt("clu.made", when(c.accounts_made_from), when(c.accounts_made_to)));
    if (signal === "device_shared") detail.push(fmt("clu.devices", c.devices || 0));
    if (signal === "device_refused") detail.push(fmt("clu.refused", c.refused || 0));
    if (detail.length) li.appendChild(el("span", "muted", " — " + detail.join("; ")));
    return li;
  }
  function decision(c) {
    if (c.decision === "cleared") return el("p", "notice ok decision", w("clu.cleared"));
    if (c.decision === "confirmed") return el("p", "notice bad decision", w("clu.confirmed"));
    return el("p", "notice decision", w("clu.pending"));
  }
  function decide(c, form, action, btn) {
    form.querySelectorAll(".field-error, .form-error").forEach(function (e) { e.textContent = ""; });
    btn.disabled = true;
    api("POST", "/api/admin/items/" + id + "/clusters/" + encodeURIComponent(c.key) + "/" + action, { reason: form.reason.value })
      .then(load)
      .catch(function (e) {
        btn.disabled = false;
        if (e.fields && e.fields.reason) { form.querySelector('[data-error-for="reason"]').textContent = e.fields.reason; form.reason.focus(); }
        else form.querySelector(".form-error").textContent = e.message;
      });
  }
  function cluster(c) {
    var art = el("article", "panel cluster");
    art.dataset.cluster = c.key;
    var h = el("h2", "", fmt("clu.cluster", c.key) + " · " + fmt("clu.entrants", c.entrants));
    art.appendChild(h);
    art.appendChild(decision(c));
    if (c.shadowed !== undefined) art.appendChild(el("p", "muted shadowed", fmt("clu.shadowed", c.shadowed)));
    art.appendChild(el("p", "why", w("clu.why")));
    var ul = el("ul", "evidence");
    (c.signals || []).forEach(function (s) { ul.appendChild(evidence(c, s)); });
    art.appendChild(ul);
    var users = c.users || [];
    var accounts = el("p", "muted accounts", w("clu.accounts") + " " + users.slice(0, 30).map(function (u) { return "#" + u; }).join(", "));
    if (users.length > 30) accounts.textContent += " " + fmt("clu.more", users.length - 30);
    art.appendChild(accounts);
    // Which open appeals come from the cluster's accounts.
    var theirs = appeals.filter(function (a) { return users.indexOf(a.user_id) >= 0; });
    var ap = el("div", "cluster-appeals");
    ap.appendChild(el("h3", "", w("clu.appeals")));
    if (!theirs.length) ap.appendChild(el("p", "muted", w("clu.noAppeals")));
    theirs.forEach(function (a) {
      var q = el("blockquote", "appeal-message", a.message);
      var by = el("p", "muted", a.username + " (#" + a.user_id + ") · " + when(a.created_at) + " · ");
      var link = el("a", "", w("clu.answer"));
      link.href = "/admin/appeals#appeal-" + a.id;
      by.appendChild(link);
      ap.appendChild(q); ap.appendChild(by);
    });
    art.appendChild(ap);
    // Clear or Confirm, with the reason the audit log keeps: a cleared cluster is decided for good; a
    // confirmed one may still be cleared (an appeal heard).
    if (c.decision === "cleared") return art;
    var form = el("form", "cluster-decide");
    form.noValidate = true;
    var label = el("label", "", w("clu.reason"));
    label.htmlFor = "reason-" + c.key;
    var input = el("input");
    input.name = "reason"; input.id = "reason-" + c.key; input.maxLength = 2000; input.required = true;
    var clear = el("button", "btn", w("clu.clear")), confirm = el("button", "btn danger", w("clu.confirm"));
    clear.type = confirm.type = "button";
    clear.dataset.action = "clear"; confirm.dataset.action = "confirm";
    clear.addEventListener("click", function () { decide(c, form, "clear", clear); });
    confirm.addEventListener("click", function () { decide(c, form, "confirm", confirm); });
    form.addEventListener("submit", function (ev) { ev.preventDefault(); });
    [label, input, clear].concat(c.decision === "confirmed" ? [] : [confirm], [el("span", "field-error"), el("p", "form-error")])
      .forEach(function (e) { form.appendChild(e); });
    form.querySelector(".field-error").dataset.errorFor = "reason";
    form.querySelector(".form-error").setAttribute("role", "alert");
    art.appendChild(form);
    return art;
  }
  function load() {
    return api("GET", "/api/admin/items/" + id + "/clusters").then(function (r) {
      document.getElementById("clusters-room").textContent = fmt("clu.room", w("clu.room." + (r.room || "none")));
      // The thresholds the operator set, in words: what makes a crowd, a burst, a shared browser.
      var th = r.thresholds || {};
      document.getElementById("clusters-thresholds").textContent = w("clu.thresholds") + " " + [
        fmt("clu.th.prefix", th.prefix_min, th.prefix_factor),
        fmt("clu.th.burst", th.burst, th.burst_window_seconds),
        fmt("clu.th.device", th.device_accounts, th.device_refused)
      ].join(w("clu.th.sep")) + w("clu.th.end");
      document.getElementById("clusters-off").hidden = r.shadow_line !== false;
      list.textContent = "";
      if (!(r.clusters || []).length) { list.appendChild(el("p", "muted", w("clu.none"))); return; }
      r.clusters.forEach(function (c) { list.appendChild(cluster(c)); });
    }).catch(function (e) {
      list.textContent = "";
      list.appendChild(el("p", "notice bad", fmt("clu.failed", e.message)));
    });
  }
  load();
})();
