// The item page's appeal: a shopper in a queue sale's line may ask a person to look, and reads the answer
// here. item.js tells this script the shopper's standing with a "standing" event. The way to appeal is
// offered to everyone waiting in the line, whatever the line does with them. The shopper's own appeal is
// asked for only by a browser that sent one (it remembers so), and now and then while it waits for its
// answer: a crowd's pages never cost the server (and its database) a request for an appeal they never made.
(function () {
  "use strict";
  var item = document.getElementById("item"), box = document.getElementById("appeal");
  if (!item || !box) return;
  var id = box.dataset.item, form = document.getElementById("appeal-form"), ask = document.getElementById("appeal-ask");
  var state = document.getElementById("appeal-state"), answer = document.getElementById("appeal-answer");
  var asked = false, inLine = false, mine = null, timer = null, mark = "appeal:" + id;
  function sent() { try { return localStorage.getItem(mark) === "1"; } catch (e) { return false; } }
  function remember() { try { localStorage.setItem(mark, "1"); } catch (e) { /* private mode: asked this visit only */ } }

  var elsewhere = document.getElementById("appeal-elsewhere");
  function render() {
    var answered = !!mine && mine.state === "answered" && mine.answer != null;
    box.hidden = !(inLine || mine);
    elsewhere.hidden = asked || !!mine;
    state.hidden = !mine;
    // One open appeal an item: asking again waits for its answer.
    ask.hidden = !inLine || (!!mine && !answered);
    if (!mine) return;
    document.getElementById("appeal-yours").textContent = mine.message;
    document.getElementById("appeal-waiting").hidden = answered;
    answer.hidden = !answered;
    document.getElementById("appeal-answer-text").textContent = answered ? mine.answer : "";
  }
  function show(a) {
    mine = a;
    clearTimeout(timer);
    // An open appeal is asked about again now and then until it is answered.
    if (a && a.state === "open") timer = setTimeout(refresh, 20000);
    render();
  }
  function refresh() {
    if (document.visibilityState !== "visible") { timer = setTimeout(refresh, 20000); return; }
    api("GET", "/api/items/" + id + "/appeal").then(show).catch(function (e) {
      if (e.status === 404) show(null);
    });
  }
  item.addEventListener("standing", function (ev) {
    var st = ev.detail;
    inLine = st === "waiting" || st === "sold_out";
    if (!asked && st !== "out" && st !== "ended" && sent()) { asked = true; refresh(); }
    render();
  });
  document.getElementById("appeal-check").addEventListener("click", function () { asked = true; remember(); refresh(); render(); });
  form.addEventListener("submit", function (ev) {
    ev.preventDefault();
    var btn = document.getElementById("appeal-send");
    btn.disabled = true;
    api("POST", "/api/items/" + id + "/appeal", { message: form.message.value })
      .then(function (a) { remember(); form.message.value = ""; ask.open = false; window.showErrors(form, { message: "" }); show(a); })
      .catch(function (e) {
        if (e.code === "appeal_open") { remember(); refresh(); }
        window.showErrors(form, e);
      })
      .then(function () { btn.disabled = false; });
  });
})();
