"""What the league shows of its bots, versions and matches: one shape for the API and the pages.

The JSON-ready dictionaries here are what ``GET /api/v1/…`` returns and what the web pages
render (``arena.web``), so a page never shows more than the API would to the same caller:

- :func:`may_see` decides what only a bot's owner and the league's admins see (validation
  steps and logs, sources, the debug notes in replays);
- :func:`match_json` never holds a match's seed, nor where its seats' logs are;
- :func:`replayable_match` serves a replay only once its whole duplicate group is over (the
  group's matches share their deals);
- :func:`filter_replay` removes the debug notes of the seats the caller may not see.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from sqlalchemy import and_, select
from sqlalchemy.orm import Session

from arena._errors import Conflict, LeagueError, NotFound
from arena.league.accounts._accounts import Account, Role, User
from arena.league.bots._bots import Bot, BotVersion, VersionStatus
from arena.league.bots._versions import StepInfo, VersionInfo
from arena.league.matches._matches import Match, MatchSeat, MatchStatus

__all__ = [
    "JSON",
    "bot_list",
    "bot_row",
    "filter_replay",
    "group_over",
    "iso",
    "live_matches",
    "match_json",
    "match_list",
    "match_seats",
    "match_view",
    "may_see",
    "open_groups",
    "replayable_match",
    "requesters",
    "step_json",
    "version_json",
]

JSON = dict[str, Any]

# Keys of a stored result that are never shown: the deal's seed (secret until the whole
# group is over, and not needed after) and the hashes of the seats' private logs.
_HIDDEN_RESULT_KEYS = frozenset({"seed", "logs"})


def may_see(account: Account | None, owner: str) -> bool:
    """Whether ``account`` sees what only the owner ``owner`` (and admins) may see."""
    return account is not None and (account.role is Role.ADMIN or account.name == owner)


def iso(value: Any) -> str | None:
    return None if value is None else value.isoformat()


def step_json(step: StepInfo) -> JSON:
    return {
        "step": step.step.value,
        "outcome": None if step.outcome is None else step.outcome.value,
        "detail": step.detail,
        "log": step.log_sha256 is not None,
        "started": iso(step.started),
        "finished": iso(step.finished),
    }


def version_json(info: VersionInfo, *, private: bool) -> JSON:
    """A version as the API shows it; ``private`` adds what only its owner and admins see."""
    out: JSON = {
        "bot": info.bot,
        "owner": info.owner,
        "number": info.number,
        "status": info.status.value,
        "created": iso(info.created),
        "rating": {"mu": info.rating_mu, "sigma": info.rating_sigma},
        "parent": info.parent,
        "activate": info.activate,
    }
    if private:
        out["source_sha256"] = info.source_sha256
        out["reason"] = info.reason
        out["steps"] = [step_json(s) for s in info.steps]
    return out


def bot_row(session: Session, name: str) -> JSON:
    """The bot ``name``: owner, state, its active version and that version's rating."""
    rows = _bots_query(session, Bot.name == name)
    if not rows:
        raise NotFound(f"no bot named {name!r}")
    return rows[0]


def bot_list(session: Session) -> list[JSON]:
    return _bots_query(session, None)


def _bots_query(session: Session, where: Any) -> list[JSON]:
    active = and_(BotVersion.bot_id == Bot.id, BotVersion.status == VersionStatus.ACTIVE)
    query = (
        select(Bot, User.name, BotVersion)
        .join(User, Bot.owner_id == User.id)
        .outerjoin(BotVersion, active)
        .order_by(Bot.name)
    )
    if where is not None:
        query = query.where(where)
    out = []
    for bot, owner, version in session.execute(query):
        out.append(
            {
                "name": bot.name,
                "owner": owner,
                "disabled": bot.disabled,
                "created": iso(bot.created),
                "active": None
                if version is None
                else {
                    "number": version.number,
                    "rating": {"mu": version.rating_mu, "sigma": version.rating_sigma},
                },
            }
        )
    return out


