// Cards, hand totals and spreads: the rules a bot needs to plan a turn.
//
// Rule ids (R-...) refer to RULES.md in the arena's repository, so you can look each one up.
//
// A card is a number 0..51 (proto/flipflop/v1/bot.proto):
//   index = suit * 13 + (rank - 1)
//   suits: 0 = clubs, 1 = diamonds, 2 = hearts, 3 = spades
//   ranks: 1 = ace (always low), 2..10, 11 = jack, 12 = queen, 13 = king
// So 0 is the ace of clubs (beware: 0 is also "not set" in JavaScript tests like `if (card)`),
// 12 the king of clubs and 51 the king of spades.
'use strict';

const SUITS = ['c', 'd', 'h', 's'];
const RANKS = ['A', '2', '3', '4', '5', '6', '7', '8', '9', '10', 'J', 'Q', 'K'];

/** The suit of a card: 0 clubs, 1 diamonds, 2 hearts, 3 spades. */
function suit(card) {
  return Math.floor(card / 13);
}

/** The rank of a card: 1 (ace) .. 13 (king). */
function rank(card) {
  return (card % 13) + 1;
}

/** A card's value (R-VALUE): ace 1, 2-10 face value, jack/queen/king 10. */
function value(card) {
  return Math.min(rank(card), 10);
}

/** The card with this suit and rank. */
function card(suitIndex, rankNumber) {
  return suitIndex * 13 + rankNumber - 1;
}

/** A card as text, for logs and debug notes: "Ac", "10h", "Ks". */
function name(c) {
  return RANKS[rank(c) - 1] + SUITS[suit(c)];
}

/** A hand's total (R-VALUE): the sum of its cards' values. */
function total(cards) {
  return cards.reduce((sum, c) => sum + value(c), 0);
}

/**
 * Every spread that can be made from `cards` (R-RUN, R-SET), each a sorted array of cards:
 * - a set: three or four cards of one rank (every 3-card choice, and all four);
 * - a run: three or more consecutive ranks of one suit, aces low (A-2-3 is a run, Q-K-A is not).
 */
function spreadsIn(cards) {
  const out = [];
  // Sets (R-SET).
  for (let r = 1; r <= 13; r++) {
    const same = cards.filter((c) => rank(c) === r).sort((a, b) => a - b);
    if (same.length === 4) {
      // Four of a rank: each set of three (leaving one card out), and all four below.
      for (let skip = 0; skip < 4; skip++) out.push(same.filter((_, i) => i !== skip));
    }
    if (same.length >= 3) out.push(same);
  }
  // Runs (R-RUN): every stretch of 3 or more consecutive ranks held in one suit.
  for (let s = 0; s < 4; s++) {
    const held = new Set(cards.filter((c) => suit(c) === s));
    for (let low = 1; low <= 11; low++) {
      const run = [];
      for (let r = low; r <= 13 && held.has(card(s, r)); r++) {
        run.push(card(s, r));
        if (run.length >= 3) out.push(run.slice());
      }
    }
  }
  return out;
}

/**
 * The disjoint spreads to meld from `cards` that leave the lowest total (ties: fewer cards
 * melded). A hand holds at most six cards after drawing, so trying every combination is cheap.
 * Returns { melds: [[card, ...], ...], left: [card, ...] }.
 */
function bestMelds(cards) {
  const options = spreadsIn(cards);
  let best = { melds: [], left: cards.slice(), total: total(cards) };
  function walk(start, left, chosen) {
    const t = total(left);
    const melded = cards.length - left.length;
    const bestMelded = cards.length - best.left.length;
    if (t < best.total || (t === best.total && melded < bestMelded)) {
      best = { melds: chosen.slice(), left: left.slice(), total: t };
    }
    for (let i = start; i < options.length; i++) {
      const spread = options[i];
      if (spread.every((c) => left.includes(c))) {
        chosen.push(spread);
        walk(i + 1, left.filter((c) => !spread.includes(c)), chosen);
        chosen.pop();
      }
    }
  }
  walk(0, cards.slice(), []);
  return { melds: best.melds, left: best.left };
}

/**
 * Can `c` be laid off on `spread` (R-LAYOFF)? `spread` is { kind, cards } as in the
 * Observation: kind 'SPREAD_KIND_RUN' or 'SPREAD_KIND_SET'.
 * - a run grows at either end, in its suit (never past the ace or the king);
 * - a set of three becomes four (a set of four is full).
 */
function canLayOff(c, spread) {
  const cards = spread.cards;
  if (spread.kind === 'SPREAD_KIND_SET') {
    return cards.length === 3 && rank(c) === rank(cards[0]);
  }
  if (spread.kind === 'SPREAD_KIND_RUN') {
    if (suit(c) !== suit(cards[0])) return false;
    const ranks = cards.map(rank);
    const low = Math.min(...ranks);
    const high = Math.max(...ranks);
    return rank(c) === low - 1 || rank(c) === high + 1;
  }
  return false;
}

module.exports = { suit, rank, value, card, name, total, spreadsIn, bestMelds, canLayOff };
