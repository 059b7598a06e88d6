"""The conformance check (``check_bot``) against real bots on a real unix socket."""

from __future__ import annotations

from collections.abc import Sequence
from concurrent import futures

import grpc

from flipflop import (
    DRAW_STOCK,
    Action,
    Bot,
    BotServer,
    ConformanceReport,
    Observation,
    ProblemKind,
    check_bot,
    format_report,
)
from flipflop._conformance import MAX_LISTED
from flipflop._proto.flipflop.v1 import bot_pb2 as pb
from flipflop._proto.grpc.health.v1 import health_pb2_grpc as health_grpc
from flipflop._server import _add_bot_service, _BotServicer, _HealthServicer


def check(bot: Bot, endpoint: str, matches: int = 8) -> ConformanceReport:
    """Serve ``bot`` and run the conformance check on it."""
    with BotServer(bot, endpoint):
        return check_bot(endpoint, matches=matches, seed=1, decision_timeout=2.0)


class Sloppy(Bot):
    """A bot that breaks the rules in the ways a beginner's bot does."""

    name = "sloppy"

    def start_turn(self, obs: Observation, legal: Sequence[Action]) -> Action:
        """Discard instead of drawing, every third turn."""
        if obs.turn % 3 == 1:
            return Action.discard(obs.hand[0])
        return DRAW_STOCK

    def play_turn(self, obs: Observation, legal: Sequence[Action]) -> Sequence[Action]:
        """Discard a card it does not hold, forget to discard, or draw again."""
        pick = obs.turn % 3
        if pick == 0:
            return [Action.discard(obs.unseen()[0])]
        if pick == 1:
            return []
        return [DRAW_STOCK]


class Garbled(_BotServicer):
    """A bot whose answers break the protocol itself: possible from any language.

    It answers two actions to start a turn, a card numbered 60 every fourth play, and a
    2000-byte note always (the SDK's own server would cut it; this one does not).
    """

    def __init__(self, bot: Bot) -> None:
        super().__init__(bot)
        self.plays = 0

    def Decide(self, request: bytes, context: grpc.ServicerContext) -> bytes:
        """Answer as the default bot would, then spoil the answer."""
        answer = pb.DecideResponse.FromString(super().Decide(request, context))
        start = pb.DecideRequest.FromString(request).observation.phase == pb.PHASE_START
        if start:
            answer.actions.append(answer.actions[0])
        else:
            self.plays += 1
            if self.plays % 4 == 0:
                answer.actions[0].cards[:] = [60]
        answer.note = "n" * 2000
        return answer.SerializeToString()


def test_the_default_bot_passes(endpoint: str) -> None:
    """The SDK's own bot has no problem: every answer well-formed, legal and on time."""
    report = check(Bot(), endpoint, matches=20)
    assert ((), ()) == (report.problems, report.counts), format_report(report)
    assert report.ok
    assert 20 == report.matches
    assert report.decisions > 50
    assert report.identity is not None and "bot" == report.identity.name
    assert "OK: no problems found" in format_report(report)


def test_a_sloppy_bot_is_reported_with_every_kind_of_mistake(endpoint: str) -> None:
    """Illegal discards, wrong-phase answers and plans without a discard are all found."""
    report = check(Sloppy(), endpoint)
    assert not report.ok
    assert {ProblemKind.ILLEGAL, ProblemKind.WRONG_PHASE, ProblemKind.NO_DISCARD} == report.kinds
    details = {p.what: p.detail for p in report.problems}
    assert "is not in seat" in details[ProblemKind.ILLEGAL]
    assert (
        "in PHASE_START" in details[ProblemKind.WRONG_PHASE]
        or "in PHASE_PLAY" in (details[ProblemKind.WRONG_PHASE])
    )
    assert "ended with the turn open" in details[ProblemKind.NO_DISCARD]
    text = format_report(report)
    assert "FAILED" in text and "illegal" in text and "match " in text


def test_a_garbled_bot_is_reported(endpoint: str) -> None:
    """Two actions to start a turn, a card numbered 60 and over-long notes are all found."""
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    _add_bot_service(Garbled(Bot()), server)
    health_grpc.add_HealthServicer_to_server(_HealthServicer(), server)
    server.add_insecure_port(endpoint)
    server.start()
    try:
        report = check_bot(endpoint, matches=6, seed=2)
    finally:
        server.stop(None).wait()
    expected = {ProblemKind.START_COUNT, ProblemKind.MALFORMED, ProblemKind.NOTE_TOO_LONG}
    assert expected == report.kinds, format_report(report)
    details = {p.what: p.detail for p in report.problems}
    assert "card number 60 is not 0..51" in details[ProblemKind.MALFORMED]
    assert "a note of 2000 bytes" in details[ProblemKind.NOTE_TOO_LONG]


def test_repeated_problems_are_counted_not_all_listed(endpoint: str) -> None:
    """At most MAX_LISTED problems of a kind are listed; the counts say how many there were."""
    report = check(Sloppy(), endpoint)
    counts = dict(report.counts)
    for kind, n in counts.items():
        listed = [p for p in report.problems if p.what is kind]
        assert min(n, MAX_LISTED) == len(listed)
    assert max(counts.values()) > MAX_LISTED
    assert "more" in format_report(report)


def test_the_same_seed_gives_the_same_report(endpoint: str) -> None:
    """A failing check can be repeated: same seed, same problems."""
    first = check(Sloppy(), endpoint, matches=3)
    second = check(Sloppy(), endpoint, matches=3)
    assert first.problems == second.problems


def test_a_bot_that_never_starts_is_reported(endpoint: str) -> None:
    """Nobody listening: the check says the bot was not ready, quickly."""
    report = check_bot(endpoint, matches=2, start_timeout=0.3)
    assert {ProblemKind.NOT_READY} == report.kinds
    assert 0 == report.decisions


def test_the_seat_token_is_checked_when_given(endpoint: str) -> None:
    """Given the token the bot was started with, the check passes only if the bot presents it."""
    with BotServer(Bot(), endpoint, seat_token="the-token"):
        right = check_bot(endpoint, matches=2, seed=1, seat_token="the-token")
        wrong = check_bot(endpoint, matches=2, seed=1, seat_token="another-token")
        unchecked = check_bot(endpoint, matches=2, seed=1)
    assert (True, True) == (right.ok, unchecked.ok), format_report(right)
    assert {ProblemKind.HANDSHAKE} == wrong.kinds
    assert "presented a wrong seat token" in wrong.problems[0].detail
    assert "another-token" not in format_report(wrong)
    assert (0, None) == (wrong.decisions, wrong.identity)


def test_a_bot_without_a_seat_token_is_reported(endpoint: str) -> None:
    """A bot that presents no token, when one is expected, fails its handshake."""
    with BotServer(Bot(), endpoint, seat_token=""):
        report = check_bot(endpoint, matches=2, seed=1, seat_token="expected")
    assert {ProblemKind.HANDSHAKE} == report.kinds
    assert "presented no seat token" in report.problems[0].detail
