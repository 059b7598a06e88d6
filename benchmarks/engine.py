"""Engine throughput: random legal players, full rules with money, one process.

Run: ``python benchmarks/engine.py [--seconds N]``. Prints:

(a) players choose uniformly among the engine's legal actions;
(b) the same, with the acting seat's full Observation built before every decision;
and, when ``open_spiel`` is importable (``pip install -e '.[bench]'``), OpenSpiel's
``gin_rummy`` under uniformly random play in the same run, with the ratio (a) / gin rummy.
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable

from flipflop import MatchConfig, MatchState


def _flipflop(seconds: float, observe: bool) -> tuple[int, int, float]:
    """Play whole matches until ``seconds`` have passed; return (hands, decisions, elapsed)."""
    rng = random.Random(7)
    pick = rng.random
    hands = decisions = 0
    seed = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        state = MatchState(MatchConfig(seats=4), seed)
        seed += 1
        while state.result is None:
            if observe:
                state.observation(state.to_act)
            legal = state.legal_actions()
            state.apply(legal[int(pick() * len(legal))])
            decisions += 1
        hands += state.result.hands
    return hands, decisions, time.perf_counter() - start


def _gin_rummy(seconds: float) -> tuple[int, int, float] | None:
    try:
        import pyspiel  # type: ignore[import-not-found]  # optional bench extra
    except ImportError:
        return None
    game = pyspiel.load_game("gin_rummy")
    rng = random.Random(7)
    hands = decisions = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
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
    return hands, decisions, time.perf_counter() - start


def _line(label: str, run: Callable[[], tuple[int, int, float] | None]) -> float | None:
    got = run()
    if got is None:
        print(f"{label:<44} skipped (open_spiel not installed: pip install -e '.[bench]')")
        return None
    hands, decisions, elapsed = got
    dps = decisions / elapsed
    print(f"{label:<44} {hands / elapsed:>10,.0f} hands/s {dps:>10,.0f} decisions/s")
    return dps


def main() -> None:
    """Print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="time per measurement")
    args = parser.parse_args()
    a = _line("(a) flipflop, uniform legal actions", lambda: _flipflop(args.seconds, False))
    b = _line("(b) flipflop, + observation every decision", lambda: _flipflop(args.seconds, True))
    g = _line("OpenSpiel gin_rummy, uniform legal actions", lambda: _gin_rummy(args.seconds))
    assert a is not None and b is not None
    print(f"(a) / (b) = {a / b:.2f}  (target: within 2x)")
    if g is not None:
        print(f"(a) / gin_rummy = {a / g:.2f}  (target: about 2)")


if __name__ == "__main__":
    main()
