"""How many matches it takes to tell two bots apart: raw placement, adjusted, sequential test.

Run: ``python benchmarks/separation.py [--sets N] [--search-sets N] [--seed S] [--no-search]
[--jobs J]``,
or ``python benchmarks/separation.py --real-runs R [--real-delta D] [--jobs J]``.

The bundled bots play in-process, in ``--jobs`` processes, in duplicate sets: each deck seed
is played once per rotation of the line-up, so every bot takes every seat with the same decks
(as ``benchmarks/strength.py``), and every odd-numbered seed with the line-up reversed, as a
ladder seats its groups one way or the other (``plan_ladder``'s ``both_orders``). Two samples,
because the search bot is slow (about 12 s a 4-seat match on our loaded 2-core machine,
against well under 1 s a 3-seat match without it):

- ``--sets`` sets (seeds ``separation-3/<i>``) at 3-seat tables of random, greedy and counter:
  counter vs greedy;
- ``--search-sets`` sets (seeds ``separation-4/<i>``) at 4-seat tables of random, greedy,
  counter and search, the search bot on fixed work (``FLIPFLOP_SEARCH_SIMULATIONS``, 400
  play-outs a decision by default, so the figures depend only on the seeds): search vs greedy,
  and counter vs greedy again from the same matches. ``--no-search`` skips this sample.

The unit is the duplicate set: a bot's set value is its mean placement (1 = best) over the
set's rotations, raw or luck-adjusted (``arena.match._luck.adjusted_placements``: placement less the
places its deals were worth, docs/standings.md). For a pair (A, B), over ``n`` sets, with
``d`` the mean of A's set values less B's and ``sd`` sample standard deviations:

- **raw, overlap rule**: the sets needed for the two bots' separate 95 % intervals
  (mean ± 1.96·sd/√n) to stop overlapping: ``n = (1.96·(sd_A + sd_B)/|d|)²``;
- **raw, paired**: the sets needed for the 95 % interval of the paired difference to exclude
  zero: ``n = (1.96·sd_diff/|d|)²``, ``sd_diff`` the sd of the per-set differences;
- **adjusted, paired**: the same on adjusted placements, with the adjusted ``d`` and also with
  the raw ``d``. The luck term averages zero whatever the bots do, so both ``d`` estimate the
  same effect; at one ``d`` the ratio raw / adjusted is the variance ratio of the differences;
- **by match** (the unit of the issue's study, whose 423 raw and 199 adjusted matches were
  paired match by match): the paired rules with each match's own difference as the unit, as
  if every match had a deal of its own: ``n = (1.96·sd_match/|d|)²`` matches, at the raw
  ``d``. A duplicate set already cancels part of the raw luck (its rotations share their
  first deals), which is why raw needs fewer matches by set than by match, and it is the same
  luck that the adjustment removes;
- **sequential (SPRT)**: the arena's test on the per-set adjusted differences, H0: mean 0
  against H1: mean δ in the observed direction (δ = the observed adjusted ``|d|``, or
  ``--delta``), alpha = beta = 0.05, Gaussian with the variance integrated out as the arena's
  test does (``arena.ladder._sprt.sprt_llr``): after set ``k``,
  ``LLR = (k/2) · ln(Σx² / Σ(x - δ)²)``; stop for H1 at ``ln(1/alpha)``, for H0 at
  ``ln(beta/(1-alpha))`` (``SprtSpec``'s bounds), never before ``MIN_SETS`` (15) sets. It is
  simulated by resampling the observed differences with replacement (a fixed
  ``random.Random``), many runs;
  again with the differences centred on zero to count false alarms. Compared with the
  fixed-sample size for the same alpha, beta and δ: ``n = ((z_alpha + z_beta)·sd_diff/δ)²``,
  one-sided ``z`` = 1.645 each.

``--real-runs R`` plays the sequential test for real instead, ``R`` times each on fresh deck
seeds (``separation-sprt/<test>/<run>/<set>``), in mirrored sets as the arena plays them (every
rotation, then every rotation with A and B swapped), with the arena's own statistic and bounds
(``arena.ladder._sprt``: ``sprt_llr``, ``SprtSpec``'s alpha = beta = 0.05, 15 to 200 sets), for
H1 "A better by ``--real-delta``" (default 0.1 places): counter vs greedy at 3 seats (random
the third bot), and two copies of counter (greedy the third), where every "better" is a false
positive (``--real-null-only``: the copies alone). It prints ``separation sprt real:`` per
test (the decisions taken, the mean and 95th percentile of matches used, and the fixed raw
paired sample at the same alpha, beta and δ, from the raw set differences the runs played),
``separation real sets:`` per test (the standard deviations per set of every set the runs
played, raw and adjusted, and the fixed samples that would separate bots δ apart at 95 %),
and ``separation sprt false-positive:``.
``--resample FILE`` plays no match: it resamples the sets a ``--real-sets-out`` FILE holds,
each test's centred on 0, and prints ``separation sprt resampled:`` per test, the share of
``--runs`` tests each way that called one bot better at minimums of 10 to 25 sets.
Runs go to ``--jobs`` processes. ``--real-first F`` numbers the runs from ``F`` (fresh seeds
after an earlier ``--real-runs F``); ``--real-sets-out FILE`` writes every run's decision and
per-set differences, raw and adjusted, one JSON line a run.

Every ``n`` is printed in matches (sets x rotations). Prints a header with the sample, then
per pair one line each starting ``separation raw:``, ``separation adjusted:`` and
``separation sprt:``. Progress goes to stderr. The defaults take about seven minutes on our
2-core machine (most of it the 4-seat sample).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import multiprocessing
import os
import random
import statistics
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from arena.ladder._sprt import MIN_SETS, SprtDecision, SprtSpec, sprt_llr
from arena.match._luck import adjusted_placements
from flipflop import MatchConfig, load_bot, play_match

BOTS_DIR = Path(__file__).resolve().parent.parent / "bots"
DEFAULT_SIMULATIONS = 400
"""The search bot's play-outs per decision, as in ``benchmarks/strength.py``."""
DEFAULT_SETS = 60
DEFAULT_SEARCH_SETS = 5
ALPHA = BETA = 0.05
Z95 = statistics.NormalDist().inv_cdf(0.975)
Z_ALPHA = statistics.NormalDist().inv_cdf(1 - ALPHA)
Z_BETA = statistics.NormalDist().inv_cdf(1 - BETA)


