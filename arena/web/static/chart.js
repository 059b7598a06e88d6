/* Charts as inline SVG (createElementNS), no library:
 * - #bankroll-chart[data-src] (a match's viewer.json): one line per seat, hand on x;
 * - #rating-chart[data-src] (/bots/NAME/rating.json): mu with a ±1.96σ band, version
 *   boundaries marked.
 * Names come from the JSON and go in with textContent. Does nothing where a chart is absent. */
(function () {
  'use strict';

  var NS = 'http://www.w3.org/2000/svg';
  var W = 640, H = 260, L = 56, R = 12, T = 12, B = 30;
  // Okabe-Ito colours (told apart with colour blindness), and a dash pattern per seat too.
  var COLOURS = ['#0072b2', '#d55e00', '#009e73', '#cc79a7', '#e69f00'];
  var DASHES = ['', '6 3', '2 3', '8 3 2 3', '1 2'];

  var fetchJSON = window.ffaFetchJSON; // site.js

  function svg(tag, attrs, text) {
    var e = document.createElementNS(NS, tag);
    Object.keys(attrs || {}).forEach(function (k) { e.setAttribute(k, String(attrs[k])); });
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function note(box, text) {
    var p = document.createElement('p');
    p.className = 'chart-note';
    p.textContent = text;
    box.appendChild(p);
  }

  /* A frame with axes for x in [x0, x1], y in [y0, y1]; returns the scales and the <svg>. */
  function frame(label, x0, x1, y0, y1, xlabel) {
    if (y1 === y0) { y0 -= 1; y1 += 1; }
    if (x1 === x0) x1 = x0 + 1;
    var sx = function (x) { return L + (x - x0) * (W - L - R) / (x1 - x0); };
    var sy = function (y) { return H - B - (y - y0) * (H - T - B) / (y1 - y0); };
    var root = svg('svg', { viewBox: '0 0 ' + W + ' ' + H, role: 'img', class: 'chart',
      width: '100%', preserveAspectRatio: 'xMidYMid meet' });
    root.style.maxWidth = '46rem'; // CSSOM, allowed by a CSP without 'unsafe-inline'
    root.appendChild(svg('title', {}, label));
    var axis = { stroke: '#888', 'stroke-width': 1 };
    root.appendChild(svg('line', Object.assign({ x1: L, y1: T, x2: L, y2: H - B }, axis)));
    root.appendChild(svg('line', Object.assign({ x1: L, y1: H - B, x2: W - R, y2: H - B }, axis)));
    var txt = { 'font-size': 13, fill: '#444' };
    [y0, (y0 + y1) / 2, y1].forEach(function (y) {
      root.appendChild(svg('line', { x1: L, y1: sy(y), x2: W - R, y2: sy(y), stroke: '#ddd' }));
      root.appendChild(svg('text', Object.assign({ x: L - 4, y: sy(y) + 4, 'text-anchor': 'end' }, txt),
        String(y1 - y0 >= 10 ? Math.round(y) : Math.round(y * 10) / 10)));
    });
    root.appendChild(svg('text', Object.assign({ x: sx(x0), y: H - 10, 'text-anchor': 'start' }, txt), String(x0)));
    root.appendChild(svg('text', Object.assign({ x: sx(x1), y: H - 10, 'text-anchor': 'end' }, txt), String(x1)));
    root.appendChild(svg('text', Object.assign({ x: (L + W - R) / 2, y: H - 10, 'text-anchor': 'middle' }, txt), xlabel));
    return { root: root, sx: sx, sy: sy };
  }

  function path(points) {
    return points.map(function (p, i) { return (i ? 'L' : 'M') + p[0].toFixed(1) + ' ' + p[1].toFixed(1); }).join(' ');
  }

  function legend(names) {
    var ul = document.createElement('ul');
    ul.className = 'chart-legend';
    names.forEach(function (name, i) {
      var li = document.createElement('li');
      var key = svg('svg', { width: 24, height: 10, 'aria-hidden': 'true' });
      key.appendChild(svg('line', { x1: 0, y1: 5, x2: 24, y2: 5, stroke: COLOURS[i % 5],
        'stroke-width': 3, 'stroke-dasharray': DASHES[i % 5] }));
      li.appendChild(key);
      li.appendChild(document.createTextNode(' ' + name));
      ul.appendChild(li);
    });
    return ul;
  }

  function bankrolls(box, t) {
    var hands = t.hands || [];
    if (!hands.length) { note(box, 'No finished hand yet.'); return; }
    // x = 0 is the start of the match; x = h the bankrolls after hand h.
    var series = t.players.map(function (_, s) {
      return [[0, hands[0].bankrolls_before[s]]].concat(hands.map(function (h) { return [h.hand, h.bankrolls_after[s]]; }));
    });
    var ys = [].concat.apply([], series.map(function (pts) { return pts.map(function (p) { return p[1]; }); }));
    var f = frame('Bankrolls by hand', 0, hands[hands.length - 1].hand, Math.min.apply(null, ys), Math.max.apply(null, ys), 'hand');
    series.forEach(function (pts, s) {
      var line = svg('path', { d: path(pts.map(function (p) { return [f.sx(p[0]), f.sy(p[1])]; })),
        fill: 'none', stroke: COLOURS[s % 5], 'stroke-width': 2, 'stroke-dasharray': DASHES[s % 5],
        'stroke-linejoin': 'round', 'data-seat': s });
      line.appendChild(svg('title', {}, t.players[s] + ': ' + pts[pts.length - 1][1] + ' chips'));
      f.root.appendChild(line);
    });
    box.appendChild(f.root);
    box.appendChild(legend(t.players));
  }

  function rating(box, data) {
    var pts = data.points || [];
    if (!pts.length) { note(box, 'No rated match yet.'); return; }
    var lo = pts.map(function (p) { return p.mu - 1.96 * p.sigma; });
    var hi = pts.map(function (p) { return p.mu + 1.96 * p.sigma; });
    var n = pts.length;
    var f = frame('Rating (mu, with a 95% band of ±1.96 sigma) by rated match', 1, Math.max(n, 2),
      Math.min.apply(null, lo), Math.max.apply(null, hi), 'rated match');
    var x = function (i) { return f.sx(i + 1); };
    var band = pts.map(function (p, i) { return [x(i), f.sy(hi[i])]; })
      .concat(pts.map(function (p, i) { return [x(n - 1 - i), f.sy(lo[n - 1 - i])]; }));
    f.root.appendChild(svg('path', { d: path(band) + ' Z', fill: COLOURS[0], 'fill-opacity': 0.15, stroke: 'none', class: 'chart-band' }));
    pts.forEach(function (p, i) {
      if (i && p.version !== pts[i - 1].version) {
        var bx = (x(i - 1) + x(i)) / 2;
        f.root.appendChild(svg('line', { x1: bx, y1: T, x2: bx, y2: H - B, stroke: '#555', 'stroke-dasharray': '4 3', class: 'chart-version' }));
        f.root.appendChild(svg('text', { x: bx + 3, y: T + 10, 'font-size': 13, fill: '#333' }, 'v' + p.version));
      }
    });
    f.root.appendChild(svg('path', { d: path(pts.map(function (p, i) { return [x(i), f.sy(p.mu)]; })),
      fill: 'none', stroke: COLOURS[0], 'stroke-width': 2, class: 'chart-mu' }));
    pts.forEach(function (p, i) {
      var dot = svg('circle', { cx: x(i), cy: f.sy(p.mu), r: 2.5, fill: COLOURS[0] });
      dot.appendChild(svg('title', {}, 'match ' + p.match + ', version ' + p.version + ': mu ' +
        p.mu.toFixed(2) + ' ± ' + (1.96 * p.sigma).toFixed(2) + (p.finished ? ' (' + p.finished + ')' : '')));
      f.root.appendChild(dot);
    });
    box.appendChild(f.root);
    note(box, 'Line: mu; band: mu ± 1.96 sigma; dashed lines: a new version.');
  }

  function draw(id, render) {
    var box = document.getElementById(id);
    if (!box || !box.dataset.src) return;
    fetchJSON(box.dataset.src).then(function (data) { render(box, data); }, function (err) {
      note(box, 'The chart could not be loaded: ' + (err && err.message ? err.message : err));
    });
  }

  function boot() {
    draw('bankroll-chart', bankrolls);
    draw('rating-chart', rating);
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', boot);
  else boot();
})();
