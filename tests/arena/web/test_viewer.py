"""The replay viewer's JSON (arena/web/_viewer.py) against replays of real in-process matches.

Every replay here is written by :class:`flipflop.ReplayWriter` while bundled bots play a real
match; the checks compare the viewer's timeline and frames with the replay's own records.
"""

from __future__ import annotations

import io
import json
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from arena._text import clean
from arena.league._views import filter_replay
from arena.web._viewer import (
    NoSuchHand,
    ViewerError,
    hand_frames,
    match_timeline,
    match_timeline_json,
)
from flipflop import (
    MatchConfig,
    MatchInfo,
    MatchState,
    Phase,
    ReplayWriter,
    apply_turn,
    load_bot,
    read_replay,
    stack_deck,
    state_at,
)

BOTS_DIR = Path(__file__).resolve().parents[3] / "bots"
NAMES = ["gr\x1b[2Jeedy", "count\u202eer\n", "random\r", "greedy"]
"""Seat names with an escape sequence, a bidi override, LF and CR: all must be cleaned."""


@dataclass(frozen=True)
class Played:
    """A replay and its records, grouped by type."""

    data: bytes
    records: list[dict[str, Any]]

    def of(self, kind: str) -> list[dict[str, Any]]:
        """The records of type ``kind``, in order."""
        return [r for r in self.records if r["type"] == kind]

    def actions(self, hand: int) -> list[dict[str, Any]]:
        """The action records of hand ``hand``."""
        return [r for r in self.of("action") if r["hand"] == hand]

    def settlement(self, hand: int) -> dict[str, Any]:
        """The settlement record of hand ``hand``."""
        return next(r for r in self.of("settlement") if r["hand_number"] == hand)

    def deal(self, hand: int) -> dict[str, Any]:
        """The deal record of hand ``hand``."""
        return next(r for r in self.of("deal") if r["hand"] == hand)


def play(
    config: MatchConfig, seed: int, *, decks: list[list[int]] | None = None, dealer: int = 0
) -> Played:
    """Bundled bots (greedy, counter, random, greedy) play a match, recorded as the arena does.

    Every third decision carries a debug note (with an escape sequence in it), every 25th a
    fault text, as the arena's runner writes them next to the action.
    """
    bots = [load_bot(BOTS_DIR / n) for n in ("greedy", "counter", "random", "greedy")]
    state = MatchState(config, seed, decks=decks or (), dealer=dealer)
    out = io.StringIO()
    writer = ReplayWriter(out, state, NAMES, write_seed=False)
    for seat, bot in enumerate(bots):
        bot.start_match(MatchInfo("test", seat, tuple(NAMES), config, 0, 0))
    decision = 0
    while not state.is_over:
        seat, hand, bot = state.to_act, state.hand_number, bots[state.to_act]
        obs, legal = state.observation(seat), state.legal_actions()
        decision += 1
        note = f"decision {decision}\x1b]52;c;x\x07" if decision % 3 == 0 else ""
        fault = "answered late\u202e" if decision % 25 == 0 else ""
        done = len(state.log)
        if state.phase is Phase.START:
            state.apply(bot.start_turn(obs, legal))
        else:
            apply_turn(state, bot.play_turn(obs, legal))
        for i, (h, s, action) in enumerate(state.log[done:]):
            first = i == 0
            writer.action(action, seat=s, hand=h, note=note * first, fault=fault * first)
        assert hand == state.log[done][0]
        writer.sync(state)
    data = out.getvalue().encode()
    return Played(data, [json.loads(line) for line in data.splitlines()])


@pytest.fixture(scope="module")
def match() -> Played:
    """Forty hands at a four-seat table (more than two checkpoints of the viewer's cache)."""
    return play(MatchConfig(seats=4, stake=10, bankroll=2000, hand_cap=40), seed=11)


@pytest.fixture(scope="module")
def short() -> Played:
    """A match played to the end by survival: seats are eliminated, fewer are dealt in."""
    return play(MatchConfig(seats=4, stake=10, bankroll=60, hand_cap=200), seed=5)


@pytest.fixture(scope="module")
def fifty() -> Played:
    """Hand 1 is scripted so seat 1 is dealt 50: it ends at the deal, before any action."""
    deck = stack_deck(
        {0: "Ac 2c 3c 4c 5c", 1: "Td Jd Qd Kd Th", 2: "Ah 2h 3h 4h 5h", 3: "As 2s 3s 4s 7d"},
        dealer=3,
        seats=4,
    )
    return play(MatchConfig(seats=4, stake=10, bankroll=200, hand_cap=6), 3, decks=[deck], dealer=3)