@dataclass(frozen=True, slots=True)
class SetValues:
    """One duplicate set: per bot, its mean raw and adjusted placement over the rotations.

    ``matches`` keeps each rotation's own placements, raw and adjusted, per bot.
    """

    raw: dict[str, float]
    adjusted: dict[str, float]
    matches: tuple[tuple[dict[str, float], dict[str, float]], ...] = ()


@dataclass(frozen=True, slots=True)
class Sample:
    """A line-up played in duplicate sets, one per seed ``<prefix>/<i>``."""

    name: str
    lineup: tuple[str, ...]
    prefix: str
    sets: int

    def seeds(self, first: int) -> list[str]:
        """The deck seeds, from index ``first``."""
        return [f"{self.prefix}/{i}" for i in range(first, first + self.sets)]


@dataclass(frozen=True, slots=True)
class Sequential:
    """The simulated sequential test on one pair."""

    delta: float
    runs: int
    mean_sets: float
    correct: float
    """Share of runs under H1 (resampled differences) that accepted H1."""
    undecided: float
    """Share of runs under H1 cut off at the cap without a decision."""
    false_alarms: float
    """Share of runs under H0 (differences centred on zero) that accepted H1."""
    mean_sets_h0: float


def play_set(lineup: Sequence[str], seed: str, *, mirrored: bool = False) -> SetValues:
    """Play ``seed`` once per rotation of ``lineup``; each bot's mean placements over them.

    ``mirrored``: every rotation again with the first two bots swapped, as the arena's
    sequential test plays a set (``arena.ladder._sprt._set_plan``).
    """
    k = len(lineup)
    raw = dict.fromkeys(lineup, 0.0)
    adjusted = dict.fromkeys(lineup, 0.0)
    matches: list[tuple[dict[str, float], dict[str, float]]] = []
    lineups = [list(lineup)]
    if mirrored:
        lineups.append([lineup[1], lineup[0], *lineup[2:]])
    n = k * len(lineups)
    for r, seats in enumerate(x[i:] + x[:i] for x in lineups for i in range(k)):
        bots = [load_bot(BOTS_DIR / name.split("#")[0]) for name in seats]
        state = play_match(bots, MatchConfig(seats=k), seed, strict=True, match_id=f"{seed}/{r}")
        assert state.result is not None
        adj = adjusted_placements(state)
        matches.append(
            (
                {name: float(state.result.placements[s]) for s, name in enumerate(seats)},
                {name: adj[s] for s, name in enumerate(seats)},
            )
        )
        for s, name in enumerate(seats):
            raw[name] += state.result.placements[s] / n
            adjusted[name] += adj[s] / n
    return SetValues(raw, adjusted, tuple(matches))


