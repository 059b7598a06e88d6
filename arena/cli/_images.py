"""``arena images``: the Docker images the arena built for bots, and pruning them."""

from __future__ import annotations

import click

from arena.cli._errors import ArenaCliError

__all__ = ["images"]


def _mb(n: int) -> str:
    return f"{n / (1024 * 1024):.1f} MB"


@click.group()
def images() -> None:
    """The Docker images the arena builds for bots (docs/sandbox.md).

    \b
    Example:
        arena images prune --dry-run
    """


@images.command()
@click.option(
    "--keep-days",
    type=click.FloatRange(min=0),
    default=7.0,
    show_default=True,
    help="Keep images used within this many days.",
)
@click.option("--all", "everything", is_flag=True, help="Remove every image the arena built.")
@click.option("--dry-run", is_flag=True, help="Say what would be removed; remove nothing.")
def prune(keep_days: float, everything: bool, dry_run: bool) -> None:
    """Remove the arena's bot images not used recently, its dangling ones and the build cache.

    Only images the arena built are removed (a flipflop-bot-* or flipflop-base repository
    and the arena's label); the base image tagged latest is kept unless --all. An image a
    container still uses is kept. Exit code 3 when no Docker engine answers.

    \b
    Examples:
        arena images prune
        arena images prune --keep-days 1 --dry-run
        arena images prune --all
    """
    from arena.sandbox._docker import docker_available
    from arena.sandbox.images import prune_images

    reason = docker_available()
    if reason is not None:
        raise ArenaCliError(reason)
    import docker  # type: ignore[import-untyped,unused-ignore]

    client = docker.from_env()
    try:
        report = prune_images(client, keep_days=keep_days, everything=everything, dry_run=dry_run)
    except docker.errors.APIError as e:
        raise ArenaCliError(f"cannot prune images: {e}") from e
    finally:
        client.close()
    verb = "would remove" if report.dry_run else "removed"
    for image in report.images:
        click.echo(f"{verb} {image.ref} ({_mb(image.size)}, idle {image.idle_days:.1f} days)")
    if report.dry_run:
        click.echo(
            f"{len(report.images)} image(s), about {_mb(report.image_bytes)}; "
            "the build cache would be pruned too"
        )
    else:
        click.echo(
            f"freed {_mb(report.image_bytes)} of images ({len(report.images)} removed) and "
            f"{_mb(report.cache_bytes)} of build cache"
        )
