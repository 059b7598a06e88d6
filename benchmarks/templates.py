"""Decision time of each ``arena new-bot`` template against the Python ``greedy``, in one ladder.

Run: ``python benchmarks/templates.py [--sandbox process|docker] [--matches N] [--hand-cap H]
[--keep DIR]``.

Generates the Python, Node.js, Go and C++ templates (``arena.client._scaffold.scaffold_bot``) in a
temporary directory, builds them as their READMEs say (Node.js: ``npm ci``; Go: ``make``; C++:
``make -j2``; the Docker sandbox builds its images from the arena's recipes, so there it
builds nothing on the host), and plays ONE ladder of the four and the bundled ``greedy``, all
five at a table of five with duplicate deals (``--matches`` is rounded up to whole sets of
five, every bot in every seat), one match at a time so that no two matches share the CPUs.

Then, from the replays, per bot: the number of decisions, the median and p95 of a decision's
wall time (``ms``: from the arena's call to the bot's answer, the round trip included) and of
its CPU time (``cpu_ms``: what the bot's cgroup used for it, absent where the arena cannot
tell), and each median as a multiple of greedy's. Prints a table and writes it as JSON
(``decision_times.json``) in the run's directory.

Needs node and npm (and the npm registry, for ``npm ci``), Go with Debian's grpc-go, and g++
with gRPC (see each template's README); with ``--sandbox docker``, a Docker engine.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from arena.cli import main as arena
from arena.client._scaffold import scaffold_bot

LANGUAGES = ["python", "node", "go", "cpp"]
BUILD: dict[str, list[str]] = {
    "node": ["npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund"],
    "go": ["make"],
    "cpp": ["make", "-j2"],
}
"""What each template's README says to run before the bot can be run from its directory."""
BASELINE = "greedy"
BUILD_S = 900


@dataclass(frozen=True, slots=True)
class Timing:
    """One bot's decision times over the ladder (ms); None where no decision had a CPU time."""

    bot: str
    decisions: int
    wall_median: float
    wall_p95: float
    cpu_median: float | None
    cpu_p95: float | None
    wall_ratio: float = 0.0
    cpu_ratio: float | None = None


def p95(samples: list[float]) -> float:
    """The 95th percentile (nearest rank) of some samples."""
    ordered = sorted(samples)
    return ordered[max(0, -(-95 * len(ordered) // 100) - 1)]


def build(language: str, bot: Path) -> None:
    """Run the template's build step in ``bot``, or exit saying what failed."""
    step = BUILD.get(language)
    if step is None:
        return
    t0 = time.perf_counter()
    done = subprocess.run(step, cwd=bot, capture_output=True, text=True, timeout=BUILD_S)
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-10:])
        sys.exit(f"{language}: `{' '.join(step)}` failed:\n{tail}")
    print(f"built {language} ({' '.join(step)}) in {time.perf_counter() - t0:.1f} s", flush=True)


def decision_times(replays: Path) -> dict[str, tuple[list[float], list[float]]]:
    """Per bot name, the wall and the CPU milliseconds of each decision in the replays.

    A decision is an ``action`` line with ``ms`` (a whole turn's later steps carry none).
    """
    out: dict[str, tuple[list[float], list[float]]] = {}
    for file in sorted(replays.glob("*.jsonl")):
        players: list[str] = []
        for line in file.read_text(encoding="utf-8").splitlines():
            event = json.loads(line)
            if event.get("type") == "header":
                players = event["players"]
            elif event.get("type") == "action" and "ms" in event:
                wall, cpu = out.setdefault(players[event["seat"]], ([], []))
                wall.append(float(event["ms"]))
                if event.get("cpu_ms") is not None:
                    cpu.append(float(event["cpu_ms"]))
    return out


def summarise(times: dict[str, tuple[list[float], list[float]]]) -> list[Timing]:
    """One :class:`Timing` per bot, the ratios taken to ``greedy``'s medians."""
    rows = [
        Timing(
            bot=name,
            decisions=len(wall),
            wall_median=statistics.median(wall),
            wall_p95=p95(wall),
            cpu_median=statistics.median(cpu) if cpu else None,
            cpu_p95=p95(cpu) if cpu else None,
        )
        for name, (wall, cpu) in sorted(times.items())
    ]
    base = next(r for r in rows if r.bot == BASELINE)
    return [
        Timing(
            **{
                **asdict(r),
                "wall_ratio": r.wall_median / base.wall_median,
                "cpu_ratio": (
                    None
                    if r.cpu_median is None or not base.cpu_median
                    else r.cpu_median / base.cpu_median
                ),
            }
        )
        for r in rows
    ]


def show(rows: list[Timing]) -> None:
    """Print the table."""

    def ms(x: float | None) -> str:
        return "-" if x is None else f"{x:.2f}"

    def ratio(x: float | None) -> str:
        return "-" if x is None else f"{x:.2f}x"

    head = ("bot", "decisions", "wall med", "wall p95", "cpu med", "cpu p95", "wall/greedy")
    print(f"{head[0]:<14}" + "".join(f"{h:>12}" for h in head[1:]) + f"{'cpu/greedy':>12}")
    for r in rows:
        cells = (
            str(r.decisions),
            ms(r.wall_median),
            ms(r.wall_p95),
            ms(r.cpu_median),
            ms(r.cpu_p95),
            ratio(r.wall_ratio),
            ratio(r.cpu_ratio),
        )
        print(f"{r.bot:<14}" + "".join(f"{c:>12}" for c in cells))
    print("(milliseconds per decision; ratios are of the medians)")


def main() -> None:
    """Generate, build, play one ladder, print the decision times."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sandbox", choices=["process", "docker"], default="process")
    p.add_argument("--matches", type=int, default=10, help="rounded up to sets of five")
    p.add_argument("--hand-cap", type=int, default=100, help="hands per match at most")
    p.add_argument("--seed", type=int, default=14)
    p.add_argument("--keep", type=Path, help="generate and play here, and keep it")
    args = p.parse_args()

    work = args.keep or Path(tempfile.mkdtemp(prefix="ffa-bench-tpl-"))
    try:
        bots = []
        for language in LANGUAGES:
            bot = scaffold_bot(f"tpl-{language}", work / "bots", language)
            if args.sandbox == "process":
                build(language, bot)
            bots.append(str(bot))
        out = work / "run"
        argv = [
            "run",
            *bots,
            BASELINE,
            "--sandbox",
            args.sandbox,
            "--table-size",
            "5",
            "--matches",
            str(args.matches),
            "--hand-cap",
            str(args.hand_cap),
            "--seed",
            str(args.seed),
            "--jobs",
            "1",
            "--out",
            str(out),
        ]
        t0 = time.perf_counter()
        code = arena.main(argv, prog_name="arena", standalone_mode=False) or 0
        print(f"ladder played in {time.perf_counter() - t0:.0f} s (exit {code})", flush=True)
        matches = [json.loads(x) for x in (out / "matches.jsonl").read_text().splitlines()]
        faults = [f for m in matches for f in m["faults"]]
        statuses = sorted({m["status"] for m in matches})
        print(f"{len(matches)} matches ({', '.join(statuses)}), {len(faults)} faults")
        rows = summarise(decision_times(out / "replays"))
        show(rows)
        (out / "decision_times.json").write_text(
            json.dumps([asdict(r) for r in rows], indent=2) + "\n", encoding="utf-8"
        )
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
