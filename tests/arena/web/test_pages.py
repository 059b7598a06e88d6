"""The league's web pages over a real socket: what each page shows, to whom, and its guards.

A real uvicorn server runs ``create_site`` (the API and the pages) in a thread over a league
home on SQLite; requests go through httpx with cookies, as a browser sends them. The league
holds a finished duplicate group whose replay is a real match played by the engine (with
debug notes added to its seats' actions), a group half finished, and versions whose
validation steps carry bot-made text (markup that must come out escaped).
"""

from __future__ import annotations

import datetime as dt
import json
import re
import secrets
import shutil
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import delete, select

from arena.executors._http import serve_in_thread
from arena.league import (
    BotVersion,
    League,
    Match,
    MatchSeat,
    MatchStatus,
    StepKind,
    StepOutcome,
    ValidationStep,
    VersionStatus,
    create_user,
    enqueue_match,
    init_league,
    issue_token,
    pack_bot,
    unit_of_work,
)
from arena.league.api._gate import FAILED_TOKEN_BURST, MAX_BODY_BYTES, TokenThrottle
from arena.league.bots._versions import submit_version
from arena.web import CSP, create_site
from arena.web._live import LiveFeed
from arena.web._pages import FORM_FIELD_BYTES, FORM_FIELDS
from arena.web._session import CSRF_COOKIE, SESSION_COOKIE
from flipflop import Bot, MatchConfig, play_match
from flipflop._replay import records
from tests.served import answer_before_the_end

REPO = Path(__file__).resolve().parents[3]
NOW = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.UTC)
SEED = "5eed" * 16
EVIL = '<script>alert("x")</script>'
"""Text a bot controls (a build's output, a note): must never reach a page as markup."""
NOTES = {0: "alpha's plan: draw", 1: "beta's plan: wait", 2: "gamma's plan: meld"}


class _Plain(Bot):
    name = "plain"


def _replay(players: list[str]) -> tuple[bytes, list[int], list[int], int]:
    """A real 3-seat match of 4 hands: its replay (notes on each seat's actions), result."""
    state = play_match(
        [_Plain(), _Plain(), _Plain()], MatchConfig(hand_cap=4, seats=3), seed="pages"
    )
    lines = []
    for record in records(state, players, write_seed=False):
        if record["type"] == "action":
            record["note"] = NOTES[record["seat"]]
        lines.append(json.dumps(record).encode() + b"\n")
    assert state.result is not None
    return (
        b"".join(lines),
        list(state.result.placements),
        list(state.result.bankrolls),
        len(state.results),
    )


@dataclass(frozen=True)
class Site:
    """The league served, with its users' tokens and its matches."""

    league: League
    url: str
    tokens: Mapping[str, str]
    match: int
    half_group: int
    replay: bytes


def _steps(session: Any, league: League, version_id: int, status: VersionStatus) -> None:
    version = session.get(BotVersion, version_id)
    version.status = status
    for step in StepKind:
        failed = status is VersionStatus.REJECTED and step is StepKind.CHECK
        session.add(
            ValidationStep(
                version_id=version_id,
                step=step,
                outcome=StepOutcome.FAILED if failed else StepOutcome.PASSED,
                detail=f"{step.value}: {EVIL}",
                log_sha256=league.artifacts.put(f"log of {step.value}: {EVIL}\n".encode()),
                started=NOW,
                finished=NOW,
            )
        )
        if failed:
            version.reason = f"the bot said {EVIL}"
            break
    session.flush()


