"""The match runner: drives the engine and talks to each seat's bot over gRPC.

The runner owns time and never lets a bot stall or crash a match (docs/arena.md):

- every decision has a deadline (``decision_ms``); time past it is taken from the seat's
  match time bank (``time_bank_ms``); a decision that outlasts both is a TIMEOUT;
- a late, garbled or illegal answer earns a strike and the runner plays the documented
  default for that decision (draw from the stock; discard the highest card allowed);
- a bot that crashes, fails to start, or reaches ``max_strikes`` forfeits its seat: the
  runner plays the default for it for the rest of the match (it can still place);
- every fault is recorded against the seat and bot, with the hand and the reason.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import errno
import logging
import os
import threading
import time
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path

from arena import __version__ as _ARENA_VERSION
from arena._errors import SandboxError
from arena._text import clean
from arena.match._hosts import BotHost, Seated
from arena.match._luck import luck_places
from arena.sandbox import RunningBot, Sandbox
from arena.sandbox._base import log_tail
from flipflop import (
    Action,
    ActionError,
    BotClient,
    BotCrashed,
    BotError,
    BotManifest,
    BotTimeout,
    HandResult,
    MatchConfig,
    MatchInfo,
    MatchState,
    Phase,
    ReplayError,
    ReplayWriter,
    apply_turn,
    default_action,
    play_default,
)

__all__ = [
    "Answer",
    "Fault",
    "FaultKind",
    "MatchCancelled",
    "MatchRecord",
    "Scripted",
    "SeatReport",
    "TimeControl",
    "run_match",
    "wait_serving",
]

logger = logging.getLogger(__name__)


class MatchCancelled(Exception):
    """The ladder asked a running match to stop (Ctrl-C); it yields no result."""


class FaultKind(Enum):
    """What a bot did wrong."""

    START = "start"
    """It exited while starting, was not serving within its start budget, presented the wrong
    seat token, or did not handshake or accept the match in time."""
    TIMEOUT = "timeout"
    """A decision outlasted its deadline and the seat's time bank."""
    CRASH = "crash"
    """Its process or container went away mid-match."""
    PROTOCOL = "protocol"
    """A malformed answer: not decodable, wrong number of actions, or the bot raised."""
    ILLEGAL = "illegal"
    """A well-formed action the rules refused."""


DESCRIPTORS_PER_SEAT = 24
"""File descriptors a seat may need while its bot starts and plays (its process or container,
its pipes and log, its socket and gRPC channel), with room to spare."""


def check_descriptors(needed: int) -> None:
    """Refuse to start a match the process has too few file descriptors left for.

    gRPC's core aborts the whole process when it cannot make a descriptor for a channel, so a
    match is refused here, as the ``OSError`` (``EMFILE``) a full table would raise, before
    any bot is started: the caller treats it as the host's failure and tries again later.

    Raises:
        OSError: fewer than ``needed`` descriptors are left under ``RLIMIT_NOFILE``.
    """
    import resource

    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return
    try:
        used = len(os.listdir("/proc/self/fd"))
    except FileNotFoundError:  # no /proc (not Linux): nothing to count
        return
    if soft - used < needed:
        raise OSError(
            errno.EMFILE,
            f"{os.strerror(errno.EMFILE)}: {used} of {soft} descriptors in use, a match needs"
            f" {needed} more",
        )


NOTICE_FLOOR_MS = 50
"""The smallest budget a notice gets, once a seat's time bank is spent (ms)."""
WALL_DEADLINES = 60
"""Decision deadlines of grace in the default wall-clock cap per bot and match
(:meth:`TimeControl.seat_wall_ms`), on top of its time bank."""
WALL_SHARE = 0.5
"""The share of a decision deadline the default wall-clock cap grows by per decision: over a
match a bot may wait the arena, on average, half its deadline per decision (after the grace)."""


