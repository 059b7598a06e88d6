"""``arena images prune``: old, dangling and cached images the arena built, and only those.

A bot image not used for ``keep_days``, dangling images and the build cache; never an
image the arena did not build.
The package's docstring (``arena/sandbox/images/__init__.py``) tells the whole story.
"""

from __future__ import annotations

import contextlib
import re
import time
from dataclasses import dataclass

import docker  # type: ignore[import-untyped,unused-ignore]
import docker.errors  # type: ignore[import-untyped,unused-ignore]
from docker.models.images import Image  # type: ignore[import-untyped,unused-ignore]

from arena.sandbox.images._cache import (
    ARENA_LABEL,
    BASE_REPO,
    BOT_REPO_PREFIX,
    _forget_uses,
    _image,
    _last_uses,
)


@dataclass(frozen=True, slots=True)
class PrunedImage:
    """An image :func:`prune_images` removed (or would remove).

    Attributes:
        ref: its tag, or its id when it had none (dangling).
        size: bytes that only it holds (not shared with other images), as Docker counts them.
        idle_days: days since it was last used, or since it was made when never recorded.
    """

    ref: str
    size: int
    idle_days: float


@dataclass(frozen=True, slots=True)
class PruneReport:
    """What :func:`prune_images` did.

    Attributes:
        images: the images removed (or, on a dry run, that would be).
        image_bytes: disk freed by removing them (on a dry run: their own sizes added up).
        cache_bytes: disk freed from the build cache (0 on a dry run).
        dry_run: nothing was removed.
    """

    images: tuple[PrunedImage, ...]
    image_bytes: int
    cache_bytes: int
    dry_run: bool


def _is_arena_ref(ref: str, labels: dict[str, str]) -> bool:
    """A tag the arena built: its repository is one of the arena's and it carries its label.

    Both, since an image built FROM an arena image inherits the arena's labels.
    """
    repo = ref.rsplit(":", 1)[0]
    if repo.startswith(BOT_REPO_PREFIX):
        return ARENA_LABEL in labels or "flipflop.bot" in labels
    if repo == BASE_REPO:
        return ARENA_LABEL in labels or "flipflop.sdk" in labels
    return False


def prune_images(
    client: docker.DockerClient,
    *,
    keep_days: float = 7.0,
    everything: bool = False,
    dry_run: bool = False,
) -> PruneReport:
    """Remove the arena's images not used for ``keep_days``, its dangling ones, the build cache.

    Only images the arena built are touched (:func:`_is_arena_ref`). The base image tagged
    ``latest`` is kept unless ``everything``.

    Args:
        client: a Docker client.
        keep_days: keep images used within this many days.
        everything: remove every image the arena built, used or not.
        dry_run: say what would be removed, remove nothing.
    """
    now = time.time()
    uses = _last_uses()
    df = client.df()
    own_size = {
        str(i.get("Id")): max(0, int(i.get("Size") or 0) - max(0, int(i.get("SharedSize") or 0)))
        for i in df.get("Images") or []
    }
    before = int(df.get("LayersSize") or 0)
    latest = _image(client, f"{BASE_REPO}:latest")
    chosen: list[PrunedImage] = []
    for image in client.images.list():
        labels = dict(((image.attrs or {}).get("Config") or {}).get("Labels") or {})
        created = _created(image)
        size = own_size.get(str(image.id), 0)
        tags = [t for t in image.tags if _is_arena_ref(t, labels)]
        for tag in tags:
            if tag == f"{BASE_REPO}:latest" or (
                latest is not None and image.id == latest.id and not everything
            ):
                continue
            idle = (now - uses.get(tag, created)) / 86400
            if everything or idle > keep_days:
                chosen.append(PrunedImage(tag, size if len(tags) == 1 else 0, idle))
    for image in client.images.list(filters={"dangling": True, "label": ARENA_LABEL}):
        labels = dict(((image.attrs or {}).get("Config") or {}).get("Labels") or {})
        if _is_arena_ref(labels.get(ARENA_LABEL, ""), labels):
            idle = (now - _created(image)) / 86400
            chosen.append(PrunedImage(str(image.id), own_size.get(str(image.id), 0), idle))
    if dry_run:
        return PruneReport(tuple(chosen), sum(p.size for p in chosen), 0, True)
    removed = []
    for pruned in chosen:
        try:
            client.images.remove(pruned.ref, noprune=False)
        except docker.errors.APIError:
            continue  # in use by a container, or has children: kept
        removed.append(pruned)
    _forget_uses([p.ref for p in removed])
    cache = 0
    with contextlib.suppress(docker.errors.APIError):
        cache = int(client.api.prune_builds().get("SpaceReclaimed") or 0)
    after = int(client.df().get("LayersSize") or 0)
    return PruneReport(tuple(removed), max(0, before - after), cache, False)


def _created(image: Image) -> float:
    """When ``image`` was made, in seconds since the epoch (0 when Docker does not say)."""
    raw = str((image.attrs or {}).get("Created") or "")
    match = re.match(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)", raw)
    if match is None:
        return 0.0
    return time.mktime(time.strptime(match.group(1), "%Y-%m-%dT%H:%M:%S")) - time.timezone
