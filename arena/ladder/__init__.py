"""Many matches to standings: a ladder's plan, its slots, its files and its statistics.

- ``_plan``: which bots meet, in which seats and duplicate groups.
- ``_ladder``: plays a plan on an executor (``arena.executors``: local slots, or a Celery
  fleet), resumable.
- ``_records``: ``matches.jsonl``, read back and tallied.
- ``_standings``: luck-adjusted standings, intervals and tied bands.
- ``_final``: a league final's rounds and stopping rule (alpha spent over its looks).
- ``_sprt``: ``arena run --sprt``, a sequential test between two bots.
- ``_bundled``: the bundled bots a ladder may name.

Imports ``arena.executors`` and below, never the league (``docs/architecture.md``).
"""

from arena.ladder._final import FinalLook, FinalRule, final_look, final_rounds
from arena.ladder._standings import BotStanding, MatchOutcome, compute_standings

__all__ = [
    "BotStanding",
    "FinalLook",
    "FinalRule",
    "MatchOutcome",
    "compute_standings",
    "final_look",
    "final_rounds",
]
