"""Validating a submitted version: build, check, then a validation match, each step recorded.

A validator (``LocalExecutor``) claims a version (:func:`~arena.league.claim_validation`),
then :func:`validate_version` runs its steps in order, each in short transactions of its
own, never one held open while a bot runs:

1. ``build``: its source is unpacked from the artifact store (``source_dir``), what its
   ``bot.toml`` asks of the sandbox (memory, start budget) is checked, and with the Docker
   sandbox its image is built offline (or found); the process sandbox runs the source as it
   is, so there is nothing to build;
2. ``check``: the bot is started in the sandbox and put through the SDK's conformance check,
   exactly as ``arena check`` does locally; a failure's words are ``flipflop.format_report``'s;
3. ``match``: a short match against the league's house bots (:data:`HOUSE_BOTS`) in the same
   sandbox; a version that does not start, crashes or is forfeited in it fails. To the bots it
   looks like a rated match (:class:`ValidationTable`): a match id of the rated form, the
   names of real versions of the league at the other seats, a table size and a seat drawn as
   the scheduler draws them, the league's rules and clock; only the hands it lasts are fewer.
   A bot that told validation from rated play could pass it and then refuse its rated
   matches (issue 24, finding 1).

Each step is a ``validation_steps`` row: started, then its outcome, a detail and a log in the
artifact store. A ``failed`` step rejects the version (its reason is the step's detail). An
``error`` step is the league's fault (Docker gone, a house bot missing): the version goes back
to ``uploaded``, its lease released, to be validated again from the start. A version that
passes every step becomes active (the bot's active version, if any, retired in the same
transaction) unless its owner said otherwise, or a newer version of the bot is already
active: then it is ``retired``, validated but not playing, and can be activated later.

The validator holds a lease on the version, renewed while a step runs and at every step;
every write is conditional on holding it, so a validator whose lease ran out (its version
claimed again by another) writes nothing more.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import hashlib
import hmac
import logging
import random
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from arena._errors import (
    ArenaError,
    ArtifactError,
    NotFound,
    SandboxError,
    SandboxUnavailable,
    UploadRejected,
)
from arena._text import clean_lines
from arena.ladder._bundled import resolve_bot
from arena.league._db import unit_of_work, utcnow
from arena.league._home import League
from arena.league.bots._bots import (
    Bot,
    BotVersion,
    StepKind,
    StepOutcome,
    ValidationStep,
    VersionStatus,
)
from arena.league.bots._house import HOUSE_BOTS
from arena.league.bots._versions import PENDING, forget_steps, make_active, seat_manifest, seat_name
from arena.league.matches._matches import Match
from arena.match._runner import FaultKind, MatchRecord, TimeControl, run_match, wait_serving
from arena.sandbox import Sandbox, SandboxKind
from flipflop import BotError, BotManifest, ManifestError, MatchConfig, check_bot, format_report

__all__ = [
    "DEFAULT_VALIDATION_LEASE",
    "HOUSE_BOTS",
    "NO_IMAGE",
    "STEP_STATUS",
    "VALIDATION_HANDS",
    "LeagueLedger",
    "Ledger",
    "StepResult",
    "ValidationTable",
    "begin_validation",
    "house_bots",
    "renewing",
    "run_validation",
    "validate_version",
]

logger = logging.getLogger(__name__)

VALIDATION_HANDS = 20
"""The hand cap of a validation match: long enough to see a bot through many decisions and
hand ends, short enough to take seconds."""
CHECK_DECISION_S = 5.0
"""The conformance check's deadline per decision, more generous than ``arena check``'s 1 s: a
busy league machine must not reject a good bot; the matches' own clock (``TimeControl``)
holds a slow bot to account."""
DEFAULT_VALIDATION_LEASE = dt.timedelta(minutes=10)
"""How long a validator holds a version between renewals (renewed every third of it while a
step runs): past it, a dead validator's version is claimed again."""
RETRY_AFTER = dt.timedelta(minutes=1)
"""How long a version whose validation met a league fault (an ``error`` step) waits before
it can be claimed again."""
NO_IMAGE = "no image: the process sandbox runs the source as it is"
"""The detail of a passed build step in the process sandbox."""
_LOG_TAIL_LINES = 20  # of a failed check's bot output, as `arena check` shows them
_LEASE_RENEWALS = 3  # per lease, while a step runs


