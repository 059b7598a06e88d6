"""Fixture bot: the SDK's default play, served over gRPC (the golden ``default`` players)."""

from __future__ import annotations

from flipflop import Bot, serve


class DefaultBot(Bot):
    """Draws from the stock, then discards its highest card: the SDK's defaults."""

    name = "default"
    version = "1.0.0"


if __name__ == "__main__":
    serve(DefaultBot)
