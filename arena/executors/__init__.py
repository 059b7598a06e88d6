"""Executors: what plays matches, for a ladder and for a league.

An executor takes :class:`Job` s (one attempt of a planned match each) and hands back
:class:`Done` s as they finish (:class:`Executor`). The ladder (``arena run``) plays on
:class:`LocalPool` (slots on this machine, bots kept between matches) or on a Celery fleet
(``_fleet_pool.FleetPool``, imported only when used: it brings Celery). The fleet's
plumbing is here too, for the ladder and the league alike: the Celery app, its queues and
tasks (``_celery``), the workers' HTTP protocol (``_protocol``) and the small HTTP server
that serves it (``_http``, with the connection bounds of ``_connections``).

Imports ``arena.match`` and below; the ladder and the league import this package.
"""

from arena.executors._jobs import Collector, Done, Executor, Job, PlannedMatch
from arena.executors._local import LocalPool

__all__ = ["Collector", "Done", "Executor", "Job", "LocalPool", "PlannedMatch"]
