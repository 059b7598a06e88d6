"""The league's HTTP API: JSON under ``/api/v1/``, for ``arena submit``, the CLI and the web.

:func:`create_app` builds the FastAPI application of one open league; ``arena league serve``
runs it with uvicorn, and :func:`serve_in_thread` runs it on a real socket in a thread (tests,
embedding). The routes are thin: they take the caller from the ``Authorization: Bearer
ffa_…`` header, run one use case of the league's services in one :func:`unit_of_work`, and
return JSON. OpenAPI is served at ``/openapi.json``.

Who may do what (``tests/arena/league/api/test_api.py`` checks every endpoint for every kind of
caller: anonymous, another user, the owner, an admin):

- public: health, the leaderboard, the league's status, bots and their versions (summaries),
  matches (never their seed), finished matches' replays, with the debug notes of every seat
  whose bot the caller does not own removed (an admin sees them all);
- signed in: ``/me``; submitting a version of one's own bot (or a new bot, which becomes
  one's own); admins may not submit for someone else;
- the bot's owner or an admin: a version's validation steps and their logs, its source
  archive, activating a version, a seat's bot log;
- an admin: disabling and enabling bots; a season's steps (start, freeze, final, close);
  seasons and their standings are public;
- a fleet's worker, with a worker token and nothing else: the routes under
  ``/api/v1/worker/`` (``_worker_routes.py``), which no user's token opens.

Errors are ``{"error": "one sentence"}`` with the status of the
:class:`~arena.league.LeagueError` raised (400 malformed, a number past what the database
holds included; 401 no or a bad token, one answer for every bad token; 403 a disabled
account or not allowed; 404 unknown; 409 not now; 413 too big; 429 the daily submission
limit, or too many wrong tokens from one client, with ``Retry-After``).

Before any route runs, the gate (``_gate.py``) bounds every body and checks a worker's
token; the server bounds its connections (``_connections.py``, :func:`serve_in_thread` and
``arena league serve`` alike).

A replay is served only once every match of its duplicate group is finished: the group's
matches share their deals, so a finished rotation's replay would tell the cards of a rotation
still being played.
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Annotated, Any

from fastapi import Depends, FastAPI, Path, Query, Request
from fastapi.encoders import jsonable_encoder
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from pydantic import BaseModel, Field, StringConstraints
from sqlalchemy import text
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool

from arena import __version__
from arena._errors import (
    Forbidden,
    NotAuthenticated,
    NotFound,
)
from arena.executors._http import add_error_handlers, bearer_token, error_response, read_upload
from arena.executors._protocol import WORKER_PREFIX
from arena.league._db import MAX_INTEGER, MIN_INTEGER, read_only, unit_of_work
from arena.league._dispatch import FleetRules
from arena.league._home import League
from arena.league._views import (
    JSON,
    bot_list,
    bot_row,
    filter_replay,
    group_over,
    iso,
    match_list,
    match_seats,
    match_view,
    may_see,
    replayable_match,
    version_json,
)
from arena.league.accounts._accounts import Account, Role, authenticate
from arena.league.api._gate import (
    MAX_WORKER_JSON_BYTES,
    BodyLimit,
    Gate,
    TokenThrottle,
    address,
)
from arena.league.api._worker_routes import (
    MAX_ARTIFACT_BYTES,
    MAX_JOB_ARTIFACT_BYTES,
    add_worker_routes,
    worker_of,
)
from arena.league.bots._bots import StepKind, disable_bot
from arena.league.bots._versions import (
    activate_version,
    get_version,
    list_versions,
    submit_version,
)
from arena.league.matches._challenges import request_challenge
from arena.league.matches._leaderboard import bot_page_data, leaderboard, league_status, matchup
from arena.league.matches._matches import Match, MatchStatus
from arena.league.matches._seasons import (
    close_season,
    freeze_season,
    season_list,
    season_view,
    start_final,
    start_season,
)

__all__ = [
    "API_PREFIX",
    "create_app",
]

API_PREFIX = "/api/v1"
_MAX_MATCHES = 500
# The status keys that name this server's machine and process (the executor's worker is
# HOST:PID:RANDOM): an admin's only.
_PRIVATE = frozenset({"worker"})
_NOSNIFF = {"X-Content-Type-Options": "nosniff"}
_BEARER = {"WWW-Authenticate": "Bearer"}
# What a bot's page adds to each of its versions: how it has done (``VersionSummary``).
_VERSION_RESULTS = ("matches", "mean_place", "first_places", "last_played", "placements")

log = logging.getLogger("arena.league.api")


def _caller(request: Request) -> Account | None:
    """The account of the request's Bearer token; None without an Authorization header.

    A client that sent too many wrong tokens is refused (429) before any lookup
    (``_gate.py``'s :class:`TokenThrottle`).
    """
    if request.url.path.startswith(WORKER_PREFIX + "/"):
        return None  # a worker's routes read a worker's token (``_worker_routes.py``)
    header = request.headers.get("authorization")
    if header is None:
        return None
    throttle: TokenThrottle = request.app.state.throttle
    client = address(request.scope)
    throttle.check(client)
    league: League = request.app.state.league
    try:
        token = bearer_token(header, "invalid or expired API token")
        if token is None:
            return None
        with unit_of_work(league.sessions) as session:
            return authenticate(session, league.key, token)
    except NotAuthenticated:
        throttle.failed(client)
        raise


Caller = Annotated[Account | None, Depends(_caller)]
DbInt = Annotated[int, Path(ge=MIN_INTEGER, le=MAX_INTEGER)]
"""An integer of a path (an id, a number) that the database can hold: others are 400."""
DbIntQuery = Annotated[int | None, Query(ge=MIN_INTEGER, le=MAX_INTEGER)]
"""The same, from the query string."""


def _signed_in(account: Caller) -> Account:
    if account is None:
        raise NotAuthenticated("this needs an API token (Authorization: Bearer ffa_…)")
    return account


SignedIn = Annotated[Account, Depends(_signed_in)]


def _admin(account: SignedIn) -> Account:
    if account.role is not Role.ADMIN:
        raise Forbidden("only an admin of the league may do this")
    return account


Admin = Annotated[Account, Depends(_admin)]


def create_app(
    league: League,
    *,
    executor_status: Callable[[], Mapping[str, Any]] | None = None,
    metrics: Callable[[], str] | None = None,
    fleet: FleetRules | None = None,
    body_limits: Sequence[BodyLimit] = (),
    throttle: TokenThrottle | None = None,
) -> FastAPI:
    """The HTTP API of ``league``.

    Args:
        league: the open league the API serves (its database, artifacts and settings).
        executor_status: what the match executor is doing (slots, running matches), added
            to ``GET /api/v1/status`` under ``"executor"``; None when nothing executes here.
        metrics: the Prometheus text of ``GET /metrics``; None serves no ``/metrics``.
        fleet: the rules and lease of the matches a Celery fleet's workers play, given to
            them by the workers' routes (``_worker_routes.py``); default ``FleetRules()``.
        body_limits: the body limits of routes added to the application later (the web
            pages'), ahead of the API's own (``_gate.py``).
        throttle: counts wrong tokens per client (users', workers', the sign-in form's);
            default ``TokenThrottle()``.

    Example::

        app = create_app(open_league(Path("myleague")))
        uvicorn.run(app, host="127.0.0.1", port=8000)
    """
    app = FastAPI(
        title=f"Flip Flop Arena league {league.config.name!r}",
        version=__version__,
        description="Submit bots, follow their validation, read standings, matches and replays.",
        # FastAPI's /docs and /redoc load their scripts from a CDN, unpinned, on the league's
        # origin: off. The description stays at /openapi.json for any OpenAPI viewer.
        docs_url=None,
        redoc_url=None,
        # Every request with a token has it checked, public endpoints too: a bad token is
        # told so (401) rather than silently served as anonymous.
        dependencies=[Depends(_caller)],
    )
    app.state.league = league
    app.state.throttle = throttle = throttle or TokenThrottle()
    add_error_handlers(app)
    add_worker_routes(app, league, fleet or FleetRules())
    app.add_middleware(
        Gate,
        limits=[*body_limits, *_body_limits(league)],
        throttle=throttle,
        worker_prefix=WORKER_PREFIX,
        check_worker=functools.partial(worker_of, league),
        api_prefix=API_PREFIX + "/",
    )

    @app.get(f"{API_PREFIX}/health")
    def health() -> JSONResponse:
        """Whether the league answers and its database is reachable (anonymous)."""
        try:
            with league.engine.connect() as connection:
                connection.execute(text("SELECT 1"))
        except Exception:
            log.exception("health: the database cannot be reached")
            return error_response(503, "the league's database cannot be reached")
        return JSONResponse({"status": "ok", "league": league.config.name, "version": __version__})

    if metrics is not None:
        exposition = metrics

        @app.get("/metrics", response_class=PlainTextResponse)
        def prometheus() -> PlainTextResponse:
            """The league's metrics in Prometheus' text format (version 0.0.4)."""
            return PlainTextResponse(
                exposition(), media_type="text/plain; version=0.0.4; charset=utf-8"
            )

    @app.get(f"{API_PREFIX}/me")
    def me(account: SignedIn) -> JSON:
        """The account the token belongs to."""
        return _account_json(account)

    @app.post(f"{API_PREFIX}/bots/{{name}}/versions", status_code=201)
    async def submit(
        name: str, request: Request, account: SignedIn, activate: bool = True
    ) -> JSONResponse:
        """Submit a new version of the bot NAME: the body is its tar.gz (``arena submit``).

        The bot is made (owned by the caller) if it does not exist. 201 with the new
        version; 200 with the existing one when the same archive was submitted before.
        ``activate=false`` validates it without making it the active version.
        """
        archive = await read_upload(request, league.config.uploads.max_compressed_bytes)

        def use_case() -> JSON:
            submitted = submit_version(league, account.name, name, archive, activate=activate)
            return {
                "version": version_json(submitted.version, private=True),
                "new": submitted.new,
                "left_today": submitted.left_today,
            }

        body = await run_in_threadpool(use_case)
        return JSONResponse(body, status_code=201 if body["new"] else 200)

    @app.get(f"{API_PREFIX}/bots")
    def bots() -> JSON:
        """Every bot: owner, whether disabled, its active version and that version's rating."""
        with read_only(league.sessions) as session:
            return {"bots": bot_list(session)}

    @app.get(f"{API_PREFIX}/bots/{{name}}")
    def bot(name: str, account: Caller) -> JSON:
        """The bot NAME: its versions with their results, latest matches, head-to-head.

        Its owner and admins also see each version's validation steps.
        """
        with read_only(league.sessions) as session:
            info = bot_row(session, name)
            page = bot_page_data(session, name)
            versions = list_versions(session, name)
        private = may_see(account, info["owner"])
        played = {
            v.number: {k: jsonable_encoder(getattr(v, k)) for k in _VERSION_RESULTS}
            for v in page.versions
        }
        return {
            **info,
            "versions": [
                {**played.get(v.number, {}), **version_json(v, private=private)} for v in versions
            ],
            "recent": jsonable_encoder(page.recent),
            "head_to_head": jsonable_encoder(page.head_to_head),
        }

    @app.get(f"{API_PREFIX}/bots/{{name}}/versions/{{number}}")
    def version(name: str, number: DbInt, account: Caller) -> JSON:
        """Version NUMBER of the bot NAME; its owner and admins also see its validation steps."""
        with read_only(league.sessions) as session:
            info = get_version(session, name, number)
        return version_json(info, private=may_see(account, info.owner))

    @app.get(f"{API_PREFIX}/bots/{{name}}/versions/{{number}}/source")
    def source(name: str, number: DbInt, account: SignedIn) -> Response:
        """The source archive (tar.gz) of a version: its owner's and admins' only."""
        with read_only(league.sessions) as session:
            info = get_version(session, name, number)
        _require_owner(account, info.owner, f"the source of {name} v{number}")
        return Response(
            league.artifacts.get(info.source_sha256),
            media_type="application/gzip",
            headers={
                "Content-Disposition": f'attachment; filename="{_filename(name)}-v{number}.tar.gz"',
                **_NOSNIFF,
            },
        )

    @app.get(f"{API_PREFIX}/bots/{{name}}/versions/{{number}}/steps/{{step}}/log")
    def step_log(name: str, number: DbInt, step: StepKind, account: SignedIn) -> Response:
        """The log of one validation step of a version: its owner's and admins' only."""
        with read_only(league.sessions) as session:
            info = get_version(session, name, number)
        _require_owner(account, info.owner, f"the logs of {name} v{number}")
        found = next((s for s in info.steps if s.step is step), None)
        if found is None or found.log_sha256 is None:
            raise NotFound(f"{name} v{number} has no log of its {step.value} step")
        return _text(league.artifacts.get(found.log_sha256))

    @app.post(f"{API_PREFIX}/bots/{{name}}/versions/{{number}}/activate")
    def activate(name: str, number: DbInt, account: SignedIn) -> JSON:
        """Make a validated version the bot's active one (a rollback or roll-forward)."""
        with unit_of_work(league.sessions) as session:
            info = get_version(session, name, number)
            _require_owner(account, info.owner, f"activating {name} v{number}")
            activated = activate_version(session, name, number)
        return version_json(activated, private=True)

    @app.post(f"{API_PREFIX}/bots/{{name}}/challenges", status_code=201)
    def challenge(name: str, body: ChallengeAsked, account: SignedIn) -> JSON:
        """Ask for an unrated match of the bot NAME (yours) against 2 to 4 bots of your choice.

        Its active version plays, or the validated ``version`` named. Queued ahead of rated
        matches, within the league's limits (``[challenges]``: a day's, and at once): 429
        past them. 201 with the match.
        """
        with unit_of_work(league.sessions) as session:
            match_id = request_challenge(
                session, league, account.name, name, body.opponents, version=body.version
            )
        with read_only(league.sessions) as session:
            return match_view(session, match_id)

    @app.get(f"{API_PREFIX}/bots/{{name}}/vs/{{other}}")
    def vs(name: str, other: str) -> JSON:
        """The meetings of the bots NAME and OTHER over time, and their places' difference."""
        with read_only(league.sessions) as session:
            found = matchup(session, name, other)
        answer: JSON = jsonable_encoder(found)
        return answer

    @app.post(f"{API_PREFIX}/bots/{{name}}/disable")
    def disable(name: str, account: Admin) -> JSON:
        """Take the bot NAME out of scheduling (admin)."""
        with unit_of_work(league.sessions) as session:
            disable_bot(session, name, disabled=True)
            return bot_row(session, name)

    @app.post(f"{API_PREFIX}/bots/{{name}}/enable")
    def enable(name: str, account: Admin) -> JSON:
        """Schedule the bot NAME again (admin)."""
        with unit_of_work(league.sessions) as session:
            disable_bot(session, name, disabled=False)
            return bot_row(session, name)

    @app.get(f"{API_PREFIX}/seasons")
    def seasons() -> JSON:
        """Every season, newest first: its name, status, steps' times and settings."""
        with read_only(league.sessions) as session:
            return {"seasons": season_list(session)}

    @app.get(f"{API_PREFIX}/seasons/{{name}}")
    def season(name: str) -> JSON:
        """One season: entries, its final's progress and standings, its record once closed."""
        with read_only(league.sessions) as session:
            return season_view(session, name)

    @app.post(f"{API_PREFIX}/seasons", status_code=201)
    def season_start(body: SeasonAsked, account: Admin) -> JSON:
        """Open a season with its final's settings (admin); 409 while another is not closed."""
        with unit_of_work(league.sessions) as session:
            start_season(
                session,
                body.name,
                table_size=body.table_size,
                budget=body.budget,
                top=body.top,
                alpha=body.alpha,
                looks=body.looks,
            )
        with read_only(league.sessions) as session:
            return season_view(session, body.name)

    def season_step(step: Callable[[Session, str], object], name: str) -> JSON:
        """One step of the season NAME in its own transaction; the season as it is then."""
        with unit_of_work(league.sessions) as session:
            step(session, name)
        with read_only(league.sessions) as session:
            return season_view(session, name)

    @app.post(f"{API_PREFIX}/seasons/{{name}}/freeze")
    def season_freeze(name: str, account: Admin) -> JSON:
        """Freeze the open season NAME: each playing bot's active version is its entry (admin)."""
        return season_step(freeze_season, name)

    @app.post(f"{API_PREFIX}/seasons/{{name}}/final")
    def season_final(name: str, account: Admin) -> JSON:
        """Start the final of the frozen season NAME; its first round is queued (admin)."""
        return season_step(start_final, name)

    @app.post(f"{API_PREFIX}/seasons/{{name}}/close")
    def season_close(name: str, account: Admin) -> JSON:
        """Close the season NAME once its final is decided; its record (admin).

        Closing a closed season answers the same record and changes nothing.
        """
        with unit_of_work(league.sessions) as session:
            return close_season(session, name)

    @app.get(f"{API_PREFIX}/leaderboard")
    def standings() -> JSON:
        """The standings of the active versions, ranked as ``arena run`` ranks bots."""
        with read_only(league.sessions) as session:
            rows = leaderboard(session)
        return {"league": league.config.name, "standings": jsonable_encoder(rows)}

    @app.get(f"{API_PREFIX}/status")
    def status(account: Caller) -> JSON:
        """The queue, the match counts and their spread, validations by outcome.

        The executor's worker name (``HOST:PID:RANDOM``) is for admins only.
        """
        with read_only(league.sessions) as session:
            info = league_status(session)
        executor = None if executor_status is None else dict(executor_status())
        if executor is not None and (account is None or account.role is not Role.ADMIN):
            executor = _public(executor)
        return {
            "league": league.config.name,
            **jsonable_encoder(info),
            "spread": info.spread,
            "executor": jsonable_encoder(executor),
        }

    @app.get(f"{API_PREFIX}/matches")
    def matches(
        bot: str | None = None,
        status: MatchStatus | None = None,
        limit: Annotated[int, Query(ge=1, le=_MAX_MATCHES)] = 50,
        before: DbIntQuery = None,
    ) -> JSON:
        """Matches, newest first: of one bot, in one state, and before a match id (paging)."""
        with read_only(league.sessions) as session:
            rows = match_list(session, bot=bot, status=status, limit=limit, before=before)
        return {"matches": rows}

    @app.get(f"{API_PREFIX}/matches/{{match_id}}")
    def match(match_id: DbInt) -> JSON:
        """One match: its seats, its state and, once finished, its result (never its seed)."""
        with read_only(league.sessions) as session:
            return match_view(session, match_id)

    @app.get(f"{API_PREFIX}/matches/{{match_id}}/replay")
    def replay(match_id: DbInt, account: Caller) -> Response:
        """A finished match's replay (JSON lines, docs/replay.md), others' debug notes removed."""
        with read_only(league.sessions) as session:
            row = replayable_match(session, match_id)
            seats = match_seats(session, [match_id])[match_id]
        assert row.replay_sha256 is not None
        visible = {s["seat"] for s in seats if may_see(account, s["owner"])}
        data = filter_replay(league.artifacts.get(row.replay_sha256), visible)
        return Response(data, media_type="application/x-ndjson", headers=_NOSNIFF)

    @app.get(f"{API_PREFIX}/matches/{{match_id}}/logs/{{seat}}")
    def seat_log(match_id: DbInt, seat: DbInt, account: SignedIn) -> Response:
        """The bot log of one seat of a finished match: that bot's owner's and admins' only."""
        with read_only(league.sessions) as session:
            row = session.get(Match, match_id)
            if row is None:
                raise NotFound(f"no match {match_id}")
            seats = match_seats(session, [match_id])[match_id]
        if not 0 <= seat < len(seats):
            raise NotFound(f"match {match_id} has no seat {seat}")
        _require_owner(account, seats[seat]["owner"], f"the logs of seat {seat}")
        with read_only(league.sessions) as session:
            group_over(session, row, "logs")
        logs = (row.result or {}).get("logs") or []
        digest = logs[seat] if seat < len(logs) else None
        if not isinstance(digest, str):
            raise NotFound(f"seat {seat} of match {match_id} left no log")
        return _text(league.artifacts.get(digest))

    return app


def _public(status: Mapping[str, Any]) -> dict[str, Any]:
    """An executor's status without what names the machine and process (:data:`_PRIVATE`)."""
    return {
        key: _public(value) if isinstance(value, Mapping) else value
        for key, value in status.items()
        if key not in _PRIVATE
    }


def _body_limits(league: League) -> list[BodyLimit]:
    """The API's routes that take more than ``MAX_BODY_BYTES``, with their limits."""
    uploads = league.config.uploads.max_compressed_bytes
    return [
        BodyLimit("POST", f"{API_PREFIX}/bots/{{name}}/versions", uploads, "the upload"),
        BodyLimit(
            "PUT", f"{WORKER_PREFIX}/artifacts/{{sha256}}", MAX_ARTIFACT_BYTES, "the artifact"
        ),
        BodyLimit("PUT", f"{WORKER_PREFIX}/artifacts", MAX_JOB_ARTIFACT_BYTES, "the artifacts"),
        BodyLimit("*", f"{WORKER_PREFIX}/{{rest:path}}", MAX_WORKER_JSON_BYTES),
    ]


class ChallengeAsked(BaseModel):
    """The body of ``POST /api/v1/bots/NAME/challenges``."""

    opponents: list[Annotated[str, StringConstraints(max_length=64)]] = Field(max_length=8)
    version: Annotated[int, Field(ge=1, le=MAX_INTEGER)] | None = None


class SeasonAsked(BaseModel):
    """The body of ``POST /api/v1/seasons``: a season's name and its final's settings."""

    name: Annotated[str, StringConstraints(max_length=64)]
    table_size: Annotated[int, Field(ge=3, le=5)] = 3
    budget: Annotated[int, Field(ge=1, le=1_000_000)] = 120
    top: Annotated[int, Field(ge=2, le=1000)] = 4
    alpha: Annotated[float, Field(gt=0, lt=0.5)] = 0.05
    looks: Annotated[int, Field(ge=1, le=1000)] = 6


def _require_owner(account: Account, owner: str, what: str) -> None:
    if not may_see(account, owner):
        raise Forbidden(f"{what} is for its owner ({owner}) and the league's admins only")


def _filename(name: str) -> str:
    """``name`` as a safe part of a download's file name (a header value)."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)


def _text(data: bytes) -> Response:
    # Logs are whatever a bot printed: served as plain text that no browser may sniff as HTML.
    return Response(data, media_type="text/plain; charset=utf-8", headers=_NOSNIFF)


def _account_json(account: Account) -> JSON:
    return {"name": account.name, "role": account.role.value, "created": iso(account.created)}
