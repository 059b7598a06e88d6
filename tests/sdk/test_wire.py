"""The protobuf edge (``flipflop._wire``): lossless, canonical, strict, and leak-free.

The decision path is coded by hand, so it is held here to the generated code in three ways:
an independent reference encoder below builds every message by *field name* through the
generated classes (so a swapped field number cannot hide behind a self-consistent round trip),
the generated parser must re-serialise our bytes unchanged (canonical form), and our decoder
must read the generated code's bytes and non-canonical variants of them.
"""

from __future__ import annotations

import random
from collections.abc import Generator

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from flipflop import (
    DECK,
    DRAW_DISCARD,
    DRAW_STOCK,
    DROP,
    Action,
    ActionKind,
    BotProtocolError,
    Card,
    Event,
    MalformedActionError,
    MatchConfig,
    MatchInfo,
    MatchState,
    Observation,
    Phase,
    Pot,
)
from flipflop import _wire as wire
from flipflop._proto.flipflop.v1 import bot_pb2 as pb

SEEDS = st.integers(0, 2**32 - 1)
MAX_ACTIONS = 4000


# ---------------------------------------------------------------------------------- helpers


def states(seed: int) -> Generator[MatchState, None, MatchState]:
    """Play a short random match that melds and lays off, yielding before every action.

    The same state object is yielded each time, mutated; once the generator is spent it
    holds the finished match. A match can end with no decision at all (a 49/50 deal in its
    only hand), so it may yield nothing.
    """
    rng = random.Random(seed)
    stake = rng.randint(1, 10)
    config = MatchConfig(
        seats=rng.randint(3, 5),
        stake=stake,
        bankroll=stake * rng.randint(2, 12),
        hand_cap=rng.randint(1, 5),
        turn_cap=rng.randint(5, 60),
    )
    state = MatchState(config, seed)
    for _ in range(MAX_ACTIONS):
        if state.is_over:
            return state
        yield state
        legal = state.legal_actions()
        if state.phase is Phase.START:
            roll = rng.random()
            action = DROP if roll < 0.03 else DRAW_DISCARD if roll < 0.5 else DRAW_STOCK
            action = action if action in legal else DRAW_STOCK
        else:
            spreads = [a for a in legal if a.kind in (ActionKind.MELD, ActionKind.LAY_OFF)]
            action = rng.choice(spreads if spreads and rng.random() < 0.8 else legal)
        state.apply(action)
    raise AssertionError(f"seed {seed}: the match did not end within {MAX_ACTIONS} actions")


def finished(seed: int) -> MatchState:
    """A finished random match, including one that needed no decision."""
    match = states(seed)
    while True:
        try:
            next(match)
        except StopIteration as end:
            last: MatchState = end.value
            assert last.is_over
            return last


def reference_action(a: Action) -> pb.Action:
    """An Action message built by field name (target only for a lay-off)."""
    kinds = {k: getattr(pb, f"ACTION_KIND_{k.name}") for k in ActionKind}
    target = a.target if a.kind is ActionKind.LAY_OFF else 0
    return pb.Action(kind=kinds[a.kind], cards=[c.index for c in a.cards], target=target)


def reference_observation(obs: Observation) -> pb.Observation:
    """An Observation message built by field name, independently of ``_wire``."""
    pots = {p: getattr(pb, f"POT_{p.name}") for p in Pot}
    return pb.Observation(
        seat=obs.seat,
        hand_number=obs.hand_number,
        dealer=obs.dealer,
        stake=obs.stake,
        to_act=obs.to_act,
        phase=pb.PHASE_START if obs.phase is Phase.START else pb.PHASE_PLAY,
        turn=obs.turn,
        seats=[
            pb.SeatView(
                bankroll=obs.bankrolls[s],
                active=obs.active[s],
                all_in=obs.all_in[s],
                flip_eligible=obs.flip_eligible[s],
                flop_eligible=obs.flop_eligible[s],
                hand_size=obs.hand_sizes[s],
                known=[c.index for c in obs.known[s]],
            )
            for s in range(obs.seats)
        ],
        pots=pb.Pots(game=obs.pots.game, flip=obs.pots.flip, flop=obs.pots.flop),
        flip_card=obs.flip_card.index,
        shows=[pb.Show(seat=s.seat, card=s.card.index, pot=pots[s.pot]) for s in obs.shows],
        hand=[c.index for c in obs.hand],
        discard_pile=[c.index for c in obs.discard_pile],
        stock_size=obs.stock_size,
        spreads=[
            pb.Spread(
                owner=s.owner,
                kind=pb.SPREAD_KIND_RUN if s.kind.name == "RUN" else pb.SPREAD_KIND_SET,
                cards=[c.index for c in s.cards],
            )
            for s in obs.spreads
        ],
        history=[
            pb.Event(
                seat=e.seat,
                action=reference_action(e.action),
                card=None if e.card is None else e.card.index,
            )
            for e in obs.history
        ],
        drawn_from_discard=(
            None if obs.drawn_from_discard is None else obs.drawn_from_discard.index
        ),
    )


