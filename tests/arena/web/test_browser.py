"""The web pages in a real browser against a real ``arena league serve`` (issue 12).

Debian's Chromium, driven by Playwright (``conftest.py``), opens the pages of one seeded league
(``seed.py``: SQLite, the bundled bots of four owners and ``alice-noter``, which writes a debug
note with every turn) while the server schedules and plays ten-hand matches. What a page shows
is checked against the API's own answers: the leaderboard's bots, the cards of the replay
file, a version's status, who sees notes and logs.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest

from arena.ladder._bundled import bundled_dir
from arena.league import pack_bot
from tests.served import wait_for

from .conftest import TIMEOUT_MS, sign_in
from .seed import NOTER, OTHER, OWNER, ServedLeague

if TYPE_CHECKING:
    from playwright.sync_api import BrowserContext, Page

pytestmark = pytest.mark.slow

UPLOADED = "bob-uploaded"
"""The bot ``test_a_bot_uploaded_through_the_form_becomes_active`` adds (owned by bob)."""
VALIDATION_MS = 180_000
"""The most a test waits for a submitted version to pass validation."""
LIVE_MS = 120_000
"""The most a test waits for the live page's first update."""
CARDS_PER_SEAT = 5


# ---------------------------------------------------------------------- helpers


def leaderboard_bots(page: Page) -> list[str]:
    """The bots of the leaderboard page's rows, top to bottom."""
    names: list[str] = page.locator("#leaderboard tbody tr").evaluate_all(
        "rows => rows.map(r => r.dataset.bot)"
    )
    return names


def wait_frame(page: Page, hand: int, step: int) -> None:
    """Wait until the viewer shows ``step`` of ``hand``."""
    page.wait_for_selector(f'#viewer[data-hand="{hand}"][data-step="{step}"]', state="attached")


def open_viewer(page: Page, match_id: int) -> None:
    """Open the match page and wait for the viewer's first frame (hand 1, step 0)."""
    page.goto(f"/matches/{match_id}")
    wait_frame(page, 1, 0)


def shown(page: Page) -> dict[str, Any]:
    """What the viewer shows: hand, step, each seat's cards, the discard pile, action, note."""
    shown: dict[str, Any] = page.evaluate(
        """() => {
          const v = document.getElementById('viewer');
          const codes = (root, sel) =>
            Array.from(root.querySelectorAll(sel)).map(c => c.dataset.card);
          const note = document.getElementById('v-note');
          return {
            hand: Number(v.dataset.hand),
            step: Number(v.dataset.step),
            hands: Array.from(v.querySelectorAll('.v-seat')).map(
              s => codes(s, '.v-hand .card[data-card]')),
            discard: codes(document.getElementById('v-discard'), '.card[data-card]'),
            action: document.getElementById('v-action').textContent,
            note: note.hidden ? null : note.textContent,
            noteElements: note.children.length,
          };
        }"""
    )
    return shown


def go_to(page: Page, hand: int, step: int) -> None:
    """Move the viewer to ``step`` of ``hand`` with the keyboard (Home, PageDown, ArrowRight)."""
    page.keyboard.press("Home")
    wait_frame(page, 1, 0)
    for h in range(2, hand + 1):
        page.keyboard.press("PageDown")
        wait_frame(page, h, 0)
    for s in range(1, step + 1):
        page.keyboard.press("ArrowRight")
        wait_frame(page, hand, s)


def records(replay: Sequence[dict[str, Any]], kind: str, hand: int) -> list[dict[str, Any]]:
    """The replay's records of ``kind`` of hand ``hand``, in order."""
    key = "hand_number" if kind == "settlement" else "hand"
    return [r for r in replay if r["type"] == kind and r[key] == hand]


def dealt(deck: Sequence[str], dealer: int, seats: Sequence[int]) -> dict[int, list[str]]:
    """The cards each of ``seats`` (those dealt in, by seat) gets from ``deck`` (R-DEAL).

    The first ``5k`` cards go one at a time clockwise from the dealer's left, the dealer last.
    """
    ring = sorted(seats)
    left = [s for s in ring if s > dealer] + [s for s in ring if s <= dealer]
    hands: dict[int, list[str]] = {s: [] for s in seats}
    for i, code in enumerate(deck[: CARDS_PER_SEAT * len(left)]):
        hands[left[i % len(left)]].append(code)
    return hands


