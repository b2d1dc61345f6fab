"""The built-in aggregations of the query language, declared in one table.

Each :class:`Builtin` says everything the product needs to know about one ``fn`` of
``{"fn": ..., "field": ...}``: its monoid (a ``swag_core`` aggregation, or a combination of
them), its parameters, how it reads an event and treats missing values, its output type on
every engine (:mod:`adapters.query.output_types`) and which fast paths take it. Parsing
(:mod:`adapters.query.specs`), the engines' output types (``spark_adapter/_types.py``,
``flink_adapter/_types.py``), the fast paths and the table in ``docs/aggregations.md`` all
read it. A new built-in is one :func:`register` call (a fast path also needs its kernel).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from adapters.errors import QuerySpecError
from adapters.query.checks import check_int
from adapters.query.output_types import (
    BINARY,
    DOUBLE,
    INPUT,
    KEYED,
    LONG,
    WIDENED,
    ArrayOf,
    OutputType,
    StructOf,
)
from swag_core import Aggregation
from swag_core.aggregations import (
    ArgMax,
    ArgMin,
    BloomFilter,
    Collect,
    Count,
    First,
    GeometricMean,
    Last,
    Max,
    MaxCount,
    Mean,
    Min,
    MinCount,
    StdDev,
    Sum,
    Variance,
)

# ---------------------------------------------------------------- how an event is read
#: the value of ``field`` (required)
FIELD = "field"
#: the value of ``field``; without a field the aggregation sees every event (count)
FIELD_OR_EVENT = "field or event"
#: the pair ``(value of field, value of the "result" field or the whole event)``
KEYED_PAIR = "keyed pair"

# ---------------------------------------------------------------- missing-value rules
#: ``nulls="skip"``: a missing value is skipped (a window of none gives ``None``);
#: ``"error"``: the monoid refuses it as bad input
SKIP_VALUE = "skip value"
#: as :data:`SKIP_VALUE`, for the compared part of a :data:`KEYED_PAIR`
SKIP_COMPARED = "skip compared"
#: a field's missing values are not counted (``"error"``: only ``None`` is missing)
COUNT_PRESENT = "count present"

# ---------------------------------------------------------------- fast paths
#: kernel mode of the driver (``adapters/driver/kernels.py``)
KERNEL = "kernel"
#: the cross-key batch runtime (``adapters/crosskey/batch_runtime.py``)
CROSS_KEY = "cross-key"
#: the stateless OVER kernel (``adapters/crosskey/over_runtime.py``)
OVER = "over"
#: pre-slicing (``adapters/engine/presliced.py``, ``spark_adapter/_presliced.py``)
PRESLICED = "presliced"
FAST_PATHS = (KERNEL, CROSS_KEY, OVER, PRESLICED)

# ---------------------------------------------------------------- exact in the engine
#: the column kinds of :mod:`adapters.engine.presliced` (``INT``, ``LONG``) whose values an
#: engine's own aggregate (Spark's ``count``/``max``/``min``/``sum``) reduces to exactly
#: this built-in's result: integers have no NaN, no signed zero and no rounding
INTEGRAL_KINDS = frozenset({"int", "long"})
#: the "kind" of an aggregation that reads no field (``count`` of events)
NO_FIELD = "no field"


@dataclass(frozen=True)
class Param:
    """A parameter of a built-in: its default and its check ``(value, path) -> value``
    (raises :class:`QuerySpecError` naming ``path``)."""

    default: Any
    check: Callable[[Any, str], Any]
    doc: str = ""


@dataclass(frozen=True)
class Builtin:
    """One built-in aggregation fn (see the module docstring)."""

    #: the ``fn`` of the spec
    name: str
    #: the strict ``swag_core`` aggregation, called with the parsed :attr:`params`
    monoid: Callable[..., Aggregation]
    #: output type on every engine
    output: OutputType
    #: the result, for the docs
    summary: str
    params: Mapping[str, Param] = field(default_factory=dict)
    #: :data:`FIELD`, :data:`FIELD_OR_EVENT` or :data:`KEYED_PAIR`
    reads: str = FIELD
    #: :data:`SKIP_VALUE`, :data:`SKIP_COMPARED` or :data:`COUNT_PRESENT`
    missing: str = SKIP_VALUE
    #: the fast paths that take it (:data:`FAST_PATHS`)
    paths: frozenset[str] = frozenset()
    #: the input kinds (:data:`INTEGRAL_KINDS`, :data:`NO_FIELD`) on which the engine's own
    #: aggregate of the same name gives this built-in's result exactly, nulls skipped (an
    #: engine may then run the whole query as its own plan: ``adapters.planning``); never
    #: a floating kind (NaN, signed zeros, rounding order)
    engine_exact: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        if not set(self.paths) <= set(FAST_PATHS):
            raise ValueError(f"unknown fast paths {sorted(set(self.paths) - set(FAST_PATHS))}")
        if self.reads not in (FIELD, FIELD_OR_EVENT, KEYED_PAIR):
            raise ValueError(f"unknown reads {self.reads!r}")
        if self.missing not in (SKIP_VALUE, SKIP_COMPARED, COUNT_PRESENT):
            raise ValueError(f"unknown missing-value rule {self.missing!r}")

    @property
    def spec_params(self) -> frozenset[str]:
        """The keys a spec of this fn may hold besides ``fn`` and ``field``."""
        extra = {"result"} if self.reads == KEYED_PAIR else set()
        return frozenset(self.params) | extra


_TABLE: dict[str, Builtin] = {}
#: every built-in by name, in declaration order (read-only; add with :func:`register`)
BUILTINS: Mapping[str, Builtin] = MappingProxyType(_TABLE)


def register(builtin: Builtin) -> Builtin:
    """Add a built-in fn (the one registration point); its name must be new."""
    if builtin.name in _TABLE:
        raise ValueError(f"a built-in aggregation {builtin.name!r} exists already")
    _TABLE[builtin.name] = builtin
    return builtin


def unregister(name: str) -> None:
    """Remove built-in ``name`` (for tests that register one)."""
    del _TABLE[name]


def fns_taking(path: str) -> tuple[str, ...]:
    """The built-in fns that fast path ``path`` (:data:`FAST_PATHS`) takes."""
    return tuple(b.name for b in _TABLE.values() if path in b.paths)


# ---------------------------------------------------------------- monoids and params
def lowered_by(agg: Aggregation, name: str, then: Callable[[Any], Any]) -> Aggregation:
    """``agg`` whose result ``r`` becomes ``then(r)`` (``None`` stays ``None``), named
    ``name``: a built-in made of an existing monoid."""
    inner = agg.lower_fn
    return Aggregation(combine=agg.combine, identity=agg.identity, lift=agg.lift,
                       lower=lambda a: None if (r := inner(a)) is None else then(r),
                       subtract=agg.subtract, commutative=agg.commutative,
                       selective=agg.selective, name=name)


def _arg(cls: type[ArgMax] | type[ArgMin], name: str) -> Aggregation:
    # Lifted input is the pair (compared value, returned value); ties go to the oldest.
    base = cls(key=operator.itemgetter(0))
    return Aggregation(combine=base.combine, identity=base.identity, lift=base.lift,
                       lower=lambda a: None if a is None else a[1][1],
                       commutative=base.commutative, selective=True, name=name)


def _ddof(value: Any, path: str) -> int:
    if value not in (0, 1) or type(value) is bool:
        raise QuerySpecError(path, f"must be 0 (population) or 1 (sample), got {value!r}")
    return int(value)


def _at_least_one(value: Any, path: str) -> int:
    return check_int(path, value, 1)


_ALL = frozenset(FAST_PATHS)
_DDOF = {"ddof": Param(1, _ddof, "sample, or 0: population")}
_PAIR = StructOf((("value", INPUT), ("count", LONG)))
for _builtin in (
    Builtin("count", Count, LONG,
            "number of events; with `field`, of its present values (SQL `COUNT(col)`)",
            reads=FIELD_OR_EVENT, missing=COUNT_PRESENT, paths=_ALL,
            engine_exact=INTEGRAL_KINDS | {NO_FIELD}),
    Builtin("sum", Sum, WIDENED, "the sum (exact, rounded once)", paths=_ALL,
            engine_exact=INTEGRAL_KINDS),
    Builtin("mean", Mean, DOUBLE, "the mean (exact, rounded once)", paths=_ALL),
    Builtin("min", Min, INPUT, "the smallest value", paths=_ALL, engine_exact=INTEGRAL_KINDS),
    Builtin("max", Max, INPUT, "the largest value", paths=_ALL, engine_exact=INTEGRAL_KINDS),
    Builtin("argmin", lambda: _arg(ArgMin, "argmin"), KEYED,
            "the `result` field (else the whole event) of the smallest value, ties to the oldest",
            reads=KEYED_PAIR, missing=SKIP_COMPARED),
    Builtin("argmax", lambda: _arg(ArgMax, "argmax"), KEYED,
            "the `result` field (else the whole event) of the largest value, ties to the oldest",
            reads=KEYED_PAIR, missing=SKIP_COMPARED),
    Builtin("mincount", lambda: lowered_by(MinCount(), "mincount", list), _PAIR,
            "`[smallest value, its count]`"),
    Builtin("maxcount", lambda: lowered_by(MaxCount(), "maxcount", list), _PAIR,
            "`[largest value, its count]`"),
    Builtin("variance", Variance, DOUBLE, "the variance (None if count <= ddof)",
            params=_DDOF),
    Builtin("stddev", StdDev, DOUBLE, "the standard deviation (None if count <= ddof)",
            params=_DDOF),
    Builtin("geomean", GeometricMean, DOUBLE, "the geometric mean of positive numbers"),
    Builtin("first", First, INPUT, "the oldest value"),
    Builtin("last", Last, INPUT, "the newest value"),
    Builtin("collect", Collect, ArrayOf(INPUT), "the values, oldest first"),
    Builtin("bloom", BloomFilter, BINARY, "a `BloomFilterValue` of the values",
            params={"bits": Param(16384, _at_least_one, "filter bits"),
                    "hashes": Param(4, _at_least_one, "hash functions")}),
):
    register(_builtin)
del _builtin

__all__ = ["BUILTINS", "COUNT_PRESENT", "CROSS_KEY", "FAST_PATHS", "FIELD", "FIELD_OR_EVENT",
           "INTEGRAL_KINDS", "KERNEL", "KEYED_PAIR", "NO_FIELD", "OVER", "PRESLICED",
           "SKIP_COMPARED", "SKIP_VALUE",
           "Builtin", "Param", "fns_taking", "lowered_by", "register", "unregister"]