def _ladder_set(job: tuple[tuple[str, ...], str, bool]) -> SetValues:
    """A set as a ladder's group: the line-up's rotations, the line-up reversed if asked.

    ``plan_ladder`` seats each group one way or the other (``both_orders``), so the fixed
    samples alternate: every odd-numbered seed plays the line-up reversed.
    """
    lineup, seed, reverse = job
    return play_set(lineup[::-1] if reverse else lineup, seed)


def variance_ratio_interval(
    raw: Sequence[float], adjusted: Sequence[float], rounds: int = 2000
) -> tuple[float, float]:
    """95 % interval of ``var(raw) / var(adjusted)``, the sets resampled in pairs."""
    rng = random.Random(len(raw))
    n = len(raw)
    got = []
    for _ in range(rounds):
        pick = [rng.randrange(n) for _ in range(n)]
        a = statistics.pvariance([raw[i] for i in pick])
        b = statistics.pvariance([adjusted[i] for i in pick])
        got.append(a / b if b else math.inf)
    got.sort()
    return got[int(0.025 * rounds)], got[int(0.975 * rounds) - 1]


def sets_needed(z: float, sd: float, d: float) -> float:
    """``(z·sd/|d|)²``: sets for a ``z`` interval of half-width ``|d|``; inf when ``d`` is 0."""
    return math.inf if d == 0 else (z * sd / d) ** 2


def sprt_run(
    xs: Sequence[float], delta: float, rng: random.Random, cap: int, min_sets: int = MIN_SETS
) -> tuple[int, bool | None]:
    """One sequential test on resampled ``xs`` for H1: mean ``delta`` (> 0) against 0.

    Never decided before ``min_sets`` sets (the arena's ``MIN_SETS`` unless told).

    Returns:
        The sets used, and True for H1, False for H0, None if cut off at ``cap`` sets.
    """
    test = SprtSpec("a", "b", delta=delta, alpha=ALPHA, beta=BETA)
    floor = delta * delta / 1000  # per set, as arena.ladder._sprt.sprt_llr floors its sums
    total = squares = 0.0
    k = 0
    while k < cap:
        for x in rng.choices(xs, k=min(256, cap - k)):
            k += 1
            total += x
            squares += x * x
            if k < min_sets:
                continue
            # sprt_llr of the flipped differences, from running sums: (k/2) ln(S(0) / S(delta))
            s0 = max(squares, k * floor)
            s1 = max(squares - 2 * delta * total + k * delta * delta, k * floor)
            llr = k / 2 * math.log(s0 / s1)
            if llr >= test.upper:
                return k, True
            if llr <= test.lower:
                return k, False
    return k, None


