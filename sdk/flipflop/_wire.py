"""The one place where protobuf messages meet domain values (``proto/flipflop/v1/bot.proto``).

Everything else in the SDK and the arena works with frozen domain types; the gRPC server and
client call the functions here at the edge. Every ``*_to_proto`` has a ``*_from_proto`` and
the pair is lossless: ``observation_from_proto(observation_to_proto(obs)) == obs``, also after
serialising to bytes. Two normalisations keep the messages small and the pair exact for every
value the engine builds: an action's ``target`` travels only for a lay-off (it is -1 otherwise,
as ``Action`` defaults it), and "no hand cap" travels as ``hand_cap = 0``.

A decision is the hot path (one round trip per half turn), so its messages — DecideRequest,
DecideResponse and everything in them — are coded by hand in protobuf's binary format, with
caches for what recurs from one decision to the next: :func:`decide_request_bytes`,
:func:`decide_call_from_bytes`, :func:`decide_response_bytes`, :func:`decision_from_bytes`.
The message-level functions for those types go through the same code (see "wire format"
below). The other messages (match set-up, results, handshake, health) use the generated
classes.

Why by hand, in figures (measured when issue 26 was filed, on 2 cores): the generated classes
(protobuf's upb backend) cost 1.30 to 1.38 times this codec's CPU on short hands (153-byte
requests, about 2 to 10 % of a round trip) but 6.1 times on long hands (995-byte requests,
752 µs more CPU per decision), because they rebuild the whole history at every decision where
this codec reuses what it coded for the previous one; end to end on the stream, long hands
ran 1.4 to 4.6 times slower per round. Keep it by hand unless a change of protobuf's backend
beats these figures.

Decoding treats every message as untrusted: card numbers must be 0..51, enums may not be
UNSPECIFIED where a value is required, seats must exist, per-seat lists must have one entry per
seat. A bad action raises :class:`~flipflop.MalformedActionError`; any other bad message raises
:class:`~flipflop.BotProtocolError`, and the reason names the field (``history[3].action: …``).

Resources are bounded whatever a peer sends: every answer has a size cap by call
(:data:`ANSWER_CAPS`, checked by :func:`parse_answer` and the client), the handshake's strings
are checked for length and control characters (:func:`identity_from_proto`), and every cache
here is bounded in entries and in bytes: a message longer than :data:`CACHE_KEY_BYTES` is
decoded every time and never kept, so padding a message with unknown fields cannot fill the
memory of the process that decodes it.
"""

from __future__ import annotations

import platform
import re
import threading
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import TypeVar

from google.protobuf.message import DecodeError, Message

from flipflop._actions import DRAW_DISCARD, DRAW_STOCK, DROP, Action, ActionKind, Event, Phase
from flipflop._bot import MatchInfo
from flipflop._cards import DECK, Card
from flipflop._errors import BotProtocolError, ConfigError, MalformedActionError
from flipflop._match import MatchConfig
from flipflop._observation import Observation, Pot, Pots, Show, Spread
from flipflop._proto.flipflop.v1 import bot_pb2 as pb
from flipflop._proto.grpc.health.v1 import health_pb2 as health_pb
from flipflop._results import HandResult, MatchResult, Payment, Termination
from flipflop._spreads import SpreadKind

__all__ = [
    "ANSWER_CAPS",
    "CACHE_KEY_BYTES",
    "DECIDE_STREAM",
    "HEALTH_SERVICES",
    "MAX_ANSWER_BYTES",
    "MAX_DECIDE_ANSWER_BYTES",
    "MAX_EMPTY_ANSWER_BYTES",
    "MAX_FEATURES",
    "MAX_FEATURE_CHARS",
    "MAX_HANDSHAKE_ANSWER_BYTES",
    "MAX_HEALTH_ANSWER_BYTES",
    "MAX_NAME_CHARS",
    "MAX_REQUEST_BYTES",
    "MAX_RUNTIME_CHARS",
    "MAX_VERSION_CHARS",
    "NOTE_LIMIT",
    "PROTOCOL_VERSION",
    "BotIdentity",
    "DecideCall",
    "Decision",
    "action_from_proto",
    "action_to_proto",
    "check_answer_size",
    "cut_note",
    "decide_call_from_bytes",
    "decide_match_id",
    "decide_request",
    "decide_request_bytes",
    "decide_request_from_proto",
    "decide_response",
    "decide_response_bytes",
    "decide_response_from_proto",
    "decision_from_bytes",
    "end_match_request",
    "end_match_request_from_proto",
    "event_from_proto",
    "event_to_proto",
    "forget_match",
    "hand_ended_request",
    "hand_ended_request_from_proto",
    "hand_result_from_proto",
    "hand_result_to_proto",
    "handshake_request",
    "handshake_request_from_proto",
    "handshake_response",
    "health_request",
    "health_response",
    "identity_from_proto",
    "is_serving",
    "match_config_from_proto",
    "match_config_to_proto",
    "match_info_from_proto",
    "match_info_to_proto",
    "match_result_from_proto",
    "match_result_to_proto",
    "observation_from_proto",
    "observation_to_proto",
    "parse_answer",
    "payment_from_proto",
    "payment_to_proto",
    "pots_from_proto",
    "pots_to_proto",
    "sdk_runtime",
    "show_from_proto",
    "show_to_proto",
    "speaks_our_major",
    "spread_from_proto",
    "spread_to_proto",
]

PROTOCOL_VERSION = "1.2"
"""The protocol version this SDK speaks, ``MAJOR.MINOR``; peers must agree on the major.

1.2 added ``DecideStream`` (:data:`DECIDE_STREAM`); 1.1 the seat token and the answer size caps
(``proto/flipflop/v1/bot.proto``).
"""
DECIDE_STREAM = "decide-stream"
"""The handshake feature of a bot that serves ``DecideStream``: one stream of decisions per
match instead of one ``Decide`` call each (protocol 1.2)."""


def speaks_our_major(version: str) -> bool:
    """True if a peer's protocol ``version`` has the major of :data:`PROTOCOL_VERSION`."""
    return version.split(".", 1)[0] == PROTOCOL_VERSION.split(".", 1)[0]


NOTE_LIMIT = 1024
"""The longest debug note, in bytes of UTF-8; longer notes are cut (``DecideResponse.note``)."""

# ---------------------------------------------------------------------------------- size caps

MAX_DECIDE_ANSWER_BYTES = 16 * 1024
"""The largest DecideResponse. A turn's plan takes a few dozen bytes (a 13-card meld: 17) and
a note is kept up to :data:`NOTE_LIMIT` bytes, so this leaves room for a long note that is cut,
and none for padding."""
MAX_HANDSHAKE_ANSWER_BYTES = 8 * 1024
"""The largest HandshakeResponse: every string at its longest (:data:`MAX_NAME_CHARS`, …) in
4-byte characters is about 5.3 KB, plus the seat token."""
MAX_EMPTY_ANSWER_BYTES = 1024
"""The largest StartMatch, HandEnded or EndMatch answer. They are empty today; the room is for
a field a later minor version may add (an older arena skips it)."""
MAX_HEALTH_ANSWER_BYTES = 1024
"""The largest health answer (one enum field; the same room as an empty answer)."""
ANSWER_CAPS: Mapping[str, int] = MappingProxyType(
    {
        "Handshake": MAX_HANDSHAKE_ANSWER_BYTES,
        "StartMatch": MAX_EMPTY_ANSWER_BYTES,
        "Decide": MAX_DECIDE_ANSWER_BYTES,
        "HandEnded": MAX_EMPTY_ANSWER_BYTES,
        "EndMatch": MAX_EMPTY_ANSWER_BYTES,
        "Health.Check": MAX_HEALTH_ANSWER_BYTES,
    }
)
"""The size cap of a bot's answer, in bytes of the serialised message, by call."""
MAX_ANSWER_BYTES = max(ANSWER_CAPS.values())
"""The largest answer of any call: the arena's gRPC receive limit, so that gRPC itself refuses
anything bigger (RESOURCE_EXHAUSTED) and nothing bigger is ever decoded."""
MAX_REQUEST_BYTES = 4 * 1024 * 1024
"""The largest request a bot accepts. A DecideRequest at the default turn cap (200) is about
5 KB, and grows about 22 bytes per turn of history: this allows turn caps near 190 000."""