def hands_of(m: Played) -> range:
    """The settled hands of ``m``."""
    return range(1, len(m.of("settlement")) + 1)


def dealt_hands(m: Played, hand: int) -> dict[int, list[str]]:
    """R-DEAL from the records alone: the seats that anted, served from the dealer's left."""
    rec = m.settlement(hand)
    seats = len(rec["bankrolls"])
    anted = {p["seat"] for p in rec["payments"] if p["reason"] == "ante"}
    order = [s for k in range(1, seats + 1) if (s := (rec["dealer"] + k) % seats) in anted]
    deck = m.deal(hand)["deck"]
    return {s: sorted(deck[i : 5 * len(order) : len(order)]) for i, s in enumerate(order)}


@pytest.mark.parametrize("name", ["match", "short", "fifty"])
def test_frame_0_holds_the_hands_dealt_from_the_recorded_deck(
    name: str, request: pytest.FixtureRequest
) -> None:
    """R-DEAL: frame 0 of every hand holds exactly the cards dealt from the recorded deck.

    Five cards per seat dealt in, served from the dealer's left, nothing for a seat not dealt
    in; the flip card is the dealer's last card and the rest of the deck is the stock.
    """
    m: Played = request.getfixturevalue(name)
    for h in hands_of(m):
        got = hand_frames(m.data, h)
        first = got["frames"][0]
        dealt = dealt_hands(m, h)
        expected = [dealt.get(s, []) for s in range(len(first["hands"]))]
        assert expected == [sorted(cards) for cards in first["hands"]], f"hand {h}"
        assert m.deal(h)["deck"][5 * len(dealt) - 1] == got["flip_card"]
        assert 52 - 5 * len(dealt) == first["stock"] or not m.actions(h)
        assert [s in dealt for s in range(len(first["hands"]))] == first["active"]


def test_each_frame_follows_its_recorded_action(match: Played) -> None:
    """One frame per action plus frame 0, each led to by the recorded action before it.

    Frame ``k`` carries action ``k - 1``'s seat, and frame ``k - 1``'s seat to act is that seat.
    """
    for h in hands_of(match):
        frames = hand_frames(match.data, h)["frames"]
        actions = match.actions(h)
        assert len(actions) + 1 == len(frames)
        assert [None] + [a["seat"] for a in actions] == [
            f["action"] and f["action"]["seat"] for f in frames
        ]
        assert [a["seat"] for a in actions] == [f["to_act"] for f in frames[:-1]]


def test_a_discarded_card_is_on_top_of_the_next_frames_pile(match: Played) -> None:
    """R-DISCARD: a discarded card is on top of the next frame's pile, out of the hand."""
    seen = 0
    for h in hands_of(match):
        frames = hand_frames(match.data, h)["frames"]
        for k, a in enumerate(match.actions(h)):
            if a["action"] == "discard":
                (card,) = a["cards"]
                after = frames[k + 1]
                assert card == after["discard"][-1]
                assert card not in after["hands"][a["seat"]]
                assert f"discards {clean_card(card)}" in after["action"]["text"]
                seen += 1
    assert seen > 100


def clean_card(code: str) -> str:
    """A card as the story writes it: rank (10 for T) and suit symbol."""
    return ("10" if code[0] == "T" else code[0]) + {"c": "♣", "d": "♦", "h": "♥", "s": "♠"}[code[1]]


def test_a_stock_draw_takes_the_top_card_of_the_stock(match: Played) -> None:
    """R-DRAW: a stock draw takes one card from the stock into the drawer's hand.

    A discard draw takes the pile's top card into the hand.
    """
    for h in hands_of(match):
        frames = hand_frames(match.data, h)["frames"]
        for k, a in enumerate(match.actions(h)):
            before, after = frames[k], frames[k + 1]
            if a["action"] == "draw_stock":
                assert before["stock"] - 1 == after["stock"]
                assert len(before["hands"][a["seat"]]) + 1 == len(after["hands"][a["seat"]])
            elif a["action"] == "draw_discard":
                (card,) = a["cards"]
                assert card == before["discard"][-1]
                assert before["discard"][:-1] == after["discard"]
                assert card in after["hands"][a["seat"]]


