"""The Celery fleet's plumbing: the app, its two tasks, its queues, and its broker's checks.

Used on both sides: a publisher (the league's ``CeleryExecutor``, a ladder's
:class:`~arena.executors._fleet_pool.FleetPool`) sends tasks that name a job by id and
nothing more; ``arena worker`` runs a Celery worker whose :attr:`FleetApp.player` (the
league's ``arena.league._fleet.FleetPlayer``) plays them, talking to whoever published them
over HTTP (``_protocol``).

Delivery: JSON messages only; ``acks_late`` with ``reject_on_worker_lost`` (a message is
acknowledged only when its task returns, so a worker that dies leaves it to the broker,
which hands it out again after ``visibility_timeout``), one message prefetched per slot.
Whatever copy of a message comes, the publisher's claim lets one worker play the job.

Queues, one pair per sandbox kind: ``validation.docker`` and ``matches.docker``,
``validation.process`` and ``matches.process``. A worker consumes only the pair of the
sandbox it offers, so it never gets a job it cannot run, and takes from its validation queue
first (the broker's queues are read in the worker's order, ``queue_order_strategy =
"priority"``): a new version is validated ahead of rated matches. A ladder's matches have a
queue of their own per sandbox kind (``ladder.docker``, ``ladder.process``).
"""

from __future__ import annotations

import ipaddress
import logging
import ssl
from typing import Any, Protocol
from urllib.parse import urlsplit

from celery import Celery
from celery.worker.request import Request
from kombu.asynchronous import get_event_loop
from kombu.transport import virtual

from arena._errors import BrokerRefused, BrokerUnavailable
from arena._text import hide_password

__all__ = [
    "PLAY_MATCH",
    "VALIDATE",
    "VISIBILITY_TIMEOUT",
    "FleetApp",
    "Player",
    "ack_freeing_its_slot",
    "check_broker",
    "fleet_app",
    "match_queue",
    "reach_broker",
    "validation_queue",
    "wake_consumer",
    "worker_queues",
]

logger = logging.getLogger(__name__)

PLAY_MATCH = "arena.play_match"
"""The task that plays one league match: its only argument is the match's id."""
VALIDATE = "arena.validate"
"""The task that validates one submitted version: its only argument is the version's id."""
VISIBILITY_TIMEOUT = 6 * 3600
"""Seconds before Redis hands an unacknowledged message to another worker: longer than the
longest match, so that a match still being played is never delivered twice (a second copy
would find the match claimed, but would hold a slot while it asks)."""


class Player(Protocol):
    """What plays a worker's tasks (``arena.league._fleet.FleetPlayer``)."""

    def play(self, match_id: int, ticket: str = "") -> str:
        """Claim, play and report the match ``match_id``; what came of it."""
        ...

    def validate(self, version_id: int, ticket: str = "") -> str:
        """Claim and validate the version ``version_id``; its status afterwards."""
        ...


class FleetApp(Celery):  # type: ignore[misc]  # celery has no type information
    """The fleet's Celery app; in a worker, :attr:`player` plays the tasks."""

    player: Player | None = None


def ack_freeing_its_slot(message: Any, connection_errors: tuple[type[BaseException], ...]) -> bool:
    """Acknowledge a delivered ``message``; where the broker is gone, free its slot anyway.

    kombu's Redis transport counts a message against the prefetch limit until its ack has
    reached Redis: an ack that fails (Redis restarted while the match played) leaves it
    counted for ever, and a worker of one slot, whose only slot it holds, never takes another
    message (it waited 180 s and more, in ``test_a_broker_restart_mid_league_loses_nothing``).
    A restarted Redis has lost that message anyway, and the league publishes what was not
    played again: so the message is dropped from the count, as an ack would have.

    Returns:
        Whether the broker heard the ack.
    """
    try:
        message.ack()
    except connection_errors as e:
        qos = getattr(message.channel, "qos", None)
        if isinstance(qos, virtual.QoS):
            base: Any = virtual.QoS  # kombu has no type information here
            base.ack(qos, message.delivery_tag)  # the count only: Redis is not there
        logger.warning(
            "the broker did not hear the ack of a message (%s); its slot takes the next one",
            e,
            extra={"delivery_tag": str(message.delivery_tag)},
        )
        return False
    return True


def wake_consumer() -> bool:
    """Wake the worker's event loop, from a slot's thread, so that it reads the next message.

    A worker whose slots are all busy stops reading from Redis (kombu 5.7 pauses its BRPOP)
    and its loop sleeps in ``poll`` until a timer is due: up to a second. The ack that frees
    a slot, sent from the slot's own thread, does not end that sleep, so each slot lost 0.5 to
    1 s between two matches (``benchmarks/scale.py``'s overhead, 527-549 ms a match on
    2026-12-07). kombu's hub wakes its poll when another thread hands it a callback; the
    callback does nothing: the loop's next turn sees the freed slot and reads again.

    Returns:
        Whether there was a loop to wake (none outside a worker).
    """
    hub: Any = get_event_loop()  # kombu's hub has no type information
    if hub is None:
        return False
    hub.call_soon(_nothing)
    return True


def _nothing() -> None:
    """What :func:`wake_consumer` hands the loop: its turn is the point."""


