// Unit tests of the card rules and of one turn's plan: `npm test` (node --test).
'use strict';

const test = require('node:test');
const assert = require('node:assert');
const { card, value, total, spreadsIn, bestMelds, canLayOff } = require('../cards');
const { __BOT_CLASS__ } = require('../bot');

const C = 0; // suits
const D = 1;
const H = 2;

test('card 0 is the ace of clubs and jacks are worth 10 (R-VALUE)', () => {
  assert.strictEqual(card(C, 1), 0);
  assert.strictEqual(value(card(D, 11)), 10);
  assert.strictEqual(total([card(C, 1), card(H, 13)]), 11);
});

test('A-2-3 is a run, Q-K-A is not (R-RUN)', () => {
  assert.deepStrictEqual(spreadsIn([card(C, 1), card(C, 2), card(C, 3)]), [[0, 1, 2]]);
  assert.deepStrictEqual(spreadsIn([card(C, 12), card(C, 13), card(C, 1)]), []);
});

test('the best melds leave the lowest total', () => {
  const hand = [card(C, 4), card(C, 5), card(C, 6), card(D, 9), card(H, 9), card(C, 9)];
  const { melds, left } = bestMelds(hand);
  assert.strictEqual(melds.length, 2);
  assert.deepStrictEqual(left, []);
});

test('a set of three takes a fourth, a run grows at either end (R-LAYOFF)', () => {
  const set = { kind: 'SPREAD_KIND_SET', cards: [card(C, 7), card(D, 7), card(H, 7)] };
  const run = { kind: 'SPREAD_KIND_RUN', cards: [card(D, 2), card(D, 3), card(D, 4)] };
  assert.ok(canLayOff(card(3, 7), set));
  assert.ok(canLayOff(card(D, 1), run) && canLayOff(card(D, 5), run));
  assert.ok(!canLayOff(card(C, 5), run));
});

test('never stranded with only the card taken from the pile (R-NO-STRAND)', () => {
  const bot = new __BOT_CLASS__();
  const taken = card(H, 9);
  const obs = {
    hand: [card(C, 4), card(C, 5), card(C, 6), taken],
    spreads: [],
    drawn_from_discard: taken,
  };
  const legal = [card(C, 4), card(C, 5), card(C, 6)].map((c) => ({
    kind: 'ACTION_KIND_DISCARD',
    cards: [c],
    target: 0,
  }));
  const [steps] = bot.playTurn(obs, legal);
  assert.deepStrictEqual(steps, [{ kind: 'ACTION_KIND_DISCARD', cards: [card(C, 6)], target: 0 }]);
});
