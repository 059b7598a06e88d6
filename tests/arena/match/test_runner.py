"""The match runner against misbehaving bots: the match always completes, the fault is recorded.

Every bot here is a real bot process (process sandbox) served over real gRPC on a unix
socket; the faulty ones are written into tmp_path by the ``make_bot`` fixture.
"""

from __future__ import annotations

import json
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from arena.match._runner import FaultKind, MatchRecord, TimeControl, run_match
from arena.sandbox import ProcessSandbox, SandboxLimits
from flipflop import MatchConfig, read_manifest, read_replay, replay

ROOT = Path(__file__).resolve().parents[3]
CONFIG = MatchConfig(seats=3, stake=10, bankroll=100, hand_cap=6)

_TEMPLATE = """
import os, sys, time
from flipflop import Bot, DRAW_STOCK, Action, ActionKind, serve

calls = 0

class Faulty(Bot):
    name = "{name}"

    def start_turn(self, obs, legal):
        global calls
        calls += 1
{start}
        return DRAW_STOCK

    def play_turn(self, obs, legal):
{play}
        return super().play_turn(obs, legal)

{prelude}
serve(Faulty())
"""


@pytest.fixture
def make_bot(tmp_path: Path) -> Callable[..., Path]:
    """Write a bot directory whose start_turn/play_turn bodies misbehave as told."""

    def make(name: str, start: str = "", play: str = "", prelude: str = "") -> Path:
        d = tmp_path / "bots" / name
        d.mkdir(parents=True)
        body = _TEMPLATE.format(
            name=name,
            start=textwrap.indent(textwrap.dedent(start), " " * 8) or "",
            play=textwrap.indent(textwrap.dedent(play), " " * 8) or "",
            prelude=textwrap.dedent(prelude),
        )
        (d / "bot.py").write_text(body)
        (d / "bot.toml").write_text(f'name = "{name}"\ncommand = ["python3", "bot.py"]\n')
        return d

    return make


def _play(
    tmp_path: Path,
    faulty: Path,
    clock: TimeControl | None = None,
    limits: SandboxLimits | None = None,
) -> MatchRecord:
    bots = [read_manifest(faulty), read_manifest(ROOT / "bots" / "greedy")]
    bots.append(read_manifest(ROOT / "bots" / "random"))
    box = ProcessSandbox(limits)
    try:
        return run_match(
            "m00000",
            11,
            bots,
            CONFIG,
            sandbox=box,
            workdir=tmp_path / "w",
            replay_path=tmp_path / "m00000.jsonl",
            logs_dir=tmp_path / "logs",
            clock=clock or TimeControl(decision_ms=2000, time_bank_ms=2000, notify_ms=10_000),
        )
    finally:
        box.close()


def _finished(rec: MatchRecord, tmp_path: Path) -> None:
    """The match completed and its replay re-runs to the same result."""
    assert 3 == len(rec.placements)
    rep = read_replay(tmp_path / "m00000.jsonl")
    state = replay(rep)
    assert state.result is not None
    assert rec.placements == state.result.placements


def test_a_well_behaved_match_has_no_faults(tmp_path: Path) -> None:
    """Three bundled bots: the match finishes with no fault and every seat decided."""
    rec = _play(tmp_path, ROOT / "bots" / "counter")
    _finished(rec, tmp_path)
    assert () == rec.faults
    assert all(s.decisions > 0 for s in rec.seats)


@pytest.mark.slow
def test_a_bot_sleeping_past_its_deadline_is_struck_then_forfeited(
    tmp_path: Path, make_bot: Callable[..., Path]
) -> None:
    """Sleeping past decision + bank is a TIMEOUT; three strikes forfeit the seat."""
    bot = make_bot("sleeper", start="time.sleep(600)")
    # Deadlines loose enough that the well-behaved seats never come near them on a busy machine.
    clock = TimeControl(decision_ms=1500, time_bank_ms=1000, max_strikes=3, notify_ms=10_000)
    rec = _play(tmp_path, bot, clock)
    _finished(rec, tmp_path)
    kinds = [f.kind for f in rec.faults if f.seat == 0]
    assert [FaultKind.TIMEOUT] * 3 == kinds
    assert all(f.bot == "sleeper" for f in rec.faults)
    assert rec.seats[0].forfeited
    assert not rec.seats[1].forfeited


def test_a_bot_that_exits_mid_match_is_a_crash(
    tmp_path: Path, make_bot: Callable[..., Path]
) -> None:
    """A bot process that dies forfeits its seat at once; the match plays on without it."""
    bot = make_bot("quitter", start="if calls == 3: os._exit(3)")
    rec = _play(tmp_path, bot)
    _finished(rec, tmp_path)
    assert [FaultKind.CRASH] == [f.kind for f in rec.faults]
    assert 0 == rec.faults[0].seat
    assert rec.faults[0].forfeited


