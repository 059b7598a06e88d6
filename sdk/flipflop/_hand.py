"""Hand helpers a bot author reaches for: spreads in a hand, lay-offs, the best melds."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from flipflop._cards import Card, cards_of, hand_total, mask_of
from flipflop._observation import Spread
from flipflop._spreads import layoff_mask, spreads_in

__all__ = ["best_melds", "find_spreads", "possible_layoffs"]


def find_spreads(cards: Iterable[Card]) -> list[tuple[Card, ...]]:
    """Every run and set (R-RUN, R-SET) that can be made from ``cards`` (they may overlap)."""
    return [cards_of(m) for m in spreads_in(mask_of(cards))]


def possible_layoffs(cards: Iterable[Card], spreads: Sequence[Spread]) -> list[tuple[Card, int]]:
    """``(card, spread index)`` for every card of ``cards`` that fits a spread now (R-LAYOFF)."""
    hand = mask_of(cards)
    out = []
    for t, sp in enumerate(spreads):
        for c in cards_of(layoff_mask(mask_of(sp.cards), sp.kind) & hand):
            out.append((c, t))
    return out


def best_melds(cards: Iterable[Card]) -> tuple[list[tuple[Card, ...]], int]:
    """Disjoint spreads that leave the lowest total, and that total (ties: fewer cards melded).

    Hands hold at most six cards, so trying every combination of spreads is cheap.
    """
    hand = mask_of(cards)
    options = spreads_in(hand)
    best: tuple[int, int, list[int]] = (hand_total(hand), 0, [])

    def walk(start: int, left: int, chosen: list[int]) -> None:
        nonlocal best
        key = (hand_total(left), hand.bit_count() - left.bit_count(), list(chosen))
        if key[:2] < best[:2]:
            best = key
        for i in range(start, len(options)):
            m = options[i]
            if left & m == m:
                chosen.append(m)
                walk(i + 1, left & ~m, chosen)
                chosen.pop()

    walk(0, hand, [])
    return [cards_of(m) for m in best[2]], best[0]
