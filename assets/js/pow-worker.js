// The proof of work's solver (ALTCHA's SHA-256 challenge), run in a Web Worker so the page stays
// responsive: it finds the number n, from 0 to max, whose SHA-256 of salt + n (in decimal) is the
// challenge. A synchronous SHA-256 on 32-bit words is far quicker than a crypto.subtle.digest per try
// (each a promise and a copy); the salt's whole 64-byte blocks are hashed once, and each try hashes only
// the tail. Message in: {challenge, salt, max}; out: {number, took} (number null when none was found).
(function () {
  "use strict";
  var K = new Int32Array([
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2]);
  var W = new Int32Array(64);

  // block hashes the 16 big-endian words at words[off..] into the state h (8 words).
  function block(h, words, off) {
    var i, a, b, c, d, e, f, g, hh, t1, t2, x, y;
    for (i = 0; i < 16; i++) W[i] = words[off + i];
    for (i = 16; i < 64; i++) {
      x = W[i - 15]; y = W[i - 2];
      W[i] = (((x >>> 7) | (x << 25)) ^ ((x >>> 18) | (x << 14)) ^ (x >>> 3)) + W[i - 7] +
        (((y >>> 17) | (y << 15)) ^ ((y >>> 19) | (y << 13)) ^ (y >>> 10)) + W[i - 16] | 0;
    }
    a = h[0]; b = h[1]; c = h[2]; d = h[3]; e = h[4]; f = h[5]; g = h[6]; hh = h[7];
    for (i = 0; i < 64; i++) {
      t1 = hh + (((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7))) + ((e & f) ^ (~e & g)) + K[i] + W[i] | 0;
      t2 = (((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10))) + ((a & b) ^ (a & c) ^ (b & c)) | 0;
      hh = g; g = f; f = e; e = d + t1 | 0; d = c; c = b; b = a; a = t1 + t2 | 0;
    }
    h[0] = h[0] + a | 0; h[1] = h[1] + b | 0; h[2] = h[2] + c | 0; h[3] = h[3] + d | 0;
    h[4] = h[4] + e | 0; h[5] = h[5] + f | 0; h[6] = h[6] + g | 0; h[7] = h[7] + hh | 0;
  }

  var INIT = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19];

  function utf8(s) { return new TextEncoder().encode(s); }

  function solve(challenge, salt, max) {
    var want = new Int32Array(8), i;
    for (i = 0; i < 8; i++) want[i] = parseInt(challenge.substr(i * 8, 8), 16) | 0;
    var bytes = utf8(salt);
    var whole = bytes.length - bytes.length % 64; // the salt's whole blocks: hashed once
    var mid = new Int32Array(INIT), words = new Int32Array(16), j;
    for (i = 0; i < whole; i += 64) {
      for (j = 0; j < 16; j++) words[j] = bytes[i + 4 * j] << 24 | bytes[i + 4 * j + 1] << 16 | bytes[i + 4 * j + 2] << 8 | bytes[i + 4 * j + 3];
      block(mid, words, 0);
    }
    var rest = bytes.subarray(whole);
    var tail = new Uint8Array(128), tw = new Int32Array(32), h = new Int32Array(8);
    tail.set(rest);
    var digits = new Uint8Array(20);
    for (var n = 0; n <= max; n++) {
      // n in decimal after the salt's rest, then the padding and the length in bits.
      var len = 0, m = n;
      do { digits[len++] = 48 + m % 10; m = (m / 10) | 0; } while (m > 0);
      var p = rest.length;
      for (i = len - 1; i >= 0; i--) tail[p++] = digits[i];
      var total = whole + p, end = p + 9 <= 64 ? 64 : 128;
      tail[p++] = 0x80;
      while (p < end - 4) tail[p++] = 0;
      var bits = total * 8;
      tail[end - 4] = bits >>> 24; tail[end - 3] = bits >>> 16; tail[end - 2] = bits >>> 8; tail[end - 1] = bits;
      for (j = 0; j < end / 4; j++) tw[j] = tail[4 * j] << 24 | tail[4 * j + 1] << 16 | tail[4 * j + 2] << 8 | tail[4 * j + 3];
      h.set(mid);
      block(h, tw, 0);
      if (end === 128) block(h, tw, 16);
      if (h[0] === want[0] && h[1] === want[1] && h[2] === want[2] && h[3] === want[3] &&
          h[4] === want[4] && h[5] === want[5] && h[6] === want[6] && h[7] === want[7]) return n;
    }
    return null;
  }

  self.onmessage = function (ev) {
    var t0 = Date.now();
    var n = solve(String(ev.data.challenge), String(ev.data.salt), +ev.data.max);
    self.postMessage({ number: n, took: Date.now() - t0 });
  };
})();
