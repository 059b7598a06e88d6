"""Errors raised by the SDK.

Hierarchy::

    FlipFlopError                 root of every error the SDK raises
    ├── ConfigError               a match configuration that cannot be played
    ├── ActionError               an action the engine refused
    │   ├── MalformedActionError  not an action at all (bad card text, wrong type, unknown spread)
    │   └── IllegalActionError    a well-formed action that the rules forbid right now
    └── ReplayError               a replay file that is unreadable or does not reproduce
"""

from __future__ import annotations

__all__ = [
    "ActionError",
    "ConfigError",
    "FlipFlopError",
    "IllegalActionError",
    "MalformedActionError",
    "ReplayError",
]


class FlipFlopError(Exception):
    """Root of every error raised by the flipflop SDK."""


class ConfigError(FlipFlopError, ValueError):
    """A match configuration that cannot be played (e.g. 2 seats, a stake of 0)."""


class ActionError(FlipFlopError, ValueError):
    """An action the engine refused; the message says why."""


class MalformedActionError(ActionError):
    """Not a valid action in any state: wrong type, bad card text, a spread that is no spread."""


class IllegalActionError(ActionError):
    """A well-formed action that the rules forbid in the current state."""


class ReplayError(FlipFlopError):
    """A replay that cannot be read, or whose actions do not reproduce what it recorded."""
