"""A sequential test between two bots: duplicate sets until one is shown better, or not.

``arena run A B C … --sprt A B --delta D`` plays **mirrored duplicate sets** (one deck seed,
every rotation of the seats, then every rotation again with A and B swapped: ``2 x table_size``
matches) of A, B and ``table_size - 2`` of the other bots in turn, and after
each set updates Wald's sequential probability ratio test (SPRT) on the set's **paired,
luck-adjusted** difference ``x = mean over the set's matches of (A's adjusted place - B's)``
(docs/standings.md; lower places are better):

- H1, "A better by at least D": the mean of ``x`` is ``-D``; H0, "not better": it is 0;
- ``x`` taken as Gaussian with an unknown variance, integrated out in each hypothesis (the
  scale-invariant prior ``ds/s`` on the sd ``s``), the log likelihood ratio after ``n`` sets is
  ``LLR = (n / 2) · ln(Σx² / Σ(x + D)²)`` (:func:`sprt_llr`; honest at the first sets, where a
  variance plugged in as if known is not);
- with error rates ``alpha`` (calling A better when it is not) and ``beta`` (missing a real
  D), the test decides "A better" once ``LLR >= ln(1 / alpha)`` (a likelihood ratio under
  H0 ever reaches ``1 / alpha`` with probability at most ``alpha``, Ville's inequality, where
  Wald's ``(1 - beta) / alpha`` promises only ``alpha / (1 - beta)``), "not better" once
  ``LLR <= ln(beta / (1 - alpha))`` (Wald's), never before ``min_sets`` sets (:data:`MIN_SETS`:
  the variance estimate needs them), and stops "undecided" after ``max_sets``.

Why mirrored: with rotations alone, B sits in the seat after A's at every table of the test.
That order is worth places: over 3,228 sets of counter against a copy of itself (3 seats,
greedy the third bot), the copy seated first was 0.030 places a set better, adjusted (standard
error 0.007; raw 0.036), and the test (then never before 20 such sets) called it better in
5 of 58 runs. Swapping A and B on the same decks makes the two orders count equally, so two
copies are exactly even.

Everything else is a ladder's (``arena.ladder._ladder``): bots kept up between matches, the run
directory and its secret deal key, ``matches.jsonl`` and replays, the standings of what was
played. A set counts only when all of its matches finished and count (a void match is played
once more, as in a ladder; a set with a match still void or failed is left out of the test).

``--resume`` continues an interrupted test: the sets are a pure function of the options, so
the test goes through them again from the first, taking each match's recorded result where
there is one and playing only what is missing (a match failed by an arena error is played
again); the sets, the LLR and the decision come out as if it had never stopped.
"""

from __future__ import annotations

import dataclasses
import json
import math
import statistics
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from arena._errors import PlanError, ResultsError
from arena.executors import Job, PlannedMatch
from arena.ladder._ladder import (
    LadderResult,
    LadderSpec,
    _append,
    _describe,
    _next_attempt,
    _prepare,
    _record,
    _write_atomic,
    local_pool,
)
from arena.ladder._records import iter_latest_records, tally_results
from arena.ladder._standings import write_standings
from arena.sandbox import Sandbox

__all__ = [
    "MIN_SETS",
    "SprtDecision",
    "SprtResult",
    "SprtSpec",
    "run_sprt",
    "saved_sprt",
    "set_matches",
    "sprt_llr",
]


MIN_SETS = 15
"""The sets a test plays before it may decide: 15 mirrored sets, 90 matches at 3 seats.

Real sets are skewed and heavier-tailed than a Gaussian, and a few sets' variance is then too
often an underestimate. Resampled with their mean taken out (``python benchmarks/separation.py
--resample``, 40,000 tests each way), the sets of counter against greedy called one of them
better in 5.20 % of tests free to stop at 10 sets, 4.55 % at 15, 4.15 % at 20 (alpha 5 %;
381 mirrored sets; 2,913 sets of rotations alone: 5.15, 4.72 and 4.20 %). 15 is the least of
these under alpha for both; ``test_sprt.py`` holds the sets. It costs the pairs far apart
most: greedy against random is decided at 15 sets where 10 would have done with 12 and 13.
"""