def roundtrip_bytes(message_type: type[pb.Observation], message: pb.Observation) -> pb.Observation:
    """The message after serialising to bytes and parsing again."""
    return message_type.FromString(message.SerializeToString())


# ---------------------------------------------------------------------------------- lossless


@settings(max_examples=15, deadline=None)
@given(seed=SEEDS)
def test_observation_round_trip_is_lossless(seed: int) -> None:
    """Every observation of a random match survives encode → bytes → decode unchanged.

    Every seat's view at every step; its message also equals one built field by field.
    """
    for state in states(seed):
        for seat in range(state.config.seats):
            obs = state.observation(seat)
            message = wire.observation_to_proto(obs)
            assert reference_observation(obs) == message
            assert obs == wire.observation_from_proto(roundtrip_bytes(pb.Observation, message))


@settings(max_examples=15, deadline=None)
@given(seed=SEEDS)
def test_decide_request_bytes_are_canonical_and_lossless(seed: int) -> None:
    """The hand-coded DecideRequest is byte for byte what the generated code writes.

    It also reads back to the same observation and legal actions, with the per-match history
    cache at work (the same match id all through the match).
    """
    match_id = f"m{seed}"
    for state in states(seed):
        obs, legal = state.observation(state.to_act), state.legal_actions()
        data = wire.decide_request_bytes(match_id, obs, legal, 900, 30_000)
        reference = pb.DecideRequest(
            match_id=match_id,
            observation=reference_observation(obs),
            legal=[reference_action(a) for a in legal],
            time_left_ms=900,
            time_bank_ms=30_000,
        )
        assert reference.SerializeToString() == data
        call = wire.decide_call_from_bytes(data)
        assert (match_id, obs, legal, 900, 30_000) == (
            call.match_id,
            call.observation,
            call.legal,
            call.time_left_ms,
            call.time_bank_ms,
        )


@settings(max_examples=10, deadline=None)
@given(seed=SEEDS)
@example(seed=179)  # a 49/50 deal in the only hand: the match ends before any decision
def test_results_round_trip_is_lossless(seed: int) -> None:
    """Every HandResult and the MatchResult of a random match survive a trip through bytes."""
    state = finished(seed)
    for result in state.results:
        hand = pb.HandResult.FromString(wire.hand_result_to_proto(result).SerializeToString())
        assert result == wire.hand_result_from_proto(hand)
    assert state.result is not None
    match = pb.MatchResult.FromString(wire.match_result_to_proto(state.result).SerializeToString())
    assert state.result == wire.match_result_from_proto(match)


def test_every_action_round_trips() -> None:
    """Every action the engine offers in many random states, and odd-but-valid ones, survive."""
    actions = {DROP, DRAW_STOCK, DRAW_DISCARD, Action.lay_off(DECK[0], 0)}
    actions |= {Action(ActionKind.MELD, (DECK[4], DECK[2], DECK[3]))}  # unsorted meld
    for seed in range(8):
        for state in states(seed):
            actions.update(state.legal_actions())
    for action in actions:
        message = pb.Action.FromString(wire.action_to_proto(action).SerializeToString())
        assert reference_action(action) == message
        assert action == wire.action_from_proto(message)


