"""Hand helpers a bot author reaches for: spreads in a hand, lay-offs, the best melds."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from flipflop._actions import Action, ActionKind
from flipflop._cards import Card, cards_of, hand_total, mask_of
from flipflop._match import MatchState
from flipflop._observation import Observation, Spread
from flipflop._spreads import layoff_mask, spreads_in

__all__ = [
    "MeldedTurn",
    "best_melds",
    "discard_beats_stock",
    "find_spreads",
    "highest_layoff",
    "last_discards",
    "meld_and_lay_off",
    "possible_layoffs",
    "total_after_turn",
]


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


def total_after_turn(cards: Iterable[Card], keep: Card | None = None) -> int:
    """The total left after melding the best spreads and discarding the highest other card.

    Args:
        cards: the hand after drawing.
        keep: a card that may not be discarded (one taken from the discard pile, R-DRAW).
    """
    hand = list(cards)
    melds, _ = best_melds(hand)
    melded = {c for m in melds for c in m}
    rest = [c for c in hand if c not in melded]
    discardable = [c.value for c in rest if c != keep]
    return sum(c.value for c in rest) - max(discardable, default=0)


def discard_beats_stock(obs: Observation) -> bool:
    """True if taking the top discard beats a stock draw on average.

    Compares :func:`total_after_turn` with the top discard (which may not then be thrown,
    R-DRAW) against its mean over the cards this seat cannot see. False with no discard pile.
    """
    top = obs.top_discard
    if top is None:
        return False
    unseen = obs.unseen()
    by_stock = sum(total_after_turn((*obs.hand, c)) for c in unseen) / max(len(unseen), 1)
    return total_after_turn((*obs.hand, top), keep=top) < by_stock


def last_discards(obs: Observation) -> dict[int, int]:
    """The value of each seat's most recent discard this hand (no entry: none yet)."""
    return {
        e.seat: e.action.cards[0].value for e in obs.history if e.action.kind is ActionKind.DISCARD
    }


def highest_layoff(layoffs: Sequence[Action]) -> Action:
    """The lay-off of the highest-value card (the first of them on a tie)."""
    return max(layoffs, key=lambda a: a.cards[0].value)


@dataclass(frozen=True, slots=True)
class MeldedTurn:
    """The melds and lay-offs of a turn, checked on a copy of the table.

    Attributes:
        steps: the melds and lay-offs, in order.
        table: the copy of the table after them (the cards hidden from the seat are dealt at
            random in it: use it for the rules, not for what others hold).
        out: a step ended the hand (R-END-OUT, R-END-TUNK): ``steps`` are the whole turn.
    """

    steps: tuple[Action, ...]
    table: MatchState
    out: bool

    def discards(self) -> list[Action]:
        """The discards allowed after the steps (none when :attr:`out`)."""
        if self.out:
            return []
        return [a for a in self.table.legal_actions() if a.kind is ActionKind.DISCARD]


def meld_and_lay_off(
    obs: Observation, choose_layoff: Callable[[Sequence[Action]], Action] = highest_layoff
) -> MeldedTurn:
    """Meld the spreads that leave the least, then lay off while any card fits.

    Call it after drawing (``obs.phase`` is PLAY). Each step is checked on a copy of the
    table, so one the rules refuse is skipped: a meld that would leave only the card taken
    from the discard pile (R-NO-STRAND), say. It stops at a step that goes out.

    Args:
        obs: the seat's observation after drawing.
        choose_layoff: which of the lay-offs allowed now to make next (default: the card of
            highest value); laying off goes on until none is allowed.
    """
    table = MatchState.from_observation(obs, random.Random(0))
    steps: list[Action] = []

    def play(step: Action) -> bool:
        """Apply ``step``; True if it ended the hand."""
        steps.append(step)
        table.apply(step)
        return table.hand_number != obs.hand_number or table.is_over

    melds, _ = best_melds(obs.hand)
    for m in melds:
        meld = Action.meld(m)
        if meld in table.legal_actions() and play(meld):
            return MeldedTurn(tuple(steps), table, True)
    while layoffs := [a for a in table.legal_actions() if a.kind is ActionKind.LAY_OFF]:
        if play(choose_layoff(layoffs)):
            return MeldedTurn(tuple(steps), table, True)
    return MeldedTurn(tuple(steps), table, False)