def sequential(diffs: Sequence[float], delta: float | None, runs: int, seed: int) -> Sequential:
    """Simulate the SPRT on bootstraps of ``diffs`` (per-set adjusted differences, A - B).

    The test looks for an effect in the observed direction, so the differences are flipped to
    make the observed mean positive. Runs are cut off at 20 times the fixed-sample size
    (counted as undecided, and not correct).
    """
    sign = -1.0 if statistics.fmean(diffs) < 0 else 1.0
    xs = [sign * x for x in diffs]
    d = delta if delta is not None else statistics.fmean(xs)
    if d <= 0:
        return Sequential(d, 0, math.inf, 0.0, 1.0, 0.0, math.inf)
    fixed = sets_needed(Z_ALPHA + Z_BETA, statistics.stdev(xs), d)
    cap = max(1000, math.ceil(20 * fixed))
    rng = random.Random(seed)
    h1 = [sprt_run(xs, d, rng, cap) for _ in range(runs)]
    centre = statistics.fmean(xs)
    h0 = [sprt_run([x - centre for x in xs], d, rng, cap) for _ in range(runs)]
    return Sequential(
        delta=d,
        runs=runs,
        mean_sets=statistics.fmean(n for n, _ in h1),
        correct=sum(v is True for _, v in h1) / runs,
        undecided=sum(v is None for _, v in h1) / runs,
        false_alarms=sum(v is True for _, v in h0) / runs,
        mean_sets_h0=statistics.fmean(n for n, _ in h0),
    )


@dataclass(frozen=True, slots=True)
class RealRun:
    """One sequential test played for real: its decision, sets used and per-set differences."""

    decision: str
    raw: tuple[float, ...]
    adjusted: tuple[float, ...]


def progress(what: str, start: float) -> None:
    """Overwrite stderr's line with ``what`` and the seconds since ``start``."""
    print(f"\r{what}, {time.perf_counter() - start:.0f} s", end="", file=sys.stderr, flush=True)


def real_run(job: tuple[str, tuple[str, ...], int, float]) -> RealRun:
    """Play run ``r`` of the test ``label`` (A and B the line-up's first two) to its decision.

    The decision rule is the arena's: ``sprt_llr`` on the adjusted differences, stopped at
    ``SprtSpec``'s bounds, never before its ``min_sets``, undecided at its ``max_sets``.
    """
    label, lineup, r, delta = job
    spec = SprtSpec(lineup[0], lineup[1], delta=delta)
    a, b = lineup[0], lineup[1]
    raw: list[float] = []
    adjusted: list[float] = []
    while len(adjusted) < spec.max_sets:
        values = play_set(lineup, f"separation-sprt/{label}/{r}/{len(adjusted)}", mirrored=True)
        raw.append(values.raw[a] - values.raw[b])
        adjusted.append(values.adjusted[a] - values.adjusted[b])
        if len(adjusted) < spec.min_sets:
            continue
        llr = sprt_llr(adjusted, delta)
        if llr >= spec.upper:
            return RealRun(SprtDecision.BETTER.value, tuple(raw), tuple(adjusted))
        if llr <= spec.lower:
            return RealRun(SprtDecision.NOT_BETTER.value, tuple(raw), tuple(adjusted))
    return RealRun(SprtDecision.UNDECIDED.value, tuple(raw), tuple(adjusted))


def _labelled_run(job: tuple[str, tuple[str, ...], int, float]) -> tuple[str, int, RealRun]:
    return job[0], job[2], real_run(job)


REAL_TESTS = {
    "counter vs greedy": ("counter", "greedy", "random"),
    "counter vs a copy": ("counter", "counter#2", "greedy"),
}
"""The tests ``--real-runs`` plays: a real pair, and two copies of one bot (the null)."""