class FleetRequest(Request):  # type: ignore[misc]  # celery has no type information
    """A task request whose ack frees its prefetch slot even when the broker is gone.

    The ack also wakes the worker's loop (:func:`wake_consumer`), so the freed slot's next
    message is read at once.
    """

    acknowledged: bool = False

    def acknowledge(self) -> None:
        """Acknowledge the task's message (:func:`ack_freeing_its_slot`); wake the loop."""
        if not self.acknowledged:
            ack_freeing_its_slot(self.message, self._connection_errors)
            self.acknowledged = True
            wake_consumer()


def match_queue(sandbox_kind: str) -> str:
    """The queue of the matches to be played in sandboxes of ``sandbox_kind``."""
    return f"matches.{sandbox_kind}"


def validation_queue(sandbox_kind: str) -> str:
    """The queue of the versions to be validated in sandboxes of ``sandbox_kind``."""
    return f"validation.{sandbox_kind}"


def worker_queues(sandbox_kind: str, *, ladder: bool = False) -> list[str]:
    """The queues a worker with sandboxes of ``sandbox_kind`` consumes, first first.

    A ladder's worker (``arena run --executor celery``) consumes the ladder's queue alone.
    """
    if ladder:
        return [f"ladder.{sandbox_kind}"]
    return [validation_queue(sandbox_kind), match_queue(sandbox_kind)]


def check_broker(broker: str, *, insecure: bool = False) -> None:
    """Refuse a broker URL that anyone who reaches the broker could use (issue 24, finding 9).

    Whoever reaches a Redis without a password lists the workers, reads every message and can
    stop the fleet, so a broker URL must carry a password (``redis://:PASSWORD@HOST:6379/0``,
    or ``USER:PASSWORD@`` for a Redis ACL user), unless the broker is on this machine's
    loopback, or ``insecure`` (``--insecure-broker``) says the network is the operator's own.
    ``rediss://`` (Redis over TLS) is accepted as ``redis://`` is.

    Raises:
        BrokerRefused: not a Redis URL, or no password for a broker on another machine.
    """
    parts = urlsplit(broker)
    if parts.scheme not in ("redis", "rediss"):
        raise BrokerRefused(
            "the fleet's broker is Redis: redis://HOST:PORT/N or rediss://"
            f" (got {hide_password(broker)})"
        )
    host = parts.hostname or "localhost"
    if parts.password or insecure or _loopback(host):
        return
    raise BrokerRefused(
        f"the broker {hide_password(broker)} has no password: anyone who reaches it could read"
        " the fleet's messages and stop its workers; give it one (redis://:PASSWORD@HOST:PORT/N,"
        " docs/deploy.md), or say --insecure-broker on a network of your own"
    )


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def fleet_app(broker: str) -> FleetApp:
    """The Celery app of a fleet on ``broker`` (``redis://HOST:PORT/N``), with its task.

    Workers take no remote control commands (``celery control``, ``broadcast("shutdown")``):
    the broker delivers work, nothing more. A ``rediss://`` URL without ``ssl_cert_reqs``
    verifies the broker's certificate.
    """
    app = FleetApp("arena", broker=broker, set_as_current=False)
    if urlsplit(broker).scheme == "rediss" and "ssl_cert_reqs" not in urlsplit(broker).query:
        app.conf.broker_use_ssl = {"ssl_cert_reqs": ssl.CERT_REQUIRED}
    app.conf.update(
        task_serializer="json",
        accept_content=["json"],
        task_ignore_result=True,
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        broker_transport_options={
            "visibility_timeout": VISIBILITY_TIMEOUT,
            # The queues in the worker's order, never rotated: validations first.
            "queue_order_strategy": "priority",
        },
        broker_connection_retry_on_startup=True,
        broker_connection_max_retries=None,
        worker_hijack_root_logger=False,
        worker_send_task_events=False,
        # No remote control: whoever reaches the broker could stop every worker with one
        # broadcast (issue 24, finding 9).
        worker_enable_remote_control=False,
        task_default_queue=match_queue("docker"),
    )

    @app.task(  # type: ignore[untyped-decorator]
        name=PLAY_MATCH, bind=True, acks_late=True, reject_on_worker_lost=True, Request=FleetRequest
    )
    def play_match(task: Any, match_id: int, ticket: str = "") -> str:
        return _player(task).play(int(match_id), str(ticket))

    @app.task(  # type: ignore[untyped-decorator]
        name=VALIDATE, bind=True, acks_late=True, reject_on_worker_lost=True, Request=FleetRequest
    )
    def validate(task: Any, version_id: int, ticket: str = "") -> str:
        return _player(task).validate(int(version_id), str(ticket))

    return app


def reach_broker(app: Celery, broker: str, *, timeout: float = 10.0) -> None:
    """Connect to ``app``'s broker once, or raise :class:`BrokerUnavailable` saying why.

    For who starts publishing and has nobody watching logs (``arena run --executor
    celery``): Celery would otherwise retry in silence for ever.
    """
    try:
        with app.connection_for_write() as connection:
            connection.ensure_connection(max_retries=2, interval_start=0.5, timeout=timeout)
    except Exception as e:
        raise BrokerUnavailable(
            f"cannot reach the fleet's broker at {hide_password(broker)}: {e}"
        ) from e


def _player(task: Any) -> Player:
    """The player of the worker process a task runs in."""
    player: Player | None = task.app.player
    if player is None:
        raise RuntimeError("this process is no arena worker: it has no player")
    return player
