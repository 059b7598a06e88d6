"""Run a ladder: plan → matches in parallel → files that survive interruption → standings.

The output directory (``--out``)::

    ladder.json      the parameters and the plan (a --resume must match them)
    matches.jsonl    one line per finished match, appended and fsynced as each one ends
    replays/         one replay per finished match (engine format, docs/replay.md)
    logs/            each bot instance's stdout/stderr, capped, per match
    standings.json   the table (also standings.csv), rewritten at the end of every run
    summary.txt      the printed table, the plan and the faults

A match is either finished (a line in ``matches.jsonl`` and its replay) or not started: an
interrupted match leaves at most a ``.partial`` replay, and ``--resume`` plays it again.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import json
import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arena._errors import PlanError, ResultsError
from arena._plan import PlannedMatch, plan_ladder
from arena._runner import MatchRecord, TimeControl, run_match
from arena._standings import BotStanding, MatchOutcome, compute_standings, write_standings
from arena.sandbox import Sandbox
from flipflop import BotManifest, MatchConfig, to_jsonable

__all__ = ["LadderResult", "LadderSpec", "load_outcomes", "run_ladder"]

_MATCH_DEFAULTS = MatchConfig()


@dataclass(frozen=True, slots=True)
class LadderSpec:
    """Everything that decides which matches a ladder plays and how."""

    bots: tuple[BotManifest, ...]
    matches: int
    table_size: int
    seed: int
    duplicate: bool = True
    stake: int = _MATCH_DEFAULTS.stake
    bankroll: int = _MATCH_DEFAULTS.bankroll
    hand_cap: int | None = _MATCH_DEFAULTS.hand_cap
    clock: TimeControl = field(default_factory=TimeControl)

    def config(self) -> MatchConfig:
        """The MatchConfig every match of this ladder uses."""
        return MatchConfig(
            seats=self.table_size, stake=self.stake, bankroll=self.bankroll, hand_cap=self.hand_cap
        )

    def plan(self) -> list[PlannedMatch]:
        """The matches this ladder plays (a pure function of the spec)."""
        return plan_ladder(
            [b.name for b in self.bots],
            matches=self.matches,
            table_size=self.table_size,
            seed=self.seed,
            duplicate=self.duplicate,
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
        }


@dataclass(frozen=True, slots=True)
class LadderResult:
    """What a run of the ladder produced."""

    standings: tuple[BotStanding, ...]
    records: tuple[dict[str, Any], ...]
    planned: int
    played_now: int
    interrupted: bool
    out_dir: Path


def _read_records(path: Path) -> list[dict[str, Any]]:
    """Finished matches; a torn last line (crash mid-write) is ignored, it will be replayed."""
    if not path.exists():
        return []
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(rec, dict) and "match_id" in rec:
            out.append(rec)
    return out


def load_outcomes(records: Sequence[dict[str, Any]]) -> list[MatchOutcome]:
    """The standings' view of finished-match records."""
    return [
        MatchOutcome(
            match_id=r["match_id"],
            bots=tuple(r["bots"]),
            placements=tuple(r["placements"]),
            bankrolls=tuple(r["bankrolls"]),
            start_bankroll=r["start_bankroll"],
            hands=r["hands"],
        )
        for r in records
    ]