def first_noted_action(replay: Sequence[dict[str, Any]]) -> tuple[int, int, str]:
    """The first action with a debug note: its hand, the viewer step showing it, the note."""
    steps: dict[int, int] = {}
    for r in replay:
        if r["type"] != "action":
            continue
        steps[r["hand"]] = steps.get(r["hand"], 0) + 1
        if r.get("note"):
            return r["hand"], steps[r["hand"]], r["note"]
    raise AssertionError("the owner's replay holds no debug note")


# ---------------------------------------------------------------------- the leaderboard


def test_leaderboard_lists_the_league_s_bots_and_sorts_by_a_column(
    page: Page, served: ServedLeague
) -> None:
    """The leaderboard has one row per bot of the league, and a column header sorts by it.

    The rows are the bots the API's leaderboard lists (the seeded ones, and the uploaded one if
    that test ran first); clicking "Bot" sorts by name ascending, clicking it again descending,
    and "Rating" puts the highest rating first.
    """
    page.goto("/")
    on_page = leaderboard_bots(page)
    api = {row["bot"] for row in served.api("/leaderboard").json()["standings"]}
    assert sorted(api) == sorted(on_page), "one row per bot of the API's leaderboard"
    assert set(served.owners) <= api <= set(served.owners) | {UPLOADED}

    page.click("#leaderboard thead a[href*='sort=bot']")
    page.wait_for_url(re.compile(r"sort=bot"))
    header = page.locator("#leaderboard thead th[aria-sort]")
    assert "ascending" == header.get_attribute("aria-sort")
    assert sorted(on_page) == leaderboard_bots(page)

    page.click("#leaderboard thead a[href*='sort=bot']")
    page.wait_for_url(re.compile(r"sort=bot&dir=desc"))
    assert "descending" == page.locator("#leaderboard thead th[aria-sort]").get_attribute(
        "aria-sort"
    )
    assert sorted(on_page, reverse=True) == leaderboard_bots(page)

    page.click("#leaderboard thead a[href*='sort=rating']")
    page.wait_for_url(re.compile(r"sort=rating"))
    ratings = page.locator("#leaderboard tbody tr").evaluate_all(
        "rows => rows.map(r => parseFloat(r.cells[4].textContent))"
    )
    direction = page.locator("#leaderboard thead th[aria-sort]").get_attribute("aria-sort")
    assert sorted(ratings, reverse=direction == "descending") == ratings, (direction, ratings)
    assert "descending" == direction, "the best rating comes first on the first click"


# ---------------------------------------------------------------------- the replay viewer


