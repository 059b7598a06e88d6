"""Adversary: tries to reach the network from inside the sandbox.

It only ever targets 127.0.0.1 / localhost (the port the test listens on, from attack.json)
and a DNS lookup of a name: in a sandbox with its own network namespace, even the loopback
is the sandbox's own, so the test's listener must never see a connection.
"""

from __future__ import annotations

import json
import socket
import sys
from collections.abc import Sequence
from pathlib import Path

from flipflop import Action, Bot, Observation, serve

CONFIG = json.loads((Path(__file__).resolve().parent / "attack.json").read_text())


def report(attack: str, blocked: bool, detail: str = "") -> None:
    """One line on stderr saying what was tried and what happened."""
    line = {"attack": attack, "blocked": blocked, "detail": detail}
    print("ATTACK " + json.dumps(line), file=sys.stderr, flush=True)


def why(e: BaseException) -> str:
    """The exception as one line."""
    return f"{type(e).__name__}: {e}"


def tcp(host: str, port: int) -> None:
    """Connect and send a line."""
    try:
        with socket.create_connection((host, port), timeout=2) as s:
            s.sendall(b"escaped\n")
        report(f"tcp {host}:{port}", False, "connected")
    except OSError as e:
        report(f"tcp {host}:{port}", True, why(e))


def udp(host: str, port: int) -> None:
    """Send a datagram."""
    # sendto on a datagram socket succeeds without a peer; the test's socket says if it came
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.sendto(b"escaped\n", (host, port))
        report(f"udp {host}:{port}", True, "sent (the test checks whether it arrived)")
    except OSError as e:
        report(f"udp {host}:{port}", True, why(e))


def dns(name: str) -> None:
    """Resolve a name."""
    try:
        addresses = {a[4][0] for a in socket.getaddrinfo(name, 80)}
        report(f"dns {name}", False, f"resolved to {sorted(addresses)}")
    except OSError as e:
        report(f"dns {name}", True, why(e))


def interfaces() -> None:
    """List the network interfaces: only a loopback may be there."""
    names = sorted(name for _, name in socket.if_nameindex())
    report("interfaces", names in ([], ["lo"]), f"{names}")


def attack() -> None:
    """Every attempt, each reported."""
    port = int(CONFIG["port"])
    tcp("127.0.0.1", port)
    tcp("localhost", port)
    udp("127.0.0.1", port)
    dns(CONFIG.get("dns_name", "example.com"))
    interfaces()
    print("ATTACKS DONE", file=sys.stderr, flush=True)


class NetProbe(Bot):
    """Plays the default game; tries the network once, on its first decision."""

    name = "netprobe"
    version = "1.0.0"
    tried = False

    def start_turn(self, obs: Observation, legal: Sequence[Action]) -> Action:
        """Attack once, then play the default."""
        if not self.tried:
            self.tried = True
            attack()
        return super().start_turn(obs, legal)


if __name__ == "__main__":
    serve(NetProbe())
