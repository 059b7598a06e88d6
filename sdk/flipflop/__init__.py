"""flipflop: the SDK for Game, Flip, Flop bots — cards, spreads, the rules engine, observations.

A bot author needs one import::

    from flipflop import Bot, Card, Action, Observation

The engine (:class:`MatchState`) is the same code the arena runs, so a bot can use it as a
forward model. Rule ids (``R-…``) refer to ``docs/rules.md``.
"""

import importlib
from typing import TYPE_CHECKING, Any

from flipflop import _match
from flipflop._actions import DRAW_DISCARD, DRAW_STOCK, DROP, Action, ActionKind, Event, Phase
from flipflop._bot import Bot, MatchInfo
from flipflop._cards import DECK, Card, Rank, Suit, cards_of, hand_total, mask_of, parse_cards
from flipflop._errors import (
    ActionError,
    BotCrashed,
    BotError,
    BotProtocolError,
    BotTimeout,
    ConfigError,
    FlipFlopError,
    IllegalActionError,
    MalformedActionError,
    ReplayError,
    SeatTokenError,
)
from flipflop._hand import (
    MeldedTurn,
    best_melds,
    discard_beats_stock,
    find_spreads,
    highest_layoff,
    last_discards,
    meld_and_lay_off,
    possible_layoffs,
    total_after_turn,
)
from flipflop._match import HandDeal, MatchConfig, MatchState, Seed, deck_for
from flipflop._observation import Observation, Pot, Pots, Show, Spread
from flipflop._results import HandResult, MatchResult, Payment, Termination
from flipflop._server import PROTOCOL_VERSION, SEAT_TOKEN_ENV, BotServer, serve
from flipflop._spreads import SpreadKind
from flipflop._wire import ANSWER_CAPS

if TYPE_CHECKING:  # imported on first use (``__getattr__``), seen here by type checkers
    from flipflop._client import BotClient, BotIdentity, Decision
    from flipflop._conformance import (
        ConformanceReport,
        Problem,
        ProblemKind,
        check_bot,
        format_report,
    )
    from flipflop._deals import stack_deck
    from flipflop._harness import apply_turn, default_action, play_default, play_match
    from flipflop._manifest import BotManifest, ManifestError, load_bot, read_manifest
    from flipflop._replay import (
        REPLAY_FORMAT,
        REPLAY_VERSION,
        Replay,
        ReplayWriter,
        action_from_dict,
        action_to_dict,
        read_replay,
        replay,
        state_at,
        to_jsonable,
    )

_ON_FIRST_USE = (
    "flipflop._client",
    "flipflop._conformance",
    "flipflop._deals",
    "flipflop._harness",
    "flipflop._manifest",
    "flipflop._replay",
)
"""Modules a bot being served never needs (the arena's client, the conformance check, the
in-process harness, manifests, replays, stacked decks): imported when one of their names is
first asked for, so that a bot's process starts without them (about a sixth of its start-up
CPU). Their names are those of :data:`__all__` that are not set above."""


if not TYPE_CHECKING:  # hidden from type checkers, so that a misspelt name stays an error

    def __getattr__(name: str) -> Any:
        """``flipflop.NAME`` for a public name of :data:`_ON_FIRST_USE`'s modules."""
        if name in __all__:
            for module in map(importlib.import_module, _ON_FIRST_USE):
                if name in module.__all__:
                    value = globals()[name] = getattr(module, name)
                    return value
        raise AttributeError(f"module 'flipflop' has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted(set(globals()) | set(__all__))


__version__ = "0.1.0"

COMPILED: bool = not str(_match.__file__).endswith(".py")
"""Whether the engine modules are the compiled build (``docs/engine.md`` "A compiled engine").

The pure-Python modules are the reference and the fallback; a compiled build plays the same
matches (``tests/sdk/test_compiled.py``).
"""

__all__ = [
    "ANSWER_CAPS",
    "COMPILED",
    "DECK",
    "DRAW_DISCARD",
    "DRAW_STOCK",
    "DROP",
    "PROTOCOL_VERSION",
    "REPLAY_FORMAT",
    "REPLAY_VERSION",
    "SEAT_TOKEN_ENV",
    "Action",
    "ActionError",
    "ActionKind",
    "Bot",
    "BotClient",
    "BotCrashed",
    "BotError",
    "BotIdentity",
    "BotManifest",
    "BotProtocolError",
    "BotServer",
    "BotTimeout",
    "Card",
    "ConfigError",
    "ConformanceReport",
    "Decision",
    "Event",
    "FlipFlopError",
    "HandDeal",
    "HandResult",
    "IllegalActionError",
    "MalformedActionError",
    "ManifestError",
    "MatchConfig",
    "MatchInfo",
    "MatchResult",
    "MatchState",
    "MeldedTurn",
    "Observation",
    "Payment",
    "Phase",
    "Pot",
    "Pots",
    "Problem",
    "ProblemKind",
    "Rank",
    "Replay",
    "ReplayError",
    "ReplayWriter",
    "SeatTokenError",
    "Seed",
    "Show",
    "Spread",
    "SpreadKind",
    "Suit",
    "Termination",
    "__version__",
    "action_from_dict",
    "action_to_dict",
    "apply_turn",
    "best_melds",
    "cards_of",
    "check_bot",
    "deck_for",
    "default_action",
    "discard_beats_stock",
    "find_spreads",
    "format_report",
    "hand_total",
    "highest_layoff",
    "last_discards",
    "load_bot",
    "mask_of",
    "meld_and_lay_off",
    "parse_cards",
    "play_default",
    "play_match",
    "possible_layoffs",
    "read_manifest",
    "read_replay",
    "replay",
    "serve",
    "stack_deck",
    "state_at",
    "to_jsonable",
    "total_after_turn",
]
