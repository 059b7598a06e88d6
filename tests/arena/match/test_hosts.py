"""Bots that stay up across a ladder's matches (``arena/match/_hosts.py``), in real ladders.

Real bots in the process sandbox over gRPC; each proves one promise of the kept instances:

- a bot plays all its matches of a slot on one process (it counts them), so a ladder starts
  each bot about once per match of it played at once, not once per match, whatever the plan:
  32 bots in 12 matches of 3 seats start at most 32 times per slot;
- a bot that crashes mid-match is charged with the crash in that match only, and a fresh
  process plays its next match;
- the attack: a bot that remembers every deal its process has seen never sees a deal twice,
  because two rotations of one duplicate group never share a process — and the control (the
  same ladder with that rule switched off) shows that it would recognise them;
- an instance that has used half its CPU-time limit is replaced before its next match;
- each match's log holds what the bot wrote during that match.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import threading
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

import arena.executors._jobs
import arena.sandbox._process
from arena.executors import PlannedMatch
from arena.ladder._ladder import LadderResult, LadderSpec, run_ladder
from arena.match._hosts import BotHost
from arena.match._runner import MatchCancelled, TimeControl, run_match
from arena.sandbox import ProcessSandbox, SandboxLimits
from flipflop import BotManifest, MatchConfig, read_manifest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[3]
ADVERSARIES = ROOT / "tests" / "arena" / "sandbox" / "adversaries"


def bot(where: Path, name: str, **config: Any) -> BotManifest:
    """A copy of ``adversaries/<name>``, with ``attack.json`` holding ``config`` if given."""
    target = where / name
    shutil.copytree(ADVERSARIES / name, target, ignore=shutil.ignore_patterns("__pycache__"))
    if config:
        (target / "attack.json").write_text(json.dumps(config), encoding="utf-8")
    return read_manifest(target)


def bundled(name: str) -> BotManifest:
    """A bundled bot from ``bots/``."""
    return read_manifest(ROOT / "bots" / name)


def notes(result: LadderResult, name: str) -> dict[str, list[dict[str, Any]]]:
    """Per match id, the decoded notes bot ``name`` left on its decisions, in order."""
    out: dict[str, list[dict[str, Any]]] = {}
    for rec in result.records():
        [seat] = [i for i, b in enumerate(rec["bots"]) if b == name]
        lines = Path(rec["replay"]).read_text(encoding="utf-8").splitlines()
        out[rec["match_id"]] = [
            json.loads(r["note"])
            for r in map(json.loads, lines)
            if r.get("seat") == seat and r.get("note")
        ]
    return out


def ladder(
    tmp_path: Path, bots: tuple[BotManifest, ...], matches: int, **options: Any
) -> LadderResult:
    """Run a quick 3-seat ladder in the process sandbox, one match at a time by default."""
    jobs = options.pop("jobs", 1)
    limits = options.pop("limits", None)
    prestart = options.pop("prestart", True)
    # Generous: on a loaded machine a start or a notice may take seconds (the stayer's CPU
    # burn in StartMatch among them), and these tests are about instances, not deadlines.
    options.setdefault("clock", TimeControl(decision_ms=5000, notify_ms=15_000))
    spec = LadderSpec(bots=bots, matches=matches, table_size=3, seed=11, hand_cap=8, **options)
    result = run_ladder(
        spec, tmp_path / "out", sandbox=ProcessSandbox(limits), jobs=jobs, prestart=prestart
    )
    assert not result.interrupted
    return result


def test_a_bot_plays_every_match_of_its_slot_on_one_process(tmp_path: Path) -> None:
    """Without duplicate deals: 5 matches, one process per bot, the count goes 1..5."""
    stayer = bot(tmp_path, "stayer")
    result = ladder(tmp_path, (stayer, bundled("random"), bundled("greedy")), 5, duplicate=False)

    assert 5 == result.count("ok")
    assert 3 == result.starts  # one per bot, not 15
    seen = notes(result, "stayer")
    by_match = [seen[m] for m in sorted(seen)]
    assert 1 == len({n["pid"] for ns in by_match for n in ns})
    assert [1, 2, 3, 4, 5] == [ns[0]["n"] for ns in by_match]
    assert all(not r["faults"] for r in result.records())


def test_each_match_log_holds_what_the_bot_wrote_during_it(tmp_path: Path) -> None:
    """The kept bot's one log is cut per match: each match's log names that match."""
    stayer = bot(tmp_path, "stayer")
    result = ladder(tmp_path, (stayer, bundled("random"), bundled("greedy")), 3, duplicate=False)

    for k, rec in enumerate(result.records(), start=1):
        [seat] = [s for s in rec["seats"] if s["bot"] == "stayer"]
        text = Path(seat["log"]).read_text(encoding="utf-8")
        assert f"match {k} on pid" in text
        assert f": {rec['match_id']}" in text
        assert "match " + str(k + 1) + " on pid" not in text


def test_a_crash_is_charged_to_its_match_and_the_next_match_gets_a_fresh_process(
    tmp_path: Path,
) -> None:
    """It dies in the 2nd match of every process: m1 and m3 get the crash, m2 plays clean."""
    stayer = bot(tmp_path, "stayer", crash_in_match=2)
    result = ladder(tmp_path, (stayer, bundled("random"), bundled("greedy")), 4, duplicate=False)

    records = result.records()
    assert 4 == result.count("ok")  # a crash is the bot's fault, not a void match
    crashed = {
        r["match_id"]: [f["kind"] for f in r["faults"] if f["bot"] == "stayer"] for r in records
    }
    assert {"m00000": [], "m00001": ["crash"], "m00002": [], "m00003": ["crash"]} == crashed
    seen = notes(result, "stayer")
    assert seen["m00000"][0]["pid"] == seen["m00001"][0]["pid"]
    assert seen["m00001"][0]["pid"] != seen["m00002"][0]["pid"]
    assert [1, 2, 1, 2] == [seen[m][0]["n"] for m in sorted(seen)]
    assert 4 == result.starts  # random and greedy once, stayer twice
    [m1] = [s for s in records[1]["seats"] if s["bot"] == "stayer"]
    assert "CRASHING NOW" in Path(m1["log"]).read_text(encoding="utf-8")
    assert all(s["started"] for r in records for s in r["seats"])


def test_a_remembered_deal_never_comes_back(tmp_path: Path) -> None:
    """The attack: with duplicate deals, no process sees two rotations of one group.

    2 groups of 3 rotations, one after the other: each bot needs a process per rotation of
    the first group (9 starts), each plays one match of each group, and the rememberer
    recognises nothing.
    """
    rememberer = bot(tmp_path, "rememberer")
    result = ladder(tmp_path, (rememberer, bundled("random"), bundled("greedy")), 6)

    assert 6 == result.count("ok")
    assert all(not r["faults"] for r in result.records())
    assert 9 == result.starts
    seen = notes(result, "rememberer")
    assert all(n["recognised"] == "" for ns in seen.values() for n in ns)
    assert Counter(ns[0]["pid"] for ns in seen.values()) == Counter(
        {pid: 2 for pid in {ns[0]["pid"] for ns in seen.values()}}
    )  # reused: each process played two matches, one of each group


def test_control_a_process_shared_within_a_group_recognises_the_deal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The control: let every match name a deal of its own and the rememberer recognises deals.

    So the test above can fail: its detector works, and only the deal rule stops it.
    """
    monkeypatch.setattr(
        arena.executors._jobs.Job, "deal", property(lambda self: self.planned.index)
    )
    rememberer = bot(tmp_path, "rememberer")
    result = ladder(tmp_path, (rememberer, bundled("random"), bundled("greedy")), 6)

    assert 3 == result.starts
    group = {r["match_id"]: r["group"] for r in result.records()}
    recognised = {
        m: n["recognised"]
        for m, ns in notes(result, "rememberer").items()
        for n in ns
        if n["recognised"]
    }
    assert len(recognised) >= 3  # of the 4 later rotations; a match may end in 2 hands
    assert all(group[m] == group[e] for m, e in recognised.items())


