"""Replays that stand alone (format version 2): decks recorded with their settlements.

A replay without its seed is rebuilt from its ``deal`` records (R-DEAL), the shows they make
(R-SHOW) and the discard draws' cards (R-DRAW); a deck is never in the file before its hand
is over; and a record that does not follow from the recorded deck is caught.
"""

from __future__ import annotations

import io
import json
import random
from pathlib import Path
from typing import Any

import pytest

from flipflop import (
    DECK,
    DRAW_DISCARD,
    DROP,
    ActionKind,
    Card,
    MatchConfig,
    MatchState,
    Phase,
    Pot,
    ReplayError,
    ReplayWriter,
    Show,
    deck_for,
    read_replay,
    replay,
    stack_deck,
    state_at,
)
from flipflop._replay import parse_records, records

CONFIG = MatchConfig(seats=4, stake=10, bankroll=60, hand_cap=12)
SEED = b"replay-test-seed"


def play(
    seed: bytes | str | int = SEED, config: MatchConfig = CONFIG, *, write_seed: bool = False
) -> tuple[MatchState, list[list[dict[str, Any]]]]:
    """Play a random match through a ReplayWriter as the runner does.

    Returns the final state and the file's records as they stood after every action (the
    ``.partial`` file a reader could have seen at that moment). Discard draws are favoured.
    """
    rng = random.Random(repr(seed))
    state = MatchState(config, seed)
    out = io.StringIO()
    snapshots = []
    with ReplayWriter(
        out, state, [f"p{s}" for s in range(config.seats)], write_seed=write_seed
    ) as w:
        while not state.is_over:
            legal = state.legal_actions()
            if state.phase is Phase.START:
                action = DRAW_DISCARD if DRAW_DISCARD in legal and rng.random() < 0.5 else legal[1]
                action = DROP if rng.random() < 0.05 else action
            else:
                melds = [a for a in legal if a.kind is not ActionKind.DISCARD]
                action = melds[0] if melds else rng.choice(legal)
            hand, seat = state.hand_number, state.to_act
            state.apply(action)
            w.action(action, seat=seat, hand=hand)
            w.sync(state)
            snapshots.append(lines_of(out.getvalue()))
    return state, snapshots


def lines_of(text: str) -> list[dict[str, Any]]:
    """The JSON records of a replay text."""
    return [json.loads(line) for line in text.splitlines()]


def text_of(recs: list[dict[str, Any]]) -> str:
    """Records back to replay text."""
    return "".join(json.dumps(r) + "\n" for r in recs)


@pytest.fixture(scope="module")
def match() -> tuple[MatchState, list[list[dict[str, Any]]]]:
    """One seedless random match and its file after every action."""
    return play()


def test_a_seedless_header_holds_no_seed_and_no_decks(
    match: tuple[MatchState, list[list[dict[str, Any]]]],
) -> None:
    """write_seed=False: nothing in the header tells a future deal."""
    head = match[1][-1][0]
    assert (2, None, []) == (head["version"], head.get("seed"), head["decks"])
    assert "seed" not in head


def test_a_deck_is_never_written_before_its_hand_is_over(
    match: tuple[MatchState, list[list[dict[str, Any]]]],
) -> None:
    """R-DEAL: at every moment of the match the file holds decks of finished hands only.

    And no stock draw names its card: it is the drawer's secret until the hand ends.
    """
    state, snapshots = match
    assert len(state.results) >= 3, "the test match should span several hands"
    replayed = MatchState(CONFIG, SEED)
    for (hand, seat, action), recs in zip(state.log, snapshots, strict=True):
        replayed.apply(action)
        finished = len(replayed.results)
        assert all(r["hand"] <= finished for r in recs if r["type"] == "deal"), (hand, seat)
        assert not [r for r in recs if r.get("action") == "draw_stock" and "cards" in r]


def test_every_finished_hand_has_its_deal_just_before_its_settlement(
    match: tuple[MatchState, list[list[dict[str, Any]]]],
) -> None:
    """R-DEAL: each settlement comes just after the deal record of its hand.

    The deal holds the 52 cards the hand was dealt from, top first.
    """
    state, snapshots = match
    recs = snapshots[-1]
    for i, rec in enumerate(recs):
        if rec["type"] == "settlement":
            deal = recs[i - 1]
            assert ("deal", rec["hand_number"]) == (deal["type"], deal["hand"])
            expected = [DECK[c].code for c in deck_for(SEED, deal["hand"])]
            assert expected == deal["deck"]
    assert len(state.results) == sum(r["type"] == "deal" for r in recs)


