"""CPU fairness in the process sandbox: an honest bot's thinking time next to a CPU thief.

Run: ``python benchmarks/cpu_fairness.py [--rounds R] [--hand-cap H] [--work N]``.

The honest bot (``thinker``, written to a temporary directory) does a fixed amount of
pure-Python work at every decision (``--work`` loop iterations), then plays the SDK's default.
It plays real matches (``run_match``, the process sandbox, three seats: thinker, X, greedy)
where X is either ``plain`` ("alone": the SDK's default bot) or the ``forkspin`` adversary,
which plays exactly like ``plain`` but whose four children leave its session with ``setsid``
and spin for the whole match: so both tables play the same game, decision for decision.
Rounds alternate the two tables (same deal seeds) so that drift in the machine's load affects
both alike. The runner measures each decision's wall time; the figure is the thinker's mean.

Prints the means and ``fairness/alone: N.NN`` (next to forkspin / alone; 1.00 is perfectly
fair), first with each bot in its own cgroup (the sandbox's default where the arena runs as
root), then ``fairness/alone (no cgroups): N.NN`` with cgroups turned off: the process sandbox
as it was before, where the spinners take every idle core. Needs root and cgroups for the
first figure; at least two cores to mean anything.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from arena.match._runner import TimeControl, run_match
from arena.sandbox import ProcessSandbox, SandboxLimits
from arena.sandbox._cgroup import CgroupTree, cgroup_tree
from flipflop import BotManifest, MatchConfig, read_manifest

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
FORKSPIN = REPO / "tests" / "arena" / "sandbox" / "adversaries" / "forkspin"
THINKER = '''"""An honest bot that thinks for a fixed amount of CPU work at every decision."""
from pathlib import Path

from flipflop import Bot, serve

WORK = int(Path("work.txt").read_text())


def think() -> int:
    total = 0
    for i in range(WORK):
        total += i * i % 7
    return total


class Thinker(Bot):
    name = "thinker"

    def start_turn(self, obs, legal):
        think()
        return super().start_turn(obs, legal)

    def play_turn(self, obs, legal):
        think()
        return super().play_turn(obs, legal)


if __name__ == "__main__":
    serve(Thinker)
'''
PLAIN = '''"""The SDK's default bot: draws from the stock, discards its highest card."""
from flipflop import Bot, serve

if __name__ == "__main__":
    serve(Bot)
'''


def bot_dir(directory: Path, name: str, code: str, work: int = 0) -> BotManifest:
    """A bot directory with ``code`` as its ``bot.py``."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "bot.py").write_text(code, encoding="utf-8")
    (directory / "work.txt").write_text(str(work), encoding="utf-8")
    (directory / "bot.toml").write_text(
        f'name = "{name}"\nversion = "1.0.0"\ncommand = ["python3", "bot.py"]\n',
        encoding="utf-8",
    )
    return read_manifest(directory)


def mean_decision_ms(
    bots: list[BotManifest],
    cgroups: CgroupTree | str | None,
    seed: int,
    config: MatchConfig,
    scratch: Path,
) -> tuple[float, int]:
    """One match; the thinker's (seat 0) mean decision time in ms, and its decisions."""
    box = ProcessSandbox(SandboxLimits(cpus=1.0), cgroups=cgroups)
    work = Path(tempfile.mkdtemp(prefix="ffa-b-", dir=scratch))
    try:
        record = run_match(
            f"bench{seed}",
            seed,
            bots,
            config,
            sandbox=box,
            workdir=work / "m",
            replay_path=work / "replay.jsonl",
            logs_dir=work / "logs",
            clock=TimeControl(decision_ms=5000, time_bank_ms=60_000, notify_ms=5000),
        )
    finally:
        box.close()
        shutil.rmtree(work, ignore_errors=True)
    seat = record.seats[0]
    if record.faults:
        print(f"  (faults: {[(f.seat, f.kind.value, f.detail) for f in record.faults]})")
    return seat.think_ms / max(1, seat.decisions), seat.decisions


def measure(
    label: str,
    cgroups: CgroupTree | str | None,
    rounds: int,
    config: MatchConfig,
    work: int,
    scratch: Path,
) -> float:
    """Alternate alone / next-to-forkspin matches; print the means; return the ratio."""
    me = bot_dir(scratch / "thinker", "thinker", THINKER, work)
    plain = bot_dir(scratch / "plain", "plain", PLAIN)
    alone: list[float] = []
    beside: list[float] = []
    greedy = read_manifest(REPO / "bots" / "greedy")
    spin = read_manifest(FORKSPIN)
    for r in range(rounds):
        seed = 100 + r
        a, n = mean_decision_ms([me, plain, greedy], cgroups, seed, config, scratch)
        b, m = mean_decision_ms([me, spin, greedy], cgroups, seed, config, scratch)
        if m != n:
            print(f"  (the thinker made {m} decisions next to forkspin, {n} alone)")
        alone.append(a)
        beside.append(b)
        print(f"  round {r + 1}: alone {a:7.2f} ms ({n} decisions), next to forkspin {b:7.2f} ms")
    a_mean, b_mean = statistics.mean(alone), statistics.mean(beside)
    ratio = b_mean / a_mean
    print(f"  thinker mean decision: alone {a_mean:.2f} ms, next to forkspin {b_mean:.2f} ms")
    print(f"fairness/alone{label}: {ratio:.2f}")
    return ratio


def main() -> None:
    """Measure with cgroups, then without."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=3, help="matches per table (default 3)")
    p.add_argument("--hand-cap", type=int, default=4, help="hands per match (default 4)")
    p.add_argument("--work", type=int, default=300_000, help="loop iterations per decision")
    p.add_argument("--no-baseline", action="store_true", help="skip the run without cgroups")
    args = p.parse_args()
    config = MatchConfig(seats=3, hand_cap=args.hand_cap)
    tree = cgroup_tree()
    print(f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}")
    scratch = Path(tempfile.mkdtemp(prefix="ffa-bench-"))
    t0 = time.monotonic()
    try:
        if isinstance(tree, str):
            print(f"no cgroups here ({tree}): only the baseline is measured")
        else:
            print(f"with cgroups: {tree.describe(1.0, SandboxLimits().pids)}")
            measure("", None, args.rounds, config, args.work, scratch)
        if not args.no_baseline:
            print("without cgroups (the process sandbox before: no CPU quota)")
            measure(" (no cgroups)", "off", args.rounds, config, args.work, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"({time.monotonic() - t0:.0f} s)")


if __name__ == "__main__":
    main()
