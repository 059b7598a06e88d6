"""The league on the web: its pages and their static files, next to the API.

:func:`create_site` is what ``arena league serve`` runs: the league's HTTP API
(``/api/v1``, :func:`arena.league.api._routes.create_app`) with the pages of ``_pages`` and the
files of ``static/`` on the same application. Pages are server-rendered (Jinja2); the
little JavaScript they use is plain files under ``/static`` (no build step). Every HTML
answer carries a Content Security Policy that allows scripts and styles from this site
only (no inline script anywhere), and forbids framing.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import FileResponse, HTMLResponse, Response
from starlette.staticfiles import StaticFiles

from arena.league import League
from arena.league._dispatch import FleetRules
from arena.league.api._gate import TokenThrottle
from arena.league.api._routes import API_PREFIX, create_app
from arena.web._live import LiveFeed, Progress
from arena.web._pages import add_pages, body_limits

__all__ = ["CSP", "create_site"]

STATIC = Path(__file__).with_name("static")
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'"
)
"""The Content Security Policy of every page: this site's scripts and styles only."""
_PAGE_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
}


def create_site(
    league: League,
    *,
    executor_status: Callable[[], Mapping[str, Any]] | None = None,
    metrics: Callable[[], str] | None = None,
    progress: Progress | None = None,
    fleet: FleetRules | None = None,
    throttle: TokenThrottle | None = None,
) -> FastAPI:
    """The API and the web pages of ``league``, on one application.

    Args:
        league: the open league.
        executor_status: as for :func:`~arena.league.api._routes.create_app`.
        metrics: as for :func:`~arena.league.api._routes.create_app`.
        progress: where the matches played by this server write their replays (the live
            page's progress); None shows running matches without progress.
        fleet: as for :func:`~arena.league.api._routes.create_app`.
        throttle: as for :func:`~arena.league.api._routes.create_app`.

    Example::

        uvicorn.run(create_site(open_league(Path("myleague"))), port=8000)
    """
    app = create_app(
        league,
        executor_status=executor_status,
        metrics=metrics,
        fleet=fleet,
        body_limits=body_limits(league),
        throttle=throttle,
    )
    add_pages(app, league, live=LiveFeed(league, progress))
    app.mount("/static", StaticFiles(directory=STATIC), name="static")

    @app.get("/favicon.ico", include_in_schema=False)
    def favicon() -> FileResponse:
        # Pages link /static/favicon.svg; a browser that asks here anyway gets it too (a 404
        # would be a console error on every page).
        return FileResponse(STATIC / "favicon.svg", media_type="image/svg+xml")

    api_error = app.exception_handlers[StarletteHTTPException]

    async def not_found(request: Request, exc: Exception) -> Response:
        # The API answers JSON; a person who mistyped a page's address gets a page.
        missing = isinstance(exc, StarletteHTTPException) and exc.status_code == 404
        if not missing or request.url.path.startswith(API_PREFIX):
            answer = api_error(request, exc)
            return await answer if inspect.isawaitable(answer) else answer
        body = (
            "<!doctype html><meta charset=utf-8><title>Not found</title>"
            '<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">'
            '<link rel="stylesheet" href="/static/site.css">'
            '<main><h1>Not found</h1><p>No page here. <a href="/">The leaderboard</a>'
            "</p></main>"
        )
        return HTMLResponse(body, status_code=404)

    app.add_exception_handler(StarletteHTTPException, not_found)

    @app.middleware("http")
    async def page_headers(
        request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        response = await call_next(request)
        if response.headers.get("content-type", "").startswith("text/html"):
            for name, value in _PAGE_HEADERS.items():
                response.headers.setdefault(name, value)
        return response

    return app
