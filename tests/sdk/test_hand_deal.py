"""``MatchState.deals``: the referee's record of what chance gave each seat, hand by hand."""

from __future__ import annotations

import random

from flipflop import MatchConfig, MatchState, Phase, Pot


def _random_match(seed: int, seats: int) -> MatchState:
    rng = random.Random(seed)
    state = MatchState(MatchConfig(seats=seats, hand_cap=30), seed)
    while state.result is None:
        legal = state.legal_actions()
        if state.phase is Phase.START and len(legal) > 1 and rng.random() < 0.8:
            state.apply(legal[1 + int(rng.random() * (len(legal) - 1))])  # mostly draw
        else:
            state.apply(rng.choice(legal))
    return state


def test_one_deal_per_hand_with_five_cards_for_each_seat_dealt_in() -> None:
    """R-DEAL: five distinct cards per active seat, the flip card the dealer's, per hand."""
    for seed in range(20):
        state = _random_match(seed, 3 + seed % 3)
        assert [d.hand_number for d in state.deals] == [r.hand_number for r in state.results]
        for deal, result in zip(state.deals, state.results, strict=True):
            assert deal.dealer == result.dealer
            assert deal.flip_card == result.flip_card
            dealt_in = [s for s, m in enumerate(deal.dealt) if m]
            assert all(5 == len(deal.hand(s)) for s in dealt_in)
            union = 0
            for m in deal.dealt:
                assert 0 == union & m
                union |= m
            assert deal.flip_card in deal.hand(deal.dealer)


def test_a_deal_holds_the_bankrolls_before_and_the_pots_after_the_antes() -> None:
    """R-ANTE, R-ELIGIBLE: pots = carried chips + antes; eligibility is who anted where."""
    state = _random_match(3, 4)
    carried = (0, 0, 0)
    for deal, result in zip(state.deals, state.results, strict=True):
        antes = {Pot.GAME: 0, Pot.FLIP: 0, Pot.FLOP: 0}
        flip: set[int] = set()
        flop: set[int] = set()
        for p in result.payments:
            if p.reason == "ante":
                antes[p.pot] += p.amount
                if p.pot is Pot.FLIP:
                    flip.add(p.seat)
                elif p.pot is Pot.FLOP:
                    flop.add(p.seat)
        assert (deal.pots.game, deal.pots.flip, deal.pots.flop) == (
            carried[0] + antes[Pot.GAME],
            carried[1] + antes[Pot.FLIP],
            carried[2] + antes[Pot.FLOP],
        )
        assert flip == {s for s, e in enumerate(deal.flip_eligible) if e}
        assert flop == {s for s, e in enumerate(deal.flop_eligible) if e}
        assert all(
            deal.bankrolls[s] - result.bankrolls[s] == -result.deltas[s]
            for s in range(len(deal.bankrolls))
        )
        carried = (result.carried.game, result.carried.flip, result.carried.flop)


def test_the_flip_and_flop_winners_hold_the_lowest_dealt_card_of_their_suit() -> None:
    """R-FLIP, R-ELIGIBLE: each pot's winner was dealt the lowest card of its suit.

    Among the seats that anted into the pot: so the record is the deal the pots were decided by.
    """
    decided = 0
    for seed in range(10):
        state = _random_match(seed, 3 + seed % 3)
        for deal, result in zip(state.deals, state.results, strict=True):
            suit = deal.flip_card.index // 13
            for pot_suit, winner, eligible in (
                (suit, result.flip_winner, deal.flip_eligible),
                (3 - suit, result.flop_winner, deal.flop_eligible),
            ):
                if winner is None:
                    continue
                lowest = {
                    s: min(c.index for c in deal.hand(s) if c.index // 13 == pot_suit)
                    for s in range(len(deal.dealt))
                    if eligible[s] and any(c.index // 13 == pot_suit for c in deal.hand(s))
                }
                assert lowest[winner] == min(lowest.values())
                decided += 1
    assert decided > 100