def _rotations(plan: Sequence[PlannedMatch]) -> dict[str, Counter[int]]:
    """For each bot of ``plan``, how many rotations of each duplicate group it plays."""
    rotations: dict[str, Counter[int]] = {}
    for p in plan:
        for b in p.bots:
            rotations.setdefault(b, Counter())[p.group] += 1
    return rotations


def test_many_bots_are_started_no_more_than_deal_secrecy_requires(tmp_path: Path) -> None:
    """16 bots in 24 matches of 3 seats: starts are the fewest that keep every deal secret.

    A bot plays every rotation of its group, and an instance never plays two rotations of
    one deck: so a bot needs one instance per rotation of the group it plays most in, and
    gets no more, however many bots and groups there are (48 here, where the 72 seats once
    started 72): the rotations of its later groups meet its kept instances.
    """
    bots = tuple(
        dataclasses.replace(bundled(("random", "greedy", "counter")[i % 3]), name=f"bot{i}")
        for i in range(16)
    )
    spec = LadderSpec(bots=bots, matches=24, table_size=3, seed=3, hand_cap=4)
    plan = spec.plan(b"k" * 32)
    rotations = _rotations(plan)
    fewest = sum(max(groups.values()) for groups in rotations.values())
    assert any(len(groups) > 1 for groups in rotations.values()), "no bot plays two groups"
    result = run_ladder(spec, tmp_path / "out", sandbox=ProcessSandbox(), jobs=1)
    assert 24 == result.count("ok")
    assert fewest == result.starts
    assert fewest < sum(len(p.bots) for p in plan)