def test_discard_draws_name_the_card_taken(
    match: tuple[MatchState, list[list[dict[str, Any]]]],
) -> None:
    """R-DRAW: a discard draw record carries the top of the discard pile, as the engine had it."""
    state, snapshots = match
    recs = [r for r in snapshots[-1] if r["type"] == "action"]
    replayed = MatchState(CONFIG, SEED)
    draws = 0
    for rec, (_, _, action) in zip(recs, state.log, strict=True):
        if action.kind is ActionKind.DRAW_DISCARD:
            assert [DECK[replayed.discard[-1]].code] == rec["cards"]
            draws += 1
        replayed.apply(action)
    assert draws > 5


def test_a_seedless_replay_reruns_from_its_decks(
    match: tuple[MatchState, list[list[dict[str, Any]]]],
) -> None:
    """The recorded decks and first dealer alone rebuild the match, every record checked."""
    state, snapshots = match
    rep = parse_records(text_of(snapshots[-1]).splitlines())
    assert rep.seed is None
    rerun = replay(rep)
    assert state.results == rerun.results
    assert state.result == rerun.result


def test_state_at_rebuilds_a_hand_without_the_seed(
    match: tuple[MatchState, list[list[dict[str, Any]]]],
) -> None:
    """state_at deals hand 2 from its recorded deck: the same hands as the seeded engine."""
    state, snapshots = match
    rep = parse_records(text_of(snapshots[-1]).splitlines())
    seeded = MatchState(CONFIG, SEED, decks=[deck_for(SEED, 1), deck_for(SEED, 2)])
    for _, _, action in [x for x in state.log if x[0] == 1]:
        seeded.apply(action)
    assert seeded.hands == state_at(rep, 2).hands


def test_the_writer_and_records_agree(
    match: tuple[MatchState, list[list[dict[str, Any]]]],
) -> None:
    """records() of a played match gives the very records ReplayWriter wrote during it."""
    state, snapshots = match
    players = [f"p{s}" for s in range(CONFIG.seats)]
    assert snapshots[-1] == list(records(state, players, write_seed=False))


def test_recorded_shows_are_the_hand_s_shows() -> None:
    """R-SHOW: in order from the dealer's left, each card beating the lowest shown so far.

    Dealer 0 turns up 5h (flip suit hearts, flop suit diamonds). Seat 1 shows 2h before its
    turn and drops; at the end seat 2 shows Ah (beats 2h) and 3d; the dealer's Kd beats
    nothing.
    """
    deck = stack_deck(
        {1: "2h 9c 9s Kc Qc", 2: "Ah 3d Jc Js Qs", 0: "Kd 8c 8s 7c 5h"}, dealer=0, seats=3
    )
    state = MatchState(MatchConfig(seats=3, hand_cap=1), 0, decks=[deck], dealer=0)
    state.apply(DROP)
    expected = [
        Show(1, Card.parse("2h"), Pot.FLIP),
        Show(2, Card.parse("Ah"), Pot.FLIP),
        Show(2, Card.parse("3d"), Pot.FLOP),
    ]
    assert expected == state.shows
    deal = next(r for r in records(state) if r["type"] == "deal")
    shown = [{"seat": 1, "card": "2h", "pot": "flip"}, {"seat": 2, "card": "Ah", "pot": "flip"}]
    assert [*shown, {"seat": 2, "card": "3d", "pot": "flop"}] == deal["shows"]


def test_shows_of_seats_not_eligible_are_not_recorded() -> None:
    """R-SHOW-ELIGIBLE: an all-in seat (game pot only) shows nothing, even its lowest cards.

    As before, but seat 2 has 20 chips: its Ah and 3d stay hidden, so the dealer's Kd is the
    lowest diamond shown.
    """
    deck = stack_deck(
        {1: "2h 9c 9s Kc Qc", 2: "Ah 3d Jc Js Qs", 0: "Kd 8c 8s 7c 5h"}, dealer=0, seats=3
    )
    config = MatchConfig(seats=3, stake=10, bankroll=100, hand_cap=1)
    state = MatchState(config, 0, decks=[deck], dealer=0, bankrolls=[100, 100, 20])
    state.apply(DROP)
    deal = next(r for r in records(state) if r["type"] == "deal")
    shows = [{"seat": 1, "card": "2h", "pot": "flip"}, {"seat": 0, "card": "Kd", "pot": "flop"}]
    assert shows == deal["shows"]


# ------------------------------------------------------------------ what the checker catches


def edited(match: tuple[MatchState, list[list[dict[str, Any]]]]) -> list[dict[str, Any]]:
    """A fresh copy of the finished match's records, to tamper with."""
    copy: list[dict[str, Any]] = json.loads(json.dumps(match[1][-1]))
    return copy


def check(recs: list[dict[str, Any]]) -> None:
    """Parse and re-run with every check."""
    replay(parse_records(text_of(recs).splitlines()))