_Msg = TypeVar("_Msg", bound=Message)


def parse_answer(message_type: type[_Msg], data: bytes, call: str) -> _Msg:
    """Decode the answer ``data`` to ``call`` (a key of :data:`ANSWER_CAPS`) as ``message_type``.

    Raises:
        BotProtocolError: the answer is over its size cap (checked before anything is
            decoded), or does not decode as ``message_type``.
    """
    check_answer_size(call, len(data))
    try:
        return message_type.FromString(data)
    except DecodeError:
        name = message_type.DESCRIPTOR.name
        raise BotProtocolError(f"{call}: the answer does not decode as a {name}") from None


def check_answer_size(call: str, size: int) -> None:
    """Refuse an answer to ``call`` of ``size`` bytes if it is over the call's cap.

    Raises:
        BotProtocolError: ``Decide: an answer of 16385 bytes is over the 16384-byte cap …``.
    """
    cap = ANSWER_CAPS[call]
    if size > cap:
        raise BotProtocolError(
            f"{call}: an answer of {size} bytes is over the {cap}-byte cap for {call} answers"
        )


_E = TypeVar("_E")
_K = TypeVar("_K")
_V = TypeVar("_V")
_PAYMENT_REASONS = frozenset({"ante", "extra", "win", "carry"})
_SEATS = range(3, 6)  # R-PLAYERS

# Enum tables, domain → proto number; decoding inverts them (0, UNSPECIFIED, is never a key).
_KIND_NUMBER: dict[ActionKind, pb.ActionKind.ValueType] = {
    ActionKind.DROP: pb.ACTION_KIND_DROP,
    ActionKind.DRAW_STOCK: pb.ACTION_KIND_DRAW_STOCK,
    ActionKind.DRAW_DISCARD: pb.ACTION_KIND_DRAW_DISCARD,
    ActionKind.MELD: pb.ACTION_KIND_MELD,
    ActionKind.LAY_OFF: pb.ACTION_KIND_LAY_OFF,
    ActionKind.DISCARD: pb.ACTION_KIND_DISCARD,
}
_PHASE_NUMBER: dict[Phase, pb.Phase.ValueType] = {
    Phase.START: pb.PHASE_START,
    Phase.PLAY: pb.PHASE_PLAY,
}
_SPREAD_KIND_NUMBER: dict[SpreadKind, pb.SpreadKind.ValueType] = {
    SpreadKind.RUN: pb.SPREAD_KIND_RUN,
    SpreadKind.SET: pb.SPREAD_KIND_SET,
}
_POT_NUMBER: dict[Pot, pb.Pot.ValueType] = {
    Pot.GAME: pb.POT_GAME,
    Pot.FLIP: pb.POT_FLIP,
    Pot.FLOP: pb.POT_FLOP,
}
_TERMINATION_NUMBER: dict[Termination, pb.Termination.ValueType] = {
    Termination.FIFTY: pb.TERMINATION_FIFTY,
    Termination.OUT: pb.TERMINATION_OUT,
    Termination.TUNK: pb.TERMINATION_TUNK,
    Termination.DROP: pb.TERMINATION_DROP,
    Termination.CAUGHT: pb.TERMINATION_CAUGHT,
    Termination.STOCK: pb.TERMINATION_STOCK,
    Termination.TURN_CAP: pb.TERMINATION_TURN_CAP,
}
_PHASES: dict[int, Phase] = {v: k for k, v in _PHASE_NUMBER.items()}
_SPREAD_KINDS: dict[int, SpreadKind] = {v: k for k, v in _SPREAD_KIND_NUMBER.items()}
_POTS: dict[int, Pot] = {v: k for k, v in _POT_NUMBER.items()}
_TERMINATIONS: dict[int, Termination] = {v: k for k, v in _TERMINATION_NUMBER.items()}

_MELD: pb.ActionKind.ValueType = pb.ACTION_KIND_MELD
_LAY_OFF: pb.ActionKind.ValueType = pb.ACTION_KIND_LAY_OFF
_DISCARD: pb.ActionKind.ValueType = pb.ACTION_KIND_DISCARD
_NO_CARD_ACTIONS: dict[int, Action] = {
    pb.ACTION_KIND_DROP: DROP,
    pb.ACTION_KIND_DRAW_STOCK: DRAW_STOCK,
    pb.ACTION_KIND_DRAW_DISCARD: DRAW_DISCARD,
}
_DISCARD_ACTIONS = tuple(Action.discard(c) for c in DECK)

_KIND_BY_ID: dict[int, pb.ActionKind.ValueType] = {id(k): n for k, n in _KIND_NUMBER.items()}
_PHASE_BY_ID: dict[int, pb.Phase.ValueType] = {id(k): n for k, n in _PHASE_NUMBER.items()}
_POT_BY_ID: dict[int, pb.Pot.ValueType] = {id(k): n for k, n in _POT_NUMBER.items()}
"""Enum members by id(): hashing an Enum member runs Python code, id() does not."""


# ---------------------------------------------------------------------------------- values


def _enum(table: dict[int, _E], number: int, what: str) -> _E:
    """Decode a required enum field; UNSPECIFIED (0) and unknown numbers are refused."""
    value = table.get(number)
    if value is None:
        reason = "is UNSPECIFIED" if number == 0 else f"has the unknown value {number}"
        raise BotProtocolError(f"{what} {reason}")
    return value


def _card(number: int, what: str) -> Card:
    """Decode one card number (0..51)."""
    if not 0 <= number <= 51:
        raise BotProtocolError(f"{what}: card number {number} is not 0..51")
    return DECK[number]


def _cards(numbers: Iterable[int], what: str) -> tuple[Card, ...]:
    """Decode card numbers (0..51), keeping their order."""
    return tuple([_card(i, what) for i in numbers])


def _seat(seat: int, seats: int, what: str) -> int:
    """Check that a seat number exists at a table of ``seats``."""
    if seat >= seats:
        raise BotProtocolError(f"{what}: seat {seat} does not exist at a {seats}-seat table")
    return seat


def _optional_seat(present: bool, seat: int, seats: int, what: str) -> int | None:
    """Decode an ``optional uint32`` seat field (unset → None)."""
    return _seat(seat, seats, what) if present else None


def cut_note(note: str) -> str:
    """``note`` cut to :data:`NOTE_LIMIT` bytes of UTF-8, on a character boundary."""
    if len(note) <= NOTE_LIMIT // 4:  # no character is longer than 4 bytes
        return note
    data = note.encode("utf-8", "replace")
    if len(data) <= NOTE_LIMIT:
        return data.decode("utf-8")
    return data[:NOTE_LIMIT].decode("utf-8", "ignore")  # "ignore" drops a cut last character


# ---------------------------------------------------------------------------------- wire format
#
# The messages of a decision (DecideRequest, DecideResponse and what they hold) are coded here
# by hand, in protobuf's binary format, instead of through the generated classes: building and
# reading them field by field through the message API cost more than the gRPC round trip itself
# (benchmarks/roundtrip.py). The output is canonical protobuf (fields in number order, defaults
# left out, repeated numbers packed), byte for byte what the generated code writes; the decoder
# accepts any valid encoding (any field order, packed or not, split sub-messages) and, like
# protobuf, skips unknown fields and fields of an unexpected wire type. Sub-messages that recur
# from one decision to the next (events, seats, actions, shows, spreads) are decoded once and
# cached by their bytes. tests/sdk/test_wire.py holds the codec to the generated code.

_VARINT, _FIXED64, _LENGTH, _FIXED32 = 0, 1, 2, 5
_ONE_BYTE = tuple(bytes((i,)) for i in range(0x80))
_UINT32 = 0xFFFFFFFF
_TWO_63 = 1 << 63
_TWO_64 = 1 << 64
_DECK_AT = DECK.__getitem__
_CACHE_SIZE = 1 << 16
"""The most entries of one cache (it is emptied when full)."""
CACHE_KEY_BYTES = 64
"""The longest message a cache keeps by its bytes: every real one is shorter (an action, an
event, a spread, a seat view: under 40 bytes). A longer one is decoded every time and never
kept, so a cache holds at most ``_CACHE_SIZE * CACHE_KEY_BYTES`` (4 MiB) of keys, whatever a
peer sends: an answer padded with megabytes of unknown fields costs one decoding, no memory."""