def real_tests(
    runs: int,
    delta: float,
    jobs: int,
    *,
    null_only: bool = False,
    first: int = 0,
    sets_out: Path | None = None,
) -> list[str]:
    """``--real-runs``: each test played ``runs`` times (the null's alone: ``null_only``).

    The runs are numbered from ``first`` (their seeds say which). With ``sets_out``, each
    run's test, number, decision and set differences go there as it ends, a JSON line each.
    """
    tests = {k: v for k, v in REAL_TESTS.items() if not null_only or "copy" in k}
    work = [
        (label, lineup, r, delta)
        for label, lineup in tests.items()
        for r in range(first, first + runs)
    ]
    done: dict[str, list[RealRun]] = {label: [] for label in tests}
    start = time.perf_counter()
    with (
        multiprocessing.Pool(jobs) as pool,
        open(os.devnull if sets_out is None else sets_out, "w", encoding="utf-8") as saved,
    ):
        for label, r, got in pool.imap_unordered(_labelled_run, work):
            done[label].append(got)
            line = {"test": label, "run": r, "delta": delta, **dataclasses.asdict(got)}
            saved.write(json.dumps(line) + "\n")
            saved.flush()
            print(
                f"real runs: {sum(map(len, done.values()))}/{len(work)}, "
                f"{time.perf_counter() - start:.0f} s: {label}: {got.decision} after "
                f"{len(got.adjusted)} sets, raw {statistics.fmean(got.raw):+.3f}, adjusted "
                f"{statistics.fmean(got.adjusted):+.3f}",
                file=sys.stderr,
                flush=True,
            )
    lines = []
    for label, lineup in tests.items():
        played, k = done[label], 2 * len(lineup)  # matches a mirrored set
        used = sorted(len(g.adjusted) * k for g in played)
        decisions = Counter(g.decision for g in played)
        raw = [x for g in played for x in g.raw]
        adjusted = [x for g in played for x in g.adjusted]
        sd_raw, sd_adj = statistics.stdev(raw), statistics.stdev(adjusted)
        fixed_raw = sets_needed(Z_ALPHA + Z_BETA, sd_raw, delta)
        mean_used = statistics.fmean(used)
        lines.append(
            f"separation sprt real: {label} ({len(lineup)} seats, {', '.join(lineup)}, mirrored "
            f"sets of {k} matches; δ {delta}, "
            f"alpha = beta = {ALPHA}): {runs} run{'s' if runs != 1 else ''} decided "
            + ", ".join(f"{d} {decisions[d.value]}" for d in SprtDecision)
            + f"; matches used mean {mean_used:.0f}, 95th percentile "
            f"{used[min(len(used) - 1, math.ceil(0.95 * len(used)) - 1)]}; mean set difference "
            f"raw {statistics.fmean(raw):+.3f}, adjusted "
            f"{statistics.fmean(adjusted):+.3f}; fixed raw paired "
            f"sample at the same alpha, beta, δ {matches(fixed_raw, k)} matches "
            f"(raw fixed / SPRT {ratio(math.ceil(fixed_raw) * k, mean_used)})"
        )
        low, high = variance_ratio_interval(raw, adjusted)
        lines.append(
            f"separation real sets: {label}: {len(raw)} sets played by the runs; sd per set raw "
            f"{sd_raw:.3f}, adjusted {sd_adj:.3f} (variance {ratio(sd_raw**2, sd_adj**2)} "
            f"lower; 95 % by resampling the sets {low:.2f} to {high:.2f}); fixed sample "
            f"to separate bots {delta} places apart at 95 %: raw paired "
            f"{matches(sets_needed(Z95, sd_raw, delta), k)}, adjusted paired "
            f"{matches(sets_needed(Z95, sd_adj, delta), k)} matches"
        )
    null = done["counter vs a copy"]  # always played
    wrong = sum(g.decision == SprtDecision.BETTER.value for g in null)
    lines.append(
        f"separation sprt false-positive: {wrong / len(null):.1%} ({wrong} of {len(null)} runs "
        f"of counter against a copy of itself called it better; alpha {ALPHA})"
    )
    lines.append(f"real runs: {time.perf_counter() - start:.0f} s")
    return lines


RESAMPLED_MINIMA = (10, 15, 20, 25)
"""The minimums of sets ``--resample`` tries."""


