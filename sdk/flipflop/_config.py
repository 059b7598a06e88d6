"""The rules parameters of a match: :class:`MatchConfig`.

Its own module, which the compiled build (``sdk/setup.py``) leaves as Python: a config is
built from untrusted input (a league's settings, a replay file, a bot's wire message), and its
checks must refuse a wrongly typed value with the same ``ConfigError`` in either build (a
compiled class would refuse it earlier with a ``TypeError``, and read ``True`` as ``1``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from flipflop._errors import ConfigError

__all__ = ["MatchConfig"]


@dataclass(frozen=True, slots=True)
class MatchConfig:
    """The rules parameters of a match (R-PLAYERS, R-STAKE, R-END, R-TURN-CAP).

    The defaults (stake 10, bankroll 100, i.e. ten stakes) were chosen by measurement so that
    almost every match ends by survival rather than by the hand cap: see ``docs/engine.md``.

    Attributes:
        seats: players at the table, 3 to 5.
        stake: ``S``, the ante per pot and the size of an extra stake (chips, > 0).
        bankroll: every player's starting chips (at least ``S``).
        hand_cap: the match ends after this many hands if it has not ended before (None: never).
        turn_cap: a hand's play ends after this many turns (R-TURN-CAP).
    """

    seats: int = 4
    stake: int = 10
    bankroll: int = 100
    hand_cap: int | None = 500
    turn_cap: int = 200

    def __post_init__(self) -> None:
        for name in ("seats", "stake", "bankroll", "turn_cap"):
            if type(getattr(self, name)) is not int:
                raise ConfigError(f"{name} must be an integer, got {getattr(self, name)!r}")
        if not 3 <= self.seats <= 5:
            raise ConfigError(f"seats must be 3 to 5 (R-PLAYERS), got {self.seats}")
        if self.stake < 1:
            raise ConfigError(f"stake must be at least 1 chip, got {self.stake}")
        if self.bankroll < self.stake:
            raise ConfigError(
                f"bankroll {self.bankroll} is below the stake {self.stake}: nobody could ante"
            )
        if self.hand_cap is not None and (type(self.hand_cap) is not int or self.hand_cap < 1):
            raise ConfigError(f"hand_cap must be a positive integer or None, got {self.hand_cap!r}")
        if self.turn_cap < 1:
            raise ConfigError(f"turn_cap must be at least 1, got {self.turn_cap}")

    def to_dict(self) -> dict[str, int | None]:
        """A JSON-ready dict (used by replays)."""
        return asdict(self)
