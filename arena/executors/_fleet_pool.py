"""``arena run --executor celery``: a local ladder's matches played by a Celery fleet.

The ladder process stays the one that writes every file (``matches.jsonl``, replays, logs,
standings), exactly as with its own slots; only the playing moves. It serves, on a port of
its own (``--listen``), the same worker routes a league serves (``/api/v1/worker/…``), over
its plan instead of a database, so the same ``arena worker`` plays for either:

- the bots' sources go as content-addressed archives (``pack_bot``: the bot directory as a
  reproducible tar.gz), fetched once per worker and kept in its cache;
- a match's task names it by its index in the plan (queue ``ladder.KIND``); the worker
  claims it over HTTP and gets its seed (never sent through the broker), its bots, the rules
  and the clock; it renews its lease while it plays, uploads the replay and the logs, and
  posts the record, which the ladder writes as its own slots' records;
- a match whose worker is lost (its lease runs out) or whose message is lost (not claimed
  within ``republish_after`` seconds) is published again; a claim decides who records it,
  so a match is recorded once.

The workers prove themselves with a token shared with the ladder (``ARENA_WORKER_TOKEN``
on both sides; one is made and printed when the ladder has none).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import hmac
import secrets
import shutil
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from fastapi import Depends, FastAPI, Query, Request
from fastapi.responses import JSONResponse, Response

from arena._errors import BrokerUnavailable, Conflict, LeagueError, NotAuthenticated, NotFound
from arena._scratch import drop_scratch, make_scratch
from arena.client._pack import UploadLimits, pack_bot
from arena.executors._celery import PLAY_MATCH, fleet_app, reach_broker, worker_queues
from arena.executors._http import add_error_handlers, bearer_token, read_upload, serve_in_thread
from arena.executors._jobs import Collector, Done, Job, PlannedMatch
from arena.executors._protocol import (
    WORKER_PREFIX,
    Claimed,
    Failure,
    Result,
    announced,
    split_artifacts,
)
from arena.match._deal import match_seed
from arena.match._runner import TimeControl
from flipflop import BotManifest, MatchConfig

__all__ = ["DEFAULT_LADDER_LEASE", "FleetOptions", "FleetPool", "ladder_queue"]

DEFAULT_LADDER_LEASE = 60.0
"""Seconds a worker holds a ladder match between renewals."""
_REPUBLISH_S = 60.0
_HOUSEKEEPING_S = 1.0
_MAX_UPLOAD = 64 * 1024 * 1024


def ladder_queue(sandbox_kind: str) -> str:
    """The queue of a ladder's matches for workers with sandboxes of ``sandbox_kind``."""
    (queue_name,) = worker_queues(sandbox_kind, ladder=True)
    return queue_name


@dataclass(frozen=True, slots=True)
class FleetOptions:
    """How ``run_ladder`` reaches its fleet.

    Attributes:
        broker: the Celery broker's URL (``redis://HOST:PORT/N``).
        sandbox_kind: the sandbox the workers must play in (``docker`` or ``process``).
        listen: ``(host, port)`` of the ladder's worker routes (port 0: any free one).
        token: the token workers present (``ARENA_WORKER_TOKEN``).
        on_ready: told the routes' URL once they are served (to tell the workers).
    """

    broker: str
    sandbox_kind: str
    listen: tuple[str, int]
    token: str
    on_ready: Callable[[str], None] | None = None


@dataclass
class _State:
    """Where one planned match is: waiting (published or not), or held by a claim."""

    job: Job
    claim: str | None = None
    expires: float = 0.0
    published: float | None = None