def test_match_setup_round_trips() -> None:
    """MatchConfig (no hand cap ↔ 0) and MatchInfo ↔ StartMatchRequest are lossless."""
    for config in (MatchConfig(), MatchConfig(seats=5, stake=3, bankroll=7, hand_cap=None)):
        message = wire.match_config_to_proto(config)
        assert (config.hand_cap or 0) == message.hand_cap
        assert config == wire.match_config_from_proto(message)
    info = MatchInfo("m-1", 2, ("a", "b", "c"), MatchConfig(seats=3, hand_cap=None), 900, 5000)
    request = pb.StartMatchRequest.FromString(wire.match_info_to_proto(info).SerializeToString())
    assert info == wire.match_info_from_proto(request)


def test_decoder_accepts_other_valid_encodings() -> None:
    """Other valid encodings of an observation decode the same.

    Fields out of order, unpacked repeated numbers, split sub-messages and unknown fields: what
    another protobuf library or a newer minor version of the protocol may send.
    """
    state = next(
        s for s in states(3) if s.phase is Phase.PLAY and len(s.observation(0).history) > 4
    )
    obs = state.observation(state.to_act)
    message = reference_observation(obs)
    message.ClearField("hand")
    message.ClearField("pots")
    data = message.SerializeToString()
    unpacked_hand = b"".join(b"\x60" + bytes([c.index]) for c in obs.hand)  # field 12, varint
    pots = pb.Pots(game=obs.pots.game, flip=obs.pots.flip, flop=obs.pots.flop)
    split_pots = b"".join(  # field 9 twice: protobuf merges the parts
        b"\x4a" + bytes([len(part)]) + part
        for part in (
            pb.Pots(game=pots.game).SerializeToString(),
            pb.Pots(flip=pots.flip, flop=pots.flop).SerializeToString(),
        )
    )
    unknown = b"\xa8\x06\x07" + b"\xb2\x06\x03abc"  # fields 101 (varint) and 102 (bytes)
    assert obs == wire.observation_from_proto(
        pb.Observation.FromString(unknown + unpacked_hand + data + split_pots)
    )
    assert obs == wire._observation_from_bytes(unknown + unpacked_hand + data + split_pots)


# ---------------------------------------------------------------------------------- strict


def action_bytes(kind: int, cards: list[int], target: int = 0) -> pb.Action:
    """A raw Action message (no checks; ``kind`` may be any number)."""
    return pb.Action(kind=pb.ActionKind.ValueType(kind), cards=cards, target=target)


@pytest.mark.parametrize(
    ("message", "reason"),
    [
        (action_bytes(pb.ACTION_KIND_DISCARD, [52]), "card number 52 is not 0..51"),
        (action_bytes(pb.ACTION_KIND_MELD, [1, 2, 99]), "card number 99 is not 0..51"),
        (action_bytes(pb.ACTION_KIND_UNSPECIFIED, []), "action kind is UNSPECIFIED"),
        (action_bytes(17, []), "action kind has the unknown value 17"),
        (action_bytes(pb.ACTION_KIND_DISCARD, [1, 2]), "DISCARD takes exactly one card, got 2"),
        (action_bytes(pb.ACTION_KIND_DISCARD, []), "DISCARD takes exactly one card, got 0"),
        (action_bytes(pb.ACTION_KIND_DRAW_STOCK, [5]), "DRAW_STOCK takes no cards, got 1"),
        (action_bytes(pb.ACTION_KIND_MELD, [1, 2]), "a meld needs at least 3 cards, got 2"),
        (action_bytes(pb.ACTION_KIND_MELD, [1, 2, 2]), "a meld names a card twice"),
        (action_bytes(pb.ACTION_KIND_LAY_OFF, [1], -2), "lay-off target -2 is negative"),
    ],
)
def test_malformed_actions_are_refused_with_a_reason(message: pb.Action, reason: str) -> None:
    """An action that is not one (bad card, UNSPECIFIED kind, wrong card count) is refused."""
    with pytest.raises(MalformedActionError, match=reason):
        wire.action_from_proto(message)


def test_malformed_answer_names_the_action() -> None:
    """In a bot's answer, a malformed action is a protocol error naming its position."""
    answer = pb.DecideResponse(
        actions=[
            reference_action(Action.discard(DECK[3])),
            action_bytes(pb.ACTION_KIND_DISCARD, [52]),
        ]
    )
    with pytest.raises(
        BotProtocolError, match=r"actions\[1\]: action.cards: card number 52 is not 0\.\.51"
    ):
        wire.decision_from_bytes(answer.SerializeToString())