def _finish(session: Any, league: League, match_id: int, group: int, rotation: int) -> bytes:
    data, places, chips, hands = _replay(["alpha", "beta", "gamma"])
    match = session.get(Match, match_id)
    match.status = MatchStatus.FINISHED
    match.finished_at = NOW
    match.group_id, match.rotation, match.seed = group, rotation, SEED
    match.replay_sha256 = league.artifacts.put(data)
    match.result = {
        "void": False,
        "bots": ["alpha", "beta", "gamma"],
        "placements": places,
        "bankrolls": chips,
        "start_bankroll": 100,
        "hands": hands,
        "luck": None,
        "seats": [],
        "faults": [{"seat": 1, "kind": "timeout", "detail": EVIL, "hand": 2}],
        "logs": [None, None, None],
    }
    for seat in session.query(MatchSeat).filter_by(match_id=match_id):
        seat.place, seat.chips = places[seat.seat], chips[seat.seat]
    session.flush()
    return data


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    """Alice owns alpha (v1 active, v2 rejected), bob beta and gamma; one group finished."""
    tmp = tmp_path_factory.mktemp("pages")
    league, admin = init_league(tmp / "home", name="pages")
    try:
        tokens = {"admin": admin.token}
        bot = tmp / "bot"
        shutil.copytree(REPO / "bots" / "random", bot, ignore=shutil.ignore_patterns("__pycache__"))
        with unit_of_work(league.sessions) as session:
            for name in ("alice", "bob"):
                create_user(session, name, now=NOW)
                tokens[name] = issue_token(session, league.key, name, now=NOW).token
        alpha = submit_version(league, "alice", "alpha", pack_bot(bot), now=NOW)
        (bot / "V2").write_text("2\n")
        alpha2 = submit_version(league, "alice", "alpha", pack_bot(bot), now=NOW)
        beta = submit_version(league, "bob", "beta", pack_bot(bot), now=NOW)
        gamma = submit_version(league, "bob", "gamma", pack_bot(bot), now=NOW)
        with unit_of_work(league.sessions) as session:
            _steps(session, league, alpha.version.id, VersionStatus.ACTIVE)
            _steps(session, league, alpha2.version.id, VersionStatus.REJECTED)
            _steps(session, league, beta.version.id, VersionStatus.ACTIVE)
            _steps(session, league, gamma.version.id, VersionStatus.ACTIVE)
            table = [alpha.version.id, beta.version.id, gamma.version.id]
            played = enqueue_match(session, table, now=NOW)
            replay = _finish(session, league, played, group=1, rotation=0)
            _finish(session, league, enqueue_match(session, table[1:] + table[:1], now=NOW), 1, 1)
            half = enqueue_match(session, table, now=NOW)
            _finish(session, league, half, group=2, rotation=0)
            queued = session.get_one(Match, enqueue_match(session, table[1:] + table[:1], now=NOW))
            queued.group_id, queued.rotation, queued.seed = 2, 1, SEED
        with serve_in_thread(create_site(league)) as url:
            yield Site(league, url, tokens, played, half, replay)
    finally:
        league.close()


@pytest.fixture
def browser(site: Site) -> Iterator[httpx.Client]:
    """A fresh client with its own cookie jar (nobody signed in)."""
    with httpx.Client(base_url=site.url, timeout=60) as client:
        yield client


def csrf_of(page: httpx.Response) -> str:
    """The CSRF token in a page's forms."""
    found = re.search(r'name="csrf" value="([^"]+)"', page.text)
    assert found, "the page has no form with a CSRF token"
    return found.group(1)


def sign_in(client: httpx.Client, token: str) -> httpx.Response:
    """Sign in through the login form, as a person does."""
    form = client.get("/login")
    return client.post("/login", data={"csrf": csrf_of(form), "token": token, "next": "/account"})


# ------------------------------------------------------------------ pages


def test_leaderboard_lists_the_active_versions_with_their_numbers(
    site: Site, browser: httpx.Client
) -> None:
    """The leaderboard shows each active version (alpha v1, beta v1), its owner and counts."""
    page = browser.get("/")
    assert 200 == page.status_code
    assert page.headers["content-type"].startswith("text/html")
    rows = re.findall(r'<tr data-bot="([^"]+)"', page.text)
    assert sorted(rows) == ["alpha", "beta", "gamma"]
    assert ">alice<" in page.text and ">bob<" in page.text


def test_leaderboard_sorts_by_a_column_and_refuses_an_unknown_one(
    site: Site, browser: httpx.Client
) -> None:
    """?sort=bot&dir=desc puts gamma first; an unknown column is a 400 page, not a crash."""
    by_name = re.findall(r'<tr data-bot="([^"]+)"', browser.get("/?sort=bot&dir=desc").text)
    assert ["gamma", "beta", "alpha"] == by_name
    by_name = re.findall(r'<tr data-bot="([^"]+)"', browser.get("/?sort=bot&dir=asc").text)
    assert ["alpha", "beta", "gamma"] == by_name
    bad = browser.get("/?sort=nonsense")
    assert 400 == bad.status_code
    assert "cannot sort by" in bad.text


def test_every_page_carries_the_content_security_policy(site: Site, browser: httpx.Client) -> None:
    """Pages allow this site's scripts only, and no framing; no page has an inline script."""
    for path in ("/", "/bots/alpha", f"/matches/{site.match}", "/live", "/login"):
        page = browser.get(path)
        assert 200 == page.status_code, path
        assert CSP == page.headers["content-security-policy"], path
        assert "DENY" == page.headers["x-frame-options"], path
        assert not re.search(r"<script(?![^>]*\bsrc=)", page.text), f"inline script on {path}"


def test_the_site_has_an_icon_where_browsers_look(site: Site, browser: httpx.Client) -> None:
    """Every page links the icon, and /favicon.ico serves it: no browser logs a 404 for it."""
    for path in ("/", "/login", "/no-such-page"):
        assert '<link rel="icon" href="/static/favicon.svg"' in browser.get(path).text, path
    for path in ("/favicon.ico", "/static/favicon.svg"):
        icon = browser.get(path)
        assert 200 == icon.status_code, path
        assert icon.headers["content-type"].startswith("image/svg+xml"), path
        assert icon.text.startswith("<svg"), path


