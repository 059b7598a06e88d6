"""Regenerate the README's screenshots of the league's web pages, ``docs/screenshots/*.png``.

Usage: ``python scripts/screenshots.py [--out DIR] [--chromium PATH]``. It serves the browser
tests' seeded league (``tests/arena/web/seed.py``: a real ``arena league serve`` on SQLite, the
bundled bots of four owners and ``alice-noter``, which writes debug notes, playing ten-hand
matches in the process sandbox), then drives Debian's Chromium with Playwright
(``executable_path``, headless) through the main pages at 1280x800:

- ``leaderboard.png``: ``/``;
- ``bot.png``: the noter's bot page (versions, rating chart, head-to-head, recent matches);
- ``match.png``: a match page scrolled to the replay viewer, mid-hand, as the noter's owner
  (so the debug note shows), and ``match-phone.png``: the same at a phone's 390x844;
- ``live.png``: ``/live`` once an update has come;
- ``submit.png``: ``/submit``, signed in.

Matches are dealt from secret seeds, so every run's pictures differ in their cards and
numbers; the layout is what they show. It takes about a minute.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from playwright.sync_api import Browser, Page, sync_playwright  # noqa: E402

from tests.arena.web.seed import NOTER, OTHER, OWNER, ServedLeague, served_league  # noqa: E402

DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}
TIMEOUT_MS = 60_000


def sign_in(page: Page, league: ServedLeague, user: str) -> None:
    """Sign ``user`` in through the login form."""
    page.goto("/login")
    page.fill("#token", league.tokens[user])
    with page.expect_navigation():
        page.click("#login-form button[type=submit]")
    if "/login" in page.url:
        raise SystemExit(f"signing in as {user} failed: still at {page.url}")


def mid_hand(league: ServedLeague) -> tuple[int, int]:
    """A hand of the league's chosen match and a step in its middle showing a noted action."""
    steps: dict[int, int] = {}
    noted: list[tuple[int, int]] = []
    for r in league.replay(league.match_id, OWNER):
        if r["type"] == "action":
            steps[r["hand"]] = steps.get(r["hand"], 0) + 1
            if r.get("note"):
                noted.append((r["hand"], steps[r["hand"]]))
    for hand, step in noted:
        if 0.3 <= step / steps[hand] <= 0.8:
            return hand, step
    return noted[0] if noted else (1, steps.get(1, 0) // 2)


def show_frame(page: Page, hand: int, step: int) -> None:
    """Move the match page's viewer to ``step`` of ``hand`` with the keyboard."""
    frame = '#viewer[data-hand="{}"][data-step="{}"]'
    page.wait_for_selector(frame.format(1, 0), state="attached")
    for h in range(2, hand + 1):
        page.keyboard.press("PageDown")
        page.wait_for_selector(frame.format(h, 0), state="attached")
    for s in range(1, step + 1):
        page.keyboard.press("ArrowRight")
        page.wait_for_selector(frame.format(hand, s), state="attached")


def context_page(browser: Browser, league: ServedLeague, viewport: dict[str, int]) -> Page:
    """A page of a fresh context at ``viewport`` (a phone's one is a touch screen)."""
    phone = viewport["width"] < 600
    context = browser.new_context(
        viewport={"width": viewport["width"], "height": viewport["height"]},
        base_url=league.url,
        is_mobile=phone,
        has_touch=phone,
    )
    context.set_default_timeout(TIMEOUT_MS)
    return context.new_page()


def shoot(page: Page, path: Path) -> None:
    """Save the viewport of ``page`` as ``path`` and say so."""
    page.wait_for_timeout(300)  # the last layout and chart drawing settle
    page.screenshot(path=str(path), animations="disabled")
    print(
        f"{path.relative_to(REPO) if path.is_relative_to(REPO) else path}: "
        f"{path.stat().st_size // 1024} KiB"
    )


def take(browser: Browser, league: ServedLeague, out: Path) -> None:
    """Take every screenshot into ``out``."""
    page = context_page(browser, league, DESKTOP)
    page.goto("/")
    page.wait_for_selector("#leaderboard tbody tr")
    shoot(page, out / "leaderboard.png")

    page.goto(f"/bots/{NOTER}")
    page.wait_for_selector("#rating-chart svg", state="attached")
    shoot(page, out / "bot.png")

    page.goto("/live")
    page.wait_for_selector("#live-running .live-match, #live-recent .live-match")
    page.wait_for_function("() => Number(document.getElementById('live').dataset.updates) > 1")
    shoot(page, out / "live.png")
    page.context.close()

    hand, step = mid_hand(league)
    for viewport, name in ((DESKTOP, "match.png"), (PHONE, "match-phone.png")):
        page = context_page(browser, league, viewport)
        sign_in(page, league, OWNER)
        page.goto(f"/matches/{league.match_id}")
        page.wait_for_selector("#bankroll-chart svg", state="attached")
        show_frame(page, hand, step)
        page.locator("#replay").evaluate("e => e.scrollIntoView({block: 'start'})")
        shoot(page, out / name)
        page.context.close()

    page = context_page(browser, league, DESKTOP)
    sign_in(page, league, OTHER)
    page.goto("/submit")
    page.wait_for_selector("#submit-form")
    shoot(page, out / "submit.png")
    page.context.close()


def main(argv: list[str] | None = None) -> int:
    """Serve the seeded league and take the screenshots; 0 on success."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "screenshots")
    parser.add_argument("--chromium", default="/usr/bin/chromium", help="the browser to drive")
    args: Any = parser.parse_args(argv)
    out: Path = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    with (
        tempfile.TemporaryDirectory(prefix="screenshots-") as tmp,
        served_league(Path(tmp)) as league,
        sync_playwright() as p,
    ):
        browser = p.chromium.launch(
            executable_path=args.chromium, headless=True, args=["--no-sandbox"]
        )
        try:
            take(browser, league, out)
        finally:
            browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
