"""Starts hidden behind play (``arena/match/_prestart.py``), with real bots over gRPC.

- a ladder starts each coming match's bots while a match plays, and starts no more bots in
  all than without prestarting; the rememberer attack still recognises no deal;
- a match takes a prestarted instance serving and past its handshake, or waits for one that
  is still starting rather than starting another;
- a prestart that fails is stopped and not tried again, and the match that needs the bot
  starts it itself and records the start fault in the bot's own words;
- closing stops prestarting at once, even during a slow start, and leaves no process.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from arena.match._hosts import BotHost
from arena.match._prestart import Prestarter
from arena.match._runner import FaultKind, MatchRecord, run_match
from arena.sandbox import ProcessSandbox
from flipflop import BotManifest, MatchConfig
from tests.arena.match.test_hosts import bot, bundled, ladder, notes, on_host

pytestmark = pytest.mark.slow


@contextlib.contextmanager
def prestarting(tmp_path: Path, limit: int) -> Iterator[tuple[ProcessSandbox, BotHost, Prestarter]]:
    """A process sandbox, a host on it and a prestarter for it, all closed afterwards."""
    box = ProcessSandbox()
    host = BotHost(box, tmp_path / "h")
    prestarter = Prestarter(host, limit=limit, handshake_s=15)
    try:
        yield box, host, prestarter
    finally:
        prestarter.close()
        host.close()
        box.close()


def play(host: BotHost, bots: list[BotManifest], tmp_path: Path) -> MatchRecord:
    """A short match for deal 0 on ``host``."""
    config = MatchConfig(seats=3, hand_cap=2)
    return run_match(
        "m0", 1, bots, config, replay_path=tmp_path / "0.jsonl", deal=0, **on_host(host, tmp_path)
    )


def test_a_ladder_starts_the_next_match_s_bots_while_one_plays(tmp_path: Path) -> None:
    """One slot, 2 groups of 3 rotations: 9 starts, 6 of them while a match played.

    Rotations 2 and 3 of the first group need new instances, prestarted while the rotation
    before plays; the second group plays on kept instances. As many starts as without
    prestarting, the same results, and the rememberer recognises no deal.
    """
    rememberer = bot(tmp_path, "rememberer")
    bots = (rememberer, bundled("random"), bundled("greedy"))
    result = ladder(tmp_path, bots, 6)

    assert 6 == result.count("ok")
    assert all(not r["faults"] for r in result.records())
    assert (9, 6) == (result.starts, result.prestarted)
    assert all(n["recognised"] == "" for ns in notes(result, "rememberer").values() for n in ns)

    control = ladder(tmp_path / "control", bots, 6, prestart=False)
    assert (9, 0) == (control.starts, control.prestarted)
    assert [r["placements"] for r in control.records()] == [
        r["placements"] for r in result.records()
    ]


def test_two_slots_prestart_every_match_but_the_first_two(tmp_path: Path) -> None:
    """League-shaped: 6 bots, each in one duplicate group of 3 rotations, on 2 slots.

    Every seat needs a new instance (18 starts, as without prestarting); only the two
    matches the slots begin with start their own, so 12 of the 18 are started ahead. Before
    the fix this pins, a slot counted its own match's prestarted instances, and each
    rotation of one deck the other's, as spare: only 6 to 9 were started ahead.
    """
    kinds = ("random", "greedy", "counter")
    bots = tuple(dataclasses.replace(bundled(kinds[i % 3]), name=f"copy{i}") for i in range(6))
    result = ladder(tmp_path, bots, 6, jobs=2)

    assert 6 == result.count("ok")
    assert all(not r["faults"] for r in result.records())
    groups = {r["group"]: set(r["bots"]) for r in result.records()}
    assert 2 == len(groups) and not set.intersection(*groups.values())  # one group each
    assert (18, 12) == (result.starts, result.prestarted)

    control = ladder(tmp_path / "control", bots, 6, jobs=2, prestart=False)
    assert (18, 0) == (control.starts, control.prestarted)


def test_rotations_of_one_deck_are_prepared_an_instance_each(tmp_path: Path) -> None:
    """Two rotations of one deal need an instance each; a kept one counts for deals it missed.

    One that saw deal 0 plays no rotation of it, but counts for deal 1.
    """
    bots = [bundled("random")]
    with prestarting(tmp_path, limit=4) as (_, host, prestarter):
        assert 2 == prestarter.prepare([(bots, 0), (bots, 0)])
        assert 0 == prestarter.prepare([(bots, 0), (bots, 0)])  # both already coming
        assert 1 == prestarter.prepare([(bots, 0), (bots, 0), (bots, 0)])  # a third rotation
        deadline = time.monotonic() + 120
        while host.idle < 3:
            assert time.monotonic() < deadline, "the prestarted bots never served"
            time.sleep(0.05)
        taken = host.take(bots[0], 0, "m0-s0")  # seated for deal 0 (as a match would)
        host.give_back(taken, tmp_path / "m0.log", keep=True)
        assert [frozenset({0})] + [frozenset()] * 2 == sorted(host.spare(bots[0]), key=len)[::-1]
        # deal 0: the two unseated ones, a third seat needs a start; deal 1: all three fit.
        assert 1 == prestarter.prepare([(bots, 0), (bots, 0), (bots, 0)])
        assert 0 == prestarter.prepare([(bots, 1), (bots, 1), (bots, 1), (bots, 0)])


def test_a_match_takes_prestarted_instances_serving(tmp_path: Path) -> None:
    """Prestarted, they wait idle, handshaken and unseated; the match seats them: no new start."""
    bots = [bundled("random"), bundled("greedy"), bundled("counter")]
    with prestarting(tmp_path, limit=3) as (_, host, prestarter):
        assert 3 == prestarter.prepare([(bots, 0)])
        assert 0 == prestarter.prepare([(bots, 0)])  # already coming: nothing more
        deadline = time.monotonic() + 120
        while host.idle < 3:
            assert time.monotonic() < deadline, "the prestarted bots never served"
            time.sleep(0.05)
        assert all(s.identity is not None and s.matches == 0 for s in host._idle)
        assert 3 == host.unused
        record = play(host, bots, tmp_path)
        assert not record.faults
        assert 3 == host.starts
        assert 0 == host.unused
        assert 3 == host.idle  # kept after the match, seated once each
        assert all(s.matches == 1 and s.seen == {0} for s in host._idle)


def test_a_match_waits_for_an_instance_still_starting(tmp_path: Path) -> None:
    """A bot that takes 2 s to serve, prestarted just before its match: one start, no fault."""
    slow = bot(tmp_path, "nostart", mode="slow", seconds=2)
    bots = [slow, bundled("random"), bundled("greedy")]
    with prestarting(tmp_path, limit=3) as (_, host, prestarter):
        assert 1 == prestarter.prepare([([slow], 0)])
        record = play(host, bots, tmp_path)
        assert not record.faults
        assert 3 == host.starts  # the slow one once, prestarted and waited for
        assert 1 == prestarter.started


def test_a_failed_prestart_leaves_the_fault_to_its_match(tmp_path: Path) -> None:
    """It exits while prestarting: stopped, forgotten, not tried again; its match says why."""
    broken = bot(tmp_path, "nostart", mode="exit")
    with prestarting(tmp_path, limit=3) as (_, host, prestarter):
        assert 1 == prestarter.prepare([([broken], 0)])
        deadline = time.monotonic() + 120
        while host.unused:
            assert time.monotonic() < deadline, "the failed prestart was never settled"
            time.sleep(0.05)
        assert 0 == host.idle
        assert 0 == prestarter.prepare([([broken], 1)])  # not tried again
        record = play(host, [broken, bundled("random"), bundled("greedy")], tmp_path)
        [fault] = record.faults
        assert (fault.seat, fault.kind, fault.forfeited) == (0, FaultKind.START, True)
        assert "exited while starting" in fault.detail
        assert 4 == host.starts  # the failed prestart, then the match's own three


def test_closing_stops_a_slow_prestart_at_once(tmp_path: Path) -> None:
    """A bot that would take 60 s to serve: closing does not wait for it, and stops it."""
    slow = bot(tmp_path, "nostart", mode="slow", seconds=60)
    with prestarting(tmp_path, limit=1) as (box, host, prestarter):
        assert 1 == prestarter.prepare([([slow], 0)])
        deadline = time.monotonic() + 60
        while not box._running:  # its process is up, not yet serving
            assert time.monotonic() < deadline, "the prestart never began"
            time.sleep(0.01)
        [running] = box._running
        began = time.monotonic()
        prestarter.close()
        assert time.monotonic() - began < 30  # far less than the bot's 60 s; generous for load
        assert running.proc.poll() is not None  # stopped, not left to serve
        assert not box._running
        assert (0, 0) == (host.unused, host.idle)
        assert 0 == prestarter.prepare([([slow], 1)])  # closed: nothing more
