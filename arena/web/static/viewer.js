/* The replay viewer (#viewer, templates/_viewer.html): steps through a match's hands.
 * Reads data-base, fetches `${base}/viewer.json` (the timeline) and `${base}/hands/${h}.json`
 * (the frames of hand h) lazily, each once. Text written by bots goes in with textContent.
 * Plain ES2017, no framework; does nothing on a page without #viewer. */
(function () {
  'use strict';

  var SUITS = { c: ['♣', 'clubs'], d: ['♦', 'diamonds'], h: ['♥', 'hearts'], s: ['♠', 'spades'] };
  var RANKS = { A: 'ace', T: '10', J: 'jack', Q: 'queen', K: 'king' };

  var fetchJSON = window.ffaFetchJSON; // site.js

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function card(code) {
    var rank = code.charAt(0) === 'T' ? '10' : code.charAt(0);
    var suit = SUITS[code.charAt(1)] || ['?', 'unknown'];
    var c = el('span', 'card' + (code.charAt(1) === 'd' || code.charAt(1) === 'h' ? ' red' : ''));
    c.dataset.card = code;
    c.setAttribute('role', 'img');
    c.setAttribute('aria-label', (RANKS[code.charAt(0)] || rank) + ' of ' + suit[1]);
    c.appendChild(el('span', 'rank', rank));
    c.appendChild(el('span', 'suit', suit[0]));
    return c;
  }

  function fill(box, children) {
    while (box.firstChild) box.removeChild(box.firstChild);
    children.forEach(function (ch) { box.appendChild(ch); });
  }

  function Viewer(root) {
    this.root = root;
    this.base = root.dataset.base;
    this.hands = new Map();
    this.timeline = null;
    this.hand = 1;
    this.step = 0;
    this.wanted = 0;
    this.$ = function (id) { return document.getElementById(id); };
  }

  Viewer.prototype.start = function () {
    var v = this;
    [['v-first', function () { v.go(1, 0); }],
     ['v-prev-hand', function () { v.go(v.hand - 1, 0); }],
     ['v-prev', function () { v.prev(); }],
     ['v-next', function () { v.next(); }],
     ['v-next-hand', function () { v.go(v.hand + 1, 0); }],
     ['v-last', function () { v.go(v.count(), -1); }],
     ['v-fork-copy', function () { v.copyFork(); }]].forEach(function (b) {
      var btn = v.$(b[0]);
      if (btn) btn.addEventListener('click', b[1]);
    });
    document.addEventListener('keydown', function (e) { v.key(e); });
    fetchJSON(this.base + '/viewer.json').then(function (t) {
      v.timeline = t;
      v.seats();
      if (!v.count()) {
        v.$('v-position').textContent = 'No finished hand to show';
        v.buttons();
        return;
      }
      v.go(1, 0);
    }, function (err) { v.error(err); });
  };

  Viewer.prototype.count = function () {
    return this.timeline ? this.timeline.hands.length : 0;
  };

  Viewer.prototype.steps = function (h) {
    return this.timeline.hands[h - 1].steps;
  };

  Viewer.prototype.load = function (h) {
    return fetchJSON(this.base + '/hands/' + h + '.json');
  };

  Viewer.prototype.next = function () {
    if (!this.timeline) return;
    if (this.step < this.steps(this.hand)) this.go(this.hand, this.step + 1);
    else this.go(this.hand + 1, 0);
  };

  Viewer.prototype.prev = function () {
    if (!this.timeline) return;
    if (this.step > 0) this.go(this.hand, this.step - 1);
    else this.go(this.hand - 1, -1);
  };

  /* Show hand h at step s (-1: its last frame); out-of-range hands are ignored. */
  Viewer.prototype.go = function (h, s) {
    var v = this;
    if (!this.timeline || h < 1 || h > this.count()) return;
    var steps = this.steps(h);
    var step = s < 0 || s > steps ? steps : s;
    var ticket = ++this.wanted;
    this.load(h).then(function (data) {
      if (ticket !== v.wanted) return; // a later request won
      v.hand = h;
      v.step = step;
      v.render(data, data.frames[Math.min(step, data.frames.length - 1)]);
      if (h < v.count() && step === steps) v.load(h + 1).catch(function () {});
    }, function (err) { if (ticket === v.wanted) v.error(err); });
  };

  Viewer.prototype.key = function (e) {
    if (e.altKey || e.ctrlKey || e.metaKey) return;
    var t = e.target;
    var here = t === document.body || t === document.documentElement || this.root.contains(t);
    if (!here || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName) || t.isContentEditable) return;
    var acts = {
      ArrowRight: this.next, ArrowLeft: this.prev,
      PageDown: function () { this.go(this.hand + 1, 0); },
      PageUp: function () { this.go(this.hand - 1, 0); },
      Home: function () { this.go(1, 0); },
      End: function () { this.go(this.count(), -1); },
    };
    if (!acts[e.key]) return;
    e.preventDefault();
    acts[e.key].call(this);
  };

  Viewer.prototype.seats = function () {
    var box = this.$('v-seats');
    var names = this.timeline.players;
    fill(box, names.map(function (name, i) {
      var seat = el('div', 'v-seat');
      seat.dataset.seat = String(i);
      var head = el('div', 'v-head');
      head.appendChild(el('span', 'v-name', name));
      head.appendChild(el('span', 'v-badge'));
      head.appendChild(el('span', 'v-bankroll'));
      seat.appendChild(head);
      seat.appendChild(el('div', 'v-hand v-cards'));
      seat.appendChild(el('div', 'v-total'));
      return seat;
    }));
  };

  Viewer.prototype.name = function (seat) {
    return this.timeline.players[seat] || 'seat ' + seat;
  };

  Viewer.prototype.render = function (data, f) {
    var v = this;
    var root = this.root;
    this.$('v-error').hidden = true;
    root.dataset.hand = String(data.hand);
    root.dataset.step = String(this.step);
    this.$('v-position').textContent =
      'Hand ' + data.hand + ' · step ' + this.step + ' / ' + (data.frames.length - 1);
    Array.prototype.forEach.call(root.querySelectorAll('.v-seat'), function (seat) {
      var i = Number(seat.dataset.seat);
      var out = !f.active[i];
      seat.classList.toggle('v-out', out);
      seat.classList.toggle('v-to-act', f.to_act === i);
      seat.classList.toggle('v-dealer', data.dealer === i);
      if (f.to_act === i) seat.setAttribute('aria-current', 'true');
      else seat.removeAttribute('aria-current');
      seat.querySelector('.v-badge').textContent =
        (data.dealer === i ? 'dealer' : '') + (f.to_act === i ? (data.dealer === i ? ', ' : '') + 'to act' : '');
      seat.querySelector('.v-bankroll').textContent = f.bankrolls[i] + ' chips';
      fill(seat.querySelector('.v-hand'), f.hands[i].map(card));
      seat.querySelector('.v-total').textContent = out ? 'not dealt in' : 'total ' + f.totals[i];
    });
    fill(this.$('v-flip'), [card(data.flip_card)]);
    this.$('v-stock').textContent = f.stock + (f.stock === 1 ? ' card' : ' cards');
    fill(this.$('v-discard'), f.discard.length ? f.discard.map(card) : [el('span', 'v-empty', 'empty')]);
    fill(this.$('v-spreads'), f.spreads.length ? f.spreads.map(function (cards, k) {
      var s = el('div', 'v-spread v-cards');
      s.dataset.spread = String(k);
      cards.forEach(function (c) { s.appendChild(card(c)); });
      return s;
    }) : [el('span', 'v-empty', 'none')]);
    fill(this.$('v-pots'), ['game', 'flip', 'flop'].map(function (p) {
      var d = el('span', 'v-pot');
      d.dataset.pot = p;
      d.textContent = p + ' ' + f.pots[p];
      return d;
    }));
    fill(this.$('v-shows'), f.shows.map(function (s) {
      var li = el('li', null, v.name(s.seat) + ' shows ');
      li.appendChild(card(s.card));
      li.appendChild(document.createTextNode(' for the ' + s.pot + ' pot'));
      return li;
    }));
    var a = f.action;
    var act = this.$('v-action');
    fill(act, []);
    if (a) {
      act.appendChild(document.createTextNode(a.text));
      if (a.fault) act.appendChild(el('span', 'v-fault', ' (fault: ' + a.fault + ')'));
    } else {
      act.textContent = 'Hand ' + data.hand + ' dealt by ' + this.name(data.dealer) + '.';
    }
    var note = this.$('v-note');
    note.textContent = a && a.note ? 'Note: ' + a.note : '';
    note.hidden = !(a && a.note);
    var lines = this.$('v-settlement');
    fill(lines, (f.settlement || []).map(function (line) { return el('li', null, line); }));
    lines.hidden = !f.settlement;
    this.fork(data, f);
    this.buttons();
  };

  /* At a decision of a seat the viewer owns: the commands that ask about it and fork there. */
  Viewer.prototype.fork = function (data, f) {
    var box = this.$('v-fork');
    if (!box) return;
    var own = (this.root.dataset.ownSeats || '').split(',').filter(Boolean).map(Number);
    var seat = f.to_act;
    if (!f.decides || seat === null || seat === undefined || own.indexOf(seat) < 0) {
      box.hidden = true;
      return;
    }
    var match = this.root.dataset.match;
    var file = 'm' + match + '.jsonl';
    var bot = './' + this.name(seat).replace(/-v\d+$/, '').replace(/[^A-Za-z0-9_.-]/g, '_');
    var at = data.hand + '.' + this.step;
    this.$('v-fork-command').textContent =
      'arena league replay ' + match + ' -o ' + file + '\n' +
      'arena replay ' + file + ' --at ' + at + ' --seat ' + seat + ' --bot ' + bot + '\n' +
      'arena fork ' + file + ' --at ' + at + ' --seat ' + seat + ' --bot ' + bot;
    this.$('v-fork-copied').textContent = '';
    box.hidden = false;
  };

  /* Select the commands at once (the answer a user always gets), then try the clipboard:
     its promise may never settle (a permission prompt nobody answers), so it only upgrades
     the answer to "Copied." */
  Viewer.prototype.copyFork = function () {
    var node = this.$('v-fork-command');
    var said = this.$('v-fork-copied');
    var range = document.createRange();
    range.selectNodeContents(node);
    var selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
    said.textContent = 'Selected: copy it.';
    var done = function () { said.textContent = 'Copied.'; };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(node.textContent).then(done, function () {});
    } else if (document.execCommand && document.execCommand('copy')) {
      done();
    }
  };

  Viewer.prototype.buttons = function () {
    var n = this.count();
    var atStart = !n || (this.hand === 1 && this.step === 0);
    var atEnd = !n || (this.hand === n && this.step === this.steps(n));
    var v = this;
    [['v-first', atStart], ['v-prev-hand', !n || this.hand === 1], ['v-prev', atStart],
     ['v-next', atEnd], ['v-next-hand', !n || this.hand === n], ['v-last', atEnd]]
      .forEach(function (b) { var btn = v.$(b[0]); if (btn) btn.disabled = b[1]; });
  };

  Viewer.prototype.error = function (err) {
    var box = this.$('v-error');
    box.textContent = 'The replay could not be loaded: ' + (err && err.message ? err.message : err);
    box.hidden = false;
  };

  function boot() {
    var root = document.getElementById('viewer');
    if (root && root.dataset.base) new Viewer(root).start();
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', boot);
  else boot();
})();
