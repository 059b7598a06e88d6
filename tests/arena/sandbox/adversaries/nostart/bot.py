"""A bot that fails to start, in the way attack.json's ``mode`` says; or starts slowly.

- ``syntax``: its code has a syntax error (Python exits with code 1 and a traceback);
- ``raise``: it raises at start, before serving;
- ``exit``: it prints a line and exits with code 3;
- ``slow``: it sleeps ``seconds`` before serving, then plays a legal game (a healthy bot on
  a loaded machine: it must not be charged a fault);
- ``slow-handshake``: it serves at once, but answers its handshake only ``seconds`` later
  (as a first answer is, on a loaded machine), then plays a legal game.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

CONFIG = json.loads((Path(__file__).resolve().parent / "attack.json").read_text())


def main() -> None:
    """Fail (or dawdle) as told."""
    mode = CONFIG["mode"]
    print(f"nostart: mode {mode}", file=sys.stderr, flush=True)
    if mode == "syntax":
        exec(compile("def broken(:\n    pass\n", "broken_module.py", "exec"))
    elif mode == "raise":
        raise RuntimeError("boom at start: cannot load my model")
    elif mode == "exit":
        print("giving up before serving", file=sys.stderr, flush=True)
        sys.exit(3)
    elif mode == "slow":
        time.sleep(float(CONFIG.get("seconds", 3)))
    from flipflop import Bot, serve

    if mode == "slow-handshake":
        from flipflop import _server

        answer = _server._BotServicer.Handshake

        def late(self: _server._BotServicer, request: Any, context: Any) -> Any:
            time.sleep(float(CONFIG.get("seconds", 3)))
            return answer(self, request, context)

        _server._BotServicer.Handshake = late  # type: ignore[method-assign]

    class Slow(Bot):
        name = "nostart"

    serve(Slow)


if __name__ == "__main__":
    main()