def test_frames_agree_with_the_sdks_state_at(match: Played, tmp_path: Path) -> None:
    """Each frame's hands, stock and bankrolls are those of the SDK's ``state_at``.

    Hands past the viewer's cache checkpoints (every 16 hands) included.
    """
    path = tmp_path / "m.jsonl"
    path.write_bytes(match.data)
    rep = read_replay(path)
    for h in (1, 2, 17, 33, 40):
        frames = hand_frames(match.data, h)["frames"]
        for k in range(len(frames) - 1):
            st = state_at(rep, h, k)
            assert [[c.code for c in st.hand_of(s)] for s in range(4)] == frames[k]["hands"]
            assert len(st.stock) == frames[k]["stock"]
            assert list(st.bankrolls) == frames[k]["bankrolls"]


@pytest.mark.parametrize("name", ["match", "short", "fifty"])
def test_the_last_frame_tells_the_recorded_settlement(
    name: str, request: pytest.FixtureRequest
) -> None:
    """R-SPLIT, R-CARRY: only the last frame of a hand tells its recorded settlement.

    Its ending names the recorded ender and termination; its net and bankroll lines, its
    bankrolls and pots are the settlement record's; its shows are the deal record's (R-SHOW).
    """
    m: Played = request.getfixturevalue(name)
    names = [clean(n, 40) for n in NAMES]
    endings = {
        "fifty": "holds 49/50",
        "out": "goes out",
        "tunk": "tunks out",
        "drop": "drops with the lowest hand",
        "caught": "drops and is caught",
        "stock": "the stock is empty after",
        "turn_cap": "the turn cap ends the hand",
    }
    for h in hands_of(m):
        rec = m.settlement(h)
        frames = hand_frames(m.data, h)["frames"]
        assert [None] * (len(frames) - 1) == [f["settlement"] for f in frames[:-1]]
        last = frames[-1]
        lines = last["settlement"]
        assert endings[rec["termination"]] in lines[0]
        if rec["ender"] is not None:
            assert lines[0].startswith(names[rec["ender"]]) or names[rec["ender"]] in lines[0]
        net = ", ".join(f"{names[s]} {d:+d}" for s, d in enumerate(rec["deltas"]) if d)
        assert f"net: {net or 'no change'}" in lines
        banks = ", ".join(f"{names[s]} {b}" for s, b in enumerate(rec["bankrolls"]))
        assert f"bankrolls: {banks}" in lines
        assert rec["bankrolls"] == last["bankrolls"]
        assert rec["carried"] == last["pots"]
        assert (None, None) == (last["to_act"], last["phase"])
        assert m.deal(h)["shows"] == last["shows"]


def test_a_hand_ended_at_the_deal_has_one_frame(fifty: Played) -> None:
    """R-FIFTY-CHECK: a hand dealt 50 has one frame, with the dealt hands and the settlement.

    The timeline counts no step for it.
    """
    got = hand_frames(fifty.data, 1)
    assert 1 == len(got["frames"])
    assert "holds 49/50" in got["frames"][0]["settlement"][0]
    assert 0 == match_timeline(fifty.data)["hands"][0]["steps"]


@pytest.mark.parametrize("name", ["match", "short"])
def test_timeline_bankrolls_are_the_settlement_records(
    name: str, request: pytest.FixtureRequest
) -> None:
    """The timeline's hands and result are the settlement and result records'.

    Per hand: dealer, flip card, steps, bankrolls after and deltas; the bankrolls before a
    hand are those after the previous one.
    """
    m: Played = request.getfixturevalue(name)
    t = match_timeline(m.data)
    assert len(m.of("settlement")) == len(t["hands"])
    before = m.of("header")[0]["bankrolls"]
    for row in t["hands"]:
        rec = m.settlement(row["hand"])
        assert rec["bankrolls"] == row["bankrolls_after"]
        assert rec["deltas"] == row["deltas"]
        assert (rec["dealer"], rec["flip_card"]) == (row["dealer"], row["flip_card"])
        assert len(m.actions(row["hand"])) == row["steps"]
        assert before == row["bankrolls_before"]
        assert row["ending"] == row["settlement"][0]
        before = row["bankrolls_after"]
    (result,) = m.of("result")
    assert {k: result[k] for k in ("placements", "bankrolls", "hands")} == t["result"]
    assert (4, 10) == (t["seats"], t["stake"])


def test_notes_and_faults_are_shown_cleaned(match: Played) -> None:
    """A recorded note or fault appears, cleaned, in the action of the frame it led to.

    Actions without them carry None.
    """
    notes = faults = 0
    for h in hands_of(match):
        frames = hand_frames(match.data, h)["frames"]
        for k, a in enumerate(match.actions(h)):
            shown = frames[k + 1]["action"]
            assert (clean(a["note"], 500) if "note" in a else None) == shown["note"]
            assert (clean(a["fault"], 500) if "fault" in a else None) == shown["fault"]
            notes += "note" in a
            faults += "fault" in a
    assert notes > 50 and faults > 5
    assert (
        "decision 3\\x1b]52;c;x\\x07" == hand_frames(match.data, 1)["frames"][3]["action"]["note"]
    )


