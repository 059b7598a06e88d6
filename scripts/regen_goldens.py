"""Regenerate the golden replays under ``tests/golden/``.

Usage: ``python scripts/regen_goldens.py``. Each golden file is the replay of a fixed match
(fixed seed, config and deterministic players). ``tests/sdk/test_golden.py`` plays the same
matches again and requires byte-identical replays, so any change to the rules engine that
changes a game shows up as a diff of these files: read it before committing the new files.

The seeded matches are written as the arena writes them, without the seed (each hand's deck
is in its ``deal`` record); the default-bots one keeps its seed, so both kinds of header are
covered. ``tests/golden/v1/`` holds a version 1 file that is never regenerated: the reader
must keep reading it.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator, Sequence
from pathlib import Path

from flipflop import Action, ActionKind, Bot, MatchConfig, MatchState, Observation, play_match
from flipflop._replay import records

GOLDEN_DIR = Path(__file__).resolve().parent.parent / "tests" / "golden"


class _Seeded(Bot):
    """A deterministic pseudo-random player: melds and lays off when it can, drops sometimes."""

    name = "seeded"

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def start_turn(self, obs: Observation, legal: Sequence[Action]) -> Action:
        return legal[self.rng.randrange(len(legal))] if self.rng.random() < 0.2 else legal[1]

    def play_turn(self, obs: Observation, legal: Sequence[Action]) -> list[Action]:
        state = MatchState.from_observation(obs, random.Random(0))
        steps: list[Action] = []
        seat = obs.seat
        while state.to_act == seat and not state.is_over and state.hand_number == obs.hand_number:
            options = state.legal_actions()
            spreads = [a for a in options if a.kind is not ActionKind.DISCARD]
            pick = spreads[0] if spreads else options[self.rng.randrange(len(options))]
            steps.append(pick)
            state.apply(pick)
        return steps


GOLDEN_MATCHES: dict[str, tuple[MatchConfig, int, str]] = {
    "default-bots-3-seats": (MatchConfig(seats=3, hand_cap=40), 1, "default"),
    "seeded-bots-4-seats": (MatchConfig(seats=4, stake=5, bankroll=60, hand_cap=60), 2, "seeded"),
    "seeded-bots-5-seats": (MatchConfig(seats=5, stake=10, bankroll=80, hand_cap=80), 3, "seeded"),
}


def golden(name: str) -> str:
    """The replay text of one golden match."""
    config, seed, kind = GOLDEN_MATCHES[name]
    write_seed = kind == "default"
    bots: list[Bot] = (
        [Bot() for _ in range(config.seats)]
        if kind == "default"
        else [_Seeded(seed * 10 + s) for s in range(config.seats)]
    )
    state = play_match(bots, config, seed)
    lines: Iterator[str] = (
        json.dumps(r, ensure_ascii=False, separators=(",", ":"))
        for r in records(state, [f"{kind}{s}" for s in range(config.seats)], write_seed=write_seed)
    )
    return "\n".join(lines) + "\n"


def main() -> None:
    """Write every golden file."""
    GOLDEN_DIR.mkdir(parents=True, exist_ok=True)
    for name in GOLDEN_MATCHES:
        path = GOLDEN_DIR / f"{name}.jsonl"
        path.write_text(golden(name), encoding="utf-8")
        print(f"wrote {path.relative_to(GOLDEN_DIR.parent.parent)}")


if __name__ == "__main__":
    main()
