"""Validating versions: build, check, validation match, and what each outcome does to a version.

Real bots in a real sandbox: the process sandbox for most tests (fast), the Docker sandbox for
one good bot from upload to active (skipped without a Docker engine, failed instead under
``ARENA_REQUIRE_DOCKER``). The fixture bots are in ``tests/arena/league/testbots/``:
``illegal`` fails the conformance check; ``matchcrash`` passes it, then dies in its first real
match. Database tests run on SQLite and PostgreSQL (``conftest.py``).
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import datetime as dt
import json
import os
import re
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine, select, update

from arena.league import (
    Bot,
    BotVersion,
    League,
    StepKind,
    StepOutcome,
    VersionStatus,
    create_user,
    init_league,
    pack_bot,
    unit_of_work,
)
from arena.league._validation import (
    HOUSE_BOTS,
    NO_IMAGE,
    VALIDATION_HANDS,
    LeagueLedger,
    house_bots,
    validate_version,
    validation_table,
)
from arena.league.bots._versions import (
    VersionInfo,
    activate_version,
    claim_validation,
    get_version,
    submit_version,
)
from arena.match._runner import TimeControl
from arena.sandbox import ProcessSandbox, Sandbox, SandboxLimits
from arena.sandbox._docker import DockerSandbox, docker_available
from flipflop import BotManifest, MatchConfig, read_manifest

pytestmark = pytest.mark.slow  # integration: the fast tier leaves it out (CONTRIBUTING.md)

REPO = Path(__file__).resolve().parents[3]
BOTS = Path(__file__).resolve().parent / "testbots"
REQUIRE_DOCKER = "ARENA_REQUIRE_DOCKER"
LEASE = dt.timedelta(minutes=10)


@pytest.fixture
def league(kind: str, empty_engine: Engine, tmp_path: Path) -> Iterator[League]:
    """A league home with the user alice, on this test's own database."""
    url = "" if kind == "sqlite" else empty_engine.url.render_as_string(hide_password=False)
    with _league(tmp_path, url) as home:
        yield home


@contextlib.contextmanager
def _league(tmp_path: Path, url: str) -> Iterator[League]:
    home, _ = init_league(tmp_path / "league", database=url)
    with unit_of_work(home.sessions) as session:
        create_user(session, "alice")
    try:
        yield home
    finally:
        home.close()


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    """One process sandbox for the module's validations."""
    box = ProcessSandbox()
    try:
        yield box
    finally:
        box.close()


