"""The in-process harness: notes, the replay it writes, and the default play for a silent seat.

The default is the one the runner and the conformance check give too.
"""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from flipflop import (
    DECK,
    DRAW_DISCARD,
    DRAW_STOCK,
    Action,
    Bot,
    Card,
    ConfigError,
    IllegalActionError,
    MatchConfig,
    Observation,
    Phase,
    default_action,
    play_default,
    play_match,
    read_replay,
    replay,
)

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


LONG_NOTE = "é" * 700
"""1400 bytes of UTF-8: over the 1024 a note keeps."""


class Noting(Bot):
    """The base bot's play, with a note on every decision (a long one on each draw)."""

    name = "noting"

    # Bot's signatures leave the note pair out, so that a subclass's super() call stays plain.
    def start_turn(  # type: ignore[override]
        self, obs: Observation, legal: Sequence[Action]
    ) -> tuple[Action, str]:
        """The base draw, with a note too long to keep whole."""
        return super().start_turn(obs, legal), LONG_NOTE

    def play_turn(  # type: ignore[override]
        self, obs: Observation, legal: Sequence[Action]
    ) -> tuple[Sequence[Action], str]:
        """The base discard, with the hand's number as its note."""
        return super().play_turn(obs, legal), f"hand {obs.hand_number}"


class Refusing(Bot):
    """Discards a card it does not hold on its first turn, then plays as the base bot."""

    name = "refusing"
    wrong = True

    def play_turn(self, obs: Observation, legal: Sequence[Action]) -> Sequence[Action]:
        """A card not held the first time; the base discard after."""
        if self.wrong:
            self.wrong = False
            held = set(obs.hand)
            return [Action.discard(next(c for c in DECK if c not in held))]
        return super().play_turn(obs, legal)


CONFIG = MatchConfig(seats=3, hand_cap=6)


def test_notes_are_taken_in_the_harness_as_over_the_wire() -> None:
    """A bot that returns ``(action, "note")`` plays in ``play_match`` as it would without notes.

    The harness refused the documented pair (MalformedActionError) before.
    """
    noted = play_match([Noting(), Bot(), Noting()], CONFIG, 5)
    plain = play_match([Bot(), Bot(), Bot()], CONFIG, 5)
    assert plain.log == noted.log
    assert plain.result == noted.result


def test_the_harness_writes_a_replay_that_replays(tmp_path: Path) -> None:
    """``replay=PATH``: the match's replay, checked by replaying it; notes cut, names, times."""
    path = tmp_path / "m.jsonl"
    state = play_match(
        [Noting(), Bot(), Noting()], CONFIG, 5, players=("ann", "bo", "cy"), replay=path
    )
    rep = read_replay(path)
    assert ["ann", "bo", "cy"] == rep.players
    assert {"match_id": "local"} == rep.meta
    assert state.result == replay(rep, check=True).result
    assert len(state.log) == len(rep.actions)
    notes = [r.get("note") for r in rep.actions if r["seat"] != 1]
    draws = [r for r in rep.actions if r["seat"] != 1 and r["action"].startswith("draw")]
    assert draws and all(r["note"] == LONG_NOTE[:512] for r in draws)  # 512 two-byte characters
    assert "hand 1" in notes
    assert not any("note" in r for r in rep.actions if r["seat"] == 1)
    assert all(r["ms"] >= 0 for r in draws)
    assert not any("fault" in r for r in rep.actions)


def test_a_refused_decision_is_replaced_and_written_as_a_fault() -> None:
    """``strict=False``: the runner's default play replaces it, and the replay names the fault."""
    out = io.StringIO()
    with pytest.raises(IllegalActionError, match=r"seat 0 \(refusing\), play_turn"):
        play_match([Refusing(), Bot(), Bot()], CONFIG, 5)
    state = play_match([Refusing(), Bot(), Bot()], CONFIG, 5, strict=False, replay=out)
    records = [json.loads(line) for line in out.getvalue().splitlines()]
    faults = [r for r in records if r.get("fault")]
    assert 1 == len(faults)
    assert 0 == faults[0]["seat"] and "discard" == faults[0]["action"]
    assert state.result is not None and records[-1]["type"] == "result"


def test_players_must_name_every_seat() -> None:
    """One display name per seat, or a ConfigError."""
    with pytest.raises(ConfigError, match="2 player names for 3 seats"):
        play_match([Bot(), Bot(), Bot()], CONFIG, 5, players=("a", "b"))
