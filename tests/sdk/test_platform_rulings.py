"""Scenarios for the platform rulings that docs/rules.md adds to the shared rules."""

from __future__ import annotations

import pytest

from flipflop import DROP, Action, MalformedActionError, MatchConfig, MatchState, stack_deck


def test_r_cap_order_placement_before_carried_pots_are_shared() -> None:
    """R-CAP-ORDER: at a hand cap, seats tied on bankroll share a place.

    Even when the odd chips of the carried pots (R-CARRY, R-SPLIT) then leave their final
    chips one apart.
    """
    deck = stack_deck(
        {
            3: "As 2s 3s Ad 2d",  # all in (20 chips), drops with 9: strictly lowest
            0: "9h 8h 7h 9d 8d",
            1: "Tc 9c 8c 6h 5h",
            2: "Jd Qc Kc Td 2c",  # dealer; 2c is the flip card and the lowest club
        },
        dealer=2,
        seats=4,
    )
    st = MatchState(
        MatchConfig(seats=4, stake=10, bankroll=100, hand_cap=1),
        0,
        decks=[deck],
        dealer=2,
        bankrolls=[100, 100, 100, 20],
    )
    assert 3 == st.to_act
    st.apply(DROP)
    assert st.result is not None
    assert (70, 70, 100, 50) == st.results[0].bankrolls  # flop pot (30) carried: no spades
    # 30 carried chips over 4 survivors: 7 each, odd chips to seats 3 and 0 (dealer's left).
    assert (78, 77, 107, 58) == st.result.bankrolls
    assert (2, 2, 1, 4) == st.result.placements


def test_r_dup_card_an_action_naming_a_card_twice_is_malformed() -> None:
    """R-DUP-CARD: a meld naming 3♥ twice is refused as malformed, not read as 3♥ 4♥ 5♥."""
    with pytest.raises(MalformedActionError, match="twice"):
        Action.meld("3h 3h 4h 5h")
