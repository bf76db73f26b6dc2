// The proof of work a registration and a join carry (ALTCHA's challenge, GET /api/altcha): solved in a
// Web Worker (pow-worker.js) from the moment the form shows, while the person types the captcha. A page
// makes one window.Pow per form and asks take() for the altcha field at the send; a solution is good for
// one send, so the page calls start() again after an answer that used it.
(function () {
  "use strict";
  var script = document.currentScript;
  var workerURL = script && script.dataset.worker;
  var fresh = 4 * 60 * 1000; // a challenge lives 5 minutes: one older than 4 is solved again before a send

  function Pow(query) {
    this.query = query;
    this.promise = null;
    this.worker = null;
    this.at = 0;
    this.took = null; // how long the last solve took, in ms
    this.state = "idle"; // idle, solving, ready or failed
  }

  // start fetches a new challenge and solves it, dropping any solve under way.
  Pow.prototype.start = function () {
    var self = this;
    if (self.worker) { self.worker.terminate(); self.worker = null; }
    self.at = Date.now();
    self.state = "solving";
    var p = self.promise = api("GET", "/api/altcha?" + self.query).then(function (c) {
      return new Promise(function (resolve, reject) {
        if (self.promise !== p) { reject(new Error("replaced")); return; }
        var worker = self.worker = new Worker(workerURL);
        worker.onmessage = function (ev) {
          worker.terminate();
          if (self.worker === worker) self.worker = null;
          if (ev.data.number == null) { reject(new Error("no solution")); return; }
          self.took = ev.data.took;
          self.state = "ready";
          resolve(btoa(JSON.stringify({ algorithm: c.algorithm, challenge: c.challenge, number: ev.data.number,
            salt: c.salt, signature: c.signature })));
        };
        worker.onerror = function (e) { e.preventDefault(); reject(new Error("the solver failed")); };
        worker.postMessage({ challenge: c.challenge, salt: c.salt, max: c.maxnumber });
      });
    });
    p.catch(function () { if (self.promise === p) self.state = "failed"; });
    return p;
  };

  // ensure starts a solve unless one is under way or done and still fresh.
  Pow.prototype.ensure = function () {
    if (!this.promise || this.state === "failed" || Date.now() - this.at > fresh) this.start();
  };

  // take answers the altcha field for a send: the solve under way or done (started again when it is
  // stale or failed).
  Pow.prototype.take = function () {
    var self = this;
    self.ensure();
    return self.promise.catch(function () { return self.start(); });
  };

  // used forgets a solution a send took: the next ensure or take solves a new challenge.
  Pow.prototype.used = function () {
    if (this.worker) { this.worker.terminate(); this.worker = null; }
    this.promise = null; this.state = "idle";
  };

  // ready reports whether a fresh solution is at hand now (else the page says it is waiting for it).
  Pow.prototype.ready = function () { return this.state === "ready" && Date.now() - this.at <= fresh; };

  window.Pow = Pow;
})();