@pytest.fixture
def workdir() -> Iterator[Path]:
    """A short directory for sockets (unix socket paths are limited to 107 bytes)."""
    path = Path(tempfile.mkdtemp(prefix="ffa-v-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _copy(source: Path, tmp_path: Path, tag: str = "", **toml: str) -> Path:
    """A copy of the bot at ``source``; ``tag`` makes its archive differ; ``toml`` lines added."""
    target = tmp_path / f"{source.name}{tag}"
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__"))
    if tag:
        (target / "NOTES.txt").write_text(f"build {tag}\n", encoding="utf-8")
    if toml:
        with (target / "bot.toml").open("a", encoding="utf-8") as f:
            f.writelines(f"{key} = {value}\n" for key, value in toml.items())
    return target


def _submit(league: League, bot: str, directory: Path, *, activate: bool = True) -> int:
    """Submit the bot in ``directory`` as alice's ``bot``; the version's id."""
    return submit_version(league, "alice", bot, pack_bot(directory), activate=activate).version.id


def _claim(league: League, worker: str = "w1") -> int:
    with unit_of_work(league.sessions) as session:
        claimed = claim_validation(session, worker, LEASE)
    assert claimed is not None
    return claimed


def _validate(
    league: League,
    sandbox: Sandbox,
    workdir: Path,
    *,
    worker: str = "w1",
    house: list[BotManifest] | None = None,
) -> VersionStatus:
    """Claim the oldest waiting version and validate it."""
    version_id = _claim(league, worker)
    return validate_version(
        league, version_id, worker=worker, sandbox=sandbox, workdir=workdir, house=house
    )


def _version(league: League, bot: str, number: int = 1) -> VersionInfo:
    with unit_of_work(league.sessions) as session:
        return get_version(session, bot, number)


def _outcomes(info: VersionInfo) -> list[tuple[StepKind, StepOutcome | None]]:
    return [(s.step, s.outcome) for s in info.steps]


def _details(info: VersionInfo) -> list[str]:
    """What each step said: an assertion's message, so that a failure shows why."""
    return [f"{s.step.value}: {s.outcome}: {s.detail}" for s in info.steps]


def _log(league: League, info: VersionInfo, kind: StepKind) -> str:
    step = next(s for s in info.steps if s.step is kind)
    assert step.log_sha256 is not None
    return league.artifacts.get(step.log_sha256).decode("utf-8")


def _lease(league: League, version_id: int) -> tuple[str | None, dt.datetime | None]:
    with unit_of_work(league.sessions) as session:
        version = session.get(BotVersion, version_id)
        assert version is not None
        return version.lease_owner, version.lease_expires


PASSED_ALL = [
    (StepKind.BUILD, StepOutcome.PASSED),
    (StepKind.CHECK, StepOutcome.PASSED),
    (StepKind.MATCH, StepOutcome.PASSED),
]


# ---------------------------------------------------------------------- passing


def test_a_good_bot_passes_every_step_and_becomes_active(
    league: League, sandbox: Sandbox, workdir: Path, tmp_path: Path
) -> None:
    """greedy, packed and submitted: built, checked, validated, active; every step logged."""
    version_id = _submit(league, "greedy", _copy(REPO / "bots" / "greedy", tmp_path))
    assert VersionStatus.ACTIVE == _validate(league, sandbox, workdir)
    info = _version(league, "greedy")
    assert (VersionStatus.ACTIVE, "") == (info.status, info.reason)
    assert PASSED_ALL == _outcomes(info), _details(info)
    build, check, match = info.steps
    assert NO_IMAGE == build.detail
    assert check.detail.endswith("OK: no problems found")
    assert check.detail.startswith("bot 'greedy' 1.0.0 (protocol 1.")
    # A table of 3 to 5 as the scheduler draws one, the house bots taking turns at the
    # other seats (issue 24, finding 1: it must look like a rated match).
    played = re.fullmatch(
        r"played its validation match against ([a-z, ]+): place [1-5] of ([345])"
        r" after ([0-9]+) hands",
        match.detail,
    )
    assert played is not None, match.detail
    size = int(played[2])
    assert [HOUSE_BOTS[i % 3] for i in range(size - 1)] == played[1].split(", ")
    assert 1 <= int(played[3]) <= VALIDATION_HANDS  # it may end by survival first
    assert all(s.finished is not None and s.started <= s.finished for s in info.steps)
    assert re.search(r"seat [0-4] greedy-v1 1\.0\.0: place", _log(league, info, StepKind.MATCH))
    assert (None, None) == _lease(league, version_id)
    assert [] == list(workdir.iterdir())  # its scratch space is gone


def test_a_new_version_retires_the_active_one_and_the_old_one_can_come_back(
    league: League, sandbox: Sandbox, workdir: Path, tmp_path: Path
) -> None:
    """v2 validated becomes active, v1 retired; activating v1 again is the rollback."""
    greedy = REPO / "bots" / "greedy"
    _submit(league, "greedy", _copy(greedy, tmp_path, "1"))
    assert VersionStatus.ACTIVE == _validate(league, sandbox, workdir)
    _submit(league, "greedy", _copy(greedy, tmp_path, "2"))
    assert VersionStatus.ACTIVE == _validate(league, sandbox, workdir)
    assert [VersionStatus.RETIRED, VersionStatus.ACTIVE] == [
        _version(league, "greedy", n).status for n in (1, 2)
    ]
    with unit_of_work(league.sessions) as session:
        activate_version(session, "greedy", 1)
    assert [VersionStatus.ACTIVE, VersionStatus.RETIRED] == [
        _version(league, "greedy", n).status for n in (1, 2)
    ]


def test_a_version_submitted_not_to_activate_is_retired_once_validated(
    league: League, sandbox: Sandbox, workdir: Path, tmp_path: Path
) -> None:
    """--no-activate: validated but not playing; the active version stays; it can be activated."""
    greedy = REPO / "bots" / "greedy"
    _submit(league, "greedy", _copy(greedy, tmp_path, "1"))
    _validate(league, sandbox, workdir)
    _submit(league, "greedy", _copy(greedy, tmp_path, "2"), activate=False)
    assert VersionStatus.RETIRED == _validate(league, sandbox, workdir)
    assert VersionStatus.ACTIVE == _version(league, "greedy", 1).status
    with unit_of_work(league.sessions) as session:
        assert VersionStatus.ACTIVE == activate_version(session, "greedy", 2).status


def test_an_older_version_validated_after_a_newer_one_does_not_replace_it(
    league: League, sandbox: Sandbox, workdir: Path, tmp_path: Path
) -> None:
    """Out of order (v2 validated first): v1 ends retired, v2 stays the active one."""
    greedy = REPO / "bots" / "greedy"
    v1 = _submit(league, "greedy", _copy(greedy, tmp_path, "1"))
    v2 = _submit(league, "greedy", _copy(greedy, tmp_path, "2"))
    with unit_of_work(league.sessions) as session:
        assert v1 == claim_validation(session, "slow", LEASE)
        assert v2 == claim_validation(session, "fast", LEASE)
    assert VersionStatus.ACTIVE == validate_version(
        league, v2, worker="fast", sandbox=sandbox, workdir=workdir
    )
    assert VersionStatus.RETIRED == validate_version(
        league, v1, worker="slow", sandbox=sandbox, workdir=workdir
    )
    assert VersionStatus.ACTIVE == _version(league, "greedy", 2).status


# ---------------------------------------------------------------------- failing


def test_a_bot_that_fails_conformance_is_rejected_at_check_in_arena_checks_words(
    league: League, sandbox: Sandbox, workdir: Path, tmp_path: Path
) -> None:
    """Rejected at `check`, its detail and reason format_report's text; no match is played."""
    version_id = _submit(league, "illegal", _copy(BOTS / "illegal", tmp_path))
    assert VersionStatus.REJECTED == _validate(league, sandbox, workdir)
    info = _version(league, "illegal")
    assert [(StepKind.BUILD, StepOutcome.PASSED), (StepKind.CHECK, StepOutcome.FAILED)] == (
        _outcomes(info)
    )
    detail = info.steps[1].detail
    assert info.reason == detail
    lines = detail.splitlines()
    assert lines[0].startswith("bot 'illegal' 1.0.0 (protocol 1.")
    assert lines[1].startswith("5 matches, ")
    assert lines[2].startswith("FAILED: ") and lines[2].endswith(" problems")
    assert lines[3].startswith("  no discard (")
    assert lines[4].endswith(
        ": the plan (no steps) ended with the turn open: no discard, cards left"
    )
    log = _log(league, info, StepKind.CHECK)
    assert log.startswith(detail)
    assert "the bot's output (last lines of " in log
    assert "handshake from arena flipflop-conformance" in log
    assert (None, None) == _lease(league, version_id)


def test_a_bot_that_refuses_rated_matches_is_caught_by_its_validation_match(
    league: League, sandbox: Sandbox, workdir: Path, tmp_path: Path
) -> None:
    """Issue 24, finding 1: the validation match looks rated, so a rated-only refuser fails it.

    ``ratedrefuser`` refuses StartMatch in any match that looks rated: an id ``m<number>``,
    no house-bot or checker names at the table, a league's hand cap, not seat 0 of four. It
    passes the conformance check; before the fix it passed the validation match too (id
    ``validation-…``, the house bots' names, 20 hands, seat 0 of 4) and then made every rated
    match it was seated at void.
    """
    version_id = _submit(league, "ratedrefuser", _copy(BOTS / "ratedrefuser", tmp_path))
    with unit_of_work(league.sessions) as session:  # real versions' names for the table
        create_user(session, "bob")
    for i in range(4):
        submit_version(
            league, "bob", f"bobbot{i}", pack_bot(_copy(REPO / "bots" / "random", tmp_path, str(i)))
        )
    with unit_of_work(league.sessions) as session:
        session.execute(
            update(BotVersion)
            .where(BotVersion.status == VersionStatus.UPLOADED, BotVersion.number == 1)
            .where(
                BotVersion.bot_id
                != select(Bot.id).where(Bot.name == "ratedrefuser").scalar_subquery()
            )
            .values(status=VersionStatus.ACTIVE)
        )
    # The table is drawn as a rated one is, so it is sometimes seat 0 of four (1 draw in 12),
    # which this refuser takes for the old validation and plays, as it plays such rated
    # matches. A fixed key makes the draw the same in every run: this one draws another shape.
    league = dataclasses.replace(league, key=bytes(range(32)))
    with league.sessions() as session:
        table = validation_table(
            session, league.key, version_id, "w1", config=MatchConfig(), clock=TimeControl()
        )
    assert (table.seat, len(table.names)) != (0, 4), table
    assert VersionStatus.REJECTED == _validate(league, sandbox, workdir)
    info = _version(league, "ratedrefuser")
    rejected_at_match = [*PASSED_ALL[:2], (StepKind.MATCH, StepOutcome.FAILED)]
    assert rejected_at_match == _outcomes(info), _details(info)
    assert info.reason.startswith("did not start in its validation match: ")
    assert "REFUSING RATED MATCH m" in _log(league, info, StepKind.MATCH)


def test_a_bot_that_crashes_in_its_validation_match_is_rejected_at_match(
    league: League, sandbox: Sandbox, workdir: Path, tmp_path: Path
) -> None:
    """It passes the check, then dies in the match: rejected, the crash in its words."""
    _submit(league, "matchcrash", _copy(BOTS / "matchcrash", tmp_path))
    assert VersionStatus.REJECTED == _validate(league, sandbox, workdir)
    info = _version(league, "matchcrash")
    rejected_at_match = [*PASSED_ALL[:2], (StepKind.MATCH, StepOutcome.FAILED)]
    assert rejected_at_match == _outcomes(info), _details(info)
    detail = info.steps[2].detail
    assert info.reason == detail
    assert detail.startswith("crashed in its validation match: ")
    assert "exit code 3" in detail
    # At its first decision: in hand 1, or later if its seat had no turn before a hand ended
    # (its seat is drawn, as a rated match's is).
    crashed = re.search(r"\(hand ([0-9]+)\)$", detail)
    assert crashed is not None, detail
    log = _log(league, info, StepKind.MATCH)
    assert re.search(rf"fault: seat [0-4] matchcrash-v1, hand {crashed[1]}, crash: ", log)
    assert "CRASHING IN A REAL MATCH" in log
    assert re.search(r"seat [0-4] matchcrash-v1 1\.0\.0:", log) and ", forfeited" in log


def test_a_bot_that_never_starts_is_rejected_at_check(
    league: League, sandbox: Sandbox, workdir: Path, tmp_path: Path
) -> None:
    """A command that exits at once: `exited while starting`, with its last output."""
    bot = _copy(REPO / "bots" / "greedy", tmp_path)
    toml = (bot / "bot.toml").read_text(encoding="utf-8")
    (bot / "bot.toml").write_text(toml.replace('"bot.py"', '"missing.py"'), encoding="utf-8")
    _submit(league, "nostart", bot)
    assert VersionStatus.REJECTED == _validate(league, sandbox, workdir)
    info = _version(league, "nostart")
    assert [(StepKind.BUILD, StepOutcome.PASSED), (StepKind.CHECK, StepOutcome.FAILED)] == (
        _outcomes(info)
    )
    assert info.reason.startswith("exited while starting (exit code 2); its last output: ")
    assert "missing.py" in info.reason


def test_a_bot_asking_for_more_than_the_league_allows_is_rejected_at_build(
    league: League, sandbox: Sandbox, workdir: Path, tmp_path: Path
) -> None:
    """memory_mb beyond the sandbox's cap: the build step fails, in the sandbox's words.

    The upload takes what the arena's default caps allow (1024 MB); this league's validator
    runs a sandbox with a lower cap (an upload past the default is refused at upload:
    ``tests/arena/league/api/test_api.py``).
    """
    _submit(league, "greedy", _copy(REPO / "bots" / "greedy", tmp_path, memory_mb="1024"))
    strict = ProcessSandbox(SandboxLimits(max_memory_mb=512))
    try:
        assert VersionStatus.REJECTED == _validate(league, strict, workdir)
    finally:
        strict.close()
    info = _version(league, "greedy")
    assert [(StepKind.BUILD, StepOutcome.FAILED)] == _outcomes(info), _details(info)
    assert (
        "greedy-v1: bot.toml asks for memory_mb = 1024, more than this arena allows (512 MB);"
        " ask for at most that"
    ) == info.reason


# ---------------------------------------------------------------------- the league's faults


def test_a_league_error_puts_the_version_back_and_a_retry_starts_afresh(
    league: League, sandbox: Sandbox, workdir: Path, tmp_path: Path
) -> None:
    """A house bot that cannot start is an error, not the bot's fault: validated again later."""
    version_id = _submit(league, "greedy", _copy(REPO / "bots" / "greedy", tmp_path))
    broken = _copy(REPO / "bots" / "random", tmp_path, "-broken")
    toml = (broken / "bot.toml").read_text(encoding="utf-8")
    (broken / "bot.toml").write_text(toml.replace('"bot.py"', '"gone.py"'), encoding="utf-8")
    house = [read_manifest(broken), read_manifest(REPO / "bots" / "greedy")]
    assert VersionStatus.UPLOADED == _validate(league, sandbox, workdir, house=house)
    info = _version(league, "greedy")
    assert [*PASSED_ALL[:2], (StepKind.MATCH, StepOutcome.ERROR)] == _outcomes(info), _details(info)
    assert "a house bot did not start in the validation match (random)" == info.steps[2].detail
    owner, expires = _lease(league, version_id)
    assert ("", "w1") == (info.reason, owner)
    assert expires is not None
    # It waits RETRY_AFTER before anyone may claim it again: a lasting fault cannot keep
    # the validators busy with it.
    with unit_of_work(league.sessions) as session:
        assert claim_validation(session, "w2", LEASE, now=expires - dt.timedelta(seconds=1)) is None
    with unit_of_work(league.sessions) as session:
        assert version_id == claim_validation(session, "w2", LEASE, now=expires)
    assert VersionStatus.ACTIVE == validate_version(
        league, version_id, worker="w2", sandbox=sandbox, workdir=workdir
    )
    assert PASSED_ALL == _outcomes(_version(league, "greedy"))


def test_a_validator_that_lost_its_lease_writes_nothing(
    league: League, sandbox: Sandbox, workdir: Path, tmp_path: Path
) -> None:
    """Its version claimed again by another after the lease ran out: the first one stops."""
    version_id = _submit(league, "greedy", _copy(REPO / "bots" / "greedy", tmp_path))
    now = dt.datetime.now(dt.UTC)
    with unit_of_work(league.sessions) as session:
        assert version_id == claim_validation(session, "dead", LEASE, now=now - 2 * LEASE)
        assert version_id == claim_validation(session, "w2", LEASE, now=now)
    assert VersionStatus.UPLOADED == validate_version(
        league, version_id, worker="dead", sandbox=sandbox, workdir=workdir
    )
    assert () == _version(league, "greedy").steps
    assert VersionStatus.ACTIVE == validate_version(
        league, version_id, worker="w2", sandbox=sandbox, workdir=workdir
    )


def test_the_lease_is_renewed_while_a_step_runs(league: League, tmp_path: Path) -> None:
    """A step longer than the lease: renewed on the way, so nobody else can claim the version."""
    version_id = _submit(league, "greedy", _copy(REPO / "bots" / "greedy", tmp_path))
    lease = dt.timedelta(seconds=3)
    with unit_of_work(league.sessions) as session:
        claim_validation(session, "w1", lease)
    with LeagueLedger(league, version_id, "w1", lease).renewing():
        time.sleep(4.5)  # past the lease: only renewals keep it
        with unit_of_work(league.sessions) as session:
            assert claim_validation(session, "w2", lease) is None
    assert "w1" == _lease(league, version_id)[0]


def test_house_bots_are_bundled_bots() -> None:
    """The validation match's opponents exist here, as the league's house bots."""
    assert list(HOUSE_BOTS) == [m.name for m in house_bots()]
    assert 2 <= len(HOUSE_BOTS) <= 4


# ---------------------------------------------------------------------- Docker


def _require_docker() -> None:
    """Skip without a Docker engine; fail instead under ARENA_REQUIRE_DOCKER."""
    reason = docker_available()
    if reason is None:
        return
    if os.environ.get(REQUIRE_DOCKER):
        pytest.fail(f"{REQUIRE_DOCKER} is set but {reason}", pytrace=False)
    pytest.skip(reason)


@pytest.mark.docker
@pytest.mark.slow
def test_a_good_bot_is_validated_in_the_docker_sandbox(tmp_path: Path, workdir: Path) -> None:
    """With Docker: the build step builds the version's image offline; the bot ends active."""
    _require_docker()
    # The sandbox is under test here, not the database: SQLite only.
    with _league(tmp_path, "") as league, contextlib.closing(DockerSandbox(log=print)) as box:
        _submit(league, "greedy", _copy(REPO / "bots" / "greedy", tmp_path))
        status = _validate(league, box, workdir)
        info = _version(league, "greedy")
        assert (VersionStatus.ACTIVE, PASSED_ALL) == (status, _outcomes(info)), info
        build = info.steps[0].detail
        assert build.startswith("image flipflop-bot-greedy-v1:")
        assert build.endswith(", built offline from the arena's python recipe")
        tag = build.split()[1].rstrip(",")
        assert box.client.images.get(tag) is not None
        assert "docker sandbox" in box.isolation


@pytest.mark.docker
def test_a_failed_npm_install_names_no_path_of_the_league(tmp_path: Path, workdir: Path) -> None:
    """A Node.js bot whose npm ci fails: the build step's detail names no path of this host.

    Issue 24, finding 14: the detail, which the bot's owner reads, said ``npm ci of
    <league home>/cache/sources/<sha256>/package-lock.json failed``, and npm's own last line
    named its temporary directory. The lock pins a package the registry does not have, so
    npm ci fails wherever it runs (without a registry too, after npm's retries).
    """
    _require_docker()
    if shutil.which("npm") is None:
        if os.environ.get("ARENA_REQUIRE_TOOLCHAINS"):
            pytest.fail("ARENA_REQUIRE_TOOLCHAINS is set but npm is not installed", pytrace=False)
        pytest.skip("npm is not installed")
    bot = tmp_path / "npmfails"
    bot.mkdir()
    (bot / "bot.toml").write_text(
        'name = "npmfails"\nruntime = "node"\ncommand = ["node", "b.js"]\n'
    )
    (bot / "b.js").write_text("\n")
    missing = "flipflop-arena-test-no-such-package"
    package = {"name": "npmfails", "version": "1.0.0", "dependencies": {missing: "1.0.0"}}
    integrity = "sha512-" + base64.b64encode(bytes(range(64))).decode()
    lock = {
        "name": "npmfails",
        "version": "1.0.0",
        "lockfileVersion": 3,
        "requires": True,
        "packages": {
            "": package,
            f"node_modules/{missing}": {"version": "1.0.0", "integrity": integrity},
        },
    }
    (bot / "package.json").write_text(json.dumps(package))
    (bot / "package-lock.json").write_text(json.dumps(lock))
    with _league(tmp_path, "") as league, contextlib.closing(DockerSandbox(log=print)) as box:
        _submit(league, "npmfails", bot)
        assert VersionStatus.REJECTED == _validate(league, box, workdir)
        info = _version(league, "npmfails")
        assert [(StepKind.BUILD, StepOutcome.FAILED)] == _outcomes(info), _details(info)
        detail = info.steps[0].detail
        assert detail.startswith("npmfails-v1: npm ci of package-lock.json failed (exit "), detail
        for path in (str(league.home), str(tmp_path), tempfile.gettempdir() + "/flipflop-npm-"):
            assert path not in detail
            assert path not in _log(league, info, StepKind.BUILD)


def test_a_requirements_file_without_hashes_names_no_path_of_the_league(
    tmp_path: Path, workdir: Path
) -> None:
    """Issue 24, finding 14 (pip's part): the build step's detail names the file, not its path.

    It said ``<league home>/cache/sources/<sha256>/requirements.txt: 'six==1.17.0' has no
    --hash=…``, which the bot's owner reads.
    """
    _require_docker()
    bot = _copy(REPO / "bots" / "greedy", tmp_path)
    (bot / "requirements.txt").write_text("six==1.17.0\n")
    with _league(tmp_path, "") as league, contextlib.closing(DockerSandbox(log=print)) as box:
        _submit(league, "greedy", bot)
        assert VersionStatus.REJECTED == _validate(league, box, workdir)
        info = _version(league, "greedy")
        detail = info.steps[0].detail
        assert detail.startswith("requirements.txt: 'six==1.17.0' has no --hash="), detail
        assert str(league.home) not in detail and "/cache/" not in detail
