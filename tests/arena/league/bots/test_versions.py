"""Submitting versions, hostile uploads through the whole intake, versions, activation, claims.

Every test runs on SQLite and on PostgreSQL (``conftest.py``), in a real league home: its
artifact store is a directory, and each submission is one ``unit_of_work``, as the API runs it.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import gzip
import io
import re
import shutil
import tarfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO, cast

import pytest
from sqlalchemy import Engine, func, select, update

from arena.league import (
    DEFAULT_MU,
    DEFAULT_SIGMA,
    ArtifactError,
    Bot,
    BotVersion,
    Conflict,
    Forbidden,
    League,
    LeagueError,
    NotFound,
    Role,
    SubmissionLimitExceeded,
    UploadLimits,
    UploadRejected,
    VersionStats,
    VersionStatus,
    create_user,
    disable_bot,
    disable_user,
    inherited_rating,
    init_league,
    pack_bot,
    submissions_today,
    unit_of_work,
)
from arena.league._db import read_only
from arena.league.bots._versions import (
    BOT_NAME_MAX,
    activate_version,
    claim_validation,
    get_version,
    list_versions,
    seat_manifest,
    seat_name,
    source_dir,
    submit_version,
)
from flipflop import read_manifest

REPO = Path(__file__).resolve().parents[4]
NOW = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.UTC)
SMALL = UploadLimits(
    max_compressed_bytes=64 * 1024,
    max_unpacked_bytes=256 * 1024,
    max_files=20,
    max_path_length=60,
    max_depth=4,
)
MANIFEST = b'name = "mybot"\ncommand = ["python3", "bot.py"]\n'


@pytest.fixture
def league(kind: str, empty_engine: Engine, tmp_path: Path) -> Iterator[League]:
    """A league home with the users alice and bob, on this test's own database."""
    url = "" if kind == "sqlite" else empty_engine.url.render_as_string(hide_password=False)
    home, _ = init_league(tmp_path / "league", database=url, now=NOW)
    with unit_of_work(home.sessions) as session:
        create_user(session, "alice", now=NOW)
        create_user(session, "bob", now=NOW)
    try:
        yield home
    finally:
        home.close()


def _bot_dir(tmp_path: Path, tag: str = "") -> Path:
    """A copy of the bundled greedy bot; ``tag`` changes a file, so the archive differs."""
    target = tmp_path / f"greedy{tag}"
    shutil.copytree(REPO / "bots" / "greedy", target, ignore=shutil.ignore_patterns("__pycache__"))
    if tag:
        (target / "NOTES.txt").write_text(f"build {tag}\n", encoding="utf-8")
    return target


def _submit(league: League, user: str, bot: str, archive: bytes, **kwargs: bool) -> int:
    """Submit (in units of work of its own); the version's number."""
    return submit_version(league, user, bot, archive, now=NOW, **kwargs).version.number


def _set_status(
    league: League, bot: str, number: int, status: VersionStatus, **values: object
) -> None:
    """Put a version in ``status`` (as validation would have), with any other ``values``."""
    with unit_of_work(league.sessions) as session:
        bot_id = session.scalar(select(Bot.id).where(Bot.name == bot))
        session.execute(
            update(BotVersion)
            .where(BotVersion.bot_id == bot_id, BotVersion.number == number)
            .values(status=status, **values)
        )


def _stored(league: League) -> list[Path]:
    """Every artifact in the league's store."""
    return [p for p in (league.artifacts.root / "sha256").rglob("*") if p.is_file()]


# ---------------------------------------------------------------------- a good submission


