"""The league's HTTP API on a real socket: who may do what, and what each answer holds.

A real uvicorn server runs the app in a thread on 127.0.0.1 (a free port), over a league
home on SQLite and on PostgreSQL; requests go through httpx. The authorization matrix asks
every endpoint as four callers: anonymous, another user, the owner, an admin; a meta-test
fails when a route of the app has no row in it.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime as dt
import gzip
import hashlib
import io
import json
import shutil
import socket
import sqlite3
import tarfile
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from fastapi.encoders import jsonable_encoder
from fastapi.routing import APIRoute
from sqlalchemy import select

from arena.client._credentials import Credentials
from arena.client._league import LeagueClient, LeagueUnavailable, client_for
from arena.executors._http import serve_in_thread
from arena.league import (
    BotVersion,
    Conflict,
    Forbidden,
    League,
    LeagueConfigError,
    Match,
    MatchSeat,
    MatchStatus,
    NotFound,
    StepKind,
    StepOutcome,
    UploadLimits,
    UploadRejected,
    ValidationStep,
    VersionStatus,
    add_worker,
    create_user,
    disable_user,
    enqueue_match,
    init_league,
    issue_token,
    pack_bot,
    save_credentials,
    submissions_today,
    unit_of_work,
)
from arena.league.api._routes import create_app
from arena.league.bots._versions import submit_version
from arena.league.matches._leaderboard import leaderboard, league_status
from tests.arena.league.conftest import NOW, fresh_database
from tests.served import free_port

REPO = Path(__file__).resolve().parents[4]
CALLERS = ("anonymous", "other", "owner", "admin")
METRICS = "# TYPE arena_league_test gauge\narena_league_test 1\n"
SEED = "5eed" * 16
NOTES = {0: "alpha's secret: always draw", 1: "beta's secret: never meld"}
LOGS = {0: b"alpha log: the plan is to draw\n", 1: b"beta log: the plan is to wait\n"}


# ------------------------------------------------------------------ leagues and servers


@contextmanager
def made_league(kind: str, directory: Path) -> Iterator[tuple[League, str]]:
    """A new league home on a database of ``kind``; yields it and its admin's token."""
    if kind == "sqlite":
        league, issued = init_league(directory / "home", name="test")
        try:
            yield league, issued.token
        finally:
            league.close()
        return
    with fresh_database(kind, directory) as engine:
        url = engine.url.render_as_string(hide_password=False)
        league, issued = init_league(directory / "home", name="test", database=url)
        try:
            yield league, issued.token
        finally:
            league.close()


def bot_archive(directory: Path, variant: str) -> bytes:
    """The packed bundled ``random`` bot with one file that makes each variant's bytes its own."""
    bot = directory / f"bot-{variant}"
    if not bot.exists():
        shutil.copytree(REPO / "bots" / "random", bot, ignore=shutil.ignore_patterns("__pycache__"))
        (bot / "VARIANT").write_text(variant + "\n")
    return pack_bot(bot)


def _worker_token(league: League, name: str) -> str:
    """Add the fleet worker ``name`` and return its token."""
    with unit_of_work(league.sessions) as session:
        return add_worker(session, league.key, name, now=NOW).token


def user_token(league: League, name: str) -> str:
    """Add the user ``name`` and return their token."""
    with unit_of_work(league.sessions) as session:
        create_user(session, name, now=NOW)
        return issue_token(session, league.key, name, now=NOW).token


@dataclass(frozen=True)
class World:
    """A league with bots, versions and matches, served on a real socket.

    alice owns ``alpha`` (v1 active, v2 rejected at its check step) and ``gamma``; bob owns
    ``beta``. Match ``match`` (alpha v1 at seat 0, beta v1 at seat 1) and its duplicate are
    finished, with a replay holding both seats' notes and a log per seat; ``half_group`` is
    finished but its duplicate is still queued; ``queued`` has not been played.
    """

    league: League
    app: Any
    url: str
    tokens: Mapping[str, str | None]
    disabled_token: str
    archive: bytes
    match: int
    half_group: int
    queued: int
    tmp: Path

    def headers(self, caller: str) -> dict[str, str]:
        """The Authorization header of ``caller`` (none for anonymous)."""
        token = self.tokens[caller]
        return {} if token is None else {"Authorization": f"Bearer {token}"}


def _validated(session: Any, league: League, version_id: int, status: VersionStatus) -> None:
    """Give a version the steps a validation leaves (with logs) and the status it ended in."""
    version = session.get(BotVersion, version_id)
    version.status = status
    for step in StepKind:
        failed = status is VersionStatus.REJECTED and step is StepKind.CHECK
        session.add(
            ValidationStep(
                version_id=version_id,
                step=step,
                outcome=StepOutcome.FAILED if failed else StepOutcome.PASSED,
                detail="conformance: no answer to Decide" if failed else f"{step.value} ok",
                log_sha256=league.artifacts.put(f"log of the {step.value} step\n".encode()),
                started=NOW,
                finished=NOW,
            )
        )
        if failed:
            version.reason = "conformance: no answer to Decide"
            break
    session.flush()


def _replay_bytes() -> bytes:
    records: list[dict[str, Any]] = [
        {
            "type": "header",
            "format": "flipflop-replay",
            "version": 2,
            "seed": SEED,
            "dealer": 1,
            "bankrolls": [100, 100],
            "decks": [],
            "players": ["alpha-v1", "beta-v1"],
            "meta": {},
        },
        {"type": "action", "hand": 1, "seat": 0, "action": "draw_stock", "cards": []},
        {"type": "action", "hand": 1, "seat": 0, "action": "discard", "cards": ["7c"]},
        {"type": "action", "hand": 1, "seat": 1, "action": "draw_discard", "cards": ["7c"]},
        {"type": "action", "hand": 1, "seat": 1, "action": "discard", "cards": ["Kd"]},
        {"type": "result", "placements": [1, 2], "bankrolls": [120, 80], "hands": 1},
    ]
    records[1]["note"] = NOTES[0]
    records[3]["note"] = NOTES[1]
    return b"".join(json.dumps(r).encode() + b"\n" for r in records)


def _finish(
    session: Any, league: League, match_id: int, group: int, rotation: int, logs: bool
) -> None:
    match = session.get(Match, match_id)
    match.status = MatchStatus.FINISHED
    match.finished_at = NOW
    match.group_id = group
    match.rotation = rotation
    match.seed = SEED
    match.replay_sha256 = league.artifacts.put(_replay_bytes())
    match.result = {
        "void": False,
        "bots": ["alpha-v1", "beta-v1"],
        "placements": [1, 2],
        "bankrolls": [120, 80],
        "start_bankroll": 100,
        "hands": 1,
        "luck": None,
        "seats": [],
        "faults": [],
        "logs": [league.artifacts.put(LOGS[s]) for s in (0, 1)] if logs else [None, None],
    }
    for seat in session.query(MatchSeat).filter_by(match_id=match_id):
        seat.place = seat.seat + 1
        seat.chips = 120 if seat.seat == 0 else 80
    session.flush()