@dataclass(frozen=True, slots=True)
class StepResult:
    """How a step ended: its outcome, one detail for people and its full log.

    Attributes:
        outcome: passed, failed (the version is rejected) or error (the league's fault).
        detail: one sentence (or a few lines) for the version's page.
        log: the step's whole log, kept in the artifact store.
        replay: the match step's replay (empty for the other steps): a fleet worker uploads
            it, and the league's referee checks it (``matches/_referee.py``).
    """

    outcome: StepOutcome
    detail: str
    log: str
    replay: bytes = b""


@dataclass(frozen=True, slots=True)
class ValidationTable:
    """A validation match as the bots see it: like a rated match of the league.

    Attributes:
        match_id: its id, of the rated form (``m`` and a number near the league's next).
        seat: the version's seat.
        names: every seat's name, the version's (``BOT-vN``) at ``seat``; the others are
            names of other bots' versions of the league, played by the house bots.
        seed: the deal seed (64 hex digits), secret: derived from the league's key, the
            version and the validator's claim (:func:`validation_seed`).
        config: the league's rules, as the bots are told them (``seats`` is the table's).
        clock: the league's clock.
    """

    match_id: str
    seat: int
    names: tuple[str, ...]
    seed: str
    config: MatchConfig
    clock: TimeControl

    def to_json(self) -> dict[str, Any]:
        """The table as JSON (a fleet worker is sent it with its claim)."""
        return {
            "match_id": self.match_id,
            "seat": self.seat,
            "names": list(self.names),
            "seed": self.seed,
            "config": dataclasses.asdict(self.config),
            "clock": dataclasses.asdict(self.clock),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ValidationTable:
        """The table :meth:`to_json` wrote."""
        return cls(
            str(data["match_id"]),
            int(data["seat"]),
            tuple(str(n) for n in data["names"]),
            str(data["seed"]),
            MatchConfig(**data["config"]),
            TimeControl(**data["clock"]),
        )


def validation_seed(key: bytes, claim: str) -> str:
    """A secret of the validation ``claim`` (``VERSION/LEASE_OWNER``): its deal seed, say.

    Derived from the league's key, so the league can check the replay of a validation match
    a fleet's worker played without keeping the seed anywhere.
    """
    return hmac.new(key, b"flipflop-arena/validation/" + claim.encode(), hashlib.sha256).hexdigest()


def validation_table(
    session: Session,
    key: bytes,
    version_id: int,
    claim: str,
    *,
    config: MatchConfig,
    clock: TimeControl,
    table_sizes: tuple[int, int] = (3, 5),
    house: int | None = None,
) -> ValidationTable:
    """Draw the table of a version's validation match, as the scheduler would draw a rated one.

    Its size is drawn in ``table_sizes`` (``house`` opponents exactly, when the house is
    given), the version's seat at random; the other seats take the names of active versions
    of other bots (made-up ``HOUSE-v1`` names when the league has too few); its id follows the
    league's latest match id. Nothing about it tells a bot that it is not rated.
    """
    rng = random.Random(validation_seed(key, f"table/{version_id}/{claim}"))
    bot, number, bot_id = session.execute(
        select(Bot.name, BotVersion.number, Bot.id)
        .join(Bot, Bot.id == BotVersion.bot_id)
        .where(BotVersion.id == version_id)
    ).one()
    size = house + 1 if house is not None else rng.randint(*table_sizes)
    own = seat_name(bot, number)
    playing = sorted(
        seat_name(b, n)
        for b, n in session.execute(
            select(Bot.name, BotVersion.number)
            .join(Bot, Bot.id == BotVersion.bot_id)
            .where(BotVersion.status == VersionStatus.ACTIVE, Bot.id != bot_id)
        )
    )
    names = rng.sample(playing, min(size - 1, len(playing)))
    made_up = (f"{h}-v{n}" for n in range(1, 100) for h in HOUSE_BOTS)
    while len(names) < size - 1:
        name = next(made_up)
        if name != own and name not in names:
            names.append(name)
    seat = rng.randrange(size)
    names.insert(seat, own)
    last = session.scalar(select(func.max(Match.id))) or 0
    return ValidationTable(
        match_id=f"m{last + rng.randint(1, 2 * size)}",
        seat=seat,
        names=tuple(names),
        seed=validation_seed(key, f"{version_id}/{claim}"),
        config=dataclasses.replace(config, seats=size),
        clock=clock,
    )


def house_bots() -> list[BotManifest]:
    """The manifests of :data:`HOUSE_BOTS`, from the bundled bots.

    Raises:
        ArenaError: a house bot is not bundled here.
    """
    return [resolve_bot(name) for name in HOUSE_BOTS]


def validate_version(
    league: League,
    version_id: int,
    *,
    worker: str,
    sandbox: Sandbox,
    workdir: Path,
    lease: dt.timedelta = DEFAULT_VALIDATION_LEASE,
    check_matches: int = 5,
    house: Sequence[BotManifest] | None = None,
    config: MatchConfig | None = None,
    clock: TimeControl | None = None,
) -> VersionStatus:
    """Run the validation steps of version ``version_id``, which ``worker`` has claimed.

    See the module docstring. The sandbox is the caller's (not closed here).

    Args:
        league: the league.
        version_id: the version, claimed by ``worker`` (``claim_validation``).
        worker: the validator's name, the lease's owner.
        sandbox: where the bot is built, checked and played.
        workdir: a short directory for sockets and scratch (unix socket paths are short).
        lease: how long the lease lasts between renewals.
        check_matches: the conformance check's matches.
        house: the validation match's opponents (2 to 4); default :func:`house_bots`, at a
            table of 3 to 5.
        config: the league's rules, which the validation match announces (default
            ``MatchConfig()``); it is played to :data:`VALIDATION_HANDS` hands.
        clock: the league's clock, which the validation match is played by.

    Returns:
        The version's status afterwards: ``active`` or ``retired`` (passed), ``rejected``
        (a step failed), ``uploaded`` (a step hit an error: to be validated again), or its
        status as another validator left it, when ``worker`` lost the lease.

    Raises:
        NotFound: no such version.
        ValueError: ``house`` has fewer than 2 or more than 4 bots.
    """
    if house is not None and not 2 <= len(house) <= 4:
        raise ValueError(f"a validation match needs 2 to 4 house bots, not {len(house)}")
    held = begin_validation(
        league,
        version_id,
        worker,
        lease,
        config or MatchConfig(),
        clock or TimeControl(),
        house=None if house is None else len(house),
    )
    if held is None:
        return _status(league, version_id)
    bot, number, sha256, table = held
    return run_validation(
        LeagueLedger(league, version_id, worker, lease),
        sandbox,
        workdir,
        bot=bot,
        number=number,
        sha256=sha256,
        manifest=lambda: seat_manifest(league, bot, number, sha256),
        table=table,
        check_matches=check_matches,
        house=house,
    )


STEP_STATUS: dict[StepKind, VersionStatus] = {
    StepKind.BUILD: VersionStatus.BUILDING,
    StepKind.CHECK: VersionStatus.CHECKING,
    StepKind.MATCH: VersionStatus.VALIDATING,
}
"""The steps in their order, each with the version's status while it runs."""


class Ledger(Protocol):
    """Where a validation's progress goes, conditional on holding the version's lease.

    :class:`LeagueLedger` writes the league's database (a validator in the server); a fleet
    worker's ledger asks the league over HTTP (``arena.league._fleet``), which writes the
    same with a :class:`LeagueLedger` of its own.
    """

    def start_step(self, kind: StepKind) -> bool:
        """Set the version's status for ``kind`` and record the step started; False: lost."""
        ...

    def end_step(self, kind: StepKind, result: StepResult, *, last: bool) -> VersionStatus | None:
        """Record the step's end; the version's status after it, or None: lost."""
        ...

    def renewing(self) -> AbstractContextManager[None]:
        """Renew the lease, while the block runs (a step)."""
        ...

    def status(self) -> VersionStatus:
        """The version's status now (after a lost lease: as another validator left it)."""
        ...


def run_validation(
    ledger: Ledger,
    sandbox: Sandbox,
    workdir: Path,
    *,
    bot: str,
    number: int,
    sha256: str,
    manifest: Callable[[], BotManifest],
    table: ValidationTable,
    check_matches: int = 5,
    house: Sequence[BotManifest] | None = None,
) -> VersionStatus:
    """Run the steps of version ``number`` of ``bot``, its progress written to ``ledger``.

    ``manifest`` gives the version's manifest from its unpacked source (``seat_manifest``
    here, a worker's cache on a fleet); ``table`` is how its validation match looks to the
    bots (the league's :func:`validation_table`). Returns as :func:`validate_version`.
    """
    workdir.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(dir=workdir, prefix="v"))
    steps = _Steps(sandbox, bot, number, sha256, manifest, scratch, check_matches, house, table)
    runs = {StepKind.BUILD: steps.build, StepKind.CHECK: steps.check, StepKind.MATCH: steps.match}
    try:
        for i, kind in enumerate(STEP_STATUS):
            if not ledger.start_step(kind):
                return ledger.status()
            with ledger.renewing():
                result = _guarded(kind, runs[kind])
            logger.info(
                "validation of %s v%d: %s %s", bot, number, kind.value, result.outcome.value
            )
            after = ledger.end_step(kind, result, last=i == len(STEP_STATUS) - 1)
            if after is None:
                return ledger.status()
            if after not in PENDING or after is VersionStatus.UPLOADED:
                return after
        raise AssertionError("unreachable: the last step ends the validation")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