class FleetPool(Collector):
    """A ladder's executor whose matches a fleet plays (as :class:`~arena.executors.LocalPool`).

    Args:
        bots: every bot of the plan (a job's seats name them).
        config: the match rules (each job's table size is its seats').
        clock: the time control.
        plan: the whole plan (a match's task names it by its index there).
        out: the ladder's output directory (replays and logs are written there).
        key: the run's deal key (seeds are derived from it; sent only to a worker that
            claimed a match with the token).
        cancel: set to stop (Ctrl-C).
        options: the broker, the workers' sandbox kind, the routes' address, the token.
        lease: seconds a worker holds a match between renewals.
        republish_after: seconds after which a match not claimed is published again.
    """

    def __init__(
        self,
        bots: Sequence[BotManifest],
        config: MatchConfig,
        clock: TimeControl,
        plan: Sequence[PlannedMatch],
        out: Path,
        key: bytes,
        cancel: threading.Event,
        options: FleetOptions,
        *,
        lease: float = DEFAULT_LADDER_LEASE,
        republish_after: float = _REPUBLISH_S,
    ) -> None:
        super().__init__(cancel)
        self._config, self._clock, self._out, self._key = config, clock, out, key
        self._token = options.token
        self._lease = lease
        self._republish_after = republish_after
        self._queue = ladder_queue(options.sandbox_kind)
        self._sources: dict[str, bytes] = {}
        self._sha_of: dict[str, str] = {}
        for bot in bots:
            archive = pack_bot(bot.path)
            digest = hashlib.sha256(archive).hexdigest()
            self._sources[digest] = archive
            self._sha_of[bot.name] = digest
        self._plan_index = {p.match_id: i for i, p in enumerate(plan)}
        self._states: dict[int, _State] = {}
        self._lock = threading.Lock()
        self._seats = 0
        self._scratch = make_scratch("ffl-")
        self._app = fleet_app(options.broker)
        try:
            reach_broker(self._app, options.broker)
        except BrokerUnavailable:
            self._app.close()
            raise
        self._stack = contextlib.ExitStack()
        self.url = self._stack.enter_context(self._serve(*options.listen))
        if options.on_ready is not None:
            options.on_ready(self.url)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._housekeep, name="ladder-fleet", daemon=True)
        self._thread.start()

    # ------------------------------------------------------------------ the pool's interface

    def submit(self, job: Job) -> None:
        """Queue ``job`` for the fleet and publish it."""
        index = self._index(job.planned.match_id)
        with self._lock:
            self._pending += 1
            self._states[index] = _State(job)
        self._publish(index)

    @property
    def starts(self) -> int:
        """Bot instances started for the matches recorded (a worker starts each seat fresh)."""
        return self._seats

    @property
    def prestarted(self) -> int:
        """None: a worker starts each seat when it plays the match (docs/arena.md)."""
        return 0

    def __enter__(self) -> FleetPool:
        return self

    def __exit__(self, *exc: object) -> None:
        """Stop serving and publishing; matches still held are the workers' to drop."""
        self._cancel.set()
        self._stop.set()
        self._thread.join()
        self._stack.close()
        self._app.close()
        drop_scratch(self._scratch)

    # ------------------------------------------------------------------ publishing

    def _index(self, match_id: str) -> int:
        return self._plan_index[match_id]

    def _publish(self, index: int) -> None:
        try:
            self._app.send_task(PLAY_MATCH, args=[index], queue=self._queue, retry=True)
        except Exception:  # the broker away: housekeeping publishes it again
            return
        with self._lock:
            state = self._states.get(index)
            if state is not None:
                state.published = time.monotonic()

    def _housekeep(self) -> None:
        """Requeue matches whose lease ran out; publish again what nobody claimed."""
        while not self._stop.wait(_HOUSEKEEPING_S):
            now = time.monotonic()
            again = []
            with self._lock:
                for index, state in self._states.items():
                    if state.claim is not None and state.expires <= now:
                        state.claim = None  # its worker is lost: to the queue again
                        state.published = None
                    if state.claim is None and (
                        state.published is None or now - state.published >= self._republish_after
                    ):
                        again.append(index)
            for index in again:
                self._publish(index)

    # ------------------------------------------------------------------ the worker routes

    @contextlib.contextmanager
    def _serve(self, host: str, port: int) -> Iterator[str]:
        with serve_in_thread(self._routes(), host=host, port=port) as url:
            yield url

    def _held(self, index: int, claim: str) -> _State:
        state = self._states.get(index)
        if state is None:
            raise NotFound(f"no match {index} is waiting in this ladder")
        if state.claim is None or not hmac.compare_digest(state.claim, claim):
            raise Conflict(f"this claim no longer holds match {index}")
        return state

    def _routes(self) -> Any:
        def worker(request: Request) -> None:
            token = bearer_token(request.headers.get("authorization"), "invalid worker token")
            if token is None or not hmac.compare_digest(token.encode(), self._token.encode()):
                raise NotAuthenticated("invalid worker token")

        app = FastAPI(title="arena run: a ladder's worker routes", dependencies=[Depends(worker)])
        add_error_handlers(app)

        @app.get(f"{WORKER_PREFIX}/me")
        def me() -> dict[str, Any]:
            # The sources were packed within the default limits (pack_bot).
            uploads = dataclasses.asdict(UploadLimits())
            return {"worker": "ladder", "kind": "ladder", "queue": self._queue, "uploads": uploads}

        @app.get(f"{WORKER_PREFIX}/sources/{{sha256}}")
        def source(sha256: str) -> Response:
            if sha256 not in self._sources:
                raise NotFound(f"no bot of this ladder has the source {sha256}")
            return Response(self._sources[sha256], media_type="application/gzip")

        @app.post(f"{WORKER_PREFIX}/matches/{{index}}/claim")
        def claim(index: int) -> dict[str, Any]:
            with self._lock:
                state = self._states.get(index)
                if state is None:
                    raise NotFound(f"no match {index} is waiting in this ladder")
                if state.claim is not None:
                    raise Conflict(f"match {index} is being played")
                state.claim = f"ladder/{secrets.token_hex(8)}"
                state.expires = time.monotonic() + self._lease
                job = state.job
            p = job.planned
            return {
                "match": index,
                "name": p.match_id,
                "claim": state.claim,
                "attempt": job.attempt,
                "seed": match_seed(self._key, p.group).hex(),
                "seats": [{"name": b, "sha256": self._sha_of[b]} for b in p.bots],
                "config": dataclasses.asdict(dataclasses.replace(self._config, seats=len(p.bots))),
                "clock": dataclasses.asdict(self._clock),
                "lease_s": self._lease,
            }

        @app.post(f"{WORKER_PREFIX}/matches/{{index}}/lease")
        def lease(index: int, body: Claimed) -> dict[str, bool]:
            with self._lock:
                self._held(index, body.claim).expires = time.monotonic() + self._lease
            return {"renewed": True}

        @app.put(f"{WORKER_PREFIX}/artifacts", status_code=201)
        async def artifacts(
            request: Request, part: Annotated[list[str], Query()]
        ) -> dict[str, list[str]]:
            parts = announced(part, _MAX_UPLOAD)
            body = await read_upload(request, sum(size for _, size in parts))
            stored = split_artifacts(parts, body)
            for digest, data in stored:
                (self._scratch / digest).write_bytes(data)
            return {"sha256": [digest for digest, _ in stored]}

        @app.put(f"{WORKER_PREFIX}/artifacts/{{sha256}}", status_code=201)
        async def artifact(sha256: str, request: Request) -> dict[str, str]:
            data = await read_upload(request, _MAX_UPLOAD)
            if hashlib.sha256(data).hexdigest() != sha256:
                raise LeagueError(f"the bytes sent are not those of {sha256}")
            (self._scratch / sha256).write_bytes(data)
            return {"sha256": sha256}

        @app.post(f"{WORKER_PREFIX}/matches/{{index}}/result")
        def result(index: int, body: Result) -> dict[str, bool]:
            with self._lock:
                state = self._held(index, body.claim)
                del self._states[index]
            self._results.put(self._recorded(state.job, body.record, body))
            return {"counted": True}

        @app.post(f"{WORKER_PREFIX}/matches/{{index}}/fail")
        def fail(index: int, body: Failure) -> JSONResponse:
            with self._lock:
                state = self._held(index, body.claim)
                del self._states[index]
            self._results.put(Done(state.job, error=body.error))
            return JSONResponse({"requeued": False})

        return app

    def _recorded(self, job: Job, record: dict[str, Any], posted: Result) -> Done:
        """The posted record as the ladder's own: its replay and logs written in ``out``."""
        match_id = job.planned.match_id
        replay = self._out / "replays" / f"{match_id}.jsonl"
        shutil.copyfile(self._scratch / posted.replay_sha256, replay)
        logs = self._out / "logs" / match_id
        seats = []
        for seat, digest in zip(record.get("seats", []), posted.logs_sha256, strict=False):
            seat = dict(seat)
            if digest is not None and seat.get("log"):
                logs.mkdir(parents=True, exist_ok=True)
                local = logs / Path(str(seat["log"])).name
                shutil.copyfile(self._scratch / digest, local)
                seat["log"] = str(local)
            seats.append(seat)
        self._seats += len(seats)
        return Done(job, data={**record, "seats": seats, "replay": str(replay)})