def test_a_garbage_answer_is_a_protocol_fault(
    tmp_path: Path, make_bot: Callable[..., Path]
) -> None:
    """Two actions where the start of a turn takes one: PROTOCOL, default played, strike."""
    bot = make_bot("chatty", start="if calls == 2: return [DRAW_STOCK, DRAW_STOCK]")
    rec = _play(tmp_path, bot)
    _finished(rec, tmp_path)
    assert [FaultKind.PROTOCOL] == [f.kind for f in rec.faults]
    assert not rec.seats[0].forfeited  # one strike of three


def test_an_illegal_discard_is_an_illegal_fault(
    tmp_path: Path, make_bot: Callable[..., Path]
) -> None:
    """Discarding a card not held is ILLEGAL; the runner discards for the bot and goes on."""
    bot = make_bot(
        "cheat",
        play="""
        mine = {c.index for c in obs.hand}
        other = next(c for c in __import__("flipflop").DECK if c.index not in mine)
        if calls == 1:
            return [Action.discard(other)]
        """,
    )
    rec = _play(tmp_path, bot)
    _finished(rec, tmp_path)
    assert [FaultKind.ILLEGAL] == [f.kind for f in rec.faults]
    assert "not in seat 0's hand" in rec.faults[0].detail
    rep = read_replay(tmp_path / "m00000.jsonl")
    assert any("illegal" in a.get("fault", "") for a in rep.actions)


def test_a_bot_raising_is_a_protocol_fault_with_its_message(
    tmp_path: Path, make_bot: Callable[..., Path]
) -> None:
    """An exception inside the bot reaches the record as a PROTOCOL fault naming it."""
    bot = make_bot("buggy", start="if calls == 1: raise RuntimeError('oops in my bot')")
    rec = _play(tmp_path, bot)
    _finished(rec, tmp_path)
    assert [FaultKind.PROTOCOL] == [f.kind for f in rec.faults]
    assert "oops in my bot" in rec.faults[0].detail


def test_a_stderr_flood_is_capped_and_counted(
    tmp_path: Path, make_bot: Callable[..., Path]
) -> None:
    """8 MiB written to stderr: the match is fine, the log keeps the cap, the rest is counted."""
    bot = make_bot(
        "flooder", start="if calls == 1: sys.stderr.write('x' * (8 << 20)); sys.stderr.flush()"
    )
    limits = SandboxLimits(log_bytes=64 * 1024)
    rec = _play(tmp_path, bot, limits=limits)
    _finished(rec, tmp_path)
    assert () == rec.faults
    log = Path(rec.seats[0].log)
    assert log.stat().st_size < 64 * 1024 + 200
    assert rec.seats[0].dropped_log_bytes >= (8 << 20) - 64 * 1024


def test_a_bot_that_never_gets_ready_forfeits_at_start(
    tmp_path: Path, make_bot: Callable[..., Path]
) -> None:
    """A bot that never serves: START fault, seat forfeited, the others still play it out."""
    bot = make_bot("sloth", prelude="time.sleep(60)")
    # Its own budget, 1.5 s; the others keep the default, however slow a loaded machine is.
    with (bot / "bot.toml").open("a", encoding="utf-8") as f:
        f.write("start_timeout_s = 1.5\n")
    rec = _play(tmp_path, bot)
    _finished(rec, tmp_path)
    assert [FaultKind.START] == [f.kind for f in rec.faults]
    assert rec.seats[0].forfeited
    assert 0 == rec.seats[0].decisions


def test_debug_notes_and_timings_land_in_the_replay(
    tmp_path: Path, make_bot: Callable[..., Path]
) -> None:
    """A note returned with a decision is kept next to the action, with its time in ms."""
    bot = make_bot("noter", start="return (DRAW_STOCK, f'call {calls}')")
    _play(tmp_path, bot)
    lines = [json.loads(x) for x in (tmp_path / "m00000.jsonl").read_text().splitlines()]
    noted = [x for x in lines if x.get("type") == "action" and x.get("seat") == 0 and "note" in x]
    assert "call 1" == noted[0]["note"]
    assert all("ms" in x for x in noted)


def test_a_bot_that_exits_at_start_fails_fast(
    tmp_path: Path, make_bot: Callable[..., Path]
) -> None:
    """A bot that dies before serving is a START fault at once, not after the start timeout."""
    bot = make_bot("dud", prelude="sys.exit(2)")
    t0 = time.monotonic()
    rec = _play(tmp_path, bot, limits=SandboxLimits(start_timeout_s=60))
    took = time.monotonic() - t0
    _finished(rec, tmp_path)
    assert [FaultKind.START] == [f.kind for f in rec.faults]
    assert "exited while starting" in rec.faults[0].detail
    assert took < 30  # start and the whole match: far below the 60 s it would have waited


