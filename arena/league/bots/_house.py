"""The league's house bots: the bundled bots, as versions a challenge can seat.

The house bots (:data:`HOUSE_BOTS`: ``greedy``, ``counter``, ``random``) are what a version
plays its validation match against. An owner may also name them as opponents of a challenge
(docs/league.md): a challenge is a league match, whose seats are versions, so the first time
one is named the league makes it a version of its own, in the account :data:`HOUSE_USER`:
its source the bundled bot packed as ``arena submit`` packs a bot, stored in the artifact
store, active at once (the arena's own code needs no validation).

That account is disabled: nobody signs in to it, and the scheduler seats only versions of
enabled owners, so the house bots never play rated matches nor stand on the leaderboard.
A league bot a user named ``greedy`` before the house bots were made is that user's bot,
and a challenge naming ``greedy`` seats it.
"""

from __future__ import annotations

import datetime as dt

from sqlalchemy import select
from sqlalchemy.orm import Session

from arena._errors import Conflict
from arena.client._pack import pack_bot
from arena.ladder._bundled import bundled_dir
from arena.league._db import utcnow
from arena.league._home import League
from arena.league.accounts._accounts import Role, User, create_user
from arena.league.bots._bots import Bot, BotVersion, VersionStatus
from arena.league.bots._versions import new_version

__all__ = ["HOUSE_BOTS", "HOUSE_USER", "house_version"]

HOUSE_BOTS: tuple[str, ...] = ("greedy", "counter", "random")
"""The bundled bots a version plays its validation match against (``bots/``), and that a
challenge may name."""
HOUSE_USER = "house"
"""The disabled account that owns the house bots' versions."""


def house_version(
    session: Session, league: League, name: str, *, now: dt.datetime | None = None
) -> int:
    """The active version of the house bot ``name``, made (with its account) if need be.

    Raises:
        Conflict: ``name`` is no house bot, or a user of the league is named
            :data:`HOUSE_USER` (the house bots cannot be theirs).
    """
    if name not in HOUSE_BOTS:
        raise Conflict(f"{name!r} is not a house bot ({', '.join(HOUSE_BOTS)})")
    now = now or utcnow()
    house = session.scalar(select(User).where(User.name == HOUSE_USER))
    if house is None:
        create_user(session, HOUSE_USER, role=Role.USER, now=now)
        house = session.scalar(select(User).where(User.name == HOUSE_USER))
        assert house is not None
        house.disabled = True
    elif not house.disabled:
        raise Conflict(
            f"the house bots belong to the account {HOUSE_USER!r}, and a user has that name"
        )
    bot = session.scalar(select(Bot).where(Bot.name == name))
    if bot is None:
        bot = Bot(owner_id=house.id, name=name, disabled=False, created=now)
        session.add(bot)
        session.flush()
    elif bot.owner_id != house.id:
        raise Conflict(f"{name!r} is a user's bot, not the house's")
    active = session.scalar(
        select(BotVersion.id).where(
            BotVersion.bot_id == bot.id, BotVersion.status == VersionStatus.ACTIVE
        )
    )
    if active is not None:
        return int(active)
    sha256 = league.artifacts.put(pack_bot(bundled_dir() / name))
    version = new_version(
        session, bot.id, sha256, status=VersionStatus.ACTIVE, activate=True, now=now
    )
    return version.id