_Value = int | bytes
"""A scanned field value: an int for a varint field, the raw bytes for a length-delimited one."""
_Error = type[BotProtocolError] | type[MalformedActionError]


def _varint(value: int) -> bytes:
    """Encode a varint; a negative int32/int64 takes ten bytes (two's complement)."""
    if 0 <= value < 0x80:
        return _ONE_BYTE[value]
    if value < 0:
        value += _TWO_64
    out = bytearray()
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _uint_field(key: bytes, value: int) -> bytes:
    """A varint field; 0 is the default and is left out."""
    return key + _varint(value) if value else b""


def _bytes_field(key: bytes, body: bytes) -> bytes:
    """A length-delimited field: a sub-message, a string or a packed list."""
    n = len(body)
    return key + (_ONE_BYTE[n] if n < 0x80 else _varint(n)) + body


def _cards_field(key: bytes, cards: Sequence[Card]) -> bytes:
    """A packed list of card numbers (each one byte: 0..51); an empty list is left out."""
    return _bytes_field(key, bytes([c.index for c in cards])) if cards else b""


def _varint_at(data: bytes, pos: int, error: _Error, what: str) -> tuple[int, int]:
    """Decode the varint at ``pos``; return (value, position after it)."""
    value = shift = 0
    end = len(data)
    while pos < end and shift < 70:
        b = data[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos
        shift += 7
    raise error(f"{what}: truncated or over-long varint")


def _scan(data: bytes, what: str, error: _Error = BotProtocolError) -> list[tuple[int, _Value]]:
    """Split a message into (field number, value) pairs, in order.

    Fixed-width fields (which this protocol does not use) are skipped; groups are refused.
    """
    out: list[tuple[int, _Value]] = []
    append = out.append
    pos, end = 0, len(data)
    try:
        while pos < end:
            # Varints of one and two bytes are decoded inline: tags up to field 2047, lengths
            # and numbers below 16384 (nearly everything here).
            key = data[pos]
            if key < 0x80:
                pos += 1
            elif data[pos + 1] < 0x80:
                key = key & 0x7F | data[pos + 1] << 7
                pos += 2
            else:
                key, pos = _varint_at(data, pos, error, what)
            wire_type = key & 7
            if wire_type == _LENGTH:
                n = data[pos]
                if n < 0x80:
                    pos += 1
                elif data[pos + 1] < 0x80:
                    n = n & 0x7F | data[pos + 1] << 7
                    pos += 2
                else:
                    n, pos = _varint_at(data, pos, error, what)
                stop = pos + n
                if stop > end:
                    raise IndexError
                append((key >> 3, data[pos:stop]))
                pos = stop
            elif wire_type == _VARINT:
                v = data[pos]
                if v < 0x80:
                    pos += 1
                elif data[pos + 1] < 0x80:
                    v = v & 0x7F | data[pos + 1] << 7
                    pos += 2
                else:
                    v, pos = _varint_at(data, pos, error, what)
                append((key >> 3, v))
            elif wire_type == _FIXED64:
                pos += 8
            elif wire_type == _FIXED32:
                pos += 4
            else:
                raise error(f"{what}: wire type {wire_type} is not used by this protocol")
            if key < 8:
                raise error(f"{what}: field number 0")
    except IndexError:
        raise error(f"{what}: truncated message") from None
    if pos > end:
        raise error(f"{what}: truncated message")
    return out


def _signed32(v: int) -> int:
    """An int32 or enum field from its varint (protobuf keeps the low 32 bits)."""
    v &= _UINT32
    return v - (1 << 32) if v >= 1 << 31 else v


def _signed64(v: int) -> int:
    """An int64 field from its varint."""
    v %= _TWO_64
    return v - _TWO_64 if v >= _TWO_63 else v


def _string(value: bytes, what: str) -> str:
    """A string field (valid UTF-8, as protobuf requires)."""
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        raise BotProtocolError(f"{what}: not valid UTF-8") from None


def _card_list(
    chunks: list[_Value], what: str, error: _Error = BotProtocolError
) -> tuple[Card, ...]:
    """A repeated card field (0..51 each) from its pieces, packed runs or single values."""
    if len(chunks) == 1:
        chunk = chunks[0]
        if type(chunk) is bytes and chunk.isascii():  # the usual case: one-byte varints
            try:
                return tuple(map(_DECK_AT, chunk))
            except IndexError:
                pass  # reported below
    numbers: list[int] = []
    for chunk in chunks:
        if isinstance(chunk, int):
            numbers.append(chunk & _UINT32)
        else:
            pos = 0
            while pos < len(chunk):
                v, pos = _varint_at(chunk, pos, error, what)
                numbers.append(v & _UINT32)
    try:
        return tuple(map(_DECK_AT, numbers))
    except IndexError:
        bad = next(i for i in numbers if i > 51)
        raise error(f"{what}: card number {bad} is not 0..51") from None


def _name(base: str, index: int) -> str:
    """A field's name for messages: ``base`` or ``base[index]``."""
    return base if index < 0 else f"{base}[{index}]"


def _memo(cache: dict[_K, _V], key: _K, value: _V) -> _V:
    """Remember an encoding by a key built from the engine's own values (small and bounded).

    The cache is emptied when it reaches ``_CACHE_SIZE`` entries.
    """
    if len(cache) >= _CACHE_SIZE:
        cache.clear()
    cache[key] = value
    return value


def _cached(cache: dict[bytes, _V], data: bytes, value: _V) -> _V:
    """Remember a decoded sub-message by its bytes, unless they are over :data:`CACHE_KEY_BYTES`.

    Bounded in entries as :func:`_memo` is.
    """
    return _memo(cache, data, value) if len(data) <= CACHE_KEY_BYTES else value


# ---------------------------------------------------------------------------------- actions

# Actions without a choice (drop, the draws, the 52 discards) are shared objects: their
# encodings are computed once, keyed by id() (the objects live as long as the process).
_CANONICAL_ACTIONS = (*_NO_CARD_ACTIONS.values(), *_DISCARD_ACTIONS)


def _action_body(action: Action) -> bytes:
    """An Action message's bytes (``target`` only for a lay-off)."""
    body = _CANONICAL_BODIES.get(id(action))
    if body is not None:
        return body
    kind = _KIND_BY_ID[id(action.kind)]
    out = _uint_field(b"\x08", kind) + _cards_field(b"\x12", action.cards)
    if kind == _LAY_OFF:
        out += _uint_field(b"\x18", action.target)
    return out


_CANONICAL_BODIES: dict[int, bytes] = {}
_CANONICAL_BODIES.update((id(a), _action_body(a)) for a in _CANONICAL_ACTIONS)
_ACTION_CACHE: dict[bytes, Action] = {}


def _action_from_bytes(data: bytes) -> Action:
    """Decode an Action message (see :func:`action_from_proto`)."""
    action = _ACTION_CACHE.get(data)
    if action is not None:
        return action
    kind = target = 0
    chunks: list[_Value] = []
    for field, value in _scan(data, "action", MalformedActionError):
        if field == 2:
            chunks.append(value)
        elif isinstance(value, int):
            if field == 1:
                kind = _signed32(value)
            elif field == 3:
                target = _signed32(value)
    cards = _card_list(chunks, "action.cards", MalformedActionError) if chunks else ()
    return _cached(_ACTION_CACHE, data, _make_action(kind, cards, target))


def _make_action(kind: int, cards: tuple[Card, ...], target: int) -> Action:
    """Check an action's shape and build it (the shared object where there is one)."""
    n = len(cards)
    if kind == _DISCARD:
        if n != 1:
            raise MalformedActionError(f"DISCARD takes exactly one card, got {n}")
        return _DISCARD_ACTIONS[cards[0].index]
    fixed = _NO_CARD_ACTIONS.get(kind)
    if fixed is not None:
        if n:
            raise MalformedActionError(f"{fixed.kind.name} takes no cards, got {n}")
        return fixed
    if kind == _MELD:
        if n < 3:
            raise MalformedActionError(f"a meld needs at least 3 cards, got {n}")
        if len(set(cards)) != n:
            raise MalformedActionError("a meld names a card twice")
        return Action(ActionKind.MELD, cards)
    if kind == _LAY_OFF:
        if n != 1:
            raise MalformedActionError(f"LAY_OFF takes exactly one card, got {n}")
        if target < 0:
            raise MalformedActionError(f"lay-off target {target} is negative")
        return Action(ActionKind.LAY_OFF, cards, target)
    reason = "is UNSPECIFIED" if kind == 0 else f"has the unknown value {kind}"
    raise MalformedActionError(f"action kind {reason}")


def _actions_from_bytes(items: list[bytes], what: str) -> list[Action]:
    """Decode a repeated Action field of a message that is not an action itself.

    Raises:
        BotProtocolError: for the first malformed action, naming it as ``what[i]``.
    """
    cache = _ACTION_CACHE
    out = []
    for i, data in enumerate(items):
        action = cache.get(data)
        if action is None:
            try:
                action = _action_from_bytes(data)
            except MalformedActionError as e:
                raise BotProtocolError(f"{what}[{i}]: {e}") from e
        out.append(action)
    return out


def action_to_proto(action: Action) -> pb.Action:
    """Encode an action; ``target`` is sent only for a lay-off."""
    return pb.Action.FromString(_action_body(action))


def action_from_proto(message: pb.Action) -> Action:
    """Decode an action, checking its shape (not its legality: the engine does that).

    Raises:
        MalformedActionError: UNSPECIFIED or unknown kind, a card number above 51, the wrong
            number of cards for the kind, a repeated card in a meld, or a negative target.
    """
    return _action_from_bytes(message.SerializeToString())


# ---------------------------------------------------------------------------------- events


def _event_body(event: Event) -> bytes:
    """An Event message's bytes."""
    card = event.card
    out = _uint_field(b"\x08", event.seat) + _bytes_field(b"\x12", _action_body(event.action))
    return out if card is None else out + b"\x18" + _ONE_BYTE[card.index]


_HISTORY_KEY = b"\x82\x01"  # field 16, length-delimited
# Whole history entries (tag, length, Event) for the events that recur in every hand.
_HISTORY_ENTRIES: dict[tuple[int, int, int], bytes] = {
    (seat, id(a), -1): _bytes_field(_HISTORY_KEY, _event_body(Event(seat, a)))
    for seat in range(max(_SEATS))
    for a in _CANONICAL_ACTIONS
    if a is not DRAW_DISCARD
}
_HISTORY_ENTRIES.update(
    (
        (seat, id(DRAW_DISCARD), c.index),
        _bytes_field(_HISTORY_KEY, _event_body(Event(seat, DRAW_DISCARD, c))),
    )
    for seat in range(max(_SEATS))
    for c in DECK
)
_EVENT_CACHE: dict[bytes, Event] = {}


def _event_from_bytes(data: bytes, what: str) -> Event:
    """Decode an Event message (the caller checks its seat against the table)."""
    seat = 0
    action_bytes = b""
    card: int | None = None
    for field, value in _scan(data, what):
        if isinstance(value, bytes):
            if field == 2:
                action_bytes += value  # a split sub-message merges
        elif field == 1:
            seat = value & _UINT32
        elif field == 3:
            card = value & _UINT32
    try:
        action = _action_from_bytes(action_bytes)
    except MalformedActionError as e:
        raise BotProtocolError(f"{what}.action: {e}") from e
    if action is DRAW_DISCARD:
        if card is None:
            raise BotProtocolError(f"{what}: a discard draw without its card")
        return Event(seat, action, _card(card, what))
    if card is not None:
        raise BotProtocolError(f"{what}: a card is set on a {action.kind.name} event")
    return Event(seat, action)


def _history_from_bytes(items: list[bytes], seats: int, first: int) -> tuple[Event, ...]:
    """Decode history entries (``first``: the index of the first), reusing decoded events."""
    cache = _EVENT_CACHE
    out = []
    for i, data in enumerate(items, first):
        event = cache.get(data)
        if event is None:
            event = _cached(cache, data, _event_from_bytes(data, f"observation.history[{i}]"))
        if event.seat >= seats:
            _seat(event.seat, seats, f"observation.history[{i}]")
        out.append(event)
    return tuple(out)


def event_to_proto(event: Event) -> pb.Event:
    """Encode one history event."""
    return pb.Event.FromString(_event_body(event))


def event_from_proto(message: pb.Event, seats: int, what: str = "event") -> Event:
    """Decode one history event at a table of ``seats``.

    Raises:
        BotProtocolError: a bad seat, action or card; a card on anything but a discard draw,
            or a discard draw without its card.
    """
    event = _event_from_bytes(message.SerializeToString(), what)
    _seat(event.seat, seats, what)
    return event


# ---------------------------------------------------------------------------------- table


def _spread_body(spread: Spread) -> bytes:
    return (
        _uint_field(b"\x08", spread.owner)
        + _uint_field(b"\x10", _SPREAD_KIND_NUMBER[spread.kind])
        + _cards_field(b"\x1a", spread.cards)
    )


_SPREAD_CACHE: dict[bytes, Spread] = {}


def _spread_from_bytes(data: bytes, seats: int, base: str, index: int = -1) -> Spread:
    spread = _SPREAD_CACHE.get(data)
    if spread is None:
        what = _name(base, index)
        owner = kind = 0
        chunks: list[_Value] = []
        for field, value in _scan(data, what):
            if field == 3:
                chunks.append(value)
            elif isinstance(value, int):
                if field == 1:
                    owner = value & _UINT32
                elif field == 2:
                    kind = _signed32(value)
        spread = Spread(
            owner, _enum(_SPREAD_KINDS, kind, f"{what}.kind"), _card_list(chunks, f"{what}.cards")
        )
        _cached(_SPREAD_CACHE, data, spread)
    if spread.owner >= seats:
        _seat(spread.owner, seats, _name(base, index))
    return spread


def spread_to_proto(spread: Spread) -> pb.Spread:
    """Encode a spread on the table."""
    return pb.Spread.FromString(_spread_body(spread))


def spread_from_proto(message: pb.Spread, seats: int, what: str = "spread") -> Spread:
    """Decode a spread on the table at a table of ``seats``."""
    return _spread_from_bytes(message.SerializeToString(), seats, what)


def _show_body(show: Show) -> bytes:
    return (
        _uint_field(b"\x08", show.seat)
        + _uint_field(b"\x10", show.card.index)
        + _uint_field(b"\x18", _POT_BY_ID[id(show.pot)])
    )


_SHOW_CACHE: dict[bytes, Show] = {}


def _show_from_bytes(data: bytes, seats: int, base: str, index: int = -1) -> Show:
    show = _SHOW_CACHE.get(data)
    if show is None:
        what = _name(base, index)
        seat = card = pot = 0
        for field, value in _scan(data, what):
            if isinstance(value, int):
                if field == 1:
                    seat = value & _UINT32
                elif field == 2:
                    card = value & _UINT32
                elif field == 3:
                    pot = _signed32(value)
        decoded = _enum(_POTS, pot, f"{what}.pot")
        if decoded is Pot.GAME:
            raise BotProtocolError(f"{what}.pot: a card is shown for the flip or flop pot only")
        show = _cached(_SHOW_CACHE, data, Show(seat, _card(card, what), decoded))
    if show.seat >= seats:
        _seat(show.seat, seats, _name(base, index))
    return show


def show_to_proto(show: Show) -> pb.Show:
    """Encode a card shown for the flip or flop pot."""
    return pb.Show.FromString(_show_body(show))


def show_from_proto(message: pb.Show, seats: int, what: str = "show") -> Show:
    """Decode a card shown for the flip or flop pot (the pot must be FLIP or FLOP)."""
    return _show_from_bytes(message.SerializeToString(), seats, what)


def _pots_body(pots: Pots) -> bytes:
    return (
        _uint_field(b"\x08", pots.game)
        + _uint_field(b"\x10", pots.flip)
        + _uint_field(b"\x18", pots.flop)
    )


def _pots_from_bytes(data: bytes, what: str) -> Pots:
    game = flip = flop = 0
    for field, value in _scan(data, what):
        if isinstance(value, int):
            if field == 1:
                game = _signed64(value)
            elif field == 2:
                flip = _signed64(value)
            elif field == 3:
                flop = _signed64(value)
    return Pots(game, flip, flop)


def pots_to_proto(pots: Pots) -> pb.Pots:
    """Encode the chips in each pot."""
    return pb.Pots.FromString(_pots_body(pots))


def pots_from_proto(message: pb.Pots) -> Pots:
    """Decode the chips in each pot."""
    return _pots_from_bytes(message.SerializeToString(), "pots")


# ---------------------------------------------------------------------------------- observation

_SeatRow = tuple[int, bool, bool, bool, bool, int, tuple[Card, ...]]
_SEAT_CACHE: dict[bytes, _SeatRow] = {}
_SEAT_ENTRIES: dict[tuple[int, bool, bool, bool, bool, int, bytes], bytes] = {}
_SHOW_ENTRIES: dict[tuple[int, int, int], bytes] = {}
_POTS_CACHE: dict[bytes, Pots] = {}
# Per match, the last history sent (arena side) or received (bot side): its entries' bytes
# and its events. The next decision's history starts with it, so only new events are coded.
_HistoryRun = tuple[bytes, tuple[Event, ...], int]  # entries' bytes, events, highest seat
_HISTORY_RUNS_SIZE = 1024
"""The most matches whose history is remembered, per side."""
_HISTORY_RUNS_BYTES = 8 * 1024 * 1024
"""The most bytes of history remembered, per side (about 1700 matches at the default turn cap)."""


class _HistoryRuns:
    """The last history run of each match, bounded in entries and in bytes (emptied when full).

    Sizes count the run's bytes, its match id and a pointer per event; thread-safe, as one
    process may serve (or play) several matches at once.
    """

    __slots__ = ("_held", "_lock", "_runs")

    def __init__(self) -> None:
        self._runs: dict[str, _HistoryRun] = {}
        self._held = 0
        self._lock = threading.Lock()

    @staticmethod
    def _size(match_id: str, run: _HistoryRun) -> int:
        return len(match_id) + len(run[0]) + 8 * len(run[1])

    def get(self, match_id: str) -> _HistoryRun | None:
        return self._runs.get(match_id)

    def remember(self, match_id: str, run: _HistoryRun) -> None:
        size = self._size(match_id, run)
        with self._lock:
            self._drop(match_id)
            if size > _HISTORY_RUNS_BYTES:
                return
            if len(self._runs) >= _HISTORY_RUNS_SIZE or self._held + size > _HISTORY_RUNS_BYTES:
                self._runs.clear()
                self._held = 0
            self._runs[match_id] = run
            self._held += size

    def forget(self, match_id: str) -> None:
        with self._lock:
            self._drop(match_id)

    def _drop(self, match_id: str) -> None:
        old = self._runs.pop(match_id, None)
        if old is not None:
            self._held -= self._size(match_id, old)

    @property
    def held(self) -> int:
        """The bytes held now, as counted."""
        return self._held

    def __len__(self) -> int:
        return len(self._runs)


_SENT_HISTORY = _HistoryRuns()
_RECEIVED_HISTORY = _HistoryRuns()


def forget_match(match_id: str) -> None:
    """Drop what is remembered of a match's history (both sides): the match is over."""
    _SENT_HISTORY.forget(match_id)
    _RECEIVED_HISTORY.forget(match_id)


def _seat_entry(
    bankroll: int,
    active: bool,
    all_in: bool,
    flip: bool,
    flop: bool,
    size: int,
    known: Sequence[Card],
) -> bytes:
    """One ``seats`` entry of an Observation (tag, length, SeatView)."""
    known_bytes = bytes([c.index for c in known]) if known else b""
    key = (bankroll, active, all_in, flip, flop, size, known_bytes)
    entry = _SEAT_ENTRIES.get(key)
    if entry is None:
        body = b"".join(
            (
                _uint_field(b"\x08", bankroll),
                b"\x10\x01" if active else b"",
                b"\x18\x01" if all_in else b"",
                b"\x20\x01" if flip else b"",
                b"\x28\x01" if flop else b"",
                _uint_field(b"\x30", size),
                _bytes_field(b"\x3a", known_bytes) if known_bytes else b"",
            )
        )
        entry = _memo(_SEAT_ENTRIES, key, _bytes_field(b"\x42", body))
    return entry


def _show_entry(show: Show) -> bytes:
    """One ``shows`` entry of an Observation (tag, length, Show)."""
    key = (show.seat, show.card.index, _POT_BY_ID[id(show.pot)])
    entry = _SHOW_ENTRIES.get(key)
    if entry is None:
        entry = _memo(_SHOW_ENTRIES, key, _bytes_field(b"\x5a", _show_body(show)))
    return entry


def _seat_view_from_bytes(data: bytes, seat: int) -> _SeatRow:
    row = _SEAT_CACHE.get(data)
    if row is not None:
        return row
    bankroll = size = 0
    flags = [False] * 6  # indexed by field number: active 2, all_in 3, flip 4, flop 5
    chunks: list[_Value] = []
    what = f"observation.seats[{seat}]"
    for field, value in _scan(data, what):
        if field == 7:
            chunks.append(value)
        elif isinstance(value, int):
            if field == 1:
                bankroll = _signed64(value)
            elif 2 <= field <= 5:
                flags[field] = value != 0
            elif field == 6:
                size = value & _UINT32
    known = _card_list(chunks, f"{what}.known")
    return _cached(
        _SEAT_CACHE, data, (bankroll, flags[2], flags[3], flags[4], flags[5], size, known)
    )


def _observation_body(obs: Observation, match_id: str = "") -> bytes:
    """An Observation message's bytes (``match_id``, if any, keys the history cache)."""
    drawn = obs.drawn_from_discard
    return b"".join(
        (
            _uint_field(b"\x08", obs.seat),
            _uint_field(b"\x10", obs.hand_number),
            _uint_field(b"\x18", obs.dealer),
            _uint_field(b"\x20", obs.stake),
            _uint_field(b"\x28", obs.to_act),
            _uint_field(b"\x30", _PHASE_BY_ID[id(obs.phase)]),
            _uint_field(b"\x38", obs.turn),
            *[
                _seat_entry(*row)
                for row in zip(
                    obs.bankrolls,
                    obs.active,
                    obs.all_in,
                    obs.flip_eligible,
                    obs.flop_eligible,
                    obs.hand_sizes,
                    obs.known,
                    strict=True,
                )
            ],
            _bytes_field(b"\x4a", _pots_body(obs.pots)),
            _uint_field(b"\x50", obs.flip_card.index),
            *[_show_entry(s) for s in obs.shows],
            _cards_field(b"\x62", obs.hand),
            _cards_field(b"\x6a", obs.discard_pile),
            _uint_field(b"\x70", obs.stock_size),
            *[_bytes_field(b"\x7a", _spread_body(s)) for s in obs.spreads],
            _history_bytes(obs.history, match_id),
            b"" if drawn is None else b"\x88\x01" + _ONE_BYTE[drawn.index],
        )
    )


def _history_bytes(history: tuple[Event, ...], match_id: str) -> bytes:
    """The history entries of an Observation, reusing the match's previous history."""
    done = 0
    head = b""
    if match_id:
        last = _SENT_HISTORY.get(match_id)
        if last is not None:
            run, events, _ = last
            k = len(events)
            if history[:k] == events:  # mostly an identity check: the engine keeps its events
                done, head = k, run
    if done == len(history):
        return head
    entries = _HISTORY_ENTRIES
    parts = [head]
    for e in history[done:]:
        card = e.card
        entry = entries.get((e.seat, id(e.action), -1 if card is None else card.index))
        parts.append(entry or _bytes_field(_HISTORY_KEY, _event_body(e)))
    out = b"".join(parts)
    if match_id:
        _SENT_HISTORY.remember(match_id, (out, history, 0))
    return out


def _observation_from_bytes(data: bytes, match_id: str = "") -> Observation:
    """Decode an Observation message (``match_id``, if any, keys the history cache)."""
    # The match's previous history is usually a prefix of this one: find it (one memory
    # search) and scan only the bytes around it. Both sides are then scanned in full, so a
    # coincidence inside another field cannot pass: it would leave a truncated field.
    known_run: bytes = b""
    known_events: tuple[Event, ...] = ()
    known_top = 0
    last = _RECEIVED_HISTORY.get(match_id) if match_id else None
    if last is not None and last[0]:
        at = data.find(last[0])
        if at >= 0:
            try:
                before = _scan(data[:at], "observation")
                after = _scan(data[at + len(last[0]) :], "observation")
            except BotProtocolError:
                pass  # not on a field boundary: scan the whole message below
            else:
                known_run, known_events, known_top = last
                fields = [*before, (_KNOWN_HISTORY, b""), *after]
    if not known_run:
        fields = _scan(data, "observation")
    # Numbers by field number (1 seat, 2 hand_number, 3 dealer, 4 stake, 5 to_act, 6 phase,
    # 7 turn, 10 flip_card, 14 stock_size, 17 drawn_from_discard; -1: unset).
    numbers = [0] * 17 + [-1]
    views: list[bytes] = []
    shows: list[bytes] = []
    spreads: list[bytes] = []
    history: list[bytes] = []
    hand: list[_Value] = []
    discard: list[_Value] = []
    pots = b""
    history_at = -1  # where the known run sits among the history entries
    for field, value in fields:
        if field == 16:
            if isinstance(value, bytes):
                history.append(value)
        elif isinstance(value, int):
            if field == 12:
                hand.append(value)
            elif field == 13:
                discard.append(value)
            elif field <= 17:
                numbers[field] = value
        elif field == 8:
            views.append(value)
        elif field == 12:
            hand.append(value)
        elif field == 13:
            discard.append(value)
        elif field == 11:
            shows.append(value)
        elif field == 15:
            spreads.append(value)
        elif field == 9:
            pots += value  # a split sub-message merges
        elif field == _KNOWN_HISTORY:
            history_at = len(history)
    n = len(views)
    if n not in _SEATS:
        raise BotProtocolError(f"observation: {n} seats, expected 3 to 5")
    rows = [_seat_view_from_bytes(v, s) for s, v in enumerate(views)]
    bankrolls, active, all_in, flip, flop, sizes, known = zip(*rows, strict=True)
    if history_at < 0:
        events = _history_from_bytes(history, n, 0)
    else:
        events = (
            _history_from_bytes(history[:history_at], n, 0)
            + known_events
            + _history_from_bytes(history[history_at:], n, history_at + len(known_events))
        )
        if known_top >= n:  # it was decoded for another table
            for i, e in enumerate(known_events):
                _seat(e.seat, n, f"observation.history[{history_at + i}]")
    if match_id and history:  # something new to remember
        entries = [_bytes_field(_HISTORY_KEY, h) for h in history]
        if history_at >= 0:
            entries.insert(history_at, known_run)
        top = max([e.seat for e in events], default=0)
        _RECEIVED_HISTORY.remember(match_id, (b"".join(entries), events, top))
    drawn = numbers[17]
    pots_value = _POTS_CACHE.get(pots)
    if pots_value is None:
        pots_value = _cached(_POTS_CACHE, pots, _pots_from_bytes(pots, "observation.pots"))
    return Observation(
        seat=_seat(numbers[1] & _UINT32, n, "observation.seat"),
        hand_number=numbers[2] & _UINT32,
        dealer=_seat(numbers[3] & _UINT32, n, "observation.dealer"),
        stake=_signed64(numbers[4]),
        to_act=_seat(numbers[5] & _UINT32, n, "observation.to_act"),
        phase=_enum(_PHASES, _signed32(numbers[6]), "observation.phase"),
        turn=numbers[7] & _UINT32,
        bankrolls=bankrolls,
        active=active,
        all_in=all_in,
        pots=pots_value,
        flip_eligible=flip,
        flop_eligible=flop,
        flip_card=_card(numbers[10] & _UINT32, "observation.flip_card"),
        shows=tuple([_show_from_bytes(s, n, "observation.shows", i) for i, s in enumerate(shows)]),
        hand=_card_list(hand, "observation.hand"),
        hand_sizes=sizes,
        known=known,
        discard_pile=_card_list(discard, "observation.discard_pile"),
        stock_size=numbers[14] & _UINT32,
        spreads=tuple(
            [_spread_from_bytes(s, n, "observation.spreads", i) for i, s in enumerate(spreads)]
        ),
        history=events,
        drawn_from_discard=(
            None if drawn < 0 else _card(drawn & _UINT32, "observation.drawn_from_discard")
        ),
    )


_KNOWN_HISTORY = -16
"""A pseudo field number: where the match's known history run was found."""


def observation_to_proto(obs: Observation) -> pb.Observation:
    """Encode one seat's observation (it carries exactly what the observation holds)."""
    return pb.Observation.FromString(_observation_body(obs))


def observation_from_proto(message: pb.Observation) -> Observation:
    """Decode an observation.

    Raises:
        BotProtocolError: not 3 to 5 seats, a seat or card out of range, an UNSPECIFIED phase,
            pot or spread kind, or a malformed action in the history.
    """
    return _observation_from_bytes(message.SerializeToString())


# ---------------------------------------------------------------------------------- results


def payment_to_proto(payment: Payment) -> pb.Payment:
    """Encode a chip movement."""
    return pb.Payment(
        seat=payment.seat,
        pot=_POT_NUMBER[payment.pot],
        amount=payment.amount,
        reason=payment.reason,
    )


def payment_from_proto(message: pb.Payment, seats: int, what: str = "payment") -> Payment:
    """Decode a chip movement at a table of ``seats``; the reason must be a documented one."""
    if message.reason not in _PAYMENT_REASONS:
        raise BotProtocolError(
            f"{what}.reason: {message.reason!r} is not one of {sorted(_PAYMENT_REASONS)}"
        )
    return Payment(
        _seat(message.seat, seats, what),
        _enum(_POTS, message.pot, f"{what}.pot"),
        message.amount,
        message.reason,
    )


def hand_result_to_proto(result: HandResult) -> pb.HandResult:
    """Encode a hand's settlement."""
    return pb.HandResult(
        hand_number=result.hand_number,
        dealer=result.dealer,
        termination=_TERMINATION_NUMBER[result.termination],
        ender=result.ender,
        flip_card=result.flip_card.index,
        payments=[payment_to_proto(p) for p in result.payments],
        game_winners=result.game_winners,
        flip_winner=result.flip_winner,
        flop_winner=result.flop_winner,
        shown_hands=[
            pb.ShownHand(shown=False)
            if cards is None
            else pb.ShownHand(shown=True, cards=[c.index for c in cards], total=total or 0)
            for cards, total in zip(result.shown_hands, result.totals, strict=True)
        ],
        eliminated=result.eliminated,
        bankrolls=result.bankrolls,
        deltas=result.deltas,
        carried=pots_to_proto(result.carried),
    )


def hand_result_from_proto(message: pb.HandResult) -> HandResult:
    """Decode a hand's settlement.

    Raises:
        BotProtocolError: per-seat lists of different lengths, a seat or card out of range, an
            UNSPECIFIED termination or pot, or an unshown hand that carries cards.
    """
    n = len(message.bankrolls)
    if n not in _SEATS:
        raise BotProtocolError(f"hand result: {n} bankrolls, expected 3 to 5")
    for name, size in (("deltas", len(message.deltas)), ("shown_hands", len(message.shown_hands))):
        if size != n:
            raise BotProtocolError(f"hand result: {size} {name} for {n} seats")
    shown: list[tuple[Card, ...] | None] = []
    totals: list[int | None] = []
    for s, h in enumerate(message.shown_hands):
        if h.shown:
            shown.append(_cards(h.cards, f"hand result.shown_hands[{s}]"))
            totals.append(h.total)
        elif h.cards or h.total:
            raise BotProtocolError(f"hand result.shown_hands[{s}]: not shown but has cards")
        else:
            shown.append(None)
            totals.append(None)
    return HandResult(
        hand_number=message.hand_number,
        dealer=_seat(message.dealer, n, "hand result.dealer"),
        termination=_enum(_TERMINATIONS, message.termination, "hand result.termination"),
        ender=_optional_seat(message.HasField("ender"), message.ender, n, "hand result.ender"),
        flip_card=_card(message.flip_card, "hand result.flip_card"),
        payments=tuple(
            [
                payment_from_proto(p, n, f"hand result.payments[{i}]")
                for i, p in enumerate(message.payments)
            ]
        ),
        game_winners=tuple([_seat(s, n, "hand result.game_winners") for s in message.game_winners]),
        flip_winner=_optional_seat(
            message.HasField("flip_winner"), message.flip_winner, n, "hand result.flip_winner"
        ),
        flop_winner=_optional_seat(
            message.HasField("flop_winner"), message.flop_winner, n, "hand result.flop_winner"
        ),
        shown_hands=tuple(shown),
        totals=tuple(totals),
        eliminated=tuple([_seat(s, n, "hand result.eliminated") for s in message.eliminated]),
        bankrolls=tuple(message.bankrolls),
        deltas=tuple(message.deltas),
        carried=pots_from_proto(message.carried),
    )


def match_result_to_proto(result: MatchResult) -> pb.MatchResult:
    """Encode a match's result (survivors travel as ``eliminated_in = 0``)."""
    return pb.MatchResult(
        placements=result.placements,
        bankrolls=result.bankrolls,
        eliminated_in=[e or 0 for e in result.eliminated_in],
        hands=result.hands,
        by_cap=result.by_cap,
        carry_payments=[payment_to_proto(p) for p in result.carry_payments],
    )


def match_result_from_proto(message: pb.MatchResult) -> MatchResult:
    """Decode a match's result.

    Raises:
        BotProtocolError: per-seat lists of different lengths, a place outside 1..seats, or a
            bad payment.
    """
    n = len(message.placements)
    if n not in _SEATS:
        raise BotProtocolError(f"match result: {n} placements, expected 3 to 5")
    for name, size in (
        ("bankrolls", len(message.bankrolls)),
        ("eliminated_in", len(message.eliminated_in)),
    ):
        if size != n:
            raise BotProtocolError(f"match result: {size} {name} for {n} seats")
    if any(not 1 <= p <= n for p in message.placements):
        raise BotProtocolError(f"match result: placements {list(message.placements)} not 1..{n}")
    return MatchResult(
        placements=tuple(message.placements),
        bankrolls=tuple(message.bankrolls),
        eliminated_in=tuple([e or None for e in message.eliminated_in]),
        hands=message.hands,
        by_cap=message.by_cap,
        carry_payments=tuple(
            [
                payment_from_proto(p, n, f"match result.carry_payments[{i}]")
                for i, p in enumerate(message.carry_payments)
            ]
        ),
    )


# ---------------------------------------------------------------------------------- match set-up


def match_config_to_proto(config: MatchConfig) -> pb.MatchConfig:
    """Encode a match config (no hand cap travels as 0)."""
    return pb.MatchConfig(
        seats=config.seats,
        stake=config.stake,
        bankroll=config.bankroll,
        hand_cap=config.hand_cap or 0,
        turn_cap=config.turn_cap,
    )


def match_config_from_proto(message: pb.MatchConfig) -> MatchConfig:
    """Decode a match config (``hand_cap = 0`` means no cap).

    Raises:
        BotProtocolError: a config the engine cannot play (the reason is the engine's).
    """
    try:
        return MatchConfig(
            seats=message.seats,
            stake=message.stake,
            bankroll=message.bankroll,
            hand_cap=message.hand_cap or None,
            turn_cap=message.turn_cap,
        )
    except ConfigError as e:
        raise BotProtocolError(f"config: {e}") from e


def match_info_to_proto(info: MatchInfo) -> pb.StartMatchRequest:
    """Encode what a bot is told when a match starts."""
    return pb.StartMatchRequest(
        match_id=info.match_id,
        seat=info.seat,
        players=info.players,
        config=match_config_to_proto(info.config),
        decision_ms=info.decision_ms,
        time_bank_ms=info.time_bank_ms,
    )


def match_info_from_proto(message: pb.StartMatchRequest) -> MatchInfo:
    """Decode a StartMatch request.

    Raises:
        BotProtocolError: no match id, a bad config, a seat outside the table, or not one
            player name per seat.
    """
    if not message.match_id:
        raise BotProtocolError("start match: match_id is empty")
    config = match_config_from_proto(message.config)
    if len(message.players) != config.seats:
        raise BotProtocolError(
            f"start match: {len(message.players)} player names for {config.seats} seats"
        )
    return MatchInfo(
        match_id=message.match_id,
        seat=_seat(message.seat, config.seats, "start match.seat"),
        players=tuple(message.players),
        config=config,
        decision_ms=message.decision_ms,
        time_bank_ms=message.time_bank_ms,
    )


# ---------------------------------------------------------------------------------- handshake


@dataclass(frozen=True, slots=True)
class BotIdentity:
    """Who a bot says it is, from the handshake.

    Attributes:
        name: shown in standings.
        version: the bot's own version string.
        protocol_version: the protocol it speaks, ``MAJOR.MINOR``.
        features: optional capabilities, e.g. ``concurrent-matches``, ``debug-notes``.
        runtime: free text such as ``python 3.11 / flipflop-sdk 0.1.0``.
    """

    name: str
    version: str
    protocol_version: str
    features: tuple[str, ...]
    runtime: str


def handshake_request(
    arena_version: str, protocol_version: str = PROTOCOL_VERSION
) -> pb.HandshakeRequest:
    """Encode the arena's side of the handshake."""
    return pb.HandshakeRequest(protocol_version=protocol_version, arena_version=arena_version)


def handshake_request_from_proto(message: pb.HandshakeRequest) -> tuple[str, str]:
    """(protocol_version, arena_version) of a HandshakeRequest."""
    return message.protocol_version, message.arena_version


def handshake_response(identity: BotIdentity, seat_token: str = "") -> pb.HandshakeResponse:
    """Encode the bot's side of the handshake, with its seat token ("" if it has none)."""
    return pb.HandshakeResponse(
        protocol_version=identity.protocol_version,
        name=identity.name,
        version=identity.version,
        features=identity.features,
        runtime=identity.runtime,
        seat_token=seat_token,
    )


MAX_NAME_CHARS = 64
"""The longest bot name in a handshake, in characters."""
MAX_VERSION_CHARS = 64
"""The longest bot version string in a handshake, in characters."""
MAX_RUNTIME_CHARS = 128
"""The longest runtime text in a handshake, in characters."""
MAX_FEATURES = 16
"""The most features a handshake may announce."""
MAX_FEATURE_CHARS = 64
"""The longest feature name, in characters."""
_PROTOCOL_VERSION_FORM = re.compile(r"[0-9]{1,9}\.[0-9]{1,9}")
# Control and format characters (ESC, newlines, bidi overrides, zero-width ones), line and
# paragraph separators, and lone surrogates: they could rewrite a terminal, a log line or a CSV.
_CONTROL_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
_SHOWN_CHARS = 40


def _shown(text: str) -> str:
    """``text`` for an error message: repr() (escapes and all) of its first 40 characters."""
    if len(text) <= _SHOWN_CHARS:
        return repr(text)
    return f"{text[:_SHOWN_CHARS]!r}… ({len(text)} characters)"


def _check_text(text: str, field: str, limit: int) -> None:
    """Refuse a handshake string over ``limit`` characters or with a control character."""
    if len(text) > limit:
        raise BotProtocolError(
            f"handshake: {field} {_shown(text)} is over the limit of {limit} characters"
        )
    if text.isprintable():  # the usual case; the loop below names the character
        return
    for i, char in enumerate(text):
        if unicodedata.category(char) in _CONTROL_CATEGORIES:
            raise BotProtocolError(
                f"handshake: {field} {_shown(text)} holds the control character "
                f"U+{ord(char):04X} at index {i}"
            )


def identity_from_proto(message: pb.HandshakeResponse) -> BotIdentity:
    """Decode the bot's side of the handshake, checking its strings (the seat token aside).

    Raises:
        BotProtocolError: the protocol version is not ``MAJOR.MINOR`` in ASCII digits; the name
            is empty; a string is too long (name or version over 64 characters, runtime over
            128, over 16 features or one over 64), or holds a control or format character
            (Unicode Cc, Cf, Cs, Zl, Zp: ESC, newlines, bidi overrides, …). The reason names
            the field and shows at most 40 characters of the value.
    """
    version = message.protocol_version
    if not version:
        raise BotProtocolError("handshake: the bot sent no protocol version")
    if not _PROTOCOL_VERSION_FORM.fullmatch(version):
        raise BotProtocolError(
            f"handshake: protocol_version {_shown(version)} is not MAJOR.MINOR in digits "
            f"(e.g. {PROTOCOL_VERSION!r})"
        )
    if not message.name:
        raise BotProtocolError("handshake: the bot sent no name")
    _check_text(message.name, "name", MAX_NAME_CHARS)
    _check_text(message.version, "version", MAX_VERSION_CHARS)
    _check_text(message.runtime, "runtime", MAX_RUNTIME_CHARS)
    features = tuple(message.features)
    if len(features) > MAX_FEATURES:
        raise BotProtocolError(
            f"handshake: {len(features)} features, over the limit of {MAX_FEATURES}"
        )
    for i, feature in enumerate(features):
        _check_text(feature, f"features[{i}]", MAX_FEATURE_CHARS)
    return BotIdentity(
        name=message.name,
        version=message.version,
        protocol_version=version,
        features=features,
        runtime=message.runtime,
    )


def sdk_runtime(sdk_version: str) -> str:
    """The ``runtime`` text of a Python bot: interpreter and SDK versions."""
    return f"python {platform.python_version()} / flipflop-sdk {sdk_version}"


# ---------------------------------------------------------------------------------- decisions


@dataclass(frozen=True, slots=True)
class DecideCall:
    """A decoded DecideRequest (the bot's side).

    Attributes:
        match_id: the match it belongs to.
        observation: what the bot's seat may know.
        legal: the legal actions (PLAY phase: the legal first steps).
        time_left_ms: milliseconds before this decision is late.
        time_bank_ms: what is left of the match time bank.
    """

    match_id: str
    observation: Observation
    legal: list[Action]
    time_left_ms: int
    time_bank_ms: int


@dataclass(frozen=True, slots=True)
class Decision:
    """A decoded DecideResponse (the arena's side).

    Attributes:
        actions: the bot's answer, in order.
        note: its debug note, cut to :data:`NOTE_LIMIT` bytes.
        note_bytes: the length of the note as sent, in bytes (over the limit: it was cut).
    """

    actions: list[Action]
    note: str
    note_bytes: int


_LEGAL_KEY = b"\x1a"
_LEGAL_ENTRIES = {id(a): _bytes_field(_LEGAL_KEY, _action_body(a)) for a in _CANONICAL_ACTIONS}


def decide_request_bytes(
    match_id: str,
    obs: Observation,
    legal: Sequence[Action],
    time_left_ms: int,
    time_bank_ms: int,
) -> bytes:
    """A serialised DecideRequest: what the arena sends for one decision."""
    entries = _LEGAL_ENTRIES
    return b"".join(
        (
            _bytes_field(b"\x0a", match_id.encode("utf-8")) if match_id else b"",
            _bytes_field(b"\x12", _observation_body(obs, match_id)),
            *[entries.get(id(a)) or _bytes_field(_LEGAL_KEY, _action_body(a)) for a in legal],
            _uint_field(b"\x20", time_left_ms),
            _uint_field(b"\x28", time_bank_ms),
        )
    )


def decide_call_from_bytes(data: bytes) -> DecideCall:
    """Decode a serialised DecideRequest (the bot's side).

    Raises:
        BotProtocolError: not a DecideRequest, no match id, a bad observation or a malformed
            legal action; the reason names the field.
    """
    match_id = ""
    observation = b""
    legal: list[bytes] = []
    time_left = time_bank = 0
    for field, value in _scan(data, "decide request"):
        if isinstance(value, bytes):
            if field == 3:
                legal.append(value)
            elif field == 2:
                observation += value  # a split sub-message merges
            elif field == 1:
                match_id = _string(value, "match_id")
        elif field == 4:
            time_left = value & _UINT32
        elif field == 5:
            time_bank = value & _UINT32
    if not match_id:
        raise BotProtocolError("decide: match_id is empty")
    return DecideCall(
        match_id=match_id,
        observation=_observation_from_bytes(observation, match_id),
        legal=_actions_from_bytes(legal, "legal"),
        time_left_ms=time_left,
        time_bank_ms=time_bank,
    )


def decide_match_id(data: bytes) -> str:
    """The match id of a serialised DecideRequest, as :func:`decide_call_from_bytes` reads it.

    Raises:
        BotProtocolError: not a DecideRequest, or no match id.
    """
    match_id = ""
    for field, value in _scan(data, "decide request"):
        if field == 1 and isinstance(value, bytes):
            match_id = _string(value, "match_id")
    if not match_id:
        raise BotProtocolError("decide: match_id is empty")
    return match_id


def decide_request(
    match_id: str,
    obs: Observation,
    legal: Sequence[Action],
    time_left_ms: int,
    time_bank_ms: int,
) -> pb.DecideRequest:
    """Encode one decision request as a message (see :func:`decide_request_bytes`)."""
    return pb.DecideRequest.FromString(
        decide_request_bytes(match_id, obs, legal, time_left_ms, time_bank_ms)
    )


def decide_request_from_proto(message: pb.DecideRequest) -> DecideCall:
    """Decode one decision request message (see :func:`decide_call_from_bytes`)."""
    return decide_call_from_bytes(message.SerializeToString())


_ANSWER_ENTRIES = {id(a): _bytes_field(b"\x0a", _action_body(a)) for a in _CANONICAL_ACTIONS}


def decide_response_bytes(actions: Sequence[Action], note: str = "") -> bytes:
    """A serialised DecideResponse: the bot's answer; the note is cut to :data:`NOTE_LIMIT`."""
    entries = _ANSWER_ENTRIES
    out = b"".join([entries.get(id(a)) or _bytes_field(b"\x0a", _action_body(a)) for a in actions])
    if note:
        out += _bytes_field(b"\x12", cut_note(note).encode("utf-8", "replace"))
    return out


def decision_from_bytes(data: bytes) -> Decision:
    """Decode a serialised DecideResponse (the arena's side); an over-long note is cut.

    Raises:
        BotProtocolError: not a DecideResponse, or a malformed action (``actions[1]: …``).
    """
    actions: list[bytes] = []
    note = ""
    for field, value in _scan(data, "decide response"):
        if isinstance(value, bytes):
            if field == 1:
                actions.append(value)
            elif field == 2:
                note = _string(value, "note")
    size = len(note) if note.isascii() else len(note.encode("utf-8"))
    return Decision(_actions_from_bytes(actions, "actions"), cut_note(note), size)


def decide_response(actions: Sequence[Action], note: str = "") -> pb.DecideResponse:
    """Encode a bot's answer as a message (see :func:`decide_response_bytes`)."""
    return pb.DecideResponse.FromString(decide_response_bytes(actions, note))


def decide_response_from_proto(message: pb.DecideResponse) -> Decision:
    """Decode a bot's answer message (see :func:`decision_from_bytes`)."""
    return decision_from_bytes(message.SerializeToString())


def hand_ended_request(match_id: str, result: HandResult) -> pb.HandEndedRequest:
    """Encode a HandEnded call."""
    return pb.HandEndedRequest(match_id=match_id, result=hand_result_to_proto(result))


def hand_ended_request_from_proto(message: pb.HandEndedRequest) -> tuple[str, HandResult]:
    """Decode a HandEnded call: (match id, result)."""
    return message.match_id, hand_result_from_proto(message.result)


def end_match_request(match_id: str, result: MatchResult) -> pb.EndMatchRequest:
    """Encode an EndMatch call."""
    return pb.EndMatchRequest(match_id=match_id, result=match_result_to_proto(result))


def end_match_request_from_proto(message: pb.EndMatchRequest) -> tuple[str, MatchResult]:
    """Decode an EndMatch call: (match id, result)."""
    return message.match_id, match_result_from_proto(message.result)


# ---------------------------------------------------------------------------------- health

HEALTH_SERVICES = frozenset({"", "flipflop.v1.Bot"})
"""The service names a bot answers health checks for."""


def health_request(service: str = "") -> health_pb.HealthCheckRequest:
    """Encode a health check for ``service`` ("" = the whole server)."""
    return health_pb.HealthCheckRequest(service=service)


def health_response(serving: bool) -> health_pb.HealthCheckResponse:
    """Encode a health answer: SERVING or NOT_SERVING."""
    status = (
        health_pb.HealthCheckResponse.SERVING
        if serving
        else health_pb.HealthCheckResponse.NOT_SERVING
    )
    return health_pb.HealthCheckResponse(status=status)


def is_serving(message: health_pb.HealthCheckResponse) -> bool:
    """True if a health answer says SERVING."""
    return message.status == health_pb.HealthCheckResponse.SERVING
