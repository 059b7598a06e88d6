"""Spreads: runs and sets (R-RUN, R-SET) and the cards that lay off onto them (R-LAYOFF).

All functions work on 52-bit card masks (see ``_cards``); the public ``Spread`` value type
lives in ``_observation``.
"""

from __future__ import annotations

from enum import Enum

from flipflop._cards import SUIT_MASK

__all__ = ["SpreadKind", "layoff_mask", "spread_kind", "spreads_in"]


class SpreadKind(Enum):
    """What makes a group of cards a spread."""

    RUN = "run"
    """Three or more consecutive cards of one suit, aces low (R-RUN)."""
    SET = "set"
    """Three or four cards of one rank (R-SET)."""


_RANK_BITS = sum(1 << (13 * s) for s in range(4))  # bit r of each suit, shifted by rank r


def _runs13(m: int) -> tuple[int, ...]:
    """All runs (as 13-bit rank masks) that lie inside a 13-bit rank mask."""
    out = []
    start = 0
    while start < 13:
        if not (m >> start) & 1:
            start += 1
            continue
        end = start
        while end + 1 < 13 and (m >> (end + 1)) & 1:
            end += 1
        for lo in range(start, end - 1):
            for hi in range(lo + 2, end + 1):
                out.append(((1 << (hi - lo + 1)) - 1) << lo)
        start = end + 1
    return tuple(out)


_RUNS13: dict[int, tuple[int, ...]] = {}


def runs13(m: int) -> tuple[int, ...]:
    """Cached :func:`_runs13`; hands are sparse, so the cache stays small."""
    r = _RUNS13.get(m)
    if r is None:
        r = _RUNS13[m] = _runs13(m)
    return r


def _is_run13(m: int) -> bool:
    """True if ``m`` is one contiguous block of at least three ranks."""
    if m == 0:
        return False
    low = m & -m
    block = m // low  # shift down to bit 0
    return block & (block + 1) == 0 and block.bit_count() >= 3


def spread_kind(mask: int) -> SpreadKind | None:
    """The kind of spread ``mask`` is, or None if it is not a spread (R-RUN, R-SET)."""
    n = mask.bit_count()
    if n < 3:
        return None
    for s in range(4):
        sm = (mask >> (13 * s)) & SUIT_MASK
        if sm:
            if sm << (13 * s) == mask:
                return SpreadKind.RUN if _is_run13(sm) else None
            break
    if n > 4:
        return None
    low = (mask & -mask).bit_length() - 1
    rank = low % 13
    if mask & ~(_RANK_BITS << rank):
        return None
    return SpreadKind.SET


def spreads_in(hand: int) -> list[int]:
    """Every spread (as a mask) that can be made from the cards of ``hand``.

    Runs: every block of three or more consecutive cards of one suit. Sets: every three of a
    rank, and the four when all four are held.
    """
    out: list[int] = []
    for s in range(4):
        sm = (hand >> (13 * s)) & SUIT_MASK
        if sm.bit_count() >= 3:
            shift = 13 * s
            for r in runs13(sm):
                out.append(r << shift)
    a = hand & SUIT_MASK
    b = (hand >> 13) & SUIT_MASK
    c = (hand >> 26) & SUIT_MASK
    d = hand >> 39
    triples = (a & b & c) | (a & b & d) | (a & c & d) | (b & c & d)
    while triples:
        low = triples & -triples
        rank = low.bit_length() - 1
        triples ^= low
        group = hand & (_RANK_BITS << rank)
        if group.bit_count() == 4:
            out.append(group)
            g = group
            while g:
                one = g & -g
                out.append(group ^ one)
                g ^= one
        else:
            out.append(group)
    return out


def layoff_mask(mask: int, kind: SpreadKind) -> int:
    """The cards that could be laid off onto this spread now (R-LAYOFF).

    A run takes the card just below its lowest or just above its highest (aces low, no wrap);
    a set of three takes the fourth card of its rank; a set of four takes nothing.
    """
    if kind is SpreadKind.SET:
        if mask.bit_count() >= 4:
            return 0
        rank = ((mask & -mask).bit_length() - 1) % 13
        return (_RANK_BITS << rank) & ~mask
    low = (mask & -mask).bit_length() - 1
    high = mask.bit_length() - 1
    suit_base = (low // 13) * 13
    out = 0
    if low > suit_base:
        out |= 1 << (low - 1)
    if high < suit_base + 12:
        out |= 1 << (high + 1)
    return out