def match_seats(session: Session, match_ids: Sequence[int]) -> dict[int, list[JSON]]:
    """The seats of each match, seat 0 first: bot, owner, version and, once counted, result."""
    out: dict[int, list[JSON]] = {m: [] for m in match_ids}
    if not match_ids:
        return out
    query = (
        select(MatchSeat, BotVersion.number, Bot.name, User.name)
        .join(BotVersion, MatchSeat.version_id == BotVersion.id)
        .join(Bot, BotVersion.bot_id == Bot.id)
        .join(User, Bot.owner_id == User.id)
        .where(MatchSeat.match_id.in_(match_ids))
        .order_by(MatchSeat.match_id, MatchSeat.seat)
    )
    for seat, number, bot, owner in session.execute(query):
        rated = seat.mu_after is not None and seat.sigma_after is not None
        out[seat.match_id].append(
            {
                "seat": seat.seat,
                "bot": bot,
                "owner": owner,
                "version": number,
                "place": seat.place,
                "chips": seat.chips,
                "luck": seat.luck,
                "rating_after": {"mu": seat.mu_after, "sigma": seat.sigma_after} if rated else None,
            }
        )
    return out


def match_json(
    match: Match, seats: list[JSON], *, group_open: bool = False, requester: str | None = None
) -> JSON:
    """A match as the API shows it: never its seed, nor where its seats' logs are.

    ``kind`` is ``rated`` or ``challenge`` (asked for by ``requested_by``, a user's name;
    never rated: its seats have no ``rating_after``).

    With ``group_open`` (another match of its duplicate group is not finished,
    :func:`open_groups`) its luck estimates are withheld too: they are worth of the deals,
    which that match is still being dealt (issue 24, finding 12).
    """
    result = None
    if match.result is not None:
        result = {k: v for k, v in match.result.items() if k not in _HIDDEN_RESULT_KEYS}
        if group_open and result.get("luck") is not None:
            result["luck"] = None
    if group_open:
        seats = [{**seat, "luck": None} for seat in seats]
    return {
        "id": match.id,
        "kind": match.kind.value,
        "requested_by": requester,
        "status": match.status.value,
        "created": iso(match.created),
        "finished": iso(match.finished_at),
        "group": match.group_id,
        "rotation": match.rotation,
        "attempts": match.attempts,
        "seats": seats,
        "result": result,
        "replay": match.replay_sha256 is not None,
    }


def match_view(session: Session, match_id: int) -> JSON:
    """The match ``match_id`` as the API shows it (:func:`match_json`).

    Raises:
        NotFound: no such match.
    """
    match = session.get(Match, match_id)
    if match is None:
        raise NotFound(f"no match {match_id}")
    seats = match_seats(session, [match_id])[match_id]
    return match_json(
        match,
        seats,
        group_open=bool(open_groups(session, [match])),
        requester=requesters(session, [match]).get(match.id),
    )


def live_matches(session: Session, *, recent: int, queued_up_to: int = 1000) -> JSON:
    """What the live page shows of the league's matches: public information only.

    Returns:
        ``running``: each running match (id, attempts, seats), oldest first; ``queued``: how
        many are queued, counted up to ``queued_up_to``; ``recent``: the ``recent`` latest
        finished ones (id, finish time, whether void, seats with their places).
    """
    running = list(
        session.scalars(select(Match).where(Match.status == MatchStatus.RUNNING).order_by(Match.id))
    )
    queued = len(
        session.scalars(
            select(Match.id).where(Match.status == MatchStatus.QUEUED).limit(queued_up_to)
        ).all()
    )
    latest = list(
        session.scalars(
            select(Match)
            .where(Match.status == MatchStatus.FINISHED)
            .order_by(Match.finished_at.desc(), Match.id.desc())
            .limit(recent)
        )
    )
    seats = match_seats(session, [m.id for m in running + latest])
    return {
        "running": [
            {
                "id": m.id,
                "kind": m.kind.value,
                "seats": [_public_seat(s) for s in seats[m.id]],
                "attempts": m.attempts,
            }
            for m in running
        ],
        "queued": queued,
        "recent": [
            {
                "id": m.id,
                "finished": iso(m.finished_at),
                "void": bool((m.result or {}).get("void")),
                "seats": [_public_seat(s) | {"place": s["place"]} for s in seats[m.id]],
            }
            for m in latest
        ],
    }


def _public_seat(seat: JSON) -> JSON:
    return {key: seat[key] for key in ("seat", "bot", "owner", "version")}


