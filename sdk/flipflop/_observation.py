"""What one seat may know (RULES.md, "What a player may know"), as frozen values.

An :class:`Observation` is built by the engine from card ownership and reveal events: a card is
in it only if it is in the seat's own hand, or was made public (flip card, a show, a discard,
a spread, a draw from the discard pile, a hand shown at the end). Never another seat's
unshown cards, never the stock's order, never the seed.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from flipflop._actions import Event, Phase
from flipflop._cards import DECK, Card, mask_of
from flipflop._spreads import SpreadKind

__all__ = ["Observation", "Pot", "Pots", "Show", "Spread"]


class Pot(Enum):
    """The three pots of a deal (R-ANTE)."""

    GAME = "game"
    """Won by ending the play (R-END-*) or by 49/50 (R-FIFTY-*)."""
    FLIP = "flip"
    """Won by the lowest dealt card of the flip card's suit (R-FLIP)."""
    FLOP = "flop"
    """Won by the lowest dealt card of the flip suit's partner suit (R-FLIP)."""


@dataclass(frozen=True, slots=True)
class Pots:
    """Chips in each pot."""

    game: int
    flip: int
    flop: int

    def __init__(self, game: int, flip: int, flop: int) -> None:
        # Written out for the compiled build: docs/engine.md, "A compiled engine".
        object.__setattr__(self, "game", game)
        object.__setattr__(self, "flip", flip)
        object.__setattr__(self, "flop", flop)

    @property
    def total(self) -> int:
        """All chips on the table."""
        return self.game + self.flip + self.flop


@dataclass(frozen=True, slots=True)
class Spread:
    """A spread on the table.

    Attributes:
        owner: the seat that laid it down.
        kind: run or set.
        cards: its cards now (lay-offs included), in engine order.
    """

    owner: int
    kind: SpreadKind
    cards: tuple[Card, ...]

    def __init__(self, owner: int, kind: SpreadKind, cards: tuple[Card, ...]) -> None:
        # Written out for the compiled build: docs/engine.md, "A compiled engine".
        object.__setattr__(self, "owner", owner)
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "cards", cards)

    def __str__(self) -> str:
        return " ".join(map(str, self.cards))


@dataclass(frozen=True, slots=True)
class Show:
    """A card shown for the flip or flop pot (R-SHOW)."""

    seat: int
    card: Card
    pot: Pot


