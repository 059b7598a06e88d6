"""Many matches to standings: a ladder's plan, its slots, its files and its statistics.

- ``_plan``: which bots meet, in which seats and duplicate groups.
- ``_ladder``: plays a plan on local slots (or a Celery fleet, ``_fleet_ladder``), resumable.
- ``_records``: ``matches.jsonl``, read back and tallied.
- ``_standings``: luck-adjusted standings, intervals and tied bands.
- ``_sprt``: ``arena run --sprt``, a sequential test between two bots.
- ``_bundled``: the bundled bots a ladder may name.

Imports ``arena.match`` and below. ``_fleet_ladder`` still serves the league's worker routes,
the one import of the league from here (``docs/architecture.md``, "Still to move").
"""