def _prepare(spec: LadderSpec, out: Path, resume: bool) -> list[dict[str, Any]]:
    """Create or check the output directory; return the matches already finished."""
    meta = out / "ladder.json"
    if resume:
        if not meta.exists():
            raise PlanError(f"--resume: {out} holds no ladder to resume (no ladder.json)")
        try:
            saved = json.loads(meta.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as e:
            raise ResultsError(f"cannot read {meta}: {e}") from e
        if saved.get("identity") != spec.identity():
            raise PlanError(
                f"--resume: the options differ from the run saved in {out} "
                "(bots, --matches, --table-size, --seed, rules or time limits); "
                "use the same options, or another --out"
            )
        return _read_records(out / "matches.jsonl")
    if meta.exists():
        raise PlanError(
            f"{out} already holds a ladder; continue it with --resume or choose another --out"
        )
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ResultsError(f"cannot create {out}: {e}") from e
    return []


def run_ladder(
    spec: LadderSpec,
    out: Path,
    *,
    sandbox: Sandbox,
    jobs: int = 1,
    resume: bool = False,
    on_match: Callable[[dict[str, Any], int, int], None] | None = None,
    on_plan: Callable[[Sequence[PlannedMatch], int], None] | None = None,
) -> LadderResult:
    """Play the ladder's unfinished matches with ``jobs`` in parallel; write every file.

    ``on_plan(plan, already_done)`` is called once before play, ``on_match(record, done,
    total)`` after each finished match (from the calling thread). Ctrl-C (KeyboardInterrupt)
    stops the running matches without recording them, writes standings of what finished and
    returns with ``interrupted=True``.
    """
    if jobs < 1:
        raise PlanError(f"--jobs must be at least 1, got {jobs}")
    plan = spec.plan()
    done = _prepare(spec, out, resume)
    (out / "ladder.json").write_text(
        json.dumps(
            {
                "identity": spec.identity(),
                "sandbox": sandbox.isolation,
                "plan": [dataclasses.asdict(p) for p in plan],
            },
            indent=1,
        )
        + "\n",
        encoding="utf-8",
    )
    finished = {r["match_id"] for r in done}
    todo = [p for p in plan if p.match_id not in finished]
    if on_plan is not None:
        on_plan(plan, len(plan) - len(todo))
    by_name = {b.name: b for b in spec.bots}
    config = spec.config()
    (out / "replays").mkdir(exist_ok=True)
    records = list(done)
    cancel = threading.Event()
    scratch = Path(tempfile.mkdtemp(prefix="ffa-"))

    def play(p: PlannedMatch) -> MatchRecord:
        return run_match(
            p.match_id,
            p.seed,
            [by_name[b] for b in p.bots],
            config,
            sandbox=sandbox,
            workdir=scratch / p.match_id,
            replay_path=out / "replays" / f"{p.match_id}.jsonl",
            logs_dir=out / "logs" / p.match_id,
            clock=spec.clock,
            cancel=cancel,
        )

    interrupted = False
    played = 0
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="match")
    try:
        futures = {pool.submit(play, p): p for p in todo}
        pending = set(futures)
        while pending:
            # A timeout keeps the main thread responsive to Ctrl-C.
            finished_now, pending = concurrent.futures.wait(
                pending, timeout=0.5, return_when=concurrent.futures.FIRST_COMPLETED
            )
            for f in sorted(finished_now, key=lambda f: futures[f].index):
                rec = to_jsonable(f.result())
                # Only this (the calling) thread writes the file: no lock needed.
                with open(out / "matches.jsonl", "a", encoding="utf-8") as fh:
                    fh.write(json.dumps(rec) + "\n")
                    fh.flush()
                    os.fsync(fh.fileno())
                records.append(rec)
                played += 1
                if on_match is not None:
                    on_match(rec, len(records), len(plan))
    except KeyboardInterrupt:
        interrupted = True
    finally:
        cancel.set()  # running matches stop at their next decision, unrecorded
        pool.shutdown(wait=True, cancel_futures=True)
        sandbox.close()
        shutil.rmtree(scratch, ignore_errors=True)
    if interrupted:
        for partial in (out / "replays").glob("*.partial"):
            partial.unlink()
    rows = compute_standings(load_outcomes(records)) if records else []
    if rows:
        write_standings(rows, out)
    return LadderResult(
        standings=tuple(rows),
        records=tuple(sorted(records, key=lambda r: r["match_id"])),
        planned=len(plan),
        played_now=played,
        interrupted=interrupted,
        out_dir=out,
    )
