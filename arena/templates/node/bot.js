// __BOT_NAME__: a Game, Flip, Flop bot in Node.js. Start here and make it smarter.
//
//   Install:          npm ci
//   Run it locally:   node bot.js --listen unix:/tmp/__BOT_NAME__.sock
//   Check it:         arena check .
//   Play it:          arena run . random greedy counter
//
// The arena asks for two decisions per turn (proto/flipflop/v1/bot.proto, DecideRequest):
//
//   PHASE_START  answer ONE action: drop (R-DROP), or draw from the stock or the discard pile
//                (R-DRAW);
//   PHASE_PLAY   answer the REST of the turn as a list of steps, in order: melds (R-MELD) and
//                lay-offs (R-LAYOFF), then exactly one discard (R-DISCARD), or no discard when
//                the hand is empty by then (going out, R-END-OUT).
//
// `legal` lists every legal answer in PHASE_START, and only the legal FIRST steps in
// PHASE_PLAY: the arena checks each later step as it applies it, so the plan must follow the
// rules by itself. An illegal answer is a fault: three faults and the bot forfeits the match.
// The rules that matter when planning a turn (see RULES.md and docs/rules.md):
//
// - R-DRAW: a card taken from the discard pile may not be discarded in the same turn.
// - R-NO-STRAND: a meld or lay-off is allowed only if, afterwards, the hand is empty or still
//   holds a card that may be discarded. (Take 9h from the pile holding 4c 5c 6c: melding the
//   run would leave only 9h, which cannot be discarded, so that meld is refused.)
// - Lay-off targets number the spreads of obs.spreads (0, 1, ...); a spread melded earlier in
//   the same answer takes the next number (obs.spreads.length, then +1, ...).
'use strict';

const { serve } = require('./server');
const { value, name, total, bestMelds, canLayOff } = require('./cards');

/** Drop when the hand totals this much or less (the lowest total wins a drop, R-END-DROP). */
const DROP_AT = 5;

// Actions as the arena expects them (message Action): a kind, the cards, a lay-off target.
const DROP = { kind: 'ACTION_KIND_DROP', cards: [], target: 0 };
const DRAW_STOCK = { kind: 'ACTION_KIND_DRAW_STOCK', cards: [], target: 0 };
const DRAW_DISCARD = { kind: 'ACTION_KIND_DRAW_DISCARD', cards: [], target: 0 };
const meld = (cards) => ({ kind: 'ACTION_KIND_MELD', cards: cards.slice().sort((a, b) => a - b), target: 0 });
const layOff = (card, target) => ({ kind: 'ACTION_KIND_LAY_OFF', cards: [card], target });
const discard = (card) => ({ kind: 'ACTION_KIND_DISCARD', cards: [card], target: 0 });

/** Is `action` one of `legal` (same kind, cards and, for a lay-off, target)? */
function isLegal(action, legal) {
  return legal.some(
    (a) =>
      a.kind === action.kind &&
      a.cards.length === action.cards.length &&
      a.cards.every((c, i) => c === action.cards[i]) &&
      (a.kind !== 'ACTION_KIND_LAY_OFF' || a.target === action.target),
  );
}

/** The highest card of `cards` (ties: the higher card number), or undefined for none. */
function highest(cards) {
  let best;
  for (const c of cards) {
    if (best === undefined || value(c) > value(best) || (value(c) === value(best) && c > best)) best = c;
  }
  return best;
}

class __BOT_CLASS__ {
  constructor() {
    this.name = '__BOT_NAME__';
    this.version = '0.1.0';
  }

  /** A match starts (info: StartMatchRequest: match_id, seat, players, config, ...). */
  startMatch(info) {
    this.seat = info.seat;
  }

  /** PHASE_START: drop with a low hand; take the discard when it completes a spread. */
  startTurn(obs, legal) {
    const hand = obs.hand;
    if (total(hand) <= DROP_AT && isLegal(DROP, legal)) {
      return [DROP, `drop with ${total(hand)}`];
    }
    if (isLegal(DRAW_DISCARD, legal)) {
      const top = obs.discard_pile[obs.discard_pile.length - 1];
      // Worth taking if the best melds of the hand with it use it: it completes a spread.
      const { melds } = bestMelds([...hand, top]);
      if (melds.some((m) => m.includes(top))) return [DRAW_DISCARD, `take ${name(top)}: it melds`];
    }
    return DRAW_STOCK;
  }

  /** PHASE_PLAY: meld, lay off, then discard the highest card allowed. */
  playTurn(obs, legal) {
    // The card just taken from the discard pile, if any (R-DRAW: not to be discarded now).
    // A proto3 `optional` field: absent when not set. Card 0 is the ace of clubs, so never
    // test it with `if (obs.drawn_from_discard)`.
    const kept = obs.drawn_from_discard;
    let hand = obs.hand.slice();
    // A working copy of the table: melds we make join it, and lay-offs grow its spreads.
    const table = obs.spreads.map((s) => ({ kind: s.kind, cards: s.cards.slice() }));
    const steps = [];

    // R-NO-STRAND: after a meld or lay-off the hand must be empty or hold a discardable card.
    const leavesADiscard = (rest) => rest.length === 0 || rest.some((c) => c !== kept);

    // 1. Meld the spreads that leave the lowest total.
    for (const spread of bestMelds(hand).melds) {
      const rest = hand.filter((c) => !spread.includes(c));
      if (!leavesADiscard(rest)) continue;
      steps.push(meld(spread));
      // Its kind, for lay-offs on it later in this turn: a set has one rank, a run does not.
      const kind = spread.every((c) => c % 13 === spread[0] % 13) ? 'SPREAD_KIND_SET' : 'SPREAD_KIND_RUN';
      table.push({ kind, cards: spread.slice() });
      hand = rest;
    }

    // 2. Lay off what fits on any spread on the table (anyone's), highest cards first, until
    //    nothing more fits.
    let laid = true;
    while (laid) {
      laid = false;
      for (const c of hand.slice().sort((a, b) => value(b) - value(a))) {
        const target = table.findIndex((s) => canLayOff(c, s));
        const rest = hand.filter((x) => x !== c);
        if (target < 0 || !leavesADiscard(rest)) continue;
        steps.push(layOff(c, target));
        table[target].cards.push(c);
        hand = rest;
        laid = true;
        break;
      }
    }

    // 3. Discard the highest card we may (never the one just taken), unless we went out.
    if (hand.length > 0) {
      const card = highest(hand.filter((c) => c !== kept));
      steps.push(discard(card));
      hand = hand.filter((c) => c !== card);
    }

    // A safety net while you change the code above: if the first step is not among the legal
    // first steps, discard the highest legal card instead of losing the turn to a fault.
    if (!isLegal(steps[0], legal)) {
      const discards = legal.filter((a) => a.kind === 'ACTION_KIND_DISCARD').map((a) => a.cards[0]);
      return [[discard(highest(discards))], 'fallback: planned an illegal first step'];
    }
    return [steps, `left ${total(hand)}`];
  }

  /** A hand was settled (result: HandResult). */
  handEnded(result) {}

  /** The match is over (result: MatchResult: placements, bankrolls as strings: int64). */
  endMatch(result) {}
}

if (require.main === module) {
  serve(() => new __BOT_CLASS__()); // a new bot for every match
}

module.exports = { __BOT_CLASS__ };