@pytest.mark.slow
def test_a_bot_slow_to_hear_of_a_hand_is_struck_and_the_others_hear_it(
    make_bot: Callable[..., Path], tmp_path: Path
) -> None:
    """HandEnded past its deadline: a timeout strike per hand, then forfeit; the match ends.

    The seats hear of each hand at the same time (the runner's notices go out in parallel):
    the slow one is struck, and the others hear every hand without a fault.
    """
    faulty = make_bot(
        "deaf",
        prelude="""
        def slow_hand_ended(self, result):
            time.sleep(8)
        Faulty.hand_ended = slow_hand_ended
        """,
    )
    # A notice's budget is 2 s (the bank: under notify_ms), its wall-clock backstop
    # 3 x 2 s + 0.25 s: ample for the honest bots on a loaded machine, below 8 s.
    clock = TimeControl(decision_ms=2000, time_bank_ms=2000, notify_ms=2500)
    rec = _play(tmp_path, faulty, clock=clock)

    _finished(rec, tmp_path)
    faults = [f for f in rec.faults if f.seat == 0]
    assert [FaultKind.TIMEOUT] * 3 == [f.kind for f in faults]
    assert all(f.detail.startswith("hand_ended:") for f in faults)
    assert faults[-1].forfeited
    assert [] == [f for f in rec.faults if f.seat != 0]  # the others heard every hand


@pytest.mark.slow
def test_a_notice_held_up_without_cpu_is_waited_for_as_long_as_the_bank_allows(
    make_bot: Callable[..., Path], tmp_path: Path
) -> None:
    """A HandEnded held up 3 s, using no CPU, past its budget's backstop but not the bank's.

    What a loaded host does to an honest bot (CI: a Go template's HandEnded under gVisor went
    unanswered for the 6.25 s backstop of its 2 s budget, with 30 s of bank left): the bot
    uses no CPU, so, as for a decision, the arena waits the backstop of the bank left
    (3 x 4 s + 0.25 s here), not of the notice's 200 ms budget (0.85 s), and strikes nothing.
    """
    stalled = make_bot(
        "stalled",
        prelude="""
        import sys
        stalls = []
        def stalled_hand_ended(self, result):
            if not stalls:
                stalls.append(1)
                time.sleep(3)
                print("held up 3 s on the first HandEnded", file=sys.stderr, flush=True)
        Faulty.hand_ended = stalled_hand_ended
        """,
    )
    clock = TimeControl(decision_ms=2000, time_bank_ms=4000, notify_ms=200)
    rec = _play(tmp_path, stalled, clock=clock)

    _finished(rec, tmp_path)
    assert () == rec.faults
    assert rec.hands > 1  # so the stalled notice was heard before the match went on
    assert "held up 3 s on the first HandEnded" in Path(rec.seats[0].log).read_text()


@pytest.mark.slow
def test_slow_play_on_notices_is_bounded_by_the_match(
    make_bot: Callable[..., Path], tmp_path: Path
) -> None:
    """Slow play on notices (issue 15, finding 4): 1 s a HandEnded, under a 5 s notice budget.

    Each notice is in time, and where the bot's CPU time is known sleeping costs it none, as
    on decisions; the per-match wall-clock cap counts every notice's wait, so the seat is
    forfeited (a ``timeout``) once it has kept the arena waiting past the cap (here 2.5 s,
    three notices), not at the end of the match. Without CPU time, each notice's wall time is
    charged to the bank, which strikes it first.
    """
    faulty = make_bot(
        "dawdler",
        prelude="""
        def slow_hand_ended(self, result):
            time.sleep(1.0)
        Faulty.hand_ended = slow_hand_ended
        """,
    )
    clock = TimeControl(
        decision_ms=2000, time_bank_ms=2500, max_strikes=3, notify_ms=5000, wall_ms=2500
    )
    rec = _play(tmp_path, faulty, clock=clock)

    _finished(rec, tmp_path)
    faults = [f for f in rec.faults if f.seat == 0]
    assert faults and all(f.kind is FaultKind.TIMEOUT for f in faults)
    assert faults[-1].forfeited
    assert faults[-1].hand <= 4, faults  # forfeited within the match, after 3 or 4 notices
    assert [] == [f for f in rec.faults if f.seat != 0]


def test_the_arena_names_itself_in_the_handshake(tmp_path: Path) -> None:
    """The handshake's ``arena_version`` is the arena's version (issue 14: it was empty).

    The SDK's server logs it, so the seat's log shows which arena it played.
    """
    from arena import __version__

    rec = _play(tmp_path, ROOT / "bots" / "counter")

    log = Path(rec.seats[0].log).read_text(encoding="utf-8")
    assert f"handshake from arena {__version__} (protocol" in log