def test_bot_page_shows_versions_head_to_head_and_recent_matches(
    site: Site, browser: httpx.Client
) -> None:
    """Alpha's page: v1 active and v2 rejected, beta as its opponent, the group's matches."""
    page = browser.get("/bots/alpha")
    assert 200 == page.status_code
    assert re.search(r'data-version="1".*?status-active', page.text, re.S)
    assert re.search(r'data-version="2".*?status-rejected', page.text, re.S)
    assert 'href="/bots/beta"' in page.text
    assert f'href="/matches/{site.match}"' in page.text
    points = browser.get("/bots/alpha/rating.json").json()["points"]
    assert isinstance(points, list)
    assert 404 == browser.get("/bots/nosuchbot").status_code


def test_bot_made_text_is_escaped_on_every_page(site: Site, browser: httpx.Client) -> None:
    """A step's detail, a rejection reason, a fault: shown as text, never as markup."""
    sign_in(browser, site.tokens["alice"])
    for path in ("/bots/alpha/versions/2", "/bots/alpha/versions/1", f"/matches/{site.match}"):
        page = browser.get(path)
        assert 200 == page.status_code, path
        assert EVIL not in page.text, path
        assert "&lt;script&gt;" in page.text, path


def test_match_page_shows_places_chips_faults_and_the_viewer(
    site: Site, browser: httpx.Client
) -> None:
    """A finished match whose group is over: seats, places, the fault, the replay viewer."""
    page = browser.get(f"/matches/{site.match}")
    assert 200 == page.status_code
    assert re.search(rf'id="viewer"[^>]*data-match="{site.match}"', page.text)
    assert 'id="bankroll-chart"' in page.text
    assert "timeout" in page.text


def test_a_half_played_group_shows_no_replay(site: Site, browser: httpx.Client) -> None:
    """Its rotations share their deals: no viewer, and its viewer data is refused (409)."""
    page = browser.get(f"/matches/{site.half_group}")
    assert 200 == page.status_code
    assert 'id="viewer"' not in page.text
    assert "duplicate group" in page.text
    assert 409 == browser.get(f"/matches/{site.half_group}/viewer.json").status_code
    assert 409 == browser.get(f"/matches/{site.half_group}/hands/1.json").status_code


def _notes(client: httpx.Client, match: int) -> set[str]:
    timeline = client.get(f"/matches/{match}/viewer.json")
    assert 200 == timeline.status_code, timeline.text
    found: set[str] = set()
    for hand in range(1, len(timeline.json()["hands"]) + 1):
        frames = client.get(f"/matches/{match}/hands/{hand}.json")
        assert 200 == frames.status_code, frames.text
        for frame in frames.json()["frames"]:
            action = frame.get("action")
            if action and action.get("note"):
                found.add(action["note"])
    return found


@pytest.mark.parametrize(
    ("who", "expected"),
    [
        (None, set()),
        ("bob", {NOTES[1], NOTES[2]}),
        ("alice", {NOTES[0]}),
        ("admin", set(NOTES.values())),
    ],
)
def test_the_viewer_shows_debug_notes_to_their_owner_only(
    site: Site, browser: httpx.Client, who: str | None, expected: set[str]
) -> None:
    """Alice sees alpha's notes, bob beta's and gamma's, an admin all, the anonymous none."""
    if who is not None:
        assert 303 == sign_in(browser, site.tokens[who]).status_code
    assert expected == _notes(browser, site.match)


# ------------------------------------------------------------------ owners only


@pytest.mark.parametrize(
    ("who", "status"), [(None, 401), ("bob", 403), ("alice", 200), ("admin", 200)]
)
def test_validation_steps_and_logs_are_for_the_owner_and_admins(
    site: Site, browser: httpx.Client, who: str | None, status: int
) -> None:
    """steps.json and a step's log: 401 anonymous, 403 another user, 200 owner and admin."""
    if who is not None:
        sign_in(browser, site.tokens[who])
    steps = browser.get("/bots/alpha/versions/2/steps.json")
    assert status == steps.status_code
    log = browser.get("/bots/alpha/versions/2/steps/check/log", follow_redirects=False)
    assert (303 if who is None else status) == log.status_code
    page = browser.get("/bots/alpha/versions/2")
    assert 200 == page.status_code
    assert ('id="steps"' in page.text) == (status == 200)
    if status == 200:
        assert "rejected" == steps.json()["status"]
        assert log.headers["content-type"].startswith("text/plain")
        assert "nosniff" == log.headers["x-content-type-options"]


