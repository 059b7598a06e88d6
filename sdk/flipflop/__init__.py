"""flipflop: the SDK for Game, Flip, Flop bots — cards, spreads, the rules engine, observations.

A bot author needs one import::

    from flipflop import Bot, Card, Action, Observation

The engine (:class:`MatchState`) is the same code the arena runs, so a bot can use it as a
forward model. Rule ids (``R-…``) refer to ``docs/rules.md``.
"""

from flipflop._actions import DRAW_DISCARD, DRAW_STOCK, DROP, Action, ActionKind, Event, Phase
from flipflop._cards import DECK, Card, Rank, Suit, cards_of, hand_total, mask_of, parse_cards
from flipflop._deals import stack_deck
from flipflop._errors import (
    ActionError,
    ConfigError,
    FlipFlopError,
    IllegalActionError,
    MalformedActionError,
    ReplayError,
)
from flipflop._match import MatchConfig, MatchState, deck_for
from flipflop._observation import Observation, Pot, Pots, Show, Spread
from flipflop._results import HandResult, MatchResult, Payment, Termination
from flipflop._spreads import SpreadKind

__version__ = "0.1.0"

__all__ = [
    "DECK",
    "DRAW_DISCARD",
    "DRAW_STOCK",
    "DROP",
    "Action",
    "ActionError",
    "ActionKind",
    "Card",
    "ConfigError",
    "Event",
    "FlipFlopError",
    "HandResult",
    "IllegalActionError",
    "MalformedActionError",
    "MatchConfig",
    "MatchResult",
    "MatchState",
    "Observation",
    "Payment",
    "Phase",
    "Pot",
    "Pots",
    "Rank",
    "ReplayError",
    "Show",
    "Spread",
    "SpreadKind",
    "Suit",
    "__version__",
    "cards_of",
    "deck_for",
    "hand_total",
    "mask_of",
    "parse_cards",
    "stack_deck",
]
