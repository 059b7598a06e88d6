"""What a slow-playing or flooding bot costs a small ladder, as ratios to a quiet one.

Run: ``python benchmarks/floods.py [--matches N] [--sandbox process|docker|both]``.

Each scenario plays the same ``N`` matches (3 seats, bankroll 1000, at most 200 hands, seeds
1..N) in a fresh child process, an adversary in seat 0 and the bundled ``random`` and
``greedy`` in seats 1 and 2, and is compared with its quiet twin: the same adversary told not
to attack, so both play the same default game and the same decisions:

- ``slowplay``: every decision answered 20 ms before its deadline (quiet twin: at once);
  measured: the ladder's wall time, against the bound the wall-clock cap promises
  (per match at most the cap at its decisions, one deadline and the time bank longer);
- ``logflood``: 64 KB lines on stdout and stderr without end (twin: none);
- ``pingflood``: HTTP/2 PING frames between the server's frames (twin: the same relay, no
  PINGs); under Docker the arena's relay (``arena/match/_relay.py``) cuts it off at its first
  flood, the process sandbox dials its bots directly and is not guarded.

For the floods: the arena process's CPU seconds (``getrusage``) and peak RSS (``VmHWM``), and
under Docker the CPU of ``dockerd``, ``containerd`` and the ``containerd-shim`` processes (from
``/proc``, the whole engine: run it on a quiet machine). The clock is ``decision_ms=200``,
``time_bank_ms=2000`` and the default cap (``TimeControl.seat_wall_ms``).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from arena.match._runner import WALL_SHARE, TimeControl, run_match  # noqa: E402 - after the path is set
from arena.sandbox import ProcessSandbox, Sandbox  # noqa: E402
from flipflop import MatchConfig, read_manifest  # noqa: E402

ADVERSARIES = REPO / "tests" / "arena" / "sandbox" / "adversaries"
CLOCK = TimeControl(decision_ms=200, time_bank_ms=2000)
CONFIG = MatchConfig(seats=3, bankroll=1000, hand_cap=200)
SCENARIOS: dict[str, tuple[str, dict[str, Any], dict[str, Any]]] = {
    # name: (adversary, its attack, its quiet twin's)
    "slowplay": ("slowplay", {"margin_ms": 20}, {"margin_ms": 100_000}),
    "logflood": ("logflood", {}, {"limit_mb": 0}),
    "pingflood": ("pingflood", {"batch": 512}, {"batch": 0}),
}
_ENGINE = ("dockerd", "containerd", "containerd-shim", "containerd-shim-runc-v2")


def engine_cpu_s() -> float:
    """CPU seconds used so far by the Docker engine's processes on this machine."""
    total = 0.0
    ticks = os.sysconf("SC_CLK_TCK")
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", encoding="ascii", errors="replace") as fh:
                text = fh.read()
        except OSError:
            continue
        name = text[text.find("(") + 1 : text.rfind(")")]
        if name in _ENGINE or name.startswith("containerd-shim"):
            fields = text.rpartition(")")[2].split()
            total += (int(fields[11]) + int(fields[12])) / ticks
    return total


def peak_rss_mb() -> float:
    """This process's peak resident memory (MB)."""
    with open("/proc/self/status", encoding="ascii") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0


