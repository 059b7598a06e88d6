import json
import random
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from sqlalchemy import Engine

from arena.cli import main
from arena.league import (
    Credentials,
    Forbidden,
    LeagueConfig,
    LeagueConfigError,
    NotAuthenticated,
    Role,
    UploadLimits,
    authenticate,
    load_credentials,
    open_league,
    unit_of_work,
)
from arena.league._home import ChallengeLimits
from arena.league.matches._seasons import advance_finals
from tests.arena.league.matches.test_seasons import play_round
from tests.arena.league.test_executor import add_versions, bundled


def _init(runner: CliRunner, home: Path, *args: str) -> str:
    result = runner.invoke(main, ["league", "init", str(home), *args])
    assert 0 == result.exit_code, result.output
    return result.stdout.strip()


def _account_of(home: Path, token: str) -> tuple[str, Role]:
    league = open_league(home)
    try:
        with unit_of_work(league.sessions) as session:
            account = authenticate(session, league.key, token)
    finally:
        league.close()
    return account.name, account.role


def test_init_makes_a_private_league_home_and_prints_the_admin_token(tmp_path: Path) -> None:
    """Init writes config, key, database and store, all private, and prints a working token."""
    home = tmp_path / "myleague"
    runner = CliRunner()
    result = runner.invoke(main, ["league", "init", str(home)])
    assert 0 == result.exit_code, result.output
    token = result.stdout.strip()
    assert "shown only this once" in result.stderr
    assert ("admin", Role.ADMIN) == _account_of(home, token)
    assert {"league.toml", "secret.key", "league.db", "artifacts"} <= {
        p.name for p in home.iterdir()
    }
    assert 0o700 == stat.S_IMODE(home.stat().st_mode)
    for private in ("league.toml", "secret.key"):
        assert 0o600 == stat.S_IMODE((home / private).stat().st_mode)
    config = LeagueConfig.parse((home / "league.toml").read_text(), "league.toml")
    assert LeagueConfig(name="myleague") == config


def test_init_refuses_a_non_empty_directory(tmp_path: Path) -> None:
    """An existing league (or anything else) in DIR is never overwritten."""
    home = tmp_path / "myleague"
    runner = CliRunner()
    _init(runner, home)
    before = sorted(p.name for p in home.iterdir())
    result = runner.invoke(main, ["league", "init", str(home)])
    assert 2 == result.exit_code
    assert "is not an empty directory" in result.stderr
    assert before == sorted(p.name for p in home.iterdir())


def test_init_in_an_empty_directory_and_with_its_own_admin_name(tmp_path: Path) -> None:
    """An existing empty directory is fine; --admin names the first user."""
    runner = CliRunner()
    token = _init(runner, tmp_path, "--admin", "root", "--name", "club")
    assert ("root", Role.ADMIN) == _account_of(tmp_path, token)
    assert "club" == open_league(tmp_path).config.name


def test_a_failed_init_leaves_nothing(tmp_path: Path) -> None:
    """A bad admin name fails init, and the directory it made is removed again."""
    home = tmp_path / "myleague"
    result = CliRunner().invoke(main, ["league", "init", str(home), "--admin", "no spaces"])
    assert 2 == result.exit_code
    assert not home.exists()


