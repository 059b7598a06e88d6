"""The sandboxes' costs: image builds, start-to-ready, and one decision's round trip.

Run: ``python benchmarks/sandbox.py [--starts N] [--calls N] [--rounds R]``. Measures:

1. image builds: the base image (python3 + grpcio + protobuf + the SDK) and a bot image,
   cold (built under scratch tags, removed afterwards) and warm (found by content hash);
2. start-to-ready: ``sandbox.start`` until the bot's health check answers SERVING, for the
   Docker sandbox (target: median at most 1 s) and the process sandbox;
3. one decision's round trip (``BotClient.decide`` on the realistic mid-hand observation of
   ``benchmarks/roundtrip.py``) to a trivial bot (the default ``Bot``) in a container and in
   a local process, measured in alternating rounds so that drift affects both.

Needs a Docker engine; the first run may also build the offline root (minutes: see
docs/sandbox.md).
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import docker  # type: ignore[import-untyped,unused-ignore]

import flipflop
from arena.sandbox import ProcessSandbox, RunningBot, Sandbox
from arena.sandbox._docker import DockerSandbox, docker_available
from arena.sandbox.images import ensure_base_image, ensure_bot_image
from arena.sandbox.images._base import _build_base, _pins
from arena.sandbox.images._roots import _choose_kind, _root_image
from flipflop import BotClient, BotManifest, MatchInfo, MatchState, Observation, read_manifest

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
QUIET = lambda message: None  # noqa: E731 - a named no-op
TRIVIAL_BOT = '''"""The default Bot: draws from the stock, discards its highest card."""
from flipflop import Bot, serve

if __name__ == "__main__":
    serve(Bot())
'''


def mid_hand() -> tuple[MatchState, Observation]:
    """The observation benchmarks/roundtrip.py measures with."""
    spec = importlib.util.spec_from_file_location("roundtrip", HERE / "roundtrip.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    state, obs = module.mid_hand()
    return state, obs


def trivial_bot(directory: Path) -> BotManifest:
    """A bot directory serving the default Bot, built by the arena's Python recipe."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "bot.py").write_text(TRIVIAL_BOT, encoding="utf-8")
    (directory / "bot.toml").write_text(
        'name = "bench-default"\nversion = "1.0.0"\nruntime = "python"\n'
        'command = ["python3", "bot.py"]\n',
        encoding="utf-8",
    )
    return read_manifest(directory)


def summary(samples: list[float]) -> str:
    """Median, p90, min and max of some samples."""
    ordered = sorted(samples)
    p90 = ordered[int(0.9 * (len(ordered) - 1))]
    return f"{statistics.median(ordered):9.3f} {p90:9.3f} {ordered[0]:9.3f} {ordered[-1]:9.3f}"


def timed(call: Callable[[], object]) -> float:
    """Seconds one call takes."""
    t0 = time.perf_counter()
    call()
    return time.perf_counter() - t0


def builds(client: Any, bot: BotManifest) -> None:
    """Cold and warm builds of the base image and of a bot image."""
    kind = _choose_kind(client, None, QUIET)
    root = _root_image(client, kind, QUIET)
    sdk = Path(flipflop.__file__).resolve().parent
    scratch = "flipflop-base:bench-cold"
    # Without Docker's layer cache; the bot is then built on a base no cache has seen.
    pins = _pins()
    cold_base = timed(
        lambda: _build_base(client, kind, root, sdk, pins, scratch, QUIET, nocache=True)
    )
    cold_bot = timed(lambda: ensure_bot_image(client, bot, scratch, QUIET))
    cold_tag = ensure_bot_image(client, bot, scratch, QUIET)
    client.images.remove(cold_tag)
    client.images.remove(scratch)
    base = ensure_base_image(client, QUIET)
    ensure_bot_image(client, bot, base, QUIET)
    warm_base = timed(lambda: ensure_base_image(client, QUIET))
    warm_bot = timed(lambda: ensure_bot_image(client, bot, base, QUIET))
    print(f"image builds (root: {kind.value}, {root.short_id})")
    print(f"  base image   cold {cold_base:7.2f} s   warm {warm_base:7.3f} s")
    print(f"  bot image    cold {cold_bot:7.2f} s   warm {warm_bot:7.3f} s")


