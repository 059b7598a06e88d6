"""The conformance check: drive a running bot through the real gRPC protocol and judge it.

``check_bot(endpoint)`` is what ``arena check`` runs, and what a bot author can run against
their own bot::

    report = check_bot("unix:/tmp/mybot.sock", matches=20)
    print(format_report(report))

It waits for the bot's health check, shakes hands, then plays many random matches (3 to 5
seats, random stakes, bankrolls and caps) in which the checked bot holds one seat and the other
seats play uniformly random legal actions in-process through the engine. Two of the matches are
interleaved, decision by decision, under two match ids (when the bot announces
``concurrent-matches``), to show that its state is kept per match. A bot that announces
``decide-stream`` (protocol 1.2) gets its decisions as the arena asks them, on one
``DecideStream`` per match (two at once for the interleaved pair), and must serve it: an
UNIMPLEMENTED answer is an ``error`` (the arena would fall back to ``Decide``, and so does the
check, which goes on). Every answer is checked:
it decodes and fits its size cap, a PHASE_START answer is exactly one drop or draw, every step
of a PHASE_PLAY plan is legal when applied and the plan ends the turn, the answer comes within
the deadline, and the debug note fits in 1024 bytes. The check goes on past problems (the
runner's default play stands in for a bad answer, as in the arena) and reports them all, at
most :data:`MAX_LISTED` of each kind.

The handshake's strings are checked as the arena checks them. Whoever started the bot with a
seat token in ``FLIPFLOP_SEAT_TOKEN`` (as ``arena check`` does, through its sandbox) passes it
as ``seat_token`` and the handshake must present it; for an endpoint the caller did not start,
there is no token to check (``seat_token=None``).
"""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

from flipflop._actions import Action, Phase
from flipflop._bot import MatchInfo
from flipflop._client import BotClient
from flipflop._errors import ActionError, BotCrashed, BotError, BotProtocolError, BotTimeout
from flipflop._harness import apply_turn, play_default, play_phase_of
from flipflop._match import MatchConfig, MatchState
from flipflop._wire import DECIDE_STREAM, NOTE_LIMIT, BotIdentity

__all__ = [
    "MAX_LISTED",
    "ConformanceReport",
    "Problem",
    "ProblemKind",
    "check_bot",
    "format_report",
]

MAX_LISTED = 5
"""Problems of one kind listed in a report; the rest are only counted."""


class ProblemKind(Enum):
    """What a bot did wrong."""

    NOT_READY = "not ready"
    """The health check did not answer SERVING in time after start."""
    HANDSHAKE = "handshake"
    """The handshake failed: another major protocol version, a missing or wrong seat token, a
    string too long or with a control character, an answer over its cap, an error, no answer."""
    HEALTH = "health"
    """The health check did not answer SERVING for ``""`` or ``flipflop.v1.Bot``."""
    TIMEOUT = "timeout"
    """No answer before the deadline."""
    CRASH = "crash"
    """The connection was lost (the check stops there)."""
    ERROR = "error"
    """A call answered with an error status: the bot raised, or refused a valid call."""
    MALFORMED = "malformed"
    """An answer that does not decode: a card number above 51, an UNSPECIFIED kind, …"""
    START_COUNT = "start count"
    """A PHASE_START answer that is not exactly one action."""
    WRONG_PHASE = "wrong phase"
    """A step of the other half of the turn: a meld or discard to start, a draw to play."""
    ILLEGAL = "illegal"
    """A well-formed action the rules refused."""
    NO_DISCARD = "no discard"
    """A PHASE_PLAY plan that ended with the turn still open (no discard, cards left)."""
    EXTRA_STEPS = "extra steps"
    """Steps after the one that ended the turn."""
    NOTE_TOO_LONG = "note too long"
    """A debug note over 1024 bytes of UTF-8."""


@dataclass(frozen=True, slots=True)
class Problem:
    """One problem found.

    Attributes:
        where: when it happened: ``handshake``, ``health``, or ``match 3, hand 2, decision 7``.
        what: its kind.
        detail: what exactly, in a sentence.
    """

    where: str
    what: ProblemKind
    detail: str

    def __str__(self) -> str:
        return f"{self.where}: {self.what.value}: {self.detail}"