def test_stepping_the_replay_shows_the_cards_of_the_replay_file(
    page: Page, served: ServedLeague
) -> None:
    """Stepping the viewer forward and back shows the cards the replay file holds.

    At step 0 of hand 1 every seat holds the cards R-DEAL gives it from the hand's ``deal``
    deck; after each discard the top of the discard pile is the discarded card (and it left
    the seat's hand); after a discard draw the card is in the drawer's hand. Stepping through
    the whole of hand 1 with the ``#v-next`` button reaches step 0 of hand 2 (dealt as its own
    ``deal`` record says); ArrowLeft back to the start shows every frame again with the same
    cards, and ArrowRight forward again too; ``#viewer``'s data-hand and data-step follow.
    """
    replay = served.replay(served.match_id)
    header = replay[0]
    seats = int(header["config"]["seats"])
    open_viewer(page, served.match_id)

    settled = records(replay, "settlement", 1)[0]
    deal = records(replay, "deal", 1)[0]
    frame = shown(page)
    assert seats == len(frame["hands"])
    expected = dealt(deal["deck"], settled["dealer"], range(seats))
    for seat in range(seats):
        assert sorted(expected[seat]) == sorted(frame["hands"][seat]), f"seat {seat}, hand 1"

    actions = records(replay, "action", 1)
    frames = [frame]
    for k, action in enumerate(actions, start=1):
        page.click("#v-next")
        wait_frame(page, 1, k)
        frame = shown(page)
        frames.append(frame)
        seat, cards = action["seat"], action.get("cards") or []
        if action["action"] == "discard":
            assert cards[-1] == frame["discard"][-1], f"hand 1 step {k}: {action}"
            assert cards[0] not in frame["hands"][seat], f"hand 1 step {k}: {action}"
            assert cards[0] in frames[-2]["hands"][seat], f"hand 1 step {k}: {action}"
        elif action["action"] == "draw_discard":
            assert cards[0] in frame["hands"][seat], f"hand 1 step {k}: {action}"
            assert cards[0] == frames[-2]["discard"][-1], f"hand 1 step {k}: {action}"
        elif action["action"] in {"meld", "lay_off"}:
            assert not set(cards) & set(frame["hands"][seat]), f"hand 1 step {k}: {action}"

    page.click("#v-next")
    wait_frame(page, 2, 0)
    second = shown(page)
    eliminated = {s for r in records(replay, "settlement", 1) for s in r["eliminated"]}
    dealt_in = [s for s in range(seats) if s not in eliminated]
    expected = dealt(
        records(replay, "deal", 2)[0]["deck"],
        records(replay, "settlement", 2)[0]["dealer"],
        dealt_in,
    )
    for seat in dealt_in:
        assert sorted(expected[seat]) == sorted(second["hands"][seat]), f"seat {seat}, hand 2"

    page.keyboard.press("ArrowLeft")
    for k in range(len(actions), -1, -1):
        wait_frame(page, 1, k)
        back = shown(page)
        assert frames[k]["hands"] == back["hands"], f"back at hand 1 step {k}"
        assert frames[k]["discard"] == back["discard"], f"back at hand 1 step {k}"
        assert frames[k]["action"] == back["action"], f"back at hand 1 step {k}"
        if k:
            page.keyboard.press("ArrowLeft")
    assert page.locator("#v-prev").is_disabled(), "no step before the first"

    for k in range(1, min(6, len(actions)) + 1):
        page.keyboard.press("ArrowRight")
        wait_frame(page, 1, k)
        assert frames[k]["hands"] == shown(page)["hands"], f"forward again at hand 1 step {k}"
    assert re.search(
        rf"Hand 1 · step {min(6, len(actions))} / {len(actions)}\b",
        (page.locator("#v-position").text_content() or ""),
    )


# ---------------------------------------------------------------------- submitting


def test_a_bot_uploaded_through_the_form_becomes_active(
    page: Page, served: ServedLeague, tmp_path: Path
) -> None:
    """A signed-in user uploads a packed bot with the form; its page follows it to active.

    The form answers with the new version's page (``/bots/NAME/versions/1``), which follows
    validation (site.js polling ``steps.json``, no reload) until the status reads "active" with
    its three steps passed; the API agrees.
    """
    sign_in(page, served, OTHER)
    archive = tmp_path / f"{UPLOADED}.tar.gz"
    archive.write_bytes(pack_bot(bundled_dir() / "random"))
    page.goto("/submit")
    page.fill("#bot", UPLOADED)
    page.set_input_files("#archive", str(archive))
    with page.expect_navigation():
        page.click("#submit-form button[type=submit]")
    assert page.url.endswith(f"/bots/{UPLOADED}/versions/1"), page.url
    first = page.locator("#version-status").text_content() or ""
    page.evaluate("() => { window.notReloaded = true; }")

    page.wait_for_function(
        "() => document.getElementById('version-status').textContent.trim() === 'active'",
        timeout=VALIDATION_MS,
    )
    steps = page.locator("#steps li").evaluate_all(
        "items => items.map(i => [i.dataset.step, i.querySelector('.outcome').textContent])"
    )
    assert [["build", "passed"], ["check", "passed"], ["match", "passed"]] == steps
    assert page.locator("#validation-live").is_hidden()
    if first.strip() != "active":  # the usual case: validation takes seconds
        assert page.evaluate("() => window.notReloaded === true"), "followed without a reload"
    assert "active" == served.api(f"/bots/{UPLOADED}/versions/1").json()["status"]


# ---------------------------------------------------------------------- privacy


