"""Engine throughput: random legal players, full rules with money, one process.

Run: ``python benchmarks/engine.py [--seconds N] [--rounds K] [--instructions]``. Prints:

(a) players choose uniformly among the engine's legal actions;
(b) the same, with the acting seat's full Observation built before every decision;
and, when ``open_spiel`` is importable (``pip install -e '.[bench]'``), OpenSpiel's
``gin_rummy`` under uniformly random play in the same run, then the ratios as lines a script
can read::

    engine/openspiel: N.NN
    engine+obs/openspiel: N.NN

(the issue's targets: at least 2.0 and 1.5). Without OpenSpiel one line says how to install it
and the ratio lines are left out.

``--instructions`` counts instead, when valgrind is installed: each side runs in a child
process under callgrind for N and for 2N decisions, and the difference over N is its
instructions per decision (start-up cancels out; load does not change the count). It prints
``engine/openspiel instructions: R`` and ``engine+obs/openspiel instructions: R``, where R is
how many times fewer instructions a decision of ours takes than one of ``gin_rummy``'s.

The first line names the build: ``python`` or ``compiled`` (``make compile``,
``flipflop.COMPILED``; docs/engine.md "A compiled engine").

Each figure is CPU time of this process, so other load on the machine disturbs it less than
wall time would, and the three are measured in ``K`` interleaved rounds, so a slow spell of
the machine falls on all of them alike.
"""

from __future__ import annotations

import argparse
import itertools
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import flipflop
from flipflop import MatchConfig, MatchState

Run = Callable[[float], tuple[int, int, float]]
"""Play for about that many CPU seconds; return (hands, decisions, CPU seconds)."""

_INSTALL = "pip install -e '.[bench]'"


def _flipflop(observe: bool) -> Run:
    """Whole 4-seat matches, seeds 0, 1, 2, … across rounds."""
    rng = random.Random(7)
    pick = rng.random
    seeds = itertools.count()

    def run(seconds: float) -> tuple[int, int, float]:
        hands = decisions = 0
        start = time.process_time()
        while time.process_time() - start < seconds:
            state = MatchState(MatchConfig(seats=4), next(seeds))
            decisions += _play_flipflop(state, pick, observe, sys.maxsize)
            assert state.result is not None
            hands += state.result.hands
        return hands, decisions, time.process_time() - start

    return run


def _gin_rummy() -> Run | None:
    """OpenSpiel's C++ gin rummy driven from Python, or None if it is not installed."""
    try:
        import pyspiel  # type: ignore[import-not-found]  # optional bench extra
    except ImportError:
        return None
    game = pyspiel.load_game("gin_rummy")
    rng = random.Random(7)

    def run(seconds: float) -> tuple[int, int, float]:
        hands = decisions = 0
        start = time.process_time()
        while time.process_time() - start < seconds:
            decisions += _play_gin(game.new_initial_state(), rng.random, sys.maxsize)
            hands += 1
        return hands, decisions, time.process_time() - start

    return run


def _play_flipflop(state: MatchState, pick: Callable[[], float], observe: bool, limit: int) -> int:
    """Random legal decisions on ``state`` until it is over or ``limit`` are made; how many."""
    made = 0
    while made < limit and state.result is None:
        if observe:
            state.observation(state.to_act)
        legal = state.legal_actions()
        state.apply(legal[int(pick() * len(legal))])
        made += 1
    return made


def _play_gin(state: Any, pick: Callable[[], float], limit: int) -> int:
    """The same for an OpenSpiel state, its chance outcomes drawn uniformly too."""
    made = 0
    while made < limit and not state.is_terminal():
        if state.is_chance_node():
            outcomes = state.chance_outcomes()
            state.apply_action(outcomes[int(pick() * len(outcomes))][0])
        else:
            legal = state.legal_actions()
            state.apply_action(legal[int(pick() * len(legal))])
            made += 1
    return made


def _play(kind: str, decisions: int) -> None:
    """Make exactly ``decisions`` random decisions of ``kind`` (for ``--instructions``)."""
    pick = random.Random(7).random
    made = 0
    if kind == "gin_rummy":
        import pyspiel  # optional bench extra

        game = pyspiel.load_game("gin_rummy")
        while made < decisions:
            made += _play_gin(game.new_initial_state(), pick, decisions - made)
        return
    seeds = itertools.count()
    while made < decisions:
        state = MatchState(MatchConfig(seats=4), next(seeds))
        made += _play_flipflop(state, pick, kind == "engine+obs", decisions - made)