@dataclass(frozen=True, slots=True)
class TimeControl:
    """Time limits for bots (defaults documented in docs/arena.md).

    Attributes:
        decision_ms: deadline for one decision.
        time_bank_ms: per-match reserve drawn on when a decision runs past its deadline.
        max_strikes: faults after which a seat is forfeited (crashes forfeit at once).
        notify_ms: budget for start-of-match, end-of-hand and end-of-match notices. Their
            time is taken from the seat's time bank too, and a notice's budget is never more
            than what is left of it (at least ``NOTICE_FLOOR_MS``). Like a decision's, it is
            CPU time where the bot's CPU time is known, with the same wall-clock backstop.
        wall_factor: where the bot's CPU time is known, a decision is charged that CPU time
            (``decision_ms`` and the bank are CPU time), and its wall-clock backstop is this
            many times its CPU budget, plus ``wall_margin_ms``: past that it is a TIMEOUT
            whatever CPU it used. Keep it above ``1 / limits.cpus``.
        wall_margin_ms: added to every wall-clock backstop (round trip and wake-up latency).
    """

    decision_ms: int = 1000
    time_bank_ms: int = 30_000
    max_strikes: int = 3
    notify_ms: int = 2000
    wall_factor: float = 3.0
    wall_margin_ms: int = 250
    wall_ms: int | None = None
    """Per-match wall-clock cap per bot: how long the runner may wait on one seat's bot in a
    match, its decisions and end-of-hand notices together. Past it the seat is forfeited (a
    TIMEOUT fault naming the cap) and plays the default. None: the default of
    :meth:`seat_wall_ms`, which grows with the decisions made."""

    def seat_wall_ms(self, decisions: int = 0) -> float:
        """The wall-clock cap per bot and match in force once it has made ``decisions``.

        ``wall_ms`` when set; otherwise ``time_bank_ms + (WALL_DEADLINES + WALL_SHARE *
        decisions) * decision_ms``. A cap that grows with the match keeps long honest matches
        (up to 500 hands) safe, while a bot that answers every decision just in time (or, under
        the CPU-time clock, sleeps: sleeping costs no CPU) is forfeited once its waits pass
        half a deadline per decision on average, beyond its bank and the grace.
        """
        if self.wall_ms is not None:
            return float(self.wall_ms)
        grace = WALL_DEADLINES + WALL_SHARE * decisions
        return self.time_bank_ms + grace * self.decision_ms


@dataclass(frozen=True, slots=True)
class Fault:
    """One thing a bot did wrong, and what the runner did about it."""

    seat: int
    bot: str
    kind: FaultKind
    hand: int
    detail: str
    forfeited: bool


@dataclass(frozen=True, slots=True)
class SeatReport:
    """How one seat's bot behaved in a match.

    ``started``: it passed its start. ``protocol``: the version its handshake said ("" if
    none). ``streamed``: its decisions went on a DecideStream (protocol 1.2), not one Decide
    call each. ``think_ms``: the wall time of its decisions; ``cpu_ms``: the CPU time its
    cgroup used during them, what it was charged (None: not known, it was charged wall time).
    """

    seat: int
    bot: str
    version: str
    started: bool
    decisions: int
    think_ms: float
    strikes: int
    forfeited: bool
    log: str
    dropped_log_bytes: int
    protocol: str = ""
    streamed: bool = False
    cpu_ms: float | None = None


@dataclass(frozen=True, slots=True)
class MatchRecord:
    """What a finished match yields for the standings.

    A match in which a seat never started is ``void``: played to the end (the seat plays the
    default), recorded and shown, but never counted in the standings. The deal seed is not
    recorded: it is secret (docs/security.md); the replay holds every hand's deck.

    ``luck`` is, per seat, the places its deals and stock draws were worth
    (``arena.match._luck.luck_places``, docs/standings.md): ``placements[i] - luck[i]`` is its
    luck-adjusted placement; empty where none can be told (a match that began mid-hand).
    """

    match_id: str
    void: bool
    bots: tuple[str, ...]
    placements: tuple[int, ...]
    bankrolls: tuple[int, ...]
    start_bankroll: int
    hands: int
    by_cap: bool
    decisions: int
    seconds: float
    seats: tuple[SeatReport, ...]
    faults: tuple[Fault, ...]
    replay: str
    luck: tuple[float, ...] = ()


@dataclass(frozen=True, slots=True)
class Scripted:
    """A recorded decision that a match plays as it was recorded (``arena.match._fork``).

    Attributes:
        hand: its hand.
        step: its first action's index in the hand (0: the hand's first action).
        seat: the seat that decided.
        actions: what was played, in order (the runner's defaults after a refused answer too).
        note: the note the bot left on it.
    """

    hand: int
    step: int
    seat: int
    actions: tuple[Action, ...]
    note: str = ""


@dataclass(frozen=True, slots=True)
class Answer:
    """What a seat's bot answered when asked a scripted decision; the recorded one was played.

    Attributes:
        decision: the recorded decision.
        actions: the bot's answer (empty when it gave none).
        note: its note.
        fault: the fault its answer was (late, illegal, garbled, or the bot gone); "" if none.
    """

    decision: Scripted
    actions: tuple[Action, ...]
    note: str
    fault: str

    @property
    def differs(self) -> bool:
        """Whether the bot would have played otherwise than was recorded (or faulted)."""
        return bool(self.fault) or self.actions != self.decision.actions