@dataclass(frozen=True, slots=True)
class Observation:
    """Everything seat ``seat`` may know at one moment of a match.

    Attributes:
        seat: whose view this is.
        hand_number: 1 for the first deal of the match.
        dealer: the dealer's seat.
        stake: the stake ``S`` (R-STAKE).
        to_act: the seat whose decision it is.
        phase: START (drop or draw) or PLAY (meld, lay off, discard).
        turn: turns completed in this hand.
        bankrolls: every seat's chips (eliminated seats included).
        active: which seats are still in the match.
        all_in: which seats anted to the game pot only this deal (R-ANTE).
        pots: chips in the game, flip and flop pots.
        flip_eligible: seats that anted into the flip pot this deal (R-ELIGIBLE).
        flop_eligible: seats that anted into the flop pot this deal.
        flip_card: the dealer's face-up last card (R-DEAL).
        shows: cards shown for the flip and flop pots so far, in order (R-SHOW).
        hand: this seat's own cards, in engine order.
        hand_sizes: how many cards each seat holds (0 for inactive seats).
        known: for each seat, the cards in its hand that are public (shown, or taken from
            the discard pile); for this seat that is a subset of ``hand``.
        discard_pile: bottom first; the last card is the top.
        stock_size: cards left in the stock.
        spreads: the spreads on the table, indexed as lay-off targets.
        history: every action of this hand so far; stock draws carry no card.
        drawn_from_discard: the card this seat took from the discard pile this turn (it may not
            be discarded again, R-DRAW), if it is this seat's PLAY phase.
    """

    seat: int
    hand_number: int
    dealer: int
    stake: int
    to_act: int
    phase: Phase
    turn: int
    bankrolls: tuple[int, ...]
    active: tuple[bool, ...]
    all_in: tuple[bool, ...]
    pots: Pots
    flip_eligible: tuple[bool, ...]
    flop_eligible: tuple[bool, ...]
    flip_card: Card
    shows: tuple[Show, ...]
    hand: tuple[Card, ...]
    hand_sizes: tuple[int, ...]
    known: tuple[tuple[Card, ...], ...]
    discard_pile: tuple[Card, ...]
    stock_size: int
    spreads: tuple[Spread, ...]
    history: tuple[Event, ...]
    drawn_from_discard: Card | None

    def __init__(
        self,
        seat: int,
        hand_number: int,
        dealer: int,
        stake: int,
        to_act: int,
        phase: Phase,
        turn: int,
        bankrolls: tuple[int, ...],
        active: tuple[bool, ...],
        all_in: tuple[bool, ...],
        pots: Pots,
        flip_eligible: tuple[bool, ...],
        flop_eligible: tuple[bool, ...],
        flip_card: Card,
        shows: tuple[Show, ...],
        hand: tuple[Card, ...],
        hand_sizes: tuple[int, ...],
        known: tuple[tuple[Card, ...], ...],
        discard_pile: tuple[Card, ...],
        stock_size: int,
        spreads: tuple[Spread, ...],
        history: tuple[Event, ...],
        drawn_from_discard: Card | None,
    ) -> None:
        # Written out for the compiled build: docs/engine.md, "A compiled engine".
        object.__setattr__(self, "seat", seat)
        object.__setattr__(self, "hand_number", hand_number)
        object.__setattr__(self, "dealer", dealer)
        object.__setattr__(self, "stake", stake)
        object.__setattr__(self, "to_act", to_act)
        object.__setattr__(self, "phase", phase)
        object.__setattr__(self, "turn", turn)
        object.__setattr__(self, "bankrolls", bankrolls)
        object.__setattr__(self, "active", active)
        object.__setattr__(self, "all_in", all_in)
        object.__setattr__(self, "pots", pots)
        object.__setattr__(self, "flip_eligible", flip_eligible)
        object.__setattr__(self, "flop_eligible", flop_eligible)
        object.__setattr__(self, "flip_card", flip_card)
        object.__setattr__(self, "shows", shows)
        object.__setattr__(self, "hand", hand)
        object.__setattr__(self, "hand_sizes", hand_sizes)
        object.__setattr__(self, "known", known)
        object.__setattr__(self, "discard_pile", discard_pile)
        object.__setattr__(self, "stock_size", stock_size)
        object.__setattr__(self, "spreads", spreads)
        object.__setattr__(self, "history", history)
        object.__setattr__(self, "drawn_from_discard", drawn_from_discard)

    @property
    def seats(self) -> int:
        """Number of seats at the table (active or not)."""
        return len(self.bankrolls)

    @property
    def my_turn(self) -> bool:
        """True when this seat is the one to act."""
        return self.to_act == self.seat

    @property
    def top_discard(self) -> Card | None:
        """The card a draw from the discard pile would take, if any."""
        return self.discard_pile[-1] if self.discard_pile else None

    @property
    def flip_suit(self) -> int:
        """The flip card's suit (as a ``Suit``)."""
        return self.flip_card.suit

    def unseen(self) -> tuple[Card, ...]:
        """Cards this seat cannot see: in other hands unshown, or in the stock."""
        seen = mask_of(self.hand) | (1 << self.flip_card.index)
        seen |= mask_of(self.discard_pile)
        for sp in self.spreads:
            seen |= mask_of(sp.cards)
        for k in self.known:
            seen |= mask_of(k)
        return tuple(c for c in DECK if not (seen >> c.index) & 1)