def test_thirty_two_bots_in_twelve_matches_start_at_most_thirty_two_per_slot(
    tmp_path: Path,
) -> None:
    """Issue 27's plan: 32 bots in 12 matches of 3 seats, 2 slots: at most 32 x 2 starts.

    More bots than seats, so no bot plays two groups and nothing can be reused across
    groups: each seated bot gets one instance per rotation of its group (the fewest that
    keep its deal secret), 36 for the 36 seats here, and the bound holds with room.
    """
    bots = tuple(dataclasses.replace(bundled("random"), name=f"bot{i:02d}") for i in range(32))
    spec = LadderSpec(bots=bots, matches=12, table_size=3, seed=27, hand_cap=4)
    plan = spec.plan(b"k" * 32)
    fewest = sum(max(groups.values()) for groups in _rotations(plan).values())
    result = run_ladder(spec, tmp_path / "out", sandbox=ProcessSandbox(), jobs=2)
    assert 12 == result.count("ok")
    assert fewest == result.starts
    assert result.starts <= 32 * 2


def on_host(host: BotHost, tmp_path: Path) -> dict[str, Any]:
    """``run_match``'s arguments for a match played on ``host`` (and its sandbox)."""
    return {
        "sandbox": host.sandbox,
        "workdir": tmp_path / "w",
        "logs_dir": tmp_path / "logs",
        "host": host,
        "clock": TimeControl(decision_ms=5000, notify_ms=15_000),
    }


def test_idle_instances_are_bounded_and_reclaimed(tmp_path: Path) -> None:
    """Of a match's 3 instances 2 are kept (``max_idle=2``); stale ones are stopped.

    Past ``idle_s``, the next match stops the idle instances and starts its own.
    """
    bots = [bundled("random"), bundled("greedy"), bundled("counter")]
    box = ProcessSandbox()
    host = BotHost(box, tmp_path / "h", max_idle=2, idle_s=3600)
    common = on_host(host, tmp_path)
    try:
        run_match(
            "m0",
            1,
            bots,
            MatchConfig(seats=3, hand_cap=2),
            replay_path=tmp_path / "0.jsonl",
            deal=0,
            **common,
        )
        assert (3, 2) == (host.starts, host.idle)
        kept = [s.bot for s in host._idle]
        host.idle_s = 0.0  # every idle instance is now stale
        run_match(
            "m1",
            2,
            bots,
            MatchConfig(seats=3, hand_cap=2),
            replay_path=tmp_path / "1.jsonl",
            deal=1,
            **common,
        )
        assert all(not b.alive() for b in kept)  # stopped, not seated again
        assert 6 == host.starts
    finally:
        host.close()
        box.close()