def resampled(path: Path, runs: int) -> list[str]:
    """``--resample FILE``: the SPRT's false positives on the real sets that FILE holds.

    FILE is ``--real-sets-out``'s. Each test's adjusted set differences, pooled over its runs,
    are centred on 0: a null of exactly their shape. Resampled with replacement, the arena's
    test (its bounds, its ``max_sets``, each run's delta) is played ``runs`` times each way
    ("A better" and "B better" called) at each minimum of :data:`RESAMPLED_MINIMA`.
    """
    pools: dict[str, list[float]] = {}
    deltas: dict[str, float] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        run = json.loads(line)
        pools.setdefault(run["test"], []).extend(run["adjusted"])
        deltas[run["test"]] = run["delta"]
    lines = []
    start = time.perf_counter()
    for label, xs in pools.items():
        centre, sd = statistics.fmean(xs), statistics.stdev(xs)
        centred = [x - centre for x in xs]
        skew = statistics.fmean(x**3 for x in centred) / sd**3
        kurtosis = statistics.fmean(x**4 for x in centred) / sd**4
        cap = SprtSpec("a", "b").max_sets
        found = []
        for minimum in RESAMPLED_MINIMA:
            said, used = [], []
            for way, sign in (("A", -1.0), ("B", 1.0)):  # sprt_run's H1 is a mean of +delta
                pool = [sign * x for x in centred]
                rng = random.Random(f"{label}/{minimum}/{way}")
                got = [sprt_run(pool, deltas[label], rng, cap, minimum) for _ in range(runs)]
                said.append(sum(v is True for _, v in got) / runs)
                used.append(statistics.fmean(k for k, _ in got))
                progress(f"resampled: {label}, at least {minimum} sets, {way} better", start)
            found.append(
                f"at least {minimum} sets: A called better {said[0]:.2%}, B {said[1]:.2%}, "
                f"mean sets {statistics.fmean(used):.1f}"
            )
        lines.append(
            f"separation sprt resampled: {label}: {len(xs):,} real sets centred on 0 (mean "
            f"was {centre:+.4f}; sd {sd:.3f}, skewness {skew:+.3f}, kurtosis {kurtosis:.2f}); "
            f"δ {deltas[label]}, alpha = beta = {ALPHA}, at most {cap} sets, {runs:,} tests "
            "each way: " + "; ".join(found)
        )
    print(file=sys.stderr)
    return lines


def matches(sets: float, rotations: int) -> str:
    """Sets as a whole number of matches."""
    return "inf" if math.isinf(sets) else f"{math.ceil(sets) * rotations:,}"


def ratio(a: float, b: float) -> str:
    """``a / b`` as ``1.23x``."""
    return "n/a" if b == 0 or math.isinf(a) or math.isinf(b) else f"{a / b:.2f}x"