def test_a_first_submission_makes_the_bot_its_version_and_stats(
    league: League, tmp_path: Path
) -> None:
    """Version 1: uploaded, a newcomer's rating, no parent, stored, zeroed stats, one slot used."""
    archive = pack_bot(_bot_dir(tmp_path))
    submitted = submit_version(league, "alice", "greedy", io.BytesIO(archive), now=NOW)
    v = submitted.version
    assert (True, 9) == (submitted.new, submitted.left_today)
    assert ("greedy", "alice", 1, VersionStatus.UPLOADED, None) == (
        v.bot,
        v.owner,
        v.number,
        v.status,
        v.parent,
    )
    assert (DEFAULT_MU, DEFAULT_SIGMA, True, "", (), NOW) == (
        v.rating_mu,
        v.rating_sigma,
        v.activate,
        v.reason,
        v.steps,
        v.created,
    )
    assert archive == league.artifacts.get(v.source_sha256)
    with unit_of_work(league.sessions) as session:
        stats = session.get(VersionStats, v.id)
        assert stats is not None
        assert (0, 0, 0.0, None) == (
            stats.matches,
            stats.faults,
            stats.place_sum,
            stats.last_played,
        )
        assert 1 == submissions_today(session, "alice", now=NOW)


def test_the_same_archive_again_is_the_same_version_and_takes_no_slot(
    league: League, tmp_path: Path
) -> None:
    """An idempotent re-upload: the existing version, new=False, nothing counted or made."""
    archive = pack_bot(_bot_dir(tmp_path))
    first = submit_version(league, "alice", "greedy", archive, now=NOW)
    again = submit_version(league, "alice", "greedy", archive, now=NOW)
    assert (False, None) == (again.new, again.left_today)
    assert first.version == again.version
    with unit_of_work(league.sessions) as session:
        assert 1 == submissions_today(session, "alice", now=NOW)
        assert 1 == session.scalar(select(func.count()).select_from(BotVersion))


def test_the_same_archive_under_another_bot_is_a_new_bot(league: League, tmp_path: Path) -> None:
    """Idempotence is per bot: the same files under another name make that bot's version 1."""
    archive = pack_bot(_bot_dir(tmp_path))
    _submit(league, "alice", "greedy", archive)
    assert 1 == _submit(league, "alice", "greedy2", archive)


def test_a_re_upload_at_the_daily_limit_is_still_answered(league: League, tmp_path: Path) -> None:
    """At the limit a new archive is refused (429) but a re-upload of a known one is not."""
    limited = dataclasses.replace(
        league, config=dataclasses.replace(league.config, submissions_per_day=2)
    )
    archives = [pack_bot(_bot_dir(tmp_path, str(i))) for i in range(3)]
    _submit(limited, "alice", "greedy", archives[0])
    _submit(limited, "alice", "greedy", archives[1])
    with pytest.raises(SubmissionLimitExceeded) as refused:
        _submit(limited, "alice", "greedy", archives[2])
    assert 429 == refused.value.status_code
    assert "alice has made 2 submissions today" in str(refused.value)
    assert 1 == _submit(limited, "alice", "greedy", archives[0])