@dataclass(frozen=True, slots=True)
class ConformanceReport:
    """The outcome of :func:`check_bot`.

    Attributes:
        ok: True if no problem was found.
        problems: the problems, in order, at most :data:`MAX_LISTED` of each kind.
        counts: how many problems of each kind were found (listed or not), most first.
        identity: what the bot said in the handshake, if it got that far.
        decide_stream: the decisions went on DecideStream (the bot announced
            ``decide-stream`` and served it), not one Decide call each.
        matches: matches played to the end.
        decisions: decisions asked for and checked.
        seconds: how long the check took.
    """

    ok: bool
    problems: tuple[Problem, ...]
    counts: tuple[tuple[ProblemKind, int], ...]
    identity: BotIdentity | None
    decide_stream: bool
    matches: int
    decisions: int
    seconds: float

    @property
    def kinds(self) -> frozenset[ProblemKind]:
        """The kinds of problem found."""
        return frozenset(kind for kind, _ in self.counts)


class _Stop(Exception):
    """The bot is gone: no point going on."""


class _Findings:
    """Problems as they are found, listed up to :data:`MAX_LISTED` per kind."""

    def __init__(self) -> None:
        self.problems: list[Problem] = []
        self.counts: Counter[ProblemKind] = Counter()
        self.decisions = 0
        self.matches = 0

    def add(self, what: ProblemKind, where: str, detail: str) -> None:
        self.counts[what] += 1
        if self.counts[what] <= MAX_LISTED:
            self.problems.append(Problem(where, what, detail))

    def call_failed(self, where: str, call: str, error: BotError) -> None:
        """Record a failed call; a crash stops the check."""
        if isinstance(error, BotCrashed):
            self.add(ProblemKind.CRASH, where, f"{call}: {error.reason}")
            raise _Stop from error
        if isinstance(error, BotTimeout):
            self.add(ProblemKind.TIMEOUT, where, f"{call}: {error.reason}")
        elif isinstance(error.__cause__, BotProtocolError):  # raised while decoding the answer
            self.add(ProblemKind.MALFORMED, where, f"{call}: {error.reason}")
        else:
            self.add(ProblemKind.ERROR, where, f"{call}: {error.reason}")


def _notify_timeout(decision_timeout: float) -> float:
    """The deadline of every call but Decide: the decision's, but at least 2 s."""
    return max(decision_timeout, 2.0)


def _random_config(rng: random.Random) -> MatchConfig:
    """A small random match: 3 to 5 seats, a few stakes each, a few hands at most."""
    stake = rng.randint(1, 10)
    return MatchConfig(
        seats=rng.randint(3, 5),
        stake=stake,
        bankroll=stake * rng.randint(3, 12),
        hand_cap=rng.randint(2, 8),
        turn_cap=rng.randint(10, 60),
    )