class SprtDecision(StrEnum):
    """What the sequential test concluded."""

    BETTER = "better"
    """A is better than B by at least D (H1 accepted)."""
    NOT_BETTER = "not better"
    """A is not better than B (H0 accepted)."""
    UNDECIDED = "undecided"
    """The set budget ran out (or the run was interrupted) before either bound."""


@dataclass(frozen=True, slots=True)
class SprtSpec:
    """The test: A against B, the difference D worth finding, its error rates and budget."""

    a: str
    b: str
    delta: float = 0.1
    alpha: float = 0.05
    beta: float = 0.05
    min_sets: int = MIN_SETS
    max_sets: int = 200
    mirrored: bool = True
    """Each set seats A and B in both orders (:func:`_set_plan`); False for tests saved before."""

    @property
    def upper(self) -> float:
        """The LLR at which A is called better: ``ln(1 / alpha)`` (module docstring)."""
        return math.log(1 / self.alpha)

    @property
    def lower(self) -> float:
        """The LLR at which A is called not better."""
        return math.log(self.beta / (1 - self.alpha))

    def check(self, spec: LadderSpec) -> None:
        """Refuse a test that cannot run with ``spec``'s bots and table.

        Raises:
            PlanError: A or B is not one of the bots, they are the same, the field is too
                small for the table, or a parameter is out of range.
        """
        names = [b.name for b in spec.bots]
        for who in (self.a, self.b):
            if who not in names:
                raise PlanError(f"--sprt: {who} is not one of the bots ({', '.join(names)})")
        if self.a == self.b:
            raise PlanError("--sprt: A and B must be two different bots")
        if len(names) - 2 < spec.table_size - 2:
            raise PlanError(
                f"--sprt: a table of {spec.table_size} needs {spec.table_size - 2} other "
                f"bots besides {self.a} and {self.b}; give more bots or a smaller --table-size"
            )
        if not self.delta > 0:
            raise PlanError(f"--delta must be positive (places), got {self.delta}")
        if not (0 < self.alpha < 0.5 and 0 < self.beta < 0.5):
            raise PlanError("the error rates must lie between 0 and 0.5")
        if self.max_sets < self.min_sets:
            raise PlanError(f"--max-sets must be at least {self.min_sets}")


@dataclass(frozen=True, slots=True)
class SprtResult:
    """What a sequential test played and concluded.

    Attributes:
        decision: better, not better, or undecided.
        sets: duplicate sets that counted in the test.
        matches: matches played (all sets, counted or not).
        mean_diff: mean per-set difference of adjusted places, A less B (negative: A better).
        sd: its standard deviation across sets (0 with fewer than two).
        llr: the final log likelihood ratio.
        ladder: the files and standings of everything played.
    """

    decision: SprtDecision
    sets: int
    matches: int
    mean_diff: float
    sd: float
    llr: float
    ladder: LadderResult


def sprt_llr(diffs: Sequence[float], delta: float) -> float:
    """The log likelihood ratio of H1 (mean ``-delta``) against H0 (mean 0) after ``diffs``.

    Gaussian with a variance nobody knows, integrated out of each hypothesis's likelihood
    under the scale-invariant prior ``ds/s`` on the sd ``s``: with ``S(m) = Σ (x - m)²``,
    ``∫ s^-n exp(-S(m) / 2s²) ds/s ∝ S(m)^(-n/2)``, so the ratio is
    ``(n / 2) · ln(S(0) / S(-delta))``. Where the variance is plugged in as if known, a small
    estimate after a few sets makes a large ratio: the sample variance called a bot better
    than an exact copy of itself in 7.3 % of simulated tests at alpha 5 %, Student's t's
    variance in 5.4 % (``test_sprt.py``); integrated, with the bound at ``ln(1 / alpha)``,
    4.3 to 5.0 % at every ratio of sd to ``delta`` tried with a 10-set minimum, 3.0 to 4.5 %
    with a 20-set minimum (docs/standings.md); on real sets, which are skewed, :data:`MIN_SETS`.
    Each sum is floored at ``n`` thousandths of ``delta²``, so that differences that are all
    0 (or all ``-delta``) do not divide by zero; 0 with fewer than two sets.
    """
    n = len(diffs)
    if n < 2:
        return 0.0
    floor = n * delta * delta / 1000
    s0 = max(math.fsum(x * x for x in diffs), floor)
    s1 = max(math.fsum((x + delta) ** 2 for x in diffs), floor)
    return (n / 2) * math.log(s0 / s1)


