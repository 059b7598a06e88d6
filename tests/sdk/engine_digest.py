"""What the engine this interpreter imports makes of fixed matches, as one line of JSON.

Run by ``test_compiled.py`` once against a pure-Python copy of the SDK and once against a
compiled one (``PYTHONPATH`` picks the copy); the two lines must agree. Not a test module.
"""

from __future__ import annotations

import hashlib
import json
import runpy
from pathlib import Path

import flipflop
from flipflop import Bot, MatchConfig, load_bot, play_match
from flipflop._replay import records

ROOT = Path(__file__).resolve().parents[2]
KINDS = ("search", "counter", "greedy", "random")
MATCHES = 24
SEARCH_SIMULATIONS = 8


def _bot(kind: str) -> Bot:
    bot = load_bot(ROOT / "bots" / kind)
    if kind == "search":
        bot.simulations = SEARCH_SIMULATIONS  # type: ignore[attr-defined]
    return bot


def digest() -> dict[str, object]:
    """The build, whether each golden replays byte for byte, and a hash per match's replay."""
    out: dict[str, object] = {"compiled": flipflop.COMPILED}
    regen = runpy.run_path(str(ROOT / "scripts" / "regen_goldens.py"))
    for name in sorted(regen["GOLDEN_MATCHES"]):
        recorded = (ROOT / "tests" / "golden" / f"{name}.jsonl").read_text(encoding="utf-8")
        out[f"golden {name}"] = regen["golden"](name) == recorded
    for i in range(MATCHES):  # 3, 4 and 5 seats; every bundled bot in every seat
        seats = 3 + i % 3
        kinds = [KINDS[(i + s) % len(KINDS)] for s in range(seats)]
        config = MatchConfig(seats=seats, hand_cap=25)
        state = play_match([_bot(k) for k in kinds], config, seed=f"compiled-{i}")
        text = "\n".join(
            json.dumps(r, sort_keys=True) for r in records(state, kinds, write_seed=True)
        )
        out[f"match {i}"] = hashlib.sha256(text.encode()).hexdigest()
    return out


if __name__ == "__main__":
    print(json.dumps(digest()))