def good_observation() -> Observation:
    """A mid-hand observation with a history, shows and a discard pile."""
    return next(s.observation(s.to_act) for s in states(5) if len(s.observation(0).history) >= 6)


@pytest.mark.parametrize(
    ("spoil", "reason"),
    [
        (lambda m: setattr(m, "phase", pb.PHASE_UNSPECIFIED), "observation.phase is UNSPECIFIED"),
        (lambda m: m.hand.append(60), "observation.hand: card number 60 is not 0..51"),
        (lambda m: setattr(m, "flip_card", 52), "observation.flip_card: card number 52"),
        (lambda m: setattr(m, "dealer", 7), "observation.dealer: seat 7 does not exist"),
        (lambda m: m.seats[0].known.append(77), r"observation.seats\[0\].known: card number 77"),
        (lambda m: m.history[1].action.cards.append(1), r"observation.history\[1\].action: "),
        (
            lambda m: m.history.add(seat=9, action=pb.Action(kind=pb.ACTION_KIND_DRAW_STOCK)),
            "seat 9 does not exist",
        ),
        (lambda m: m.shows.add(seat=0, card=1, pot=pb.POT_UNSPECIFIED), "pot is UNSPECIFIED"),
        (
            lambda m: m.spreads.add(owner=0, kind=pb.SPREAD_KIND_UNSPECIFIED, cards=[1, 2, 3]),
            "kind is UNSPECIFIED",
        ),
        (lambda m: m.ClearField("seats"), "observation: 0 seats, expected 3 to 5"),
    ],
)
def test_malformed_observations_are_refused_with_a_reason(spoil: object, reason: str) -> None:
    """An observation with a bad card, seat or enum is a protocol error saying which field."""
    message = reference_observation(good_observation())
    assert callable(spoil)
    spoil(message)
    with pytest.raises(BotProtocolError, match=reason):
        wire.observation_from_proto(message)


def test_truncated_and_garbage_bytes_are_refused() -> None:
    """Bytes that are not a DecideRequest at all are a protocol error, never a crash."""
    data = wire.decide_request_bytes("m", good_observation(), [DRAW_STOCK], 1, 1)
    for garbage in (data[:-3], data[:40], b"\xff" * 12, b"\x0b\x00", b"\x00\x01"):
        with pytest.raises(BotProtocolError):
            wire.decide_call_from_bytes(garbage)


def test_bad_match_setup_is_refused() -> None:
    """A StartMatch whose config the engine cannot play, or whose seat is off the table."""
    info = pb.StartMatchRequest(
        match_id="m",
        seat=1,
        players=["a", "b"],
        config=pb.MatchConfig(seats=2, stake=1, bankroll=5, turn_cap=9),
    )
    with pytest.raises(BotProtocolError, match="config: seats must be 3 to 5"):
        wire.match_info_from_proto(info)
    info = wire.match_info_to_proto(MatchInfo("m", 0, ("a", "b", "c"), MatchConfig(seats=3), 1, 1))
    info.seat = 3
    with pytest.raises(BotProtocolError, match="seat 3 does not exist"):
        wire.match_info_from_proto(info)


# ---------------------------------------------------------------------------------- notes


@pytest.mark.parametrize(
    ("note", "kept"),
    [
        ("short", "short"),
        ("a" * 1024, "a" * 1024),
        ("a" * 1030, "a" * 1024),
        ("a" * 1023 + "é", "a" * 1023),  # é is 2 bytes: it would end at byte 1025
        ("€" * 400, "€" * 341),  # 3 bytes each: 341 fit in 1023 bytes
    ],
)
def test_notes_are_cut_to_1024_bytes_on_a_character_boundary(note: str, kept: str) -> None:
    """A bot's note is cut on both sides, never in the middle of a character."""
    sent = wire.decide_response_bytes([DRAW_STOCK], note)
    assert kept == wire.decision_from_bytes(sent).note
    raw = pb.DecideResponse(actions=[reference_action(DRAW_STOCK)], note=note).SerializeToString()
    decision = wire.decision_from_bytes(raw)
    assert (kept, len(note.encode())) == (decision.note, decision.note_bytes)