def _set_plan(spec: LadderSpec, sprt: SprtSpec, s: int) -> list[PlannedMatch]:
    """Set ``s``: A, B and the next of the other bots in turn, every seat rotation.

    Mirrored (``sprt.mirrored``), every rotation again with A and B swapped, on the same
    decks: rotations alone keep B in the seat after A's at every table, and that order is
    worth places (module docstring).
    """
    field = [b.name for b in spec.bots if b.name not in (sprt.a, sprt.b)]
    k = spec.table_size
    others = [field[(s * (k - 2) + i) % len(field)] for i in range(k - 2)]
    lineups = [[sprt.a, sprt.b, *others]]
    if sprt.mirrored:
        lineups.append([sprt.b, sprt.a, *others])
    seatings = [tuple(x[r:] + x[:r]) for x in lineups for r in range(k)]
    n = len(seatings)
    return [PlannedMatch(s * n + j, f"m{s * n + j:05d}", s, x) for j, x in enumerate(seatings)]


def set_matches(spec: LadderSpec, sprt: SprtSpec) -> int:
    """The matches of one of the test's sets (``_set_plan``'s)."""
    return len(_set_plan(spec, sprt, 0))


def _set_diff(records: Sequence[dict[str, Any]], sprt: SprtSpec) -> float | None:
    """The set's mean adjusted difference, A less B; None unless every match counts."""
    diffs = []
    for rec in records:
        if rec.get("status") != "ok" or not rec.get("luck"):
            return None
        adjusted = {
            bot: place - luck
            for bot, place, luck in zip(rec["bots"], rec["placements"], rec["luck"], strict=True)
        }
        diffs.append(adjusted[sprt.a] - adjusted[sprt.b])
    return sum(diffs) / len(diffs) if diffs else None


def saved_sprt(out: Path) -> SprtSpec | None:
    """The test saved in ``out/ladder.json``; None when the run there is a plain ladder.

    Raises:
        ResultsError: the file cannot be read, or its test is not one.
    """
    try:
        meta = json.loads((out / "ladder.json").read_text(encoding="utf-8"))
        saved = meta.get("sprt")
        # A test saved before mirrored sets existed played rotations alone.
        return None if saved is None else SprtSpec(**{"mirrored": False, **saved})
    except FileNotFoundError:
        return None
    except (OSError, json.JSONDecodeError, AttributeError, TypeError) as e:
        raise ResultsError(f"cannot read the test saved in {out / 'ladder.json'}: {e}") from e