def start_to_ready(sandbox: Sandbox, bot: BotManifest, n: int, scratch: Path) -> list[float]:
    """Seconds from ``start`` to a SERVING health check, ``n`` times (each bot then stopped)."""
    out = []
    for i in range(n):
        t0 = time.perf_counter()
        running = sandbox.start(bot, scratch / f"{sandbox.kind.value}{i}", f"bench{i}")
        client = BotClient(running.endpoint)
        try:
            client.wait_ready(timeout=30)
            out.append(time.perf_counter() - t0)
        finally:
            client.close()
            running.stop()
    return out


def round_trips(bots: dict[str, RunningBot], calls: int, rounds: int) -> dict[str, list[float]]:
    """Microseconds per decide call for each bot, in alternating rounds."""
    state, obs = mid_hand()
    legal = state.legal_actions()
    players = tuple(f"p{s}" for s in range(state.config.seats))
    info = MatchInfo("bench", obs.seat, players, state.config, 1000, 10000)
    clients = {}
    for name, running in bots.items():
        client = BotClient(running.endpoint)
        client.wait_ready(timeout=30)
        client.handshake()
        client.start_match(info)
        clients[name] = client
    samples: dict[str, list[float]] = {name: [] for name in bots}

    def decide(client: BotClient) -> object:
        return client.decide("bench", obs, legal, time_left_ms=1000, time_bank_ms=10000, timeout=5)

    for client in clients.values():  # warm up: connections, caches, thread pools
        for _ in range(200):
            decide(client)
    for _ in range(rounds):
        for name, client in clients.items():
            for _ in range(calls):
                t0 = time.perf_counter()
                decide(client)
                samples[name].append((time.perf_counter() - t0) * 1e6)
    for client in clients.values():
        client.close()
    return samples


def main() -> None:
    """Run every measurement and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--starts", type=int, default=9, help="starts per sandbox")
    parser.add_argument("--calls", type=int, default=500, help="decide calls per round")
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds")
    parser.add_argument("--no-builds", action="store_true", help="skip the cold builds")
    args = parser.parse_args()
    reason = docker_available()
    if reason is not None:
        sys.exit(f"benchmarks/sandbox.py needs Docker: {reason}")

    with tempfile.TemporaryDirectory(prefix="ffa-bench-") as tmp:
        scratch = Path(tmp)
        bot = trivial_bot(scratch / "bot")
        client = docker.from_env()
        try:
            if not args.no_builds:
                builds(client, bot)
        finally:
            client.close()

        in_docker = DockerSandbox(log=QUIET)
        boxes: dict[str, Sandbox] = {"docker": in_docker, "process": ProcessSandbox()}
        try:
            in_docker.prepare([bot])  # built before anything is timed
            print(f"start-to-ready, {args.starts} starts (seconds)")
            print(f"  {'':10s} {'median':>9s} {'p90':>9s} {'min':>9s} {'max':>9s}")
            for name, box in boxes.items():
                print(f"  {name:10s} {summary(start_to_ready(box, bot, args.starts, scratch))}")
            running = {
                name: box.start(bot, scratch / f"rt-{name}", "rt") for name, box in boxes.items()
            }
            samples = round_trips(running, args.calls, args.rounds)
            n = args.calls * args.rounds
            print(f"decide round trip, {n} calls each (microseconds)")
            print(f"  {'':10s} {'median':>9s} {'p90':>9s} {'min':>9s} {'max':>9s}")
            for name, values in samples.items():
                print(f"  {name:10s} {summary(values)}")
            ratio = statistics.median(samples["docker"]) / statistics.median(samples["process"])
            print(f"  docker / process, medians: {ratio:.2f}")
        finally:
            for box in boxes.values():
                box.close()


if __name__ == "__main__":
    main()
