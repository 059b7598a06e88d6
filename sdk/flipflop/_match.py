"""The rules engine: a match of Game, Flip, Flop as one mutable state.

``MatchState(config, seed)`` deals the first hand; the driver then loops::

    while not state.is_over:
        state.apply(choose(state.legal_actions()))

Randomness enters only through the deals: hand ``h`` is dealt from ``deck_for(seed, h)``, a
keyed pseudo-random function of the match seed (and the first dealer from the seed too), so the
same config, seed and actions give the same match, and a deck can be replayed with the seats
permuted. Everything else is a pure function of the actions applied. Rule ids refer to
``docs/rules.md``.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from dataclasses import dataclass
from math import factorial, prod
from operator import sub

from flipflop._actions import (
    _DISCARDS,
    _START_KINDS,
    DRAW_DISCARD,
    DRAW_STOCK,
    DROP,
    Action,
    ActionKind,
    Event,
    Phase,
)
from flipflop._cards import DECK, SUIT_MASK, Card, cards_of, hand_total
from flipflop._config import MatchConfig
from flipflop._errors import ConfigError, IllegalActionError, MalformedActionError
from flipflop._observation import Observation, Pot, Pots, Show, Spread
from flipflop._results import HandResult, MatchResult, Payment, Termination
from flipflop._spreads import SpreadKind, layoff_mask, spread_kind, spreads_in

__all__ = ["HandDeal", "MatchConfig", "MatchState", "deck_for"]

_GAME, _FLIP, _FLOP = 0, 1, 2
_POTS = (Pot.GAME, Pot.FLIP, Pot.FLOP)
_HAND_SIZE = 5
_TEN_POINTS = sum(1 << c.index for c in DECK if c.value == 10)
_CLOCKWISE = {
    n: tuple(tuple((dealer + k) % n for k in range(1, n + 1)) for dealer in range(n))
    for n in range(3, 6)
}
"""``_CLOCKWISE[seats][dealer]``: every seat clockwise from the dealer's left, the dealer last."""


Seed = bytes | str | int
"""A match seed: the key of every deal of the match (see :func:`deck_for`)."""

_DECK_LABEL = b"flipflop/deck/v1"
_DEALER_LABEL = b"flipflop/dealer/v1"
_FACTORIAL_52 = factorial(52)


def _radix_groups() -> tuple[tuple[int, tuple[tuple[int, int], ...]], ...]:
    """The Fisher-Yates radices 52, 51, …, 2 in runs whose product stays below 2**62.

    Each run's digits come out of one machine-sized remainder, so only four divisions touch
    the 226-bit shuffle index; a step is ``(radix, position swapped with the draw)``.
    """
    groups = []
    run: list[int] = []
    for radix in range(52, 1, -1):
        if prod(run) * radix >= 1 << 62:
            groups.append((prod(run), tuple((r, r - 1) for r in run)))
            run = []
        run.append(radix)
    groups.append((prod(run), tuple((r, r - 1) for r in run)))
    return tuple(groups)


_RADIX_GROUPS = _radix_groups()


def _seed_key(seed: Seed) -> bytes:
    """The HMAC key of a match seed: bytes as they are, a str as UTF-8, an int as its decimal."""
    if isinstance(seed, bytes):
        return seed
    if isinstance(seed, str):
        return seed.encode("utf-8")
    if isinstance(seed, int):
        return b"%d" % seed
    raise TypeError(f"a match seed is bytes, str or int, not {type(seed).__name__}")


_IPAD = bytes(b ^ 0x36 for b in range(256))
_OPAD = bytes(b ^ 0x5C for b in range(256))
_KEYED: dict[bytes, tuple[hashlib._Hash, hashlib._Hash]] = {}
_KEYED_KEPT = 1 << 12  # one entry per match seed in use; a bound all the same


def _hmac_sha256(key: bytes, msg: bytes) -> bytes:
    """HMAC-SHA256 (RFC 2104), the same bytes as ``hmac.digest(key, msg, "sha256")``.

    The key's inner and outer padded states are hashed once per key and copied per message:
    half the cost of ``hmac.digest``, which keys afresh at every call (a match deals a hand
    from one key many times).
    """
    keyed = _KEYED.get(key)
    if keyed is None:
        block = (hashlib.sha256(key).digest() if len(key) > 64 else key).ljust(64, b"\0")
        keyed = (hashlib.sha256(block.translate(_IPAD)), hashlib.sha256(block.translate(_OPAD)))
        if len(_KEYED) >= _KEYED_KEPT:
            _KEYED.clear()
        _KEYED[key] = keyed
    inner = keyed[0].copy()
    inner.update(msg)
    outer = keyed[1].copy()
    outer.update(inner.digest())
    return outer.digest()


def deck_for(seed: Seed, hand_number: int) -> list[int]:
    """The shuffled deck (card indices, top first) for one hand of a match (R-DEAL).

    A keyed pseudo-random function of the seed: whoever lacks the seed cannot predict a deck,
    even knowing every other deck of the match. The key is the seed's bytes (bytes as they
    are, a str as its UTF-8 bytes, an int as the UTF-8 bytes of its decimal string, so ``7``
    and ``"7"`` deal alike). Two blocks of HMAC-SHA256 over
    ``b"flipflop/deck/v1" + hand_number (8 bytes, big-endian) + block (1 byte: 0, then 1)``
    make a 512-bit integer ``X``; ``docs/replay.md`` has a test vector.

    The draws are Lemire's multiply-shift taken once for the whole shuffle instead of once per
    draw: ``N = X * 52! >> 512`` is uniform on ``0 .. 52! - 1`` up to a relative bias below
    ``52! / 2**512 < 2**-286``, and its mixed-radix digits (radix 52 first, then 51, …, 2) are
    the Fisher-Yates draws: for ``i = 51 … 1`` the card at position ``i`` swaps with the one
    at ``j = digit`` (``0 <= j <= i``). No rejection loop.

    Raises:
        ValueError: ``hand_number`` is below 1.
        TypeError: the seed is not bytes, str or int.
    """
    if hand_number < 1:
        raise ValueError(f"hands are numbered from 1, got {hand_number}")
    key = _seed_key(seed)
    msg = _DECK_LABEL + hand_number.to_bytes(8, "big")
    x = int.from_bytes(_hmac_sha256(key, msg + b"\x00") + _hmac_sha256(key, msg + b"\x01"), "big")
    n = (x * _FACTORIAL_52) >> 512
    deck = list(range(52))
    for group, steps in _RADIX_GROUPS:
        digits = n % group
        n //= group
        for radix, i in steps:
            j = digits % radix
            digits //= radix
            deck[i], deck[j] = deck[j], deck[i]
    return deck


