"""The hand helpers a bot author reaches for (``flipflop._hand``), on scripted deals."""

from __future__ import annotations

from typing import TYPE_CHECKING

from flipflop import (
    DRAW_DISCARD,
    DRAW_STOCK,
    Action,
    Card,
    Termination,
    best_melds,
    discard_beats_stock,
    find_spreads,
    last_discards,
    meld_and_lay_off,
    parse_cards,
    possible_layoffs,
    total_after_turn,
)

if TYPE_CHECKING:
    from tests.sdk.conftest import Table

    TableFactory = type[Table]

card = Card.parse
meld = Action.meld
lay = Action.lay_off
discard = Action.discard


# Seat 1 melds 3h 4h 5h and discards Kc; seat 2 then draws Qd and holds 2h 6h 7h, which all
# fit that run one after another (7h only once 6h is on it).
LAYOFF_HANDS = {1: "3h 4h 5h Kc Kd", 2: "2h 6h 7h 9d Qs", 0: "Jc Jd 9s 9c As"}


def _layoff_table(table: TableFactory) -> Table:
    return table(LAYOFF_HANDS, stock="Ks Qd").play(
        (1, DRAW_STOCK), (1, meld("3h 4h 5h")), (1, discard("Kc")), (2, DRAW_STOCK)
    )


def _pile_table(
    table: TableFactory, thrown: str, seat1: str = "Kc Kd Qc Qd 2s", seat2: str = "3h 4h 5h 6h 7h"
) -> Table:
    """Seat 1 draws 8h and throws ``thrown``; seat 2 may take it from the pile."""
    hands = {1: seat1, 2: seat2, 0: "Jc Jd 9s 9c As"}
    return table(hands, stock="8h").play((1, DRAW_STOCK), (1, discard(thrown)))


def test_find_spreads_lists_every_run_and_set() -> None:
    """R-RUN, R-SET: every spread in the cards, overlapping ones included."""
    found = {frozenset(s) for s in find_spreads(parse_cards("3h 4h 5h 6h 9c 9d 9s"))}
    expected = {
        frozenset(parse_cards(t)) for t in ("3h 4h 5h", "4h 5h 6h", "3h 4h 5h 6h", "9c 9d 9s")
    }
    assert expected == found


def test_best_melds_leave_the_lowest_total() -> None:
    """R-MELD: of a run 3h-5h and a set of fives sharing 5h, the set leaves less (7, not 10)."""
    melds, left = best_melds(parse_cards("3h 4h 5h 5c 5d"))
    assert ([set(parse_cards("5h 5c 5d"))], 7) == ([set(m) for m in melds], left)


def test_possible_layoffs_name_card_and_spread(table: TableFactory) -> None:
    """R-LAYOFF: the cards that fit a spread on the table now, with its index."""
    obs = _layoff_table(table).state.observation(2)
    assert {(card("2h"), 0), (card("6h"), 0)} == set(possible_layoffs(obs.hand, obs.spreads))


def test_total_after_turn_melds_then_throws_the_highest() -> None:
    """What is left after the best melds and the highest discard allowed (R-DRAW: ``keep``)."""
    hand = parse_cards("3h 4h 5h 9c Kd")
    assert 9 == total_after_turn(hand)  # meld the run, throw Kd, keep 9c
    assert 10 == total_after_turn(hand, keep=card("Kd"))  # Kd was just taken: throw 9c


def test_discard_beats_stock(table: TableFactory) -> None:
    """A 5h that completes a run beats a stock draw; a king that must be kept (R-DRAW) does not."""
    seats = {"seat1": "5h Kc Qc Qd 2s", "seat2": "3h 4h 9d Kd Qs"}
    assert discard_beats_stock(_pile_table(table, "5h", **seats).state.observation(2))
    assert not discard_beats_stock(_pile_table(table, "Kc", **seats).state.observation(2))


def test_discard_beats_stock_without_a_pile(table: TableFactory) -> None:
    """The first turn has no discard pile to take from."""
    assert not discard_beats_stock(table(LAYOFF_HANDS).state.observation(1))


def test_last_discards(table: TableFactory) -> None:
    """Each seat's latest discard value; a seat that has not discarded has no entry."""
    t = table(LAYOFF_HANDS, stock="Ks Qd")
    assert {} == last_discards(t.state.observation(0))
    t.play((1, DRAW_STOCK), (1, meld("3h 4h 5h")), (1, discard("Kc")), (2, DRAW_STOCK))
    t.play((2, discard("9d")))
    assert {1: 10, 2: 9} == last_discards(t.state.observation(0))


def test_meld_and_lay_off_lays_off_all_that_fits(table: TableFactory) -> None:
    """R-LAYOFF: highest card first by default, 7h once 6h has made room; then a discard."""
    obs = _layoff_table(table).state.observation(2)
    turn = meld_and_lay_off(obs)
    assert (lay(card("6h"), 0), lay(card("7h"), 0), lay(card("2h"), 0)) == turn.steps
    assert not turn.out
    assert {discard(c) for c in ("9d", "Qs", "Qd")} == set(turn.discards())
    assert set(parse_cards("9d Qs Qd")) == set(turn.table.hand_of(2))


def test_meld_and_lay_off_follows_the_chosen_order(table: TableFactory) -> None:
    """``choose_layoff`` picks among the lay-offs allowed at each step: here the lowest card."""
    obs = _layoff_table(table).state.observation(2)
    turn = meld_and_lay_off(obs, choose_layoff=lambda ls: min(ls, key=lambda a: a.cards[0].value))
    assert (lay(card("2h"), 0), lay(card("6h"), 0), lay(card("7h"), 0)) == turn.steps


def test_meld_and_lay_off_stops_when_out(table: TableFactory) -> None:
    """R-END-TUNK: taking 8h to 3h-7h, two runs of three empty the hand: that is the turn."""
    t = _pile_table(table, "8h").play((2, DRAW_DISCARD))
    turn = meld_and_lay_off(t.state.observation(2))
    assert (meld("3h 4h 5h"), meld("6h 7h 8h")) == turn.steps
    assert (True, []) == (turn.out, turn.discards())
    assert Termination.TUNK is turn.table.results[-1].termination


def test_meld_and_lay_off_skips_a_stranding_meld(table: TableFactory) -> None:
    """R-NO-STRAND: melding 3h-7h would leave only the Kc just taken: no meld, and no Kc thrown."""
    t = _pile_table(table, "Kc").play((2, DRAW_DISCARD))
    turn = meld_and_lay_off(t.state.observation(2))
    assert ((), False) == (turn.steps, turn.out)
    assert {discard(c) for c in ("3h", "4h", "5h", "6h", "7h")} == set(turn.discards())
