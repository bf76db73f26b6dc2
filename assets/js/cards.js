// On a phone a console's table is drawn as cards (site.css): each cell is labelled with its column's
// header here, so that every figure keeps its name and every action (Block, Ship, Open) stays on screen.
(function () {
  "use strict";
  function label(table) {
    if (!table.tHead || table.querySelector("tbody th")) return; // a table of rows by name stays a table
    var heads = [];
    table.tHead.querySelectorAll("th").forEach(function (th) {
      for (var i = 0; i < (th.colSpan || 1); i++) heads.push(th.textContent.trim());
    });
    table.classList.add("cards");
    Array.prototype.forEach.call(table.tBodies, function (body) {
      Array.prototype.forEach.call(body.rows, function (tr) {
        var col = 0;
        Array.prototype.forEach.call(tr.cells, function (td) {
          if (td.colSpan === 1 && heads[col] && td.dataset.label !== heads[col]) td.dataset.label = heads[col];
          col += td.colSpan || 1;
        });
      });
    });
  }
  function all() { document.querySelectorAll("main table.grid").forEach(label); }
  all();
  // Rows a page's script adds later (a search's answer) are labelled as they come.
  var main = document.querySelector("main"), pending = false;
  if (main && window.MutationObserver) {
    new MutationObserver(function () {
      if (pending) return;
      pending = true;
      setTimeout(function () { pending = false; all(); }, 50);
    }).observe(main, { childList: true, subtree: true });
  }
})();
