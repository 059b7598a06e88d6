"""``arena new-bot``: a bot directory from a template that passes the conformance check."""

from __future__ import annotations

import re
from pathlib import Path

from arena._errors import ArenaError

__all__ = ["scaffold_bot"]

_BOT_PY = '''"""{name}: a Game, Flip, Flop bot. Start here and make it smarter.

Run it locally:   python3 bot.py --listen unix:/tmp/{name}.sock
Check it:         arena check .
Play it:          arena run . random greedy counter
"""

from collections.abc import Sequence

from flipflop import DRAW_STOCK, DROP, Action, Bot, Observation, best_melds, hand_total, serve


class {cls}(Bot):
    name = "{name}"
    version = "0.1.0"

    def start_turn(self, obs: Observation, legal: Sequence[Action]) -> Action:
        """Drop with a hand of 5 or less; otherwise draw from the stock."""
        return DROP if hand_total(obs.hand) <= 5 else DRAW_STOCK

    def play_turn(self, obs: Observation, legal: Sequence[Action]) -> list[Action]:
        """Meld the spreads that leave the least, then discard the highest card allowed."""
        melds, _ = best_melds(obs.hand)
        left = [c for c in obs.hand if not any(c in m for m in melds)]
        allowed = [c for c in left if c != obs.drawn_from_discard]  # R-DRAW
        if left and not allowed:  # only the card just taken would be left: meld less
            return self.discards(legal)[:1]
        steps = [Action.meld(m) for m in melds]
        if allowed:
            steps.append(Action.discard(max(allowed, key=lambda c: c.value)))
        return steps


if __name__ == "__main__":
    serve({cls})  # the class: every match gets its own instance
'''

_BOT_TOML = """name = "{name}"
version = "0.1.0"
description = "A new bot made by arena new-bot."
command = ["python3", "bot.py"]
entry = "bot:{cls}"
"""

_DOCKERFILE = """# Built on a base image holding python3 and the flipflop SDK (docs/sandbox.md).
ARG BASE=flipflop-base:latest
FROM ${{BASE}}
COPY . /bot
WORKDIR /bot
USER 65534:65534
ENTRYPOINT ["python3", "bot.py"]
"""

_README = """# {name}

A Game, Flip, Flop bot. `bot.py` holds the strategy; `bot.toml` tells the arena how to run it.

- `arena check .` runs the conformance check over gRPC.
- `arena run . random greedy counter` plays a ladder against the bundled bots.
"""


def scaffold_bot(name: str, parent: Path) -> Path:
    """Create ``parent/name`` holding a working bot; refuse to overwrite anything."""
    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_-]{0,39}", name):
        raise ArenaError(
            f"bot name {name!r}: use 1-40 letters, digits, '-' or '_', starting with a letter"
        )
    target = parent / name
    if target.exists():
        raise ArenaError(f"{target} already exists; choose another name or remove it")
    cls = "".join(part.capitalize() for part in re.split(r"[-_]", name) if part) + "Bot"
    target.mkdir(parents=True)
    fields = {"name": name, "cls": cls}
    (target / "bot.py").write_text(_BOT_PY.format(**fields), encoding="utf-8")
    (target / "bot.toml").write_text(_BOT_TOML.format(**fields), encoding="utf-8")
    (target / "Dockerfile").write_text(_DOCKERFILE.format(**fields), encoding="utf-8")
    (target / "README.md").write_text(_README.format(**fields), encoding="utf-8")
    return target