def play(kind: str, adversary: str, attack: dict[str, Any], matches: int) -> dict[str, Any]:
    """Play the ladder in this process; what it cost."""
    scratch = Path(tempfile.mkdtemp(prefix="ffa-fl-"))
    bot_dir = scratch / adversary
    shutil.copytree(ADVERSARIES / adversary, bot_dir)
    (bot_dir / "attack.json").write_text(json.dumps(attack), encoding="utf-8")
    bots = [read_manifest(bot_dir), read_manifest(REPO / "bots" / "random")]
    bots.append(read_manifest(REPO / "bots" / "greedy"))
    box: Sandbox
    if kind == "docker":
        from arena.sandbox._docker import DockerSandbox

        box = DockerSandbox(log=lambda message: None)
        box.prepare(bots)
    else:
        box = ProcessSandbox()
    faults: list[str] = []
    bound_s = 0.0  # what the adversary's seat may add: the cap at its decisions, one more, the bank
    usage = resource.getrusage(resource.RUSAGE_SELF)
    cpu0 = usage.ru_utime + usage.ru_stime
    engine0 = engine_cpu_s() if kind == "docker" else 0.0
    t0 = time.perf_counter()
    try:
        for i in range(matches):
            record = run_match(
                f"m{i}",
                i + 1,
                bots,
                CONFIG,
                sandbox=box,
                workdir=scratch / f"w{i}",
                replay_path=scratch / f"m{i}.jsonl",
                logs_dir=scratch / f"logs{i}",
                clock=CLOCK,
            )
            faults += [f"{f.kind.value}: {f.detail[:120]}" for f in record.faults]
            made = record.seats[0].decisions
            bound_s += (CLOCK.seat_wall_ms(made) + CLOCK.decision_ms + CLOCK.time_bank_ms) / 1000
    finally:
        box.close()
    seconds = time.perf_counter() - t0
    usage = resource.getrusage(resource.RUSAGE_SELF)
    shutil.rmtree(scratch, ignore_errors=True)
    return {
        "seconds": seconds,
        "cpu_s": usage.ru_utime + usage.ru_stime - cpu0,
        "rss_mb": peak_rss_mb(),
        "engine_cpu_s": engine_cpu_s() - engine0 if kind == "docker" else 0.0,
        "faults": faults,
        "bound_s": bound_s,
    }


def measure(kind: str, adversary: str, attack: dict[str, Any], matches: int) -> dict[str, Any]:
    """:func:`play` in a fresh child process, so that its peak memory is its own."""
    done = subprocess.run(
        [sys.executable, __file__, "--child", kind, adversary, json.dumps(attack), str(matches)],
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    """Measure every scenario; print one line each with the ratios to its quiet twin."""
    if sys.argv[1:2] == ["--child"]:
        kind, adversary, attack_json, matches = sys.argv[2:6]
        print(json.dumps(play(kind, adversary, json.loads(attack_json), int(matches))))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--matches", type=int, default=2)
    parser.add_argument("--sandbox", choices=("process", "docker", "both"), default="process")
    parser.add_argument("--only", choices=sorted(SCENARIOS), nargs="*", default=sorted(SCENARIOS))
    args = parser.parse_args()
    kinds = ("process", "docker") if args.sandbox == "both" else (args.sandbox,)
    n = args.matches
    cap_s = CLOCK.seat_wall_ms() / 1000
    print(
        f"{n} matches; clock {CLOCK}; wall-clock cap per bot and match {cap_s:g} s, "
        f"+{CLOCK.decision_ms * WALL_SHARE / 1000:g} s per decision it makes"
    )
    for kind in kinds:
        for name in args.only:
            adversary, attack, twin = SCENARIOS[name]
            quiet = measure(kind, adversary, twin, n)
            loud = measure(kind, adversary, attack, n)
            line = (
                f"{kind:7} {name:9} wall {loud['seconds']:6.1f} s / {quiet['seconds']:5.1f} s "
                f"= {loud['seconds'] / quiet['seconds']:5.2f}x  "
                f"arena CPU {loud['cpu_s']:5.2f} / {quiet['cpu_s']:5.2f} s "
                f"= {loud['cpu_s'] / quiet['cpu_s']:4.2f}x  "
                f"peak RSS {loud['rss_mb']:4.0f} / {quiet['rss_mb']:4.0f} MB "
                f"= {loud['rss_mb'] / quiet['rss_mb']:4.2f}x"
            )
            if kind == "docker":
                line += f"  engine CPU {loud['engine_cpu_s']:5.2f} / {quiet['engine_cpu_s']:5.2f} s"
            print(line)
            if name == "slowplay":
                extra = loud["seconds"] - quiet["seconds"]
                bound = loud["bound_s"]
                print(f"{'':17} {extra:.1f} s longer; the cap's bound: {bound:.1f} s")
            kinds_of = sorted({f.split(":")[0] for f in loud["faults"]})
            print(f"{'':17} faults: {len(loud['faults'])} {kinds_of} {loud['faults'][:1]}")


if __name__ == "__main__":
    main()
