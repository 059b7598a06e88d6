"""Docker images for bots: one base image, then one image per bot, each built once.

The **base image** ``flipflop-base:<hash>`` (also tagged ``flipflop-base:latest``) holds
python3 with ``grpcio``, ``protobuf`` and the ``flipflop`` SDK. Its hash covers the SDK's
sources, the pinned wheel versions and the underlying root image, so a changed SDK builds a
new base and an unchanged one is found again. The root image is one of (:class:`BaseKind`):

- ``python:3.11-slim``, used when it is present locally or can be pulled;
- an offline Debian bookworm with python3 made here with ``debootstrap`` and ``docker import``,
  for machines that cannot reach a registry (needs root, about two minutes, once).

A **bot image** ``flipflop-bot-<name>:<hash>`` is built from the arena's own recipe for the
bot's :class:`~flipflop._manifest.Runtime`, never from what the bot ships (issue 15, finding 2:
a bot's Dockerfile is run by the Docker daemon, which fetches ``ADD <url>`` on the host's
network and can ``COPY --from`` any image on the engine, another bot's or the league's):

- ``python``: the bot's files copied to ``/bot`` (owned by root, so read-only to the bot),
  its wheels unzipped into ``/bot/.deps`` (on ``PYTHONPATH``), user 65534, the manifest's
  ``command`` as entry point. The wheels come from a ``requirements.txt`` in which every
  requirement is pinned with ``--hash=``; the arena downloads them on the host
  (``pip download --require-hashes --only-binary=:all:``, CPython 3.11, manylinux) and caches
  them under ``~/.cache/flipflop-arena/wheels``. The recipe has no ``RUN`` step: no code of
  the bot runs at build time.
- ``binary``: the same without wheels; the entry point is the executable ``command[0]``.
- ``node``: the bot's files and its ``node_modules`` on Debian's ``nodejs``, user 65534, the
  manifest's ``command`` as entry point. The packages are those its ``package-lock.json``
  pins (a bot without one is refused), installed on the host by ``npm ci --omit=dev
  --ignore-scripts`` (as user 65534 when the arena is root: no install script, no bot code,
  runs on the host) and cached under ``~/.cache/flipflop-arena/npm`` by the lock's hash. The
  recipe has no ``RUN`` step. npm has the host's network, so the lock may name only tarballs
  of the registry npm is configured with, pinned by a sha512 integrity (``_npm``, issue 24,
  finding 6).
- ``go`` and ``cpp``: a build step, then a recipe without ``RUN``. The build step runs the
  bot's own build files (its ``Makefile``, its Go code), so it runs as a bot does (issue 24,
  finding 7), never as a ``RUN`` of ``docker build`` (which the daemon runs under runc with
  Docker's default seccomp profile and no pids limit): a container of the root with the
  toolchain, under the runtime the bots run under (gVisor's ``runsc`` when the arena uses it),
  with the arena's seccomp profile, ``no-new-privileges``, no capabilities, user 65534, no
  network, a read-only root, and the build limits' memory, CPU, pids and time, on a copy of
  the sources in a host directory mounted at ``/src`` (:func:`_compile`): Go in GOPATH mode
  against Debian's grpc-go sources, ``CGO_ENABLED=0`` (a static binary); C++ with the bot's
  ``make`` (gRPC linked statically, only glibc shared). The image is then the bot base with
  the bot's files and the one executable ``command[0]`` the build left (a regular file, read
  once the container is gone; owned by root), user 65534, that executable as entry point.
  Build outputs in the bot directory (``node_modules``, the executable, ``gen/``, ``*.o``) are
  neither copied nor hashed: the image is made from the sources.

The roots of these recipes are offline Debian bookworm images made here with ``debootstrap``
and ``docker import`` (:class:`DebianRoot`: :data:`NODE_ROOT`, :data:`GO_BUILDER`,
:data:`CPP_BUILDER`), once per machine, tagged by a hash of their package lists. Their image
ids are in the recipe's text, so a rebuilt root rebuilds every image on it.

A bot's own ``Dockerfile`` is ignored (one line in the log says so) unless the caller trusts
it (``arena run --trust-dockerfile``, for one's own bots): it is then built with
``--build-arg BASE=<base tag>``, after :func:`check_dockerfile` has refused ``VOLUME``,
``ADD <url>`` and ``COPY --from`` (or ``RUN --mount=from=``) an image the arena did not build.

Every build is bounded (:class:`BuildLimits`, issue 15, finding 3): no network, memory (no
swap), CPU and wall time (the build runs in a child process that is killed past the limit;
the daemon then cancels the build and removes its container; a compiled bot's build
container is removed past it), a compiled bot's build step's processes and threads, and a
cap on the image's size (a bigger image is removed and refused). Builds of different images
run at once: each holds a file lock named after its tag in :func:`cache_dir` (the base image
has its own).

Each use of a bot image is recorded (``images.json`` in :func:`cache_dir`), so that
:func:`prune_images` (``arena images prune``) can remove the images not used for a while, the
dangling ones and the build cache, and never an image the arena did not build.
``ARENA_DOCKER_BASE=slim|debootstrap`` forces a root. Progress and timings go to stderr.
"""

from arena.sandbox.images._base import ensure_base_image
from arena.sandbox.images._cache import (
    ARENA_LABEL,
    BASE_REPO,
    BuildLimits,
    Log,
    cache_dir,
    stderr_log,
)
from arena.sandbox.images._dockerfiles import check_dockerfile, from_images
from arena.sandbox.images._prune import PrunedImage, PruneReport, prune_images
from arena.sandbox.images._recipes import (
    BotImagePlan,
    bot_image_tag,
    check_requirements,
    ensure_bot_image,
    plan_bot_image,
)
from arena.sandbox.images._roots import (
    BASE_ENV,
    CPP_BUILDER,
    GO_BUILDER,
    NODE_IMAGE,
    NODE_IMAGE_ENV,
    NODE_ROOT,
    BaseKind,
    DebianRoot,
    ensure_root,
    node_image,
)

__all__ = [
    "ARENA_LABEL",
    "BASE_ENV",
    "BASE_REPO",
    "CPP_BUILDER",
    "GO_BUILDER",
    "NODE_IMAGE",
    "NODE_IMAGE_ENV",
    "NODE_ROOT",
    "BaseKind",
    "BotImagePlan",
    "BuildLimits",
    "DebianRoot",
    "Log",
    "PruneReport",
    "PrunedImage",
    "bot_image_tag",
    "cache_dir",
    "check_dockerfile",
    "check_requirements",
    "ensure_base_image",
    "ensure_bot_image",
    "ensure_root",
    "from_images",
    "node_image",
    "plan_bot_image",
    "prune_images",
    "stderr_log",
]