def test_another_user_cannot_activate_a_version(site: Site, browser: httpx.Client) -> None:
    """Bob posting alpha's activate form (with a good CSRF token of his own) is refused."""
    sign_in(browser, site.tokens["bob"])
    token = csrf_of(browser.get("/account"))
    answer = browser.post("/bots/alpha/versions/1/activate", data={"csrf": token})
    assert 403 == answer.status_code


# ------------------------------------------------------------------ sessions and CSRF


def test_signing_in_sets_an_httponly_samesite_session_cookie(
    site: Site, browser: httpx.Client
) -> None:
    """The session cookie is HttpOnly and SameSite=Lax, and the account page then opens."""
    answer = sign_in(browser, site.tokens["alice"])
    assert 303 == answer.status_code
    cookie = next(
        v for k, v in answer.headers.multi_items() if k == "set-cookie" and SESSION_COOKIE in v
    )
    assert "httponly" in cookie.lower()
    assert "samesite=lax" in cookie.lower()
    assert site.tokens["alice"] not in cookie
    page = browser.get("/account")
    assert 200 == page.status_code
    assert 'href="/bots/alpha"' in page.text


def test_a_form_without_a_valid_csrf_token_is_refused(site: Site, browser: httpx.Client) -> None:
    """No token, a made-up one, or one without its cookie: 403, and nobody is signed in."""
    browser.get("/login")
    for token in (None, "made-up"):
        data = {"token": site.tokens["alice"]} | ({} if token is None else {"csrf": token})
        answer = browser.post("/login", data=data)
        assert 403 == answer.status_code
    good = csrf_of(browser.get("/login"))
    with httpx.Client(base_url=site.url, timeout=60) as stranger:  # no csrf cookie
        answer = stranger.post("/login", data={"csrf": good, "token": site.tokens["alice"]})
        assert 403 == answer.status_code
    assert SESSION_COOKIE not in browser.cookies
    assert CSRF_COOKIE in browser.cookies


def test_a_bad_token_is_told_and_signs_nobody_in(site: Site, browser: httpx.Client) -> None:
    """A wrong token re-shows the form with one sentence (401)."""
    answer = sign_in(browser, "ffa_" + "x" * 43)
    assert 401 == answer.status_code
    assert "invalid or expired API token" in answer.text
    assert SESSION_COOKIE not in browser.cookies


def test_signing_in_never_redirects_to_another_site(site: Site, browser: httpx.Client) -> None:
    """next=//evil.example goes to /account instead."""
    form = browser.get("/login")
    answer = browser.post(
        "/login",
        data={"csrf": csrf_of(form), "token": site.tokens["bob"], "next": "//evil.example/x"},
    )
    assert 303 == answer.status_code
    assert "/account" == answer.headers["location"]


def test_owner_pages_send_the_anonymous_to_sign_in(site: Site, browser: httpx.Client) -> None:
    """/account and /submit without a session: 303 to /login, coming back afterwards."""
    for path in ("/account", "/submit"):
        answer = browser.get(path, follow_redirects=False)
        assert 303 == answer.status_code, path
        assert f"/login?next={path}" == answer.headers["location"]


def test_a_new_token_ends_the_sessions_of_the_old_one(site: Site, tmp_path: Path) -> None:
    """Regenerating shows the new token once; the old token's sessions are signed out."""
    with unit_of_work(site.league.sessions) as session:
        create_user(session, "dora", now=NOW)
        token = issue_token(session, site.league.key, "dora", now=NOW).token
    with (
        httpx.Client(base_url=site.url, timeout=60) as first,
        httpx.Client(base_url=site.url, timeout=60) as second,
    ):
        sign_in(first, token)
        sign_in(second, token)
        assert 200 == second.get("/account").status_code
        answer = first.post("/account/token", data={"csrf": csrf_of(first.get("/account"))})
        assert 200 == answer.status_code
        assert "no-store" == answer.headers["cache-control"]
        new = re.search(r'id="new-token">(ffa_[A-Za-z0-9_-]{43})<', answer.text)
        assert new and new.group(1) != token
        assert 200 == first.get("/account").status_code  # signed in again with the new one
        assert 303 == second.get("/account", follow_redirects=False).status_code
        assert 401 == sign_in(second, token).status_code


# ------------------------------------------------------------------ submit


