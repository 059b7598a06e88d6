"""One match, end to end: where it runs, the arena's process (a ladder slot or a worker).

- ``_runner``: drives the engine and talks to each seat's bot over gRPC; owns time and faults.
- ``_hosts``: bot instances kept from match to match, and the rule that keeps deals secret.
- ``_relay``: the frame-flood guard between the arena's client and a sandboxed bot.
- ``_deal``: the secret deal key and each duplicate group's deal seed.
- ``_luck``: the places a match's deals were worth to each seat (the runner records them).
- ``_story``: a replay told hand by hand (``arena replay``, the web viewer).

Imports ``flipflop`` and ``arena.sandbox``, never a ladder, the league or the web
(``docs/architecture.md``).
"""
