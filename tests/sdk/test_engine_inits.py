"""The engine's hand-written dataclass ``__init__`` methods match their fields.

Frozen dataclasses built at every decision or hand (``Observation``, ``HandResult``,
``HandDeal``, ``Pots``, ``Spread``, ``_Table``) write their ``__init__`` out, because compiled
it is about 20 times faster than the generated one (docs/engine.md, "A compiled engine").
Written out, it could drift from the fields: these tests fail when a field is added, dropped,
renamed, reordered or assigned to another field.
"""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

import pytest

from flipflop import COMPILED, _match, _observation, _results

WRITTEN_OUT: list[type[Any]] = [
    _observation.Observation,
    _observation.Pots,
    _observation.Spread,
    _results.HandResult,
    _match.HandDeal,
    _match._Table,
]


def _engine_dataclasses() -> list[type[Any]]:
    found = []
    for module in (_match, _observation, _results):
        for value in vars(module).values():
            if (
                isinstance(value, type)
                and dataclasses.is_dataclass(value)
                and value.__module__ == module.__name__
            ):
                found.append(value)
    return found


@pytest.mark.skipif(COMPILED, reason="compiled methods have no code objects (same source)")
def test_every_written_out_init_is_listed() -> None:
    """A dataclass of the engine with its own ``__init__`` is one of those checked here."""
    own = {c for c in _engine_dataclasses() if "__init__" in c.__dict__ and c not in WRITTEN_OUT}
    generated = {c for c in own if c.__init__.__code__.co_filename == "<string>"}
    assert own - generated == set()


@pytest.mark.skipif(COMPILED, reason="compiled methods keep no annotations (same source)")
@pytest.mark.parametrize("cls", WRITTEN_OUT, ids=lambda c: c.__name__)
def test_the_signature_is_the_fields(cls: type[Any]) -> None:
    """Its parameters are the fields, in order, with their annotations and no defaults."""
    params = list(inspect.signature(cls.__init__).parameters.values())[1:]
    fields = [f for f in dataclasses.fields(cls) if f.init]
    assert [(p.name, str(p.annotation)) for p in params] == [(f.name, str(f.type)) for f in fields]
    assert all(p.default is inspect.Parameter.empty for p in params)
    assert all(f.default is dataclasses.MISSING for f in fields)


@pytest.mark.skipif(COMPILED, reason="passes placeholders of the wrong types")
@pytest.mark.parametrize("cls", WRITTEN_OUT, ids=lambda c: c.__name__)
def test_each_argument_lands_in_its_field(cls: type[Any]) -> None:
    """Each argument, by position and by name, is stored in its own field, and only there."""
    names = [f.name for f in dataclasses.fields(cls)]
    marks = [object() for _ in names]
    by_position = cls(*marks)
    by_name = cls(**dict(zip(names, marks, strict=True)))
    for name, mark in zip(names, marks, strict=True):
        assert getattr(by_position, name) is mark, name
        assert getattr(by_name, name) is mark, name
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(by_position, names[0], None)
