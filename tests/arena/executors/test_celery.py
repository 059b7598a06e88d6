"""The Celery fleet's plumbing (``arena/executors/_celery.py``): its broker check and its ack.

A real ``redis-server`` of the test's own and kombu's real Redis transport; the fleet's
end-to-end tests (a served league, workers, a ladder on the fleet) are in
``tests/arena/league/test_fleet.py``.
"""

from __future__ import annotations

import ssl
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kombu
import pytest
from click.testing import CliRunner
from kombu import asynchronous

from arena._errors import BrokerRefused
from arena.cli import main
from arena.executors._celery import FleetRequest, ack_freeing_its_slot, check_broker, fleet_app
from tests.served import REDIS_SERVER, WAIT_S, RedisServer

KOMBU: Any = kombu  # kombu's names have no type information
HUB: Any = asynchronous  # nor its event loop's


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[RedisServer]:
    """A running redis-server of this test's own, stopped afterwards."""
    if not Path(REDIS_SERVER).exists():
        pytest.skip("the fleet's tests need redis-server")
    server = RedisServer(tmp_path / "redis")
    server.start()
    try:
        yield server
    finally:
        server.stop()


def test_a_broker_on_another_machine_needs_a_password(tmp_path: Path) -> None:
    """Issue 24, finding 9: no broker without a password but on loopback, unless told so.

    ``arena league serve``, ``arena worker`` and ``arena run --executor celery`` refuse a
    ``redis://`` URL of another machine without a password (exit 2, one sentence), before
    reaching for it; loopback, a password, or ``--insecure-broker`` pass the check.
    """
    open_broker = "redis://10.255.255.1:6379/0"
    runner = CliRunner()
    commands = [
        ["league", "serve", str(tmp_path), "--executor", "celery", "--broker", open_broker],
        ["worker", "--broker", open_broker, "--league", "http://127.0.0.1:9", "--token", "x"],
        ["run", "random", "greedy", "counter", "--executor", "celery", "--broker", open_broker],
    ]
    for args in commands:
        result = runner.invoke(main, args)
        assert 2 == result.exit_code, (args, result.output)
        assert f"the broker {open_broker} has no password" in result.output
    for fine in (
        "redis://127.0.0.1:6379/0",
        "redis://localhost:6379/0",
        "redis://[::1]:6379/0",
        "redis://:pw@10.255.255.1:6379/0",
        "rediss://arena:pw@broker.example:6380/0",
    ):
        check_broker(fine)
    check_broker(open_broker, insecure=True)
    with pytest.raises(BrokerRefused, match="the fleet's broker is Redis"):
        check_broker("amqp://guest:guest@10.0.0.1//")
    tls = fleet_app("rediss://:pw@broker.example:6380/0")  # over TLS, its certificate checked
    assert {"ssl_cert_reqs": ssl.CERT_REQUIRED} == tls.conf.broker_use_ssl
    tls.close()


@pytest.mark.parametrize("fixed", [True, False], ids=["our-ack", "kombu-ack"])
def test_an_ack_the_restarted_broker_never_heard_frees_the_workers_slot(
    broker: RedisServer, fixed: bool
) -> None:
    """Redis killed while a one-slot worker played its message: the slot takes the next one.

    kombu's own ack (``kombu-ack``, what the worker did before) raises and leaves the message
    counted against the prefetch limit for ever, so the worker never consumes again; the
    fleet's (``our-ack``) frees it. A real Redis, kombu's real Redis transport.
    """
    with KOMBU.Connection(broker.url) as connection:
        queue = KOMBU.Queue("matches.process", routing_key="matches.process")
        with connection.Producer() as producer:
            producer.publish({"match": 1}, routing_key="matches.process", declare=[queue])
        channel = connection.channel()
        channel.basic_qos(prefetch_size=0, prefetch_count=1)
        received: list[Any] = []
        consumer = KOMBU.Consumer(channel, [queue], callbacks=[lambda _, m: received.append(m)])
        with consumer:
            connection.drain_events(timeout=WAIT_S)
            assert 1 == len(received)
            assert not channel.qos.can_consume()  # the one slot holds the message
            broker.stop()
            errors = (*connection.connection_errors, *connection.channel_errors)
            if fixed:
                assert not ack_freeing_its_slot(received[0], errors)
            else:
                with pytest.raises(errors):
                    received[0].ack()
            assert fixed == channel.qos.can_consume()