def test_a_bot_uploaded_through_the_form_is_a_new_version(
    site: Site, browser: httpx.Client, tmp_path: Path
) -> None:
    """The submit form stores the archive as a new version and goes to its page."""
    sign_in(browser, site.tokens["bob"])
    bot = tmp_path / "bot"
    shutil.copytree(REPO / "bots" / "greedy", bot, ignore=shutil.ignore_patterns("__pycache__"))
    token = csrf_of(browser.get("/submit"))
    answer = browser.post(
        "/submit",
        data={"csrf": token, "bot": "bob-upload", "activate": "on"},
        files={"archive": ("bot.tar.gz", pack_bot(bot), "application/gzip")},
    )
    assert 303 == answer.status_code, answer.text
    assert "/bots/bob-upload/versions/1" == answer.headers["location"]
    page = browser.get("/bots/bob-upload/versions/1")
    assert "status-uploaded" in page.text
    assert "data-steps=" in page.text  # the page follows the validation


def test_a_broken_upload_is_told_on_the_form(
    site: Site, browser: httpx.Client, tmp_path: Path
) -> None:
    """Not a tar.gz: the form comes back with the league's reason, nothing stored."""
    sign_in(browser, site.tokens["bob"])
    token = csrf_of(browser.get("/submit"))
    answer = browser.post(
        "/submit",
        data={"csrf": token, "bot": "bob-broken"},
        files={"archive": ("bot.tar.gz", b"not an archive", "application/gzip")},
    )
    assert 400 <= answer.status_code < 500
    assert 'id="submit-error"' in answer.text
    assert 404 == browser.get("/bots/bob-broken").status_code


# ------------------------------------------------------------------ errors and live


def test_unknown_pages_are_html_and_unknown_api_paths_json(
    site: Site, browser: httpx.Client
) -> None:
    """A mistyped page address gets a page; the API keeps answering JSON."""
    page = browser.get("/no/such/page")
    assert 404 == page.status_code
    assert page.headers["content-type"].startswith("text/html")
    api = browser.get("/api/v1/no/such/thing")
    assert 404 == api.status_code
    assert "error" in api.json()


def test_the_live_feed_tells_progress_and_never_a_card(site: Site, tmp_path: Path) -> None:
    """A running match's replay so far: hand and bankrolls come out, no deck, card or note."""
    with unit_of_work(site.league.sessions) as session:
        running = session.get_one(Match, enqueue_match(session, _version_ids(session), now=NOW))
        running.status = MatchStatus.RUNNING
        match_id = running.id
    replay_path = tmp_path / "replay.jsonl"
    # The replay of a match in its second hand, as the runner writes it (deal records too).
    lines = site.replay.decode().splitlines()
    second = next(i for i, line in enumerate(lines) if json.loads(line).get("hand") == 2)
    replay_path.with_suffix(".partial").write_text("\n".join(lines[: second + 1]) + "\n")
    try:
        snapshot = LiveFeed(site.league, lambda: {match_id: replay_path}).snapshot()
        shown = next(m for m in snapshot["running"] if m["id"] == match_id)
        assert 2 == shown["progress"]["hand"]
        settled = json.loads(next(x for x in lines if json.loads(x)["type"] == "settlement"))
        assert settled["bankrolls"] == shown["progress"]["bankrolls"]
        text = json.dumps(snapshot)
        deal = json.loads(next(x for x in lines if json.loads(x)["type"] == "deal"))
        assert not any(f'"{card}"' in text for card in deal["deck"])
        assert not any(note in text for note in NOTES.values())
    finally:
        with unit_of_work(site.league.sessions) as session:
            session.get_one(Match, match_id).status = MatchStatus.QUEUED


def _version_ids(session: Any) -> list[int]:
    return [v.id for v in session.query(BotVersion).filter_by(status=VersionStatus.ACTIVE).all()][
        :3
    ]


def test_the_live_stream_sends_the_running_matches(site: Site) -> None:
    """GET /live/events is an event stream whose first event holds the snapshot."""
    with (
        httpx.Client(base_url=site.url, timeout=60) as client,
        client.stream("GET", "/live/events") as stream,
    ):
        assert stream.headers["content-type"].startswith("text/event-stream")
        data = None
        for line in stream.iter_lines():
            if line.startswith("data: "):
                data = json.loads(line.removeprefix("data: "))
                break
    assert data is not None
    assert {"running", "queued", "recent"} <= set(data)
    assert site.match in {m["id"] for m in data["recent"]}


def test_a_hand_the_replay_does_not_have_is_not_found(site: Site, browser: httpx.Client) -> None:
    """Hand 0 or one past the last: 404 with a sentence, not a server error."""
    hands = len(browser.get(f"/matches/{site.match}/viewer.json").json()["hands"])
    for hand in (0, hands + 1):
        answer = browser.get(f"/matches/{site.match}/hands/{hand}.json")
        assert 404 == answer.status_code, hand
        assert "error" in answer.json()