def test_notes_removed_from_the_replay_are_not_shown(match: Played) -> None:
    """Notes the league removed (``filter_replay``) before calling are not shown.

    Only the kept seat's notes still show.
    """
    only_seat_0 = filter_replay(match.data, {0})
    for h in (1, 2, 20):
        noted = [
            f["action"]["seat"]
            for f in hand_frames(only_seat_0, h)["frames"][1:]
            if f["action"]["note"] is not None
        ]
        assert set(noted) <= {0}
    none = filter_replay(match.data, set())
    for h in hands_of(match):
        assert all(
            f["action"] is None or f["action"]["note"] is None
            for f in hand_frames(none, h)["frames"]
        )


def test_player_names_are_cleaned(match: Played) -> None:
    """Names with control and bidi characters come out as visible escapes, one line each."""
    players = match_timeline(match.data)["players"]
    assert [clean(n, 40) for n in NAMES] == players
    for text in [*players, *match_timeline(match.data)["hands"][0]["settlement"]]:
        assert not any(unicodedata.category(ch) in ("Cc", "Cf") for ch in text)


def test_the_timeline_returned_is_the_callers_own(match: Played) -> None:
    """Changing a returned timeline does not change the next answer (the cache is safe)."""
    t = match_timeline(match.data)
    t["hands"].clear()
    t["players"][0] = "mallory"
    again = match_timeline(match.data)
    assert 40 == len(again["hands"]) and clean(NAMES[0], 40) == again["players"][0]


@pytest.mark.parametrize("hand", [0, -1, 41, 1000])
def test_a_hand_out_of_range_raises(match: Played, hand: int) -> None:
    """Hands are 1 to the number of finished hands; any other is a ViewerError (a ValueError)."""
    with pytest.raises(
        ViewerError, match=f"hand {hand} is not in this replay: it has hands 1 to 40"
    ):
        hand_frames(match.data, hand)
    assert issubclass(NoSuchHand, ViewerError) and issubclass(ViewerError, ValueError)


@pytest.mark.parametrize(
    "data",
    [b"", b"not json\n", b"\xff\xfe", b'{"type": "action"}\n'],
    ids=["empty", "not-json", "not-utf8", "no-header"],
)
def test_unreadable_bytes_raise(data: bytes) -> None:
    """Bytes that are not a replay raise ViewerError, for the timeline and for a hand."""
    with pytest.raises(ViewerError):
        match_timeline(data)
    with pytest.raises(ViewerError):
        hand_frames(data, 1)


def test_an_action_the_rules_refuse_raises(match: Played) -> None:
    """R-DISCARD: a replay whose discard names a card the seat does not hold does not re-run."""
    lines = match.data.decode().splitlines()
    i = next(i for i, line in enumerate(lines) if '"action":"discard"' in line)
    rec = json.loads(lines[i])
    held = {
        c
        for f in hand_frames(match.data, rec["hand"])["frames"][:1]
        for c in f["hands"][rec["seat"]]
    }
    rec["cards"] = [next(c for c in ("Ac", "2c", "3c", "4c", "5c", "6c") if c not in held)]
    lines[i] = json.dumps(rec)
    with pytest.raises(ViewerError, match="does not re-run"):
        match_timeline("\n".join(lines).encode())


def test_an_unfinished_replay_shows_its_finished_hands(match: Played) -> None:
    """A replay cut during a hand (no deck recorded yet) lists only its settled hands.

    It has no result, and the unfinished hand is out of range.
    """
    lines = match.data.decode().splitlines(keepends=True)
    cut = [i for i, line in enumerate(lines) if '"type":"settlement"' in line][
        4
    ] + 2  # one action of hand 6, not its deal
    t = match_timeline("".join(lines[:cut]).encode())
    assert [1, 2, 3, 4, 5] == [row["hand"] for row in t["hands"]]
    assert t["result"] is None
    with pytest.raises(NoSuchHand):
        hand_frames("".join(lines[:cut]).encode(), 6)


def test_the_timeline_as_json_is_the_timeline(match: Played) -> None:
    """match_timeline_json (what the route sends, encoded once) decodes to match_timeline."""
    assert match_timeline(match.data) == json.loads(match_timeline_json(match.data))
    assert match_timeline_json(match.data) is match_timeline_json(match.data)