@pytest.mark.parametrize("fixed", [True, False], ids=["our-ack", "kombu-ack"])
def test_a_slots_ack_wakes_the_workers_loop_to_read_the_next_message(
    broker: RedisServer, fixed: bool
) -> None:
    """A one-slot worker's match ends: its next message is read at once, not at a timer.

    A worker reads its broker in kombu's event loop (the hub, as ``arena worker`` runs it);
    with its one slot busy, kombu stops reading from Redis and the loop sleeps in ``poll``
    until a timer is due. The slot's ack comes from the slot's own thread. kombu's own ack
    (``kombu-ack``) leaves the loop asleep, so the next message waited for the next timer,
    up to a second a match (issue 27: the fleet's overhead, 0.5 s a match); the fleet's
    (``our-ack``, ``FleetRequest.acknowledge``) wakes it. Here the loop's timers are put an
    hour away, so only a wake can bring the second message: no clock decides the result.
    """
    hub = HUB.Hub()
    HUB.set_event_loop(hub)
    fire_timers = hub.fire_timers
    hub.fire_timers = lambda **kw: (fire_timers(**kw), 3600.0)[1]  # the next timer: in an hour
    connection = KOMBU.Connection(broker.url)
    running = threading.Event()
    stop = threading.Event()
    failed: list[BaseException] = []

    def loop() -> None:
        try:
            turns = hub.create_loop()
            while not stop.is_set():
                next(turns)
                running.set()
        except BaseException as e:  # the test reports it
            failed.append(e)

    try:
        connection.connect()
        queue = KOMBU.Queue("matches.process", routing_key="matches.process")
        with connection.Producer() as producer:
            for match in (1, 2):
                producer.publish({"match": match}, routing_key="matches.process", declare=[queue])
        channel = connection.channel()
        channel.basic_qos(prefetch_size=0, prefetch_count=1)
        received: list[Any] = []
        consumer = KOMBU.Consumer(channel, [queue], callbacks=[lambda _, m: received.append(m)])
        connection.transport.register_with_event_loop(connection.connection, hub)
        consumer.consume()
        read_at_turns: list[int] = []  # the messages read when each of the loop's turns began
        hub.on_tick.add(lambda: read_at_turns.append(len(received)))
        thread = threading.Thread(target=loop, name="hub", daemon=True)
        thread.start()
        deadline = time.monotonic() + WAIT_S
        # A turn that began with match 1 read stopped the reading (the slot is full), then
        # went to sleep in poll.
        while 1 not in read_at_turns and time.monotonic() < deadline:
            time.sleep(0.01)
        assert 1 == len(received), failed
        assert not channel.qos.can_consume()  # the one slot holds match 1
        time.sleep(0.2)  # from that turn's start into its poll
        assert 1 == len(received)
        if fixed:
            request = FleetRequest.__new__(FleetRequest)  # only what acknowledge() reads
            request._message = received[0]
            request._connection_errors = connection.connection_errors
            request.acknowledge()  # from this thread, as a slot's thread acks
        else:
            received[0].ack()
        assert channel.qos.can_consume()  # either way, the slot is free
        deadline = time.monotonic() + (WAIT_S if fixed else 3.0)
        while len(received) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert (2 if fixed else 1) == len(received), failed
        if fixed:
            assert {"match": 2} == received[1].decode()
    finally:
        stop.set()
        hub.call_soon(lambda: None)  # wakes the loop to see stop
        if running.is_set():
            thread.join(timeout=WAIT_S)
        HUB.set_event_loop(None)
        connection.release()
        hub.close()