@dataclass
class _Seat:
    seat: int
    manifest: BotManifest | None
    """None: a seat no bot plays, whose decisions are all scripted (a recorded seat)."""
    name: str
    version: str = ""
    seated: Seated | None = None
    client: BotClient | None = None
    bank_ms: float = 0.0
    strikes: int = 0
    forfeited: bool = False
    decisions: int = 0
    think_ms: float = 0.0
    cpu_ms: float | None = None
    """CPU time of its decisions; None while its CPU time is not known (charged wall time)."""
    last_cpu_ms: float | None = None
    """The last decision's CPU time, for the replay."""
    started: bool = False
    ended: bool = False
    """It heard the match's end (EndMatch answered): its instance may play on."""
    faults: list[Fault] = field(default_factory=list)
    waited_ms: float = 0.0
    """Wall time the runner has waited on it this match (decisions, end-of-hand notices)."""


class _Match:
    def __init__(
        self,
        match_id: str,
        seed: bytes | int | str,
        bots: Sequence[BotManifest | None],
        config: MatchConfig,
        clock: TimeControl,
        sandbox: Sandbox,
        workdir: Path,
        logs_dir: Path,
        cancel: threading.Event | None,
        host: BotHost,
        deal: Hashable,
        announce: MatchConfig | None = None,
        *,
        fresh: bool = False,
        names: Sequence[str] = (),
        state: MatchState | None = None,
        script: Sequence[Scripted] = (),
    ) -> None:
        self.match_id = match_id
        self.host = host
        self.deal = deal
        self.fresh = fresh
        self.logs_dir = logs_dir
        self.cancel = cancel
        self.seed = seed
        self.config = config
        self.announce = announce or config
        self.clock = clock
        self.sandbox = sandbox
        self.workdir = workdir
        self.state = state if state is not None else MatchState(config, seed)
        self.script = list(script)
        self.answers: list[Answer] = []
        self._threads: concurrent.futures.ThreadPoolExecutor | None = None
        seat_names = list(names) or [m.name if m is not None else "" for m in bots]
        self.seats = [
            _Seat(i, m, seat_names[i], "" if m is None else m.version, bank_ms=clock.time_bank_ms)
            for i, m in enumerate(bots)
        ]

    # -------------------------------------------------------------- faults

    def fault(self, s: _Seat, kind: FaultKind, detail: str, forfeit: bool = False) -> str:
        if kind is FaultKind.CRASH and s.seated is not None:
            detail = _how_it_ended(s.seated.bot, detail)
        elif kind is FaultKind.START and s.seated is not None:
            # Stopped by the arena while starting (say, for flooding its output): say why.
            status = s.seated.bot.exit_status()
            if status and status not in detail:
                detail = f"{detail} ({status})"
        s.strikes += 1
        if kind in (FaultKind.CRASH, FaultKind.START) or s.strikes >= self.clock.max_strikes:
            forfeit = True
        if forfeit and not s.forfeited:
            s.forfeited = True
        # A fault's detail may quote the bot (its error text, its output): one clean line.
        detail = clean(detail, 500)
        s.faults.append(Fault(s.seat, s.name, kind, self.state.hand_number, detail, forfeit))
        return f"{kind.value}: {clean(detail, 200)}" + (" (seat forfeited)" if forfeit else "")

    # -------------------------------------------------------------- start and stop

    def _pool(self) -> concurrent.futures.ThreadPoolExecutor:
        """Threads to talk to every seat at once (starts, notices), made once per match."""
        if self._threads is None:
            self._threads = concurrent.futures.ThreadPoolExecutor(
                len(self.seats), thread_name_prefix=f"{self.match_id}-seat"
            )
        return self._threads

    def start(self) -> None:
        check_descriptors(DESCRIPTORS_PER_SEAT * len(self.seats))
        for _ in self._pool().map(self._start_seat, self.seats):
            pass

    def _start_seat(self, s: _Seat) -> None:
        if s.manifest is None:  # a recorded seat: nothing to start
            s.started = True
            return
        label = f"{self.match_id}-s{s.seat}"
        try:
            # Above the arena's cap: refused before anything is started.
            budget = self.sandbox.limits.start_timeout_for(s.manifest)
            seated = self.host.take(s.manifest, self.deal, label, fresh=self.fresh)
            s.seated = seated
            if seated.client is None:  # a new instance: see it serve, then handshake
                client = wait_serving(seated.bot, s.name, budget, self.cancel)
                seated.client = client
                # The seat token proves that the process answering is the one started for
                # this seat; on a wrong or missing token the client refuses every further call.
                # The handshake ends the start: it may take what is left of the start budget
                # (a notice's at least), so that a first answer slowed by a loaded machine is
                # no start fault, and a bot that stalls it gains no more than by serving late.
                left_s = budget - (time.monotonic() - seated.bot.started_at)
                seated.identity = client.handshake(
                    timeout=max(self.clock.notify_ms / 1000, left_s),
                    seat_token=seated.bot.seat_token,
                )
            assert seated.identity is not None
            s.client = seated.client
            s.version = seated.identity.version or s.version
            info = MatchInfo(
                self.match_id,
                s.seat,
                tuple(x.name for x in self.seats),
                self.announce,
                self.clock.decision_ms,
                self.clock.time_bank_ms,
            )
            seated.bot.cpu_ns()  # finds its cgroup now (a container's: an API call), not later
            t0, cpu0 = time.perf_counter(), _cpu_ns(s)
            budget = self._notice_budget_ms(s)
            seated.client.start_match(info, timeout=self._notice_s(s, budget, cpu0))
            self._charge(s, t0, cpu0, budget)
            s.started = True
        except (SandboxError, BotError) as e:
            self.fault(s, FaultKind.START, str(e) or type(e).__name__, forfeit=True)

    def log_path(self, s: _Seat) -> Path:
        return self.logs_dir / f"seat{s.seat}-{s.name}.log"

    def stop(self) -> None:
        """Give every seat's instance back: kept for the next match, or stopped.

        Only an instance that heard the match end is kept: after a cancelled match, an arena
        error or an EndMatch that failed, the bot may still hold the match (its state, an open
        decision stream), so it is stopped.
        """
        if self._threads is not None:
            self._threads.shutdown(wait=True)
        for s in self.seats:
            if s.seated is not None:
                self.host.give_back(s.seated, self.log_path(s), keep=s.ended)

    # -------------------------------------------------------------- play

    def notify(self, reported: int) -> int:
        """Tell every seat about each hand settled since ``reported``; return the new count.

        The seats hear of a hand at the same time (one round trip, not one per seat), and
        every seat has heard of it before anyone's next decision.
        """
        st = self.state
        while reported < len(st.results):
            result = st.results[reported]
            live = [s for s in self.seats if not s.forfeited and s.client is not None]
            if len(live) == 1:
                self._notice(live[0], result)
            elif live:
                for _ in self._pool().map(self._notice, live, [result] * len(live)):
                    pass
            reported += 1
        return reported

    def _notice(self, s: _Seat, result: HandResult) -> None:
        """:meth:`_hand_ended`, its wait counted against the wall-clock cap as a decision's."""
        t0, cpu_ms = time.perf_counter(), None
        try:
            cpu_ms = self._hand_ended(s, result)
        finally:
            s.waited_ms += self._uncredited_ms((time.perf_counter() - t0) * 1000, cpu_ms)

    def _uncredited_ms(self, wall_ms: float, cpu_ms: float | None) -> float:
        """What a decision's or a notice's wall time adds to the seat's wall-clock cap.

        Where its CPU time is known, up to ``wall_factor`` times it is credited: a bot slowed
        by busy neighbours (its wall time a few times its CPU time) is not charged for them,
        while waiting without working (sleeping, answering just in time) is. A bot may buy
        that much waiting with CPU spent, within its CPU budget: the backstop's bound anyway.
        """
        if cpu_ms is None:
            return wall_ms
        return max(0.0, wall_ms - self.clock.wall_factor * cpu_ms)

    def _over_wall_cap(self, s: _Seat) -> str:
        """Forfeit ``s`` if the runner has waited on it past its wall-clock cap; the fault text.

        Every decision answered just in time and every notice within its deadline is allowed,
        yet together they can make a match last for ever: the cap bounds a bot's whole match.
        """
        cap = self.clock.seat_wall_ms(s.decisions)
        if s.forfeited or s.client is None or s.waited_ms < cap:
            return ""
        return self.fault(
            s,
            FaultKind.TIMEOUT,
            f"over its wall-clock cap of {cap / 1000:g} s for the match: the arena waited "
            f"{s.waited_ms / 1000:.1f} s on it",
            forfeit=True,
        )

    def _hand_ended(self, s: _Seat, result: HandResult) -> float | None:
        """Tell ``s`` of a settled hand; return the CPU time it used (ms; None: not known)."""
        assert s.client is not None
        t0, cpu0 = time.perf_counter(), _cpu_ns(s)
        error: tuple[FaultKind, str] | None = None
        budget = self._notice_budget_ms(s)
        try:
            s.client.hand_ended(self.match_id, result, timeout=self._notice_s(s, budget, cpu0))
        except BotError as e:
            error = (_fault_kind(e), f"hand_ended: {e}")
        timed_out = error is not None and error[0] is FaultKind.TIMEOUT
        ms, cpu_ms = self._charge(s, t0, cpu0, budget, timed_out)
        if error is None and s.bank_ms < 0:
            error = (FaultKind.TIMEOUT, f"hand_ended: took {ms:.0f} ms with the time bank spent")
        s.bank_ms = max(0.0, s.bank_ms)  # spent, and struck for it: decisions in time stay fine
        if error is not None:
            self.fault(s, *error)
        return cpu_ms

    def _notice_budget_ms(self, s: _Seat) -> float:
        """A notice's budget in charged time: ``notify_ms``, but no more than the bank left."""
        return max(NOTICE_FLOOR_MS, min(self.clock.notify_ms, s.bank_ms))

    def _notice_s(self, s: _Seat, budget_ms: float, cpu0: int | None) -> float:
        """A notice's gRPC deadline in seconds, for ``s`` and a budget of ``budget_ms``.

        Notices are timed as decisions are: where the bot's CPU time is known (``cpu0`` not
        None) the budget is CPU time, and the deadline the wall-clock backstop
        (:meth:`_backstop_ms`) of the budget or of the bank left, whichever is more, as a
        decision's is the backstop of its deadline plus the bank. A bot held up by a loaded
        host uses no CPU, so it is not struck for a notice that cost it nothing (CI: a Go
        template's HandEnded under gVisor got no answer within 6.25 s, the backstop of the
        2 s budget, with 30 s of bank left); one that sleeps on notices is stopped by the
        per-match wall-clock cap, and one that works on them spends its bank and is struck.
        Without CPU time the deadline is the budget itself, on the wall clock. (A deadline of
        the wall time left in the bank, as notices had, let a busy neighbour make an honest
        bot late for a round trip that cost it nothing: its wall time was charged.)
        """
        if cpu0 is None:
            return budget_ms / 1000
        return self._backstop_ms(max(budget_ms, s.bank_ms)) / 1000

    def _charge(
        self, s: _Seat, t0: float, cpu0: int | None, budget_ms: float, timed_out: bool = False
    ) -> tuple[float, float | None]:
        """Take a notice's time, since ``t0``, from the seat's bank; return it and its CPU, ms.

        The charge is the CPU time it used where that is known, as for a decision, and the
        whole budget for one that went unanswered within its backstop; otherwise its wall
        time. A bot that sleeps on its notices spends no CPU, and the per-match wall-clock cap
        (:meth:`_over_wall_cap`), which counts a notice's wait as a decision's, bounds it.
        """
        ms = (time.perf_counter() - t0) * 1000
        cpu1 = None if cpu0 is None else _cpu_ns(s)
        cpu_ms = None if cpu0 is None or cpu1 is None else (cpu1 - cpu0) / 1e6
        if cpu_ms is not None:
            ms = max(cpu_ms, budget_ms) if timed_out else cpu_ms
        s.bank_ms -= ms
        return ms, cpu_ms

    def _backstop_ms(self, budget_ms: float) -> float:
        """The wall-clock limit of a decision whose CPU budget is ``budget_ms``."""
        return self.clock.wall_factor * budget_ms + self.clock.wall_margin_ms

    def decide(self, s: _Seat) -> tuple[str, float | None, str]:
        """One decision for seat ``s``; returns (note, wall ms, fault text).

        Its CPU time (None: unknown) is left in ``s.last_cpu_ms``.
        """
        st = self.state
        s.last_cpu_ms = None
        if s.forfeited or s.client is None:
            play_default(st)
            return "", None, "forfeited seat: default play"
        actions, note, ms, fault = self._ask(s)
        if fault:
            play_default(st)
            return note, ms, fault
        return note, ms, self._play(st, s, actions)

    def _play(self, st: MatchState, s: _Seat, actions: Sequence[Action]) -> str:
        """Apply ``s``'s answer to ``st``, the default where it is refused; its fault ("")."""
        if st.phase is Phase.START:
            if len(actions) != 1:
                fault = self.fault(
                    s, FaultKind.PROTOCOL, f"{len(actions)} actions at the start of a turn, not 1"
                )
                st.apply(default_action(st))
                return fault
            try:
                st.apply(actions[0])
            except ActionError as e:
                fault = self.fault(s, FaultKind.ILLEGAL, str(e))
                st.apply(default_action(st))
                return fault
            return ""
        _, err = apply_turn(st, actions)
        return "" if err is None else self.fault(s, FaultKind.ILLEGAL, str(err))

    def _ask(self, s: _Seat) -> tuple[Sequence[Action], str, float | None, str]:
        """Ask ``s`` (which has a client) for its decision; nothing is applied.

        Returns its actions, its note, its wall time (ms) and the fault text of a late, failed
        or garbled answer ("" if it answered in time); charges its time as :meth:`decide` does.
        """
        assert s.client is not None
        st = self.state
        obs = st.observation(s.seat)
        legal = st.legal_actions()
        # The budget is in charged time: the CPU time of the bot's cgroup where it is known,
        # so a busy neighbour cannot make it late; the wall clock is then only a backstop.
        budget = self.clock.decision_ms + max(0.0, s.bank_ms)
        cpu0 = _cpu_ns(s)
        wall_ms = budget if cpu0 is None else self._backstop_ms(budget)
        t0 = time.perf_counter()
        try:
            decision = s.client.decide(
                self.match_id,
                obs,
                legal,
                time_left_ms=int(budget),
                time_bank_ms=int(max(0.0, s.bank_ms)),
                timeout=wall_ms / 1000,
            )
            actions, note = decision.actions, decision.note
            error: tuple[FaultKind, str] | None = None
        except BotError as e:
            kind = _fault_kind(e)
            actions, note, error = [], "", (kind, str(e) or _SILENT[kind])
        ms = (time.perf_counter() - t0) * 1000
        cpu1 = None if cpu0 is None else _cpu_ns(s)
        cpu_ms = None if cpu0 is None or cpu1 is None else (cpu1 - cpu0) / 1e6
        charged = ms if cpu_ms is None else cpu_ms
        if cpu_ms is not None and error is not None and error[0] is FaultKind.TIMEOUT:
            # No answer within the wall backstop: the whole budget is spent, whatever the CPU.
            charged = max(charged, budget + 1)
            error = (
                FaultKind.TIMEOUT,
                f"no answer within the wall-clock backstop of {wall_ms:.0f} ms "
                f"({cpu_ms:.0f} ms of CPU used)",
            )
        s.decisions += 1
        s.think_ms += ms
        s.last_cpu_ms = cpu_ms
        if cpu_ms is not None:
            s.cpu_ms = (s.cpu_ms or 0.0) + cpu_ms
        if charged > self.clock.decision_ms:
            s.bank_ms -= charged - self.clock.decision_ms
        if error is None and s.bank_ms < 0:
            spent = f"{ms:.0f} ms" if cpu_ms is None else f"{cpu_ms:.0f} ms of CPU ({ms:.0f} ms)"
            error = (FaultKind.TIMEOUT, f"answered after {spent} with the time bank spent")
        return actions, note, ms, self.fault(s, *error) if error is not None else ""

    def _scripted(self, s: _Seat, scripted: Scripted) -> None:
        """Play the recorded ``scripted`` decision; first ask ``s``'s bot, if it has one.

        The bot's answer is kept (:attr:`answers`), checked as a played one would be (an
        illegal answer is a fault), and never applied: the recorded actions are.
        """
        st = self.state
        if (scripted.hand, scripted.seat) != (st.hand_number, st.to_act):
            raise ReplayError(
                f"the recorded decision at {scripted.hand}.{scripted.step} is seat "
                f"{scripted.seat}'s, but seat {st.to_act} acts in hand {st.hand_number}"
            )
        if s.client is not None and not s.forfeited:
            actions, note, _, fault = self._ask(s)
            # Checked as a played answer is, on a copy: the recorded actions are played.
            fault = fault or self._play(self.state.clone(), s, actions)
            self.answers.append(Answer(scripted, tuple(actions), note, fault))
        for action in scripted.actions:
            st.apply(action)

    def question(self) -> list[Answer]:
        """Play the script, asking the seats that have a bot each of their decisions.

        Nothing is written and the match is left where the script ends: the bots are not told
        it ended. Returns their answers.
        """
        reported = self.notify(0)
        for scripted in self.script:
            if self.cancel is not None and self.cancel.is_set():
                raise MatchCancelled(self.match_id)
            if self.state.is_over:
                raise ReplayError(f"the match is over before {scripted.hand}.{scripted.step}")
            self._scripted(self.seats[self.state.to_act], scripted)
            reported = self.notify(reported)
        return self.answers

    def play(self, replay_path: Path | None) -> MatchRecord:
        st = self.state
        t0 = time.perf_counter()
        decisions = 0
        writes: contextlib.AbstractContextManager[ReplayWriter | _Unwritten] = (
            contextlib.nullcontext(_Unwritten())
            if replay_path is None
            else ReplayWriter(
                replay_path.with_suffix(".partial"),
                st,
                [s.name for s in self.seats],
                {"match_id": self.match_id, "bots": [f"{s.name} {s.version}" for s in self.seats]},
                # The seed is secret: the replay holds each hand's deck, written once it is over.
                write_seed=False,
            )
        )
        with writes as writer:
            reported = self.notify(0)
            script = iter(self.script)
            while not st.is_over:
                if self.cancel is not None and self.cancel.is_set():
                    raise MatchCancelled(self.match_id)
                s = self.seats[st.to_act]
                before = len(st.log)
                scripted = next(script, None)
                if scripted is not None:
                    self._scripted(s, scripted)
                    decisions += 1
                    writer.decision(st, before, note=scripted.note)
                    reported = self.notify(reported)
                    continue
                capped = self._over_wall_cap(s)
                waited = time.perf_counter()
                note, ms, fault = self.decide(s)
                wall = (time.perf_counter() - waited) * 1000
                s.waited_ms += self._uncredited_ms(wall, s.last_cpu_ms)
                fault = capped or fault
                decisions += 1
                writer.decision(st, before, note=note, ms=ms, cpu_ms=s.last_cpu_ms, fault=fault)
                reported = self.notify(reported)
        if replay_path is not None:
            os.replace(replay_path.with_suffix(".partial"), replay_path)
        assert st.result is not None
        for s in self.seats:
            if s.client is not None and not s.forfeited:
                # The match is decided; a bot that cannot hear it changes nothing (but its
                # instance, in doubt, is not kept).
                with contextlib.suppress(BotError):
                    timeout = self._notice_s(s, self._notice_budget_ms(s), _cpu_ns(s))
                    s.client.end_match(self.match_id, st.result, timeout=timeout)
                    s.ended = True
        return MatchRecord(
            match_id=self.match_id,
            void=not all(s.started for s in self.seats),
            bots=tuple(s.name for s in self.seats),
            placements=st.result.placements,
            bankrolls=st.result.bankrolls,
            start_bankroll=self.config.bankroll,
            hands=st.result.hands,
            by_cap=st.result.by_cap,
            decisions=decisions,
            seconds=time.perf_counter() - t0,
            seats=tuple(
                SeatReport(
                    seat=s.seat,
                    bot=s.name,
                    version=s.version,
                    started=s.started,
                    decisions=s.decisions,
                    think_ms=round(s.think_ms, 3),
                    cpu_ms=None if s.cpu_ms is None else round(s.cpu_ms, 3),
                    strikes=s.strikes,
                    forfeited=s.forfeited,
                    log=str(self.log_path(s)) if s.seated is not None else "",
                    dropped_log_bytes=s.seated.dropped_now() if s.seated is not None else 0,
                    protocol=identity.protocol_version if identity is not None else "",
                    streamed=s.client is not None and s.client.streams_decisions,
                )
                for s in self.seats
                for identity in [s.seated.identity if s.seated is not None else None]
            ),
            faults=tuple(f for s in self.seats for f in s.faults),
            replay="" if replay_path is None else str(replay_path),
            luck=_luck(st),
        )