def match_list(
    session: Session,
    *,
    bot: str | None,
    status: MatchStatus | None,
    limit: int,
    before: int | None,
) -> list[JSON]:
    query = select(Match).order_by(Match.id.desc()).limit(limit)
    if bot is not None:
        bot_id = session.scalar(select(Bot.id).where(Bot.name == bot))
        if bot_id is None:
            raise NotFound(f"no bot named {bot!r}")
        played = (
            select(MatchSeat.match_id)
            .join(BotVersion, MatchSeat.version_id == BotVersion.id)
            .where(BotVersion.bot_id == bot_id)
        )
        query = query.where(Match.id.in_(played))
    if status is not None:
        query = query.where(Match.status == status)
    if before is not None:
        query = query.where(Match.id < before)
    rows = list(session.scalars(query))
    seats = match_seats(session, [m.id for m in rows])
    still = open_groups(session, rows)
    asked = requesters(session, rows)
    return [
        match_json(m, seats[m.id], group_open=m.group_id in still, requester=asked.get(m.id))
        for m in rows
    ]


def requesters(session: Session, matches: Sequence[Match]) -> dict[int, str]:
    """Who asked for each challenge among ``matches``: match id to user name."""
    asked = {m.id: m.requested_by for m in matches if m.requested_by is not None}
    if not asked:
        return {}
    names = dict(
        session.execute(select(User.id, User.name).where(User.id.in_(set(asked.values())))).all()
    )
    return {m: names[u] for m, u in asked.items() if u in names}


def open_groups(session: Session, matches: Sequence[Match]) -> set[int]:
    """The duplicate groups of ``matches`` in which some match is not finished yet."""
    groups = {m.group_id for m in matches if m.group_id is not None}
    if not groups:
        return set()
    return set(
        session.scalars(
            select(Match.group_id)
            .where(Match.group_id.in_(groups), Match.status != MatchStatus.FINISHED)
            .distinct()
        )
    )


def group_over(session: Session, match: Match, what: str) -> None:
    """Refuse ``what`` of ``match`` (its replay, a seat's log) until its whole group is over.

    The matches of a duplicate group share their deals: what one finished rotation tells
    (its cards, a bot's log of them, its luck) would tell the cards of a rotation still
    being played.

    Raises:
        Conflict: it, or another match of its group, is not finished yet.
    """
    if match.status is not MatchStatus.FINISHED:
        raise Conflict(
            f"match {match.id} is {match.status.value}: its {what} comes when it is finished"
        )
    if match.group_id is not None:
        unfinished = session.scalar(
            select(Match.id)
            .where(Match.group_id == match.group_id, Match.status != MatchStatus.FINISHED)
            .limit(1)
        )
        if unfinished is not None:
            raise Conflict(
                f"match {match.id} shares its deals with match {unfinished}, not finished yet:"
                f" its {what} comes when every match of its duplicate group is over"
            )


def replayable_match(session: Session, match_id: int) -> Match:
    """The match ``match_id`` if its replay may be shown now.

    Raises:
        NotFound: no such match, or it finished without a replay.
        Conflict: it, or another match of its duplicate group, is not finished yet.
    """
    match = session.get(Match, match_id)
    if match is None:
        raise NotFound(f"no match {match_id}")
    group_over(session, match, "replay")
    if match.replay_sha256 is None:
        raise NotFound(f"match {match_id} has no replay")
    return match


def filter_replay(data: bytes, visible_seats: set[int]) -> bytes:
    """A replay with the debug notes of every seat not in ``visible_seats`` removed.

    A note is whatever a bot chose to say about its decision; its owner may want it kept
    from rivals. The header's seed, were one ever written, is removed too. A line that holds
    neither a ``"note"`` key nor the header is passed on as it is, unparsed: most of a replay,
    whose parsing cost a 300-hand replay's viewer 40 ms a request.
    """
    out = []
    for number, line in enumerate(data.splitlines(), 1):
        if not line.strip():
            continue
        if b'"note"' not in line and b'"header"' not in line:
            out.append(line.decode("utf-8"))
            continue
        try:
            record = json.loads(line)
        except ValueError as e:
            raise LeagueError(f"line {number} of the stored replay is not JSON ({e})") from e
        if not isinstance(record, dict):
            raise LeagueError(f"line {number} of the stored replay is not a JSON object")
        kind = record.get("type")
        if kind == "action" and "note" in record and record.get("seat") not in visible_seats:
            del record["note"]
        elif kind == "header":
            record.pop("seed", None)
        out.append(json.dumps(record, ensure_ascii=False, separators=(",", ":")))
    return ("\n".join(out) + "\n").encode("utf-8") if out else b""
