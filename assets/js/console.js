// The consoles' forms and buttons talk to the JSON API: a form keeps what was typed, and each error
// shows beside its field (the API names the field first in its message).
(function () {
  "use strict";
  function pad(n) { return n < 10 ? "0" + n : "" + n; }
  function toLocalInput(iso) {
    var d = new Date(iso);
    return d.getFullYear() + "-" + pad(d.getMonth() + 1) + "-" + pad(d.getDate()) + "T" + pad(d.getHours()) + ":" + pad(d.getMinutes());
  }
  document.querySelectorAll("input[data-value]").forEach(function (el) { el.value = toLocalInput(el.dataset.value); });

  function then(target, result) {
    if (target === "reload") { location.reload(); return; }
    location.href = target.replace("{id}", result && result.id);
  }
  function showError(box, e) { window.showErrors(box, e); }
  function value(el) {
    var v = el.value.trim();
    switch (el.dataset.type) {
      case "cents": return v === "" ? 0 : Math.round(parseFloat(v) * 100);
      case "int": return v === "" ? 0 : parseInt(v, 10);
      case "datetime": return v === "" ? null : new Date(v).toISOString();
    }
    return v;
  }
  // A new sale's rules follow its mode until the merchant chooses them: on for a queue sale, off for
  // first come (as the API's defaults).
  document.querySelectorAll("form[data-api] select[name=sale_mode]").forEach(function (mode) {
    var form = mode.form, touched = false;
    if (form.dataset.method === "PUT") return;
    form.querySelectorAll("input[data-rule]").forEach(function (el) { el.addEventListener("change", function () { touched = true; }); });
    function follow() {
      if (touched) return;
      form.querySelectorAll("input[data-rule]").forEach(function (el) { el.checked = mode.value === "queue"; });
    }
    mode.addEventListener("change", follow);
    follow();
  });
  // missing says, beside each required field left empty that names its message (data-missing), that it
  // is missing, and focuses the first: checked before any "are you sure?", which would ask in vain.
  function missing(form) {
    var first = null;
    form.querySelectorAll("[data-missing]").forEach(function (el) {
      var slot = form.querySelector('[data-error-for="' + el.name + '"]');
      var empty = el.value.trim() === "";
      if (slot) slot.textContent = empty ? el.dataset.missing : "";
      if (empty && !first) first = el;
    });
    if (first) first.focus();
    return first !== null;
  }
  document.querySelectorAll("form[data-api]").forEach(function (form) {
    form.addEventListener("submit", function (ev) {
      ev.preventDefault();
      if (missing(form)) return;
      if (form.dataset.confirm && !window.confirm(form.dataset.confirm)) return;
      var body = {};
      form.querySelectorAll("input[name], textarea[name], select[name]").forEach(function (el) {
        var v = value(el);
        if (v !== null) body[el.name] = v;
      });
      // A sale's rules are checkboxes: {"rules": {"one_per_address": true, ...}}.
      form.querySelectorAll("input[data-rule]").forEach(function (el) {
        body.rules = body.rules || {};
        body.rules[el.dataset.rule] = el.checked;
      });
      var btn = form.querySelector("button[type=submit]");
      if (btn) btn.disabled = true;
      api(form.dataset.method || "POST", form.dataset.api, body)
        .then(function (r) { then(form.dataset.then, r); })
        .catch(function (e) { showError(form, e); if (btn) btn.disabled = false; });
    });
  });
  document.querySelectorAll("[data-api-click]").forEach(function (btn) {
    btn.addEventListener("click", function () {
      if (btn.dataset.confirm && !window.confirm(btn.dataset.confirm)) return;
      btn.disabled = true;
      api(btn.dataset.method || "POST", btn.dataset.apiClick)
        .then(function (r) { then(btn.dataset.then, r); })
        .catch(function (e) {
          var box = btn.closest("section, article") || document;
          var slot = box.querySelector(".click-error");
          if (slot) slot.textContent = e.message;
          btn.disabled = false;
        });
    });
  });

  // The emergency stop: Pause, Resume or End with the reason typed beside them. Pause and End need the
  // reason, said before End asks "are you sure?"; Resume needs none.
  document.querySelectorAll("form[data-stop]").forEach(function (form) {
    form.addEventListener("submit", function (ev) { ev.preventDefault(); });
    form.querySelectorAll("button[data-action]").forEach(function (btn) {
      btn.addEventListener("click", function () {
        var slot = form.querySelector('[data-error-for="reason"]');
        slot.textContent = "";
        if (btn.dataset.action !== "resume" && form.reason.value.trim() === "") {
          slot.textContent = form.dataset.missing;
          form.reason.focus();
          return;
        }
        if (btn.dataset.action === "end" && !window.confirm(form.dataset.confirmEnd)) return;
        btn.disabled = true;
        api("POST", form.dataset.stop + "/" + btn.dataset.action, { reason: form.reason.value })
          .then(function () { location.reload(); })
          .catch(function (e) {
            btn.disabled = false;
            form.querySelectorAll(".field-error, .form-error").forEach(function (el) { el.textContent = ""; });
            if (e.fields && e.fields.reason) { form.querySelector('[data-error-for="reason"]').textContent = e.fields.reason; form.reason.focus(); }
            else form.querySelector(".form-error").textContent = e.message;
          });
      });
    });
  });

  // An item's image: choosing a file sends it at once; the page shows it once the server has it.
  document.querySelectorAll("form[data-upload-image]").forEach(function (form) {
    var input = form.querySelector("input[type=file]"), err = form.querySelector(".form-error");
    input.addEventListener("change", function () {
      if (!input.files[0]) return;
      // Over the limit: said at once, in the page's words with the real limit, and nothing is sent.
      if (form.dataset.max && input.files[0].size > +form.dataset.max) {
        err.textContent = form.dataset.tooLarge.replace("{0}", Math.floor(form.dataset.max / 1048576));
        input.value = "";
        return;
      }
      var body = new FormData();
      body.append("image", input.files[0]);
      err.textContent = "";
      api("POST", form.dataset.uploadImage, body)
        .then(function () { location.reload(); })
        .catch(function (e) { err.textContent = (e.fields && e.fields.image) || e.message; input.value = ""; });
    });
  });

  // An item's Edit fills the item form and turns it into a change of that item.
  var form = document.getElementById("item-form"), title = document.getElementById("item-form-title");
  document.querySelectorAll("[data-edit-item]").forEach(function (btn) {
    btn.addEventListener("click", function () {
      var it = JSON.parse(btn.dataset.editItem);
      form.dataset.api = form.dataset.api.replace(/\/items(\/\d+)?$/, "/items/" + it.id);
      form.dataset.method = "PUT";
      title.textContent = title.dataset.edit + (document.documentElement.lang === "zh-CN" ? "：" : ": ") + it.name;
      form.name.value = it.name; form.title.value = it.title; form.description.value = it.description;
      form.image_url.value = it.image_url;
      form.original_price_cents.value = (it.original_price_cents / 100).toFixed(2);
      form.seckill_price_cents.value = (it.seckill_price_cents / 100).toFixed(2);
      form.stock.value = it.stock;
      form.stock_shards.value = it.stock_shards;
      form.name.focus();
    });
  });
  // The audit log's search: the form asks GET /api/admin/audit (the contract's paged object:
  // {"entries","total","total_capped","page","per_page"}) and shows the page it answers, its rows in
  // words, without reloading; the address follows, so that a reload or a shared link shows the same page.
  var audit = document.getElementById("audit-search");
  if (audit) {
    var rows = document.getElementById("audit-rows"), found = document.getElementById("audit-found");
    var pagerNav = document.getElementById("audit-pager"), table = rows.closest("table");
    var lang = document.documentElement.lang || undefined;
    function el(tag, text, attrs) {
      var e = document.createElement(tag);
      if (text !== undefined && text !== null) e.textContent = text;
      Object.keys(attrs || {}).forEach(function (k) { e.setAttribute(k, attrs[k]); });
      return e;
    }
    function when(iso) {
      var d = new Date(iso);
      return isNaN(d) ? iso : d.toLocaleString(lang, { dateStyle: "medium", timeStyle: "short" });
    }
    function query(page) {
      var q = new URLSearchParams();
      audit.querySelectorAll("input[name], select[name]").forEach(function (f) { if (f.value.trim() !== "") q.set(f.name, f.value.trim()); });
      if (page > 1) q.set("page", page);
      return q;
    }
    function row(e) {
      var tr = el("tr"), on = el("td"), ch = el("td");
      var t = el("time", when(e.at), { datetime: e.at });
      var td = el("td"); td.appendChild(t); tr.appendChild(td);
      tr.appendChild(el("td", e.actor_words));
      tr.appendChild(el("td", e.what));
      on.appendChild(e.on_url ? el("a", e.on, { href: e.on_url }) : document.createTextNode(e.on));
      if (e.target) {
        on.appendChild(document.createTextNode(" "));
        on.appendChild(el("a", (document.documentElement.lang === "zh-CN" ? "（" : "(") + table.dataset.only + (document.documentElement.lang === "zh-CN" ? "）" : ")"), { href: "/admin/audit?on=" + encodeURIComponent(e.target), "class": "only" }));
      }
      tr.appendChild(on);
      if (e.changes.length) {
        var dl = el("dl", null, { "class": "changes" });
        e.changes.forEach(function (c) {
          dl.appendChild(el("dt", c.field));
          var dd = el("dd");
          var show = function (v) { return c.times ? when(v) : v; };
          if (c.before) { dd.appendChild(el("del", show(c.before))); dd.appendChild(document.createTextNode(" → ")); }
          dd.appendChild(c.after ? el("ins", show(c.after)) : el("em", table.dataset.removed));
          dl.appendChild(dd);
        });
        ch.appendChild(dl);
      }
      tr.appendChild(ch);
      return tr;
    }
    function show(page) {
      var q = query(page), err = audit.querySelector(".form-error");
      api("GET", audit.dataset.auditApi + "?" + q.toString()).then(function (p) {
        err.textContent = "";
        rows.textContent = "";
        p.entries.forEach(function (e) { rows.appendChild(row(e)); });
        var from = (p.page - 1) * p.per_page + 1, to = from + p.entries.length - 1;
        found.textContent = p.entries.length === 0 ? found.dataset.none :
          (p.total_capped ? found.dataset.foundMore : found.dataset.found)
            .replace("{from}", from).replace("{to}", to).replace("{total}", p.total.toLocaleString("en"));
        var prev = pagerNav.querySelector("[rel=prev]"), next = pagerNav.querySelector("[rel=next]");
        prev.hidden = p.page <= 1;
        next.hidden = p.page * p.per_page >= p.total || p.page * p.per_page >= 10000; // the search shows 10,000 rows at most
        prev.dataset.page = p.page - 1;
        next.dataset.page = p.page + 1;
        history.replaceState(null, "", location.pathname + (q.toString() ? "?" + q.toString() : ""));
      }).catch(function (e) {
        err.textContent = e.message;
      });
    }
    audit.addEventListener("submit", function (ev) { ev.preventDefault(); show(1); });
    pagerNav.querySelectorAll("a").forEach(function (a) {
      a.addEventListener("click", function (ev) {
        if (!a.dataset.page) return; // the server's link, before the script has shown a page
        ev.preventDefault();
        show(parseInt(a.dataset.page, 10));
      });
    });
  }
})();
