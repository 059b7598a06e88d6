"""Engine throughput: random legal players, full rules with money, one process.

Run: ``python benchmarks/engine.py [--seconds N] [--rounds K]``. Prints:

(a) players choose uniformly among the engine's legal actions;
(b) the same, with the acting seat's full Observation built before every decision;
and, when ``open_spiel`` is importable (``pip install -e '.[bench]'``), OpenSpiel's
``gin_rummy`` under uniformly random play in the same run, then the ratios as lines a script
can read::

    engine/openspiel: N.NN
    engine+obs/openspiel: N.NN

(the issue's targets: at least 2.0 and 1.5). Without OpenSpiel one line says how to install it
and the ratio lines are left out.

Each figure is CPU time of this process, so other load on the machine disturbs it less than
wall time would, and the three are measured in ``K`` interleaved rounds, so a slow spell of
the machine falls on all of them alike.
"""

from __future__ import annotations

import argparse
import itertools
import random
import time
from collections.abc import Callable

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
            while state.result is None:
                if observe:
                    state.observation(state.to_act)
                legal = state.legal_actions()
                state.apply(legal[int(pick() * len(legal))])
                decisions += 1
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
            state = game.new_initial_state()
            while not state.is_terminal():
                if state.is_chance_node():
                    outcomes = state.chance_outcomes()
                    state.apply_action(outcomes[int(rng.random() * len(outcomes))][0])
                else:
                    legal = state.legal_actions()
                    state.apply_action(legal[int(rng.random() * len(legal))])
                    decisions += 1
            hands += 1
        return hands, decisions, time.process_time() - start

    return run


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
    args = parser.parse_args()
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
