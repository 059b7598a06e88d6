"""Stacked decks: a deal laid out by hand, for rule scenarios, tutorials and bot tests."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from flipflop._cards import Card, parse_cards
from flipflop._errors import ConfigError

__all__ = ["stack_deck"]


def stack_deck(
    hands: Mapping[int, Sequence[Card] | str],
    *,
    dealer: int,
    seats: int,
    stock: Sequence[Card] | str = (),
) -> list[int]:
    """Build the deck (card indices, top first) that deals exactly these hands (R-DEAL).

    Args:
        hands: five cards for every seat that is dealt in; the dealer's LAST card is the flip
            card. Strings are parsed (``"Ac 2c 3c Kd Kh"``).
        dealer: the dealer's seat.
        seats: seats at the table; seats missing from ``hands`` are treated as not dealt in
            (eliminated).
        stock: the top of the stock, first card drawn first; the unused cards follow in engine
            order.

    Returns:
        A deck for ``MatchState(..., decks=[deck])``.
    """
    parsed = {s: parse_cards(h) if isinstance(h, str) else tuple(h) for s, h in hands.items()}
    order = [(dealer + k) % seats for k in range(1, seats + 1) if (dealer + k) % seats in parsed]
    if any(len(parsed[s]) != 5 for s in order):
        raise ConfigError("every hand must have exactly five cards")
    top = parse_cards(stock) if isinstance(stock, str) else tuple(stock)
    deck: list[int] = []
    for j in range(5):
        deck.extend(parsed[s][j].index for s in order)
    deck.extend(c.index for c in top)
    if len(set(deck)) != len(deck):
        raise ConfigError("a card appears twice in the stacked deck")
    used = set(deck)
    deck.extend(i for i in range(52) if i not in used)
    return deck