class LeagueLedger:
    """A validation's progress in the league's database, as the lease holder ``worker``."""

    def __init__(self, league: League, version_id: int, worker: str, lease: dt.timedelta) -> None:
        self.league = league
        self.version_id = version_id
        self.worker = worker
        self.lease = lease

    def start_step(self, kind: StepKind) -> bool:
        """See :class:`Ledger`."""
        return _start_step(
            self.league, self.version_id, self.worker, self.lease, kind, STEP_STATUS[kind]
        )

    def end_step(self, kind: StepKind, result: StepResult, *, last: bool) -> VersionStatus | None:
        """See :class:`Ledger`."""
        with unit_of_work(self.league.sessions) as session:
            activate = session.scalar(
                select(BotVersion.activate).where(BotVersion.id == self.version_id)
            )
        return _end_step(
            self.league,
            self.version_id,
            self.worker,
            self.lease,
            kind,
            result,
            last=last,
            activate=bool(activate),
        )

    def renew(self) -> bool:
        """Renew the lease once; False if it is lost."""
        with unit_of_work(self.league.sessions) as session:
            return _held(session, self.version_id, self.worker, self.lease)

    def renewing(self) -> AbstractContextManager[None]:
        """See :class:`Ledger`."""
        return renewing(self.renew, self.lease, f"lease-v{self.version_id}")

    def status(self) -> VersionStatus:
        """See :class:`Ledger`."""
        return _status(self.league, self.version_id)