def test_logs_and_notes_are_the_owner_s_alone(
    context: BrowserContext, served: ServedLeague
) -> None:
    """The owner sees a version's step logs and their bot's notes; others and anonymous do not.

    On ``alice-noter`` v1 the owner's page lists the validation steps with log links that
    answer; another user's and an anonymous page show no steps and no log link, and the log
    URL and ``steps.json`` refuse them. In the viewer, at the frame of the noter's first noted
    action, the owner sees the note (as text: its markup is not parsed), the others see none,
    and the hand's JSON holds no note for them.
    """
    owner_page = context.new_page()
    sign_in(owner_page, served, OWNER)
    version = f"/bots/{NOTER}/versions/1"
    owner_page.goto(version)
    links = owner_page.locator("#steps li a.log")
    assert 3 == links.count(), "a log link per validation step for the owner"
    log_url = links.first.get_attribute("href")
    assert log_url is not None
    answer = owner_page.request.get(log_url)
    assert 200 == answer.status, answer.status
    log_text = answer.text()
    assert owner_page.request.get(f"{version}/steps.json").ok

    hand, step, note = first_noted_action(served.replay(served.match_id, OWNER))
    open_viewer(owner_page, served.match_id)
    go_to(owner_page, hand, step)
    frame = shown(owner_page)
    assert f"Note: {note}" == frame["note"], "the owner sees the note, as text"
    assert 0 == frame["noteElements"], "the note's markup is not parsed"

    browser = context.browser
    assert browser is not None
    for who in (OTHER, None):
        other = browser.new_context(base_url=served.url)
        other.set_default_timeout(TIMEOUT_MS)
        try:
            page = other.new_page()
            if who is not None:
                sign_in(page, served, who)
            page.goto(version)
            assert 0 == page.locator("#steps").count(), f"{who or 'anonymous'} sees steps"
            assert 0 == page.locator("a.log").count(), f"{who or 'anonymous'} sees a log link"
            for url in (log_url, f"{version}/steps.json"):
                refused = page.request.get(url, max_redirects=0)
                to_login = refused.status == 303 and refused.headers.get("location", "").startswith(
                    "/login"
                )
                assert refused.status in {401, 403, 404} or (who is None and to_login), (
                    who,
                    url,
                    refused.status,
                )
                if log_text.strip():
                    assert log_text not in refused.text()

            open_viewer(page, served.match_id)
            go_to(page, hand, step)
            seen = shown(page)
            assert seen["note"] is None, f"{who or 'anonymous'} sees the note: {seen['note']}"
            assert frame["hands"] == seen["hands"], "the same frame as the owner's"
            frames = page.request.get(f"/matches/{served.match_id}/hands/{hand}.json").json()
            notes = [f["action"]["note"] for f in frames["frames"] if f["action"]]
            assert not any(notes), f"{who or 'anonymous'} gets notes in the hand's JSON"
        finally:
            other.close()


def test_the_owner_sees_the_fork_command_at_each_decision_of_their_bot(
    context: BrowserContext, served: ServedLeague
) -> None:
    """At a decision of ``alice-noter`` its owner sees how to ask about it and fork there.

    Stepping through the first hand the noter decides in, the box shows exactly at the frames
    whose next action begins a decision of the noter's seat, with that ``HAND.STEP`` and
    seat, and its Copy button answers; at every other frame it is hidden. Another user
    (``bob``, whose own bots may sit at the table) never sees it at the noter's decisions.
    """
    replay = served.replay(served.match_id, OWNER)
    seat = replay[0]["players"].index(f"{NOTER}-v1")
    starts = {"drop", "draw_stock", "draw_discard"}

    def begins(actions: Sequence[dict[str, Any]]) -> list[int]:
        return [
            k
            for k, a in enumerate(actions)
            if a["seat"] == seat
            and (
                k == 0
                or actions[k - 1]["seat"] != seat
                or a["action"] in starts
                or actions[k - 1]["action"] in starts
            )
        ]

    hands = sorted({r["hand_number"] for r in replay if r["type"] == "settlement"})
    hand = next(h for h in hands if begins(records(replay, "action", h)))
    actions = records(replay, "action", hand)
    decides = begins(actions)
    owner = context.new_page()
    sign_in(owner, served, OWNER)
    open_viewer(owner, served.match_id)
    go_to(owner, hand, 0)
    box = owner.locator("#v-fork")
    for k in range(len(actions) + 1):
        if k:
            owner.keyboard.press("ArrowRight")
            wait_frame(owner, hand, k)
        assert (k in decides) == box.is_visible(), f"hand {hand} step {k}"
        if k in decides:
            command = owner.locator("#v-fork-command").text_content() or ""
            assert f"arena league replay {served.match_id} -o m{served.match_id}.jsonl" in command
            assert f"arena fork m{served.match_id}.jsonl --at {hand}.{k} --seat {seat}" in command
            assert f"--bot ./{NOTER}" in command
            if k == decides[0]:  # the copy button selects the commands, and says so at once
                owner.locator("#v-fork-copy").click()
                owner.wait_for_function(
                    "document.getElementById('v-fork-copied').textContent !== ''"
                )
                selected = owner.evaluate("window.getSelection().toString()")
                assert command.strip() == selected.strip()

    browser = context.browser
    assert browser is not None
    other = browser.new_context(base_url=served.url)
    other.set_default_timeout(TIMEOUT_MS)
    try:
        page = other.new_page()
        sign_in(page, served, OTHER)
        open_viewer(page, served.match_id)
        go_to(page, hand, 0)
        for k in range(1, len(actions) + 1):
            page.keyboard.press("ArrowRight")
            wait_frame(page, hand, k)
            if k in decides:  # the noter's decision: not bob's to fork
                assert not page.locator("#v-fork").is_visible(), f"{OTHER} at {hand}.{k}"
    finally:
        other.close()


