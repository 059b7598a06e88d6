"""Actions a seat can take, and the events a hand's history is made of (R-DROP … R-DISCARD)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from flipflop._cards import DECK, Card, parse_cards
from flipflop._errors import MalformedActionError

__all__ = ["DRAW_DISCARD", "DRAW_STOCK", "DROP", "Action", "ActionKind", "Event", "Phase"]


class Phase(Enum):
    """Which half of a turn the seat to act is in."""

    START = "start"
    """Start of a turn: drop, draw from the stock or draw from the discard pile."""
    PLAY = "play"
    """After drawing: meld, lay off, discard (a turn ends with a discard or an empty hand)."""


class ActionKind(Enum):
    """The kinds of action in a turn."""

    DROP = "drop"
    """End the play by showing a hand claimed to be lowest (R-DROP, R-END-DROP)."""
    DRAW_STOCK = "draw_stock"
    """Take the top card of the face-down stock (R-DRAW)."""
    DRAW_DISCARD = "draw_discard"
    """Take the top card of the discard pile; it may not be discarded this turn (R-DRAW)."""
    MELD = "meld"
    """Lay down a new spread from the hand (R-MELD, R-RUN, R-SET)."""
    LAY_OFF = "lay_off"
    """Add one card to a spread already on the table, anyone's (R-LAYOFF)."""
    DISCARD = "discard"
    """Put one card face up on the discard pile, ending the turn (R-DISCARD)."""


_START_KINDS = frozenset({ActionKind.DROP, ActionKind.DRAW_STOCK, ActionKind.DRAW_DISCARD})


@dataclass(frozen=True, slots=True)
class Action:
    """One action of a seat.

    Build them with the constructors ``Action.meld(cards)``, ``Action.discard(c)``,
    ``Action.lay_off(card, target)`` or the constants ``DROP``, ``DRAW_STOCK``, ``DRAW_DISCARD``.

    Attributes:
        kind: what the action does.
        cards: the spread's cards for a meld (engine order), the one card for a lay-off or
            discard, empty otherwise.
        target: for a lay-off, the index of the spread on the table (``Observation.spreads``).
    """

    kind: ActionKind
    cards: tuple[Card, ...] = ()
    target: int = -1
    mask: int = field(default=0, compare=False, repr=False)
    """The cards as a 52-bit mask (derived from ``cards``)."""

    def __post_init__(self) -> None:
        m = 0
        for c in self.cards:
            if not isinstance(c, Card):
                raise MalformedActionError(f"not a card: {c!r}")
            m |= 1 << c.index
        if m.bit_count() != len(self.cards):
            raise MalformedActionError(f"a card appears twice in {' '.join(map(str, self.cards))}")
        object.__setattr__(self, "mask", m)

    @property
    def is_start(self) -> bool:
        """True for the actions that begin a turn (drop or draw)."""
        return self.kind in _START_KINDS

    @staticmethod
    def meld(cards: tuple[Card, ...] | list[Card] | str) -> Action:
        """A meld of these cards (a string is parsed: ``"3h 4h 5h"``)."""
        cs = parse_cards(cards) if isinstance(cards, str) else tuple(cards)
        return Action(ActionKind.MELD, tuple(sorted(cs, key=_index)))

    @staticmethod
    def lay_off(card: Card | str, target: int) -> Action:
        """Lay ``card`` off onto spread number ``target``."""
        c = Card.parse(card) if isinstance(card, str) else card
        return Action(ActionKind.LAY_OFF, (c,), target)

    @staticmethod
    def discard(card: Card | str) -> Action:
        """Discard ``card``."""
        c = Card.parse(card) if isinstance(card, str) else card
        return _DISCARDS[c.index] if isinstance(c, Card) else Action(ActionKind.DISCARD, (c,))

    def __str__(self) -> str:
        if self.kind is ActionKind.MELD:
            return "meld " + " ".join(map(str, self.cards))
        if self.kind is ActionKind.LAY_OFF:
            return f"lay off {self.cards[0]} on spread {self.target}"
        if self.kind is ActionKind.DISCARD:
            return f"discard {self.cards[0]}"
        return str(self.kind.value).replace("_", " ")


def _index(c: Card) -> int:
    return c.index


DROP = Action(ActionKind.DROP)
"""The drop action (R-DROP)."""
DRAW_STOCK = Action(ActionKind.DRAW_STOCK)
"""Draw from the stock (R-DRAW)."""
DRAW_DISCARD = Action(ActionKind.DRAW_DISCARD)
"""Draw the top of the discard pile (R-DRAW)."""
_DISCARDS = tuple(Action(ActionKind.DISCARD, (c,)) for c in DECK)


@dataclass(frozen=True, slots=True)
class Event:
    """One action in a hand's public history.

    Attributes:
        seat: who acted.
        action: what they did.
        card: the card taken, for a draw from the discard pile (public); None otherwise —
            a stock draw shows no card.
    """

    seat: int
    action: Action
    card: Card | None = None
