"""What a kept bot costs while it waits between matches, running and paused.

Run: ``python benchmarks/idle.py [--bots K] [--seconds W]``. Starts ``K`` trivial bots (the
default ``Bot``) in each sandbox there is (the process sandbox; Docker under runc and under
gVisor's runsc where the engine has them), has each play one decision, then measures the CPU
time their host processes use over ``W`` seconds of waiting: every process whose command line
names the container (gVisor's sentry and gofer, the shim) or descends from the bot's process,
from ``/proc``. Then it pauses them (``RunningBot.pause``, what ``BotHost``'s freezer does),
measures again, resumes them, and times the resume and the first decision after it.

Prints, per sandbox, the idle and paused cost of one bot in per cent of a core, and the resume
latency; the target (issue 27): a kept bot at most 0.1 % of a core.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from arena.sandbox import ProcessSandbox, RunningBot, Sandbox
from arena.sandbox._docker import DockerSandbox, docker_available
from flipflop import BotClient, MatchInfo

HERE = Path(__file__).resolve().parent


def _sibling(name: str) -> Any:
    """Another benchmark's module (they are scripts, not a package)."""
    spec = importlib.util.spec_from_file_location(name, HERE / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_SANDBOX = _sibling("sandbox")  # trivial_bot, mid_hand, QUIET

_TICK = os.sysconf("SC_CLK_TCK")


def _parents() -> dict[int, int]:
    out = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", encoding="ascii") as f:
                    out[int(entry)] = int(f.read().rpartition(")")[2].split()[1])
            except OSError:
                continue
    return out


def _processes(bot: RunningBot) -> set[int]:
    """The host processes that run ``bot``: named by its container, or under its process."""
    roots: set[int] = set()
    inner: Any = getattr(bot, "inner", bot)
    container = getattr(inner, "container", None)
    if container is not None:
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    if str(container.id).encode() in f.read():
                        roots.add(int(entry))
            except OSError:
                continue
    else:
        roots.add(inner.proc.pid)
    parents = _parents()
    found, grew = set(roots), True
    while grew:
        grew = False
        for child, parent in parents.items():
            if parent in found and child not in found:
                found.add(child)
                grew = True
    return found


def _cpu(pids: set[int]) -> float:
    """CPU seconds of ``pids`` so far (user and system, with their reaped children)."""
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat", encoding="ascii") as f:
                fields = f.read().rpartition(")")[2].split()
        except OSError:
            continue
        total += sum(int(x) for x in fields[11:15])
    return total / _TICK


def measure(label: str, sandbox: Sandbox, bots: int, seconds: float, scratch: Path) -> None:
    """Print one sandbox's line: idle and paused cost per bot, resume latency."""
    state, obs = _SANDBOX.mid_hand()
    legal = state.legal_actions()
    players = tuple(f"p{s}" for s in range(state.config.seats))
    info = MatchInfo("bench", obs.seat, players, state.config, 1000, 10000)
    manifest = _SANDBOX.trivial_bot(scratch / "bot")
    running = [sandbox.start(manifest, scratch / f"{label}{i}", f"idle{i}") for i in range(bots)]
    clients = []
    try:
        for bot in running:
            client = BotClient(bot.endpoint)
            clients.append(client)
            client.wait_ready(timeout=60)
            client.handshake()
            client.start_match(info)
            client.decide("bench", obs, legal, time_left_ms=1000, time_bank_ms=10000, timeout=10)
        pids: set[int] = set().union(*(_processes(b) for b in running))
        time.sleep(1.0)  # let the first decision's work settle
        c0 = _cpu(pids)
        time.sleep(seconds)
        idle = (_cpu(pids) - c0) / seconds / bots * 100
        for bot in running:
            bot.pause()
        c0 = _cpu(pids)
        time.sleep(seconds)
        paused = (_cpu(pids) - c0) / seconds / bots * 100
        t0 = time.perf_counter()
        for bot in running:
            assert bot.resume()
        t1 = time.perf_counter()
        for client in clients:
            client.decide("bench", obs, legal, time_left_ms=1000, time_bank_ms=10000, timeout=10)
        t2 = time.perf_counter()
        print(
            f"{label:14s} idle {idle:6.3f} %   paused {paused:6.3f} %   resume "
            f"{(t1 - t0) / bots * 1000:5.1f} ms, then a decision {(t2 - t1) / bots * 1000:5.1f} ms"
            f"   ({bots} bots, {seconds:g} s each, {len(pids)} host processes)"
        )
    finally:
        for client in clients:
            client.close()
        for bot in running:
            bot.stop()


def main() -> None:
    """Measure every sandbox this machine has."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bots", type=int, default=3, help="bots per sandbox (3)")
    parser.add_argument("--seconds", type=float, default=30.0, help="each measurement (30)")
    args = parser.parse_args()
    print("per bot, in per cent of one core (target: at most 0.1 % while kept)")
    with tempfile.TemporaryDirectory(prefix="ffa-idle-") as tmp:
        scratch = Path(tmp)
        box: Sandbox = ProcessSandbox()
        try:
            measure("process", box, args.bots, args.seconds, scratch)
        finally:
            box.close()
        why = docker_available()
        if why is not None:
            print(f"docker: skipped, {why}")
            return
        for runtime in ("runc", "runsc"):
            try:
                docker_box = DockerSandbox(runtime=runtime, log=_SANDBOX.QUIET)
            except Exception as e:
                print(f"docker {runtime}: skipped, {e}")
                continue
            try:
                measure(f"docker {runtime}", docker_box, args.bots, args.seconds, scratch)
            finally:
                docker_box.close()


if __name__ == "__main__":
    main()
