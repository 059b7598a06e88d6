"""Cards, suits, ranks and card values (R-DECK, R-VALUE).

Internally a card is an index ``0..51`` (``suit * 13 + rank - 1``) and a set of cards is a
52-bit integer mask, so hand totals and spread tests are a few table look-ups. Bot authors
see :class:`Card`, a frozen value; the 52 instances are shared (:data:`DECK`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from enum import IntEnum

from flipflop._errors import MalformedActionError

__all__ = [
    "DECK",
    "Card",
    "Rank",
    "Suit",
    "cards_of",
    "hand_total",
    "mask_of",
    "parse_cards",
]


class Suit(IntEnum):
    """The four suits in the order used for card indices (R-DECK)."""

    CLUBS = 0
    """♣, black; its flop partner is ♠."""
    DIAMONDS = 1
    """♦, red; its flop partner is ♥."""
    HEARTS = 2
    """♥, red; its flop partner is ♦."""
    SPADES = 3
    """♠, black; its flop partner is ♣."""

    @property
    def symbol(self) -> str:
        """The suit as people write it: ``♣ ♦ ♥ ♠``."""
        return _SUIT_SYMBOLS[self]

    @property
    def letter(self) -> str:
        """The suit as one ASCII letter: ``c d h s``."""
        return "cdhs"[self]

    @property
    def partner(self) -> Suit:
        """The other suit of the same colour (♣↔♠, ♦↔♥): the flop suit of a flip suit (R-FLIP)."""
        return Suit(3 - self)


_SUIT_SYMBOLS = ("♣", "♦", "♥", "♠")


class Rank(IntEnum):
    """Card ranks; aces are always low (R-DECK)."""

    ACE = 1
    """A, worth 1 point; low only (Q-K-A is not a run)."""
    TWO = 2
    """2."""
    THREE = 3
    """3."""
    FOUR = 4
    """4."""
    FIVE = 5
    """5."""
    SIX = 6
    """6."""
    SEVEN = 7
    """7."""
    EIGHT = 8
    """8."""
    NINE = 9
    """9."""
    TEN = 10
    """10."""
    JACK = 11
    """J, worth 10 points."""
    QUEEN = 12
    """Q, worth 10 points."""
    KING = 13
    """K, worth 10 points."""

    @property
    def points(self) -> int:
        """Point value (R-VALUE): A = 1, 2-10 face value, J/Q/K = 10."""
        return min(int(self), 10)

    @property
    def label(self) -> str:
        """The rank as people write it: ``A 2 … 10 J Q K``."""
        return _RANK_LABELS[self - 1]


_RANK_LABELS = ("A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K")
_RANK_CHARS = "A23456789TJQK"


@dataclass(frozen=True, slots=True, order=True)
class Card:
    """One playing card. ``Card(Rank.TEN, Suit.HEARTS)``; ``str()`` gives ``10♥``."""

    suit: Suit
    rank: Rank
    index: int = field(init=False, compare=False, hash=False, repr=False)
    """Position ``0..51`` in the engine's card order (``suit * 13 + rank - 1``)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "index", int(self.suit) * 13 + int(self.rank) - 1)

    @property
    def value(self) -> int:
        """Point value of the card (R-VALUE)."""
        return self.rank.points

    @property
    def code(self) -> str:
        """Two-character ASCII code: rank ``A23456789TJQK`` then suit ``cdhs`` (``Th``)."""
        return _RANK_CHARS[self.rank - 1] + self.suit.letter

    @staticmethod
    def of(index: int) -> Card:
        """The shared card with engine index ``index`` (0..51)."""
        return DECK[index]

    @staticmethod
    def parse(text: str) -> Card:
        """Parse ``10♥``, ``10h``, ``Th``, ``th`` or ``AS``; else raise MalformedActionError."""
        known = _BY_TEXT.get(text)
        if known is not None:  # the usual spellings (replays, str(card)), without parsing
            return known
        t = text.strip()
        if len(t) < 2:
            raise MalformedActionError(f"not a card: {text!r}")
        rank_text, suit_text = t[:-1].upper(), t[-1]
        suit_index = "♣♦♥♠".find(suit_text)
        if suit_index < 0:
            suit_index = "cdhs".find(suit_text.lower())
        if rank_text == "10":
            rank_text = "T"
        rank_index = _RANK_CHARS.find(rank_text) if len(rank_text) == 1 else -1
        if suit_index < 0 or rank_index < 0:
            raise MalformedActionError(f"not a card: {text!r}")
        return DECK[suit_index * 13 + rank_index]

    def __str__(self) -> str:
        return self.rank.label + self.suit.symbol

    def __repr__(self) -> str:
        return f"Card({self})"


DECK: tuple[Card, ...] = tuple(Card(Suit(i // 13), Rank(i % 13 + 1)) for i in range(52))
"""The 52 cards in engine order (♣A … ♣K, ♦A … ♠K)."""

_BY_TEXT: dict[str, Card] = {
    **{f"{_RANK_CHARS[c.rank - 1]}{'cdhs'[c.suit]}": c for c in DECK},
    **{str(c): c for c in DECK},
}
"""Each card by its replay code (``Th``) and as it prints (``10♥``): parsing's fast path."""

FULL_MASK = (1 << 52) - 1
SUIT_MASK = 0x1FFF

_VALUE13 = [0] * 8192
for _m in range(1, 8192):
    _low = (_m & -_m).bit_length() - 1
    _VALUE13[_m] = _VALUE13[_m & (_m - 1)] + min(_low + 1, 10)
VALUE13: tuple[int, ...] = tuple(_VALUE13)
"""Total point value of a 13-bit rank mask within one suit."""
del _VALUE13

CARD_VALUE: tuple[int, ...] = tuple(c.value for c in DECK)


def hand_total(cards: int | Iterable[Card]) -> int:
    """The sum of card values (R-VALUE), for a mask or any iterable of cards."""
    if isinstance(cards, int):
        m = cards
        return (
            VALUE13[m & SUIT_MASK]
            + VALUE13[(m >> 13) & SUIT_MASK]
            + VALUE13[(m >> 26) & SUIT_MASK]
            + VALUE13[m >> 39]
        )
    return sum(c.rank.points for c in cards)


def indices_of(mask: int) -> Iterator[int]:
    """Card indices in a mask, lowest first."""
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


_SUIT_CARDS: tuple[list[tuple[Card, ...] | None], ...] = tuple([None] * 8192 for _ in range(4))
"""Per suit, the cards of each 13-bit rank mask, filled in as masks turn up."""


def _suit_cards(suit: int, m13: int) -> tuple[Card, ...]:
    base = 13 * suit
    t = _SUIT_CARDS[suit][m13] = tuple(DECK[base + r] for r in range(13) if (m13 >> r) & 1)
    return t


def cards_of(mask: int) -> tuple[Card, ...]:
    """The cards in a mask, in engine order (cached per suit: observations call this a lot)."""
    out: tuple[Card, ...] = ()
    for suit, known in enumerate(_SUIT_CARDS):
        m13 = (mask >> (13 * suit)) & SUIT_MASK
        if m13:
            t = known[m13]
            out += t if t is not None else _suit_cards(suit, m13)
    return out


def mask_of(cards: Iterable[Card]) -> int:
    """The mask of some cards (duplicates collapse)."""
    m = 0
    for c in cards:
        m |= 1 << c.index
    return m


def parse_cards(text: str) -> tuple[Card, ...]:
    """Parse space- or comma-separated cards: ``"3♥ 4♥ 5♥"`` or ``"3h,4h,5h"``."""
    return tuple(Card.parse(t) for t in text.replace(",", " ").split())