def _luck(state: MatchState) -> tuple[float, ...]:
    """Per seat, the places its luck was worth (``luck_places``); none where it cannot be told.

    A state that began mid-hand (``fork_runs``) holds no deal of that hand, and one that does
    not replay from its start has no stock draws to judge: no luck, and the match stands.
    """
    if len(state.deals) != len(state.results):
        return ()
    try:
        return tuple(round(x, 6) for x in luck_places(state))
    except ValueError:
        return ()


class _Unwritten:
    """The replay of a match that keeps none: it takes decisions and writes nothing."""

    def decision(self, state: MatchState, before: int, **fields: object) -> None:
        """Write nothing."""


def _cpu_ns(s: _Seat) -> int | None:
    """The CPU time the seat's bot has used so far (ns); None: not known."""
    return None if s.seated is None else s.seated.bot.cpu_ns()


def _fault_kind(e: BotError) -> FaultKind:
    """The fault a failed call is: no answer in time, the bot gone, or a broken answer."""
    if isinstance(e, BotTimeout):
        return FaultKind.TIMEOUT
    if isinstance(e, BotCrashed):
        return FaultKind.CRASH
    return FaultKind.PROTOCOL


_SILENT = {
    FaultKind.TIMEOUT: "deadline exceeded",
    FaultKind.CRASH: "connection lost",
    FaultKind.PROTOCOL: "",
}
"""A decision fault's detail when the error says nothing."""