def _first_dealer(seed: Seed, seats: int) -> int:
    """R-DEALER: the first dealer, a keyed pseudo-random function of the match seed.

    HMAC-SHA256 of ``b"flipflop/dealer/v1"`` with the seed's key (as in :func:`deck_for`); its
    first 8 bytes, big-endian, are a 64-bit word ``w`` and the dealer is ``w * seats >> 64``
    (Lemire's multiply-shift: a bias below ``seats / 2**64``).
    """
    word = int.from_bytes(_hmac_sha256(_seed_key(seed), _DEALER_LABEL)[:8], "big")
    return (word * seats) >> 64


def _hand_deck(seed: Seed, decks: Sequence[list[int]], hand_number: int) -> list[int]:
    """R-DEAL: the deck hand ``hand_number`` is dealt from: the scripted one, else the seed's."""
    return decks[hand_number - 1] if hand_number <= len(decks) else deck_for(seed, hand_number)


_MELD_CACHE: dict[int, Action] = {}
_LAYOFF_CACHE: dict[tuple[int, int], Action] = {}


def _meld_action(mask: int) -> Action:
    a = _MELD_CACHE.get(mask)
    if a is None:
        a = _MELD_CACHE[mask] = Action(ActionKind.MELD, cards_of(mask))
    return a


def _layoff_action(card: int, target: int) -> Action:
    key = (card, target)
    a = _LAYOFF_CACHE.get(key)
    if a is None:
        a = _LAYOFF_CACHE[key] = Action(ActionKind.LAY_OFF, (DECK[card],), target)
    return a


# Events, shows and payments are frozen values: the ones that recur are built once and
# shared (seats 0..4). ``_SHOWS[pot][seat][card]`` for the flip and flop pots.
_DROP_EVENTS = tuple(Event(s, DROP) for s in range(5))
_DRAW_STOCK_EVENTS = tuple(Event(s, DRAW_STOCK) for s in range(5))
_DISCARD_EVENTS = tuple(tuple(Event(s, a) for a in _DISCARDS) for s in range(5))
_SHOWS = {
    p: tuple(tuple(Show(s, c, _POTS[p]) for c in DECK) for s in range(5)) for p in (_FLIP, _FLOP)
}
_PAYMENTS: dict[tuple[int, int, int, str], Payment] = {}
_PAYMENTS_KEPT = 1 << 16  # amounts are pot sizes, few in practice: a bound all the same


def _payment(seat: int, pot: int, amount: int, reason: str) -> Payment:
    """The shared frozen :class:`Payment` of these values (see ``_pay``)."""
    key = (seat, pot, amount, reason)
    got = _PAYMENTS.get(key)
    if got is None:
        got = Payment(seat, _POTS[pot], amount, reason)
        if len(_PAYMENTS) < _PAYMENTS_KEPT:
            _PAYMENTS[key] = got
    return got


_ANTES: dict[tuple[int, int, int], tuple[Payment, ...]] = {}


def _antes(seat: int, pots: int, stake: int) -> tuple[Payment, ...]:
    """A seat's antes into its first ``pots`` pots: the same few frozen values every hand."""
    key = (seat, pots, stake)
    got = _ANTES.get(key)
    if got is None:
        got = _ANTES[key] = tuple(Payment(seat, _POTS[p], stake, "ante") for p in range(pots))
    return got


@dataclass(frozen=True, slots=True)
class HandDeal:
    """What chance gave each seat in one hand, as the referee saw it (never sent to a bot).

    Kept in :attr:`MatchState.deals` for whoever judges the match afterwards (the luck
    estimate of the standings): the bankrolls before the antes, the pots after them (carried
    chips included), who anted into which pot (R-ANTE, R-ELIGIBLE) and each seat's five dealt
    cards (R-DEAL).

    Attributes:
        hand_number: 1 for the first deal of the match.
        dealer: the dealing seat.
        bankrolls: every seat's chips before the antes.
        pots: the pots once every seat has anted.
        flip_eligible: per seat, anted into the flip pot.
        flop_eligible: per seat, anted into the flop pot.
        all_in: per seat, anted into the game pot only.
        dealt: per seat, its dealt cards as a bit mask (bit ``c`` for card index ``c``); 0 for
            a seat no longer in the match.
        flip_card: the dealer's face-up last card.
    """

    hand_number: int
    dealer: int
    bankrolls: tuple[int, ...]
    pots: Pots
    flip_eligible: tuple[bool, ...]
    flop_eligible: tuple[bool, ...]
    all_in: tuple[bool, ...]
    dealt: tuple[int, ...]
    flip_card: Card

    def __init__(
        self,
        hand_number: int,
        dealer: int,
        bankrolls: tuple[int, ...],
        pots: Pots,
        flip_eligible: tuple[bool, ...],
        flop_eligible: tuple[bool, ...],
        all_in: tuple[bool, ...],
        dealt: tuple[int, ...],
        flip_card: Card,
    ) -> None:
        # Written out for the compiled build: docs/engine.md, "A compiled engine".
        object.__setattr__(self, "hand_number", hand_number)
        object.__setattr__(self, "dealer", dealer)
        object.__setattr__(self, "bankrolls", bankrolls)
        object.__setattr__(self, "pots", pots)
        object.__setattr__(self, "flip_eligible", flip_eligible)
        object.__setattr__(self, "flop_eligible", flop_eligible)
        object.__setattr__(self, "all_in", all_in)
        object.__setattr__(self, "dealt", dealt)
        object.__setattr__(self, "flip_card", flip_card)

    def hand(self, seat: int) -> tuple[Card, ...]:
        """The cards dealt to ``seat``, in card-number order (none for a seat not dealt in)."""
        return cards_of(self.dealt[seat])


