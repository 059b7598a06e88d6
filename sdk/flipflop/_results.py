"""How a hand and a match ended: settlements (R-SPLIT … R-ELIM) and placements (R-END)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from flipflop._cards import Card
from flipflop._observation import Pot, Pots

__all__ = ["HandResult", "MatchResult", "Payment", "Termination"]


class Termination(Enum):
    """How the play of a hand ended."""

    FIFTY = "fifty"
    """Someone was dealt 49 or 50; there was no play (R-FIFTY-CHECK)."""
    OUT = "out"
    """A player ended a turn with no cards (R-END-OUT)."""
    TUNK = "tunk"
    """A player went out with exactly two spreads of three of their own (R-END-TUNK)."""
    DROP = "drop"
    """A player dropped and had the strictly lowest total (R-END-DROP)."""
    CAUGHT = "caught"
    """A player dropped and was caught: someone else's total was as low or lower (R-END-DROP)."""
    STOCK = "stock"
    """The last stock card was drawn; lowest total won (R-END-STOCK)."""
    TURN_CAP = "turn_cap"
    """The hand reached the turn cap and was scored as at stock exhaustion (R-TURN-CAP)."""


@dataclass(frozen=True, slots=True)
class Payment:
    """Chips moving between a seat and a pot.

    A positive ``amount`` goes seat → pot (ante, extra stake); a negative one pot → seat (winnings).

    Attributes:
        seat: who paid or was paid.
        pot: which pot (the 50-holders' side pot of R-FIFTY-PAY counts as GAME).
        amount: chips; positive into the pot, negative out of it.
        reason: ``ante``, ``extra`` (R-EXTRA), ``win`` or ``carry`` (carried pots at match end).
    """

    seat: int
    pot: Pot
    amount: int
    reason: str


@dataclass(frozen=True, slots=True)
class HandResult:
    """The settlement of one hand.

    Attributes:
        hand_number: 1-based.
        dealer: the dealer's seat.
        termination: how the play ended.
        ender: the seat that went out, tunked, dropped or drew the last stock card (None for
            49/50).
        flip_card: the dealer's face-up card.
        payments: every chip movement of the hand, in order (antes first).
        game_winners: the seats that won a share of the game pot.
        flip_winner: who won the flip pot (None: carried, R-CARRY).
        flop_winner: who won the flop pot (None: carried).
        shown_hands: per seat, the hand shown at the end (R-HANDS-SHOWN), or None.
        totals: per seat, the shown hand's total, or None.
        eliminated: seats eliminated by this hand (R-ELIM), in seat order.
        bankrolls: every seat's chips after the hand.
        deltas: every seat's net change over the hand.
        carried: chips left on the table for the next deal (R-CARRY).
    """

    hand_number: int
    dealer: int
    termination: Termination
    ender: int | None
    flip_card: Card
    payments: tuple[Payment, ...]
    game_winners: tuple[int, ...]
    flip_winner: int | None
    flop_winner: int | None
    shown_hands: tuple[tuple[Card, ...] | None, ...]
    totals: tuple[int | None, ...]
    eliminated: tuple[int, ...]
    bankrolls: tuple[int, ...]
    deltas: tuple[int, ...]
    carried: Pots

    def __init__(
        self,
        hand_number: int,
        dealer: int,
        termination: Termination,
        ender: int | None,
        flip_card: Card,
        payments: tuple[Payment, ...],
        game_winners: tuple[int, ...],
        flip_winner: int | None,
        flop_winner: int | None,
        shown_hands: tuple[tuple[Card, ...] | None, ...],
        totals: tuple[int | None, ...],
        eliminated: tuple[int, ...],
        bankrolls: tuple[int, ...],
        deltas: tuple[int, ...],
        carried: Pots,
    ) -> None:
        # Written out for the compiled build: docs/engine.md, "A compiled engine".
        object.__setattr__(self, "hand_number", hand_number)
        object.__setattr__(self, "dealer", dealer)
        object.__setattr__(self, "termination", termination)
        object.__setattr__(self, "ender", ender)
        object.__setattr__(self, "flip_card", flip_card)
        object.__setattr__(self, "payments", payments)
        object.__setattr__(self, "game_winners", game_winners)
        object.__setattr__(self, "flip_winner", flip_winner)
        object.__setattr__(self, "flop_winner", flop_winner)
        object.__setattr__(self, "shown_hands", shown_hands)
        object.__setattr__(self, "totals", totals)
        object.__setattr__(self, "eliminated", eliminated)
        object.__setattr__(self, "bankrolls", bankrolls)
        object.__setattr__(self, "deltas", deltas)
        object.__setattr__(self, "carried", carried)


@dataclass(frozen=True, slots=True)
class MatchResult:
    """The bankroll-survival result of a match (R-END).

    Attributes:
        placements: per seat, its place (1 = best; tied seats share a place).
        bankrolls: per seat, final chips (carried pots already paid out).
        eliminated_in: per seat, the hand it was eliminated in, or None for survivors.
        hands: hands played.
        by_cap: True if the hand cap ended the match.
        carry_payments: how chips left in carried pots were paid out at the end.
    """

    placements: tuple[int, ...]
    bankrolls: tuple[int, ...]
    eliminated_in: tuple[int | None, ...]
    hands: int
    by_cap: bool
    carry_payments: tuple[Payment, ...]

    @property
    def winners(self) -> tuple[int, ...]:
        """Seats in first place."""
        return tuple(s for s, p in enumerate(self.placements) if p == 1)

    @property
    def order(self) -> tuple[int, ...]:
        """Seats from best to worst place (ties in seat order)."""
        return tuple(sorted(range(len(self.placements)), key=lambda s: (self.placements[s], s)))