_ENDED_WITHIN_S = 2.0
"""How long a crash's fault waits for the bot's exit status (a container's takes a moment)."""


def _how_it_ended(bot: RunningBot, detail: str) -> str:
    """A crash's detail with how the bot ended, ``out of memory: …`` first for an OOM kill."""
    deadline = time.monotonic() + _ENDED_WITHIN_S
    status = bot.exit_status()
    while status is None and time.monotonic() < deadline:
        time.sleep(0.05)
        status = bot.exit_status()
    if status is None:
        return detail
    if "out of memory" in status:
        return f"out of memory: {detail} ({status})"
    return f"{detail} ({status})"


def wait_serving(
    bot: RunningBot, name: str, budget_s: float, cancel: threading.Event | None = None
) -> BotClient:
    """A client for ``bot`` once it serves its health check on its checked socket.

    The budget counts from when its process or container actually ran. A bot that exits is
    reported at once (within a poll), with its exit status and its last output lines.

    Raises:
        SandboxError: it exited while starting, or its socket failed the checks.
        BotTimeout: it was not serving within ``budget_s``.
        MatchCancelled: ``cancel`` was set.
    """
    client: BotClient | None = None
    try:
        while True:
            if cancel is not None and cancel.is_set():
                raise MatchCancelled("cancelled while starting")
            status = bot.exit_status()
            if status is not None:
                bot.stop()  # so that its output is complete before its last lines are read
                tail = log_tail(bot.log_path)
                said = f"; its last output: {tail}" if tail else ""
                # "cut off": arena/match/_relay.py
                ended = "cut off" if status.startswith("cut off") else "exited"
                raise SandboxError(f"{ended} while starting ({status}){said}")
            if client is None:
                target = bot.target()
                if target is not None:
                    client = BotClient(target, name=name, arena_version=_ARENA_VERSION)
            if client is not None:
                with contextlib.suppress(BotError):
                    if client.health(timeout=0.5):
                        return client
            if time.monotonic() - bot.started_at > budget_s:
                where = "its socket never appeared" if client is None else "no SERVING answer"
                raise BotTimeout(f"not serving {budget_s:g} s after it started ({where})", name)
            time.sleep(0.05)
    except BaseException:
        if client is not None:
            client.close()
        raise


