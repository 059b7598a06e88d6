"""The README's bot and the `arena new-bot` template are the same, and both play cleanly."""

from __future__ import annotations

import re
from pathlib import Path

from arena.client._scaffold import scaffold_bot
from flipflop import MatchConfig, load_bot, play_match

ROOT = Path(__file__).resolve().parents[1]


def _readme_bot() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks: list[str] = re.findall(r"```python\n(.*?)```", text, re.S)
    return next(b for b in blocks if "class MyBot(Bot)" in b)


def test_readme_bot_is_the_new_bot_template(tmp_path: Path) -> None:
    """`arena new-bot mybot` writes the README's bot (plus its module docstring and version)."""
    made = (scaffold_bot("mybot", tmp_path) / "bot.py").read_text(encoding="utf-8")
    code = made[made.index("from collections.abc") :].replace('    version = "0.1.0"\n', "")
    code = code.replace("MybotBot", "MyBot")  # the template names the class after the bot
    assert _readme_bot() == code


def test_readme_bot_plays_whole_matches_without_a_refused_action(tmp_path: Path) -> None:
    """The README's bot, loaded as a bot directory, plays strict matches against the bundled."""
    d = scaffold_bot("mybot", tmp_path)
    for seed in range(3):
        bots = [load_bot(d), load_bot(ROOT / "bots" / "greedy"), load_bot(ROOT / "bots" / "random")]
        state = play_match(bots, MatchConfig(seats=3, hand_cap=60), seed, strict=True)
        assert state.result is not None