def test_user_add_with_league_option_env_and_current_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The league home is --league, else $ARENA_LEAGUE, else the current directory."""
    home = tmp_path / "myleague"
    runner = CliRunner()
    _init(runner, home)
    by_option = runner.invoke(main, ["league", "user", "add", "alice", "--league", str(home)])
    by_env = runner.invoke(
        main, ["league", "user", "add", "bob", "--admin"], env={"ARENA_LEAGUE": str(home)}
    )
    monkeypatch.chdir(home)
    by_cwd = runner.invoke(main, ["league", "user", "add", "carol"], env={"ARENA_LEAGUE": None})
    for result in (by_option, by_env, by_cwd):
        assert 0 == result.exit_code, result.output
    assert ("alice", Role.USER) == _account_of(home, by_option.stdout.strip())
    assert ("bob", Role.ADMIN) == _account_of(home, by_env.stdout.strip())
    assert ("carol", Role.USER) == _account_of(home, by_cwd.stdout.strip())


def test_user_add_refuses_a_taken_name(tmp_path: Path) -> None:
    """A second user of one name: exit 2 and the reason."""
    runner = CliRunner()
    _init(runner, tmp_path)
    result = runner.invoke(main, ["league", "user", "add", "admin", "--league", str(tmp_path)])
    assert 2 == result.exit_code
    assert "a user named 'admin' already exists" in result.stderr


def test_user_add_outside_a_league_home(tmp_path: Path) -> None:
    """A directory that is no league home: exit 3 and how to make one."""
    result = CliRunner().invoke(main, ["league", "user", "add", "x", "--league", str(tmp_path)])
    assert 3 == result.exit_code
    assert "is not a league home" in result.stderr
    assert "arena league init DIR" in result.stderr


def test_user_token_replaces_and_user_disable_refuses(tmp_path: Path) -> None:
    """A regenerated token works and the old one does not; a disabled user is refused."""
    runner = CliRunner()
    _init(runner, tmp_path)
    old = runner.invoke(main, ["league", "user", "add", "alice", "--league", str(tmp_path)])
    new = runner.invoke(main, ["league", "user", "token", "alice", "--league", str(tmp_path)])
    assert ("alice", Role.USER) == _account_of(tmp_path, new.stdout.strip())
    with pytest.raises(NotAuthenticated, match="invalid or expired"):
        _account_of(tmp_path, old.stdout.strip())
    runner.invoke(main, ["league", "user", "disable", "alice", "--league", str(tmp_path)])
    with pytest.raises(Forbidden, match="is disabled"):
        _account_of(tmp_path, new.stdout.strip())
    listed = runner.invoke(main, ["league", "user", "list", "--league", str(tmp_path)])
    assert "admin\tadmin\tactive\nalice\tuser\tdisabled\n" == listed.stdout


def test_league_toml_settings_are_read_and_checked(tmp_path: Path) -> None:
    """league.toml's limits are read; an unknown key or a bad value is a clear error."""
    text = '[league]\nname = "x"\nsubmissions_per_day = 3\n[uploads]\nmax_files = 5\n'
    config = LeagueConfig.parse(text, "league.toml")
    assert (3, UploadLimits(max_files=5)) == (config.submissions_per_day, config.uploads)
    assert config == LeagueConfig.parse(config.to_toml(), "league.toml")
    with pytest.raises(LeagueConfigError, match=r"unknown setting uploads\.max_filez"):
        LeagueConfig.parse('[league]\nname = "x"\n[uploads]\nmax_filez = 5\n', "league.toml")
    with pytest.raises(LeagueConfigError, match="submissions_per_day must be a whole number"):
        LeagueConfig.parse('[league]\nname = "x"\nsubmissions_per_day = 0\n', "league.toml")
    limited = LeagueConfig.parse(
        '[league]\nname = "x"\n[challenges]\nper_day = 2\nat_once = 3\n', "league.toml"
    )
    assert ChallengeLimits(per_day=2, at_once=3) == limited.challenges
    assert limited == LeagueConfig.parse(limited.to_toml(), "league.toml")
    with pytest.raises(LeagueConfigError, match="per_day must be a whole number of 1 or more"):
        LeagueConfig.parse('[league]\nname = "x"\n[challenges]\nper_day = 0\n', "league.toml")


def test_init_on_postgresql_and_refusing_a_database_with_a_league(
    tmp_path: Path, kind: str, empty_engine: Engine
) -> None:
    """--db puts the league in PostgreSQL; a second init on that database is refused."""
    if kind != "postgresql":
        pytest.skip("the --db option is for PostgreSQL")
    url = empty_engine.url.render_as_string(hide_password=False)
    runner = CliRunner()
    token = _init(runner, tmp_path / "a", "--db", url)
    assert not (tmp_path / "a" / "league.db").exists()
    assert ("admin", Role.ADMIN) == _account_of(tmp_path / "a", token)
    again = runner.invoke(main, ["league", "init", str(tmp_path / "b"), "--db", url])
    assert 2 == again.exit_code
    assert "is not empty" in again.stderr
    assert not (tmp_path / "b").exists()


