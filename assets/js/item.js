// The item page: the Buy button follows the sale's window by the server's clock, the captcha, the buy
// itself (path, then buy), and the result, polled until the order is made.
(function () {
  "use strict";
  var box = document.getElementById("item");
  var id = box.dataset.item, total = +box.dataset.total;
  var starts = Date.parse(box.dataset.saleStarts), ends = Date.parse(box.dataset.saleEnds);
  var words = JSON.parse(box.dataset.words || "{}");
  var form = document.getElementById("buy-form"), btn = document.getElementById("buy");
  var answer = document.getElementById("captcha-answer"), img = document.getElementById("captcha-img");
  var status = document.getElementById("buy-status"), loginLink = document.getElementById("login-to-buy");
  var stockLeft = document.getElementById("stock-left"), stockBar = document.getElementById("stock-bar");
  var loggedIn = false, left = +box.dataset.left, busy = false, final = false, bought = false, captchaId = null;
  var captchaAt = 0, failedOrder = false, paused = !!box.dataset.paused;

  function w(key) { return words[key] || key; }
  function say(text, kind) { status.textContent = text; status.className = "buy-status " + (kind || ""); }
  // The buy's 202: queued, or unconfirmed (taken, but Redis's replicas had not said they have it in time);
  // either way the result is followed until it settles.
  // An unconfirmed buy is followed through a result of none (or sold out): its take may have been lost
  // with a Redis master, and the server then says so (failed, reason lost), within about a minute.
  var unconfirmed = false;
  function sayTaken(r) { unconfirmed = !!(r && r.status === "unconfirmed"); say(w(unconfirmed ? "buy.unconfirmed" : "buy.queued")); }
  function sayError(e) {
    var key = "err." + (e.code || (e.status ? "other" : "network"));
    say(words[key] ? w(key) : (e.message || w("err.other")), "bad");
    if (e.code === "sold_out" || e.code === "already_bought" || e.code === "ended") final = true;
    if (e.code === "paused") { paused = true; update(); }
    if (e.code === "unauthenticated") { loggedIn = false; form.hidden = true; loginLink.hidden = false; }
  }
  function open() { var now = window.serverNow(); return now >= starts && now < ends; }
  // A sale an admin paused: the button waits, and the page says why, until it resumes. Only a shopper in
  // the line is told their place is kept: the others have none.
  function pausedWords() {
    var inLine = queueMode && q && (q.state === "waiting" || q.state === "your_turn" || q.state === "sold_out");
    return inLine ? w("err.paused") : w("queue.pausedOut");
  }
  function showPaused() {
    if (paused && !final) say(pausedWords(), "bad");
    else if (!paused && (status.textContent === w("err.paused") || status.textContent === w("queue.pausedOut"))) say("");
  }
  var update = function () {
    showPaused();
    btn.disabled = !loggedIn || busy || final || paused || left <= 0 || !open();
    if (left <= 0 && !final) { final = true; if (!status.textContent) say(w("err.sold_out"), "bad"); }
    if (window.serverNow() >= ends && !final) { final = true; say(w("err.ended"), "bad"); }
  };
  function showStock(n) {
    left = n;
    stockLeft.textContent = n;
    stockBar.style.width = (total > 0 ? Math.floor(n * 100 / total) : 0) + "%";
  }
  function refreshItem() {
    var sent = Date.now();
    api("GET", "/api/items/" + id).then(function (it) {
      // A server time, corrected for half the round trip, keeps the countdown honest.
      window.syncClock(it.server_time, sent);
      showStock(it.stock_left);
      paused = !!it.paused;
      ends = Date.parse(it.ends_at); // an admin may end the sale early
      update();
    }).catch(function () {});
  }
  function newCaptcha() {
    answer.value = "";
    captchaAt = Date.now();
    return api("GET", "/api/captcha").then(function (c) { captchaId = c.captcha_id; img.dataset.captchaId = c.captcha_id; img.src = c.image; })
      .catch(function (e) { sayError(e); });
  }
  // The order the buy made, as it is now: made (pay it), or cancelled since (unpaid in time, or by its
  // buyer), which the buy's result alone does not say. Asked once, when the page learns of the order.
  function showOrder(no) {
    api("GET", "/api/orders/" + encodeURIComponent(no)).then(function (o) { return o.status; }, function () { return ""; }).then(function (st) {
      var cancelled = st === "cancelled";
      var text = cancelled ? w("buy.cancelled") : w("buy.success") + " %s";
      var at = text.indexOf("%s");
      status.innerHTML = "";
      var no1 = document.createElement("strong");
      no1.className = "order-no"; no1.textContent = no;
      var link = document.createElement("a");
      link.href = "/orders/" + encodeURIComponent(no); link.className = "btn"; link.textContent = w("buy.pay");
      status.appendChild(document.createTextNode(text.slice(0, at)));
      status.appendChild(no1);
      status.appendChild(document.createTextNode(text.slice(at + 2) + " "));
      status.appendChild(link);
      status.className = "buy-status " + (cancelled ? "bad" : "good");
    });
  }
  function follow() {
    api("GET", "/api/items/" + id + "/result").then(function (r) {
      if (r.status === "queued") { setTimeout(follow, 1000); return; }
      if (unconfirmed && (r.status === "none" || r.status === "sold_out")) { setTimeout(follow, 2000); return; }
      busy = false;
      unconfirmed = false;
      if (r.status === "success") {
        final = bought = true; // nothing a late poll says changes this
        clearTimeout(polling);
        form.hidden = true; // bought: the captcha and the button have done their job
        showOrder(r.order_no);
      } else if (r.status === "failed") {
        // Lost with a Redis master before a replica had it: nothing was taken, and the unit is on sale.
        say(r.reason === "lost" ? w("buy.lost") : (r.message || w("err.failed")), "bad");
        // In line, the place is kept and the line tells when to buy again; the failed order is not
        // followed again however long the line still says bought.
        if (queueMode) { failedOrder = true; own = null; clearTimeout(polling); polling = setTimeout(pollQueue, 2000); } else newCaptcha();
      }
      else if (r.status === "sold_out") { final = true; say(w("err.sold_out"), "bad"); }
      update();
    }).catch(function () { setTimeout(follow, 2000); });
  }

  // The waiting room of a queue sale: join with the captcha during the countdown, follow the place in
  // line, and buy with the turn's path when it comes (no second captcha).
  var queueMode = box.dataset.mode === "queue", opens = Date.parse(box.dataset.queueOpens || "");
  var captchaBox = document.getElementById("captcha-box"), queueStatus = document.getElementById("queue-status");
  var q = null, polling = null, stopped = false, joinHeldUntil = 0;
  var joinPow = null;
  function joinProof() {
    if (!joinPow && window.Pow) joinPow = new window.Pow("purpose=join&item_id=" + id);
    if (joinPow) joinPow.ensure();
  }
  function fmt(key, v) { return w(key).replace("%d", v).replace("%s", v); }
  // A wait under a minute is said as such (never "about 0 s"); a longer one in minutes.
  function waitWords(sec) { return sec < 60 ? w("queue.waitSoon") : fmt("queue.waitMin", Math.round(sec / 60)); }
  // A join the Redis replicas had not acknowledged in time (unconfirmed): its place is on the master only.
  // The page says so beside the place while it waits, and, should a failover lose the place (the line
  // then says out), that it was lost: join again. The note goes once the page's own standing, read from
  // Redis since the join, finds the place (placeKept).
  var joinUnconfirmed = false;
  // placeKept: whether s, an answer of the page's own standing asked when its place was before (null: not
  // known yet), was read from the Redis master the shop reads now and finds the place there. A page that
  // joined before the draw learns its place from its first standing with a position: no instance answers
  // a drawn place it has not read from Redis since the draw, which came after the join. A turn, a buy
  // made, a turn missed are read from Redis: the line reached the place. Not proof: the join's own
  // answer (read at once, on the same master), the line's public document (a sold out, an end), and a
  // standing asked with the signed place, which the server answers from the token while the line has
  // not reached it.
  function placeKept(s, before) {
    return s.state === "your_turn" || s.state === "bought" || s.state === "missed" || (before == null && s.position != null);
  }
  function sayQueue(text, kind) { queueStatus.hidden = !text; queueStatus.textContent = text; queueStatus.className = "queue-status " + (kind || ""); }
  function queueOpen() { var now = window.serverNow(); return now >= opens && now < ends; }
  function showQueue(s) {
    if (bought) return;
    var was = q ? q.state : null;
    q = s;
    if (was === "your_turn" && s.state === "missed") {
      // The turn ran out: a click meant for it must not join the line again by accident (with an empty
      // captcha), and what the buy said of it is said better by the line now.
      joinHeldUntil = Date.now() + 2000;
      if (status.className.indexOf("bad") >= 0) say("");
    }
    alerts.hidden = !(s.state === "waiting" || s.state === "sold_out" || s.state === "your_turn");
    if (!alerts.hidden) showNotifyState();
    box.dispatchEvent(new CustomEvent("standing", { detail: s.state })); // for the appeal (appeal.js)
    // In line, the standing decides: a refusal (sold out) is not final while the place is kept.
    final = s.state === "ended";
    var joinable = s.state === "out" || s.state === "missed";
    captchaBox.hidden = !(joinable && queueOpen());
    // In line the button has nothing to do until the turn comes: it is shown only to join or to buy.
    btn.hidden = !(joinable || s.state === "your_turn");
    if (s.state === "your_turn" && s.paused) {
      // The pause holds the turn: its time is given back when the sale resumes.
      btn.textContent = w("queue.turn") + (document.documentElement.lang === "zh-CN" ? "（" : " (") + w("queue.turnHeld") + (document.documentElement.lang === "zh-CN" ? "）" : ")");
    } else if (s.state === "your_turn") {
      var secs = Math.max(0, Math.ceil((Date.parse(s.turn_ends_at) - window.serverNow()) / 1000));
      btn.textContent = w("queue.turn") + (document.documentElement.lang === "zh-CN" ? "（" : " (") + fmt("queue.turnLeft", secs) + (document.documentElement.lang === "zh-CN" ? "）" : ")");
    } else {
      btn.textContent = w("queue.join");
    }
    if (joinUnconfirmed && s.state === "out") { joinUnconfirmed = false; sayQueue(w("queue.lost"), "bad"); }
    else if (joinUnconfirmed && s.state === "waiting") sayQueue(w("queue.unconfirmed") + (s.position == null ? "" : " · " + fmt("queue.place", s.position)));
    else if (s.state === "waiting" && s.position == null) sayQueue(w("queue.drawWait"));
    else if (s.state === "waiting") {
      var parts = [fmt("queue.place", s.position)];
      if (s.wait_seconds != null) parts.push(waitWords(s.wait_seconds));
      parts.push(fmt("queue.left", s.stock_left));
      sayQueue(parts.join(" · ") + (s.ahead >= s.stock_left ? " " + w("queue.likely") : ""));
    } else if (s.state === "sold_out") sayQueue(fmt("queue.soldOut", s.position), "bad");
    else if (s.state === "missed") sayQueue(w("queue.missed"), "bad");
    else if (s.state === "out" && !queueOpen() && window.serverNow() < opens) sayQueue(fmt("queue.notOpen", new Date(opens).toLocaleTimeString(document.documentElement.lang || undefined, { hour: "2-digit", minute: "2-digit" })));
    else sayQueue("");
    if (s.state === "bought" && busy !== "queued" && !failedOrder) { busy = "queued"; say(w("buy.queued")); follow(); }
    if (s.state === "ended") { final = true; say(w("err.ended"), "bad"); }
    // The join captcha is drawn once the room is open, and drawn again before its answer expires (5 min).
    if ((s.state === "out" || s.state === "missed") && queueOpen() && (!captchaId || Date.now() - captchaAt > 240000)) newCaptcha();
    // The join's proof of work is solved while the person types the captcha (and again when it is stale).
    if (joinable && queueOpen()) joinProof();
    update();
    if (s.state === "your_turn" && !s.paused && s.path !== announced) announce(s);
    if (s.state !== "your_turn") { announced = null; closeNote(); }
  }
  // Your turn, announced: on joining the page offers to tell the person when their turn comes (the
  // browser's permission is asked then, on their click, never on load); when it comes, a notification
  // with the item and the seconds left (when the page is not in sight), the tab's title counting down, a
  // short sound made here (no file; off by the switch, remembered), a vibration where there is one, and
  // the turn's button focused.
  var alerts = document.getElementById("turn-alerts"), notifyBtn = document.getElementById("turn-notify");
  var notifyNote = document.getElementById("turn-notify-note"), soundSwitch = document.getElementById("turn-sound");
  var itemName = (box.querySelector("h1") || {}).textContent || "", baseTitle = document.title;
  var announced = null, note = null, audio = null, soundKey = "seckill.turnSound";
  if (!alerts) alerts = { hidden: true };
  function soundOn() { try { return localStorage.getItem(soundKey) !== "off"; } catch (e) { return true; } }
  function unlockAudio() {
    var AC = window.AudioContext || window.webkitAudioContext;
    if (!AC || !soundOn()) return;
    try { if (!audio) audio = new AC(); if (audio.state === "suspended") audio.resume(); } catch (e) { audio = null; }
  }
  function chime() {
    if (!soundOn()) return;
    unlockAudio();
    if (!audio) return;
    var t0 = audio.currentTime + 0.01;
    [880, 1175].forEach(function (hz, i) { // two short rising notes, a fifth of a second each
      var o = audio.createOscillator(), g = audio.createGain(), at = t0 + i * 0.22;
      o.type = "sine"; o.frequency.value = hz;
      g.gain.setValueAtTime(0.0001, at);
      g.gain.exponentialRampToValueAtTime(0.3, at + 0.02);
      g.gain.exponentialRampToValueAtTime(0.0001, at + 0.19);
      o.connect(g); g.connect(audio.destination);
      o.start(at); o.stop(at + 0.2);
    });
  }
  function showNotifyState() {
    if (!notifyBtn) return;
    var has = "Notification" in window, perm = has ? Notification.permission : "unsupported";
    notifyBtn.hidden = perm !== "default";
    notifyNote.textContent = perm === "granted" ? w("queue.notifyOn") : perm === "denied" ? w("queue.notifyBlocked") : "";
  }
  if (notifyBtn) notifyBtn.addEventListener("click", function () {
    unlockAudio();
    var asked = Notification.requestPermission(showNotifyState); // the old form takes a callback
    if (asked && asked.then) asked.then(showNotifyState, showNotifyState);
  });
  if (soundSwitch) {
    soundSwitch.checked = soundOn();
    soundSwitch.addEventListener("change", function () {
      try { localStorage.setItem(soundKey, soundSwitch.checked ? "on" : "off"); } catch (e) {}
      if (soundSwitch.checked) chime(); // what it will sound like
    });
  }
  function secondsLeft(s) { return Math.max(0, Math.ceil((Date.parse(s.turn_ends_at) - window.serverNow()) / 1000)); }
  function announce(s) {
    announced = s.path;
    btn.focus();
    chime();
    if (navigator.vibrate) { try { navigator.vibrate([200, 100, 200]); } catch (e) {} }
    if (window.Notification && Notification.permission === "granted" && (document.hidden || !document.hasFocus())) {
      try {
        closeNote();
        note = new Notification(fmt("queue.alertTitle", itemName), { body: fmt("queue.alertBody", secondsLeft(s)), tag: "seckill-turn-" + id });
        note.onclick = function () { window.focus(); btn.focus(); closeNote(); };
      } catch (e) { note = null; } // a browser that shows notifications only from a service worker
    }
  }
  function closeNote() { if (note) { try { note.close(); } catch (e) {} note = null; } }
  // The title counts the turn down, "(0:27) Your turn – …", seen on the tab from another one.
  function showTitle() {
    var t = baseTitle;
    if (q && q.state === "your_turn" && !q.paused && !bought && busy !== "queued") {
      var left = secondsLeft(q);
      t = "(" + Math.floor(left / 60) + ":" + ("0" + left % 60).slice(-2) + ") " + w("queue.titleTurn") + " – " + baseTitle;
    }
    if (document.title !== t) document.title = t;
  }
  // A page back in sight asks at once rather than at its next (slowed) poll: the turn it finds is seen now.
  document.addEventListener("visibilitychange", function () {
    if (document.hidden) return;
    closeNote();
    if (queueMode && !stopped && !bought && loggedIn) pollQueue();
  });
  document.addEventListener("resume", function () { if (queueMode && !stopped && !bought && loggedIn) pollQueue(); });

  // What the page polls is the line's public document (the same for everyone, cached a second): it tells
  // a waiting page how far the line has been let in, so the page asks its own standing only once after the
  // draw (to learn its place and the place's signed token), when the line reaches its place, and, held
  // below the front (its turn ended sold out, or its order failed), when someone held is let in again.
  var line = null, own = null, place = null, token = null, askedAt = -1, seenReadmitted = -1, held = false, asking = false;
  var seenSoldOut = false; // the line was sold out when the page last asked its own standing
  var placeTimer = null, placeAt = 0, placeDraw = Math.random(); // a page in the draw asks its place a moment after the start
  function copy(s, more) {
    var c = {}, k;
    for (k in s) c[k] = s[k];
    for (k in more) c[k] = more[k];
    return c;
  }
  // The page's own standing, with its signed place once it has one (any instance answers it from memory).
  function ownStanding() {
    if (!token) return api("GET", "/api/items/" + id + "/queue");
    return fetch("/api/items/" + id + "/queue", { headers: { "Accept": "application/json", "X-Line-Place": token }, credentials: "same-origin" })
      .then(function (r) {
        return r.json().then(function (j) {
          if (!r.ok) { var e = new Error(j.message || "request failed"); e.code = j.error; e.status = r.status; throw e; }
          return j;
        });
      });
  }
  function learn(s) {
    own = s;
    window.syncClock(s.server_time); // never cached: the server's clock as it is
    if (s.position != null) place = s.position;
    if (s.place_token) token = s.place_token;
    if (line) { askedAt = line.let_in; seenReadmitted = line.readmitted; seenSoldOut = !!line.sold_out; }
    held = failedOrder || ((s.state === "sold_out" || s.state === "waiting") && place != null && line != null && place <= line.let_in);
    if (s.state !== "bought") failedOrder = false;
    showQueue(withLine(s));
    if (s.state === "ended") stopped = true;
  }
  function askOwn() {
    if (asking) return;
    asking = true;
    var before = place;
    ownStanding().then(function (s) { asking = false; if (placeKept(s, before)) joinUnconfirmed = false; learn(s); }).catch(function (e) {
      asking = false;
      if (e.code === "bad_place") { token = null; askOwn(); return; }
      if (e.code === "unauthenticated") { stopped = true; clearTimeout(polling); sayError(e); }
    });
  }
  // withLine is a standing with what the document knows fresher: the stock left and the pause.
  function withLine(s) {
    return line ? copy(s, { stock_left: line.stock_left, paused: line.state === "paused" }) : s;
  }
  // The standing of a placed page the line has not reached (or held below it), from the document alone.
  function fromLine() {
    var out = !!line.sold_out, ahead = Math.max(place - line.let_in - 1, 0);
    // Held below the front, those ahead are as the page's own standing last counted them (the line may let
    // others in first), less those let in since.
    if (held && own && own.ahead != null) ahead = Math.max(own.ahead - Math.max(line.let_in - askedAt, 0), 0);
    return withLine(copy(own, { state: out ? "sold_out" : "waiting", position: place, ahead: ahead, path: null, turn_ends_at: null,
      wait_seconds: out ? null : Math.round(ahead / Math.max(line.rate, 0.01)) }));
  }
  function decide() {
    if (bought) return;
    var st = own.state;
    if (line.state === "ended") { stopped = true; showQueue({ state: "ended", stock_left: line.stock_left, paused: false }); return; }
    // In the draw: the place is asked once a moment after the start, not when the document (a second
    // old at most, and nginx's second on top) says the draw is written; spread at random over a second
    // and a tenth of a millisecond an entrant, so that a big crowd does not ask all at once.
    if (st === "waiting" && place == null && !placeTimer && !line.drawn) {
      placeAt = starts + 500 + placeDraw * (1000 + (line.entrants || 0) / 10);
      var wait = placeAt - window.serverNow();
      if (wait > 0) placeTimer = setTimeout(function () { placeTimer = "done"; if (place == null && !stopped) askOwn(); }, wait);
      else placeTimer = "done";
    }
    // A timer slowed in a background tab may come late: a poll past the page's moment asks all the same.
    if (placeTimer !== null && placeTimer !== "done" && window.serverNow() >= placeAt) { clearTimeout(placeTimer); placeTimer = "done"; }
    if (st === "out" || st === "missed" || st === "ended" || (st === "bought" && !failedOrder) || !line.drawn) { showQueue(withLine(own)); return; }
    if (place == null) { if (placeTimer === "done" || placeTimer === null) askOwn(); return; } // else its moment comes
    if (st === "your_turn") {
      // The turn's time is up (and no pause holds it): what became of it is the page's own to ask.
      if (Date.parse(own.turn_ends_at) <= window.serverNow() && line.state !== "paused") askOwn();
      else showQueue(line.sold_out ? fromLine() : withLine(own));
      return;
    }
    var out = !!line.sold_out;
    // Held below the front: asked again when someone held is let in again, or when units come back (a
    // turn that the sell-out held may be given back as it was, with no re-admission to count).
    if (held ? !out && (line.readmitted !== seenReadmitted || seenSoldOut) : !out && place <= line.let_in && askedAt !== line.let_in) { askOwn(); return; }
    showQueue(fromLine());
  }
  var polls = 0; // only the latest poll schedules the next: one loop, however often it is restarted
  function pollQueue() {
    clearTimeout(polling);
    if (stopped || bought) return;
    var mine = ++polls;
    api("GET", "/api/items/" + id + "/line").then(function (l) {
      line = l;
      if (!own) askOwn(); else decide();
    }).catch(function () {}).then(function () {
      if (mine === polls && !stopped && !bought && !(own && own.state === "bought" && !failedOrder)) polling = setTimeout(pollQueue, 1000);
    });
  }
  if (queueMode) {
    update = function () {
      var turn = q && q.state === "your_turn" && Date.parse(q.turn_ends_at) > window.serverNow();
      var joinable = q && (q.state === "out" || q.state === "missed") && queueOpen() && Date.now() >= joinHeldUntil;
      if (q) paused = !!q.paused;
      showPaused();
      btn.disabled = !loggedIn || busy || final || paused || !(turn || joinable);
      showTitle();
      if (window.serverNow() >= ends && !final) { final = true; say(w("err.ended"), "bad"); }
    };
  }

  form.addEventListener("submit", function (ev) {
    ev.preventDefault();
    if (btn.disabled) return;
    if (queueMode) {
      busy = true; update();
      if (q && q.state === "your_turn") {
        say(w("buy.wait"));
        api("POST", "/api/items/" + id + "/buy/" + q.path)
          .then(function (r) { clearTimeout(polling); failedOrder = false; own = copy(own, { state: "bought" }); busy = "queued"; sayTaken(r); follow(); })
          .catch(function (e) {
            // A turn that ended as the click went: the line tells it (missed), not "try again".
            if (e.code === "invalid_path") say(""); else sayError(e);
            busy = false; askOwn();
          });
        return;
      }
      if (!answer.value.trim()) {
        // Asked here, not by the server: a join without the captcha's answer says what to do.
        busy = false; say(w("queue.typeCaptcha"), "bad"); answer.focus(); update();
        return;
      }
      unlockAudio(); // a gesture: the turn's sound may play later
      var join = { captcha_id: captchaId, captcha_answer: answer.value.trim() };
      if (addressSelect) { join.address_id = Number(addressSelect.value) || 0; join.address_card = addressCards[addressSelect.value] || ""; }
      if (joinPow && !joinPow.ready()) say(w("queue.powWait")); // sent by itself once the check is done
      (joinPow ? joinPow.take() : Promise.resolve(undefined))
        .then(function (proof) { join.altcha = proof; return api("POST", "/api/items/" + id + "/queue", join); })
        .then(function (s) { captchaId = null; if (joinPow) joinPow.used(); say(""); busy = false; joinUnconfirmed = !!s.unconfirmed; learn(s); pollQueue(); })
        .catch(function (e) {
          sayError(e); busy = false;
          // Every answer but a bad field's used the proof; a bad proof left the captcha as it was.
          if (joinPow && e.code !== "bad_request") joinPow.start();
          if (e.code !== "bad_pow") newCaptcha();
          update();
        });
      return;
    }
    busy = true; update();
    say(w("buy.wait"));
    var started = Date.now();
    // The button stays disabled a few seconds after a click, whatever the answer: no double clicks.
    var release = function () {
      setTimeout(function () { if (busy !== "queued") { busy = false; update(); } }, Math.max(0, 3000 - (Date.now() - started)));
    };
    api("POST", "/api/items/" + id + "/path", { captcha_id: captchaId, captcha_answer: answer.value.trim() })
      .then(function (p) { return api("POST", "/api/items/" + id + "/buy/" + p.path); })
      .then(function (r) { busy = "queued"; sayTaken(r); follow(); })
      .catch(function (e) { sayError(e); if (!final) newCaptcha(); release(); });
  });
  document.getElementById("captcha-new").addEventListener("click", newCaptcha);

  // A sale of one entrant per address: the join says which of the shopper's addresses the item would go to.
  var addressSelect = document.getElementById("join-address");
  var addressCards = {}; // each address's signed card: the join hands it back, and the server reads no address book
  function loadAddresses() {
    if (!addressSelect) return;
    api("GET", "/api/addresses").then(function (list) {
      var chosen = addressSelect.value;
      addressSelect.textContent = ""; addressCards = {};
      (list || []).forEach(function (a) {
        var o = document.createElement("option");
        o.value = a.id;
        if (a.card) addressCards[a.id] = a.card;
        o.textContent = [a.recipient, a.city, a.street].join(" · ");
        addressSelect.appendChild(o);
      });
      if (chosen) { addressSelect.value = chosen; if (!addressSelect.value && addressSelect.options.length) addressSelect.selectedIndex = 0; }
      document.getElementById("no-address").hidden = (list || []).length > 0;
      addressSelect.hidden = !(list || []).length;
    });
  }
  // The book may change in another tab (an address edited or added): read it again when the page comes
  // back, so that the choice and its card are what the person sees there.
  document.addEventListener("visibilitychange", function () {
    if (document.visibilityState === "visible" && loggedIn) loadAddresses();
  });

  whoami().then(function (me) {
    if (me && me.role && me.role !== "shopper") {
      // Staff do not take part: the page says so instead of offering the line or Buy.
      document.getElementById("staff-note").hidden = false;
      throw null;
    }
    loggedIn = true; form.hidden = false;
    loadAddresses();
    if (queueMode) { pollQueue(); return; }
    newCaptcha();
    return api("GET", "/api/items/" + id + "/result").then(function (r) {
      if (r.status === "success" || r.status === "queued") { busy = "queued"; follow(); }
    });
  }).catch(function (e) { if (e !== null) loginLink.hidden = false; }).then(update);

  refreshItem();
  setInterval(refreshItem, 2000);
  setInterval(update, 200);
})();