def run_sprt(
    spec: LadderSpec,
    sprt: SprtSpec,
    out: Path,
    *,
    sandbox: Sandbox,
    jobs: int = 1,
    cancel: threading.Event | None = None,
    on_set: Callable[[int, float | None, float], None] | None = None,
    resume: bool = False,
    prestart: bool = True,
) -> SprtResult:
    """Play duplicate sets of ``sprt.a`` and ``sprt.b`` until the test decides.

    ``on_set(sets_counted, set_diff, llr)`` is called after each set (``set_diff`` None for
    a set that did not count). Setting ``cancel`` stops after the running set's matches are
    abandoned; the decision is then ``undecided``. ``resume`` continues the test saved in
    ``out`` (see the module docstring); its options and test must be the saved ones.
    ``prestart``: as :func:`~arena.ladder._ladder.run_ladder`'s.

    Raises:
        PlanError: the test cannot run with these bots (:meth:`SprtSpec.check`), or (with
            ``resume``) ``out`` holds no test, or another one.
        ResultsError: the output cannot be written.
    """
    sprt.check(spec)
    if jobs < 1:
        raise PlanError(f"--jobs must be at least 1, got {jobs}")
    if resume:
        saved = saved_sprt(out)
        if saved is None:
            raise PlanError(f"--resume: {out} holds a ladder, not a sequential test")
        if dataclasses.replace(saved, max_sets=sprt.max_sets) != sprt:  # more sets: fine
            raise PlanError(
                f"--resume: the test saved in {out} is {saved.a} against {saved.b} with "
                f"--delta {saved.delta:g}; give the same, or none at all (--max-sets may "
                "change)"
            )
    attempts, key = _prepare(spec, out, resume=resume)
    recorded: dict[str, dict[str, Any]] = {}
    if resume:
        recorded = {r["match_id"]: r for r in iter_latest_records(out / "matches.jsonl")}
    meta: dict[str, Any] = {
        "identity": spec.identity(),
        "sandbox": sandbox.isolation,
        "sprt": dataclasses.asdict(sprt),
        "plan": [],
    }
    # Written now, so that `arena logs` finds the run; again at the end, with the plan.
    _write_atomic(out / "ladder.json", json.dumps(meta, indent=1) + "\n")
    played: list[PlannedMatch] = []
    cancel = cancel or threading.Event()
    diffs: list[float] = []
    llr, decision, matches = 0.0, SprtDecision.UNDECIDED, 0
    (out / "replays").mkdir(exist_ok=True)
    with local_pool(spec, out, sandbox, key, jobs, cancel, prestart=prestart) as pool:
        for s in range(sprt.max_sets):
            plan = _set_plan(spec, sprt, s)
            played += plan
            # What a resumed test recorded counts as played; the rest is played now.
            latest = {p.match_id: recorded[p.match_id] for p in plan if p.match_id in recorded}
            for r, p in enumerate(plan):
                attempt = attempts.get(p.match_id, 1)
                if attempt:
                    pool.submit(Job(p, attempt, r))
            for done in pool.results():
                if done.write_error is not None:
                    raise ResultsError(f"{_describe(done.write_error)}; the test stopped")
                if done.cancelled:
                    continue
                rec = _record(done.job, done)
                _append(out / "matches.jsonl", rec)
                matches += 1
                latest[rec["match_id"]] = rec
                if rec["status"] == "void" and _next_attempt(rec) == 2:
                    pool.submit(Job(done.job.planned, 2, done.job.rotation))
            if cancel.is_set():
                break
            diff = _set_diff([latest[p.match_id] for p in plan if p.match_id in latest], sprt)
            if diff is not None:
                diffs.append(diff)
                llr = sprt_llr(diffs, sprt.delta)
            if on_set is not None:
                on_set(len(diffs), diff, llr)
            if len(diffs) >= sprt.min_sets:
                if llr >= sprt.upper:
                    decision = SprtDecision.BETTER
                    break
                if llr <= sprt.lower:
                    decision = SprtDecision.NOT_BETTER
                    break
        interrupted = cancel.is_set()  # leaving the pool sets it
    meta["plan"] = [dataclasses.asdict(p) for p in played]
    _write_atomic(out / "ladder.json", json.dumps(meta, indent=1) + "\n")
    tally = tally_results(out / "matches.jsonl")
    if tally.standings:
        write_standings(tally.standings, out)
    n = len(diffs)
    mean = statistics.fmean(diffs) if n else 0.0
    sd = statistics.stdev(diffs) if n > 1 else 0.0
    ladder = LadderResult(
        tally=tally,
        planned=len(played),
        played_now=matches,
        interrupted=interrupted,
        out_dir=out,
        starts=pool.starts,
    )
    return SprtResult(decision, n, matches, mean, sd, llr, ladder)