# ---------------------------------------------------------------------------------- secrecy


def cards_in(request: pb.DecideRequest) -> set[int]:
    """Every card number anywhere in a DecideRequest, read with the generated code."""
    o = request.observation
    found = {o.flip_card, *o.hand, *o.discard_pile}
    if o.HasField("drawn_from_discard"):
        found.add(o.drawn_from_discard)
    for view in o.seats:
        found.update(view.known)
    found.update(s.card for s in o.shows)
    for spread in o.spreads:
        found.update(spread.cards)
    for event in o.history:
        found.update(event.action.cards)
        if event.HasField("card"):
            found.add(event.card)
    for action in request.legal:
        found.update(action.cards)
    return found


@settings(max_examples=15, deadline=None)
@given(seed=SEEDS)
def test_decide_request_leaks_no_hidden_card(seed: int) -> None:
    """The bytes sent to seat s hold no other seat's hidden card and no stock card.

    Every card field is read back with the generated code; a card of another seat's hand may
    appear only if that seat's card is public (shown, or taken from the discard pile).
    """
    for state in states(seed):
        seat = state.to_act
        data = wire.decide_request_bytes("m", state.observation(seat), state.legal_actions(), 1, 1)
        stock = set(state.stock)
        for card in cards_in(pb.DecideRequest.FromString(data)):
            assert card not in stock, f"stock card {Card.of(card)} sent to seat {seat}"
            for other in range(state.config.seats):
                if other != seat and state.hands[other] >> card & 1:
                    assert state.known[other] >> card & 1, (
                        f"seat {other}'s hidden {Card.of(card)} sent to seat {seat}"
                    )


def test_history_event_card_only_on_discard_draws() -> None:
    """A stock draw travels without its card; a discard draw with it (public)."""
    event = wire.event_to_proto(Event(1, DRAW_STOCK))
    assert not event.HasField("card")
    event = wire.event_to_proto(Event(1, DRAW_DISCARD, DECK[0]))
    assert event.HasField("card") and 0 == event.card


# ---------------------------------------------------------------------------------- bounds


def identity_message(**fields: object) -> pb.HandshakeResponse:
    """A HandshakeResponse of a well-behaved bot, with ``fields`` changed."""
    values: dict[str, object] = {
        "protocol_version": wire.PROTOCOL_VERSION,
        "name": "bot",
        "version": "1.0.0",
        "runtime": "python 3.11",
        "features": ["concurrent-matches"],
        **fields,
    }
    return pb.HandshakeResponse(**values)  # type: ignore[arg-type]


def test_handshake_strings_at_their_limits_are_accepted() -> None:
    """Names in any script, spaces and symbols, each string at its longest: all accepted."""
    message = identity_message(
        name="Zoë ♠ " + "é" * 58,
        version="v" * 64,
        runtime="r" * 128,
        features=["f" * 64] * 16,
        protocol_version="12.345",
    )
    identity = wire.identity_from_proto(message)
    assert (64, 64, 128, 16) == (
        len(identity.name),
        len(identity.version),
        len(identity.runtime),
        len(identity.features),
    )


@pytest.mark.parametrize(
    ("fields", "reason"),
    [
        ({"name": ""}, "the bot sent no name"),
        ({"protocol_version": ""}, "the bot sent no protocol version"),
        ({"protocol_version": "1"}, "protocol_version '1' is not MAJOR.MINOR"),
        ({"protocol_version": "1.x"}, "protocol_version '1.x' is not MAJOR.MINOR"),
        ({"protocol_version": "1.1\n"}, "protocol_version '1.1\\\\n' is not MAJOR.MINOR"),
        ({"name": "a\x1bb"}, "name 'a\\\\x1bb' holds the control character U\\+001B at index 1"),
        ({"name": "a\u2028b"}, "name .* holds the control character U\\+2028"),
        ({"version": "\u202e1.0"}, "version .* holds the control character U\\+202E at index 0"),
        ({"runtime": "a\tb"}, "runtime .* holds the control character U\\+0009"),
        ({"features": ["x\ufeff"]}, "features\\[0\\] .* holds the control character U\\+FEFF"),
        ({"name": "n" * 65}, "name .* is over the limit of 64 characters"),
        ({"features": ["f"] * 17}, "handshake: 17 features, over the limit of 16"),
    ],
)
def test_bad_handshake_strings_are_refused(fields: dict[str, object], reason: str) -> None:
    """Issue 9: a control or format character, or a string too long, names its field."""
    with pytest.raises(BotProtocolError, match=reason):
        wire.identity_from_proto(identity_message(**fields))