def test_a_deck_that_deals_other_hands_is_caught(
    match: tuple[MatchState, list[list[dict[str, Any]]]],
) -> None:
    """R-DEAL: swapping a dealt card with a stock card changes what the hand replays."""
    recs = edited(match)
    deal = next(r for r in recs if r["type"] == "deal")
    deck = deal["deck"]
    deck[0], deck[51] = deck[51], deck[0]
    with pytest.raises(ReplayError, match="hand 1"):
        check(recs)


def test_a_tampered_show_is_caught(match: tuple[MatchState, list[list[dict[str, Any]]]]) -> None:
    """R-SHOW: the recorded shows must be the ones the recorded deck makes."""
    recs = edited(match)
    deal = next(r for r in recs if r["type"] == "deal" and r["shows"])
    deal["shows"] = deal["shows"][1:]
    with pytest.raises(ReplayError, match=rf"hand {deal['hand']}: the recorded shows"):
        check(recs)


def test_a_wrong_discard_draw_card_is_caught(
    match: tuple[MatchState, list[list[dict[str, Any]]]],
) -> None:
    """R-DRAW: a discard draw naming a card other than the pile's top is caught."""
    recs = edited(match)
    draw = next(r for r in recs if r.get("action") == "draw_discard")
    draw["cards"] = ["Ac" if draw["cards"] != ["Ac"] else "2c"]
    with pytest.raises(ReplayError, match="recorded drawing"):
        check(recs)


def test_a_discard_draw_without_its_card_is_caught(
    match: tuple[MatchState, list[list[dict[str, Any]]]],
) -> None:
    """Version 2: the card of every discard draw is part of the record."""
    recs = edited(match)
    next(r for r in recs if r.get("action") == "draw_discard").pop("cards")
    with pytest.raises(ReplayError, match="a discard draw without its card"):
        check(recs)


def test_a_stock_draw_may_name_its_card_but_only_the_right_one(
    match: tuple[MatchState, list[list[dict[str, Any]]]],
) -> None:
    """A stock draw's card is optional; when given it must be the top of the stock."""
    state = match[0]
    recs = edited(match)
    draw = next(r for r in recs if r.get("action") == "draw_stock")
    top = MatchState(CONFIG, SEED).stock[-1]
    draw["cards"] = [DECK[top].code]
    check(recs)
    draw["cards"] = [DECK[(top + 1) % 52].code]
    with pytest.raises(ReplayError, match="the stock gives"):
        check(recs)
    assert state.log[0][2].kind is ActionKind.DRAW_STOCK


def test_a_settlement_without_its_deal_is_caught(
    match: tuple[MatchState, list[list[dict[str, Any]]]],
) -> None:
    """Version 2: a settled hand must have its deal record (with a seed too)."""
    recs = [r for r in edited(match) if not (r["type"] == "deal" and r["hand"] == 2)]
    recs[0]["seed"] = {"hex": SEED.hex()}
    with pytest.raises(ReplayError, match="hand 2: settled without its deal record"):
        check(recs)


def test_a_deck_other_than_the_seed_s_is_caught(
    match: tuple[MatchState, list[list[dict[str, Any]]]],
) -> None:
    """With the seed in the header, each recorded deck must be the seed's (R-DEAL)."""
    recs = edited(match)
    recs[0]["seed"] = {"hex": SEED.hex()}
    check(recs)
    recs[0]["seed"] = "another seed"
    with pytest.raises(ReplayError):
        check(recs)


def test_two_deals_for_one_hand_are_caught(
    match: tuple[MatchState, list[list[dict[str, Any]]]],
) -> None:
    """A hand has one deck."""
    recs = edited(match)
    i = next(i for i, r in enumerate(recs) if r["type"] == "deal")
    recs.insert(i, dict(recs[i]))
    with pytest.raises(ReplayError, match="two deal records"):
        check(recs)


@pytest.mark.parametrize(
    "deck",
    [["Ac"] * 52, ["Ac", "2c"], "Ac", [1] * 52],
    ids=["one-card-52-times", "two-cards", "not-a-list", "numbers"],
)
def test_a_deal_that_is_not_one_pack_is_refused_when_read(
    match: tuple[MatchState, list[list[dict[str, Any]]]], deck: Any
) -> None:
    """R-DECK: a recorded deck must hold the 52 cards once each."""
    recs = edited(match)
    next(r for r in recs if r["type"] == "deal")["deck"] = deck
    with pytest.raises(ReplayError, match="line"):
        parse_records(text_of(recs).splitlines())


# ------------------------------------------------------------------ files cut short