# ---------------------------------------------------------------------- the steps


class _Steps:
    """The three steps of one version's validation, each returning a :class:`StepResult`."""

    def __init__(
        self,
        sandbox: Sandbox,
        bot: str,
        number: int,
        sha256: str,
        manifest: Callable[[], BotManifest],
        scratch: Path,
        check_matches: int,
        house: Sequence[BotManifest] | None,
        table: ValidationTable,
    ) -> None:
        self.read_manifest = manifest
        self.sandbox = sandbox
        self.bot = bot
        self.number = number
        self.sha256 = sha256
        self.scratch = scratch
        self.check_matches = check_matches
        self.house = house
        self.table = table
        self.manifest: BotManifest | None = None

    def build(self) -> StepResult:
        """Unpack the source, check what its bot.toml asks, build its image (Docker)."""
        try:
            manifest = self.read_manifest()
        except (UploadRejected, ManifestError) as e:
            return _failed(str(e))
        except ArtifactError as e:
            return _error(str(e))
        try:
            # A bot.toml asking for more memory or start time than the league allows fails
            # here, before anything starts: the same words as `arena check`'s.
            self.sandbox.limits.memory_for(manifest)
            self.sandbox.limits.start_timeout_for(manifest)
        except SandboxError as e:
            return _failed(str(e))
        self.manifest = manifest
        if self.sandbox.kind is not SandboxKind.DOCKER:
            return StepResult(StepOutcome.PASSED, NO_IMAGE, NO_IMAGE + "\n")
        image_for = getattr(self.sandbox, "image_for", None)
        if image_for is None:  # a Docker sandbox builds its images on first use
            return StepResult(StepOutcome.PASSED, "the image is built when the bot starts", "")
        try:
            tag = image_for(manifest)
        except SandboxUnavailable as e:
            return _error(str(e))
        except SandboxError as e:
            return _failed(str(e))
        detail = f"image {tag}, built offline from the arena's {manifest.runtime.value} recipe"
        return StepResult(StepOutcome.PASSED, detail, detail + "\n")

    def check(self) -> StepResult:
        """The conformance check, as ``arena check`` runs it (``arena/cli/_check.py``)."""
        manifest = self._manifest()
        budget = self.sandbox.limits.start_timeout_for(manifest)
        try:
            running = self.sandbox.start(manifest, self.scratch / "c", "check")
        except SandboxUnavailable as e:
            return _error(str(e))
        except SandboxError as e:
            return _failed(str(e))
        try:
            with wait_serving(running, manifest.name, budget) as client:
                report = check_bot(
                    client.endpoint,
                    matches=self.check_matches,
                    seed=int(self.sha256[:8], 16),
                    decision_timeout=CHECK_DECISION_S,
                    seat_token=running.seat_token,
                )
        except (SandboxError, BotError) as e:
            running.stop()  # so that its output is complete
            return _failed(str(e) or type(e).__name__, _output(running.log_path))
        finally:
            running.stop()
        text = clean_lines(format_report(report))  # it quotes the bot
        if report.ok:
            return StepResult(StepOutcome.PASSED, text, text + "\n")
        log = text + "\n"
        tail = _output(running.log_path, _LOG_TAIL_LINES)
        if tail:
            log += f"\nthe bot's output (last lines of {running.log_path.name}):\n{tail}\n"
        return StepResult(StepOutcome.FAILED, text, log)

    def match(self) -> StepResult:
        """A validation match against the house bots; a crash or a forfeit fails it."""
        manifest = self._manifest()
        try:
            house = list(self.house) if self.house is not None else house_bots()
        except ArenaError as e:
            return _error(f"the league's house bots are missing: {e}")
        table = self.table
        playing: list[BotManifest] = []
        house_at: list[str | None] = []  # which house bot plays each seat (None: the version's)
        for seat, name in enumerate(table.names):
            opponent = seat - (seat > table.seat)  # 0, 1, … over the other seats
            bot = manifest if seat == table.seat else house[opponent % len(house)]
            playing.append(dataclasses.replace(bot, name=name))
            house_at.append(None if seat == table.seat else bot.name)
        record = run_match(
            table.match_id,
            bytes.fromhex(table.seed),
            playing,
            dataclasses.replace(
                table.config,
                hand_cap=min(VALIDATION_HANDS, table.config.hand_cap or VALIDATION_HANDS),
            ),
            sandbox=self.sandbox,
            workdir=self.scratch / "m",
            replay_path=self.scratch / "replay.jsonl",
            logs_dir=self.scratch / "logs",
            clock=table.clock,
            announce=table.config,
        )
        judged = _judge(record, table.seat, house_at)
        return dataclasses.replace(judged, replay=Path(record.replay).read_bytes())

    def _manifest(self) -> BotManifest:
        assert self.manifest is not None, "the build step comes first"
        return self.manifest


