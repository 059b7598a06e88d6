"""A seeded league served by a real ``arena league serve``: for the browser tests and screenshots.

:func:`served_league` makes a league home (SQLite) with five users (the admin, ``alice``,
``bob``, ``carol``, ``dave``) with an API token each; submits the bundled bots for four
owners, made active at once as if validated (a table never seats two bots of one owner, so it
takes three owners to make one), and one bot that writes debug notes (``alice-noter``, left
for the server to validate, so that its version has validation steps and logs); starts
``arena league serve`` on a free port in the process sandbox with ten-hand matches; and waits
until a match seating the noter is finished with its replay served (its whole duplicate group
finished).

The server keeps scheduling and playing while it is used (the live page has something to
show); the league's bots and the chosen match do not change. ``tests/arena/web/conftest.py`` uses it
for one session; ``scripts/screenshots.py`` uses it for the README's screenshots.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import update

from arena.ladder._bundled import bundled_dir
from arena.league import (
    BotVersion,
    Role,
    VersionStatus,
    create_user,
    init_league,
    issue_token,
    pack_bot,
    unit_of_work,
)
from arena.league.bots._versions import submit_version
from tests.served import ServerExited, free_port, is_healthy, start_server, stop_server

WAIT_S = 180.0
"""The most any wait here lasts (the machine may be busy)."""
SERVER_OPTIONS = ("--slots", "2", "--lease", "10", "--grace", "2", "--hand-cap", "10")
"""Two matches at once, ten-hand matches (a fraction of a second each), a short shutdown."""
OWNER = "alice"
OTHER = "bob"
NOTER = "alice-noter"
"""The bot that writes a debug note with every turn; owned by :data:`OWNER`."""
NOTE_MARK = "<b>noter</b>"
"""Every note of the noter starts with this: markup that must show as text, never as HTML."""
BOTS = {
    "alice-random": (OWNER, "random"),
    "bob-counter": (OTHER, "counter"),
    "bob-greedy": (OTHER, "greedy"),
    "carol-counter": ("carol", "counter"),
    "dave-random": ("dave", "random"),
}
"""The bots seeded active: league name -> (owner, bundled bot). A table never seats two bots
of one owner, so four owners make tables of three and four."""


class SeedError(RuntimeError):
    """The seeded league could not be made or did not get where it should in time."""


@dataclass
class ServedLeague:
    """A running ``arena league serve`` on a seeded league.

    Attributes:
        home: the league home.
        url: the server's base URL (no trailing slash).
        tokens: an API token per user name (``admin``, ``alice``, ``bob`` ...).
        owners: the owner of each bot of the league.
        match_id: a finished match seating :data:`NOTER` whose replay is served, of at
            least two hands, with a note of the noter in it.
        log: where the server writes its log.
        process: the server's process.
    """

    home: Path
    url: str
    tokens: dict[str, str]
    owners: dict[str, str]
    match_id: int
    log: Path
    process: subprocess.Popen[bytes] = field(repr=False)

    def api(self, path: str, user: str | None = None) -> httpx.Response:
        """GET ``/api/v1{path}``, as ``user`` (a Bearer token) or anonymously."""
        headers = {} if user is None else {"Authorization": f"Bearer {self.tokens[user]}"}
        return httpx.get(f"{self.url}/api/v1{path}", headers=headers, timeout=60)

    def replay(self, match_id: int, user: str | None = None) -> list[dict[str, Any]]:
        """The records of a match's replay as ``user`` sees it (others' notes removed)."""
        response = self.api(f"/matches/{match_id}/replay", user)
        response.raise_for_status()
        return [json.loads(line) for line in response.text.splitlines() if line.strip()]


def wait_for(what: str, done: Callable[[], bool], timeout: float = WAIT_S) -> None:
    """Poll ``done`` until true; raise :class:`SeedError` naming ``what`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    while not done():
        if time.monotonic() > deadline:
            raise SeedError(f"waited {timeout:g} s for {what}")
        time.sleep(0.25)


def noter_bot(directory: Path) -> Path:
    """Make, in ``directory``, the bundled greedy bot with a debug note on every turn."""
    directory.mkdir(parents=True)
    shutil.copy(bundled_dir() / "greedy" / "bot.py", directory / "greedy_bot.py")
    (directory / "bot.toml").write_text(
        'name = "noter"\nversion = "1.0.0"\nruntime = "python"\n'
        'command = ["python3", "bot.py"]\nentry = "bot:NoterBot"\n',
        encoding="utf-8",
    )
    (directory / "bot.py").write_text(
        "from flipflop import hand_total\n"
        "from greedy_bot import GreedyBot\n\n\n"
        "class NoterBot(GreedyBot):\n"
        '    name = "noter"\n\n'
        "    def play_turn(self, obs, legal):\n"
        "        steps = super().play_turn(obs, legal)\n"
        f'        return steps, f"{NOTE_MARK} total {{hand_total(obs.hand)}}"\n\n\n'
        'if __name__ == "__main__":\n'
        "    from flipflop import serve\n\n"
        "    serve(NoterBot)\n",
        encoding="utf-8",
    )
    return directory


def seed_league(directory: Path) -> tuple[Path, dict[str, str], dict[str, str]]:
    """Make the league home ``directory/home``; its path, the users' tokens, the bots' owners."""
    league, admin = init_league(directory / "home", name="Browser League")
    tokens = {admin.account.name: admin.token}
    owners: dict[str, str] = {}
    try:
        with unit_of_work(league.sessions) as session:
            for user in sorted({owner for owner, _ in BOTS.values()}):
                create_user(session, user, role=Role.USER)
                tokens[user] = issue_token(session, league.key, user).token
        for bot, (owner, source) in BOTS.items():
            submitted = submit_version(league, owner, bot, pack_bot(bundled_dir() / source))
            with unit_of_work(league.sessions) as session:
                session.execute(
                    update(BotVersion)
                    .where(BotVersion.id == submitted.version.id)
                    .values(status=VersionStatus.ACTIVE)
                )
            owners[bot] = owner
        noter = noter_bot(directory / "noter")
        submit_version(league, OWNER, NOTER, pack_bot(noter))  # validated by serve
        owners[NOTER] = OWNER
    finally:
        league.close()
    return league.home, tokens, owners


def _get(url: str, headers: dict[str, str] | None = None) -> httpx.Response | None:
    try:
        return httpx.get(url, headers=headers, timeout=30)
    except httpx.HTTPError:
        return None


def wait_healthy(url: str, process: subprocess.Popen[bytes]) -> None:
    """Wait until the server at ``url`` answers its health check."""

    def healthy() -> bool:
        try:
            return is_healthy(url, process)
        except ServerExited as exited:
            raise SeedError(str(exited)) from None

    wait_for("the server's health check", healthy)


def version_status(url: str, bot: str, number: int = 1) -> str:
    """The status of version ``number`` of ``bot`` as the API tells it ("" if unknown)."""
    response = _get(f"{url}/api/v1/bots/{bot}/versions/{number}")
    if response is None or response.status_code != 200:
        return ""
    status: str = response.json().get("status", "")
    return status


def replayable_noter_match(url: str, owner_token: str) -> int | None:
    """A finished match of :data:`NOTER` whose replay is served, if any.

    The match lasted two hands or more, and its replay as the owner sees it holds a note.
    """
    response = _get(f"{url}/api/v1/matches?bot={NOTER}&status=finished&limit=100")
    if response is None or response.status_code != 200:
        return None
    for match in sorted(response.json()["matches"], key=lambda m: m["id"]):
        result = match.get("result") or {}
        if result.get("void") or (result.get("hands") or 0) < 2:
            continue
        replay = _get(
            f"{url}/api/v1/matches/{match['id']}/replay",
            {"Authorization": f"Bearer {owner_token}"},
        )
        if replay is not None and replay.status_code == 200 and '"note"' in replay.text:
            match_id: int = match["id"]
            return match_id
    return None


@contextlib.contextmanager
def served_league(directory: Path) -> Iterator[ServedLeague]:
    """A seeded league in ``directory`` served by ``arena league serve``; stopped afterwards.

    Raises:
        SeedError: the server did not start, the noter was not validated, or no match of
            it was finished with a replay within :data:`WAIT_S` seconds each.
    """
    home, tokens, owners = seed_league(directory)
    log = directory / "server.log"
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    process = start_server(home, port, log, *SERVER_OPTIONS)
    try:
        wait_healthy(url, process)
        wait_for(
            f"{NOTER} v1 validated and active",
            lambda: version_status(url, NOTER) in {"active", "rejected"},
        )
        if version_status(url, NOTER) != "active":
            raise SeedError(f"{NOTER} v1 was rejected: see {log}")
        found: list[int] = []

        def replayable() -> bool:
            if process.poll() is not None:
                raise SeedError(f"the server exited with {process.returncode}")
            match_id = replayable_noter_match(url, tokens[OWNER])
            if match_id is not None:
                found.append(match_id)
            return bool(found)

        wait_for(f"a finished match of {NOTER} with its replay", replayable)
        yield ServedLeague(home, url, tokens, owners, found[0], log, process)
    finally:
        stop_server(process)