def test_the_leaderboard_comes_in_pages(
    site: Site, browser: httpx.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two rows a page: page 1 holds the first two, page 2 the third, with links both ways."""
    monkeypatch.setattr("arena.web._pages.PAGE_ROWS", 2)
    first = browser.get("/?sort=bot&dir=asc")
    assert ["alpha", "beta"] == re.findall(r'<tr data-bot="([^"]+)"', first.text)
    assert "/?sort=bot&amp;dir=asc&amp;page=2" in first.text
    second = browser.get("/?sort=bot&dir=asc&page=2")
    assert ["gamma"] == re.findall(r'<tr data-bot="([^"]+)"', second.text)
    assert "Rows 3\N{EN DASH}3 of 3" in second.text
    assert "/?sort=bot&amp;dir=asc&amp;page=1" in second.text
    beyond = browser.get("/?sort=bot&dir=asc&page=9")  # past the end: the last page
    assert ["gamma"] == re.findall(r'<tr data-bot="([^"]+)"', beyond.text)
    assert 400 == browser.get("/?page=0").status_code


def test_a_bot_page_lists_the_bots_it_met_most(
    site: Site, browser: httpx.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The head-to-head keeps the OPPONENTS met most (both met alpha alike: one by name)."""
    monkeypatch.setattr("arena.web._pages.OPPONENTS", 1)
    page = browser.get("/bots/alpha")
    table = page.text.split('id="head-to-head"')[1].split("</table>")[0]
    assert ['href="/bots/beta"'] == re.findall(r'href="/bots/\w+"', table)


def test_the_leaderboard_follows_every_change_of_the_standings(
    site: Site, browser: httpx.Client
) -> None:
    """It is kept between requests, yet a disabled bot, a rollback or a result shows at once."""
    from arena.league import disable_bot
    from arena.league.bots._bots import VersionStats
    from arena.league.matches._results import RESULTS_COUNTER, Counter

    def bots() -> list[str]:
        return re.findall(r'<tr data-bot="([^"]+)"', browser.get("/?sort=bot&dir=asc").text)

    assert ["alpha", "beta", "gamma"] == bots()
    with unit_of_work(site.league.sessions) as session:
        disable_bot(session, "gamma", disabled=True)
    assert ["alpha", "beta"] == bots()
    with unit_of_work(site.league.sessions) as session:
        disable_bot(session, "gamma", disabled=False)
    assert ["alpha", "beta", "gamma"] == bots()
    with unit_of_work(site.league.sessions) as session:
        version = session.query(BotVersion).filter_by(status=VersionStatus.ACTIVE).first()
        assert version is not None
        version.rating_mu = 99.5  # as recompute_ratings might
    assert "99.5" in browser.get("/").text
    with unit_of_work(site.league.sessions) as session:
        # A result lands: its sums and the results counter change in one transaction.
        stats = session.get(VersionStats, version.id)
        if stats is None:
            session.add(VersionStats(version_id=version.id, matches=777))
        else:
            stats.matches = 777
        counter = session.get(Counter, RESULTS_COUNTER)
        if counter is None:
            session.add(Counter(name=RESULTS_COUNTER, value=1))
        else:
            counter.value += 1
    assert '<td class="num">777</td>' in browser.get("/").text


def test_an_owner_rolls_back_to_a_retired_version_from_its_page(
    site: Site, browser: httpx.Client, tmp_path: Path
) -> None:
    """Bob's gamma v2 is active, v1 retired: v1's page offers the rollback, and it works."""
    from arena.league.bots._versions import activate_version, get_version

    bot = tmp_path / "bot"
    shutil.copytree(REPO / "bots" / "random", bot, ignore=shutil.ignore_patterns("__pycache__"))
    (bot / "V3").write_text("gamma 2\n")
    second = submit_version(site.league, "bob", "gamma", pack_bot(bot), now=NOW)
    with unit_of_work(site.league.sessions) as session:
        _steps(session, site.league, second.version.id, VersionStatus.RETIRED)
        activate_version(session, "gamma", second.version.number)
        assert VersionStatus.RETIRED is get_version(session, "gamma", 1).status
    sign_in(browser, site.tokens["bob"])
    page = browser.get("/bots/gamma/versions/1")
    assert 'action="/bots/gamma/versions/1/activate"' in page.text
    answer = browser.post("/bots/gamma/versions/1/activate", data={"csrf": csrf_of(page)})
    assert 303 == answer.status_code
    with unit_of_work(site.league.sessions) as session:
        assert VersionStatus.ACTIVE is get_version(session, "gamma", 1).status
        assert VersionStatus.RETIRED is get_version(session, "gamma", 2).status
    assert "status-active" in browser.get("/bots/gamma/versions/1").text


def test_an_owner_challenges_from_the_bot_page_and_others_cannot(
    site: Site, browser: httpx.Client
) -> None:
    """Alpha's page offers alice a challenge form; it queues a challenge shown as one.

    Bob sees no form on it, and his post is refused (403); a post without the CSRF token
    too. The challenge is removed afterwards: the module's league is shared.
    """
    sign_in(browser, site.tokens["bob"])
    assert 'id="challenge-form"' not in browser.get("/bots/alpha").text
    page = browser.get("/bots/beta")
    refused = browser.post(
        "/bots/alpha/challenge", data={"csrf": csrf_of(page), "opponents": "beta gamma"}
    )
    assert 403 == refused.status_code
    with httpx.Client(base_url=site.url, timeout=60) as alice:
        sign_in(alice, site.tokens["alice"])
        page = alice.get("/bots/alpha")
        assert 'id="challenge-form"' in page.text
        assert (
            403 == alice.post("/bots/alpha/challenge", data={"opponents": "beta gamma"}).status_code
        )
        answer = alice.post(
            "/bots/alpha/challenge", data={"csrf": csrf_of(page), "opponents": "beta, gamma"}
        )
        assert 303 == answer.status_code
        found = re.fullmatch(r"/matches/(\d+)", answer.headers["location"])
        assert found is not None
        match_id = int(found.group(1))
        try:
            shown = alice.get(answer.headers["location"]).text
            assert 'id="challenge"' in shown and "asked for by <strong>alice</strong>" in shown
            again = alice.post(
                "/bots/alpha/challenge", data={"csrf": csrf_of(page), "opponents": "beta gamma"}
            )
            assert 429 == again.status_code and "queued or running" in again.text
        finally:
            with unit_of_work(site.league.sessions) as session:
                session.execute(delete(MatchSeat).where(MatchSeat.match_id == match_id))
                session.execute(delete(Match).where(Match.id == match_id))


def test_two_bots_meetings_page_lists_their_matches(site: Site, browser: httpx.Client) -> None:
    """``/bots/alpha/vs/beta``: each finished meeting, places of both; the difference told."""
    page = browser.get("/bots/alpha/vs/beta")
    assert 200 == page.status_code
    with unit_of_work(site.league.sessions) as session:
        met = sorted(
            m.id for m in session.scalars(select(Match).where(Match.status == MatchStatus.FINISHED))
        )
    assert met == [int(x) for x in re.findall(r'<tr data-match="(\d+)">', page.text)]
    assert f"{len(met)} meetings at one table" in page.text
    assert "no meeting with a luck estimate yet" in page.text
    assert 404 == browser.get("/bots/alpha/vs/nobody").status_code


# ------------------------------------------------------------------ bounded requests

MIB = b"\x00" * (1024 * 1024)
BOUNDARY = "arenatestboundary"


def _raw_head(path: str, client: httpx.Client | None = None) -> bytes:
    """A chunked multipart POST's head, with ``client``'s cookies (signed in, CSRF nonce)."""
    lines = [
        f"POST {path} HTTP/1.1",
        "Host: test",
        "Transfer-Encoding: chunked",
        f"Content-Type: multipart/form-data; boundary={BOUNDARY}",
    ]
    if client is not None:
        lines.append("Cookie: " + "; ".join(f"{k}={v}" for k, v in client.cookies.items()))
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def _field_part(name: str, value: str) -> bytes:
    return (
        f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'
    ).encode()


def _file_start(name: str) -> bytes:
    """The headers of a file part: its bytes follow."""
    return (
        f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="{name}";'
        ' filename="bot.tar.gz"\r\nContent-Type: application/gzip\r\n\r\n'
    ).encode()


def test_signing_out_ends_the_session_a_saved_cookie_holds(site: Site) -> None:
    """After "Sign out", the cookie saved before it no longer opens /account (finding 10)."""
    with unit_of_work(site.league.sessions) as session:
        create_user(session, "olga", now=NOW)
        token = issue_token(session, site.league.key, "olga", now=NOW).token
    with httpx.Client(base_url=site.url, timeout=60) as browser:
        assert 303 == sign_in(browser, token).status_code
        saved = browser.cookies[SESSION_COOKIE]
        answer = browser.post("/logout", data={"csrf": csrf_of(browser.get("/account"))})
        assert 303 == answer.status_code
    with httpx.Client(base_url=site.url, timeout=60, cookies={SESSION_COOKIE: saved}) as thief:
        assert 303 == thief.get("/account", follow_redirects=False).status_code
    with httpx.Client(base_url=site.url, timeout=60) as again:  # signing in again works
        assert 303 == sign_in(again, token).status_code
        assert 200 == again.get("/account").status_code


def test_a_file_sent_to_the_sign_in_form_is_refused_before_it_is_read(site: Site) -> None:
    """/login takes no file: one is refused at its part's headers, never spooled (finding 8)."""
    with httpx.Client(base_url=site.url, timeout=60) as browser:
        csrf = csrf_of(browser.get("/login"))
        request = _raw_head("/login", browser)
        first = _field_part("csrf", csrf) + _file_start("token") + b"\x00" * 1024
        status, _ = answer_before_the_end(site.url, request, [first])
    assert 400 == status


def test_a_form_past_the_forms_limit_is_refused_as_it_streams(site: Site) -> None:
    """A form (here the sign-in's) takes MAX_BODY_BYTES at most, counted as it streams: 413.

    Each field within its own limit (FORM_FIELD_BYTES), so that only the body's can refuse
    it. One field past both was refused by whichever the server read first (a field's 400 when
    the body came in small pieces, on a loaded machine; the body's 413 otherwise).
    """
    request = _raw_head("/login")
    size = FORM_FIELD_BYTES - 1024
    fields = [
        f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="f{i}"\r\n\r\n'.encode()
        + b"A" * size
        + b"\r\n"
        for i in range(MAX_BODY_BYTES // size + 1)
    ]
    assert len(fields) < FORM_FIELDS and sum(map(len, fields)) > MAX_BODY_BYTES
    status, sent = answer_before_the_end(site.url, request, fields)
    assert 413 == status
    assert sent > MAX_BODY_BYTES - size  # it read up to its limit, not less


def test_an_upload_past_the_limit_is_refused_as_it_streams(site: Site) -> None:
    """/submit counts the body as it comes (it used to check only Content-Length): 413."""
    limit = site.league.config.uploads.max_compressed_bytes
    with httpx.Client(base_url=site.url, timeout=60) as browser:
        sign_in(browser, site.tokens["bob"])
        csrf = csrf_of(browser.get("/submit"))
        first = _field_part("csrf", csrf) + _field_part("bot", "bob-huge") + _file_start("archive")
        parts = [first] + [MIB] * (limit // len(MIB) + 2)
        status, _ = answer_before_the_end(site.url, _raw_head("/submit", browser), parts)
        assert 413 == status
        assert 404 == browser.get("/bots/bob-huge").status_code


def test_an_upload_without_a_valid_csrf_token_is_refused_before_its_file_is_read(
    site: Site,
) -> None:
    """The CSRF token is checked when the file part begins: 403 before a byte is kept."""
    with httpx.Client(base_url=site.url, timeout=60) as browser:
        sign_in(browser, site.tokens["bob"])
        browser.get("/submit")  # its CSRF nonce cookie
        first = _field_part("csrf", "forged") + _file_start("archive") + MIB
        status, _ = answer_before_the_end(site.url, _raw_head("/submit", browser), [first])
    assert 403 == status


def test_wrong_tokens_on_the_sign_in_form_are_throttled(site: Site) -> None:
    """The sign-in form counts wrong tokens with the API's: past the burst, 429 (finding 16)."""
    # Its clock stands still: no failure comes back however slow the machine is.
    app = create_site(site.league, throttle=TokenThrottle(clock=lambda: 0.0))
    transport = httpx.HTTPTransport(local_address="127.0.0.9")
    with (
        serve_in_thread(app) as url,
        httpx.Client(base_url=url, timeout=60, transport=transport) as guesser,
    ):
        answers = {
            sign_in(guesser, "ffa_" + secrets.token_urlsafe(32)).status_code
            for _ in range(FAILED_TOKEN_BURST)
        }
        assert {401} == answers
        throttled = sign_in(guesser, site.tokens["alice"])
        assert 429 == throttled.status_code
        assert int(throttled.headers["retry-after"]) >= 1
        assert "too many wrong tokens from this address" in throttled.text
        assert SESSION_COOKIE not in guesser.cookies


@pytest.mark.parametrize(
    "path",
    [
        "/matches/99999999999999999999",
        "/matches/99999999999999999999/viewer.json",
        "/bots/alpha/versions/99999999999999999999",
        "/bots/alpha/versions/99999999999999999999/steps.json",
    ],
)
def test_a_number_past_what_the_database_holds_is_400(
    site: Site, browser: httpx.Client, path: str
) -> None:
    """A huge id in a page's path is refused with a sentence, not a 500 (finding 11)."""
    answer = browser.get(path)
    assert 400 == answer.status_code, answer.text
    assert "must be at most 9223372036854775807" in answer.text


def test_the_api_docs_load_no_script_from_elsewhere(site: Site, browser: httpx.Client) -> None:
    """/docs and /redoc (a CDN's unpinned scripts) are gone; /openapi.json stays (finding 15)."""
    for path in ("/docs", "/redoc"):
        answer = browser.get(path)
        assert 404 == answer.status_code, path
        assert CSP == answer.headers["content-security-policy"], path
        assert "cdn" not in answer.text.lower(), path
    assert "/api/v1/health" in browser.get("/openapi.json").json()["paths"]
