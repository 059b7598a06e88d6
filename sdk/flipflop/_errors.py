"""Errors raised by the SDK.

Hierarchy::

    FlipFlopError                 root of every error the SDK raises
    ├── ConfigError               a match configuration that cannot be played
    ├── ActionError               an action the engine refused
    │   ├── MalformedActionError  not an action at all (bad card text, wrong type, unknown spread)
    │   └── IllegalActionError    a well-formed action that the rules forbid right now
    ├── ReplayError               a replay file that is unreadable or does not reproduce
    └── BotError                  a bot failed to answer properly (``.bot``: its name, if known)
        ├── BotTimeout            no answer before the deadline
        ├── BotCrashed            the connection is gone: process dead, socket closed, UNAVAILABLE
        └── BotProtocolError      an answer that breaks the protocol: garbage, a malformed
            │                     or oversized message, another major version, or the bot raised
            └── SeatTokenError    the handshake came without the seat's token, or a wrong one:
                                  the process answering is not the one started for the seat
"""

from __future__ import annotations

__all__ = [
    "ActionError",
    "BotCrashed",
    "BotError",
    "BotProtocolError",
    "BotTimeout",
    "ConfigError",
    "FlipFlopError",
    "IllegalActionError",
    "MalformedActionError",
    "ReplayError",
    "SeatTokenError",
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


class BotError(FlipFlopError):
    """A bot failed to answer properly; the message says how.

    Args:
        reason: what went wrong, as one sentence.
        bot: the bot's name, when known.

    Attributes:
        reason: what went wrong, without the bot's name.
        bot: the bot's name, or None when it is not known (e.g. before the handshake).
    """

    def __init__(self, reason: str, bot: str | None = None) -> None:
        super().__init__(f"bot {bot!r}: {reason}" if bot else reason)
        self.reason = reason
        self.bot = bot

    def __reduce__(self) -> tuple[type[BotError], tuple[str, str | None]]:
        # Rebuild from (reason, bot), not from the formatted message, so that a pickled error
        # (e.g. from a worker process) comes back equal.
        return (type(self), (self.reason, self.bot))


class BotTimeout(BotError):
    """The bot did not answer before the deadline."""


class BotCrashed(BotError):
    """The connection to the bot is gone: its process died or its socket closed."""


class BotProtocolError(BotError):
    """An answer that breaks the protocol.

    A malformed or oversized message, a different major protocol version, an unknown match, or
    an error the bot raised while deciding.
    """


class SeatTokenError(BotProtocolError):
    """The handshake did not present the seat's token (``FLIPFLOP_SEAT_TOKEN``), or a wrong one.

    The process answering on the endpoint cannot be the one started for the seat: another bot
    may have taken the endpoint over. The client that raised it makes no further call (each
    raises this error again) and has closed its connection. The message never holds either token.
    """