def _judge(record: MatchRecord, at: int, house: Sequence[str | None]) -> StepResult:
    """The match step's result from its record: seat ``at`` is the version, the rest the house.

    ``house`` names the house bot that played each seat (None at ``at``).
    """
    seat = record.seats[at]
    faults = [f for f in record.faults if f.seat == at]
    summary = _summary(record, house)
    output = ""
    if seat.log:
        output = _output(Path(seat.log))
        summary += f"\n\nthe bot's output ({Path(seat.log).name}):\n{output}\n" if output else ""
    idle = [r for r in record.seats if r.seat != at and not r.started]
    if idle:  # the league's own bots: its fault (Docker gone, say), the version not judged
        names = ", ".join(str(house[r.seat]) for r in idle)
        return _error(f"a house bot did not start in the validation match ({names})", summary)
    if not seat.started:
        why = faults[0].detail if faults else "no reason recorded"
        return _failed(f"did not start in its validation match: {why}", summary)
    if seat.forfeited:
        fatal = next((f for f in faults if f.forfeited), faults[-1] if faults else None)
        if fatal is None:
            return _failed("was forfeited in its validation match", summary)
        if fatal.kind is FaultKind.CRASH:
            return _failed(
                f"crashed in its validation match: {fatal.detail} (hand {fatal.hand})", summary
            )
        return _failed(
            f"was forfeited in its validation match: {fatal.kind.value}: {fatal.detail}"
            f" (hand {fatal.hand})",
            summary,
        )
    place = record.placements[at]
    detail = (
        f"played its validation match against {', '.join(h for h in house if h)}: place {place} of"
        f" {len(record.placements)} after {record.hands} hands"
    )
    if faults:
        detail += f", {len(faults)} fault{'s' if len(faults) != 1 else ''} without forfeit"
    return StepResult(StepOutcome.PASSED, detail, summary)