def _state(pid: int) -> str:
    """A process's state letter (``T``: stopped by a signal)."""
    return Path(f"/proc/{pid}/stat").read_text(encoding="ascii").rpartition(")")[2].split()[0]


def test_kept_instances_are_stopped_while_idle_and_resumed_for_their_next_match(
    tmp_path: Path,
) -> None:
    """The freezer pauses idle instances (SIGSTOP in the process sandbox); a match resumes them.

    A paused bot's process is stopped (state ``T``: it cannot use CPU); the next match seats
    the same instances, which play it; closing the host stops them, paused as they are.
    """
    bots = [bundled("random"), bundled("greedy"), bundled("counter")]
    box = ProcessSandbox()
    host = BotHost(box, tmp_path / "h", pause_s=0.0)
    common = on_host(host, tmp_path)
    config = MatchConfig(seats=3, hand_cap=2)
    try:
        run_match("m0", 1, bots, config, replay_path=tmp_path / "0.jsonl", deal=0, **common)
        deadline = time.monotonic() + 60
        while not (host.idle == 3 and all(s.paused for s in host._idle)):
            assert time.monotonic() < deadline, "the freezer did not pause the kept bots"
            time.sleep(0.05)
        process_bots: list[Any] = [getattr(s.bot, "inner", s.bot) for s in host._idle]
        pids = [b.proc.pid for b in process_bots]
        assert ["T", "T", "T"] == [_state(pid) for pid in pids]
        second = run_match(
            "m1", 2, bots, config, replay_path=tmp_path / "1.jsonl", deal=1, **common
        )
        assert 3 == len(second.placements) and not second.faults
        assert 3 == host.starts  # the same three, resumed
    finally:
        host.close()
        box.close()
    assert not any(Path(f"/proc/{pid}").exists() for pid in pids)