def test_a_huge_handshake_string_is_not_echoed() -> None:
    """The error shows at most 40 characters of a bad value (with its length), escaped."""
    with pytest.raises(BotProtocolError) as caught:
        wire.identity_from_proto(identity_message(version="\x1b[31m" + "v" * 100_000))
    assert len(str(caught.value)) < 200
    assert "\x1b" not in str(caught.value)
    assert "(100005 characters)" in str(caught.value)


def test_answers_over_their_cap_are_refused_before_decoding() -> None:
    """``parse_answer`` checks the call's cap first, then that the bytes decode."""
    base = pb.HandshakeResponse(name="x" * 8100).SerializeToString()
    rest = 8192 - len(base) - 3  # an unknown field 99: a 2-byte tag, a 1-byte length
    at_cap = base + b"\x9a\x06" + bytes([rest]) + b"p" * rest
    assert 8192 == len(at_cap)
    assert "x" * 8100 == wire.parse_answer(pb.HandshakeResponse, at_cap, "Handshake").name
    with pytest.raises(BotProtocolError, match="an answer of 8193 bytes is over the 8192-byte"):
        wire.parse_answer(pb.HandshakeResponse, at_cap + b"\x00", "Handshake")
    with pytest.raises(BotProtocolError, match="StartMatch: the answer does not decode"):
        wire.parse_answer(pb.StartMatchResponse, b"\xff\xff", "StartMatch")


def test_a_padded_action_decodes_but_is_never_cached() -> None:
    """Issue 9: actions padded with unknown fields decode as usual and are not kept.

    Their bytes are over ``CACHE_KEY_BYTES``: each costs a decoding, never memory.
    """
    plain = pb.Action(kind=pb.ACTION_KIND_DISCARD, cards=[7]).SerializeToString()
    wire._action_from_bytes(plain)
    assert plain in wire._ACTION_CACHE
    before = dict(wire._ACTION_CACHE)
    for i in range(500):
        pad = f"{i:05d}".encode() * 20  # 100 bytes, different every time
        padded = plain + b"\x9a\x06" + bytes([len(pad)]) + pad  # unknown field 99
        assert Action.discard(DECK[7]) is wire._action_from_bytes(padded)
    assert before == wire._ACTION_CACHE


def test_history_runs_are_bounded_in_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    """The per-match history runs never hold more bytes than their budget; EndMatch drops one."""
    monkeypatch.setattr(wire, "_HISTORY_RUNS_BYTES", 10_000)
    runs = wire._HistoryRuns()
    for i in range(100):
        runs.remember(f"match-{i}", (b"h" * 1000, (), 0))
        assert runs.held <= 10_000
    runs.remember("huge", (b"h" * 20_000, (), 0))  # over the whole budget: not kept
    assert runs.get("huge") is None
    runs.remember("kept", (b"h" * 100, (), 0))
    runs.forget("kept")
    assert (None, 0 < runs.held <= 10_000) == (runs.get("kept"), True)


def test_forget_match_drops_both_sides_history() -> None:
    """After ``forget_match`` nothing of the match's history is remembered, either side."""
    state = next(s for s in states(5) if len(s.observation(0).history) > 3)
    data = wire.decide_request_bytes("forget-me", state.observation(0), [DRAW_STOCK], 1, 1)
    wire.decide_call_from_bytes(data)
    assert wire._SENT_HISTORY.get("forget-me") is not None
    assert wire._RECEIVED_HISTORY.get("forget-me") is not None
    wire.forget_match("forget-me")
    assert (None, None) == (
        wire._SENT_HISTORY.get("forget-me"),
        wire._RECEIVED_HISTORY.get("forget-me"),
    )