def _summary(record: MatchRecord, house: Sequence[str | None]) -> str:
    """The match for the step's log: who placed where (and which house bot played), faults."""
    lines = [
        f"validation match {record.match_id}: {record.hands} hands"
        f"{' (hand cap)' if record.by_cap else ''}, {record.decisions} decisions,"
        f" {record.seconds:.1f} s"
    ]
    for s in record.seats:
        played_by = "" if house[s.seat] is None else f" (house bot {house[s.seat]})"
        lines.append(
            f"  seat {s.seat} {s.bot}{played_by} {s.version}: place {record.placements[s.seat]},"
            f" {record.bankrolls[s.seat]} chips, {s.decisions} decisions, {s.strikes} strikes"
            f"{', forfeited' if s.forfeited else ''}{'' if s.started else ', never started'}"
        )
    for f in record.faults:
        lines.append(
            f"  fault: seat {f.seat} {f.bot}, hand {f.hand}, {f.kind.value}: {f.detail}"
            f"{' (seat forfeited)' if f.forfeited else ''}"
        )
    return clean_lines("\n".join(lines))


def _output(path: Path, lines: int | None = None) -> str:
    """A bot's output log (as the sandbox capped it, or its last ``lines``), safe to show."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    kept = text.splitlines()
    if lines is not None:
        kept = kept[-lines:]
    return clean_lines("\n".join(kept))


def _failed(detail: str, log: str = "") -> StepResult:
    text = clean_lines(detail.strip())
    return StepResult(StepOutcome.FAILED, text, f"{text}\n\n{log}".rstrip("\n") + "\n")


def _error(detail: str, log: str = "") -> StepResult:
    text = clean_lines(detail.strip())
    return StepResult(StepOutcome.ERROR, text, f"{text}\n\n{log}".rstrip("\n") + "\n")


def _guarded(kind: StepKind, run: Callable[[], StepResult]) -> StepResult:
    """Run a step; an exception it did not expect is the league's fault: an error, retried."""
    try:
        return run()
    except Exception as e:
        logger.exception("validation step %s failed unexpectedly", kind.value)
        return _error(f"the league failed in the {kind.value} step: {type(e).__name__}: {e}")


# ---------------------------------------------------------------------- the database side


def begin_validation(
    league: League,
    version_id: int,
    worker: str,
    lease: dt.timedelta,
    config: MatchConfig,
    clock: TimeControl,
    *,
    house: int | None = None,
) -> tuple[str, int, str, ValidationTable] | None:
    """Start ``worker``'s validation of a version it claimed: its bot, number, source, table.

    It starts from scratch: earlier steps are forgotten. ``house``: the number of house
    bots at its validation match's table, if the caller chose them (default: a drawn
    table). None if ``worker`` does not hold the version.

    Raises:
        NotFound: no such version.
    """
    with unit_of_work(league.sessions) as session:
        row = session.execute(
            select(BotVersion, Bot.name)
            .join(Bot, BotVersion.bot_id == Bot.id)
            .where(BotVersion.id == version_id)
            .with_for_update()
        ).one_or_none()
        if row is None:
            raise NotFound(f"no bot version with id {version_id}")
        version, bot = row
        if version.lease_owner != worker or version.status not in PENDING:
            return None
        forget_steps(session, version_id)
        version.lease_expires = utcnow() + lease
        table = validation_table(
            session, league.key, version_id, worker, config=config, clock=clock, house=house
        )
        return bot, version.number, version.source_sha256, table


def _held(
    session: Session, version_id: int, worker: str, lease: dt.timedelta | None, **values: object
) -> bool:
    """Renew ``worker``'s lease (or clear it: ``lease`` None) and set ``values``, if held."""
    if lease is None:
        values.update(lease_owner=None, lease_expires=None)
    else:
        values.update(lease_expires=utcnow() + lease)
    done = session.execute(
        update(BotVersion)
        .where(
            BotVersion.id == version_id,
            BotVersion.lease_owner == worker,
            BotVersion.status.in_(PENDING),
        )
        .values(**values)
        .returning(BotVersion.id)
        .execution_options(synchronize_session=False)
    ).scalar_one_or_none()
    return done is not None


