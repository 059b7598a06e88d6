"""The SDK's build: pure Python, or with ``FLIPFLOP_COMPILE=1`` its engine compiled by mypyc.

The compiled build (docs/engine.md "A compiled engine") is the same source compiled to C
extension modules, which Python imports in place of the ``.py`` files; the ``.py`` files stay
in the package as the reference and the fallback. It needs mypy (the ``test`` extra pins it)
and a C compiler, so build it without build isolation::

    FLIPFLOP_COMPILE=1 pip wheel --no-build-isolation ./sdk      # a wheel for this platform
    make compile                                                 # in place, in this checkout
"""

from __future__ import annotations

import os

from setuptools import setup

# The rules engine: every module a match runs through, and nothing that does I/O.
ENGINE = (
    "_cards",
    "_spreads",
    "_hand",
    "_deals",
    "_actions",
    "_observation",
    "_results",
    "_match",
    "_errors",
)


def _extensions() -> list[object]:
    if os.environ.get("FLIPFLOP_COMPILE", "") != "1":
        return []
    from mypyc.build import mypycify  # only the compiled build needs mypy

    # One group: the modules share one library, which stays inside the package.
    return list(
        mypycify([f"flipflop/{m}.py" for m in ENGINE], group_name="flipflop._engine", opt_level="3")
    )


setup(ext_modules=_extensions())
