"""Ladder throughput over gRPC, bots in separate processes, against the in-process engine.

Run: ``python benchmarks/ladder.py [--matches N] [--hand-cap H] [--bots random greedy counter]``.

One fixed ladder (the bundled bots at one table of 3, duplicate deals, ladder seed 1) is
played three times in the same run:

(a) in-process: each planned match played by ``flipflop.play_match`` with fresh bot
    instances loaded from the bots' directories, same seeds and seats as the ladder — the
    engine and the bots' own thinking, nothing else;
(b) ``run_ladder`` with ``jobs=1``: every bot a child process of the process sandbox, kept
    up from match to match (``arena/match/_hosts.py``), talking gRPC over a unix socket, one match
    at a time — what ``arena run --jobs 1 --sandbox process`` does, less the printing;
(c) the same with ``jobs=2``.

Prints decisions/s and hands/s for each, the ratios to (a) and of (c) to (b), the bot starts
per ladder, and whether the three produced the same matches (placements, bankrolls, hands,
decisions): they should, since the bots are deterministic given the match id and seat. These
lines are for scripts: ``ladder/in-process: R`` ((b) ÷ (a), target ≥ 0.8), ``ladder
jobs2/jobs1: R`` ((c) ÷ (b), target ≥ 1.8), ``ladder bot starts: N1 (jobs 1), N2 (jobs
2)``, and ``ladder/in-process cpu: R1 (jobs 1), R2 (jobs 2)``: the CPU time of (a) over that
of (b) and of (c), this process and every bot process together (``getrusage`` of the process
and of its reaped children), which load inflates far less than it inflates wall ratios.

Then a plan of ``--many-bots`` bots (default 32: copies of ``random`` under their own names)
in ``--many-matches`` matches (default 12) at a table of 3, ``--jobs 2``, prints ``bot
starts: S for B bots in M matches (T seats)``: with duplicate deals an instance never plays
two rotations of one deck, so a bot that plays one group needs one instance per rotation.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from arena.ladder._bundled import resolve_bot
from arena.ladder._ladder import LadderSpec, run_ladder
from arena.match._deal import match_seed
from arena.sandbox import ProcessSandbox
from flipflop import (
    Action,
    Bot,
    HandResult,
    MatchInfo,
    MatchResult,
    Observation,
    load_bot,
    play_match,
)

Outcome = tuple[tuple[int, ...], tuple[int, ...], int, int]
"""What must agree between two plays of a match: placements, bankrolls, hands, decisions."""


@dataclass(frozen=True, slots=True)
class Measurement:
    """One way of playing the ladder, timed."""

    label: str
    seconds: float
    hands: int
    decisions: int
    outcomes: dict[str, Outcome]
    faults: int = 0
    starts: int = 0
    cpu: float = 0.0
    """CPU seconds, this process and its reaped children (the bots) together."""

    @property
    def decisions_per_s(self) -> float:
        """Decisions per wall-clock second."""
        return self.decisions / self.seconds

    @property
    def hands_per_s(self) -> float:
        """Hands per wall-clock second."""
        return self.hands / self.seconds


def _cpu() -> float:
    """CPU seconds so far of this process and of its children that have been waited for."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


class _Counted(Bot):
    """Passes every call to ``inner``, counting its decisions (start_turn and play_turn)."""

    def __init__(self, inner: Bot) -> None:
        self.inner = inner
        self.name = inner.name
        self.version = inner.version
        self.decisions = 0

    def start_match(self, info: MatchInfo) -> None:
        self.inner.start_match(info)

    def start_turn(self, obs: Observation, legal: Sequence[Action]) -> Action:
        self.decisions += 1
        return self.inner.start_turn(obs, legal)

    def play_turn(self, obs: Observation, legal: Sequence[Action]) -> Sequence[Action]:
        self.decisions += 1
        return self.inner.play_turn(obs, legal)

    def hand_ended(self, result: HandResult) -> None:
        self.inner.hand_ended(result)

    def end_match(self, result: MatchResult) -> None:
        self.inner.end_match(result)


def in_process(spec: LadderSpec) -> Measurement:
    """Play the ladder's planned matches with ``play_match``; bots are loaded before timing."""
    key = spec.deal_key()  # an explicit seed: the same key, decks and plan as run_ladder
    plan = spec.plan(key)
    paths = {b.name: b.path for b in spec.bots}
    tables = [[_Counted(load_bot(paths[name])) for name in p.bots] for p in plan]
    config = spec.config()
    outcomes: dict[str, Outcome] = {}
    hands = 0
    t0, c0 = time.perf_counter(), _cpu()
    for p, bots in zip(plan, tables, strict=True):
        # Not strict: a refused action gets the runner's default, as over gRPC.
        st = play_match(bots, config, match_seed(key, p.group), strict=False, match_id=p.match_id)
        assert st.result is not None
        decisions = sum(b.decisions for b in bots)
        outcomes[p.match_id] = (
            tuple(st.result.placements),
            tuple(st.result.bankrolls),
            st.result.hands,
            decisions,
        )
        hands += st.result.hands
    seconds, cpu = time.perf_counter() - t0, _cpu() - c0
    return Measurement(
        "in-process engine (play_match)",
        seconds,
        hands,
        sum(o[3] for o in outcomes.values()),
        outcomes,
        cpu=cpu,
    )


