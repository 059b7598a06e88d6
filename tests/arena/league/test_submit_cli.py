"""``arena submit``, ``arena league standings`` and ``arena league status`` end to end.

A real league server (uvicorn on a real socket, in a thread) with its service validating
submissions in the process sandbox, on SQLite and on PostgreSQL; the commands run through
click with the credentials ``arena login`` stores, in a private config directory.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from arena.cli import main
from arena.client._league import LeagueClient
from arena.executors._http import serve_in_thread
from arena.league import League, submissions_today, unit_of_work
from arena.league._service import LeagueService
from arena.league.api._routes import create_app
from arena.sandbox import ProcessSandbox
from tests.arena.league.api.test_api import REPO, made_league, user_token
from tests.served import free_port

pytestmark = pytest.mark.slow  # integration: the fast tier leaves it out (CONTRIBUTING.md)

FIXTURE_BOTS = Path(__file__).resolve().parent / "testbots"
POLL = "0.2"


@dataclass(frozen=True)
class Served:
    """A served league whose service validates what is submitted (scheduling off)."""

    league: League
    url: str
    alice: str
    bob: str
    tmp: Path

    def run(self, *args: str, token: str | None = None, login: str | None = None) -> Result:
        """Run ``arena ARGS`` as a user whose config directory is their own.

        ``login`` (a token) logs that user in to this league first; ``token`` puts a token in
        ``$ARENA_TOKEN``.
        """
        config = self.tmp / f"config-{login or token or 'nobody'}"[:60]
        env = {"XDG_CONFIG_HOME": str(config), "ARENA_TOKEN": token or "", "ARENA_LEAGUE": ""}
        runner = CliRunner()
        if login is not None:
            stored = runner.invoke(main, ["login", self.url, login], env=env)
            assert 0 == stored.exit_code, stored.output
        return runner.invoke(main, list(args), env=env)


@pytest.fixture(scope="module")
def served(kind: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """A league on a database of ``kind``, served, validating in the process sandbox."""
    tmp = tmp_path_factory.mktemp(f"submit-{kind}")
    sandbox = ProcessSandbox()
    with made_league(kind, tmp) as (league, _admin):
        alice, bob = user_token(league, "alice"), user_token(league, "bob")
        service = LeagueService(league, sandbox=sandbox, slots=1, scheduling=False)
        service.start()
        try:
            app = create_app(league, executor_status=service.status)
            with serve_in_thread(app) as url:
                yield Served(league, url, alice, bob, tmp)
        finally:
            service.stop(grace=60)
            sandbox.close()


def bot_copy(served: Served, source: Path, tag: str) -> Path:
    """A copy of the bot at ``source``; ``tag`` makes its archive its own."""
    target = served.tmp / f"{source.name}-{tag}"
    if not target.exists():
        shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__"))
        (target / "TAG").write_text(tag + "\n")
    return target


def _version(served: Served, bot: str, number: int) -> dict[str, object]:
    with LeagueClient(served.url, served.alice) as client:
        return client.version(bot, number)


def test_submit_follows_each_step_until_active(served: Served) -> None:
    """A good bot is uploaded, each step printed as it ends, and it ends active (exit 0).

    A name of its own: other tests of the module submit the same archive as ``rnd`` to the
    same league, and in random order (pytest-randomly) it was "submitted before".
    """
    bot = bot_copy(served, REPO / "bots" / "random", "one")
    result = served.run("submit", str(bot), "--name", "steps", "--poll", POLL, login=served.alice)
    assert 0 == result.exit_code, result.output
    assert f"uploaded steps v1 to {served.url}" in result.stdout
    assert "steps v1 is active: it plays in the league from now on" in result.stdout
    told = [line.split()[:2] for line in result.stderr.splitlines() if line.startswith("  ")]
    assert [["build", "passed"], ["check", "passed"], ["match", "passed"]] == [
        t for t in told if t and t[0] in ("build", "check", "match") and t[1] != "running…"
    ]
    assert "active" == _version(served, "steps", 1)["status"]


def test_the_same_bot_again_is_its_version_and_uses_no_submission(served: Served) -> None:
    """Submitting an unchanged bot again names the existing version; no daily slot is taken."""
    bot = bot_copy(served, REPO / "bots" / "random", "one")
    first = served.run("submit", str(bot), "--name", "same", "--poll", POLL, login=served.alice)
    assert 0 == first.exit_code, first.output
    with unit_of_work(served.league.sessions) as session:
        used = submissions_today(session, "alice")
    again = served.run("submit", str(bot), "--name", "same", "--poll", POLL, login=served.alice)
    assert 0 == again.exit_code, again.output
    assert "same v1 is this very archive, submitted before" in again.stdout
    with unit_of_work(served.league.sessions) as session:
        assert used == submissions_today(session, "alice")


def test_a_rejected_bot_exits_1_with_its_step_and_reason(served: Served) -> None:
    """A bot that fails conformance is rejected at its check step: exit 1, the reason printed."""
    bot = bot_copy(served, FIXTURE_BOTS / "illegal", "one")
    result = served.run("submit", str(bot), "--poll", POLL, login=served.alice)
    assert 1 == result.exit_code, result.output
    assert "illegal v1 was rejected at its check step (why: above)" in result.stdout
    told = result.stderr.splitlines()
    failed = next(i for i, line in enumerate(told) if line.split()[:2] == ["check", "FAILED"])
    assert "FAILED: " in "\n".join(told[failed + 1 :])
    assert "rejected" == _version(served, "illegal", 1)["status"]


def test_no_activate_keeps_the_playing_version(served: Served) -> None:
    """With --no-activate a new version passes validation but the active one keeps playing."""
    one = bot_copy(served, REPO / "bots" / "greedy", "one")
    two = bot_copy(served, REPO / "bots" / "greedy", "two")
    first = served.run("submit", str(one), "--name", "grd", "--poll", POLL, login=served.alice)
    assert 0 == first.exit_code, first.output
    second = served.run(
        "submit", str(two), "--name", "grd", "--no-activate", "--poll", POLL, login=served.alice
    )
    assert 0 == second.exit_code, second.output
    assert "grd v2 passed validation; kept inactive as asked (--no-activate)" in second.stdout
    assert ("active", "retired") == (
        _version(served, "grd", 1)["status"],
        _version(served, "grd", 2)["status"],
    )


def test_no_follow_returns_once_uploaded(served: Served) -> None:
    """With --no-follow the command ends after the upload, saying where the version is."""
    bot = bot_copy(served, REPO / "bots" / "counter", "one")
    result = served.run("submit", str(bot), "--name", "cnt", "--no-follow", login=served.alice)
    assert 0 == result.exit_code, result.output
    assert "uploaded cnt v1" in result.stdout
    assert "(not following its validation)" in result.stdout
    assert "" == result.stderr


def test_another_users_bot_is_refused_exit_2(served: Served) -> None:
    """Bob cannot submit to alice's bot: exit 2 with the league's sentence."""
    first = served.run(
        "submit",
        str(bot_copy(served, REPO / "bots" / "random", "one")),
        "--name",
        "rnd",
        "--no-follow",
        login=served.alice,
    )
    assert 0 == first.exit_code, first.output
    bot = bot_copy(served, REPO / "bots" / "random", "bobs")
    result = served.run("submit", str(bot), "--name", "rnd", login=served.bob)
    assert 2 == result.exit_code
    assert "the bot 'rnd' belongs to another user: only its owner submits to it" in result.stderr


def test_not_logged_in_or_unreachable_exit_3(served: Served) -> None:
    """No stored league is exit 3 with how to log in; a league that does not answer too."""
    bot = str(bot_copy(served, REPO / "bots" / "random", "one"))
    nobody = served.run("submit", bot)
    assert 3 == nobody.exit_code
    assert "not logged in to a league: run `arena login URL TOKEN` first" in nobody.stderr
    port = free_port()  # nobody listens there
    away = served.run("submit", bot, "--url", f"http://127.0.0.1:{port}", token=served.alice)
    assert 3 == away.exit_code
    assert f"cannot reach the league at http://127.0.0.1:{port}" in away.stderr


def test_a_token_is_not_sent_to_another_url(served: Served) -> None:
    """A stored token is for its league only: --url elsewhere asks to log in there (exit 3)."""
    bot = str(bot_copy(served, REPO / "bots" / "random", "one"))
    other = served.url.replace("127.0.0.1", "localhost")
    result = served.run("submit", bot, "--url", other, login=served.alice)
    assert 3 == result.exit_code
    assert f"no API token for {other}: run `arena login {other}`" in result.stderr


def test_standings_from_the_server_and_from_the_home_agree(served: Served) -> None:
    """`arena league standings` prints `arena run`'s table, the same from the API and the home."""
    bot = bot_copy(served, REPO / "bots" / "random", "one")
    made = served.run("submit", str(bot), "--name", "rnd", "--poll", POLL, login=served.alice)
    assert 0 == made.exit_code, made.output
    remote = served.run("league", "standings", login=served.bob)
    local = served.run("league", "standings", "--league", str(served.league.home))
    assert 0 == remote.exit_code, remote.output
    assert 0 == local.exit_code, local.output
    assert remote.stdout == local.stdout
    assert "League 'test'" in remote.stdout
    assert "rnd v1" in remote.stdout
    assert "rating μ (95%)" in remote.stdout
    assert "no counted match yet" in remote.stdout
    as_json = served.run("league", "standings", "--json", "--url", served.url)
    with LeagueClient(served.url) as client:
        assert client.leaderboard() == json.loads(as_json.stdout)


