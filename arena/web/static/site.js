// Flip Flop Arena: the pages' small scripts (no framework, no build step).
// Everything bot-supplied is inserted with textContent, never as HTML.
"use strict";

// JSON of a page's own API, fetched once per URL and shared by the page's scripts (the
// bankroll chart and the replay viewer read the same viewer.json). base.html loads this
// script before any page's own, so they find it. A failed fetch is forgotten, to be retried.
window.ffaFetchJSON = (function () {
  var cache = new Map();
  return function (url) {
    if (!cache.has(url)) {
      var p = fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } })
        .then(function (r) {
          return r.json().catch(function () { return {}; }).then(function (body) {
            if (!r.ok) throw new Error(body.error || "the server answered " + r.status);
            return body;
          });
        });
      cache.set(url, p);
      p.catch(function () { cache.delete(url); });
    }
    return cache.get(url);
  };
})();

(function () {
  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function link(href, text) {
    var a = el("a", null, text);
    a.href = href;
    return a;
  }

  // ------------------------------------------------------------------ live page
  function seatLine(seats, progress) {
    var line = el("div", "seats");
    seats.forEach(function (s) {
      var chip = el("span", "seatchip");
      chip.appendChild(link("/bots/" + encodeURIComponent(s.bot), s.bot));
      var extra = [];
      if (progress && progress.bankrolls) extra.push(progress.bankrolls[s.seat] + " chips");
      if (progress && progress.eliminated && progress.eliminated.indexOf(s.seat) >= 0) extra.push("out");
      if (s.place !== undefined && s.place !== null) extra.push("place " + s.place);
      if (extra.length) chip.appendChild(el("span", "ci", " (" + extra.join(", ") + ")"));
      line.appendChild(chip);
      line.appendChild(document.createTextNode(" "));
    });
    return line;
  }

  function renderLive(root, snap) {
    var running = document.getElementById("live-running");
    var recent = document.getElementById("live-recent");
    var queued = document.getElementById("live-queued");
    if (queued) queued.textContent = String(snap.queued);
    running.replaceChildren();
    if (!snap.running.length) running.appendChild(el("p", "empty", "No match is being played right now."));
    snap.running.forEach(function (m) {
      var card = el("div", "live-match");
      card.dataset.match = m.id;
      var head = el("div", "live-head");
      head.appendChild(el("strong", null, "Match #" + m.id));
      var p = m.progress;
      var where = p && p.hand ? "hand " + p.hand + (p.decisions_this_hand ? ", " + p.decisions_this_hand + " decisions in" : "") : "starting";
      head.appendChild(el("span", "muted", " · " + where));
      card.appendChild(head);
      card.appendChild(seatLine(m.seats, p));
      running.appendChild(card);
    });
    recent.replaceChildren();
    if (!snap.recent.length) recent.appendChild(el("p", "empty", "Nothing finished yet."));
    snap.recent.forEach(function (m) {
      var card = el("div", "live-match done");
      card.dataset.match = m.id;
      var head = el("div", "live-head");
      head.appendChild(link("/matches/" + m.id, "Match #" + m.id));
      if (m.void) head.appendChild(el("span", "tag bad", "void"));
      card.appendChild(head);
      card.appendChild(seatLine(m.seats, null));
      recent.appendChild(card);
    });
  }

  function startLive(root) {
    var state = document.getElementById("live-state");
    try {
      renderLive(root, JSON.parse(root.dataset.snapshot || "{}"));
    } catch (e) {
      /* the first event brings the state */
    }
    if (!window.EventSource) {
      state.textContent = "This browser cannot follow live updates.";
      return;
    }
    var source = new EventSource(root.dataset.src);
    source.addEventListener("open", function () {
      state.textContent = "Live";
    });
    source.addEventListener("error", function () {
      state.textContent = "Reconnecting…";
    });
    source.addEventListener("matches", function (event) {
      renderLive(root, JSON.parse(event.data));
      root.dataset.updates = String(Number(root.dataset.updates || "0") + 1);
      root.dataset.updated = new Date().toISOString();
      state.textContent = "Live · updated " + new Date().toLocaleTimeString();
    });
  }

  // ------------------------------------------------------------------ validation
  function renderSteps(section, data) {
    var list = document.getElementById("steps");
    var base = section.dataset.base;
    list.replaceChildren();
    data.steps.forEach(function (s) {
      var item = el("li", "step outcome-" + (s.outcome || "running"));
      item.dataset.step = s.step;
      item.appendChild(el("strong", null, s.step));
      item.appendChild(document.createTextNode(": "));
      item.appendChild(el("span", "outcome", s.outcome || "running…"));
      if (s.detail) item.appendChild(el("span", "detail", s.detail));
      if (s.log) {
        var a = link(base + "/steps/" + encodeURIComponent(s.step) + "/log", "log");
        a.className = "log";
        item.appendChild(a);
      }
      list.appendChild(item);
    });
    var status = document.getElementById("version-status");
    status.textContent = data.status;
    status.className = "tag status-" + data.status;
    var reason = document.getElementById("validation-reason");
    reason.textContent = data.reason || "";
    reason.hidden = !data.reason;
    document.getElementById("validation-live").hidden = !data.pending;
  }

  function followValidation(section) {
    var url = section.dataset.steps;
    function poll() {
      fetch(url, { credentials: "same-origin", cache: "no-store" })
        .then(function (r) {
          return r.ok ? r.json() : null;
        })
        .then(function (data) {
          if (!data) return;
          renderSteps(section, data);
          if (data.pending) window.setTimeout(poll, 1500);
        })
        .catch(function () {
          window.setTimeout(poll, 5000);
        });
    }
    poll();
  }

  document.addEventListener("DOMContentLoaded", function () {
    var live = document.getElementById("live");
    if (live) startLive(live);
    var validation = document.getElementById("validation");
    if (validation && validation.dataset.steps) followValidation(validation);
  });
})();
