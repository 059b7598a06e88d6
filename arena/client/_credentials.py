"""Where ``arena login`` keeps the league URL and API token of the person at this machine.

``$XDG_CONFIG_HOME/flipflop-arena/credentials.toml`` (default ``~/.config/…``), mode 0600
in a directory of mode 0700: the token is as good as a password. The file is replaced
atomically, so a crash never leaves half of it.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import tomllib
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from arena._errors import LeagueConfigError, LeagueError

__all__ = ["Credentials", "credentials_path", "load_credentials", "save_credentials"]

_TOKEN = re.compile(r"^ffa_[A-Za-z0-9_-]{43}$")


@dataclass(frozen=True, slots=True)
class Credentials:
    """A league and the token to use with it.

    Attributes:
        url: the league server's base URL (``http://`` or ``https://``, no trailing slash).
        token: the user's API token (``ffa_…``).
    """

    url: str
    token: str

    @classmethod
    def checked(cls, url: str, token: str) -> Credentials:
        """Credentials from what a user typed, checked for form.

        Raises:
            LeagueError: a URL that is not http(s) with a host, or a token not of the
                form the league issues.
        """
        parts = urlsplit(url.strip())
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise LeagueError(f"the league URL must be http:// or https:// (got {url!r})")
        if parts.query or parts.fragment or parts.username or parts.password:
            raise LeagueError(f"the league URL must have no user, query or fragment (got {url!r})")
        token = token.strip()
        if not _TOKEN.match(token):
            raise LeagueError(
                "that is not a league API token (they look like ffa_ and 43 more characters)"
            )
        return cls(url.strip().rstrip("/"), token)


def credentials_path() -> Path:
    """The credentials file of the current user."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "flipflop-arena" / "credentials.toml"


def save_credentials(credentials: Credentials, path: Path | None = None) -> Path:
    """Store ``credentials`` (replacing any before) in ``path``; return the path."""
    path = path or credentials_path()
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    text = (
        "# Written by `arena login`: the league this user submits to. Keep it private.\n"
        "[league]\n"
        f"url = {json.dumps(credentials.url)}\n"
        f"token = {json.dumps(credentials.token)}\n"
    )
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".credentials-")
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def load_credentials(path: Path | None = None) -> Credentials:
    """The stored credentials.

    Raises:
        LeagueConfigError: there are none (not logged in), or the file is damaged.
    """
    path = path or credentials_path()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise LeagueConfigError(
            "not logged in to a league: run `arena login URL TOKEN` first"
        ) from None
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise LeagueConfigError(f"{path}: cannot read the stored credentials ({e})") from e
    league = data.get("league")
    if not isinstance(league, dict):
        raise LeagueConfigError(f"{path}: no [league] table")
    url, token = league.get("url"), league.get("token")
    if not isinstance(url, str) or not isinstance(token, str):
        raise LeagueConfigError(f"{path}: [league] needs url and token strings")
    return Credentials.checked(url, token)
