"""Engine-neutral output types of the built-in aggregations, and the one generic mapping onto an
engine's own types.

A built-in declares its output type (:mod:`adapters.query.builtins`) as a small expression of
these values: a fixed type (:data:`LONG`, :data:`DOUBLE`, :data:`BINARY`), the type of the
field it reads (:data:`INPUT`), the engine's sum type of it (:data:`WIDENED`: long for an
integral field, double for a floating one), an array or a struct of those, or
:data:`KEYED` (argmin/argmax: the type of the ``result`` field, else of the whole event).
Each engine implements :class:`EngineTypes` once (``spark_adapter/_types.py``,
``flink_adapter/_types.py``); :func:`resolve` does the rest.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Named:
    """A fixed type: ``"long"`` (64-bit int), ``"double"`` or ``"binary"`` (bytes)."""

    name: str


@dataclass(frozen=True)
class Input:
    """The type of the field the aggregation reads."""


@dataclass(frozen=True)
class Widened:
    """The sum type of the read field: long for an integral field, double for a floating
    one; no type for any other."""


@dataclass(frozen=True)
class Keyed:
    """argmin/argmax: the type of the ``result`` field, or of the whole event without one."""


@dataclass(frozen=True)
class ArrayOf:
    """An array of ``element``."""

    element: OutputType


@dataclass(frozen=True)
class StructOf:
    """A struct with these ``(name, type)`` fields; the lowered value is a sequence in this
    order (engines encode it by the names)."""

    fields: tuple[tuple[str, OutputType], ...]


OutputType = Named | Input | Widened | Keyed | ArrayOf | StructOf

LONG: OutputType = Named("long")
DOUBLE: OutputType = Named("double")
BINARY: OutputType = Named("binary")
INPUT: OutputType = Input()
WIDENED: OutputType = Widened()
KEYED: OutputType = Keyed()
#: the names :class:`Named` may carry (every engine maps each)
NAMED_TYPES = ("long", "double", "binary")


class EngineTypes(Protocol[T]):
    """An engine's types for :func:`resolve` (``None``: the engine has no such type)."""

    def named(self, name: str) -> T | None:
        """The engine's type of one of :data:`NAMED_TYPES`."""

    def array(self, element: T) -> T | None:
        """An array of ``element``."""

    def struct(self, fields: list[tuple[str, T]]) -> T | None:
        """A struct of these named fields."""

    def numeric(self, t: T) -> str | None:
        """``"long"`` for an integral ``t``, ``"double"`` for a floating one, else ``None``."""


def resolve(out: OutputType, engine: EngineTypes[T], input_type: Callable[[], T | None],
            keyed_type: Callable[[], T | None]) -> T | None:
    """The engine type of ``out``, or ``None`` if the engine has none. ``input_type`` and
    ``keyed_type`` give the type of the read field and of the argmin/argmax result (called
    only when ``out`` needs them)."""
    if isinstance(out, Named):
        return engine.named(out.name)
    if isinstance(out, Input):
        return input_type()
    if isinstance(out, Keyed):
        return keyed_type()
    if isinstance(out, Widened):
        field_type = input_type()
        kind = None if field_type is None else engine.numeric(field_type)
        return None if kind is None else engine.named(kind)
    if isinstance(out, ArrayOf):
        element = resolve(out.element, engine, input_type, keyed_type)
        return None if element is None else engine.array(element)
    fields = [(name, resolve(t, engine, input_type, keyed_type)) for name, t in out.fields]
    if any(t is None for _, t in fields):
        return None
    return engine.struct([(name, t) for name, t in fields if t is not None])


def describe(out: OutputType) -> str:
    """``out`` as text, for the docs: ``long``, ``array<input>``, ``struct<value: input,
    count: long>``..."""
    if isinstance(out, Named):
        return out.name
    if isinstance(out, ArrayOf):
        return f"array<{describe(out.element)}>"
    if isinstance(out, StructOf):
        return "struct<" + ", ".join(f"{n}: {describe(t)}" for n, t in out.fields) + ">"
    return {Input: "input", Widened: "long or double (input's)",
            Keyed: "result field's or event's"}[type(out)]
