"""Flip Flop Arena: runs bots for the card game Game, Flip, Flop against each other.

The arena drives the rules engine from the ``flipflop`` SDK, talks to every bot over gRPC
inside a sandbox, schedules matches and ranks bots by bankroll survival.
"""

__version__ = "0.1.0"
