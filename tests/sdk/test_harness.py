"""The default play the runner, the harness and the conformance check give a silent seat."""

from __future__ import annotations

from typing import TYPE_CHECKING

from flipflop import DRAW_DISCARD, DRAW_STOCK, Action, Card, Phase, default_action, play_default

if TYPE_CHECKING:
    from tests.sdk.conftest import Table

    TableFactory = type[Table]

HANDS = {1: "Kc Kd Qc 2d 5h", 2: "3h 4h 9c Qs Kh", 0: "Jc Jd 9s 9d As"}


def test_default_start_is_a_stock_draw(table: TableFactory) -> None:
    """R-DRAW: at the start of a turn the default draws from the stock; the turn goes on."""
    t = table(HANDS, stock="8h")
    assert DRAW_STOCK == default_action(t.state)
    play_default(t.state)
    assert (1, Phase.PLAY) == (t.state.to_act, t.state.phase)
    assert Card.parse("8h") in t.state.hand_of(1)


def test_default_play_discards_the_highest_card(table: TableFactory) -> None:
    """R-DISCARD: after drawing, the default ends the turn with the highest card (Kd over Kc)."""
    t = table(HANDS, stock="8h").play((1, DRAW_STOCK))
    assert Action.discard(Card.parse("Kd")) == default_action(t.state)
    play_default(t.state)
    assert Card.parse("Kd") not in t.state.hand_of(1)
    assert (2, Phase.START) == (t.state.to_act, t.state.phase)


def test_default_play_keeps_the_card_taken_from_the_pile(table: TableFactory) -> None:
    """R-DRAW ruling: the card just taken from the discard pile is not the default discard."""
    t = table(HANDS, stock="8h").play((1, DRAW_STOCK), (1, Action.discard(Card.parse("Kd"))))
    t.play((2, DRAW_DISCARD))
    before = set(t.state.hand_of(2))
    play_default(t.state)
    (thrown,) = before - set(t.state.hand_of(2))
    assert Card.parse("Kd") != thrown
    assert 10 == thrown.value  # Kh or Qs: as high as the kept Kd
    assert (0, Phase.START) == (t.state.to_act, t.state.phase)
