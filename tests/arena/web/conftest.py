"""Browser fixtures: Debian's Chromium driven by Playwright against a real ``arena league serve``.

The browser is ``/usr/bin/chromium`` (or ``$ARENA_CHROMIUM``), launched headless by
Playwright with ``executable_path`` (Playwright's own browser download is not used). Without
that browser or the ``playwright`` package the browser tests skip, unless
``ARENA_REQUIRE_BROWSER=1`` (CI), where they fail.

One seeded league is served for the whole session (``tests/arena/web/seed.py``: SQLite, the process
sandbox, ten-hand matches, scheduling on) and one browser; every test gets a browser context
of its own (its own cookies), whose uncaught page errors and console errors are collected in
``js_errors``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from .seed import SeedError, ServedLeague, served_league

if TYPE_CHECKING:
    from playwright.sync_api import Browser, BrowserContext, ConsoleMessage, Page, WebError

CHROMIUM = os.environ.get("ARENA_CHROMIUM", "/usr/bin/chromium")
REQUIRE_BROWSER = "ARENA_REQUIRE_BROWSER"
SESSION_COOKIE = "ffa_session"
TIMEOUT_MS = 60_000
"""Playwright's default wait for an element or a navigation (the machine may be busy)."""


def _unavailable(reason: str) -> None:
    """Skip for a missing browser; fail instead under ``ARENA_REQUIRE_BROWSER=1``."""
    if os.environ.get(REQUIRE_BROWSER) == "1":
        pytest.fail(f"{REQUIRE_BROWSER}=1 but {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def chromium() -> Iterator[Browser]:
    """Chromium, headless, for the session."""
    if not Path(CHROMIUM).is_file():
        _unavailable(f"no Chromium at {CHROMIUM} (apt-get install chromium, or set ARENA_CHROMIUM)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("the playwright package is not installed (pip install playwright)")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture(scope="session")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedLeague]:
    """The seeded league, served by ``arena league serve`` for the session."""
    directory = tmp_path_factory.mktemp("served")
    try:
        with served_league(directory) as league:
            yield league
    except SeedError as e:
        log = directory / "server.log"
        tail = log.read_text(encoding="utf-8", errors="replace")[-20_000:] if log.exists() else ""
        pytest.fail(f"{e}\n--- server log (tail) ---\n{tail}")
    finally:
        log = directory / "server.log"
        if log.exists():
            sys.stderr.write(log.read_text(encoding="utf-8", errors="replace")[-5_000:])


@pytest.fixture
def js_errors() -> list[str]:
    """The uncaught errors and console errors of the test's browser pages, as text."""
    return []


@pytest.fixture
def context(
    chromium: Browser, served: ServedLeague, js_errors: list[str]
) -> Iterator[BrowserContext]:
    """A fresh browser context (no cookies) on the served league, collecting JS errors."""
    made = chromium.new_context(viewport={"width": 1280, "height": 800}, base_url=served.url)
    made.set_default_timeout(TIMEOUT_MS)

    def on_error(error: WebError) -> None:
        js_errors.append(f"uncaught: {error.error}")

    def on_console(message: ConsoleMessage) -> None:
        if message.type == "error":
            js_errors.append(f"console at {message.location.get('url')}: {message.text}")

    made.on("weberror", on_error)
    made.on("console", on_console)
    try:
        yield made
    finally:
        made.close()


@pytest.fixture
def page(context: BrowserContext) -> Page:
    """A page of the test's context."""
    return context.new_page()


def sign_in(page: Page, served: ServedLeague, user: str) -> None:
    """Sign ``user`` in through the login form (``/login``) with their API token."""
    page.goto("/login")
    page.fill("#token", served.tokens[user])
    with page.expect_navigation():
        page.click("#login-form button[type=submit]")
    assert "/login" not in page.url, f"signing in as {user} stayed on {page.url}"
    cookies = {c["name"]: c for c in page.context.cookies()}
    assert SESSION_COOKIE in cookies, f"no {SESSION_COOKIE} cookie after signing in"
    session = cookies[SESSION_COOKIE]
    assert session.get("httpOnly") is True, "the session cookie is readable by scripts"
    assert session.get("sameSite") in {"Lax", "Strict"}, f"SameSite is {session.get('sameSite')}"