def over_grpc(spec: LadderSpec, jobs: int) -> Measurement:
    """Play the ladder with ``run_ladder`` in a fresh process sandbox, output to a temp dir."""
    with tempfile.TemporaryDirectory(prefix="ffa-bench-") as tmp:
        t0, c0 = time.perf_counter(), _cpu()
        result = run_ladder(spec, Path(tmp) / "out", sandbox=ProcessSandbox(), jobs=jobs)
        seconds, cpu = time.perf_counter() - t0, _cpu() - c0
        records = result.records()
    if result.interrupted or len(records) != result.planned:
        sys.exit(f"--jobs {jobs}: {len(records)} of {result.planned} matches finished")
    outcomes: dict[str, Outcome] = {
        r["match_id"]: (tuple(r["placements"]), tuple(r["bankrolls"]), r["hands"], r["decisions"])
        for r in records
    }
    return Measurement(
        f"gRPC, process sandbox, --jobs {jobs}",
        seconds,
        sum(r["hands"] for r in records),
        sum(r["decisions"] for r in records),
        outcomes,
        faults=sum(len(r["faults"]) for r in records),
        starts=result.starts,
        cpu=cpu,
    )


def many_bots_starts(bots: int, matches: int, hand_cap: int) -> str:
    """The ``bot starts:`` line: ``bots`` copies of ``random`` in ``matches`` matches of 3."""
    random_bot = resolve_bot("random")
    with tempfile.TemporaryDirectory(prefix="ffa-bench-many-") as tmp:
        refs = []
        for i in range(1, bots + 1):
            copy = Path(tmp) / f"random-{i:02d}"
            shutil.copytree(random_bot.path, copy)
            toml = (copy / "bot.toml").read_text(encoding="utf-8")
            (copy / "bot.toml").write_text(
                toml.replace('name = "random"', f'name = "random-{i:02d}"'), encoding="utf-8"
            )
            refs.append(resolve_bot(str(copy)))
        spec = LadderSpec(
            bots=tuple(refs), matches=matches, table_size=3, seed=1, hand_cap=hand_cap
        )
        result = run_ladder(spec, Path(tmp) / "out", sandbox=ProcessSandbox(), jobs=2)
        seats = sum(len(r["placements"]) for r in result.records())
    return f"bot starts: {result.starts} for {bots} bots in {matches} matches ({seats} seats)"


def main() -> None:
    """Play the ladder three ways and print the table."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--bots", nargs="+", default=["random", "greedy", "counter"])
    p.add_argument("--matches", type=int, default=21, help="matches (whole seat rotations)")
    p.add_argument("--hand-cap", type=int, default=60, help="hands after which a match ends")
    p.add_argument("--seed", type=int, default=1, help="ladder seed")
    p.add_argument("--many-bots", type=int, default=32, help="bots in the starts plan (32)")
    p.add_argument("--many-matches", type=int, default=12, help="its matches (12)")
    args = p.parse_args()

    bots = tuple(resolve_bot(b) for b in args.bots)
    spec = LadderSpec(
        bots=bots,
        matches=args.matches,
        table_size=len(bots),
        seed=args.seed,
        hand_cap=args.hand_cap,
    )
    warm = ProcessSandbox()  # probes unshare/setpriv once (cached), outside the timings
    isolation = warm.isolation
    warm.close()

    plays: list[tuple[str, Callable[[], Measurement]]] = [
        ("in-process", lambda: in_process(spec)),
        ("--jobs 1", lambda: over_grpc(spec, 1)),
        ("--jobs 2", lambda: over_grpc(spec, 2)),
    ]
    runs = []
    for label, measure in plays:
        print(f"playing {label} …", file=sys.stderr, flush=True)
        runs.append(measure())
    base, one, two = runs

    print(
        f"ladder: {' '.join(args.bots)} at a table of {spec.table_size}, "
        f"{len(base.outcomes)} matches (duplicate deals, seed {spec.seed}), "
        f"hand cap {spec.hand_cap}; {os.cpu_count()} CPUs"
    )
    print(f"per ladder: {base.hands} hands, {base.decisions} decisions; sandbox: {isolation}")
    print()
    print(f"{'':34s} {'wall s':>7s} {'decisions/s':>12s} {'hands/s':>9s} {'vs in-process':>14s}")
    for m in runs:
        print(
            f"{m.label:34s} {m.seconds:7.2f} {m.decisions_per_s:12.0f} {m.hands_per_s:9.1f} "
            f"{m.decisions_per_s / base.decisions_per_s:13.2f}x"
        )
    print()
    print(f"ladder/in-process: {one.decisions_per_s / base.decisions_per_s:.2f}")
    print(f"ladder jobs2/jobs1: {two.decisions_per_s / one.decisions_per_s:.2f}")
    print(f"ladder bot starts: {one.starts} (jobs 1), {two.starts} (jobs 2)")
    print(
        f"ladder/in-process cpu: {base.cpu / one.cpu:.2f} (jobs 1), {base.cpu / two.cpu:.2f} "
        f"(jobs 2); CPU s: in-process {base.cpu:.1f}, jobs 1 {one.cpu:.1f}, jobs 2 {two.cpu:.1f}"
    )
    print(f"--jobs 2 / --jobs 1:        {two.decisions_per_s / one.decisions_per_s:.2f}x")
    print(f"in-process / --jobs 1:      {base.decisions_per_s / one.decisions_per_s:.2f}x")
    print(f"in-process / --jobs 2:      {base.decisions_per_s / two.decisions_per_s:.2f}x")
    for m in (one, two):
        same = m.outcomes == base.outcomes
        print(
            f"{m.label}: {'same' if same else 'DIFFERENT'} matches as in-process, "
            f"{m.faults} bot faults"
        )
    print(f"playing {args.many_bots} bots in {args.many_matches} matches …", file=sys.stderr)
    print(many_bots_starts(args.many_bots, args.many_matches, args.hand_cap))


if __name__ == "__main__":
    main()
