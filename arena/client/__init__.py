"""What runs on a bot author's machine: the league client, its credentials, a new bot.

- ``_league``: ``arena submit`` and the other league commands' HTTP client.
- ``_credentials``: the saved login (``~/.config/flipflop-arena/credentials.toml``).
- ``_scaffold``: ``arena new-bot``'s templates.
- ``_pack``: a bot directory packed as the league's upload archive.

Imports no server module: nothing of ``arena.league`` or ``arena.web`` (checked in CI).
"""