def run_match(
    match_id: str,
    seed: bytes | int | str,
    bots: Sequence[BotManifest],
    config: MatchConfig,
    *,
    sandbox: Sandbox,
    workdir: Path,
    replay_path: Path | None,
    logs_dir: Path,
    clock: TimeControl | None = None,
    cancel: threading.Event | None = None,
    host: BotHost | None = None,
    deal: Hashable = 0,
    fresh: bool = False,
    announce: MatchConfig | None = None,
    state: MatchState | None = None,
    script: Sequence[Scripted] = (),
    on_started: Callable[[], object] | None = None,
) -> MatchRecord:
    """Play one match with ``bots[i]`` in seat ``i``, each started in ``sandbox``.

    The replay is written to ``replay_path`` (as ``.partial`` until the match is over; None:
    no replay, for a match that began mid-hand, which a replay cannot hold); each
    bot's output log ends up in ``logs_dir``; ``workdir`` holds sockets and scratch space
    (keep its path short: unix socket paths are limited to 107 bytes). Setting ``cancel``
    makes the match raise MatchCancelled at its next decision.

    Without ``host`` every bot is started for this match and stopped after it, whatever
    happens. With one (a ladder slot's), instances it keeps that have not seen ``deal`` (the
    match's duplicate group) are seated, or new ones, and given back to it after the match
    (``arena.match._hosts``); ``fresh`` asks for new ones only (a void match played again).

    ``announce`` is the rules the bots are told at the start (``MatchInfo``), if not
    ``config``: a league's validation match is told the league's rules, so that a bot cannot
    tell it from a rated match, and is played to fewer hands (issue 24, finding 1).

    ``state`` is where the match starts, if not a fresh ``MatchState(config, seed)``: a
    recorded match's, its decks as recorded (``arena fork``). Its first decisions are then
    ``script``'s, played as recorded; each seat's bot is asked them first and its answers are
    dropped (so a bot lives through the match as it was before it plays on).

    ``on_started`` is called once every seat has its instance, before the first hand: a slot
    prestarts the next match's bots from there (``arena.match._prestart``), once this match's
    own prestarted instances are seated and no longer spare. What it raises is logged; the
    match plays on.
    """
    own = host is None
    if host is None:
        host = BotHost(sandbox, workdir, reuse=False)
    match = _Match(
        match_id,
        seed,
        bots,
        config,
        clock or TimeControl(),
        sandbox,
        workdir,
        logs_dir,
        cancel,
        host,
        deal,
        announce,
        fresh=fresh,
        state=state,
        script=script,
    )
    try:
        match.start()
        if on_started is not None:
            try:
                on_started()
            except Exception:  # a helper's failure is not the match's
                logger.exception("%s: on_started failed", match_id)
        return match.play(replay_path)
    finally:
        match.stop()
        if own:
            host.close()