def report(
    a: str,
    b: str,
    values: Sequence[SetValues],
    rotations: int,
    delta: float | None,
    runs: int,
    sample: str,
) -> list[str]:
    """The three ``separation`` lines for ``a`` against ``b``, after a line of the inputs."""
    raw_a = [v.raw[a] for v in values]
    raw_b = [v.raw[b] for v in values]
    raw = [x - y for x, y in zip(raw_a, raw_b, strict=True)]
    adj = [v.adjusted[a] - v.adjusted[b] for v in values]
    d_raw, d_adj = statistics.fmean(raw), statistics.fmean(adj)
    sd_a, sd_b = statistics.stdev(raw_a), statistics.stdev(raw_b)
    sd_raw, sd_adj = statistics.stdev(raw), statistics.stdev(adj)
    overlap = sets_needed(Z95, sd_a + sd_b, d_raw)
    paired = sets_needed(Z95, sd_raw, d_raw)
    adjusted = sets_needed(Z95, sd_adj, d_adj)
    adjusted_at_raw_d = sets_needed(Z95, sd_adj, d_raw)
    by_match_raw = [r[a] - r[b] for v in values for r, _ in v.matches]
    by_match_adj = [j[a] - j[b] for v in values for _, j in v.matches]
    match_raw = sets_needed(Z95, statistics.stdev(by_match_raw), d_raw)
    match_adj = sets_needed(Z95, statistics.stdev(by_match_adj), d_raw)
    seq = sequential(adj, delta, runs, seed=len(values))
    fixed_raw = sets_needed(Z_ALPHA + Z_BETA, sd_raw, seq.delta)
    fixed_adj = sets_needed(Z_ALPHA + Z_BETA, sd_adj, seq.delta)
    pair = f"{a} vs {b} ({sample})"
    low, high = variance_ratio_interval(raw, adj)
    return [
        f"{pair}: d (A - B, places, lower is better) raw {d_raw:+.3f}, adjusted {d_adj:+.3f}; "
        f"sd per set {a} {sd_a:.3f}, {b} {sd_b:.3f}; sd of differences raw {sd_raw:.3f}, "
        f"adjusted {sd_adj:.3f} (variance {ratio(sd_raw**2, sd_adj**2)} lower; 95 % by "
        f"resampling the sets {low:.2f} to {high:.2f})",
        f"separation raw: {pair}: overlap rule {matches(overlap, rotations)} matches, "
        f"paired {matches(paired, rotations)} matches (95 %, d {d_raw:+.3f}); "
        f"paired by match (the issue's study's unit: as if every match had its own deal) "
        f"{matches(match_raw, 1)} matches",
        f"separation adjusted: {pair}: paired {matches(adjusted, rotations)} matches at the "
        f"adjusted d {d_adj:+.3f}, {matches(adjusted_at_raw_d, rotations)} at the raw d; "
        f"raw paired / adjusted {ratio(paired, adjusted)} (each its own d), "
        f"{ratio(paired, adjusted_at_raw_d)} (same d); by match: "
        f"{matches(match_adj, 1)} matches at the raw d, raw / adjusted "
        f"{ratio(match_raw, match_adj)}",
        f"separation sprt: {pair}: mean {seq.mean_sets * rotations:,.0f} matches to a decision "
        f"(δ {seq.delta:.3f}, alpha = beta = {ALPHA}, at least {MIN_SETS} sets, "
        f"{seq.runs} bootstrap runs), correct {seq.correct:.1%}, "
        f"undecided {seq.undecided:.1%}; under H0 false alarms {seq.false_alarms:.1%}, "
        f"mean {seq.mean_sets_h0 * rotations:,.0f} matches; "
        f"fixed sample at the same alpha, beta, δ: raw paired {matches(fixed_raw, rotations)}, "
        f"adjusted {matches(fixed_adj, rotations)} matches; "
        f"raw fixed / SPRT {ratio(fixed_raw, seq.mean_sets)}, "
        f"adjusted fixed / SPRT {ratio(fixed_adj, seq.mean_sets)}",
    ]