def test_an_owner_challenges_from_the_bot_page_and_sees_the_match(
    page: Page, served: ServedLeague
) -> None:
    """Alice fills the challenge form of her noter: its match page is a challenge of hers.

    Then the match is played (the served league's executor), and the noter's page lists it
    among its recent matches, marked as a challenge.
    """
    sign_in(page, served, OWNER)
    page.goto(f"/bots/{NOTER}")
    page.fill("#challenge-form input[name=opponents]", "bob-counter carol-counter")
    page.click("#challenge-form button[type=submit]")
    page.wait_for_url(re.compile(r"/matches/\d+$"))
    assert page.locator("#challenge").is_visible()
    assert "asked for by alice" in (page.locator("main").text_content() or "")
    match_id = int(page.url.rsplit("/", 1)[1])
    answer = page.request.get(f"/api/v1/matches/{match_id}")
    assert ("challenge", OWNER) == (answer.json()["kind"], answer.json()["requested_by"])

    def finished() -> bool:
        return bool(page.request.get(f"/api/v1/matches/{match_id}").json()["status"] == "finished")

    deadline = time.monotonic() + TIMEOUT_MS / 1000
    while not finished():
        assert time.monotonic() < deadline, f"match {match_id} did not finish"
        time.sleep(0.2)
    page.goto(f"/bots/{NOTER}")
    row = page.locator(f"#recent tr:has(a[href='/matches/{match_id}'])")
    assert row.locator(".tag.challenge").is_visible()


# ---------------------------------------------------------------------- live


def test_the_live_page_receives_an_update(page: Page, served: ServedLeague) -> None:
    """The live page, open while the server plays, is updated by server-sent events.

    ``#live``'s ``data-updates`` counts the events site.js has applied. The feed sends the
    state when the page connects and again each time it changes: while the page stays open the
    count goes past its first value, ``data-updated`` moves on, the page lists matches
    (running or just finished) and says it is live.
    """
    page.goto("/live")
    page.wait_for_function(
        "() => Number(document.getElementById('live').dataset.updates) > 0", timeout=LIVE_MS
    )
    # Both read at once: an event applied between two reads would pair one event's count
    # with the next one's time (a loaded browser applies queued events in the same millisecond).
    first, first_at = page.evaluate(
        "() => [Number(document.getElementById('live').dataset.updates),"
        " document.getElementById('live').dataset.updated]"
    )
    assert first_at, "an event sets data-updated"
    page.wait_for_function(
        "([first, at]) => { const d = document.getElementById('live').dataset;"
        " return Number(d.updates) > first && d.updated !== at; }",
        arg=[first, first_at],
        timeout=LIVE_MS,
    )
    assert page.locator("#live .live-match").count() > 0, "an update lists matches"
    assert (page.locator("#live-state").text_content() or "").startswith("Live")