def test_login_stores_url_and_token_privately(tmp_path: Path) -> None:
    """Login writes credentials.toml, mode 0600 in a 0700 directory; it reads back."""
    token = "ffa_" + "a" * 43
    result = CliRunner().invoke(
        main,
        ["login", "http://127.0.0.1:8000/", token],
        env={"XDG_CONFIG_HOME": str(tmp_path)},
    )
    assert 0 == result.exit_code, result.output
    path = tmp_path / "flipflop-arena" / "credentials.toml"
    assert 0o600 == stat.S_IMODE(path.stat().st_mode)
    assert 0o700 == stat.S_IMODE(path.parent.stat().st_mode)
    assert Credentials("http://127.0.0.1:8000", token) == load_credentials(path)
    assert token not in result.output


def test_login_asks_for_the_token_when_not_given(tmp_path: Path) -> None:
    """Without TOKEN, login prompts for it (unechoed) and stores it."""
    token = "ffa_" + "b" * 43
    result = CliRunner().invoke(
        main,
        ["login", "https://league.example"],
        input=token + "\n",
        env={"XDG_CONFIG_HOME": str(tmp_path)},
    )
    assert 0 == result.exit_code, result.output
    assert token == load_credentials(tmp_path / "flipflop-arena" / "credentials.toml").token


@pytest.mark.parametrize(
    ("url", "token", "expected"),
    [
        ("ftp://x", "ffa_" + "a" * 43, "must be http:// or https://"),
        ("http://u:p@x", "ffa_" + "a" * 43, "no user, query or fragment"),
        ("http://x", "hunter2", "not a league API token"),
    ],
)
def test_login_refuses_what_cannot_be_a_league(
    tmp_path: Path, url: str, token: str, expected: str
) -> None:
    """A URL that is not http(s), or a token not of the league's form, is refused unstored."""
    result = CliRunner().invoke(main, ["login", url, token], env={"XDG_CONFIG_HOME": str(tmp_path)})
    assert 2 == result.exit_code
    assert expected in result.stderr
    assert not (tmp_path / "flipflop-arena").exists()


def test_not_logged_in_is_a_clear_error(tmp_path: Path) -> None:
    """Reading credentials that were never stored says to log in."""
    with pytest.raises(LeagueConfigError, match="run `arena login URL TOKEN` first"):
        load_credentials(tmp_path / "none.toml")


def test_a_season_from_the_command_line(tmp_path: Path) -> None:
    """start, freeze, final, show, close (twice: one record), list; a step out of order exits 2."""
    home = tmp_path / "home"
    runner = CliRunner()
    _init(runner, home)
    league = open_league(home)
    try:
        add_versions(league, [bundled(b) for b in ("greedy", "counter", "random")])

        def season(*args: str) -> Result:
            return runner.invoke(main, ["league", "season", *args, "--league", str(home)])

        started = season("start", "s1", "--budget", "6", "--looks", "2", "--top", "2")
        assert 0 == started.exit_code, started.output
        assert "season s1: open" in started.stderr
        early = season("close", "s1")
        assert 2 == early.exit_code
        assert "s1 is open: it closes once its final is decided" in early.stderr
        frozen = season("freeze", "s1")
        assert "frozen, 3 entries" in frozen.stderr, frozen.output
        final = season("final", "s1")
        assert "its first round of 3 matches queued" in final.stderr, final.output
        rng = random.Random(3)
        strength = {v: 0.0 for v in range(1, 100)}
        for _ in range(2):
            assert 3 == play_round(league, strength, rng)
            with unit_of_work(league.sessions) as session:
                advance_finals(session)
        shown = season("show", "s1")
        assert "season s1: final (decided)" in shown.stdout, shown.output
        assert "round 2 of 2, 6 matches finished" in shown.stdout
        closed = season("close", "s1", "--json")
        assert 0 == closed.exit_code, closed.output
        again = season("close", "s1", "--json")
        assert json.loads(closed.stdout) == json.loads(again.stdout)
        assert 6 == json.loads(closed.stdout)["matches"]
        listed = season("list")
        assert listed.stdout.startswith("s1\tclosed\t")
    finally:
        league.close()
