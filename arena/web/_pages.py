"""The league's web pages: leaderboard, bots, versions, matches with their replays, live, account.

Every page is rendered on the server (Jinja2, autoescaped) from the same reads the API makes
(``arena.league._views``, ``matches._results``, ``bots._versions``), with the same rule of who
sees what: a bot's owner and the league's admins see its validation steps, logs and debug
notes; no one sees a replay (nor a live match's cards) before every match of its duplicate group
is over.
The little JavaScript there is (``static/``) only reads ``data-*`` attributes and JSON.

Forms that change something (sign in and out, submit, activate, a new token) are POSTs with
a CSRF token (``_session``); GET never writes. Owner-only pages answer 403 to others and
send the anonymous to sign in.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import json
import logging
import math
import threading
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

import jinja2
from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.formparsers import MultiPartException
from starlette.responses import (
    HTMLResponse,
    JSONResponse,
    PlainTextResponse,
    RedirectResponse,
    Response,
    StreamingResponse,
)

from arena._errors import (
    Conflict,
    Forbidden,
    LeagueError,
    NotAuthenticated,
    NotFound,
    UploadRejected,
)
from arena.league import League
from arena.league._db import MAX_INTEGER, MIN_INTEGER, read_only, unit_of_work
from arena.league._views import (
    JSON,
    bot_list,
    bot_row,
    filter_replay,
    match_seats,
    match_view,
    may_see,
    replayable_match,
)
from arena.league.accounts._accounts import Account, issue_token
from arena.league.api._gate import BodyLimit, TokenThrottle, TooManyFailures, address
from arena.league.bots._bots import StepKind, VersionStatus
from arena.league.bots._versions import activate_version, get_version, submit_version
from arena.league.matches._challenges import request_challenge
from arena.league.matches._leaderboard import (
    MIN_SAMPLES,
    LeaderRow,
    bot_page_data,
    leaderboard,
    leaderboard_state,
    matchup,
    rating_history,
)
from arena.league.matches._seasons import current_final, season_list, season_view
from arena.web import _viewer
from arena.web._live import LiveFeed
from arena.web._session import (
    CsrfFirst,
    Keys,
    csrf_nonce,
    csrf_token,
    current_account,
    end_session,
    keep_csrf,
    start_session,
    valid_csrf,
)

__all__ = ["SORTS", "add_pages", "body_limits"]

log = logging.getLogger("arena.web")

TEMPLATES = Path(__file__).with_name("templates")
_PENDING = frozenset(
    {
        VersionStatus.UPLOADED,
        VersionStatus.BUILDING,
        VersionStatus.CHECKING,
        VersionStatus.VALIDATING,
    }
)
_NOSNIFF = {"X-Content-Type-Options": "nosniff"}
_NO_STORE = {"Cache-Control": "no-store"}

FORM_FIELDS = 20
"""The most fields a form may send (the upload's has four)."""
FORM_FIELD_BYTES = 16 * 1024
"""The most bytes one field of a form may have (a token is 47, a bot's name 40)."""
FORM_OVERHEAD = 64 * 1024
"""What the upload's form may add to its archive: its other fields and the multipart framing."""
_CSRF_REFUSED = (
    "this form has expired or did not come from this league's pages: reload the page and send"
    " it again"
)

PAGE_ROWS = 100
"""Leaderboard rows per page: 1,000 rows were 500 KB of HTML and 24 ms to render."""
OPPONENTS = 25
"""The head-to-head rows of a bot's page: the bots it met most."""

SORTS: dict[str, tuple[str, bool]] = {
    "rank": ("rank", False),
    "bot": ("bot", False),
    "owner": ("owner", False),
    "rating": ("rating_mu", True),
    "place": ("mean_place", False),
    "adjusted": ("adjusted_place", False),
    "firsts": ("first_places", True),
    "matches": ("matches", True),
    "last": ("last_played", True),
}
"""The leaderboard's sortable columns: the row attribute and whether it sorts high first."""


def _when(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, str):
        value = dt.datetime.fromisoformat(value)
    return f"{value:%Y-%m-%d %H:%M} UTC"


def _num(value: Any, digits: int = 2) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "—"
    return f"{value:.{digits}f}"


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["when"] = _when
    env.filters["num"] = _num
    env.filters["url"] = lambda text: quote(str(text), safe="")
    return env


def _safe_next(target: str | None) -> str:
    """A local path to go to after signing in, never another site's (``//host``)."""
    if not target or not target.startswith("/") or target.startswith(("//", "/\\")):
        return "/account"
    return target


class _Board:
    """The leaderboard's rows, read again only when ``leaderboard_state`` changes.

    Its read is the costly part of the page at a thousand bots (about 20 ms of the 36 ms
    the page took, benchmarks/web.py); the state is three small reads.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._state: tuple[Any, ...] | None = None
        self._rows: list[LeaderRow] = []

    def rows(self, league: League) -> list[LeaderRow]:
        with read_only(league.sessions) as session:
            # Read in this order, the rows are never older than the state they are kept for.
            state = leaderboard_state(session)
            with self._lock:
                if state == self._state:
                    return self._rows
            rows = leaderboard(session)
        with self._lock:
            self._state, self._rows = state, rows
        return rows


class _Site:
    """What every page needs: the league, the keys, the templates, the live feed, the throttle."""

    def __init__(self, league: League, live: LiveFeed, throttle: TokenThrottle) -> None:
        self.league = league
        self.keys = Keys.of(league)
        self.env = _environment()
        self.live = live
        self.board = _Board()
        self.throttle = throttle

    def account(self, request: Request) -> Account | None:
        return current_account(request, self.league, self.keys)

    def render(
        self,
        request: Request,
        template: str,
        *,
        status: int = 200,
        account: Account | None = None,
        headers: dict[str, str] | None = None,
        **context: Any,
    ) -> HTMLResponse:
        """The page ``template`` with ``context``, the account, and a CSRF token for forms."""
        nonce, new_nonce = csrf_nonce(request)
        html = self.env.get_template(template).render(
            request_path=request.url.path,
            league=self.league.config.name,
            me=account,
            csrf=csrf_token(self.keys, nonce),
            **context,
        )
        response = HTMLResponse(html, status_code=status, headers=headers)
        if new_nonce:
            keep_csrf(response, nonce)
        return response

    def error(self, request: Request, exc: LeagueError, account: Account | None) -> Response:
        status = getattr(exc, "status_code", 400)
        if status == 401 and account is None and request.method == "GET":
            return RedirectResponse(f"/login?next={quote(request.url.path)}", status_code=303)
        return self.render(
            request,
            "error.html",
            status=status,
            account=account,
            status_code=status,
            message=str(exc),
        )


Page = Callable[..., Awaitable[Response]]


class _Unshowable(LeagueError):
    """A stored replay that the viewer cannot re-run (the league's fault, not the caller's)."""

    status_code = 500


def body_limits(league: League) -> list[BodyLimit]:
    """The pages that take more than a form's ``MAX_BODY_BYTES``: the upload's."""
    upload = league.config.uploads.max_compressed_bytes + FORM_OVERHEAD
    return [BodyLimit("POST", "/submit", upload, "the upload")]


def add_pages(app: FastAPI, league: League, *, live: LiveFeed) -> None:
    """Add the web pages of ``league`` to ``app`` (the API's application).

    ``app`` is the API's: its gate limits the pages' bodies too (:func:`body_limits`, given
    to ``create_app``), and its throttle counts the wrong tokens of the sign-in form.
    """
    site = _Site(league, live, app.state.throttle)

    def with_account(
        handler: Callable[..., Awaitable[Response]],
        on_error: Callable[[Request, LeagueError, Account | None], Response],
    ) -> Page:
        """``handler`` with the signed-in account passed in, league errors to ``on_error``."""

        @functools.wraps(handler)
        async def wrapper(request: Request, **kwargs: Any) -> Response:
            account = await run_in_threadpool(site.account, request)
            try:
                _check_integers(kwargs)
                return await handler(request, account, **kwargs)
            except LeagueError as exc:
                return on_error(request, exc, account)

        return wrapper

    def json_error(request: Request, exc: LeagueError, account: Account | None) -> Response:
        status = getattr(exc, "status_code", 400)
        return JSONResponse({"error": str(exc)}, status_code=status, headers=_NOSNIFF)

    def page(handler: Callable[..., Awaitable[Response]]) -> Page:
        """A page handler: the signed-in account passed in, league errors as an HTML page."""
        return with_account(handler, site.error)

    def data(handler: Callable[..., Awaitable[Response]]) -> Page:
        """A JSON handler for the pages' scripts: league errors as ``{"error": …}``."""
        return with_account(handler, json_error)

    async def form_of(request: Request) -> Any:
        """A form without files (every form but the upload's), its CSRF token checked."""
        try:
            form = await request.form(
                max_files=0, max_fields=FORM_FIELDS, max_part_size=FORM_FIELD_BYTES
            )
        except StarletteHTTPException as exc:  # malformed, or a file where none belongs
            raise LeagueError(f"the form cannot be read: {exc.detail}") from exc
        if not valid_csrf(request, site.keys, _field(form, "csrf")):
            raise Forbidden(_CSRF_REFUSED)
        return form

    async def upload_form_of(request: Request) -> Any:
        """The upload's form: its CSRF token checked before its file is read (``CsrfFirst``)."""
        kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if kind != "multipart/form-data":
            return await form_of(request)  # no file can come in any other form
        try:
            async with contextlib.aclosing(request.stream()) as stream:
                parser = CsrfFirst(
                    request.headers,
                    stream,
                    valid=lambda token: valid_csrf(request, site.keys, token),
                    refusal=_CSRF_REFUSED,
                    max_files=1,
                    max_fields=FORM_FIELDS,
                    max_part_size=FORM_FIELD_BYTES,
                )
                form = await parser.parse()
        except MultiPartException as exc:
            raise LeagueError(f"the form cannot be read: {exc.message}") from exc
        if not valid_csrf(request, site.keys, _field(form, "csrf")):
            raise Forbidden(_CSRF_REFUSED)  # a form that held no file at all
        return form

    def signed_in(account: Account | None) -> Account:
        if account is None:
            raise NotAuthenticated("sign in first (with your API token)")
        return account

    # ------------------------------------------------------------------ leaderboard

    async def home(request: Request, account: Account | None) -> Response:
        sort = request.query_params.get("sort", "rank")
        if sort not in SORTS:
            raise LeagueError(f"cannot sort by {sort!r}: by one of {', '.join(SORTS)}")
        direction = request.query_params.get("dir")
        if direction not in (None, "asc", "desc"):
            raise LeagueError("dir is asc or desc")
        number = request.query_params.get("page", "1")
        if not number.isdigit() or int(number) < 1:
            raise LeagueError(f"page is a number from 1 (got {number!r})")

        def answer() -> Response:
            rows = site.board.rows(league)
            with read_only(league.sessions) as session:
                final = current_final(session)
            attribute, high_first = SORTS[sort]
            descending = high_first if direction is None else direction == "desc"
            ordered = _sorted(rows, attribute, descending)
            pages = max(1, math.ceil(len(ordered) / PAGE_ROWS))
            page_no = min(int(number), pages)
            return site.render(
                request,
                "leaderboard.html",
                account=account,
                rows=ordered[(page_no - 1) * PAGE_ROWS : page_no * PAGE_ROWS],
                total=len(ordered),
                first=(page_no - 1) * PAGE_ROWS + 1,
                page_no=page_no,
                pages=pages,
                bands=_bands(rows) if sort == "rank" and not descending else {},
                sort=sort,
                dir="desc" if descending else "asc",
                descending=descending,
                sorts=SORTS,
                min_samples=MIN_SAMPLES,
                final=final,
            )

        # Rendering a page of rows takes a few ms: not on the event loop (the live feed).
        return await run_in_threadpool(answer)

    # ------------------------------------------------------------------ bots

    async def bot_page(request: Request, account: Account | None, name: str) -> Response:
        def answer() -> Response:
            with read_only(league.sessions) as session:
                info = bot_row(session, name)
                data_ = bot_page_data(session, name, opponents=OPPONENTS)
            return site.render(
                request,
                "bot.html",
                account=account,
                bot=info,
                page=data_,
                private=may_see(account, info["owner"]),
                # Only its owner challenges with a bot (an admin no more than anyone else).
                challenger=account is not None and account.name == info["owner"],
                limits=league.config.challenges,
            )

        return await run_in_threadpool(answer)

    async def challenge(request: Request, account: Account | None, name: str) -> Response:
        form = await form_of(request)
        me = signed_in(account)
        opponents = (_field(form, "opponents") or "").replace(",", " ").split()
        version = _field(form, "version") or ""
        if version and not version.isdigit():
            raise LeagueError(f"version must be a version's number (got {version[:20]!r})")

        def write() -> int:
            with unit_of_work(league.sessions) as session:
                return request_challenge(
                    session,
                    league,
                    me.name,
                    name,
                    opponents,
                    version=int(version) if version else None,
                )

        match_id = await run_in_threadpool(write)
        return RedirectResponse(f"/matches/{match_id}", status_code=303)

    # ------------------------------------------------------------------ seasons

    async def seasons_page(request: Request, account: Account | None) -> Response:
        def read() -> Any:
            with read_only(league.sessions) as session:
                return season_list(session)

        found = await run_in_threadpool(read)
        return site.render(request, "seasons.html", account=account, seasons=found)

    async def season_page(request: Request, account: Account | None, name: str) -> Response:
        def read() -> Any:
            with read_only(league.sessions) as session:
                return season_view(session, name)

        found = await run_in_threadpool(read)
        return site.render(request, "season.html", account=account, s=found)

    async def vs_page(request: Request, account: Account | None, name: str, other: str) -> Response:
        def read() -> Any:
            with read_only(league.sessions) as session:
                return matchup(session, name, other)

        found = await run_in_threadpool(read)
        return site.render(request, "vs.html", account=account, m=found, min_samples=MIN_SAMPLES)

    async def rating_json(request: Request, account: Account | None, name: str) -> Response:
        def read() -> list[Any]:
            with read_only(league.sessions) as session:
                return rating_history(session, name)

        points = await run_in_threadpool(read)
        return JSONResponse({"points": jsonable_encoder(points)}, headers=_NOSNIFF)

    async def version_page(
        request: Request, account: Account | None, name: str, number: int
    ) -> Response:
        def read() -> Any:
            with read_only(league.sessions) as session:
                return get_version(session, name, number)

        info = await run_in_threadpool(read)
        return site.render(
            request,
            "version.html",
            account=account,
            version=info,
            private=may_see(account, info.owner),
            pending=info.status in _PENDING,
            activatable=info.status is VersionStatus.RETIRED,
            headers=_NO_STORE,
        )

    async def version_steps(
        request: Request, account: Account | None, name: str, number: int
    ) -> Response:
        info = await run_in_threadpool(_version_for_owner, league, account, name, number)
        return JSONResponse(
            {
                "status": info.status.value,
                "pending": info.status in _PENDING,
                "reason": info.reason,
                "steps": [
                    {
                        "step": s.step.value,
                        "outcome": None if s.outcome is None else s.outcome.value,
                        "detail": s.detail,
                        "log": s.log_sha256 is not None,
                    }
                    for s in info.steps
                ],
            },
            headers={**_NOSNIFF, **_NO_STORE},
        )

    async def step_log(
        request: Request, account: Account | None, name: str, number: int, step: str
    ) -> Response:
        try:
            kind = StepKind(step)
        except ValueError:
            raise NotFound(f"no validation step named {step!r}") from None
        info = await run_in_threadpool(_version_for_owner, league, account, name, number)
        found = next((s for s in info.steps if s.step is kind), None)
        if found is None or found.log_sha256 is None:
            raise NotFound(f"{name} v{number} has no log of its {kind.value} step")
        body = await run_in_threadpool(league.artifacts.get, found.log_sha256)
        return PlainTextResponse(body, headers={**_NOSNIFF, **_NO_STORE})

    async def activate(
        request: Request, account: Account | None, name: str, number: int
    ) -> Response:
        await form_of(request)
        me = signed_in(account)

        def write() -> None:
            with unit_of_work(league.sessions) as session:
                info = get_version(session, name, number)
                if not may_see(me, info.owner):
                    raise Forbidden(
                        f"activating {name} v{number} is for its owner ({info.owner}) and the"
                        " league's admins only"
                    )
                activate_version(session, name, number)

        await run_in_threadpool(write)
        return RedirectResponse(f"/bots/{quote(name)}/versions/{number}", status_code=303)

    # ------------------------------------------------------------------ matches

    async def match_page(request: Request, account: Account | None, match_id: int) -> Response:
        def read() -> tuple[JSON, str | None]:
            with read_only(league.sessions) as session:
                shown = match_view(session, match_id)
                try:
                    replayable_match(session, match_id)
                except (Conflict, NotFound) as exc:
                    return shown, str(exc)
                return shown, None

        match, no_replay = await run_in_threadpool(read)
        result = match["result"] or {}
        faults: dict[int, list[JSON]] = {}
        for fault in result.get("faults") or ():
            faults.setdefault(int(fault.get("seat", -1)), []).append(fault)
        return site.render(
            request,
            "match.html",
            account=account,
            match=match,
            result=result,
            faults=faults,
            no_replay=no_replay,
            hands=int(result.get("hands") or 0),
            own_seats=[s["seat"] for s in match["seats"] if may_see(account, s["owner"])],
            # The viewer's own bots (not an admin's every seat): their decisions can be forked.
            bot_seats=[
                s["seat"]
                for s in match["seats"]
                if account is not None and account.name == s["owner"]
            ],
        )

    def replay_for(account: Account | None, match_id: int) -> bytes:
        with read_only(league.sessions) as session:
            row = replayable_match(session, match_id)
            seats = match_seats(session, [match_id])[match_id]
        assert row.replay_sha256 is not None
        visible = {s["seat"] for s in seats if may_see(account, s["owner"])}
        return filter_replay(league.artifacts.get(row.replay_sha256), visible)

    async def viewer_json(request: Request, account: Account | None, match_id: int) -> Response:
        def read() -> bytes:
            try:
                return _viewer.match_timeline_json(replay_for(account, match_id))
            except _viewer.ViewerError as exc:
                raise _Unshowable(f"match {match_id}'s replay cannot be shown: {exc}") from exc

        body = await run_in_threadpool(read)
        return Response(body, media_type="application/json", headers=_NOSNIFF)

    async def hand_json(
        request: Request, account: Account | None, match_id: int, hand: int
    ) -> Response:
        def read() -> JSON:
            try:
                return _viewer.hand_frames(replay_for(account, match_id), hand)
            except _viewer.NoSuchHand as exc:
                raise NotFound(str(exc)) from exc
            except _viewer.ViewerError as exc:
                raise _Unshowable(f"match {match_id}'s replay cannot be shown: {exc}") from exc

        return JSONResponse(await run_in_threadpool(read), headers=_NOSNIFF)

    # ------------------------------------------------------------------ live

    async def live_page(request: Request, account: Account | None) -> Response:
        snapshot = await run_in_threadpool(site.live.snapshot)
        return site.render(
            request,
            "live.html",
            account=account,
            snapshot=snapshot,
            snapshot_json=json.dumps(snapshot, separators=(",", ":")),
        )

    async def live_events(request: Request) -> Response:
        return StreamingResponse(
            site.live.events(request),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )

    # ------------------------------------------------------------------ account

    async def login_page(request: Request, account: Account | None) -> Response:
        return site.render(
            request,
            "login.html",
            account=account,
            next=_safe_next(request.query_params.get("next")),
            message=None,
        )

    async def login(request: Request, account: Account | None) -> Response:
        form = await form_of(request)
        target = _safe_next(_field(form, "next"))
        response = RedirectResponse(target, status_code=303)
        secure = request.url.scheme == "https"
        # The same throttle as the API's tokens: a wrong token here is one more guess.
        client = address(request.scope)
        try:
            site.throttle.check(client)
            try:
                await run_in_threadpool(
                    start_session,
                    response,
                    league,
                    site.keys,
                    _field(form, "token") or "",
                    secure=secure,
                )
            except NotAuthenticated:
                site.throttle.failed(client)
                raise
        except (NotAuthenticated, Forbidden, TooManyFailures) as exc:
            wait = exc.retry_after if isinstance(exc, TooManyFailures) else None
            return site.render(
                request,
                "login.html",
                status=exc.status_code,
                account=None,
                headers=None if wait is None else {"Retry-After": str(wait)},
                next=target,
                message=str(exc),
            )
        return response

    async def logout(request: Request, account: Account | None) -> Response:
        await form_of(request)
        response = RedirectResponse("/", status_code=303)
        await run_in_threadpool(end_session, response, league, account)
        return response

    def account_context(me: Account) -> JSON:
        with read_only(league.sessions) as session:
            return {"bots": [b for b in bot_list(session) if b["owner"] == me.name]}

    async def account_page(request: Request, account: Account | None) -> Response:
        me = signed_in(account)
        context = await run_in_threadpool(account_context, me)
        return site.render(
            request, "account.html", account=me, new_token=None, headers=_NO_STORE, **context
        )

    async def new_token(request: Request, account: Account | None) -> Response:
        await form_of(request)
        me = signed_in(account)

        def write() -> str:
            with unit_of_work(league.sessions) as session:
                return issue_token(session, league.key, me.name, replace=True).token

        token = await run_in_threadpool(write)
        context = await run_in_threadpool(account_context, me)
        # Shown once, in this answer only (never in a URL); the old token, and every session
        # made with it, no longer works: this browser is signed in again with the new one.
        response = site.render(
            request, "account.html", account=me, new_token=token, headers=_NO_STORE, **context
        )
        secure = request.url.scheme == "https"
        await run_in_threadpool(start_session, response, league, site.keys, token, secure=secure)
        return response

    # ------------------------------------------------------------------ submit

    async def submit_page(request: Request, account: Account | None) -> Response:
        me = signed_in(account)
        return site.render(
            request,
            "submit.html",
            account=me,
            message=None,
            bot=request.query_params.get("bot", ""),
            limit=league.config.uploads.max_compressed_bytes,
        )

    async def submit(request: Request, account: Account | None) -> Response:
        me = signed_in(account)
        limit = league.config.uploads.max_compressed_bytes
        declared = request.headers.get("content-length", "")
        bot_name = ""
        try:
            if declared.isdigit() and int(declared) > limit + FORM_OVERHEAD:
                raise UploadRejected(
                    f"the upload is larger than {limit} bytes, the most this league accepts"
                )
            form = await upload_form_of(request)
            bot_name = (_field(form, "bot") or "").strip()
            upload = form.get("archive")
            if not isinstance(upload, UploadFile):
                raise LeagueError("choose the bot's .tar.gz archive to upload")
            archive = await _read_limited(upload, limit)
            activate_now = _field(form, "activate") == "on"

            def write() -> int:
                made = submit_version(league, me.name, bot_name, archive, activate=activate_now)
                return made.version.number

            number = await run_in_threadpool(write)
        except LeagueError as exc:
            return site.render(
                request,
                "submit.html",
                status=getattr(exc, "status_code", 400),
                account=me,
                message=str(exc),
                bot=bot_name,
                limit=limit,
            )
        return RedirectResponse(f"/bots/{quote(bot_name)}/versions/{number}", status_code=303)

    routes: Sequence[tuple[str, str, Page]] = (
        ("GET", "/", page(home)),
        ("GET", "/bots/{name}", page(bot_page)),
        ("GET", "/bots/{name}/rating.json", data(rating_json)),
        ("GET", "/bots/{name}/versions/{number:int}", page(version_page)),
        ("GET", "/bots/{name}/versions/{number:int}/steps.json", data(version_steps)),
        ("GET", "/bots/{name}/versions/{number:int}/steps/{step}/log", page(step_log)),
        ("POST", "/bots/{name}/versions/{number:int}/activate", page(activate)),
        ("POST", "/bots/{name}/challenge", page(challenge)),
        ("GET", "/bots/{name}/vs/{other}", page(vs_page)),
        ("GET", "/matches/{match_id:int}", page(match_page)),
        ("GET", "/matches/{match_id:int}/viewer.json", data(viewer_json)),
        ("GET", "/matches/{match_id:int}/hands/{hand:int}.json", data(hand_json)),
        ("GET", "/live", page(live_page)),
        ("GET", "/seasons", page(seasons_page)),
        ("GET", "/seasons/{name}", page(season_page)),
        ("GET", "/login", page(login_page)),
        ("POST", "/login", page(login)),
        ("POST", "/logout", page(logout)),
        ("GET", "/account", page(account_page)),
        ("POST", "/account/token", page(new_token)),
        ("GET", "/submit", page(submit_page)),
        ("POST", "/submit", page(submit)),
    )
    for method, path, handler in routes:
        app.add_route(path, _endpoint(handler), methods=[method], include_in_schema=False)
    app.add_route("/live/events", live_events, methods=["GET"], include_in_schema=False)


def _endpoint(handler: Page) -> Callable[[Request], Awaitable[Response]]:
    """A Starlette endpoint calling ``handler`` with the path's parameters as keywords."""

    async def endpoint(request: Request) -> Response:
        return await handler(request, **request.path_params)

    return endpoint


def _check_integers(params: Mapping[str, Any]) -> None:
    """Refuse a number of the path that the database cannot hold (SQLite would overflow)."""
    for name, value in params.items():
        if isinstance(value, int) and not MIN_INTEGER <= value <= MAX_INTEGER:
            raise LeagueError(f"{name} must be at most {MAX_INTEGER}")


def _field(form: Any, name: str) -> str | None:
    value = form.get(name)
    return value if isinstance(value, str) else None


async def _read_limited(upload: UploadFile, limit: int) -> bytes:
    """The uploaded file's bytes, refused past ``limit``."""
    body = bytearray()
    while chunk := await upload.read(64 * 1024):
        body += chunk
        if len(body) > limit:
            raise UploadRejected(
                f"the upload is larger than {limit} bytes, the most this league accepts"
            )
    if not body:
        raise LeagueError("the archive is empty: choose the bot's .tar.gz file")
    return bytes(body)


def _version_for_owner(league: League, account: Account | None, name: str, number: int) -> Any:
    """Version ``number`` of ``name`` if ``account`` may see its steps and logs."""
    if account is None:
        raise NotAuthenticated("sign in first (with your API token)")
    with read_only(league.sessions) as session:
        info = get_version(session, name, number)
    if not may_see(account, info.owner):
        raise Forbidden(
            f"the validation of {name} v{number} is for its owner ({info.owner}) and the"
            " league's admins only"
        )
    return info


def _sorted(rows: Sequence[Any], attribute: str, descending: bool) -> list[Any]:
    """``rows`` by ``attribute``; rows without a value (not played yet) always last."""
    if attribute == "rank":
        known = [r for r in rows if r.rank is not None]
        rest = [r for r in rows if r.rank is None]
        return (list(reversed(known)) if descending else known) + rest
    known = [r for r in rows if getattr(r, attribute) is not None]
    rest = [r for r in rows if getattr(r, attribute) is None]
    key = (lambda r: str(getattr(r, attribute)).lower()) if attribute in ("bot", "owner") else None
    if key is None:
        return sorted(known, key=lambda r: getattr(r, attribute), reverse=descending) + rest
    return sorted(known, key=key, reverse=descending) + rest


def _bands(rows: Sequence[Any]) -> dict[int, int]:
    """Each version's band number (0, 1, 2, …) in rank order: a band is one rank, tied or not."""
    out: dict[int, int] = {}
    band = -1
    previous: int | None = None
    for row in rows:
        if row.rank is None:
            continue
        if row.rank != previous:
            band += 1
            previous = row.rank
        out[row.version_id] = band
    return out