def _queued(session: Any, seats: list[int], group: int, rotation: int) -> int:
    match_id = enqueue_match(session, seats, now=NOW)
    match = session.get(Match, match_id)
    match.group_id, match.rotation, match.seed = group, rotation, SEED
    session.flush()
    return match_id


@pytest.fixture(scope="module")
def world(kind: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    """The league of :class:`World`, on a database of each kind, served on a real socket."""
    tmp = tmp_path_factory.mktemp(f"api-{kind}")
    with made_league(kind, tmp) as (league, admin_token):
        tokens = {
            "anonymous": None,
            "owner": user_token(league, "alice"),
            "other": user_token(league, "bob"),
            "admin": admin_token,
            "worker": _worker_token(league, "box1"),
        }
        disabled_token = user_token(league, "carol")
        archive = bot_archive(tmp, "a")
        alpha1 = submit_version(league, "alice", "alpha", archive, now=NOW)
        alpha2 = submit_version(league, "alice", "alpha", bot_archive(tmp, "b"), now=NOW)
        gamma1 = submit_version(league, "alice", "gamma", archive, now=NOW)
        beta1 = submit_version(league, "bob", "beta", archive, now=NOW)
        with unit_of_work(league.sessions) as session:
            disable_user(session, "carol")
            _validated(session, league, alpha1.version.id, VersionStatus.ACTIVE)
            _validated(session, league, alpha2.version.id, VersionStatus.REJECTED)
            _validated(session, league, gamma1.version.id, VersionStatus.ACTIVE)
            _validated(session, league, beta1.version.id, VersionStatus.ACTIVE)
            pair = [alpha1.version.id, beta1.version.id]
            played = enqueue_match(session, pair, now=NOW)
            _finish(session, league, played, group=1, rotation=0, logs=True)
            _finish(session, league, enqueue_match(session, pair[::-1]), 1, 1, logs=False)
            half = enqueue_match(session, pair, now=NOW)
            _finish(session, league, half, group=2, rotation=0, logs=True)
            _queued(session, pair[::-1], group=2, rotation=1)
            queued = _queued(session, pair, group=3, rotation=0)
        app = create_app(league, metrics=lambda: METRICS, executor_status=lambda: {"slots": 2})
        with serve_in_thread(app) as url:
            yield World(
                league,
                app,
                url,
                tokens,
                disabled_token,
                archive,
                played,
                half,
                queued,
                tmp,
            )


@pytest.fixture(scope="module")
def http(world: World) -> Iterator[httpx.Client]:
    """An httpx client of the world's server (no token of its own)."""
    with httpx.Client(base_url=world.url, timeout=60) as client:
        yield client


# ------------------------------------------------------------------ the matrix


@dataclass(frozen=True)
class Row:
    """One endpoint of the matrix: its route, the request, and each caller's status."""

    method: str
    route: str
    args: Mapping[str, str]
    expected: tuple[int, int, int, int]  # anonymous, other, owner, admin
    upload: bool = False
    worker: int = 401
    """The status for a fleet worker's token: refused everywhere but the workers' routes."""
    body: Mapping[str, Any] | None = None
    content: bytes | None = None
    query: Mapping[str, str] | None = None

    def path(self, world: World) -> str:
        """The concrete path (``@match``: the world's finished match; ``@source``: a source)."""
        stand_ins = {
            "@match": str(world.match),
            "@source": hashlib.sha256(world.archive).hexdigest(),
        }
        values = {k: stand_ins.get(v, v) for k, v in self.args.items()}
        return self.route.format(**values)


OPEN = (200, 200, 200, 200)
OWNER_AND_ADMIN = (401, 403, 200, 200)
ADMIN_ONLY = (401, 403, 403, 200)
BOT = {"name": "alpha"}
V1 = {"name": "alpha", "number": "1"}
WORKERS_ONLY = (401, 401, 401, 401)
"""A fleet worker's route: no user's token opens it, an admin's no more than another's."""
ON_MATCH = {"match_id": "@match"}
NOT_HELD = {"claim": "nobody/0"}
"""A claim the world's worker never got: its calls about the finished match are 409."""
ARTIFACT = b"a replay's bytes\n"
ON_VERSION = {"version_id": "1"}
"""alpha v1, the world's first version: active, so not waiting for a validator (409)."""

MATRIX = [
    Row("GET", "/api/v1/health", {}, OPEN),
    Row("GET", "/metrics", {}, OPEN),
    Row("GET", "/api/v1/me", {}, (401, 200, 200, 200)),
    # The same archive again: the existing version (200). Only the owner may submit to a
    # bot, an admin no more than anyone else.
    Row("POST", "/api/v1/bots/{name}/versions", BOT, (401, 403, 200, 403), upload=True),
    Row("GET", "/api/v1/bots", {}, OPEN),
    Row("GET", "/api/v1/bots/{name}", BOT, OPEN),
    Row("GET", "/api/v1/bots/{name}/versions/{number}", V1, OPEN),
    Row("GET", "/api/v1/bots/{name}/versions/{number}/source", V1, OWNER_AND_ADMIN),
    Row(
        "GET",
        "/api/v1/bots/{name}/versions/{number}/steps/{step}/log",
        {**V1, "step": "check"},
        OWNER_AND_ADMIN,
    ),
    Row("POST", "/api/v1/bots/{name}/versions/{number}/activate", V1, OWNER_AND_ADMIN),
    # Only a bot's owner challenges with it: the owner reaches the use case, which refuses
    # one opponent (400), so the matrix queues no match.
    Row(
        "POST",
        "/api/v1/bots/{name}/challenges",
        BOT,
        (401, 403, 400, 403),
        body={"opponents": ["beta"]},
    ),
    Row("GET", "/api/v1/bots/{name}/vs/{other}", {"name": "alpha", "other": "beta"}, OPEN),
    Row("POST", "/api/v1/bots/{name}/disable", {"name": "gamma"}, ADMIN_ONLY),
    Row("POST", "/api/v1/bots/{name}/enable", {"name": "gamma"}, ADMIN_ONLY),
    # A season's steps are an admin's: the admin reaches the use case, which refuses a bad
    # name (400) or an unknown season (404), so the matrix changes no season.
    Row("GET", "/api/v1/seasons", {}, OPEN),
    Row("GET", "/api/v1/seasons/{name}", {"name": "nosuch"}, (404, 404, 404, 404)),
    Row("POST", "/api/v1/seasons", {}, (401, 403, 403, 400), body={"name": "bad name"}),
    Row("POST", "/api/v1/seasons/{name}/freeze", {"name": "nosuch"}, (401, 403, 403, 404)),
    Row("POST", "/api/v1/seasons/{name}/final", {"name": "nosuch"}, (401, 403, 403, 404)),
    Row("POST", "/api/v1/seasons/{name}/close", {"name": "nosuch"}, (401, 403, 403, 404)),
    Row("GET", "/api/v1/leaderboard", {}, OPEN),
    Row("GET", "/api/v1/status", {}, OPEN),
    Row("GET", "/api/v1/matches", {}, OPEN),
    Row("GET", "/api/v1/matches/{match_id}", {"match_id": "@match"}, OPEN),
    Row("GET", "/api/v1/matches/{match_id}/replay", {"match_id": "@match"}, OPEN),
    # Seat 0 is alpha's, alice's bot.
    Row(
        "GET",
        "/api/v1/matches/{match_id}/logs/{seat}",
        {"match_id": "@match", "seat": "0"},
        OWNER_AND_ADMIN,
    ),
    Row("GET", "/api/v1/worker/me", {}, WORKERS_ONLY, worker=200),
    # A source or an artifact only for a job the claim holds (issue 24, finding 5): the
    # world's worker holds nothing, so it is 404 (source) and 409 (artifact).
    Row(
        "GET",
        "/api/v1/worker/sources/{sha256}",
        {"sha256": "@source"},
        WORKERS_ONLY,
        worker=404,
        query=NOT_HELD,
    ),
    # The world's match is finished: a worker's claim is refused as not queued (409).
    Row("POST", "/api/v1/worker/matches/{match_id}/claim", ON_MATCH, WORKERS_ONLY, worker=409),
    Row(
        "POST",
        "/api/v1/worker/matches/{match_id}/lease",
        ON_MATCH,
        WORKERS_ONLY,
        worker=409,
        body=NOT_HELD,
    ),
    Row(
        "PUT",
        "/api/v1/worker/artifacts",
        {},
        WORKERS_ONLY,
        worker=409,
        content=ARTIFACT,
        query={**NOT_HELD, "part": f"{hashlib.sha256(ARTIFACT).hexdigest()}:{len(ARTIFACT)}"},
    ),
    Row(
        "PUT",
        "/api/v1/worker/artifacts/{sha256}",
        {"sha256": hashlib.sha256(ARTIFACT).hexdigest()},
        WORKERS_ONLY,
        worker=409,
        content=ARTIFACT,
        query=NOT_HELD,
    ),
    Row(
        "POST",
        "/api/v1/worker/matches/{match_id}/result",
        ON_MATCH,
        WORKERS_ONLY,
        worker=409,
        body={**NOT_HELD, "record": {}, "replay_sha256": "0" * 64, "logs_sha256": []},
    ),
    Row(
        "POST",
        "/api/v1/worker/matches/{match_id}/fail",
        ON_MATCH,
        WORKERS_ONLY,
        worker=409,
        body={**NOT_HELD, "error": "a test"},
    ),
    Row(
        "POST",
        "/api/v1/worker/matches/{match_id}/release",
        ON_MATCH,
        WORKERS_ONLY,
        worker=409,
        body=NOT_HELD,
    ),
    Row("POST", "/api/v1/worker/versions/{version_id}/claim", ON_VERSION, WORKERS_ONLY, worker=409),
    Row(
        "POST",
        "/api/v1/worker/versions/{version_id}/lease",
        ON_VERSION,
        WORKERS_ONLY,
        worker=409,
        body=NOT_HELD,
    ),
    Row(
        "POST",
        "/api/v1/worker/versions/{version_id}/steps/{step}/start",
        {**ON_VERSION, "step": "build"},
        WORKERS_ONLY,
        worker=409,
        body=NOT_HELD,
    ),
    Row(
        "POST",
        "/api/v1/worker/versions/{version_id}/steps/{step}/end",
        {**ON_VERSION, "step": "build"},
        WORKERS_ONLY,
        worker=409,
        body={**NOT_HELD, "outcome": "passed", "detail": "built", "log": "", "last": False},
    ),
]


def _send(http: httpx.Client, world: World, row: Row, caller: str, path: str) -> httpx.Response:
    headers = world.headers(caller)
    query = dict(row.query or {})
    if row.upload:
        headers["Content-Type"] = "application/gzip"
        return http.request(row.method, path, headers=headers, content=world.archive, params=query)
    if row.content is not None:
        headers["Content-Type"] = "application/octet-stream"
        return http.request(row.method, path, headers=headers, content=row.content, params=query)
    return http.request(row.method, path, headers=headers, json=row.body, params=query)


@pytest.mark.parametrize("row", MATRIX, ids=lambda r: f"{r.method} {r.route}")
def test_a_worker_token_opens_the_workers_routes_alone(
    world: World, http: httpx.Client, row: Row
) -> None:
    """A fleet worker's token is refused (401) on every route but its own, which take it."""
    response = _send(http, world, row, "worker", row.path(world))
    assert row.worker == response.status_code, response.text
    if row.worker == 401:
        assert "Bearer" == response.headers["WWW-Authenticate"]


@pytest.mark.parametrize("caller", CALLERS)
@pytest.mark.parametrize("row", MATRIX, ids=lambda r: f"{r.method} {r.route}")
def test_authorization_matrix(world: World, http: httpx.Client, row: Row, caller: str) -> None:
    """Each endpoint answers each kind of caller as the rules say; refusals say why in JSON."""
    response = _send(http, world, row, caller, row.path(world))
    assert row.expected[CALLERS.index(caller)] == response.status_code, response.text
    if response.status_code >= 400:
        error = response.json()["error"]
        assert isinstance(error, str) and error
    if response.status_code == 401:
        assert "Bearer" == response.headers["WWW-Authenticate"]


def test_every_route_is_in_the_matrix(world: World) -> None:
    """No endpoint escapes the matrix: every API route of the app has a row, and no row is stale."""
    routes = {
        (method, route.path)
        for route in world.app.routes
        if isinstance(route, APIRoute)
        for method in route.methods or ()
    }
    assert routes == {(row.method, row.route) for row in MATRIX}


UNKNOWN = [
    ("POST", "/api/v1/bots/nosuchbot/versions/1/activate"),
    ("GET", "/api/v1/bots/nosuchbot"),
    ("GET", "/api/v1/bots/alpha/versions/99"),
    ("GET", "/api/v1/bots/alpha/versions/99/source"),
    ("GET", "/api/v1/bots/alpha/versions/99/steps/build/log"),
    ("POST", "/api/v1/bots/nosuchbot/disable"),
    ("POST", "/api/v1/bots/nosuchbot/enable"),
    ("GET", "/api/v1/matches?bot=nosuchbot"),
    ("GET", "/api/v1/matches/999999"),
    ("GET", "/api/v1/matches/999999/replay"),
    ("GET", "/api/v1/matches/999999/logs/0"),
    ("GET", "/api/v1/matches/@match/logs/7"),
]


@pytest.mark.parametrize(("method", "path"), UNKNOWN)
def test_unknown_objects_are_404(world: World, http: httpx.Client, method: str, path: str) -> None:
    """An unknown bot, version, match or seat is 404 with a sentence naming it (asked as admin)."""
    path = path.replace("@match", str(world.match))
    response = http.request(method, path, headers=world.headers("admin"))
    assert 404 == response.status_code, response.text
    assert response.json()["error"].startswith(("no ", "the bot", "match"))


# ------------------------------------------------------------------ tokens


def test_every_bad_token_gets_one_answer(world: World, http: httpx.Client) -> None:
    """Malformed, unknown, expired and non-Bearer tokens all get the same 401, public paths too."""
    with unit_of_work(world.league.sessions) as session:
        create_user(session, "erin", now=NOW)
        expired = issue_token(
            session, world.league.key, "erin", expires_at=NOW - dt.timedelta(days=1), now=NOW
        ).token
    bad = [
        "Bearer nonsense",
        "Bearer ffa_" + "A" * 43,
        f"Bearer {expired}",
        f"Basic {world.tokens['owner']}",
        "Bearer",
    ]
    answers = set()
    for header in bad:
        for path in ("/api/v1/me", "/api/v1/bots"):
            response = http.get(path, headers={"Authorization": header})
            assert 401 == response.status_code, (header, response.text)
            answers.add(response.text)
    assert {json.dumps({"error": "invalid or expired API token"}, separators=(",", ":"))} == answers


def test_a_disabled_account_is_403(world: World, http: httpx.Client) -> None:
    """A valid token of a disabled user is refused with 403, saying the account is disabled."""
    response = http.get("/api/v1/me", headers={"Authorization": f"Bearer {world.disabled_token}"})
    assert 403 == response.status_code
    assert "the account 'carol' is disabled" == response.json()["error"]


def test_me_names_the_caller(world: World, http: httpx.Client) -> None:
    """/me answers the token's account: name and role."""
    me = http.get("/api/v1/me", headers=world.headers("owner")).json()
    assert ("alice", "user") == (me["name"], me["role"])
    admin = http.get("/api/v1/me", headers=world.headers("admin")).json()
    assert ("admin", "admin") == (admin["name"], admin["role"])


# ------------------------------------------------------------------ what each caller sees


@pytest.mark.parametrize("caller", CALLERS)
def test_validation_steps_are_for_the_owner_and_admins(
    world: World, http: httpx.Client, caller: str
) -> None:
    """A rejected version's steps, reason and source hash are shown to its owner and admins only."""
    version = http.get("/api/v1/bots/alpha/versions/2", headers=world.headers(caller)).json()
    bot = http.get("/api/v1/bots/alpha", headers=world.headers(caller)).json()
    private = caller in ("owner", "admin")
    assert "rejected" == version["status"]
    assert private == ("steps" in version)
    assert [private] * len(bot["versions"]) == ["steps" in v for v in bot["versions"]]
    if private:
        assert "conformance: no answer to Decide" == version["reason"]
        assert [("build", "passed"), ("check", "failed")] == [
            (s["step"], s["outcome"]) for s in version["steps"]
        ]
    else:
        assert {"reason", "source_sha256"}.isdisjoint(version)


def test_a_bots_page_has_its_results_matches_and_rivals(world: World, http: httpx.Client) -> None:
    """A bot's page adds each version's results, its latest matches and its head-to-head."""
    page = http.get("/api/v1/bots/alpha").json()
    assert "alpha" == page["name"]
    numbers = [v["number"] for v in page["versions"]]
    assert sorted(numbers, reverse=True) == numbers and {1, 2} <= set(numbers)
    first = page["versions"][-1]
    assert {"matches", "mean_place", "first_places", "last_played", "placements"} <= set(first)
    assert world.match in {m["id"] for m in page["recent"]}
    assert ["beta"] == [h["opponent"] for h in page["head_to_head"]]


def test_source_and_step_log_are_the_stored_bytes(world: World, http: httpx.Client) -> None:
    """The owner downloads exactly the archive submitted and the step's stored log."""
    source = http.get("/api/v1/bots/alpha/versions/1/source", headers=world.headers("owner"))
    assert world.archive == source.content
    assert "application/gzip" == source.headers["content-type"]
    log = http.get("/api/v1/bots/alpha/versions/2/steps/check/log", headers=world.headers("owner"))
    assert b"log of the check step\n" == log.content
    assert "nosniff" == log.headers["x-content-type-options"]
    missing = http.get(
        "/api/v1/bots/alpha/versions/2/steps/match/log", headers=world.headers("owner")
    )
    assert 404 == missing.status_code
    assert "alpha v2 has no log of its match step" == missing.json()["error"]


@pytest.mark.parametrize(
    ("caller", "notes"),
    [
        ("anonymous", set()),
        ("other", {NOTES[1]}),
        ("owner", {NOTES[0]}),
        ("admin", {NOTES[0], NOTES[1]}),
    ],
)
def test_replay_notes_are_shown_to_their_bots_owners_only(
    world: World, http: httpx.Client, caller: str, notes: set[str]
) -> None:
    """Each caller sees the notes of their own bots' seats; admins all; anonymous none; no seed."""
    response = http.get(f"/api/v1/matches/{world.match}/replay", headers=world.headers(caller))
    assert 200 == response.status_code
    records = [json.loads(line) for line in response.text.splitlines()]
    assert notes == {r["note"] for r in records if "note" in r}
    assert ["header", "action", "action", "action", "action", "result"] == [
        r["type"] for r in records
    ]
    assert "seed" not in records[0]
    assert SEED not in response.text


def test_a_replay_waits_for_its_whole_duplicate_group(world: World, http: httpx.Client) -> None:
    """A finished match whose duplicate is still queued, or a queued match, has no replay (409)."""
    half = http.get(f"/api/v1/matches/{world.half_group}/replay", headers=world.headers("admin"))
    assert 409 == half.status_code
    assert "duplicate group" in half.json()["error"]
    queued = http.get(f"/api/v1/matches/{world.queued}/replay")
    assert 409 == queued.status_code
    assert f"match {world.queued} is queued" in queued.json()["error"]


def test_a_seat_log_is_its_bots_owners(world: World, http: httpx.Client) -> None:
    """Seat 1's log (bob's bot) is bob's and the admin's, not alice's; the bytes are stored ones."""
    path = f"/api/v1/matches/{world.match}/logs/1"
    assert LOGS[1] == http.get(path, headers=world.headers("other")).content
    assert LOGS[1] == http.get(path, headers=world.headers("admin")).content
    assert 403 == http.get(path, headers=world.headers("owner")).status_code


def test_a_rotations_logs_and_luck_wait_for_its_whole_duplicate_group(
    world: World, http: httpx.Client
) -> None:
    """Issue 24, finding 12: a seat's log and the luck estimates wait like the replay.

    Match ``played`` is finished, its duplicate ``playing`` is not: the luck of its deals
    (result and seats) is withheld from everyone and its owner's seat log is 409; once the
    group is over, both are served. Before the fix they were served at once.
    """
    with unit_of_work(world.league.sessions) as session:
        pair = list(
            session.scalars(
                select(MatchSeat.version_id)
                .where(MatchSeat.match_id == world.match)
                .order_by(MatchSeat.seat)
            )
        )
        played = enqueue_match(session, pair, now=NOW)
        _finish(session, world.league, played, group=77, rotation=0, logs=True)
        row = session.get_one(Match, played)
        row.result = {**(row.result or {}), "luck": [0.25, -0.25]}
        for seat in session.scalars(select(MatchSeat).where(MatchSeat.match_id == played)):
            seat.luck = 0.25 if seat.seat == 0 else -0.25
        playing = _queued(session, pair[::-1], group=77, rotation=1)
    log = f"/api/v1/matches/{played}/logs/0"
    for caller in ("anonymous", "owner", "admin"):
        shown = http.get(f"/api/v1/matches/{played}", headers=world.headers(caller)).json()
        assert shown["result"]["luck"] is None
        assert [None, None] == [s["luck"] for s in shown["seats"]]
        (listed,) = http.get("/api/v1/matches", params={"before": played + 1, "limit": 1}).json()[
            "matches"
        ]
        assert (played, None) == (listed["id"], listed["result"]["luck"])
    waiting = http.get(log, headers=world.headers("owner"))
    assert 409 == waiting.status_code
    assert "duplicate group" in waiting.json()["error"]
    with unit_of_work(world.league.sessions) as session:
        _finish(session, world.league, playing, group=77, rotation=1, logs=False)
    shown = http.get(f"/api/v1/matches/{played}").json()
    assert [0.25, -0.25] == shown["result"]["luck"] == [s["luck"] for s in shown["seats"]]
    assert LOGS[0] == http.get(log, headers=world.headers("owner")).content


def test_matches_never_show_their_seed_or_log_hashes(world: World, http: httpx.Client) -> None:
    """Neither the list nor a match's page holds the deal seed or where the seats' logs are."""
    listed = http.get("/api/v1/matches", params={"bot": "alpha"})
    one = http.get(f"/api/v1/matches/{world.match}")
    for response in (listed, one):
        assert 200 == response.status_code
        assert SEED not in response.text
        assert "logs" not in response.text
    match = one.json()
    assert [("alpha", "alice", 1, 1), ("beta", "bob", 1, 2)] == [
        (s["bot"], s["owner"], s["version"], s["place"]) for s in match["seats"]
    ]
    assert [1, 2] == match["result"]["placements"]


def test_matches_page_back_newest_first(world: World, http: httpx.Client) -> None:
    """``limit`` and ``before`` page through the matches, newest first; ``status`` filters."""
    first = http.get("/api/v1/matches", params={"limit": 2}).json()["matches"]
    assert 2 == len(first)
    assert first[0]["id"] > first[1]["id"]
    rest = http.get("/api/v1/matches", params={"before": first[1]["id"]}).json()["matches"]
    assert all(m["id"] < first[1]["id"] for m in rest)
    queued = http.get("/api/v1/matches", params={"status": "queued"}).json()["matches"]
    assert queued and {"queued"} == {m["status"] for m in queued}


# ------------------------------------------------------------------ submitting


def _upload(http: httpx.Client, world: World, caller: str, bot: str, body: Any) -> httpx.Response:
    headers = {**world.headers(caller), "Content-Type": "application/gzip"}
    return http.post(f"/api/v1/bots/{bot}/versions", headers=headers, content=body)


def test_a_new_archive_is_201_and_the_same_again_200(world: World, http: httpx.Client) -> None:
    """A new bot's first version is made (201, a slot used); resent, it is that version (200)."""
    archive = bot_archive(world.tmp, "delta")
    made = _upload(http, world, "other", "delta", archive)
    assert 201 == made.status_code, made.text
    body = made.json()
    assert (True, 1, "uploaded", "bob") == (
        body["new"],
        body["version"]["number"],
        body["version"]["status"],
        body["version"]["owner"],
    )
    assert isinstance(body["left_today"], int)
    again = _upload(http, world, "other", "delta", archive)
    assert 200 == again.status_code
    assert (False, None, 1) == (
        again.json()["new"],
        again.json()["left_today"],
        again.json()["version"]["number"],
    )


def test_activate_false_is_passed_on(world: World, http: httpx.Client) -> None:
    """``activate=false`` makes a version that will not become active once validated."""
    headers = {**world.headers("owner"), "Content-Type": "application/gzip"}
    response = http.post(
        "/api/v1/bots/alpha/versions",
        params={"activate": "false"},
        headers=headers,
        content=bot_archive(world.tmp, "alpha-quiet"),
    )
    assert 201 == response.status_code
    assert response.json()["version"]["activate"] is False


def test_a_hostile_upload_is_400_with_its_reason_and_its_slot_back(
    world: World, http: httpx.Client
) -> None:
    """Bytes that are no tar.gz are refused with the unpacker's sentence; no slot is used."""
    with unit_of_work(world.league.sessions) as session:
        before = submissions_today(session, "bob")
    response = _upload(http, world, "other", "epsilon", b"\x1f\x8b not really gzip" * 10)
    assert 400 == response.status_code
    assert response.json()["error"].startswith("the upload is not a valid tar.gz archive")
    with unit_of_work(world.league.sessions) as session:
        assert before == submissions_today(session, "bob")
    assert 404 == http.get("/api/v1/bots/epsilon").status_code


def _tar(files: Mapping[str, bytes]) -> bytes:
    """An uncompressed tar of ``files`` (name to bytes), as Python's tarfile writes one."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


_BOT_PY = b"print('hi')\n"
_GOOD_TOML = b'name = "hostile"\ncommand = ["python3", "bot.py"]\n'
HOSTILE_UPLOADS: list[tuple[str, Callable[[], bytes], str]] = [
    (
        "zeros-after-the-end",  # finding 13: 2 MB hiding 2 GiB would unpack anywhere else
        lambda: gzip.compress(_tar({"bot.toml": _GOOD_TOML}) + b"\0" * (2 << 20)),
        "data after the end of its tar archive",
    ),
    (
        "bytes-after-the-end",
        lambda: gzip.compress(_tar({"bot.toml": _GOOD_TOML, "bot.py": _BOT_PY}) + b"hidden" * 999),
        "data after the end of its tar archive",
    ),
    (
        "second-gzip-member",  # finding 13: a second member that is not part of the tar
        lambda: gzip.compress(_tar({"bot.toml": _GOOD_TOML})) + gzip.compress(b"not a tar" * 99),
        "data after the end of its tar archive",
    ),
    (
        "deeply-nested-toml",  # finding 11: 5,000 nested arrays were a RecursionError, a 500
        lambda: gzip.compress(_tar({"bot.toml": _GOOD_TOML + b"x = " + b"[" * 5000})),
        "bot.toml: not valid TOML",
    ),
    (
        "memory-past-the-cap",  # finding 16: accepted at upload, refused only at its start
        lambda: gzip.compress(_tar({"bot.toml": _GOOD_TOML + b"memory_mb = 1000000000\n"})),
        "asks for memory_mb = 1000000000, more than this arena allows",
    ),
    (
        "start-budget-past-the-cap",
        lambda: gzip.compress(_tar({"bot.toml": _GOOD_TOML + b"start_timeout_s = 1e9\n"})),
        "asks for start_timeout_s",
    ),
    (
        "a-100k-word-command",
        lambda: gzip.compress(
            _tar({"bot.toml": b'name = "hostile"\ncommand = [' + b'"x",' * 100_000 + b"]\n"})
        ),
        "more than the 65536 a bot.toml may have",
    ),
    (
        "a-long-command",
        lambda: gzip.compress(
            _tar({"bot.toml": b'name = "h"\ncommand = [' + b'"x",' * 65 + b'"bot.py"]\n'})
        ),
        "'command' may have at most 64 words",
    ),
    (
        "a-10-MB-description",
        lambda: gzip.compress(
            _tar({"bot.toml": _GOOD_TOML + b'description = "' + b"d" * (10 << 20) + b'"\n'})
        ),
        "more than the 65536 a bot.toml may have",
    ),
    (
        "a-long-description",
        lambda: gzip.compress(
            _tar({"bot.toml": _GOOD_TOML + b'description = "' + b"d" * 501 + b'"\n'})
        ),
        "'description' must be a string of at most 500 characters",
    ),
]


@pytest.mark.parametrize(
    ("archive", "sentence"),
    [pytest.param(make, sentence, id=name) for name, make, sentence in HOSTILE_UPLOADS],
)
def test_a_hostile_archive_is_refused_at_upload(
    world: World, http: httpx.Client, archive: Callable[[], bytes], sentence: str
) -> None:
    """Issue 24, findings 11, 13, 16: refused at upload (400, one sentence), nothing made.

    Before the fixes these were stored as a version (bytes hidden after the tar's end, a
    bot.toml asking past the sandbox's caps) or answered 500 (a TOML nested 5,000 deep).
    """
    with unit_of_work(world.league.sessions) as session:
        before = submissions_today(session, "bob")
    response = _upload(http, world, "other", "hostile", archive())
    assert 400 == response.status_code, response.text
    error = response.json()["error"]
    assert sentence in error
    assert "\n" not in error
    with unit_of_work(world.league.sessions) as session:
        assert before == submissions_today(session, "bob")
    assert 404 == http.get("/api/v1/bots/hostile").status_code


def test_an_archive_as_tarfile_pads_it_is_accepted(world: World, http: httpx.Client) -> None:
    """The end check refuses nothing honest: GNU-style padding to a whole record is fine."""
    tar = _tar({"bot.toml": _GOOD_TOML, "bot.py": _BOT_PY})
    assert 0 == len(tar) % tarfile.RECORDSIZE
    response = _upload(http, world, "other", "padded", gzip.compress(tar))
    assert 201 == response.status_code, response.text


SHA512 = "sha512-" + base64.b64encode(bytes(range(64))).decode()
"""A well-formed sha512 integrity."""


def node_archive(directory: Path, name: str, spec: str, entry: Mapping[str, Any]) -> bytes:
    """A packed Node.js bot needing ``left-pad`` as ``spec``, its lock's entry ``entry``."""
    bot = directory / name
    bot.mkdir()
    (bot / "bot.toml").write_text(
        f'name = "{name}"\nruntime = "node"\ncommand = ["node", "bot.js"]\n'
    )
    (bot / "bot.js").write_text("require('left-pad');\n")
    package = {"name": name, "version": "1.0.0", "dependencies": {"left-pad": spec}}
    lock = {
        "name": name,
        "version": "1.0.0",
        "lockfileVersion": 3,
        "requires": True,
        "packages": {"": package, "node_modules/left-pad": dict(entry)},
    }
    (bot / "package.json").write_text(json.dumps(package))
    (bot / "package-lock.json").write_text(json.dumps(lock))
    return pack_bot(bot)


@pytest.mark.parametrize(
    ("spec", "entry", "reason"),
    [
        (
            "1.3.0",
            {"version": "1.3.0", "resolved": "git+ssh://git@127.0.0.1/x.git", "integrity": SHA512},
            "is resolved from git+ssh://git@127.0.0.1/x.git, which is not a registry's https",
        ),
        (
            "1.3.0",
            {
                "version": "1.3.0",
                "resolved": "http://127.0.0.1:9/left-pad/-/left-pad-1.3.0.tgz",
                "integrity": SHA512,
            },
            "is resolved from http://127.0.0.1:9/left-pad/-/left-pad-1.3.0.tgz, which is not",
        ),
        (
            "1.3.0",
            {"version": "1.3.0"},
            "package-lock.json: node_modules/left-pad has no integrity",
        ),
        (
            "1.3.0",
            {"resolved": "../secrets", "link": True},
            "node_modules/left-pad is a local folder or a link",
        ),
        (
            "github:evil/left-pad",
            {"version": "1.3.0", "integrity": SHA512},
            "package.json: dependencies['left-pad'] is \"github:evil/left-pad\", not a version",
        ),
    ],
    ids=["git+ssh", "http", "no integrity", "link", "github"],
)
def test_a_lock_file_that_leaves_the_registry_is_400_with_its_slot_back(
    world: World,
    http: httpx.Client,
    tmp_path: Path,
    spec: str,
    entry: Mapping[str, Any],
    reason: str,
) -> None:
    """A Node.js bot whose packages do not all come from npm's registry is refused at upload.

    Issue 24, finding 6: npm ci runs on the league's hosts with their network, and followed a
    lock file's ``resolved`` URL anywhere (git, file, http) or installed a package it could
    not check (no integrity). The upload is refused with the rule's sentence; no slot is used.
    """
    with unit_of_work(world.league.sessions) as session:
        before = submissions_today(session, "bob")
    archive = node_archive(tmp_path, "npmbot", spec, entry)
    response = _upload(http, world, "other", "npmbot", archive)
    assert 400 == response.status_code, response.text
    error = response.json()["error"]
    assert reason in error
    assert "a Node.js bot's packages come only from npm's registry" in error
    with unit_of_work(world.league.sessions) as session:
        assert before == submissions_today(session, "bob")
    assert 404 == http.get("/api/v1/bots/npmbot").status_code


def test_a_node_bot_pinned_to_the_registry_is_accepted(
    world: World, http: httpx.Client, tmp_path: Path
) -> None:
    """The same bot with its package pinned by a sha512 integrity, from the registry: 201."""
    archive = node_archive(tmp_path, "goodnpm", "1.3.0", {"version": "1.3.0", "integrity": SHA512})
    response = _upload(http, world, "other", "goodnpm", archive)
    assert 201 == response.status_code, response.text


def test_an_upload_of_another_type_is_415(world: World, http: httpx.Client) -> None:
    """An upload must be sent as application/gzip (or octet-stream): JSON is refused (415)."""
    headers = {**world.headers("owner"), "Content-Type": "application/json"}
    response = http.post("/api/v1/bots/alpha/versions", headers=headers, content=b"{}")
    assert 415 == response.status_code
    assert "application/gzip" in response.json()["error"]


@contextmanager
def served_with(world: World, **changes: Any) -> Iterator[str]:
    """The world's league served again with other settings (``LeagueConfig`` fields)."""
    config = dataclasses.replace(world.league.config, **changes)
    app = create_app(dataclasses.replace(world.league, config=config))
    with serve_in_thread(app) as url:
        yield url


def _raw(url: str, request: bytes) -> tuple[int, bytes]:
    """Send ``request`` as it is on a socket; the status and body of the answer."""
    parts = urlsplit(url)
    assert parts.hostname is not None and parts.port is not None
    with socket.create_connection((parts.hostname, parts.port), timeout=60) as sock:
        sock.sendall(request)
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
    head, _, body = received.partition(b"\r\n\r\n")
    return int(head.split()[1]), body


def test_a_declared_length_past_the_limit_is_413_before_any_byte(world: World) -> None:
    """A Content-Length past max_compressed_bytes is refused without reading the body."""
    with served_with(world, uploads=UploadLimits(max_compressed_bytes=4096)) as url:
        request = (
            b"POST /api/v1/bots/zeta/versions HTTP/1.1\r\n"
            b"Host: test\r\nContent-Type: application/gzip\r\n"
            b"Authorization: Bearer " + str(world.tokens["owner"]).encode() + b"\r\n"
            b"Content-Length: 1000000000\r\nConnection: close\r\n\r\n"
        )
        status, body = _raw(url, request)
    assert 413 == status
    assert "larger than 4096 bytes" in json.loads(body)["error"]


def test_a_streamed_body_past_the_limit_is_413(world: World, http: httpx.Client) -> None:
    """A chunked body (no length declared) is cut off once past the limit, and nothing is made."""
    chunks = [b"\x00" * 1024 for _ in range(6)]
    with served_with(world, uploads=UploadLimits(max_compressed_bytes=4096)) as url:
        response = httpx.post(
            f"{url}/api/v1/bots/zeta/versions",
            headers={**world.headers("owner"), "Content-Type": "application/gzip"},
            content=iter(chunks),
            timeout=60,
        )
    assert "content-length" not in response.request.headers
    assert 413 == response.status_code
    assert "larger than 4096 bytes" in response.json()["error"]
    assert 404 == http.get("/api/v1/bots/zeta").status_code


def test_past_the_daily_limit_is_429(world: World) -> None:
    """The submission past the day's limit is refused (429) with the limit's sentence."""
    token = user_token(world.league, "frank")
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/gzip"}
    with served_with(world, submissions_per_day=1) as url:
        first = httpx.post(
            f"{url}/api/v1/bots/eta/versions",
            headers=headers,
            content=bot_archive(world.tmp, "eta1"),
            timeout=60,
        )
        second = httpx.post(
            f"{url}/api/v1/bots/eta/versions",
            headers=headers,
            content=bot_archive(world.tmp, "eta2"),
            timeout=60,
        )
    assert 201 == first.status_code, first.text
    assert 429 == second.status_code
    assert second.json()["error"].startswith("frank has made 1 submissions today")


def test_activating_a_rejected_version_is_409(world: World, http: httpx.Client) -> None:
    """A rejected version cannot be activated: 409 with the reason it was rejected."""
    response = http.post("/api/v1/bots/alpha/versions/2/activate", headers=world.headers("owner"))
    assert 409 == response.status_code
    assert "rejected" in response.json()["error"]


def test_admin_disables_and_enables_a_bot(world: World, http: httpx.Client) -> None:
    """Disable and enable answer the bot with its new state."""
    headers = world.headers("admin")
    assert http.post("/api/v1/bots/gamma/disable", headers=headers).json()["disabled"] is True
    assert http.get("/api/v1/bots/gamma").json()["disabled"] is True
    assert http.post("/api/v1/bots/gamma/enable", headers=headers).json()["disabled"] is False


# ------------------------------------------------------------------ the rest


def test_reads_do_not_queue_behind_a_writer(world: World, http: httpx.Client) -> None:
    """Issue 24, finding 2: on SQLite, a read answers while another holds the write lock.

    The test holds the league file's write lock (``BEGIN IMMEDIATE`` on a connection of its
    own, as a long submission did) while it reads the public routes. Before the fix every
    read began ``IMMEDIATE`` too, waited out the 10 s busy timeout and answered 500.
    """
    if world.league.engine.dialect.name != "sqlite":
        pytest.skip("PostgreSQL readers never wait for writers")
    database = world.league.engine.url.database
    assert database is not None
    writer = sqlite3.connect(database, isolation_level=None, timeout=30)
    try:
        writer.execute("BEGIN IMMEDIATE")
        paths = [
            "/api/v1/leaderboard",
            "/api/v1/status",
            "/api/v1/bots",
            "/api/v1/bots/alpha",
            "/api/v1/bots/alpha/versions/1",
            "/api/v1/matches",
            f"/api/v1/matches/{world.match}",
            f"/api/v1/matches/{world.match}/replay",
        ]
        answers = {path: http.get(path).status_code for path in paths}
    finally:
        writer.execute("ROLLBACK")
        writer.close()
    assert dict.fromkeys(paths, 200) == answers


def test_leaderboard_and_status_are_the_services_answers(world: World, http: httpx.Client) -> None:
    """The leaderboard and status endpoints serve what the league's services compute."""
    with unit_of_work(world.league.sessions) as session:
        rows = leaderboard(session)
        status = league_status(session)
    board = http.get("/api/v1/leaderboard").json()
    assert "test" == board["league"]
    assert jsonable_encoder(rows) == board["standings"]
    assert {"alpha", "beta"} <= {r["bot"] for r in board["standings"]}
    answered = http.get("/api/v1/status").json()
    assert (status.queued, status.finished, status.active_versions) == (
        answered["queued"],
        answered["finished"],
        answered["active_versions"],
    )
    assert {"slots": 2} == answered["executor"]


def test_health_metrics_and_openapi(world: World, http: httpx.Client) -> None:
    """Health says ok, /metrics serves the hook's text, /openapi.json describes the API."""
    assert "ok" == http.get("/api/v1/health").json()["status"]
    metrics = http.get("/metrics")
    assert METRICS == metrics.text
    assert metrics.headers["content-type"].startswith("text/plain; version=0.0.4")
    paths = http.get("/openapi.json").json()["paths"]
    assert {r.route for r in MATRIX} <= set(paths)


def test_errors_are_json_sentences(world: World, http: httpx.Client) -> None:
    """An unknown path (404), a wrong method (405) and a malformed parameter (400) answer JSON."""
    assert "no such endpoint: GET /api/v1/nothing" == http.get("/api/v1/nothing").json()["error"]
    wrong = http.delete("/api/v1/leaderboard")
    assert 405 == wrong.status_code and "does not take DELETE" in wrong.json()["error"]
    bad = http.get("/api/v1/matches", params={"limit": "many"})
    assert 400 == bad.status_code and bad.json()["error"].startswith("limit:")


def test_a_missing_artifact_is_a_500_that_says_so(world: World, http: httpx.Client) -> None:
    """A replay whose bytes left the artifact store is a 500 naming the artifact, in JSON."""
    with unit_of_work(world.league.sessions) as session:
        seats = session.scalars(select(BotVersion.id).order_by(BotVersion.id).limit(2)).all()
        match_id = enqueue_match(session, seats, now=NOW)
        match = session.get_one(Match, match_id)
        match.status, match.replay_sha256, match.finished_at = MatchStatus.FINISHED, "0" * 64, NOW
    response = http.get(f"/api/v1/matches/{match_id}/replay")
    assert 500 == response.status_code
    assert f"artifact {'0' * 64} is not in the store" == response.json()["error"]


# ------------------------------------------------------------------ the client


def test_the_client_reaches_every_endpoint(world: World) -> None:
    """Every LeagueClient method talks to its endpoint and gives back the server's answer."""
    owner = LeagueClient(world.url, world.tokens["owner"])
    admin = LeagueClient(world.url, world.tokens["admin"])
    with owner, admin:
        assert "ok" == owner.health()["status"]
        assert "alice" == owner.me()["name"]
        assert owner.submit("alpha", world.archive)["new"] is False
        assert {"alpha", "beta", "gamma"} <= {b["name"] for b in owner.bots()}
        assert "alice" == owner.bot("alpha")["owner"]
        assert "active" == owner.version("alpha", 1)["status"]
        assert world.archive == owner.source("alpha", 1)
        assert b"log of the build step\n" == owner.step_log("alpha", 1, "build")
        assert "active" == owner.activate("alpha", 1)["status"]
        assert admin.disable_bot("gamma")["disabled"] is True
        assert admin.enable_bot("gamma")["disabled"] is False
        assert "standings" in owner.leaderboard()
        assert "queued" in owner.status()
        assert world.match in {m["id"] for m in owner.matches(bot="alpha", limit=100)}
        assert world.match == owner.match(world.match)["id"]
        assert NOTES[0].encode() in owner.replay(world.match)
        assert LOGS[0] == owner.seat_log(world.match, 0)
        assert METRICS == owner.metrics()


def test_the_client_raises_the_servers_sentence(world: World) -> None:
    """Refusals become the matching LeagueError with the server's words."""
    with LeagueClient(world.url, world.tokens["other"]) as bob:
        with pytest.raises(NotFound, match="no bot named 'nosuchbot'"):
            bob.bot("nosuchbot")
        with pytest.raises(Forbidden, match="for its owner"):
            bob.source("alpha", 1)
        with pytest.raises(Forbidden, match="belongs to another user"):
            bob.submit("alpha", world.archive)
        with pytest.raises(Conflict, match="duplicate group"):
            bob.replay(world.half_group)
        with pytest.raises(UploadRejected):
            bob.submit("theta", b"not an archive")


def test_the_client_says_when_the_league_cannot_be_reached() -> None:
    """A server that does not answer is LeagueUnavailable, naming the URL."""
    port = free_port()  # nobody listens there
    with (
        LeagueClient(f"http://127.0.0.1:{port}", timeout=5) as client,
        pytest.raises(LeagueUnavailable, match=f"cannot reach the league at .*:{port}"),
    ):
        client.health()


def test_follow_yields_until_the_validation_ends(world: World) -> None:
    """Following a version already validated yields it once and stops."""
    with LeagueClient(world.url, world.tokens["owner"]) as client:
        seen = list(client.follow("alpha", 2, interval=0.05, timeout=30))
    assert ["rejected"] == [v["status"] for v in seen]


def test_a_stored_token_goes_only_to_its_own_league(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """client_for sends the stored token to the stored league only; elsewhere none, or an error."""
    monkeypatch.delenv("ARENA_TOKEN", raising=False)
    stored = tmp_path / "credentials.toml"
    token = "ffa_" + "t" * 43
    save_credentials(Credentials.checked("http://league.example:8000", token), stored)
    home = client_for(credentials_file=stored)
    assert ("http://league.example:8000", True) == (home.url, home.signed_in)
    elsewhere = client_for("http://other.example", signed_in=False, credentials_file=stored)
    assert ("http://other.example", False) == (elsewhere.url, elsewhere.signed_in)
    with pytest.raises(LeagueConfigError, match=r"no API token for http://other\.example"):
        client_for("http://other.example", credentials_file=stored)
    monkeypatch.setenv("ARENA_TOKEN", token)
    assert client_for("http://other.example", credentials_file=stored).signed_in
    with pytest.raises(LeagueConfigError, match="not logged in"):
        client_for(credentials_file=tmp_path / "none.toml")


# ------------------------------------------------------------------ findings of issue 24

HUGE = "99999999999999999999"
"""Past 2**63 - 1: SQLite cannot even compare with it (it answered 500)."""


@pytest.mark.parametrize(
    "path",
    [
        f"/api/v1/matches/{HUGE}",
        f"/api/v1/matches/-{HUGE}",
        f"/api/v1/matches/{HUGE}/replay",
        f"/api/v1/matches/@match/logs/{HUGE}",
        f"/api/v1/matches?before={HUGE}",
        f"/api/v1/bots/alpha/versions/{HUGE}",
        f"/api/v1/bots/alpha/versions/{HUGE}/source",
        f"/api/v1/bots/alpha/versions/{HUGE}/steps/build/log",
    ],
)
def test_a_number_past_what_the_database_holds_is_400(
    world: World, http: httpx.Client, path: str
) -> None:
    """Ids, numbers and ``before=`` past the 64-bit range are a 400 sentence, not a 500."""
    path = path.replace("@match", str(world.match))
    response = http.get(path, headers=world.headers("admin"))
    assert 400 == response.status_code, response.text
    assert "than or equal to" in response.json()["error"]


def test_the_executors_host_and_pid_are_for_admins_only(world: World) -> None:
    """/api/v1/status hides the executor's worker name (HOST:PID:RANDOM) but from admins."""
    status = {"worker": "box.example:4242:0e6f", "slots": 2, "fleet": {"worker": "x", "kind": "p"}}
    app = create_app(world.league, executor_status=lambda: {"executor": status, "worker": "y"})
    with serve_in_thread(app) as url, httpx.Client(base_url=url, timeout=60) as client:
        shown = {
            caller: client.get("/api/v1/status", headers=world.headers(caller)).json()["executor"]
            for caller in CALLERS
        }
    hidden = {"executor": {"slots": 2, "fleet": {"kind": "p"}}}
    assert {"anonymous": hidden, "other": hidden, "owner": hidden} == {
        k: v for k, v in shown.items() if k != "admin"
    }
    assert {"executor": status, "worker": "y"} == shown["admin"]


def test_an_admin_steps_a_season_and_everyone_reads_it(world: World, http: httpx.Client) -> None:
    """Start (201), freeze (the entries), refusals with one sentence (409), public reads.

    The world's bots belong to two owners, so a final of 3 seats cannot keep them apart:
    it is refused, saying so, and the season stays frozen.
    """
    admin = world.headers("admin")
    made = http.post(
        "/api/v1/seasons", headers=admin, json={"name": "api-s1", "budget": 12, "looks": 2}
    )
    assert 201 == made.status_code, made.text
    assert ("open", 12) == (made.json()["status"], made.json()["settings"]["budget"])
    again = http.post("/api/v1/seasons", headers=admin, json={"name": "api-s2"})
    assert 409 == again.status_code
    assert "the season 'api-s1' is not closed yet" in again.json()["error"]
    frozen = http.post("/api/v1/seasons/api-s1/freeze", headers=admin)
    assert 200 == frozen.status_code, frozen.text
    entries = {e["name"] for e in frozen.json()["entries"]}
    assert {"alpha-v1", "beta-v1"} <= entries
    final = http.post("/api/v1/seasons/api-s1/final", headers=admin)
    assert 409 == final.status_code
    assert "cannot be played" in final.json()["error"]
    closed = http.post("/api/v1/seasons/api-s1/close", headers=admin)
    assert 409 == closed.status_code
    for caller in CALLERS:
        listed = http.get("/api/v1/seasons", headers=world.headers(caller)).json()["seasons"]
        assert ["api-s1"] == [s["name"] for s in listed]
        shown = http.get("/api/v1/seasons/api-s1", headers=world.headers(caller)).json()
        assert ("frozen", entries) == (shown["status"], {e["name"] for e in shown["entries"]})