def test_standings_refuses_both_sources(served: Served) -> None:
    """--league and --url together are a usage error (exit 2)."""
    result = served.run(
        "league", "standings", "--league", str(served.league.home), "--url", served.url
    )
    assert 2 == result.exit_code
    assert "give --league DIR or --url URL, not both" in result.stderr


def test_status_prints_the_queue_fairness_and_the_executor(served: Served) -> None:
    """`arena league status` prints queue, spread and validations; via the API the executor too."""
    remote = served.run("league", "status", "--url", served.url)
    assert 0 == remote.exit_code, remote.output
    for start in ("league      test", "matches     ", "versions    ", "validation  steps: "):
        assert any(line.startswith(start) for line in remote.stdout.splitlines()), start
    assert "executor    " in remote.stdout
    local = served.run("league", "status", "--league", str(served.league.home), "--json")
    assert 0 == local.exit_code, local.output
    answer = json.loads(local.stdout)
    assert answer["executor"] is None
    assert answer["active_versions"] >= 0


def test_versions_lists_them_and_activate_rolls_back(served: Served) -> None:
    """Two versions: the newer plays; `arena activate` puts the older back; others refused."""
    for tag in ("v1", "v2"):
        bot = bot_copy(served, REPO / "bots" / "random", f"roll-{tag}")
        done = served.run("submit", str(bot), "--name", "roll", "--poll", POLL, login=served.alice)
        assert 0 == done.exit_code, done.output
    listed = served.run("versions", "roll", login=served.alice)
    assert 0 == listed.exit_code, listed.output
    assert [["v2", "active"], ["v1", "retired"]] == [
        line.split()[:2] for line in listed.stdout.splitlines()
    ]
    by_bob = served.run("activate", "roll", "1", login=served.bob)
    assert 2 == by_bob.exit_code, by_bob.output
    assert "active" == _version(served, "roll", 2)["status"]
    back = served.run("activate", "roll", "1", login=served.alice)
    assert 0 == back.exit_code, back.output
    assert "roll v1 is active" in back.stdout
    assert ("active", "retired") == (
        _version(served, "roll", 1)["status"],
        _version(served, "roll", 2)["status"],
    )
    unknown = served.run("activate", "roll", "9", login=served.alice)
    assert 2 == unknown.exit_code, unknown.output


