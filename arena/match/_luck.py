"""Luck-adjusted placement: the part of a match's placement that the deal decided.

A placement (1 = best, R-END) mixes skill with chance: the flip and flop pots go to whoever
was dealt the lowest card of a suit (R-FLIP), and a good dealt hand wins the game pot more
often. This module estimates, per seat and hand, the chips that chance moved (*chip luck*),
converts them into places with the independent-chip model, and subtracts their sum from the
placement. It is a control variate in the spirit of MIVAT (White & Bowling 2009) and AIVAT
(Burch et al. 2018): every term is a chance outcome minus its expectation over the deals that
were possible, so it averages zero whatever the bots do.

Chip luck of a seat in one hand is the sum of two terms, both zero on average over uniformly
random deals given what was fixed before the cards came out (the dealer, who is dealt in,
who anted into which pot, the pot sizes, the stake):

- :func:`flip_flop_luck`: the flip and flop pots won minus their expectation (R-FLIP,
  R-ELIGIBLE, R-CARRY), computed exactly by combinatorics (:func:`pot_odds`).
- :func:`dealt_hand_luck`: a linear model of the game-pot chips on a few features of the
  dealt hands (R-VALUE, R-RUN, R-SET, R-FIFTY-CHECK), each feature centred on its exact mean
  over random 5-card hands. The coefficients are frozen constants fitted once by
  ``benchmarks/luck.py`` on data generated for that purpose, never on a ladder being judged
  (``docs/standings.md``).
- :func:`draw_luck`: the same for every card drawn from the stock (R-DRAW): what the card
  did for the drawer's hand, and for its lead over the others', less the mean over the cards
  the stock held (:func:`draw_regressors`). A chance node of AIVAT's kind: the top card is
  uniform over the stock whatever came before, so each term is zero on average.

:func:`luck_places` turns each hand's chip luck into places and sums them over the match;
:func:`adjusted_placements` subtracts that sum from the placements.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from math import comb

from flipflop import ActionKind, HandDeal, HandResult, MatchState, Pot, hand_total

__all__ = [
    "DEALT_HAND_MODEL",
    "DRAW_FEATURE_NAMES",
    "DRAW_MODEL",
    "FEATURE_MEANS",
    "FEATURE_NAMES",
    "TABLE_FEATURE_NAMES",
    "DealtHandModel",
    "DrawModel",
    "adjusted_placements",
    "chip_luck",
    "deadwood",
    "dealt_hand_luck",
    "draw_luck",
    "draw_regressors",
    "features",
    "flip_flop_luck",
    "icm_places",
    "luck_places",
    "pot_odds",
    "regressors",
]

_HAND = 5
_UNSEEN = 51  # every card but the flip card, which lies in the dealer's fifth slot (R-DEAL)
_SUIT = 0x1FFF
_RANK_BITS = sum(1 << (13 * s) for s in range(4))

# ------------------------------------------------------------------ flip and flop (R-FLIP)


def _hypergeom(population: int, successes: int, draws: int) -> list[float]:
    """``P(X = x)`` from x = 0: ``X`` of the ``successes`` among ``draws`` of ``population``."""
    total = comb(population, draws)
    return [
        comb(successes, x) * comb(population - successes, draws - x) / total
        for x in range(min(draws, successes) + 1)
    ]


def pot_odds(deal: HandDeal, pot: Pot) -> tuple[float, ...]:
    """Per seat, its chance of winning the flip or flop pot over random deals of this setup.

    What is fixed: the dealer, the seats dealt in and who anted into ``pot`` (R-ANTE,
    R-ELIGIBLE). Everything the cards decide is chance, the flip card included: it is the
    dealer's fifth card (R-DEAL), uniform over the deck, and by symmetry only its slot matters.
    So the other 51 cards are spread uniformly over the dealer's 4 remaining slots, 5 slots per
    other seat dealt in, and the stock.

    Flop pot (the flip suit's partner, R-FLIP): its 13 cards lie among those 51. Let ``m`` be
    the slots of the eligible seats and ``X`` (hypergeometric) the suit's cards in them; the
    lowest of those is equally likely in any of these slots, so an eligible seat with ``n``
    slots wins with ``n / m · P(X > 0)``; with ``X = 0`` the pot carries (R-CARRY).

    Flip pot: the flip card is one of the suit's 13 cards, the other 12 lie among the 51. If
    the dealer is eligible, the lowest of the ``1 + X`` cards held by eligible seats is the flip
    card with chance ``1 / (1 + X)``: the dealer wins with ``E[1/(1+X)] + n_d/m · E[X/(1+X)]``,
    another eligible seat with ``n/m · E[X/(1+X)]``. If the dealer is not (all in), it is as
    for the flop pot with 12 cards.

    Args:
        deal: the hand's deal; only its setup is read, never its cards.
        pot: ``Pot.FLIP`` or ``Pot.FLOP``.

    Returns:
        One probability per seat (0 for a seat not eligible); they sum to 1 less the chance
        that the pot carries.
    """
    if pot is Pot.GAME:
        raise ValueError("pot_odds is for the flip and flop pots")
    eligible = deal.flip_eligible if pot is Pot.FLIP else deal.flop_eligible
    slots = [
        0 if not deal.dealt[s] else _HAND - 1 if s == deal.dealer else _HAND
        for s in range(len(deal.dealt))
    ]
    m = sum(n for n, e in zip(slots, eligible, strict=True) if e)
    if m == 0:
        dealer_only = pot is Pot.FLIP and eligible[deal.dealer]
        return tuple(1.0 if dealer_only and s == deal.dealer else 0.0 for s in range(len(slots)))
    in_suit = 12 if pot is Pot.FLIP else 13
    px = _hypergeom(_UNSEEN, in_suit, m)
    if pot is Pot.FLIP and eligible[deal.dealer]:
        flip_lowest = sum(p / (1 + x) for x, p in enumerate(px))  # E[1/(1+X)]
        others = 1.0 - flip_lowest  # E[X/(1+X)]
    else:
        flip_lowest, others = 0.0, 1.0 - px[0]
    return tuple(
        (n / m * others + (flip_lowest if s == deal.dealer else 0.0)) if eligible[s] else 0.0
        for s, n in enumerate(slots)
    )


def flip_flop_luck(deal: HandDeal, result: HandResult) -> tuple[float, ...]:
    """Per seat, the flip and flop chips it won this hand minus their expectation (R-FLIP).

    The expectation is :func:`pot_odds` times the pot (carried chips included, R-CARRY), so
    the term averages zero over the deals possible with this setup. A carried pot counts as
    won by nobody: every eligible seat's term is then negative.
    """
    won = [0.0] * len(deal.dealt)
    for p in result.payments:
        if p.reason == "win" and p.pot is not Pot.GAME:
            won[p.seat] -= p.amount  # a win is a negative payment: pot → seat
    flip = pot_odds(deal, Pot.FLIP)
    flop = pot_odds(deal, Pot.FLOP)
    return tuple(
        w - a * deal.pots.flip - b * deal.pots.flop for w, a, b in zip(won, flip, flop, strict=True)
    )


# ------------------------------------------------------------------ the dealt hand

FEATURE_NAMES = ("total", "spreads", "pairs", "links", "fifty")
"""The dealt-hand features (:func:`features`)."""


def features(dealt: int) -> tuple[float, ...]:
    """The features of a dealt hand (a card mask), in the order of :data:`FEATURE_NAMES`.

    - ``total``: its points (R-VALUE);
    - ``spreads``: its 3-card subsets that are a run or a set (R-RUN, R-SET);
    - ``pairs``: its 2-card subsets of one rank;
    - ``links``: its 2-card subsets of one suit and consecutive ranks (half a run);
    - ``fifty``: 1 if it totals 49 or 50 (R-FIFTY-CHECK), else 0.
    """
    suits = [(dealt >> (13 * s)) & _SUIT for s in range(4)]
    ranks = [((dealt >> r) & _RANK_BITS).bit_count() for r in range(13)]
    total = hand_total(dealt)
    spreads = sum((m & m >> 1 & m >> 2).bit_count() for m in suits) + sum(comb(c, 3) for c in ranks)
    return (
        float(total),
        float(spreads),
        float(sum(comb(c, 2) for c in ranks)),
        float(sum((m & m >> 1).bit_count() for m in suits)),
        1.0 if total >= 49 else 0.0,
    )


def _subset_mean(subsets: int, size: int) -> float:
    """The mean count of ``subsets`` given ``size``-card subsets of the deck in a 5-card hand."""
    return subsets * comb(52 - size, _HAND - size) / comb(52, _HAND)


FEATURE_MEANS: tuple[float, ...] = (
    _HAND * 340 / 52,  # 4 * (1 + ... + 9) + 16 * 10 = 340 points in the deck
    _subset_mean(13 * 4 + 4 * 11, 3),  # 4 threes per rank, 11 three-card runs per suit
    _subset_mean(13 * 6, 2),
    _subset_mean(4 * 12, 2),
    _subset_mean(comb(16, 5) + comb(16, 4) * 4, _HAND),  # five 10-point cards, or four + a 9
)
"""Each feature's exact mean over uniformly random 5-card hands (every seat's dealt hand is
one, the dealer's too: the flip card is just one of its five)."""


TABLE_FEATURE_NAMES = ("lowest", "rank")
"""The features comparing a seat's dealt hand with the others' (:func:`regressors`)."""


def deadwood(dealt: int) -> int:
    """The points left in a dealt hand once its best spread is laid down (R-RUN, R-SET).

    Five cards hold at most one spread (two take six), and the best one is a whole block of
    consecutive cards of a suit or every card of a rank.
    """
    best = 0
    for s in range(4):
        m = (dealt >> (13 * s)) & _SUIT
        while m:
            low = m & -m
            block = m & ~(m + low)  # the lowest block of consecutive ranks
            m &= ~block
            if block.bit_count() >= 3:
                best = max(best, hand_total(block << (13 * s)))
    for r in range(13):
        held = (dealt >> r) & _RANK_BITS
        if held.bit_count() >= 3:
            best = max(best, held.bit_count() * min(r + 1, 10))
    return hand_total(dealt) - best


def regressors(deal: HandDeal) -> dict[int, tuple[float, ...]]:
    """Per seat dealt in, the dealt-hand model's regressors, each zero on average.

    In order: the seat's :func:`features` less :data:`FEATURE_MEANS`; the same for the mean
    of the other seats dealt in; then two comparisons of :func:`deadwood` with the others':

    - ``lowest``: ``1 / t`` if the seat's deadwood is the table's lowest (shared by ``t``
      seats), else 0; less ``1 / k`` with ``k`` seats dealt in;
    - ``rank``: the number of others with more deadwood less the number with less, over
      ``k - 1``.

    The seats' dealt hands are exchangeable over random deals (the dealer's too), so the two
    comparisons average zero by symmetry, like the centred features.
    """
    dealt_in = [s for s, m in enumerate(deal.dealt) if m]
    k = len(dealt_in)
    centred = {
        s: [f - mu for f, mu in zip(features(deal.dealt[s]), FEATURE_MEANS, strict=True)]
        for s in dealt_in
    }
    dead = {s: deadwood(deal.dealt[s]) for s in dealt_in}
    low = min(dead.values(), default=0)
    tied = sum(1 for s in dealt_in if dead[s] == low)
    out: dict[int, tuple[float, ...]] = {}
    for s in dealt_in:
        others = [centred[o] for o in dealt_in if o != s]
        rest = [sum(o[i] for o in others) / len(others) for i in range(len(FEATURE_NAMES))]
        lowest = (1 / tied if dead[s] == low else 0.0) - 1 / k
        rank = sum((dead[o] > dead[s]) - (dead[o] < dead[s]) for o in dealt_in) / (k - 1)
        out[s] = (*centred[s], *rest, lowest, rank)
    return out


@dataclass(frozen=True, slots=True)
class DealtHandModel:
    """Game-pot chips explained by the dealt hands, in stakes.

    For a seat dealt in, its term is ``stake * (own . (f_i - mu) + others . (f_-i - mu) +
    table . c_i)``: ``f_i`` its :func:`features`, ``f_-i`` the mean features of the other
    seats dealt in, ``mu`` :data:`FEATURE_MEANS`, ``c_i`` the deadwood comparisons of
    :func:`regressors`. Every regressor is zero on average over random deals, so the term is.

    Attributes:
        own: one coefficient per feature of the seat's own hand.
        others: one coefficient per feature of the others' mean.
        table: one coefficient per deadwood comparison (:data:`TABLE_FEATURE_NAMES`).
        fitted: how the coefficients were obtained (command, data, date).
    """

    own: tuple[float, ...]
    others: tuple[float, ...]
    table: tuple[float, ...]
    fitted: str

    @property
    def coefficients(self) -> tuple[float, ...]:
        """All coefficients, in the order of :func:`regressors`."""
        return (*self.own, *self.others, *self.table)


# Fitted by `python benchmarks/luck.py --fit-matches 120 --check-matches 240` on 2026-11-30,
# see docs/standings.md; pasted here and never refitted on a ladder being judged.
DEALT_HAND_MODEL = DealtHandModel(
    own=(-0.0258, -0.0303, 0.0973, 0.1237, 2.5518),
    others=(0.0167, 0.03, -0.0892, -0.1151, -2.0621),
    table=(1.4685, -0.3701),
    fitted=(
        "python benchmarks/luck.py --fit-matches 120, 2026-11-30: 26347 seat-hands of random, "
        "greedy and counter at 3-5 seats, seeds luck-fit/0..."
    ),
)


def dealt_hand_luck(
    deal: HandDeal, stake: int, model: DealtHandModel = DEALT_HAND_MODEL
) -> tuple[float, ...]:
    """Per seat, the game-pot chips its dealt hand and the others' explain (0 if not dealt in).

    Args:
        deal: the hand's deal.
        stake: the match's stake ``S`` (R-STAKE); the model is in stakes.
        model: the coefficients (the frozen :data:`DEALT_HAND_MODEL` by default).
    """
    out = [0.0] * len(deal.dealt)
    for s, x in regressors(deal).items():
        out[s] = stake * sum(b * v for b, v in zip(model.coefficients, x, strict=True))
    return tuple(out)


def chip_luck(
    deal: HandDeal, result: HandResult, stake: int, model: DealtHandModel = DEALT_HAND_MODEL
) -> tuple[float, ...]:
    """Per seat, the chips chance moved: :func:`flip_flop_luck` + :func:`dealt_hand_luck`."""
    return tuple(
        a + b
        for a, b in zip(
            flip_flop_luck(deal, result), dealt_hand_luck(deal, stake, model), strict=True
        )
    )


# ------------------------------------------------------------------ stock draws (R-DRAW)

DRAW_FEATURE_NAMES = ("deadwood", "lead")
"""The regressors of a stock draw (:func:`draw_regressors`)."""


def _kept_deadwood(hand: int) -> int:
    """The :func:`deadwood` of ``hand`` (a card mask) after its best discard (R-DISCARD).

    ``hand`` is a hand that has just drawn: of its cards the one whose discard leaves the
    least deadwood goes. (A measure of the hand, not a rule: the bot may play otherwise.)
    """
    best = hand_total(hand)
    rest = hand
    while rest:
        card = rest & -rest
        rest ^= card
        best = min(best, _deadwood_cached(hand ^ card))
    return best


_deadwood_cached = functools.lru_cache(maxsize=1 << 16)(deadwood)
""":func:`deadwood` remembered: a seat's hand changes by a card a turn, so a match's draws
ask for the same hands again and again."""


def _kept_after_draws(hand: int, stock: Sequence[int]) -> list[int]:
    """:func:`_kept_deadwood` of ``hand`` with each card of ``stock`` drawn, in its order.

    A card that can join no spread with ``hand``'s cards (no two of its rank there, no card of
    its suit a rank away) lies in no spread once drawn, so its kept deadwood is that of
    discarding it (``hand``'s own) or of keeping it beside the best four-card rest: only the
    cards near ``hand`` need the whole search.
    """
    near = 0
    rest = hand
    while rest:
        card = rest & -rest
        rest ^= card
        c = card.bit_length() - 1
        rank = c % 13
        if ((hand >> rank) & _RANK_BITS).bit_count() >= 2:
            near |= _RANK_BITS << rank
        if rank > 0:
            near |= card >> 1
        if rank < 12:
            near |= card << 1
    as_is = _deadwood_cached(hand)
    four = _kept_deadwood(hand)  # the least deadwood of ``hand`` less one card
    return [
        _kept_deadwood(hand | 1 << c) if near >> c & 1 else min(as_is, four + _CARD_POINTS[c])
        for c in stock
    ]


_CARD_POINTS = tuple(hand_total(1 << c) for c in range(52))
"""Each card's points (R-VALUE)."""


def draw_regressors(state: MatchState) -> list[dict[int, tuple[float, float]]]:
    """Per hand (in order), per seat that drew from the stock, its draws' regressors summed.

    The match is played again from its start with its logged actions (a match that began
    mid-hand, or whose log does not replay to its deals, raises ``ValueError``). At each draw
    from the stock (R-DRAW), with the seat's hand ``H``, each regressor is
    ``v(top) - mean of v(c) over the stock's cards``, for ``v(c)`` one of ``-k(c)`` and
    ``lead(c)``: ``k(c)`` is :func:`_kept_deadwood` of ``H`` and ``c``, and ``lead(c)`` is +1
    if ``k(c)`` is below the lowest deadwood among the other seats dealt in, -1 if above it,
    0 if equal. Given everything before the draw (every hand, every bot's choices, the cards
    already drawn) the top card is uniform over the stock, since a deal is a uniform shuffle
    and nothing shown before reveals the stock's order; so each regressor averages zero
    whatever the bots do, as the dealt hands' do.

    Raises:
        ValueError: the match cannot be replayed from its start.
    """
    n = state.config.seats
    replay = MatchState(
        state.config,
        state.seed,
        decks=state.decks,
        dealer=state.initial_dealer,
        bankrolls=list(state.initial_bankrolls),
    )
    out: list[dict[int, tuple[float, float]]] = [{} for _ in state.deals]
    for hand_number, seat, action in state.log:
        if replay.hand_number != hand_number or replay.to_act != seat:
            raise ValueError("the match cannot be replayed from its start")
        if action.kind is ActionKind.DRAW_STOCK and replay.stock:
            held = replay.hands[seat]
            others = [o for o in range(n) if o != seat and replay.dealt[o]]
            lowest = min(deadwood(replay.hands[o]) for o in others)
            kept = _kept_after_draws(held, replay.stock)  # the top card is the last
            values = [(-float(k), float((k < lowest) - (k > lowest))) for k in kept]
            got = values[-1]
            mean = [sum(v[i] for v in values) / len(values) for i in range(2)]
            acc = out[hand_number - 1].get(seat, (0.0, 0.0))
            out[hand_number - 1][seat] = (acc[0] + got[0] - mean[0], acc[1] + got[1] - mean[1])
        try:
            replay.apply(action)
        except ValueError as err:  # the engine's ActionError: the log is not this match's
            raise ValueError("the match cannot be replayed from its start") from err
    if [d.dealt for d in replay.deals] != [d.dealt for d in state.deals]:
        raise ValueError("the match cannot be replayed from its start")
    return out


@dataclass(frozen=True, slots=True)
class DrawModel:
    """Game-pot chips explained by the stock draws, in stakes.

    A seat dealt in gets ``stake * (own . r_i + others . mean_{j != i} r_j)``: ``r`` the
    :func:`draw_regressors` of the hand (zero for a seat that drew nothing), the mean over the
    other seats dealt in.

    Attributes:
        own: one coefficient per :data:`DRAW_FEATURE_NAMES`, for the seat's own draws.
        others: one per feature, for the mean of the other seats' draws.
        fitted: how the coefficients were obtained (command, data, date).
    """

    own: tuple[float, ...]
    others: tuple[float, ...]
    fitted: str


# Fitted by `python benchmarks/luck.py --fit-matches 120 --check-matches 240 --draws-only` on
# 2026-12-07, see docs/standings.md; pasted here and never refitted on a ladder being judged.
DRAW_MODEL = DrawModel(
    own=(0.0248, 0.218),
    others=(-0.0233, -0.195),
    fitted=(
        "python benchmarks/luck.py --fit-matches 120 --draws-only, 2026-12-07: 26347 "
        "seat-hands of random, greedy and counter at 3-5 seats, seeds luck-fit/0..., on the "
        "game-pot chips the frozen DEALT_HAND_MODEL leaves"
    ),
)


def draw_luck(state: MatchState, model: DrawModel = DRAW_MODEL) -> list[tuple[float, ...]]:
    """Per hand (in order), per seat, the game-pot chips its stock draws explain (R-DRAW).

    Raises:
        ValueError: the match cannot be replayed from its start (:func:`draw_regressors`).
    """
    n, stake = state.config.seats, state.config.stake
    out: list[tuple[float, ...]] = []
    for deal, drawn in zip(state.deals, draw_regressors(state), strict=True):
        dealt = [s for s in range(n) if deal.dealt[s]]
        row = [0.0] * n
        for s in dealt:
            own = drawn.get(s, (0.0, 0.0))
            others = [drawn.get(o, (0.0, 0.0)) for o in dealt if o != s]
            row[s] = stake * sum(
                model.own[i] * own[i] + model.others[i] * sum(o[i] for o in others) / len(others)
                for i in range(len(DRAW_FEATURE_NAMES))
            )
        out.append(tuple(row))
    return out


# ------------------------------------------------------------------ chips into places


def icm_places(
    bankrolls: Sequence[float],
    survivors: Sequence[int],
    eliminated: Sequence[int],
    *,
    by_bankroll: bool = False,
) -> dict[int, float]:
    """The expected final places (1 = best) of the seats in play after a hand.

    Survivors come first. By the independent-chip model, a survivor comes ahead of another with
    its share of their two bankrolls: place ``1 + Σ_j B_j / (B_i + B_j)`` over the other
    survivors (as the search bot's ``expected_place``). The seats eliminated in the hand come
    after every survivor, ordered by bankroll, a tie sharing the better place (R-END).

    Args:
        bankrolls: chips per seat (negative counts as 0).
        survivors: the seats still in the match.
        eliminated: the seats eliminated in this hand.
        by_bankroll: order the survivors by bankroll too (the match ended at the hand cap, R-END).

    Returns:
        A place per seat of ``survivors`` and ``eliminated``.
    """
    b = [max(float(x), 0.0) for x in bankrolls]

    def ranked(group: Sequence[int], i: int) -> float:
        return 1.0 + sum(1.0 for j in group if b[j] > b[i])

    places: dict[int, float] = {}
    for i in survivors:
        if by_bankroll:
            places[i] = ranked(survivors, i)
        else:
            places[i] = 1.0 + sum(
                b[j] / (b[i] + b[j]) if b[i] + b[j] > 0 else 0.5 for j in survivors if j != i
            )
    for i in eliminated:
        places[i] = len(survivors) + ranked(eliminated, i)
    return places


def _places(
    chips: Sequence[float], in_play: Sequence[int], lost_game: set[int], stake: int, by_cap: bool
) -> dict[int, float]:
    """:func:`icm_places` with R-ELIM applied to ``chips``: below a stake, or all in and beaten."""
    out = [s for s in in_play if s in lost_game or chips[s] < stake]
    kept = [s for s in in_play if s not in out]
    return icm_places(chips, kept, out, by_bankroll=by_cap)


def luck_places(
    state: MatchState,
    model: DealtHandModel = DEALT_HAND_MODEL,
    extra: Sequence[Sequence[float]] = (),
    draws: DrawModel | None = DRAW_MODEL,
) -> tuple[float, ...]:
    """Per seat, the places that chance gave it over a finished match (negative: it helped).

    For each hand, with ``B`` the bankrolls after it and ``L`` the chip luck
    (:func:`chip_luck`, plus :func:`draw_luck` unless ``draws`` is None), a seat's term is
    ``place_i(B) - place_i(B - L)`` by :func:`icm_places`.
    In both worlds the seats in play are those active at the hand's start; who is eliminated
    follows R-ELIM applied to that world's chips: a seat with fewer than ``S`` chips is out,
    and so is an all-in seat that won no share of the game pot (the game pot is not
    counterfactual), so luck that knocked a seat out, or kept it in, counts. Seats that went out
    in an earlier hand have no term; seats that could not ante (R-ANTE) are dealt nothing and
    have no luck, but still count when others are ordered. At the match's last hand under a
    hand cap the survivors are ordered by bankroll (R-END), so for the real ``B`` the last
    hand's places are the placements.

    ``extra``: per hand, in order, chip luck per seat to add to :func:`chip_luck`'s: a term of
    one's own to try (``benchmarks/reference_luck.py``). Like the built-in ones it must average
    zero over the deals whatever the bots do.

    Raises:
        ValueError: the match is not over, or (with ``draws``) cannot be replayed from its
            start (:func:`draw_regressors`).
    """
    result = state.result
    if result is None:
        raise ValueError("the match is not over")
    stake = state.config.stake
    n = state.config.seats
    total = [0.0] * n
    last = len(state.results)
    drawn = draw_luck(state, draws) if draws is not None else None
    for deal, hand in zip(state.deals, state.results, strict=True):
        h = hand.hand_number
        in_play = [s for s in range(n) if (e := result.eliminated_in[s]) is None or e >= h]
        luck = chip_luck(deal, hand, stake, model)
        if drawn is not None:
            luck = tuple(a + b for a, b in zip(luck, drawn[h - 1], strict=True))
        if extra:
            luck = tuple(a + b for a, b in zip(luck, extra[h - 1], strict=True))
        actual = hand.bankrolls
        counter = [b - x for b, x in zip(actual, luck, strict=True)]
        lost_game = {s for s in in_play if deal.all_in[s] and s not in hand.game_winners}
        by_cap = result.by_cap and h == last
        real = _places(actual, in_play, lost_game, stake, by_cap)
        luckless = _places(counter, in_play, lost_game, stake, by_cap)
        for s in in_play:
            total[s] += real[s] - luckless[s]
    return tuple(total)


def adjusted_placements(
    state: MatchState,
    model: DealtHandModel = DEALT_HAND_MODEL,
    extra: Sequence[Sequence[float]] = (),
    draws: DrawModel | None = DRAW_MODEL,
) -> tuple[float, ...]:
    """Per seat, its placement less the places luck gave it (:func:`luck_places`); 1 = best.

    Raises:
        ValueError: the match is not over, or cannot be replayed (:func:`luck_places`).
    """
    if state.result is None:
        raise ValueError("the match is not over")
    luck = luck_places(state, model, extra, draws)
    return tuple(p - x for p, x in zip(state.result.placements, luck, strict=True))