class _HeldUpload(io.RawIOBase):
    """An upload whose second half comes only once ``go`` is set (a slow client).

    ``waiting`` is set while it holds the rest back, so a test can act during the upload.
    """

    def __init__(self, data: bytes) -> None:
        self._data, self._at = data, 0
        self.waiting, self.go = threading.Event(), threading.Event()

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        if self._at >= len(self._data) // 2 and not self.go.is_set():
            self.waiting.set()
            self.go.wait(60)
        chunk = self._data[self._at : self._at + min(len(buffer), max(1, len(self._data) // 2))]
        buffer[: len(chunk)] = chunk
        self._at += len(chunk)
        return len(chunk)


def test_a_submission_holds_no_transaction_while_its_archive_is_read(
    league: League, tmp_path: Path
) -> None:
    """Issue 24, finding 2: while an upload is read and unpacked, others read and write at once.

    The archive is held back half-way; meanwhile another writer (a new user) and a reader
    (the versions) must get through. Before the fix the submission's transaction, begun
    ``IMMEDIATE`` on SQLite, held the league's write lock for the whole upload: the writer
    waited out the busy timeout and failed with "database is locked".
    """
    upload = _HeldUpload(pack_bot(_bot_dir(tmp_path)))
    done: list[object] = []
    submitting = threading.Thread(
        target=lambda: done.append(
            submit_version(league, "alice", "greedy", cast(BinaryIO, upload), now=NOW)
        )
    )
    submitting.start()
    try:
        assert upload.waiting.wait(60), "the submission never started reading its archive"
        with unit_of_work(league.sessions) as session:
            create_user(session, "carol", now=NOW)
        with read_only(league.sessions) as session:
            assert NotFound is type(_refusal(lambda: list_versions(session, "greedy")))
    finally:
        upload.go.set()
        submitting.join(60)
    assert 1 == len(done)
    with read_only(league.sessions) as session:
        assert [1] == [v.number for v in list_versions(session, "greedy")]


def _refusal(call: Callable[[], object]) -> BaseException | None:
    try:
        call()
    except Exception as e:
        return e
    return None


# ---------------------------------------------------------------------- who may submit


def test_another_users_bot_is_refused_even_to_an_admin(league: League, tmp_path: Path) -> None:
    """Only the owner submits to a bot: bob and the admin get 403, and use no slot."""
    archive = pack_bot(_bot_dir(tmp_path))
    _submit(league, "alice", "greedy", archive)
    other = pack_bot(_bot_dir(tmp_path, "x"))
    for user in ("bob", "admin"):
        with pytest.raises(Forbidden) as refused:
            _submit(league, user, "greedy", other)
        assert ("the bot 'greedy' belongs to another user: only its owner submits to it") == str(
            refused.value
        )
        assert 403 == refused.value.status_code
    with unit_of_work(league.sessions) as session:
        assert 0 == submissions_today(session, "bob", now=NOW)
        assert [1] == [v.number for v in list_versions(session, "greedy")]


def test_a_disabled_user_is_refused(league: League, tmp_path: Path) -> None:
    """A disabled account submits nothing."""
    with unit_of_work(league.sessions) as session:
        disable_user(session, "alice")
    with pytest.raises(Forbidden, match=r"^the account 'alice' is disabled$"):
        _submit(league, "alice", "greedy", pack_bot(_bot_dir(tmp_path)))


def test_a_disabled_bot_is_refused(league: League, tmp_path: Path) -> None:
    """A disabled bot takes no new version, not even from its owner."""
    _submit(league, "alice", "greedy", pack_bot(_bot_dir(tmp_path)))
    with unit_of_work(league.sessions) as session:
        disable_bot(session, "greedy")
    with pytest.raises(Forbidden, match=r"^the bot 'greedy' is disabled: it takes no submissions$"):
        _submit(league, "alice", "greedy", pack_bot(_bot_dir(tmp_path, "2")))


def test_an_unknown_user_is_not_found(league: League, tmp_path: Path) -> None:
    """A user the league does not know is 404."""
    with pytest.raises(NotFound, match="no user named 'carol'"):
        _submit(league, "carol", "greedy", pack_bot(_bot_dir(tmp_path)))


@pytest.mark.parametrize("name", ["", "-x", "a/b", "a b", "x" * (BOT_NAME_MAX + 1), "é"])
def test_a_bad_bot_name_is_refused(league: League, tmp_path: Path, name: str) -> None:
    """A new bot's name is 1-32 letters, digits, - or _, so that NAME-vN is a manifest name."""
    with pytest.raises(LeagueError, match=r"^a bot name is 1-32 letters, digits"):
        _submit(league, "alice", name, pack_bot(_bot_dir(tmp_path)))


# ---------------------------------------------------------------------- hostile uploads

Entry = Callable[[tarfile.TarFile], None]


def _file(name: str, data: bytes = b"x") -> Entry:
    def add(tar: tarfile.TarFile) -> None:
        info = tarfile.TarInfo(name)
        info.size, info.mode = len(data), 0o644
        tar.addfile(info, io.BytesIO(data))

    return add


def _link(name: str, kind: bytes, target: str) -> Entry:
    def add(tar: tarfile.TarFile) -> None:
        info = tarfile.TarInfo(name)
        info.type, info.linkname = kind, target
        tar.addfile(info)

    return add


def _tar_gz(*entries: Entry, manifest: bytes | None = MANIFEST) -> bytes:
    """A tar.gz built entry by entry, ``bot.toml`` first unless ``manifest`` is None."""
    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode="wb") as gz, tarfile.open(fileobj=gz, mode="w") as tar:
        if manifest is not None:
            _file("bot.toml", manifest)(tar)
        for add in entries:
            add(tar)
    return buffer.getvalue()


def _bomb() -> bytes:
    """A compression bomb in a header: a 4 MB PAX comment (``tarfile`` reads those whole)."""
    buffer = io.BytesIO()
    with (
        gzip.GzipFile(fileobj=buffer, mode="wb") as gz,
        tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar,
    ):
        info = tarfile.TarInfo("bot.toml")
        info.pax_headers = {"comment": "x" * (4 * 1024 * 1024)}
        info.size = len(MANIFEST)
        tar.addfile(info, io.BytesIO(MANIFEST))
    return buffer.getvalue()


HOSTILE: list[tuple[str, Callable[[], bytes], str]] = [
    (
        "tar-bomb",
        lambda: _tar_gz(_file("big.bin", b"\0" * (2 * 1024 * 1024))),
        f"the upload unpacks to more than {SMALL.max_unpacked_bytes} bytes, the most this league"
        " accepts",
    ),
    (
        "compression-bomb",
        _bomb,
        f"the upload decompresses to more than {SMALL.decompressed_cap()} bytes: refused as a"
        " compression bomb",
    ),
    (
        "path-traversal",
        lambda: _tar_gz(_file("../escape.py")),
        "'../escape.py' is not a plain relative path (an empty, '.' or '..' part)",
    ),
    (
        "absolute-path",
        lambda: _tar_gz(_file("/etc/cron.d/x")),
        "'/etc/cron.d/x' is an absolute path",
    ),
    (
        "symlink",
        lambda: _tar_gz(_link("bot.py", tarfile.SYMTYPE, "/etc/passwd")),
        "'bot.py' is a symbolic link: uploads may not hold links",
    ),
    (
        "hard-link",
        lambda: _tar_gz(_link("bot.py", tarfile.LNKTYPE, "bot.toml")),
        "'bot.py' is a hard link: uploads may not hold links",
    ),
    (
        "oversized",
        lambda: b"\x1f\x8b" + bytes(70 * 1024),
        f"the upload is larger than {SMALL.max_compressed_bytes} bytes, the most this league"
        " accepts",
    ),
    (
        "broken-bot-toml",
        lambda: _tar_gz(manifest=b'name = "mybot"\ncommand = [\n'),
        "bot.toml: not valid TOML",
    ),
    (
        "bad-name-in-bot-toml",
        lambda: _tar_gz(manifest=b'name = "../x"\ncommand = ["python3", "bot.py"]\n'),
        "bot.toml: 'name' must be 1-40 letters, digits, '-' or '_' (got '../x')",
    ),
    (
        "no-bot-toml",
        lambda: _tar_gz(_file("bot.py"), manifest=None),
        "the upload is not a bot directory: it has no bot.toml",
    ),
    (
        "not-a-tar-gz",
        lambda: b"PK\x03\x04 this is a zip file",
        "the upload is not a valid tar.gz archive",
    ),
]


@pytest.mark.parametrize(
    ("archive", "sentence"),
    [pytest.param(make, sentence, id=name) for name, make, sentence in HOSTILE],
)
def test_a_hostile_upload_is_refused_and_leaves_nothing(
    league: League, tmp_path: Path, archive: Callable[[], bytes], sentence: str
) -> None:
    """Refused with its sentence (400); rolled back: the day's one slot is back, nothing stored."""
    config = dataclasses.replace(league.config, uploads=SMALL, submissions_per_day=1)
    small = dataclasses.replace(league, config=config)
    before = _stored(league)
    with pytest.raises(UploadRejected) as refused:
        submit_version(small, "alice", "mybot", archive(), now=NOW)
    assert sentence in str(refused.value)
    assert 400 == refused.value.status_code
    assert "\n" not in str(refused.value)
    with unit_of_work(league.sessions) as session:
        assert 0 == submissions_today(session, "alice", now=NOW)
        assert 0 == session.scalar(select(func.count()).select_from(Bot))
        assert 0 == session.scalar(select(func.count()).select_from(BotVersion))
    assert before == _stored(league)
    # the one slot of the day is still there
    good = submit_version(small, "alice", "mybot", pack_bot(_bot_dir(tmp_path)))
    assert (True, 0, 1) == (good.new, good.left_today, good.version.number)


def test_a_hostile_upload_after_a_good_one_leaves_the_bot_as_it_was(
    league: League, tmp_path: Path
) -> None:
    """The slot a refused upload took is given back; the bot keeps its one version."""
    _submit(league, "alice", "greedy", pack_bot(_bot_dir(tmp_path)))
    with pytest.raises(UploadRejected, match="symbolic link"):
        _submit(league, "alice", "greedy", _tar_gz(_link("x", tarfile.SYMTYPE, "/")))
    with unit_of_work(league.sessions) as session:
        assert 1 == submissions_today(session, "alice", now=NOW)
        assert [1] == [v.number for v in list_versions(session, "greedy")]


# ---------------------------------------------------------------------- versions


def test_versions_are_numbered_and_inherit_from_the_active_one(
    league: League, tmp_path: Path
) -> None:
    """The parent is the active version (else the newest), the rating inherited from it."""
    archives = [pack_bot(_bot_dir(tmp_path, str(i))) for i in range(4)]
    _submit(league, "alice", "greedy", archives[0])
    _set_status(league, "greedy", 1, VersionStatus.ACTIVE, rating_mu=31.0, rating_sigma=2.0)
    assert 2 == _submit(league, "alice", "greedy", archives[1])
    assert 3 == _submit(league, "alice", "greedy", archives[2])  # v2 is not active: parent v1
    with unit_of_work(league.sessions) as session:
        v2, v3 = get_version(session, "greedy", 2), get_version(session, "greedy", 3)
    assert (1, 1) == (v2.parent, v3.parent)
    assert inherited_rating(31.0, 2.0) == (v3.rating_mu, v3.rating_sigma)
    _set_status(league, "greedy", 1, VersionStatus.REJECTED)  # as if nothing is active now
    _submit(league, "alice", "greedy", archives[3])
    with unit_of_work(league.sessions) as session:
        v4 = get_version(session, "greedy", 4)
    assert 3 == v4.parent  # the newest
    assert inherited_rating(v3.rating_mu, v3.rating_sigma) == (v4.rating_mu, v4.rating_sigma)


def test_list_and_get_versions(league: League, tmp_path: Path) -> None:
    """Versions are listed newest first; an unknown bot or number is 404."""
    for i in range(3):
        _submit(league, "alice", "greedy", pack_bot(_bot_dir(tmp_path, str(i))), activate=i != 1)
    with unit_of_work(league.sessions) as session:
        listed = list_versions(session, "greedy")
        assert [3, 2, 1] == [v.number for v in listed]
        assert [True, False, True] == [v.activate for v in listed]
        assert listed[1] == get_version(session, "greedy", 2)
        with pytest.raises(NotFound, match="the bot 'greedy' has no version 4"):
            get_version(session, "greedy", 4)
        with pytest.raises(NotFound, match="no bot named 'nobot'"):
            list_versions(session, "nobot")


def test_a_new_active_version_retires_the_previous_and_an_older_one_comes_back(
    league: League, tmp_path: Path
) -> None:
    """activate_version: roll forward to v2, roll back to v1; one active version at a time."""
    for i in range(2):
        _submit(league, "alice", "greedy", pack_bot(_bot_dir(tmp_path, str(i))))
    _set_status(league, "greedy", 1, VersionStatus.ACTIVE)
    _set_status(league, "greedy", 2, VersionStatus.RETIRED)

    def statuses() -> list[VersionStatus]:
        with unit_of_work(league.sessions) as session:
            return [v.status for v in reversed(list_versions(session, "greedy"))]

    with unit_of_work(league.sessions) as session:
        assert VersionStatus.ACTIVE == activate_version(session, "greedy", 2).status
    assert [VersionStatus.RETIRED, VersionStatus.ACTIVE] == statuses()
    with unit_of_work(league.sessions) as session:
        activate_version(session, "greedy", 1)
    assert [VersionStatus.ACTIVE, VersionStatus.RETIRED] == statuses()
    with unit_of_work(league.sessions) as session:
        activate_version(session, "greedy", 1)  # already active: nothing changes
    assert [VersionStatus.ACTIVE, VersionStatus.RETIRED] == statuses()


def test_a_rejected_or_unvalidated_version_cannot_be_activated(
    league: League, tmp_path: Path
) -> None:
    """409 with a sentence saying why; the active version stays."""
    for i in range(3):
        _submit(league, "alice", "greedy", pack_bot(_bot_dir(tmp_path, str(i))))
    _set_status(league, "greedy", 1, VersionStatus.ACTIVE)
    _set_status(
        league, "greedy", 2, VersionStatus.REJECTED, reason="crashed in its validation match: x"
    )
    with pytest.raises(Conflict) as rejected, unit_of_work(league.sessions) as session:
        activate_version(session, "greedy", 2)
    assert (
        "version 2 of 'greedy' was rejected (crashed in its validation match: x): only a"
        " version that passed validation can be activated"
    ) == str(rejected.value)
    assert 409 == rejected.value.status_code
    with pytest.raises(Conflict) as pending, unit_of_work(league.sessions) as session:
        activate_version(session, "greedy", 3)
    assert (
        "version 3 of 'greedy' has not passed validation yet (it is uploaded): only a version"
        " that passed it can be activated"
    ) == str(pending.value)
    with unit_of_work(league.sessions) as session:
        assert VersionStatus.ACTIVE == get_version(session, "greedy", 1).status


# ---------------------------------------------------------------------- claims


def test_claims_take_the_oldest_waiting_version_once(league: League, tmp_path: Path) -> None:
    """Oldest first, each once; validated or rejected versions are never claimed."""
    for i in range(4):
        _submit(league, "alice", "greedy", pack_bot(_bot_dir(tmp_path, str(i))))
    _set_status(league, "greedy", 1, VersionStatus.ACTIVE)
    _set_status(league, "greedy", 2, VersionStatus.REJECTED)
    lease = dt.timedelta(minutes=5)
    with unit_of_work(league.sessions) as session:
        ids = {v.number: v.id for v in list_versions(session, "greedy")}
        assert ids[3] == claim_validation(session, "w1", lease, now=NOW)
        assert ids[4] == claim_validation(session, "w2", lease, now=NOW)
        assert claim_validation(session, "w3", lease, now=NOW) is None
        version = session.get(BotVersion, ids[3])
        assert version is not None
        assert ("w1", NOW + lease) == (version.lease_owner, version.lease_expires)


def test_a_dead_validators_version_is_claimed_again_once_its_lease_ran_out(
    league: League, tmp_path: Path
) -> None:
    """A version left mid-validation is not claimed while the lease holds, then is."""
    _submit(league, "alice", "greedy", pack_bot(_bot_dir(tmp_path)))
    lease = dt.timedelta(minutes=1)
    with unit_of_work(league.sessions) as session:
        version_id = claim_validation(session, "dead", lease, now=NOW)
    assert version_id is not None
    _set_status(league, "greedy", 1, VersionStatus.CHECKING)  # it died during the check
    with unit_of_work(league.sessions) as session:
        assert claim_validation(session, "w2", lease, now=NOW + dt.timedelta(seconds=59)) is None
        assert version_id == claim_validation(session, "w2", lease, now=NOW + lease)
        version = session.get(BotVersion, version_id)
        assert version is not None
        assert "w2" == version.lease_owner


def test_versions_of_disabled_bots_and_users_are_not_claimed(
    league: League, tmp_path: Path
) -> None:
    """A disabled bot's or user's uploads wait; enabled again, they are validated."""
    _submit(league, "alice", "greedy", pack_bot(_bot_dir(tmp_path, "a")))
    _submit(league, "bob", "counter", pack_bot(_bot_dir(tmp_path, "b")))
    lease = dt.timedelta(minutes=5)
    with unit_of_work(league.sessions) as session:
        disable_bot(session, "greedy")
        disable_user(session, "bob")
        assert claim_validation(session, "w1", lease, now=NOW) is None
        disable_bot(session, "greedy", disabled=False)
        assert get_version(session, "greedy", 1).id == claim_validation(
            session, "w1", lease, now=NOW
        )


def test_concurrent_claims_never_share_a_version(league: League, tmp_path: Path) -> None:
    """Four validators on their own connections claim 8 versions: each exactly once."""
    for i in range(8):
        _submit(league, "alice", "greedy", pack_bot(_bot_dir(tmp_path, str(i))))
    claimed: list[int] = []
    lock = threading.Lock()

    def validator(name: str) -> None:
        while True:
            with unit_of_work(league.sessions) as session:
                got = claim_validation(session, name, dt.timedelta(minutes=5), now=NOW)
            if got is None:
                return
            with lock:
                claimed.append(got)

    threads = [threading.Thread(target=validator, args=(f"w{i}",)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert 8 == len(claimed) == len(set(claimed))


# ---------------------------------------------------------------------- sources and seats


def test_source_dir_unpacks_once_and_racing_readers_get_the_same_files(
    league: League, tmp_path: Path
) -> None:
    """Eight threads ask at once: one directory, the bot's files, no temporary left behind."""
    bot = _bot_dir(tmp_path)
    archive = pack_bot(bot)
    sha = league.artifacts.put(archive)
    found: list[Path] = []
    barrier = threading.Barrier(8)

    def read() -> None:
        barrier.wait()
        found.append(source_dir(league, sha))

    threads = [threading.Thread(target=read) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [league.home / "cache" / "sources" / sha] * 8 == found
    for name in ("bot.toml", "bot.py", "README.md"):
        assert (bot / name).read_bytes() == (found[0] / name).read_bytes()
    assert [sha] == [p.name for p in found[0].parent.iterdir()]


def test_source_dir_refuses_a_missing_archive_and_a_bad_digest(league: League) -> None:
    """Only a stored archive is unpacked; a digest that is not one never becomes a path."""
    with pytest.raises(ArtifactError, match="is not in the store"):
        source_dir(league, "0" * 64)
    with pytest.raises(ValueError, match="not a SHA-256 hex digest"):
        source_dir(league, "../../etc")


def test_a_seat_manifest_is_the_bot_toml_under_the_versions_name(
    league: League, tmp_path: Path
) -> None:
    """Greedy v3 plays as greedy-v3, from its unpacked source, with its own command."""
    sha = league.artifacts.put(pack_bot(_bot_dir(tmp_path)))
    manifest = seat_manifest(league, "greedy", 3, sha)
    assert ("greedy-v3", ("python3", "bot.py"), "bot:GreedyBot") == (
        manifest.name,
        manifest.command,
        manifest.entry,
    )
    assert source_dir(league, sha) == manifest.path


@pytest.mark.parametrize(
    ("bot", "number", "expected"),
    [
        ("x" * BOT_NAME_MAX, 999_999, "x" * BOT_NAME_MAX + "-v999999"),
        ("y" * 40, 12, "y" * 36 + "-v12"),
    ],
)
def test_seat_names_are_valid_manifest_names(
    tmp_path: Path, bot: str, number: int, expected: str
) -> None:
    """A longest submitted name with a 6-digit number fits; a longer one (made elsewhere) is cut."""
    name = seat_name(bot, number)
    assert expected == name
    (tmp_path / "bot.toml").write_text(f'name = "{name}"\ncommand = ["x"]\n', encoding="utf-8")
    assert name == read_manifest(tmp_path).name
    assert re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_-]{0,39}", name)


def test_an_admin_account_is_a_user_like_any_other_for_its_own_bots(
    league: League, tmp_path: Path
) -> None:
    """The admin may submit its own bot (owning it) like anyone."""
    with unit_of_work(league.sessions) as session:
        create_user(session, "root2", role=Role.ADMIN, now=NOW)
    assert 1 == _submit(league, "root2", "house", pack_bot(_bot_dir(tmp_path)))
    with unit_of_work(league.sessions) as session:
        assert "root2" == get_version(session, "house", 1).owner