def test_a_challenge_is_played_now_told_and_never_rated(served: Served) -> None:
    """``arena challenge`` of alice's bot against two house bots: played at once, never rated.

    Bob cannot challenge with alice's bot (exit 2, one sentence); alice's challenge is queued,
    played and its places printed with the command that fetches its replay (exit 0). The API
    marks it a challenge asked for by alice, with no rating after it; her bot's standing
    counts no match; the two bots' meetings list it.
    """
    bot = bot_copy(served, REPO / "bots" / "random", "challenge")
    submitted = served.run("submit", str(bot), "--name", "chal", "--poll", POLL, login=served.alice)
    assert 0 == submitted.exit_code, submitted.output
    refused = served.run(
        "challenge", "chal", "greedy", "counter", "--url", served.url, token=served.bob
    )
    assert 2 == refused.exit_code, refused.output
    assert "only its owner challenges" in " ".join(refused.output.split())
    done = served.run(
        "challenge",
        "chal",
        "greedy",
        "counter",
        "--poll",
        POLL,
        "--url",
        served.url,
        token=served.alice,
    )
    assert 0 == done.exit_code, done.output
    found = re.search(r"challenge: match (\d+), seat 0 ", done.stdout)
    assert found is not None, done.stdout
    match_id = int(found.group(1))
    assert f"its replay: arena league replay {match_id} -o m{match_id}.jsonl" in done.stdout
    assert 3 == len(re.findall(r"^  [123]\. ", done.stdout, flags=re.MULTILINE)), done.stdout
    with LeagueClient(served.url, served.alice) as client:
        match = client.match(match_id)
        standing = next(r for r in client.leaderboard()["standings"] if r["bot"] == "chal")
        meetings = client.matchup("chal", "greedy")
    assert ("challenge", "alice", "finished") == (
        match["kind"],
        match["requested_by"],
        match["status"],
    )
    assert [None, None, None] == [s["rating_after"] for s in match["seats"]]
    assert 0 == standing["matches"]
    assert [match_id] == [m["match"] for m in meetings["meetings"]]
    assert (0, True) == (meetings["rated"], meetings["meetings"][0]["challenge"])