def test_an_instance_being_paused_is_waited_for_not_started_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pause that takes a while (a container's: 30-500 ms; here 1 s) hides nothing.

    While the freezer pauses the kept instances one by one, a prestart counts them all as
    spare, and the next match takes them (waiting for a pause to end, then resuming it)
    instead of starting others. Taken off the idle list while paused, they were started
    again: 273 starts for 256 seats in a runsc ladder.
    """
    pausing = threading.Event()
    real_pause = arena.sandbox._process._ProcessBot.pause

    def slow_pause(self: Any) -> None:
        pausing.set()
        time.sleep(1.0)
        real_pause(self)

    monkeypatch.setattr(arena.sandbox._process._ProcessBot, "pause", slow_pause)
    bots = [bundled("random"), bundled("greedy"), bundled("counter")]
    box = ProcessSandbox()
    host = BotHost(box, tmp_path / "h", pause_s=3600)  # the test decides when to pause
    common = on_host(host, tmp_path)
    config = MatchConfig(seats=3, hand_cap=2)
    try:
        run_match("m0", 1, bots, config, replay_path=tmp_path / "0.jsonl", deal=0, **common)
        assert 3 == host.idle
        host.pause_s = 0.0
        freezer = threading.Thread(target=host.freeze_idle)
        freezer.start()
        assert pausing.wait(60)
        assert [[frozenset({0})]] * 3 == [host.spare(b) for b in bots]
        second = run_match(
            "m1", 2, bots, config, replay_path=tmp_path / "1.jsonl", deal=1, **common
        )
        freezer.join(60)
        assert not second.faults
        assert 3 == host.starts  # the same three, each paused or not, and resumed
        assert 3 == host.idle
    finally:
        host.close()
        box.close()


def test_an_instance_past_half_its_cpu_limit_is_replaced(tmp_path: Path) -> None:
    """A bot that burns 1.2 CPU s per match under a 2 s limit gets a new process each match."""
    stayer = bot(tmp_path, "stayer", burn_cpu_s=1.2)
    limits = SandboxLimits(cpu_seconds=2)
    result = ladder(
        tmp_path,
        (stayer, bundled("random"), bundled("greedy")),
        3,
        duplicate=False,
        limits=limits,
    )

    assert 3 == result.count("ok")
    assert all(not r["faults"] for r in result.records())  # never killed for CPU mid-match
    seen = notes(result, "stayer")
    assert 3 == len({ns[0]["pid"] for ns in seen.values()})
    assert [1, 1, 1] == [seen[m][0]["n"] for m in sorted(seen)]
    assert 5 == result.starts  # random and greedy stay up


def test_two_slots_share_the_kept_instances(tmp_path: Path) -> None:
    """``jobs=2``: at most one process per bot and match at once; every match counted once."""
    stayer = bot(tmp_path, "stayer")
    result = ladder(
        tmp_path,
        (stayer, bundled("random"), bundled("greedy")),
        6,
        duplicate=False,
        jobs=2,
    )

    assert 6 == result.count("ok")
    assert result.starts <= 6
    seen = notes(result, "stayer")
    per_pid = Counter(ns[0]["pid"] for ns in seen.values())
    assert len(per_pid) <= 2
    assert 6 == sum(per_pid.values())
    for pid, count in per_pid.items():  # each process counted its own matches 1..k
        assert sorted(ns[0]["n"] for ns in seen.values() if ns[0]["pid"] == pid) == list(
            range(1, count + 1)
        )


def test_a_unary_only_bot_plays_a_ladder_next_to_streaming_ones(tmp_path: Path) -> None:
    """A protocol 1.1 bot without DecideStream (grpcio alone) and two SDK bots on 1.2.

    Every match counts with no fault; the SDK bots' decisions went on a stream, the unary
    bot's one Decide call each, and each bot kept one process for the whole ladder.
    """
    unary = read_manifest(ROOT / "tests" / "sdk" / "bots" / "unaryonly")
    result = ladder(tmp_path, (unary, bundled("random"), bundled("greedy")), 4, duplicate=False)

    assert 4 == result.count("ok")
    assert 3 == result.starts
    for rec in result.records():
        assert [] == rec["faults"]
        seats = {s["bot"]: s for s in rec["seats"]}
        assert ("1.1", False) == (seats["unaryonly"]["protocol"], seats["unaryonly"]["streamed"])
        for name in ("random", "greedy"):
            assert ("1.2", True) == (seats[name]["protocol"], seats[name]["streamed"])
        assert all(s["decisions"] > 0 for s in seats.values())


def test_only_instances_that_heard_their_match_end_are_kept(tmp_path: Path) -> None:
    """After a finished match the host keeps every seat's instance; after a cancelled one none.

    A bot could still hold a match that did not end for it: its state, an open stream.
    """
    bots = [bundled("random"), bundled("greedy"), bundled("counter")]
    box = ProcessSandbox()
    host = BotHost(box, tmp_path / "h")
    common = on_host(host, tmp_path)
    try:
        run_match(
            "m0",
            1,
            bots,
            MatchConfig(seats=3, hand_cap=3),
            replay_path=tmp_path / "0.jsonl",
            deal=0,
            **common,
        )
        assert 3 == host.idle
        kept = {s.bot for s in host._idle}

        cancel = threading.Event()
        threading.Timer(1.0, cancel.set).start()
        with pytest.raises(MatchCancelled):
            run_match(
                "m1",
                2,
                bots,
                MatchConfig(seats=3, hand_cap=None),
                replay_path=tmp_path / "1.jsonl",
                cancel=cancel,
                deal=1,
                **common,
            )
        assert 0 == host.idle
        assert all(not b.alive() for b in kept)  # stopped, not left running
        assert 3 == host.starts  # the cancelled match reused the kept ones
    finally:
        host.close()
        box.close()