class _Match:
    """One match: the checked bot in one seat, random players in the others."""

    def __init__(
        self,
        client: BotClient,
        findings: _Findings,
        number: int,
        rng: random.Random,
        timeout: float,
    ) -> None:
        self.client = client
        self.findings = findings
        self.number = number
        self.rng = rng
        self.timeout = timeout
        self.notify_timeout = _notify_timeout(timeout)
        self.config = _random_config(rng)
        seed = rng.getrandbits(32)
        self.state = MatchState(self.config, seed)
        self.seat = rng.randrange(self.config.seats)
        self.match_id = f"conformance-{number}-{seed:08x}"
        self.decision = 0
        self.reported = 0
        self.live = True  # False once the bot refused the match: play on without it

    def where(self) -> str:
        return f"match {self.number}, hand {self.state.hand_number}, decision {self.decision}"

    def start(self) -> None:
        players = tuple(
            "checked" if s == self.seat else f"random-{s}" for s in range(self.config.seats)
        )
        decision_ms = round(self.timeout * 1000)
        info = MatchInfo(self.match_id, self.seat, players, self.config, decision_ms, 0)
        try:
            self.client.start_match(info, timeout=self.notify_timeout)
        except BotError as e:
            self.findings.call_failed(f"match {self.number}, start", "StartMatch", e)
            self.live = False

    def step(self) -> bool:
        """Play up to and including the checked bot's next decision; False once it is over."""
        state = self.state
        while not state.is_over and (state.to_act != self.seat or not self.live):
            self._random_action()
            self._report_hands()
        if not state.is_over:
            self._decide()
            self._report_hands()
        if self.state.is_over:
            self._finish()
            return False
        return True

    def _random_action(self) -> None:
        legal = self.state.legal_actions()
        self.state.apply(legal[int(self.rng.random() * len(legal))])

    def _report_hands(self) -> None:
        results = self.state.results
        while self.reported < len(results):
            result = results[self.reported]
            self.reported += 1
            if not self.live:
                continue
            try:
                self.client.hand_ended(self.match_id, result, timeout=self.notify_timeout)
            except BotError as e:
                where = f"match {self.number}, end of hand {result.hand_number}"
                self.findings.call_failed(where, "HandEnded", e)

    def _finish(self) -> None:
        self.findings.matches += 1
        result = self.state.result
        if not self.live or result is None:
            return
        try:
            self.client.end_match(self.match_id, result, timeout=self.notify_timeout)
        except BotError as e:
            self.findings.call_failed(f"match {self.number}, end", "EndMatch", e)

    def _decide(self) -> None:
        state, findings = self.state, self.findings
        self.decision += 1
        findings.decisions += 1
        obs = state.observation(self.seat)
        legal = state.legal_actions()
        budget_ms = round(self.timeout * 1000)
        start = time.monotonic()
        try:
            decision = self.client.decide(
                self.match_id,
                obs,
                legal,
                time_left_ms=budget_ms,
                time_bank_ms=0,
                timeout=self.timeout,
            )
        except BotError as e:
            findings.call_failed(self.where(), "Decide", e)
            play_default(self.state)
            return
        elapsed = time.monotonic() - start
        if elapsed > self.timeout:
            findings.add(
                ProblemKind.TIMEOUT,
                self.where(),
                f"answered after {elapsed * 1000:.0f} ms, over the {budget_ms} ms deadline",
            )
        if decision.note_bytes > NOTE_LIMIT:
            findings.add(
                ProblemKind.NOTE_TOO_LONG,
                self.where(),
                f"a note of {decision.note_bytes} bytes (at most {NOTE_LIMIT})",
            )
        if state.phase is Phase.START:
            self._check_start(decision.actions)
        else:
            self._check_plan(decision.actions)

    def _check_start(self, actions: Sequence[Action]) -> None:
        if len(actions) != 1:
            listed = ", ".join(map(str, actions)) or "nothing"
            self._problem(
                ProblemKind.START_COUNT, f"PHASE_START needs exactly one action, got {listed}"
            )
            play_default(self.state)
            return
        action = actions[0]
        if not action.is_start:
            self._problem(ProblemKind.WRONG_PHASE, f"{action} in PHASE_START (drop or draw)")
            play_default(self.state)
            return
        try:
            self.state.apply(action)
        except ActionError as e:
            self._problem(ProblemKind.ILLEGAL, f"{action}: {e}")
            play_default(self.state)

    def _check_plan(self, plan: Sequence[Action]) -> None:
        """Apply a PHASE_PLAY plan as :func:`apply_turn` does, naming what went wrong."""
        state = self.state
        turn_open = play_phase_of(state)

        for i, step in enumerate(plan, 1):
            if not turn_open():
                self._problem(
                    ProblemKind.EXTRA_STEPS,
                    f"{len(plan) - i + 1} step(s) after the turn ended, from step {i} ({step})",
                )
                break
            if step.is_start:
                self._problem(ProblemKind.WRONG_PHASE, f"step {i}: {step} in PHASE_PLAY")
                break
            try:
                state.apply(step)
            except ActionError as e:
                self._problem(ProblemKind.ILLEGAL, f"step {i} ({step}): {e}")
                break
        else:
            if turn_open():
                listed = ", ".join(map(str, plan)) or "no steps"
                self._problem(
                    ProblemKind.NO_DISCARD,
                    f"the plan ({listed}) ended with the turn open: no discard, cards left",
                )
        if turn_open():
            apply_turn(state, ())  # the runner's defaults finish the turn

    def _problem(self, what: ProblemKind, detail: str) -> None:
        self.findings.add(what, self.where(), detail)