def main() -> None:
    """Play the sets, then print the matches each method needs."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sets",
        type=int,
        default=DEFAULT_SETS,
        help=f"duplicate sets (deck seeds) to play (default {DEFAULT_SETS})",
    )
    parser.add_argument(
        "--search-sets",
        type=int,
        default=DEFAULT_SEARCH_SETS,
        help=f"duplicate sets at the 4-seat table with search (default {DEFAULT_SEARCH_SETS})",
    )
    parser.add_argument("--seed", type=int, default=0, help="first seed index (default 0)")
    parser.add_argument(
        "--no-search",
        action="store_true",
        help="skip the 4-seat sample with search: counter vs greedy at 3 seats only",
    )
    parser.add_argument(
        "--simulations",
        type=int,
        default=DEFAULT_SIMULATIONS,
        help=f"the search bot's play-outs per decision (default {DEFAULT_SIMULATIONS})",
    )
    parser.add_argument(
        "--delta", type=float, help="the SPRT's effect δ in places (default: the observed |d|)"
    )
    parser.add_argument(
        "--runs", type=int, default=2000, help="bootstrap runs of the SPRT (default 2000)"
    )
    parser.add_argument(
        "--real-runs",
        type=int,
        metavar="R",
        help="play the sequential test for real, R times per test, instead of the samples",
    )
    parser.add_argument(
        "--real-delta",
        type=float,
        default=0.1,
        help="the real tests' δ in places (default 0.1, as arena run --sprt)",
    )
    parser.add_argument(
        "--real-null-only",
        action="store_true",
        help="play only the two copies of one bot (the false-positive rate)",
    )
    parser.add_argument(
        "--real-first",
        type=int,
        default=0,
        metavar="F",
        help="number the real runs from F, for seeds no earlier run played (default 0)",
    )
    parser.add_argument(
        "--real-sets-out",
        type=Path,
        metavar="FILE",
        help="write each real run's decision and set differences to FILE (JSON lines)",
    )
    parser.add_argument(
        "--resample",
        type=Path,
        metavar="FILE",
        help="instead of playing, the false positives of the SPRT on the real sets of FILE "
        "(written by --real-sets-out), centred on 0 and resampled --runs times each way",
    )
    parser.add_argument("--jobs", type=int, default=2, help="processes to play in (default 2)")
    args = parser.parse_args()
    if args.resample is not None:
        if args.runs < 1:
            parser.error("--runs must be positive")
        for line in resampled(args.resample, args.runs):
            print(line)
        return
    if args.real_runs is not None:
        if args.real_runs < 1 or args.real_delta <= 0 or args.jobs < 1:
            parser.error("--real-runs, --real-delta and --jobs must be positive")
        if args.real_first < 0:
            parser.error("--real-first must not be negative")
        for line in real_tests(
            args.real_runs,
            args.real_delta,
            args.jobs,
            null_only=args.real_null_only,
            first=args.real_first,
            sets_out=args.real_sets_out,
        ):
            print(line)
        return
    if args.sets < 2 or (args.search_sets < 2 and not args.no_search):
        parser.error("--sets and --search-sets must be at least 2")
    if args.jobs < 1:
        parser.error("--jobs must be positive")
    if args.simulations < 1:
        parser.error("--simulations must be positive")
    if args.delta is not None and args.delta <= 0:
        parser.error("--delta must be positive")

    os.environ["FLIPFLOP_SEARCH_SIMULATIONS"] = str(args.simulations)  # read at load_bot
    samples = [
        Sample("3 seats", ("random", "greedy", "counter"), "separation-3", args.sets),
    ]
    if not args.no_search:
        samples.append(
            Sample(
                "4 seats",
                ("random", "greedy", "counter", "search"),
                "separation-4",
                args.search_sets,
            )
        )
    start = time.perf_counter()
    played: list[list[SetValues]] = []
    with multiprocessing.Pool(args.jobs) as pool:  # the environment above is inherited
        for sample in samples:
            values: list[SetValues] = []
            jobs = [
                (sample.lineup, seed, (args.seed + i) % 2 == 1)
                for i, seed in enumerate(sample.seeds(args.seed))
            ]
            for got in pool.imap(_ladder_set, jobs):
                values.append(got)
                progress(f"{sample.name}: {len(values)}/{sample.sets} sets", start)
            print(file=sys.stderr)
            played.append(values)
    play_seconds = time.perf_counter() - start

    for sample in samples:
        seeds = sample.seeds(args.seed)
        search = (
            f", search on fixed work, {args.simulations} simulations"
            if "search" in sample.lineup
            else ""
        )
        print(
            f"{sample.name}: {sample.sets} duplicate sets x {len(sample.lineup)} rotations = "
            f"{sample.sets * len(sample.lineup)} matches of {', '.join(sample.lineup)}{search}; "
            f"seeds {seeds[0]} ... {seeds[-1]}; MatchConfig defaults otherwise"
        )
    for sample, values in zip(samples, played, strict=True):
        pairs = [("counter", "greedy")]
        if "search" in sample.lineup:
            pairs.insert(0, ("search", "greedy"))
        for a, b in pairs:
            for line in report(
                a, b, values, len(sample.lineup), args.delta, args.runs, sample.name
            ):
                print(line)
    print(f"played in {play_seconds:.0f} s, {time.perf_counter() - start:.0f} s in all")


if __name__ == "__main__":
    main()