def _start_step(
    league: League,
    version_id: int,
    worker: str,
    lease: dt.timedelta,
    kind: StepKind,
    status: VersionStatus,
) -> bool:
    """Set the version's status and add the step's row (started); False if the lease is lost."""
    with unit_of_work(league.sessions) as session:
        if not _held(session, version_id, worker, lease, status=status):
            return False
        forget_steps(session, version_id, [kind])
        session.add(
            ValidationStep(
                version_id=version_id,
                step=kind,
                outcome=None,
                detail="",
                log_sha256=None,
                started=utcnow(),
                finished=None,
            )
        )
        return True


def _end_step(
    league: League,
    version_id: int,
    worker: str,
    lease: dt.timedelta,
    kind: StepKind,
    result: StepResult,
    *,
    last: bool,
    activate: bool,
) -> VersionStatus | None:
    """Record the step's end and what it means for the version, in one transaction.

    Returns the version's status afterwards, or None if ``worker`` no longer holds it.
    """
    log_sha256 = league.artifacts.put(result.log.encode("utf-8")) if result.log else None
    with unit_of_work(league.sessions) as session:
        if result.outcome is StepOutcome.FAILED:
            status = VersionStatus.REJECTED
            held = _held(session, version_id, worker, None, status=status, reason=result.detail)
        elif result.outcome is StepOutcome.ERROR:
            # Back in the queue, but not at once: its lease is kept for RETRY_AFTER, so a
            # lasting fault (Docker gone, a house bot missing) cannot keep every slot busy
            # validating one version again and again while no match is played.
            status = VersionStatus.UPLOADED
            held = _held(session, version_id, worker, RETRY_AFTER, status=status)
        elif not last:
            status = VersionStatus(_current(session, version_id))
            held = _held(session, version_id, worker, lease)
        else:
            held = _held(session, version_id, worker, None, reason="")
            status = _pass(session, version_id, activate) if held else VersionStatus.UPLOADED
        if not held:
            return None
        session.execute(
            update(ValidationStep)
            .where(ValidationStep.version_id == version_id, ValidationStep.step == kind)
            .values(
                outcome=result.outcome,
                detail=result.detail,
                log_sha256=log_sha256,
                finished=utcnow(),
            )
            .execution_options(synchronize_session=False)
        )
        return status


def _pass(session: Session, version_id: int, activate: bool) -> VersionStatus:
    """A version that passed every step: active, or retired (validated, not playing).

    It becomes active if its owner asked for that and no newer version of the bot is active
    already (two validations finishing out of order must not put the older one in play).
    """
    version = session.get(BotVersion, version_id, populate_existing=True)
    assert version is not None
    newer_active = session.scalar(
        select(BotVersion.id).where(
            BotVersion.bot_id == version.bot_id,
            BotVersion.status == VersionStatus.ACTIVE,
            BotVersion.number > version.number,
        )
    )
    if activate and newer_active is None:
        make_active(session, version.bot_id, version.id)
        return VersionStatus.ACTIVE
    version.status = VersionStatus.RETIRED
    session.flush()
    return VersionStatus.RETIRED


def _current(session: Session, version_id: int) -> str:
    status = session.scalar(select(BotVersion.status).where(BotVersion.id == version_id))
    if status is None:
        raise NotFound(f"no bot version with id {version_id}")
    return str(status)


def _status(league: League, version_id: int) -> VersionStatus:
    with unit_of_work(league.sessions) as session:
        return VersionStatus(_current(session, version_id))


@contextlib.contextmanager
def renewing(renew: Callable[[], bool], lease: dt.timedelta, name: str) -> Iterator[None]:
    """Call ``renew`` every third of ``lease``, on a thread named ``name``, while the block runs.

    ``renew`` answering False (the lease is lost) ends the renewals: the step's end will
    write nothing. An exception is logged, and the next renewal tries again.
    """
    stop = threading.Event()
    interval = max(lease.total_seconds() / _LEASE_RENEWALS, 0.05)

    def loop() -> None:
        while not stop.wait(interval):
            try:
                if not renew():
                    return
            except Exception:  # the next renewal, or the step's end, tries again
                logger.exception("renewing the lease of %s failed", name)

    thread = threading.Thread(target=loop, name=name, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
