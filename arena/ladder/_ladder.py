"""Run a ladder: plan → matches in parallel → files that survive interruption → standings.

The output directory (``--out``, private to its owner: mode 0700)::

    ladder.json      the parameters and the plan (a --resume must match them)
    deal.key         the secret the decks come from (mode 0600; never sent to a bot)
    matches.jsonl    one line per played match, appended and fsynced as each one ends
    replays/         one replay per finished match (engine format, docs/replay.md)
    logs/            each bot instance's stdout/stderr, capped, per match
    standings.json   the table (also standings.csv), rewritten at the end of every run
    summary.txt      the printed table, the plan and the faults

A match is either recorded (a line in ``matches.jsonl``) or not started: an interrupted match
leaves at most a ``.partial`` replay, and ``--resume`` plays it again. A record's ``status``
says what it counts for:

- ``ok``: a finished match, counted in the standings;
- ``void``: a seat never started (docs/arena.md): shown, never counted. A void match is
  played once more with fresh starts; if that is void too, it stays void;
- ``error``: the arena itself failed in that match (a bug, not a bot's fault): recorded with
  the error, the ladder goes on, and ``--resume`` plays it again.

Decks (docs/security.md): each duplicate group's deal seed is a keyed function of the run's
deal key, so nothing a bot sees (match ids included) tells it anything about the cards.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hmac
import json
import os
import signal
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from arena._errors import PlanError, ResultsError
from arena.executors import Done, Executor, Job, LocalPool, PlannedMatch
from arena.ladder._plan import plan_ladder
from arena.ladder._records import (
    ResultsTally,
    StartsTally,
    iter_latest_records,
    outcome_of,
    record_status,
    tally_results,
)
from arena.ladder._standings import BotStanding, MatchOutcome, write_standings
from arena.match._deal import (
    deal_key_from_seed,
    load_deal_key,
    new_deal_key,
    save_deal_key,
)
from arena.match._runner import TimeControl
from arena.sandbox import Sandbox
from flipflop import BotManifest, MatchConfig, read_manifest, to_jsonable

if TYPE_CHECKING:
    from arena.executors._fleet_pool import FleetOptions

__all__ = [
    "LadderResult",
    "LadderSpec",
    "did_not_start",
    "load_outcomes",
    "read_records",
    "run_ladder",
]

_MATCH_DEFAULTS = MatchConfig()


@dataclass(frozen=True, slots=True)
class LadderSpec:
    """Everything that decides which matches a ladder plays and how.

    ``seed``: None (the default) deals from a fresh secret key kept in the run directory;
    an int makes the key a public function of it, so the run can be reproduced — and its
    deals predicted by whoever knows the seed.
    """

    bots: tuple[BotManifest, ...]
    matches: int
    table_size: int
    seed: int | None = None
    duplicate: bool = True
    owners_apart: bool = False
    """No two bots of one ``author`` at a table (the league's rule; docs/security.md)."""
    both_orders: bool = True
    """Groups seated so that each two bots sit in both orders (``plan_ladder``); False only
    for a run saved before 2026-12-08, which resumes with the plan it was started with."""
    stake: int = _MATCH_DEFAULTS.stake
    bankroll: int = _MATCH_DEFAULTS.bankroll
    hand_cap: int | None = _MATCH_DEFAULTS.hand_cap
    clock: TimeControl = field(default_factory=TimeControl)

    def config(self) -> MatchConfig:
        """The MatchConfig every match of this ladder uses."""
        return MatchConfig(
            seats=self.table_size, stake=self.stake, bankroll=self.bankroll, hand_cap=self.hand_cap
        )

    def deal_key(self) -> bytes:
        """The key of an explicit seed, or a fresh random one."""
        return new_deal_key() if self.seed is None else deal_key_from_seed(self.seed)

    def plan(self, key: bytes) -> list[PlannedMatch]:
        """The matches this ladder plays (a pure function of the spec and the deal key)."""
        tables = int.from_bytes(hmac.digest(key, b"flipflop-arena/tables", "sha256")[:6], "big")
        return plan_ladder(
            [b.name for b in self.bots],
            matches=self.matches,
            table_size=self.table_size,
            seed=tables,
            duplicate=self.duplicate,
            owners={b.name: b.author for b in self.bots if b.author} if self.owners_apart else None,
            both_orders=self.both_orders,
        )

    def identity(self) -> dict[str, Any]:
        """What must be equal for ``--resume`` to continue a run."""
        return {
            "bots": [
                {"name": b.name, "version": b.version, "path": str(b.path)} for b in self.bots
            ],
            "matches": self.matches,
            "table_size": self.table_size,
            "seed": self.seed,
            "duplicate": self.duplicate,
            "config": self.config().to_dict(),
            "clock": dataclasses.asdict(self.clock),
            # Only when set, so that a run saved before the option existed still resumes.
            **({"owners_apart": True} if self.owners_apart else {}),
            # Saved by every run since it existed: a run saved without it keeps one order.
            **({"both_orders": True} if self.both_orders else {}),
        }

    @classmethod
    def from_identity(cls, saved: Mapping[str, Any]) -> LadderSpec:
        """The spec a run was saved with (``arena run --resume`` with no other options).

        Raises:
            ResultsError: the saved run is unreadable, or a bot's directory is gone.
        """
        try:
            bots = []
            for b in saved["bots"]:
                path = Path(b["path"])
                if not path.is_dir():
                    raise ResultsError(f"the saved run's bot {b['name']} is gone from {path}")
                bots.append(read_manifest(path))
            config = saved["config"]
            return cls(
                bots=tuple(bots),
                matches=int(saved["matches"]),
                table_size=int(saved["table_size"]),
                seed=saved["seed"],
                duplicate=bool(saved["duplicate"]),
                owners_apart=bool(saved.get("owners_apart", False)),
                both_orders=bool(saved.get("both_orders", False)),
                stake=int(config["stake"]),
                bankroll=int(config["bankroll"]),
                hand_cap=config["hand_cap"],
                clock=TimeControl(**saved["clock"]),
            )
        except (KeyError, TypeError, ValueError) as e:
            raise ResultsError(f"the saved run's options cannot be read: {e!r}") from e


OPTION_NAMES = {
    "bots": "BOTS",
    "matches": "--matches",
    "table_size": "--table-size",
    "seed": "--seed",
    "duplicate": "--duplicate/--no-duplicate",
    "owners_apart": "--owners-apart",
    "config": "--stake, --bankroll or --hand-cap",
    "clock": "--decision-ms or --time-bank-ms",
}
"""The command-line option behind each part of a spec's identity, for error messages."""


@dataclass(frozen=True, slots=True)
class LadderResult:
    """What a run of the ladder produced.

    ``tally`` holds the standings and the summary's totals over the latest record of each
    match, read back from ``matches.jsonl`` as a stream (memory O(bots), not O(matches)).
    """

    tally: ResultsTally
    planned: int
    played_now: int
    interrupted: bool
    out_dir: Path
    starts: int = 0
    """Bot instances started by this run (kept ones play on: ``arena.match._hosts``)."""
    prestarted: int = 0
    """Of those, started while another match played, ahead of their own (``_prestart``)."""

    @property
    def standings(self) -> tuple[BotStanding, ...]:
        """The standings table, best first; bots that did not start last."""
        return self.tally.standings

    @property
    def did_not_start(self) -> Mapping[str, str]:
        """Every bot that never started in any match, with the reason."""
        return self.tally.did_not_start

    def count(self, status: str) -> int:
        """How many matches' latest record has ``status`` (``ok``, ``void``, ``error``)."""
        return self.tally.count(status)

    def records(self) -> list[dict[str, Any]]:
        """The latest record of each match, in match-id order (read from the file)."""
        return list(iter_latest_records(self.out_dir / "matches.jsonl"))


def read_records(path: Path) -> list[dict[str, Any]]:
    """Every record in ``matches.jsonl``, in file order, all in memory.

    For tests and tools: the ladder itself streams the file (``arena.ladder._records``). A torn last
    line (the arena died mid-write) is not a record.

    Raises:
        ResultsError: the file cannot be read.
    """
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return []
    except OSError as e:
        raise ResultsError(f"cannot read {path}: {e.strerror or e}") from e
    whole = data.rfind(b"\n") + 1
    out = []
    for line in data[:whole].decode("utf-8", "replace").splitlines():
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(rec, dict) and "match_id" in rec:
            out.append(rec)
    return out


def load_outcomes(records: Sequence[dict[str, Any]]) -> list[MatchOutcome]:
    """The standings' view of the records that count: finished, not void, not errors."""
    return [outcome_of(r) for r in records if record_status(r) == "ok"]


def did_not_start(records: Sequence[dict[str, Any]]) -> dict[str, str]:
    """Bots that never started in any of ``records``, each with the reason of its last try."""
    starts = StartsTally()
    for r in records:
        starts.add(r)
    return starts.result()


def _repair(path: Path) -> None:
    """Cut a torn last line (the arena died mid-write) off ``path``, reading only its tail.

    Raises:
        ResultsError: the file cannot be read or repaired.
    """
    try:
        with open(path, "r+b") as f:
            end = f.seek(0, os.SEEK_END)
            pos = end
            while pos > 0:
                step = min(65536, pos)
                f.seek(pos - step)
                chunk = f.read(step)
                cut = chunk.rfind(b"\n")
                if cut >= 0:
                    pos = pos - step + cut + 1
                    break
                pos -= step
            if pos < end:
                f.truncate(pos)
                f.flush()
                os.fsync(f.fileno())
    except FileNotFoundError:
        return
    except OSError as e:
        raise ResultsError(f"cannot repair the torn last line of {path}: {e}") from e


def _done(record: Mapping[str, Any]) -> bool:
    """True if a match's latest record needs no more play (ok, or void after its retry)."""
    return _next_attempt(record) == 0


def _next_attempt(record: Mapping[str, Any] | None) -> int:
    """The attempt to play a match at next, given its latest record; 0: none, it is done.

    A void match is played once more with fresh starts; an errored one (the arena's own
    failure) is played again by --resume; a missing one is played.
    """
    if record is None or record_status(record) == "error":
        return 1
    if record_status(record) == "void" and int(record.get("attempt", 1)) < 2:
        return 2
    return 0


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as e:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise ResultsError(f"cannot write {path}: {e.strerror or e}") from e


def _prepare(spec: LadderSpec, out: Path, resume: bool) -> tuple[dict[str, int], bytes]:
    """Create or check the output directory; return the matches' next attempts and the key.

    The attempts map each recorded match id to ``_next_attempt`` of its latest record (0:
    finished); a match not in it is played at attempt 1.
    """
    meta = out / "ladder.json"
    key_file = out / "deal.key"
    if resume:
        if not meta.exists():
            raise PlanError(f"--resume: {out} holds no ladder to resume (no ladder.json)")
        saved, wanted = read_saved(out), spec.identity()
        differ = [
            OPTION_NAMES.get(k, k)
            for k in sorted(set(saved) | set(wanted))
            if saved.get(k) != wanted.get(k)
        ]
        if differ:
            raise PlanError(
                f"--resume: {', '.join(differ)} differ from the run saved in {out}; "
                "give the same values, none at all (arena run --resume continues with the "
                "saved ones), or another --out"
            )
        _make_private(out)
        key = load_deal_key(key_file) if key_file.exists() else spec.deal_key()
        if not key_file.exists():
            save_deal_key(key_file, key)  # a run saved before deal keys existed
        results = out / "matches.jsonl"
        _repair(results)
        return {r["match_id"]: _next_attempt(r) for r in iter_latest_records(results)}, key
    if meta.exists():
        raise PlanError(
            f"{out} already holds a ladder; continue it with --resume or choose another --out"
        )
    try:
        out.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError as e:
        raise ResultsError(f"cannot create {out}: {e.strerror or e}") from e
    _make_private(out)
    key = spec.deal_key()
    if key_file.exists():
        key_file.unlink()  # left by a run that never wrote its ladder.json
    save_deal_key(key_file, key)
    return {}, key


def _make_private(out: Path) -> None:
    """Replays hold decks, and deal.key the key: no other user (no bot) may read them."""
    try:
        os.chmod(out, 0o700)
    except OSError as e:
        raise ResultsError(f"cannot make {out} private: {e.strerror or e}") from e


def read_saved(out: Path) -> dict[str, Any]:
    """The identity (options) saved in ``out/ladder.json``.

    Raises:
        PlanError: there is no saved ladder in ``out``.
        ResultsError: the file cannot be read or is not a saved ladder.
    """
    meta = out / "ladder.json"
    if not meta.exists():
        raise PlanError(f"--resume: {out} holds no ladder to resume (no ladder.json)")
    try:
        saved = json.loads(meta.read_text(encoding="utf-8"))
        identity = saved["identity"]
    except (OSError, json.JSONDecodeError, KeyError, TypeError) as e:
        raise ResultsError(f"cannot read {meta}: {e}") from e
    if not isinstance(identity, dict):
        raise ResultsError(f"cannot read {meta}: no saved options")
    if isinstance(identity.get("clock"), dict):
        # A run saved before a TimeControl field existed played by its default.
        identity["clock"] = {**dataclasses.asdict(TimeControl()), **identity["clock"]}
    return identity


def _rotations(plan: Sequence[PlannedMatch]) -> dict[str, int]:
    """Each match's place in its duplicate group, in plan order."""
    seen: dict[int, int] = {}
    out = {}
    for p in plan:
        out[p.match_id] = seen.get(p.group, 0)
        seen[p.group] = out[p.match_id] + 1
    return out


def _record(job: Job, done: Done) -> dict[str, Any]:
    p = job.planned
    head = {"match_id": p.match_id, "group": p.group, "attempt": job.attempt}
    if done.data is not None:
        rec: dict[str, Any] = dict(done.data)
    elif done.record is not None:
        rec = to_jsonable(done.record)
    else:
        return {**head, "status": "error", "bots": list(p.bots), "error": done.error}
    status = "void" if rec.pop("void") else "ok"
    return {**head, "status": status, **rec}


def run_ladder(
    spec: LadderSpec,
    out: Path,
    *,
    sandbox: Sandbox | None,
    jobs: int = 1,
    resume: bool = False,
    cancel: threading.Event | None = None,
    on_match: Callable[[dict[str, Any], int, int], None] | None = None,
    on_plan: Callable[[Sequence[PlannedMatch], int], None] | None = None,
    fleet: FleetOptions | None = None,
    prestart: bool = True,
) -> LadderResult:
    """Play the ladder's unfinished matches with ``jobs`` in parallel; write every file.

    With ``fleet``, a Celery fleet's workers play them instead (``arena.executors._fleet_pool``;
    ``sandbox`` and ``jobs`` are then unused): the same files, records and standings.

    ``on_plan(plan, already_done)`` is called once before play, ``on_match(record, done,
    total)`` after each recorded match (from the calling thread). Setting ``cancel`` (or
    Ctrl-C, KeyboardInterrupt) stops the running matches without recording them within about
    two seconds, writes the standings of what finished and returns with ``interrupted=True``.

    Raises:
        PlanError: bad parameters, or a --resume that does not match the saved run.
        ResultsError: the output cannot be written (a full disk, a read-only --out): what
            finished stays recorded, and --resume continues.
    """
    if jobs < 1:
        raise PlanError(f"--jobs must be at least 1, got {jobs}")
    attempts, key = _prepare(spec, out, resume)
    plan = spec.plan(key)
    _write_atomic(
        out / "ladder.json",
        json.dumps(
            {
                "identity": spec.identity(),
                "sandbox": _isolation(sandbox, fleet),
                "plan": [dataclasses.asdict(p) for p in plan],
            },
            indent=1,
        )
        + "\n",
    )
    rotation = _rotations(plan)
    todo = [Job(p, attempts.get(p.match_id, 1), rotation[p.match_id]) for p in plan]
    todo = [j for j in todo if j.attempt]
    finished = len(plan) - len(todo)
    if on_plan is not None:
        on_plan(plan, finished)
    try:
        (out / "replays").mkdir(exist_ok=True)
    except OSError as e:
        raise ResultsError(f"cannot create {out / 'replays'}: {e.strerror or e}") from e
    cancel = cancel or threading.Event()
    played, interrupted, write_error = 0, False, ""
    pool: Executor
    if fleet is not None:
        from arena.executors._fleet_pool import FleetPool  # Celery: only when used

        pool = FleetPool(spec.bots, spec.config(), spec.clock, plan, out, key, cancel, fleet)
    elif sandbox is None:
        raise PlanError("a ladder played here needs a sandbox")
    else:
        pool = local_pool(spec, out, sandbox, key, jobs, cancel, prestart=prestart)
    with pool:
        for job in todo:
            pool.submit(job)
        try:
            for result in pool.results():
                if result.write_error is not None:
                    write_error = _describe(result.write_error)
                    break
                if result.cancelled:
                    continue
                rec = _record(result.job, result)
                try:
                    _append(out / "matches.jsonl", rec)
                except OSError as e:
                    write_error = _describe(e)
                    break
                played += 1
                retry = _next_attempt(rec) if rec["status"] == "void" else 0
                if retry:
                    pool.submit(dataclasses.replace(result.job, attempt=retry))
                finished += _done(rec)
                if on_match is not None:
                    on_match(rec, finished, len(plan))
        except KeyboardInterrupt:
            cancel.set()
        interrupted = cancel.is_set() and not write_error
    with contextlib.suppress(OSError):
        for partial in (out / "replays").glob("*.partial"):
            partial.unlink()
    tally = tally_results(out / "matches.jsonl")
    if tally.standings:
        try:
            write_standings(tally.standings, out)
        except OSError as e:
            write_error = write_error or _describe(e)
    if write_error:
        raise ResultsError(
            f"{write_error}; the ladder stopped. {finished} of {len(plan)} matches are "
            f"recorded in {out}; continue with --resume once it can be written"
        )
    return LadderResult(
        tally=tally,
        planned=len(plan),
        played_now=played,
        interrupted=interrupted,
        out_dir=out,
        starts=pool.starts,
        prestarted=pool.prestarted,
    )


def local_pool(
    spec: LadderSpec,
    out: Path,
    sandbox: Sandbox,
    key: bytes,
    jobs: int,
    cancel: threading.Event,
    *,
    prestart: bool = True,
) -> LocalPool:
    """``jobs`` slots on this machine playing ``spec``'s matches into ``out``.

    ``prestart``: start each next match's bots while a slot plays (``arena.match._prestart``).
    """
    return LocalPool(
        spec.bots, spec.config(), spec.clock, out, sandbox, key, jobs, cancel, prestart=prestart
    )


def _isolation(sandbox: Sandbox | None, fleet: FleetOptions | None) -> str:
    if fleet is not None:
        return f"a Celery fleet's {fleet.sandbox_kind} sandboxes ({fleet.broker})"
    return sandbox.isolation if sandbox is not None else "none"


def _describe(e: OSError) -> str:
    where = f"{e.filename}: " if e.filename else ""
    return f"cannot write {where}{e.strerror or e}"


def _append(path: Path, record: Mapping[str, Any]) -> None:
    """Append one record as a line, fsynced; a failed write leaves at most a torn last line."""
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(record) + "\n")
        fh.flush()
        os.fsync(fh.fileno())


def install_interrupt(cancel: threading.Event) -> Callable[[], None]:
    """Make SIGINT and SIGTERM set ``cancel`` instead of raising; returns the undo.

    A second Ctrl-C raises KeyboardInterrupt as usual (for a ladder that will not stop).
    """
    previous = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}

    def handler(signum: int, frame: object) -> None:
        if cancel.is_set() and signum == signal.SIGINT:
            raise KeyboardInterrupt
        cancel.set()

    for s in previous:
        signal.signal(s, handler)

    def undo() -> None:
        for s, h in previous.items():
            signal.signal(s, h)

    return undo