# ---------------------------------------------------------------------- JavaScript errors


def test_no_page_has_a_javascript_error(
    context: BrowserContext, served: ServedLeague, js_errors: list[str]
) -> None:
    """Every page loads and runs without an uncaught error or a console error.

    Anonymous: the leaderboard, /login, a bot page, a match page (stepping the viewer), the
    live page. Signed in as the noter's owner: the same, /submit, /account and a version page.
    """
    page = context.new_page()
    top = served.api("/leaderboard").json()["standings"][0]["bot"]
    # Hand 1 may end after one action (a knock on the first turn): step no further than it goes.
    first_hand_steps = len(records(served.replay(served.match_id), "action", 1))

    def visit_all() -> None:
        page.goto("/")
        page.wait_for_selector("#leaderboard tbody tr")
        for bot in (top, NOTER):
            page.goto(f"/bots/{bot}")
            page.wait_for_selector("#rating-chart svg", state="attached")
        open_viewer(page, served.match_id)
        page.wait_for_selector("#bankroll-chart svg", state="attached")
        for k in range(1, min(3, first_hand_steps) + 1):
            page.click("#v-next")
            wait_frame(page, 1, k)
        page.keyboard.press("End")
        page.wait_for_selector('#viewer:not([data-hand="1"])', state="attached")
        page.keyboard.press("ArrowLeft")
        page.goto("/live")
        page.wait_for_function(
            "() => Number(document.getElementById('live').dataset.updates) > 0", timeout=LIVE_MS
        )

    visit_all()
    page.goto("/login")
    page.wait_for_selector("#login-form")
    assert [] == js_errors, "anonymous pages"

    sign_in(page, served, OWNER)
    visit_all()
    for path in ("/submit", "/account", f"/bots/{NOTER}/versions/1"):
        page.goto(path)
        page.wait_for_load_state("load")
    page.wait_for_selector("#steps li")
    assert [] == js_errors, "signed-in pages"


def test_a_season_shows_its_final_then_its_podium(
    context: BrowserContext, served: ServedLeague
) -> None:
    """An admin runs a season through the API; the pages follow it in Chromium.

    While its final is played the leaderboard carries a banner naming it and the season's
    page its entries; once it is closed the page shows the podium and the final standings
    of the record, the season list says closed, and the banner is gone.
    """
    admin = {"Authorization": f"Bearer {served.tokens['admin']}"}
    with httpx.Client(base_url=served.url, headers=admin, timeout=60) as api:
        made = api.post(
            "/api/v1/seasons",
            json={"name": "web-s1", "table_size": 3, "budget": 6, "looks": 2, "top": 2},
        )
        assert 201 == made.status_code, made.text
        entries = [e["name"] for e in api.post("/api/v1/seasons/web-s1/freeze").json()["entries"]]
        assert len(entries) >= 3
        started = api.post("/api/v1/seasons/web-s1/final")
        assert 200 == started.status_code, started.text
        page = context.new_page()
        page.goto("/")
        banner = page.locator("#final-banner")
        assert "web-s1" in (banner.text_content() or "")
        page.goto("/seasons/web-s1")
        assert "final" in (page.locator("#season-status").text_content() or "")
        shown = page.locator("#entries li").all_text_contents()
        assert len(entries) == len(shown)

        def decided() -> bool:
            return bool(api.get("/api/v1/seasons/web-s1").json()["decided"])

        wait_for("the season's final decided", decided)
        closed = api.post("/api/v1/seasons/web-s1/close")
        assert 200 == closed.status_code, closed.text
        record = closed.json()
    page.goto("/seasons/web-s1")
    assert "closed" in (page.locator("#season-status").text_content() or "")
    podium = [r["bot"] for r in record["standings"] if r["rank"] is not None and r["rank"] <= 3]
    assert podium == page.locator("#podium li").all_text_contents()
    rows = page.locator("#final-standings tbody tr")
    assert [r["bot"] for r in record["standings"]] == [
        rows.nth(i).get_attribute("data-bot") for i in range(rows.count())
    ]
    page.goto("/")
    assert 0 == page.locator("#final-banner").count()
    page.goto("/seasons")
    assert "closed" in (page.locator('tr[data-season="web-s1"]').text_content() or "")