def _instructions(kind: str, decisions: int) -> int:
    """Instructions callgrind counts in a child process making ``decisions`` decisions."""
    with tempfile.TemporaryDirectory(prefix="engine-callgrind-") as tmp:
        out = Path(tmp) / "callgrind.out"
        command = [sys.executable, __file__, "--play", kind, str(decisions)]
        subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", *command],
            check=True,
            capture_output=True,
        )
        for line in out.read_text(encoding="utf-8").splitlines():
            if line.startswith(("summary:", "totals:")):
                return int(line.split()[1])
    raise RuntimeError(f"callgrind wrote no instruction total for {kind}")


def _per_decision(kind: str, decisions: int) -> float:
    """Instructions per decision: the runs of 2N and N decisions differ by N decisions."""
    return (_instructions(kind, 2 * decisions) - _instructions(kind, decisions)) / decisions


def _count(decisions: int) -> None:
    """``--instructions``: instructions per decision, both sides, under callgrind."""
    if shutil.which("valgrind") is None:
        print("--instructions needs valgrind (apt-get install valgrind): nothing counted")
        return
    a = _per_decision("engine", decisions)
    b = _per_decision("engine+obs", decisions)
    print(f"{'(a) flipflop, uniform legal actions':<44} {a:>12,.0f} instructions/decision")
    print(f"{'(b) flipflop, + observation every decision':<44} {b:>12,.0f} instructions/decision")
    if _gin_rummy() is None:
        print(f"OpenSpiel gin_rummy: skipped, open_spiel is not installed (install it: {_INSTALL})")
        return
    g = _per_decision("gin_rummy", decisions)
    print(f"{'OpenSpiel gin_rummy, uniform legal actions':<44} {g:>12,.0f} instructions/decision")
    print(f"engine/openspiel instructions: {g / a:.2f}")
    print(f"engine+obs/openspiel instructions: {g / b:.2f}")


def _measure(
    runs: dict[str, Run], seconds: float, rounds: int
) -> dict[str, tuple[int, int, float]]:
    """Each run for ``seconds`` in all, in ``rounds`` interleaved slices; totals per run."""
    totals = dict.fromkeys(runs, (0, 0, 0.0))
    for _ in range(rounds):
        for name, run in runs.items():
            hands, decisions, elapsed = run(seconds / rounds)
            h, d, e = totals[name]
            totals[name] = (h + hands, d + decisions, e + elapsed)
    return totals


def _line(label: str, got: tuple[int, int, float]) -> float:
    hands, decisions, elapsed = got
    dps = decisions / elapsed
    print(f"{label:<44} {hands / elapsed:>10,.0f} hands/s {dps:>10,.0f} decisions/s")
    return dps


def main() -> None:
    """Print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="CPU time per measurement")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved slices per measurement")
    parser.add_argument(
        "--instructions",
        action="store_true",
        help="count instructions per decision under callgrind instead of timing",
    )
    parser.add_argument(
        "--decisions", type=int, default=5000, help="N for --instructions (runs N and 2N)"
    )
    parser.add_argument("--play", nargs=2, metavar=("KIND", "N"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.play:
        _play(args.play[0], int(args.play[1]))
        return
    print(f"engine build: {'compiled' if flipflop.COMPILED else 'python'}")
    if args.instructions:
        _count(max(1, args.decisions))
        return
    runs = {"a": _flipflop(observe=False), "b": _flipflop(observe=True)}
    gin = _gin_rummy()
    if gin is not None:
        runs["g"] = gin
    got = _measure(runs, args.seconds, max(1, args.rounds))
    a = _line("(a) flipflop, uniform legal actions", got["a"])
    b = _line("(b) flipflop, + observation every decision", got["b"])
    if gin is None:
        print(
            f"{'OpenSpiel gin_rummy, uniform legal actions':<44} skipped: open_spiel is not "
            f"installed, so no engine/openspiel ratios (install it: {_INSTALL})"
        )
    else:
        g = _line("OpenSpiel gin_rummy, uniform legal actions", got["g"])
    print(f"(a) / (b) = {a / b:.2f}  (target: within 2x)")
    if gin is not None:
        print(f"(a) / gin_rummy = {a / g:.2f}  (target: at least 2)")
        print(f"engine/openspiel: {a / g:.2f}")
        print(f"engine+obs/openspiel: {b / g:.2f}")


if __name__ == "__main__":
    main()