def check_bot(
    endpoint: str,
    *,
    matches: int = 20,
    seed: int = 0,
    decision_timeout: float = 1.0,
    start_timeout: float = 20.0,
    seat_token: str | None = None,
) -> ConformanceReport:
    """Check a running bot through the real gRPC protocol (see the module docstring).

    Args:
        endpoint: where the bot listens: ``unix:/abs/path.sock`` or ``host:port``.
        matches: random matches to play (at least 2 for the interleaved pair).
        seed: the seed of the matches, so that a failing check can be repeated.
        decision_timeout: the deadline for one decision, in seconds.
        start_timeout: how long a freshly started bot may take to answer its health check.
        seat_token: the token the bot was started with (``FLIPFLOP_SEAT_TOKEN``), which its
            handshake must present; None (an endpoint the caller did not start): no check.

    Returns:
        The report; ``report.ok`` is False if anything was wrong.
    """
    started = time.monotonic()
    findings = _Findings()
    identity: BotIdentity | None = None
    rng = random.Random(f"flipflop-conformance:{seed}")
    from flipflop import __version__  # here: flipflop imports this module

    with BotClient(endpoint, arena_version=f"flipflop-conformance {__version__}") as client:
        try:
            identity = _meet(client, findings, decision_timeout, start_timeout, seat_token)
            if identity is not None:
                concurrent = "concurrent-matches" in identity.features
                games = [
                    _Match(client, findings, n, rng, decision_timeout)
                    for n in range(1, matches + 1)
                ]
                paired = games[-2:] if len(games) >= 2 and concurrent else []
                for game in games[: len(games) - len(paired)]:
                    game.start()
                    while game.step():
                        pass
                for game in paired:
                    game.start()
                running = list(paired)
                while running:  # one decision each in turn, two match ids at once
                    running = [game for game in running if game.step()]
                _check_health(client, findings, decision_timeout, "health (after the matches)")
                if DECIDE_STREAM in identity.features and not client.streams_decisions:
                    findings.add(
                        ProblemKind.ERROR,
                        "decide-stream",
                        "the handshake announces decide-stream, but DecideStream answered "
                        "UNIMPLEMENTED: the decisions were asked with Decide",
                    )
        except _Stop:
            pass
        streamed = client.streams_decisions
    counts = tuple(findings.counts.most_common())
    return ConformanceReport(
        ok=not counts,
        problems=tuple(findings.problems),
        counts=counts,
        identity=identity,
        decide_stream=streamed,
        matches=findings.matches,
        decisions=findings.decisions,
        seconds=time.monotonic() - started,
    )


def _meet(
    client: BotClient,
    findings: _Findings,
    timeout: float,
    start_timeout: float,
    seat_token: str | None,
) -> BotIdentity | None:
    """Wait for the bot, shake hands and check its health; None if it cannot be played."""
    try:
        client.wait_ready(start_timeout)
    except BotError as e:
        findings.add(ProblemKind.NOT_READY, "start", e.reason)
        return None
    try:
        identity = client.handshake(timeout=_notify_timeout(timeout), seat_token=seat_token)
    except BotError as e:
        if isinstance(e, BotCrashed):
            findings.call_failed("handshake", "Handshake", e)
        findings.add(ProblemKind.HANDSHAKE, "handshake", e.reason)
        return None
    if not identity.version:
        findings.add(ProblemKind.HANDSHAKE, "handshake", "the bot sent no version")
    _check_health(client, findings, timeout, "health")
    return identity


def _check_health(client: BotClient, findings: _Findings, timeout: float, where: str) -> None:
    for service in ("", "flipflop.v1.Bot"):
        try:
            serving = client.health(timeout=_notify_timeout(timeout), service=service)
        except BotError as e:
            findings.call_failed(where, "Health.Check", e)
            continue
        if not serving:
            findings.add(ProblemKind.HEALTH, where, f"service {service!r} is not SERVING")


def format_report(report: ConformanceReport) -> str:
    """The report as text for people: a verdict, then the problems grouped by kind."""
    lines = []
    ident = report.identity
    if ident is not None:
        lines.append(
            f"bot {ident.name!r} {ident.version} (protocol {ident.protocol_version}; "
            f"{ident.runtime or 'no runtime given'})"
        )
    how = "on DecideStream" if report.decide_stream else "with Decide"
    lines.append(
        f"{report.matches} matches, {report.decisions} decisions ({how}) checked in "
        f"{report.seconds:.1f} s"
    )
    if report.ok:
        lines.append("OK: no problems found")
        return "\n".join(lines)
    total = sum(n for _, n in report.counts)
    lines.append(f"FAILED: {total} problem{'s' if total != 1 else ''}")
    for kind, n in report.counts:
        lines.append(f"  {kind.value} ({n})")
        listed = [p for p in report.problems if p.what is kind]
        for p in listed:
            lines.append(f"    - {p.where}: {p.detail}")
        if n > len(listed):
            lines.append(f"    … and {n - len(listed)} more")
    return "\n".join(lines)