def test_a_seedless_file_cut_mid_hand_cannot_rerun_that_hand(
    match: tuple[MatchState, list[list[dict[str, Any]]]],
) -> None:
    """The unfinished hand's deck is not in the file: the replay says so, invents nothing."""
    state, snapshots = match
    hands = [h for h, _, _ in state.log]
    hand = next(h for h in hands if h >= 2 and hands.count(h) >= 2)
    rep = parse_records(text_of(snapshots[hands.index(hand)]).splitlines())
    with pytest.raises(ReplayError, match=f"hand {hand}: the replay holds no deck for it"):
        replay(rep)
    with pytest.raises(ReplayError, match=f"hand {hand}: the replay holds no deck for it"):
        state_at(rep, hand)
    assert 1 == state_at(rep, 1, 1).hand_number  # the finished hands are still there


def test_a_seedless_file_cut_after_a_settlement_stops_there(
    match: tuple[MatchState, list[list[dict[str, Any]]]],
) -> None:
    """Even with no action of the next hand recorded, its deal is not made up."""
    state, snapshots = match
    last_of_hand_1 = max(i for i, (h, _, _) in enumerate(state.log) if h == 1)
    rep = parse_records(text_of(snapshots[last_of_hand_1]).splitlines())
    assert [1] == [d["hand"] for d in rep.deals]
    with pytest.raises(ReplayError, match="hand 2: the replay holds no deck"):
        replay(rep)


def test_a_seeded_file_cut_mid_hand_still_reruns() -> None:
    """With the seed in the header (write_seed=True) even the unfinished hand is known."""
    state, snapshots = play(write_seed=True)
    mid = len(state.log) // 2
    rerun = replay(parse_records(text_of(snapshots[mid]).splitlines()))
    assert state.log[: mid + 1] == rerun.log


# ------------------------------------------------------------------ seeds in the header


@pytest.mark.parametrize("seed", [b"\x00\xffbytes", "a string", 12345], ids=["bytes", "str", "int"])
def test_a_written_seed_reads_back_as_itself(seed: bytes | str | int) -> None:
    """A header seed of each type survives the file; bytes are written as {"hex": …}."""
    state, snapshots = play(seed, MatchConfig(seats=3, hand_cap=2), write_seed=True)
    head = snapshots[-1][0]
    assert ({"hex": seed.hex()} if isinstance(seed, bytes) else seed) == head["seed"]
    rep = parse_records(text_of(snapshots[-1]).splitlines())
    assert seed == rep.seed
    assert state.results == replay(rep).results


@pytest.mark.parametrize(
    "seed", [{"hex": "zz"}, [1], 1.5, True], ids=["bad-hex", "list", "float", "bool"]
)
def test_a_header_seed_of_another_kind_is_refused(seed: Any) -> None:
    """Only an int, a str or {"hex": …} is a seed."""
    _, snapshots = play(1, MatchConfig(seats=3, hand_cap=1), write_seed=True)
    recs = json.loads(json.dumps(snapshots[-1]))
    recs[0]["seed"] = seed
    with pytest.raises(ReplayError, match="bad header"):
        parse_records(text_of(recs).splitlines())


def test_an_unknown_version_is_refused(tmp_path: Path) -> None:
    """A version this SDK does not know is refused, naming the versions it reads."""
    _, snapshots = play(1, MatchConfig(seats=3, hand_cap=1), write_seed=True)
    recs = snapshots[-1]
    recs[0]["version"] = 3
    path = tmp_path / "future.jsonl"
    path.write_text(text_of(recs), encoding="utf-8")
    with pytest.raises(ReplayError, match=r"version 3 is not supported .* reads versions 1, 2"):
        read_replay(path)


def test_a_hand_ended_by_its_deal_needs_its_deal_record_too() -> None:
    """R-FIFTY-CHECK: a 49/50 hand has no action, yet without its deck it cannot be rebuilt."""
    config = MatchConfig(seats=3, hand_cap=3)
    fifty = stack_deck(
        {2: "Kc Kd Kh Ks Qc", 0: "2c 3c 4c 5c 6c", 1: "2d 3d 4d 5d 6d"}, dealer=1, seats=3
    )
    state = MatchState(config, b"s", decks=[deck_for(b"s", 1), fifty], dealer=0)
    out = io.StringIO()
    with ReplayWriter(out, state, write_seed=False) as w:
        while not state.is_over:
            hand, seat = state.hand_number, state.to_act
            state.apply(DROP)
            w.action(DROP, seat=seat, hand=hand)
            w.sync(state)
    recs = lines_of(out.getvalue())
    assert [] == recs[0]["decks"]  # scripted decks are withheld with the seed
    assert "fifty" == next(r for r in recs if r.get("hand_number") == 2)["termination"]
    check(recs)
    recs = [r for r in recs if not (r["type"] == "deal" and r["hand"] == 2)]
    with pytest.raises(ReplayError, match="hand 2: the replay holds no deck for it"):
        check(recs)