@dataclass(frozen=True, slots=True)
class _Table:
    """The parts of every observation that change only when a hand is dealt or settled."""

    bankrolls: tuple[int, ...]
    active: tuple[bool, ...]
    all_in: tuple[bool, ...]
    pots: Pots
    flip_eligible: tuple[bool, ...]
    flop_eligible: tuple[bool, ...]

    def __init__(
        self,
        bankrolls: tuple[int, ...],
        active: tuple[bool, ...],
        all_in: tuple[bool, ...],
        pots: Pots,
        flip_eligible: tuple[bool, ...],
        flop_eligible: tuple[bool, ...],
    ) -> None:
        # Written out for the compiled build: docs/engine.md, "A compiled engine".
        object.__setattr__(self, "bankrolls", bankrolls)
        object.__setattr__(self, "active", active)
        object.__setattr__(self, "all_in", all_in)
        object.__setattr__(self, "pots", pots)
        object.__setattr__(self, "flip_eligible", flip_eligible)
        object.__setattr__(self, "flop_eligible", flop_eligible)


class MatchState:
    """The one mutable thing: a whole match, hand after hand, changed only by :meth:`apply`.

    Public read-only attributes (treat them as such): ``config``, ``seed``, ``hand_number``,
    ``dealer``, ``to_act``, ``phase``, ``bankrolls``, ``active``, ``results`` (one
    :class:`HandResult` per finished hand), ``deals`` (one :class:`HandDeal` per hand dealt:
    the referee's record, never in an observation), ``log`` (every applied action as
    ``(hand_number, seat, action)``) and ``result`` (the :class:`MatchResult`, once over).
    """

    def __init__(
        self,
        config: MatchConfig,
        seed: Seed,
        *,
        decks: Sequence[Sequence[int]] = (),
        dealer: int | None = None,
        bankrolls: Sequence[int] | None = None,
        _blank: bool = False,
    ) -> None:
        """Start a match and deal its first hand.

        Args:
            config: the rules parameters.
            seed: the match seed (bytes, str or int); every deal and the first dealer come
                from it (:func:`deck_for`), so whoever knows it can predict them.
            decks: scripted deals for tests and tutorials: hand ``h`` uses ``decks[h - 1]``
                (52 card indices, top first) when given, the seeded deck otherwise.
            dealer: the first dealer, instead of the seeded one.
            bankrolls: starting chips per seat, instead of ``config.bankroll`` for all.
            _blank: internal: set nothing, for :meth:`clone` and :meth:`from_observation`,
                which set every other attribute themselves (the compiled build's class cannot be
                made without ``__init__``).
        """
        if _blank:
            self.config, self.seed = config, seed
            return
        if not isinstance(config, MatchConfig):
            raise ConfigError(f"expected a MatchConfig, got {type(config).__name__}")
        n = config.seats
        self.config = config
        self.seed = seed
        for deck in decks:
            if sorted(deck) != list(range(52)):
                raise ConfigError("a scripted deck must hold each of the 52 cards once")
        self.decks = [list(d) for d in decks]
        if bankrolls is not None and (
            len(bankrolls) != n or any(type(b) is not int or b < 0 for b in bankrolls)
        ):
            raise ConfigError(f"bankrolls must be {n} non-negative integers")
        self.bankrolls = [config.bankroll] * n if bankrolls is None else list(bankrolls)
        self.initial_bankrolls = tuple(self.bankrolls)
        self.active = [True] * n
        self.eliminated_in: list[int | None] = [None] * n
        self.pots = [0, 0, 0]
        self.hand_number = 0
        self.results: list[HandResult] = []
        self.deals: list[HandDeal] = []
        self.log: list[tuple[int, int, Action]] = []
        self.result: MatchResult | None = None
        if dealer is not None and not 0 <= dealer < n:
            raise ConfigError(f"dealer must be a seat 0..{n - 1}")
        self.dealer = _first_dealer(seed, n) if dealer is None else dealer  # R-DEALER
        self.initial_dealer = self.dealer
        self._table: _Table | None = None
        self._known_masks: tuple[int, ...] = ()
        self._known_cards: tuple[tuple[Card, ...], ...] = ()
        # The hand's state, set by every deal; these values last only where the match is
        # over before its first deal (fewer than two seats can ante), so that such a state
        # has every attribute too (``clone``).
        self.payments: list[Payment] = []
        self.bankrolls_before = self.initial_bankrolls
        self.elig = [[False] * n, [False] * n, [False] * n]
        self.all_in = [False] * n
        self._order: list[int] = []
        self.hands = [0] * n
        self.dealt = [0] * n
        self.flip_card = self.flip_suit = self.flop_suit = 0
        self.stock: list[int] = []
        self.discard: list[int] = []
        self.spread_masks: list[int] = []
        self.spread_kinds: list[SpreadKind] = []
        self.spread_owner: list[int] = []
        self.spread_layoff: list[int] = []
        self._spread_views: list[Spread] = []
        self.known = [0] * n
        self.shows: list[Show] = []
        self.shown = [False] * n
        self.best = [-1, -1, -1]
        self.events: list[Event] = []
        self.melds3 = [0] * n
        self.melds_other = [0] * n
        self.layoffs = [0] * n
        self.turns = 0
        self.drawn = -1
        self.last_stock = False
        self.phase = Phase.START
        self.to_act = self.dealer
        self._pending_eliminated: list[int] = []
        self._start_hand()

    # ------------------------------------------------------------------ the deal

    def _next_active(self, seat: int) -> int:
        n = self.config.seats
        for k in range(1, n + 1):
            s = (seat + k) % n
            if self.active[s]:
                return s
        return seat

    def _order_from_left(self) -> list[int]:
        """Active seats clockwise from the dealer's left; the dealer is last."""
        active = self.active
        return [s for s in _CLOCKWISE[self.config.seats][self.dealer] if active[s]]

    def _start_hand(self) -> None:
        cfg = self.config
        n, stake = cfg.seats, cfg.stake
        self.hand_number += 1
        self.payments = []
        self.bankrolls_before = tuple(self.bankrolls)
        self.elig = [[False] * n, [False] * n, [False] * n]
        self.all_in = [False] * n
        eliminated: list[int] = []
        # R-ANTE: tier by bankroll; keep one stake in reserve for extra payments.
        for s in range(n):
            if not self.active[s]:
                continue
            b = self.bankrolls[s]
            if b < stake:  # cannot ante: out before the deal
                self.active[s] = False
                self.eliminated_in[s] = self.hand_number
                eliminated.append(s)
                continue
            pots = 3 if b >= 4 * stake else 2 if b >= 3 * stake else 1
            self.all_in[s] = pots == 1
            self.bankrolls[s] = b - pots * stake
            for p in range(pots):
                self.pots[p] += stake
                self.elig[p][s] = True
            self.payments += _antes(s, pots, stake)
        self._table = None  # chips moved: the next observation takes a new snapshot
        if sum(self.active) < 2:
            self._finish_match(by_cap=False)
            return
        if not self.active[self.dealer]:
            self.dealer = self._next_active(self.dealer)
        # R-DEAL: one card at a time clockwise from the dealer's left; the dealer's last card
        # (the last card dealt) is the flip card.
        h = self.hand_number
        deck = _hand_deck(self.seed, self.decks, h)
        order = self._order = self._order_from_left()  # fixed for the hand, settlement too
        k = len(order)
        bits = [1 << c for c in deck[: _HAND_SIZE * k]]
        hands = [0] * n
        for i, s in enumerate(order):
            hands[s] = sum(bits[i::k])  # cards i, i + k, …: distinct bits, so sum = union
        self.hands = hands
        self.dealt = list(hands)
        self.flip_card = deck[_HAND_SIZE * k - 1]
        self.deals.append(
            HandDeal(
                h,
                self.dealer,
                self.bankrolls_before,
                Pots(*self.pots),
                tuple(self.elig[_FLIP]),
                tuple(self.elig[_FLOP]),
                tuple(self.all_in),
                tuple(hands),
                DECK[self.flip_card],
            )
        )
        self.flip_suit = self.flip_card // 13
        self.flop_suit = 3 - self.flip_suit  # R-FLIP: the other suit of the same colour
        self.stock = deck[_HAND_SIZE * k :][::-1]  # pop() takes the top
        self.discard = []
        self.spread_masks = []
        self.spread_kinds = []
        self.spread_owner = []
        self.spread_layoff = []
        self._spread_views = []
        self.known = [0] * n
        self.known[self.dealer] = 1 << self.flip_card
        self.shows = []
        self.shown = [False] * n
        # R-SHOW-ELIGIBLE: the flip card counts as shown only if the dealer can win the flip.
        self.best = [-1, self.flip_card if self.elig[_FLIP][self.dealer] else -1, -1]
        self.events = []
        self.melds3 = [0] * n
        self.melds_other = [0] * n
        self.layoffs = [0] * n
        self.turns = 0
        self.drawn = -1
        self.last_stock = False
        self.phase = Phase.START
        self.to_act = order[0]
        self._pending_eliminated = eliminated
        # R-FIFTY-CHECK: 49 or 50 wins at once; declaring is automatic. Both take at least
        # four 10-point cards, a cheap test that rules out almost every hand.
        fifty = [
            s
            for s in order
            if (hands[s] & _TEN_POINTS).bit_count() >= 4 and hand_total(hands[s]) >= 49
        ]
        if fifty:
            self._end_play(Termination.FIFTY, None, fifty)
            return
        self._show(self.to_act)

    def _show(self, seat: int) -> None:
        """R-SHOW: just before its first turn a seat shows any flip/flop card that beats the best.

        Only for pots the seat is eligible for (R-SHOW-ELIGIBLE); "best" is the lowest card of
        that suit shown so far.
        """
        self.shown[seat] = True
        dealt = self.dealt[seat]
        for p, suit in ((_FLIP, self.flip_suit), (_FLOP, self.flop_suit)):
            in_suit = (dealt >> (13 * suit)) & SUIT_MASK
            if not in_suit or not self.elig[p][seat]:
                continue
            low = 13 * suit + (in_suit & -in_suit).bit_length() - 1  # the lowest card of the suit
            best = self.best[p]
            if best < 0 or low < best:
                self.best[p] = low
                self.known[seat] |= 1 << low
                self.shows.append(_SHOWS[p][seat][low])

    # ------------------------------------------------------------------ decisions

    @property
    def is_over(self) -> bool:
        """True once the match has a result."""
        return self.result is not None

    def legal_actions(self) -> list[Action]:
        """Every action the seat to act may take now."""
        if self.result is not None:
            return []
        if self.phase is Phase.START:
            # R-DROP, R-DRAW (the first turn finds the discard pile empty)
            return [DROP, DRAW_STOCK, DRAW_DISCARD] if self.discard else [DROP, DRAW_STOCK]
        hand = self.hands[self.to_act]
        keep = ~(1 << self.drawn) if self.drawn >= 0 else -1
        out: list[Action] = []
        # R-MELD + R-NO-STRAND: never leave only the card just taken from the discard pile.
        for m in spreads_in(hand):
            rest = hand & ~m
            if rest == 0 or rest & keep:
                out.append(_meld_action(m))
        for t, lm in enumerate(self.spread_layoff):
            fits = lm & hand
            while fits:
                bit = fits & -fits
                fits ^= bit
                rest = hand & ~bit
                if rest == 0 or rest & keep:
                    out.append(_layoff_action(bit.bit_length() - 1, t))
        d = hand & keep  # R-DRAW ruling: no rediscarding the card drawn from the discard pile
        while d:
            bit = d & -d
            d ^= bit
            out.append(_DISCARDS[bit.bit_length() - 1])
        return out

    def apply(self, action: object) -> None:
        """Apply one action of the seat to act; raise ActionError (state unchanged) if refused.

        ``action`` is an :class:`Action`; anything else is refused with
        ``MalformedActionError`` (typed ``object`` so that the compiled build refuses it the
        same way, not with a ``TypeError`` of its own).
        """
        if not isinstance(action, Action):
            raise MalformedActionError(f"expected an Action, got {type(action).__name__}")
        if self.result is not None:
            raise IllegalActionError("the match is over")
        seat = self.to_act
        kind = action.kind
        if self.phase is Phase.START:
            if kind is ActionKind.DRAW_DISCARD:
                if not self.discard:
                    raise IllegalActionError("the discard pile is empty (R-DRAW)")
            elif kind is not ActionKind.DRAW_STOCK and kind is not ActionKind.DROP:
                raise IllegalActionError(
                    f"seat {seat} must drop or draw before {kind.value} (R-DRAW)"
                )
            self.log.append((self.hand_number, seat, action))
            if kind is ActionKind.DROP:
                self.events.append(_DROP_EVENTS[seat])
                self._end_play(Termination.DROP, seat, None)
            elif kind is ActionKind.DRAW_STOCK:
                card = self.stock.pop()
                self.hands[seat] |= 1 << card
                self.events.append(_DRAW_STOCK_EVENTS[seat])
                self.last_stock = not self.stock  # R-END-STOCK: this turn is the last
                self.phase = Phase.PLAY
            else:
                card = self.discard.pop()
                self.hands[seat] |= 1 << card
                self.known[seat] |= 1 << card  # a discard draw shows the card
                self.drawn = card
                self.events.append(Event(seat, action, DECK[card]))
                self.phase = Phase.PLAY
            return
        hand = self.hands[seat]
        m = action.mask
        if kind is ActionKind.DISCARD:
            if m.bit_count() != 1:
                raise MalformedActionError("a discard names exactly one card")
            if not hand & m:
                raise IllegalActionError(f"{action.cards[0]} is not in seat {seat}'s hand")
            if self.drawn >= 0 and m == 1 << self.drawn:
                raise IllegalActionError(
                    f"{action.cards[0]} was taken from the discard pile this turn (R-DRAW)"
                )
            card = m.bit_length() - 1
            self.log.append((self.hand_number, seat, action))
            self.events.append(_DISCARD_EVENTS[seat][card])
            hand ^= m
            self.hands[seat] = hand
            self.known[seat] &= ~m
            self.discard.append(card)
            self.turns += 1
            if hand == 0:
                self._end_play(Termination.OUT, seat, None)  # R-END-OUT (no tunk: discarded)
            elif self.last_stock:
                self._end_play(Termination.STOCK, seat, None)  # R-END-STOCK
            elif self.turns >= self.config.turn_cap:
                self._end_play(Termination.TURN_CAP, seat, None)  # R-TURN-CAP
            else:
                self._next_turn()
            return
        if kind is ActionKind.MELD:
            if spread_kind(m) is None:
                raise MalformedActionError(
                    f"{' '.join(map(str, action.cards))} is not a run or a set (R-RUN, R-SET)"
                )
            if hand & m != m:
                raise IllegalActionError(f"seat {seat} does not hold all of {action}")
        elif kind is ActionKind.LAY_OFF:
            if m.bit_count() != 1:
                raise MalformedActionError("a lay-off names exactly one card")
            t = action.target
            if not 0 <= t < len(self.spread_masks):
                raise IllegalActionError(f"there is no spread {t} on the table")
            if not hand & m:
                raise IllegalActionError(f"{action.cards[0]} is not in seat {seat}'s hand")
            if not self.spread_layoff[t] & m:
                raise IllegalActionError(
                    f"{action.cards[0]} does not fit spread {t} ({self._spread_views[t]}), R-LAYOFF"
                )
        elif kind in _START_KINDS:
            raise IllegalActionError(f"seat {seat} has already drawn this turn")
        else:  # pragma: no cover - ActionKind is closed
            raise MalformedActionError(f"unknown action kind {kind!r}")
        rest = hand & ~m
        if rest and not rest & ~(1 << self.drawn if self.drawn >= 0 else 0):
            raise IllegalActionError(
                f"{action} would leave only {DECK[self.drawn]}, which was taken from the discard "
                "pile and cannot be discarded (R-NO-STRAND)"
            )
        self.log.append((self.hand_number, seat, action))
        self.events.append(Event(seat, action))
        self.hands[seat] = rest
        self.known[seat] &= rest
        if kind is ActionKind.MELD:
            sk = spread_kind(m)
            assert sk is not None
            self.spread_masks.append(m)
            self.spread_kinds.append(sk)
            self.spread_owner.append(seat)
            self.spread_layoff.append(layoff_mask(m, sk))
            self._spread_views.append(Spread(seat, sk, cards_of(m)))  # engine order
            if m.bit_count() == 3:
                self.melds3[seat] += 1
            else:
                self.melds_other[seat] += 1
        else:
            t = action.target
            sm = self.spread_masks[t] | m
            self.spread_masks[t] = sm
            self.spread_layoff[t] = layoff_mask(sm, self.spread_kinds[t])
            self._spread_views[t] = Spread(self.spread_owner[t], self.spread_kinds[t], cards_of(sm))
            self.layoffs[seat] += 1
        if rest == 0:
            # R-END-TUNK: exactly two spreads of three of one's own this hand, no lay-off ever,
            # and out without a discard (we are here because the hand emptied by meld/lay-off).
            tunk = (
                kind is ActionKind.MELD
                and self.melds3[seat] == 2
                and self.melds_other[seat] == 0
                and self.layoffs[seat] == 0
            )
            self.turns += 1
            self._end_play(Termination.TUNK if tunk else Termination.OUT, seat, None)

    def _next_turn(self) -> None:
        self.to_act = self._next_active(self.to_act)
        self.phase = Phase.START
        self.drawn = -1
        if not self.shown[self.to_act]:
            self._show(self.to_act)

    # ------------------------------------------------------------------ settlement

    def _pay(self, seat: int, pot: int, amount: int, reason: str) -> None:
        """Move chips seat → pot (amount > 0) or pot → seat (amount < 0)."""
        if amount == 0:
            return
        self.bankrolls[seat] -= amount
        self.pots[pot] += amount
        self.payments.append(_payment(seat, pot, amount, reason))

    def _extra(self, seat: int, pot: int) -> None:
        """R-EXTRA: one more stake, capped at what the payer has."""
        self._pay(seat, pot, min(self.config.stake, self.bankrolls[seat]), "extra")

    def _take(self, pot: int, winner: int) -> dict[int, int]:
        """R-SPLIT with a single winner: the whole pot; ``{winner: chips}`` as :meth:`_split`."""
        total = self.pots[pot]
        self._pay(winner, pot, -total, "win")
        return {winner: total}

    def _split(self, pot: int, winners: list[int], amount: int | None = None) -> dict[int, int]:
        """R-SPLIT: equal shares, odd chips one each in seat order from the dealer's left."""
        total = self.pots[pot] if amount is None else amount
        n = self.config.seats
        ordered = sorted(winners, key=lambda s: (s - self.dealer - 1) % n)
        share, odd = divmod(total, len(ordered))
        got = {}
        for i, s in enumerate(ordered):
            amt = share + (1 if i < odd else 0)
            self._pay(s, pot, -amt, "win")
            got[s] = amt
        return got

    def _end_play(
        self, termination: Termination, ender: int | None, fifty: list[int] | None
    ) -> None:
        cfg = self.config
        n = cfg.seats
        order = self._order
        # R-SHOW: seats whose first turn never came show now, in order from the dealer's left.
        for s in order:
            if not self.shown[s]:
                self._show(s)
        shown_hands: list[tuple[Card, ...] | None] = [None] * n
        totals: list[int | None] = [None] * n
        game_won: dict[int, int] = {}
        if termination is Termination.FIFTY:
            assert fifty is not None
            # R-FIFTY-PAY: holders split the game pot; everyone without 50 pays the 50s.
            fifties = [s for s in fifty if hand_total(self.hands[s]) == 50]
            for s in fifty:
                shown_hands[s] = cards_of(self.hands[s])
                totals[s] = hand_total(self.hands[s])
            game_won = self._split(_GAME, fifty)
            if fifties:
                before = self.pots[_GAME]
                for s in order:
                    if s not in fifties:
                        self._extra(s, _GAME)
                for s, amt in self._split(_GAME, fifties, self.pots[_GAME] - before).items():
                    game_won[s] = game_won.get(s, 0) + amt
        elif termination in (Termination.OUT, Termination.TUNK):
            assert ender is not None
            if termination is Termination.TUNK:  # R-END-TUNK: the others pay an extra stake
                for s in order:
                    if s != ender:
                        self._extra(s, _GAME)
            game_won = self._take(_GAME, ender)  # R-END-OUT
        else:
            hands = self.hands
            for s in order:
                shown_hands[s] = cards_of(hands[s])
                totals[s] = hand_total(hands[s])
            if termination is Termination.DROP:
                assert ender is not None
                low_others = min(t for s, t in enumerate(totals) if t is not None and s != ender)
                mine = totals[ender]
                assert mine is not None
                if mine < low_others:  # R-END-DROP: strictly lowest
                    game_won = self._take(_GAME, ender)
                else:  # caught
                    termination = Termination.CAUGHT
                    self._extra(ender, _GAME)
                    winners = [s for s in order if s != ender and totals[s] == low_others]
                    game_won = self._split(_GAME, winners)
            else:  # R-END-STOCK, R-TURN-CAP: lowest total wins, split on a tie
                low = min(t for t in totals if t is not None)
                game_won = self._split(_GAME, [s for s in order if totals[s] == low])
        # R-FLIP, R-ELIGIBLE, R-CARRY: lowest dealt card of each suit among eligible seats.
        winners_fp: list[int | None] = []
        for p, suit in ((_FLIP, self.flip_suit), (_FLOP, self.flop_suit)):
            best, who = 1 << 13, None  # the lowest card's bit within the suit, and its holder
            eligible = self.elig[p]
            for s in order:
                if eligible[s]:
                    in_suit = (self.dealt[s] >> (13 * suit)) & SUIT_MASK
                    low = in_suit & -in_suit
                    if low and low < best:
                        best, who = low, s
            if who is not None:
                self._take(p, who)
            winners_fp.append(who)
        # R-ELIM: all-in without a share of the game pot, or below one stake.
        eliminated = list(self._pending_eliminated)
        for s in order:
            if (self.all_in[s] and s not in game_won) or self.bankrolls[s] < cfg.stake:
                self.active[s] = False
                self.eliminated_in[s] = self.hand_number
                eliminated.append(s)
        self.results.append(
            HandResult(
                hand_number=self.hand_number,
                dealer=self.dealer,
                termination=termination,
                ender=ender,
                flip_card=DECK[self.flip_card],
                payments=tuple(self.payments),
                game_winners=tuple(sorted(game_won)),
                flip_winner=winners_fp[0],
                flop_winner=winners_fp[1],
                shown_hands=tuple(shown_hands),
                totals=tuple(totals),
                eliminated=tuple(sorted(eliminated)),
                bankrolls=tuple(self.bankrolls),
                deltas=tuple(map(sub, self.bankrolls, self.bankrolls_before)),
                carried=Pots(*self.pots),
            )
        )
        # R-END: one player left, or the hand cap.
        if sum(self.active) <= 1:
            self._finish_match(by_cap=False)
        elif cfg.hand_cap is not None and self.hand_number >= cfg.hand_cap:
            self._finish_match(by_cap=True)
        else:
            self.dealer = self._next_active(self.dealer)  # R-DEALER: clockwise
            self._start_hand()

    def _finish_match(self, by_cap: bool) -> None:
        """R-END placement, then R-CARRY's ruling for chips left in carried pots."""
        n = self.config.seats
        inf = 1 << 62

        def key(s: int) -> tuple[int, int]:
            e = self.eliminated_in[s]
            return (inf if e is None else e, self.bankrolls[s])

        keys = [key(s) for s in range(n)]
        placements = tuple(1 + sum(k > keys[s] for k in keys) for s in range(n))
        self.payments = []
        survivors = [s for s in range(n) if self.active[s]]
        receivers = survivors if by_cap else [s for s in range(n) if placements[s] == 1]
        for p in (_GAME, _FLIP, _FLOP):
            if self.pots[p]:
                self._split(p, receivers)
        self.phase = Phase.START
        self.result = MatchResult(
            placements=placements,
            bankrolls=tuple(self.bankrolls),
            eliminated_in=tuple(self.eliminated_in),
            hands=len(self.results),
            by_cap=by_cap,
            carry_payments=tuple(Payment(p.seat, p.pot, p.amount, "carry") for p in self.payments),
        )
        self._table = None

    # ------------------------------------------------------------------ views

    def _frozen_table(self) -> _Table:
        """The chips, pots and eligibility for :meth:`observation`, as one shared snapshot.

        They move only in the antes (R-ANTE) and the settlement (R-SPLIT … R-ELIM, R-END), never
        during the play of a hand, so every observation of a hand shares these tuples; the deal
        and the end of the match drop the snapshot (``_table = None``) after moving chips.
        """
        if self._table is None:
            self._table = _Table(
                bankrolls=tuple(self.bankrolls),
                active=tuple(self.active),
                all_in=tuple(self.all_in),
                pots=Pots(*self.pots),
                flip_eligible=tuple(self.elig[_FLIP]),
                flop_eligible=tuple(self.elig[_FLOP]),
            )
        return self._table

    def observation(self, seat: int) -> Observation:
        """What ``seat`` may know now (RULES.md, last section): its own hand plus public cards."""
        table = self._frozen_table()
        drawn = self.drawn if seat == self.to_act and self.drawn >= 0 else -1
        masks = tuple(self.known)
        if masks != self._known_masks:  # public cards change a few times a hand, not every decision
            self._known_masks = masks
            self._known_cards = tuple([cards_of(m) if m else () for m in masks])
        return Observation(
            seat=seat,
            hand_number=self.hand_number,
            dealer=self.dealer,
            stake=self.config.stake,
            to_act=self.to_act,
            phase=self.phase,
            turn=self.turns,
            bankrolls=table.bankrolls,
            active=table.active,
            all_in=table.all_in,
            pots=table.pots,
            flip_eligible=table.flip_eligible,
            flop_eligible=table.flop_eligible,
            flip_card=DECK[self.flip_card],
            shows=tuple(self.shows),
            hand=cards_of(self.hands[seat]),
            hand_sizes=tuple(map(int.bit_count, self.hands)),
            known=self._known_cards,
            discard_pile=tuple([DECK[c] for c in self.discard]),
            stock_size=len(self.stock),
            spreads=tuple(self._spread_views),
            history=tuple(self.events),
            drawn_from_discard=DECK[drawn] if drawn >= 0 else None,
        )

    def hand_of(self, seat: int) -> tuple[Card, ...]:
        """A seat's current cards (the referee's view; bots get :meth:`observation`)."""
        return cards_of(self.hands[seat])

    def clone(self) -> MatchState:
        """An independent copy (for search: simulate on the copy).

        Every attribute is named here, not copied through ``__dict__``, so that the compiled
        build (``docs/engine.md``, a class without a ``__dict__``) runs the same code;
        ``test_clone_copies_every_attribute`` fails when one is added and not copied. Lists
        are copied (their items are immutable), the nested ones (``decks``, ``elig``) deeply.
        """
        c = MatchState(self.config, self.seed, _blank=True)
        c.decks = [list(d) for d in self.decks]
        c.bankrolls = list(self.bankrolls)
        c.initial_bankrolls = self.initial_bankrolls
        c.active = list(self.active)
        c.eliminated_in = list(self.eliminated_in)
        c.pots = list(self.pots)
        c.hand_number = self.hand_number
        c.results = list(self.results)
        c.deals = list(self.deals)
        c.log = list(self.log)
        c.result = self.result
        c.dealer = self.dealer
        c.initial_dealer = self.initial_dealer
        c._table = self._table
        c._known_masks = self._known_masks
        c._known_cards = self._known_cards
        c.payments = list(self.payments)
        c.bankrolls_before = self.bankrolls_before
        c.elig = [list(e) for e in self.elig]
        c.all_in = list(self.all_in)
        c._order = list(self._order)
        c.hands = list(self.hands)
        c.dealt = list(self.dealt)
        c.flip_card = self.flip_card
        c.flip_suit = self.flip_suit
        c.flop_suit = self.flop_suit
        c.stock = list(self.stock)
        c.discard = list(self.discard)
        c.spread_masks = list(self.spread_masks)
        c.spread_kinds = list(self.spread_kinds)
        c.spread_owner = list(self.spread_owner)
        c.spread_layoff = list(self.spread_layoff)
        c._spread_views = list(self._spread_views)
        c.known = list(self.known)
        c.shows = list(self.shows)
        c.shown = list(self.shown)
        c.best = list(self.best)
        c.events = list(self.events)
        c.melds3 = list(self.melds3)
        c.melds_other = list(self.melds_other)
        c.layoffs = list(self.layoffs)
        c.turns = self.turns
        c.drawn = self.drawn
        c.last_stock = self.last_stock
        c.phase = self.phase
        c.to_act = self.to_act
        c._pending_eliminated = list(self._pending_eliminated)
        return c

    def shuffle_hidden(self, seat: int, rng: random.Random) -> MatchState:
        """A copy in which every card ``seat`` cannot see is randomly relabelled.

        Those are other seats' unshown cards and the stock. The copy gives ``seat`` the same
        observation and legal actions (the leak test relies on it); later hands are dealt as usual.
        Its :attr:`deals` starts empty: the record of past deals holds cards ``seat`` cannot see.
        """
        c = self.clone()
        public = 1 << c.flip_card
        for s in range(c.config.seats):
            public |= c.known[s]
        for m in c.spread_masks:
            public |= m
        for d in c.discard:
            public |= 1 << d
        own = c.hands[seat]
        hidden = [i for i in range(52) if not ((public | own) >> i) & 1]
        perm = list(hidden)
        rng.shuffle(perm)
        mapping = list(range(52))
        for a, b in zip(hidden, perm, strict=True):
            mapping[a] = b

        def relabel(mask: int) -> int:
            out = 0
            while mask:
                bit = mask & -mask
                mask ^= bit
                out |= 1 << mapping[bit.bit_length() - 1]
            return out

        c.hands = [h if s == seat else relabel(h) for s, h in enumerate(c.hands)]
        c.dealt = [d if s == seat else relabel(d) for s, d in enumerate(c.dealt)]
        c.stock = [mapping[x] for x in c.stock]
        c.deals = []  # the referee's record holds every seat's dealt cards: not in a copy
        return c

    @staticmethod
    def from_observation(
        obs: Observation, rng: random.Random, config: MatchConfig | None = None
    ) -> MatchState:
        """A state consistent with ``obs``: the forward model for search bots (determinization).

        The seat's own hand and every public card are where the observation says; the cards
        it cannot see are dealt at random into the other hands (up to their sizes) and the
        stock. Simulate the rest of the hand on it with :meth:`apply`. Flip/flop winners on
        such a state are not meaningful (other seats' dealt hands are unknown), and hands
        after the current one are dealt from a random seed.

        Args:
            obs: an observation, usually the one a bot was just given.
            rng: the source of the sampled cards.
            config: the match config if known (for ``turn_cap``); by default one built from
                the observation with no hand cap.
        """
        n = obs.seats
        if config is None:
            config = MatchConfig(
                seats=n, stake=obs.stake, bankroll=max(obs.stake, max(obs.bankrolls)), hand_cap=None
            )
        st = MatchState(config, rng.getrandbits(64), _blank=True)
        st.decks = []
        st.bankrolls = list(obs.bankrolls)
        st.initial_bankrolls = tuple(obs.bankrolls)
        st.active = list(obs.active)
        st.eliminated_in = [None if a else 0 for a in obs.active]
        st.pots = [obs.pots.game, obs.pots.flip, obs.pots.flop]
        st.hand_number = obs.hand_number
        st.results = []
        st.deals = []
        st.log = []
        st.result = None
        st.dealer = st.initial_dealer = obs.dealer
        st.payments = []
        st.bankrolls_before = tuple(obs.bankrolls)
        st.elig = [list(obs.active), list(obs.flip_eligible), list(obs.flop_eligible)]
        st.all_in = list(obs.all_in)
        st.flip_card = obs.flip_card.index
        st.flip_suit = st.flip_card // 13
        st.flop_suit = 3 - st.flip_suit
        st.discard = [c.index for c in obs.discard_pile]
        st.spread_masks = []
        st.spread_kinds = []
        st.spread_owner = []
        st.spread_layoff = []
        st._spread_views = list(obs.spreads)
        for sp in obs.spreads:
            m = 0
            for c in sp.cards:
                m |= 1 << c.index
            st.spread_masks.append(m)
            st.spread_kinds.append(sp.kind)
            st.spread_owner.append(sp.owner)
            st.spread_layoff.append(layoff_mask(m, sp.kind))
        own = 0
        for c in obs.hand:
            own |= 1 << c.index
        known = [0] * n
        for s, cs in enumerate(obs.known):
            for c in cs:
                known[s] |= 1 << c.index
        known[obs.seat] &= own
        seen = own | (1 << st.flip_card)
        for m in st.spread_masks:
            seen |= m
        for d in st.discard:
            seen |= 1 << d
        for m in known:
            seen |= m
        unseen = [i for i in range(52) if not (seen >> i) & 1]
        rng.shuffle(unseen)
        hands = [0] * n
        for s in range(n):
            if s == obs.seat:
                hands[s] = own
                continue
            h = known[s]
            for _ in range(obs.hand_sizes[s] - h.bit_count()):
                h |= 1 << unseen.pop()
            hands[s] = h
        st.hands = hands
        st.dealt = list(hands)
        st.stock = unseen[: obs.stock_size]
        st.known = known
        st.shows = list(obs.shows)
        acted = {e.seat for e in obs.history} | {obs.to_act}
        st.shown = [s in acted for s in range(n)]
        st.best = [-1, -1, -1]
        if st.elig[_FLIP][obs.dealer]:
            st.best[_FLIP] = st.flip_card
        for sh in obs.shows:
            p = _FLIP if sh.pot is Pot.FLIP else _FLOP
            st.best[p] = sh.card.index
        st.events = list(obs.history)
        st.melds3 = [0] * n
        st.melds_other = [0] * n
        st.layoffs = [0] * n
        for e in obs.history:
            if e.action.kind is ActionKind.MELD:
                if len(e.action.cards) == 3:
                    st.melds3[e.seat] += 1
                else:
                    st.melds_other[e.seat] += 1
            elif e.action.kind is ActionKind.LAY_OFF:
                st.layoffs[e.seat] += 1
        st.turns = obs.turn
        st.drawn = obs.drawn_from_discard.index if obs.drawn_from_discard is not None else -1
        st.phase = obs.phase
        st.last_stock = obs.phase is Phase.PLAY and obs.stock_size == 0
        st.to_act = obs.to_act
        st._pending_eliminated = []
        st._order = st._order_from_left()
        st._table = None
        st._known_masks = ()
        st._known_cards = ()
        return st
