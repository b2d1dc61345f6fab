"""Typed query specs: window kinds, aggregation specs and the :class:`Query` that bundles them.

A query is written either as these dataclasses or as the JSON/dict form shared with the
conformance corpus (``docs/adapters.md``); :func:`parse_query` turns the dict form into a
:class:`Query` and names the bad field in every error (``windows[1].slide: ...``).
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
import math
import numbers
import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Final

from adapters.errors import QuerySpecError
from swag_core import Aggregation, product
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
from swag_core.errors import InvalidValueError
from swag_core.exact import sum_value, value_count

#: Output column names the driver itself writes; aggregations may not use them.
RESERVED_COLUMNS = frozenset({"window", "key", "start", "end", "time", "event"})


def _check_int(path: str, value: Any, minimum: int | None = None) -> int:
    if type(value) is bool or not isinstance(value, int):
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        else:
            raise QuerySpecError(path, f"must be an integer (milliseconds or a count), "
                                       f"got {value!r}")
    if minimum is not None and value < minimum:
        raise QuerySpecError(path, f"must be >= {minimum}, got {value!r}")
    return int(value)


# =====================================================================================
# window specs
# =====================================================================================
@dataclass(frozen=True)
class SlidingWindow:
    """Event-time windows ``[start, start + range)`` with ``start = offset + j * slide``.

    As in Spark, Beam and Flink; ``range % slide`` need not be 0 but ``range >= slide > 0``.
    A window with no events emits nothing. Rows: ``{"window", "key", "start", "end", ...}``.
    """

    range: int
    slide: int
    offset: int = 0

    def __post_init__(self) -> None:
        _check_int("range", self.range, 1)
        _check_int("slide", self.slide, 1)
        _check_int("offset", self.offset)
        if self.slide > self.range:
            raise QuerySpecError("slide", f"must not exceed range ({self.range}), got "
                                          f"{self.slide}: windows would leave gaps")

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "sliding", "range": self.range, "slide": self.slide,
                "offset": self.offset}


def TumblingWindow(size: int, offset: int = 0) -> SlidingWindow:
    """Tumbling windows ``[offset + j * size, offset + (j + 1) * size)``: sliding with
    ``slide == range``."""
    _check_int("size", size, 1)
    return SlidingWindow(size, size, offset)


@dataclass(frozen=True)
class OverWindow:
    """Per-event window (SQL ``RANGE BETWEEN range PRECEDING AND CURRENT ROW``).

    For each non-late event at time t: the aggregate over the key's non-late events with time
    in ``[t - range, t]``, peers at equal time included. Rows:
    ``{"window", "key", "time", "event", ...}``, one per event.
    """

    range: int

    def __post_init__(self) -> None:
        _check_int("range", self.range, 0)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "over", "range": self.range}


@dataclass(frozen=True)
class CountWindow:
    """The last ``size`` events, emitted every ``every`` events.

    The key's non-late events in order (time, ties in arrival order); after the k-th event,
    if ``k % every == 0``, the aggregate over the last ``min(size, k)`` events. Rows:
    ``{"window", "key", "start": oldest time, "end": newest time + 1, ...}``.
    """

    size: int
    every: int = 1

    def __post_init__(self) -> None:
        _check_int("size", self.size, 1)
        _check_int("every", self.every, 1)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "count", "size": self.size, "every": self.every}


#: Measures of the declarative slide policy.
POLICY_MEASURES = ("count", "span", "sum")


@dataclass(frozen=True)
class PolicyWindow:
    """The Monoid Tree Aggregator's window slide policy (MTA paper, sections 3 and 4.1.3) as a
    window kind.

    After each non-late event of the key (in time order, ties in arrival order) the window
    drops its longest prefix that the policy marks for eviction; the newest event always
    stays. Every ``every`` events a row is emitted:
    ``{"window", "key", "start": oldest time, "end": newest time + 1, ...}``.

    Declarative form (``measure`` one of ``"count"``, ``"span"``, ``"sum"``): the window after
    the k-th event is the **longest run of the newest events whose measure is <= limit**, or
    the k-th event alone if even that exceeds ``limit``:

    * ``count``: number of events (the same windows as ``CountWindow(limit)``);
    * ``span``: ``newest time - oldest time`` (MTA paper Listing 1);
    * ``sum``: sum of the non-negative number ``field`` (the paper's running example, "keep
      the newest updates whose sum is <= 10"), compared exactly (floats as fractions).

    Programmable form: ``rule(total, prefix) -> bool`` with ``measure`` an
    :class:`~swag_core.Aggregation` lifted from ``(time, value)`` pairs. ``rule`` gets the raw
    (un-lowered) measure aggregate of the whole window and of a candidate prefix and says
    whether the prefix must go; it must be prefix-monotone (true for a prefix implies true for
    every shorter one). The driver never evicts the newest event whatever ``rule`` says.
    """

    measure: str | Aggregation
    limit: int | float | None = None
    field: str | None = None
    every: int = 1
    rule: Callable[[Any, Any], bool] | None = None

    def __post_init__(self) -> None:
        _check_int("every", self.every, 1)
        if self.rule is not None:
            if not callable(self.rule):
                raise QuerySpecError("rule", f"must be callable, got {self.rule!r}")
            if not isinstance(self.measure, Aggregation):
                raise QuerySpecError("measure", "a programmable policy (rule=...) needs a "
                                                "swag_core.Aggregation as measure")
            return
        if self.measure not in POLICY_MEASURES:
            raise QuerySpecError("measure", f"must be one of {', '.join(POLICY_MEASURES)} "
                                            f"(or an Aggregation with rule=...), got "
                                            f"{self.measure!r}")
        limit = self.limit
        if type(limit) is bool or not isinstance(limit, (int, float)) or not (
                math.isfinite(limit) and limit >= 0):
            raise QuerySpecError("limit", f"must be a finite number >= 0, got {limit!r}")
        if self.measure == "sum":
            if not isinstance(self.field, str):
                raise QuerySpecError("field", "the 'sum' measure needs the name of a "
                                              "numeric field")
        elif self.field is not None:
            raise QuerySpecError("field", f"the {self.measure!r} measure takes no field")

    def to_dict(self) -> dict[str, Any]:
        if self.rule is not None:
            assert isinstance(self.measure, Aggregation)
            return {"kind": "policy", "measure": f"custom:{self.measure.name}",
                    "rule": getattr(self.rule, "__qualname__", repr(self.rule)),
                    "every": self.every}
        d: dict[str, Any] = {"kind": "policy", "measure": self.measure, "limit": self.limit,
                             "every": self.every}
        if self.field is not None:
            d["field"] = self.field
        return d


WindowSpec = SlidingWindow | OverWindow | CountWindow | PolicyWindow

_WINDOW_FIELDS: dict[str, tuple[set[str], set[str]]] = {
    # kind: (required, optional)
    "sliding": ({"range", "slide"}, {"offset"}),
    "tumbling": ({"size"}, {"offset"}),
    "over": ({"range"}, set()),
    "count": ({"size"}, {"every"}),
    "policy": ({"measure", "limit"}, {"field", "every"}),
}


def parse_window(spec: Any, path: str = "window") -> WindowSpec:
    """A window spec from its dict form (or a spec object, returned as is)."""
    if isinstance(spec, (SlidingWindow, OverWindow, CountWindow, PolicyWindow)):
        return spec
    if not isinstance(spec, Mapping):
        raise QuerySpecError(path, f"must be a window spec object or dict, got {spec!r}")
    kind = spec.get("kind")
    if kind not in _WINDOW_FIELDS:
        raise QuerySpecError(f"{path}.kind", f"must be one of {', '.join(_WINDOW_FIELDS)}, "
                                             f"got {kind!r}")
    required, optional = _WINDOW_FIELDS[kind]
    given = set(spec) - {"kind"}
    missing = required - given
    if missing:
        raise QuerySpecError(f"{path}.{sorted(missing)[0]}", f"required for a {kind} window")
    unknown = given - required - optional
    if unknown:
        raise QuerySpecError(f"{path}.{sorted(unknown)[0]}",
                             f"unknown field for a {kind} window (fields: "
                             f"{', '.join(sorted(required | optional))})")
    try:
        if kind == "sliding":
            return SlidingWindow(spec["range"], spec["slide"], spec.get("offset", 0))
        if kind == "tumbling":
            return TumblingWindow(spec["size"], spec.get("offset", 0))
        if kind == "over":
            return OverWindow(spec["range"])
        if kind == "count":
            return CountWindow(spec["size"], spec.get("every", 1))
        return PolicyWindow(measure=spec["measure"], limit=spec["limit"],
                            field=spec.get("field"), every=spec.get("every", 1))
    except QuerySpecError as exc:
        raise QuerySpecError(f"{path}.{exc.path}", str(exc)[len(exc.path) + 2:]) from None


# =====================================================================================
# aggregation specs
# =====================================================================================
_MISSING = object()


@dataclass(frozen=True)
class AggSpec:
    """One output column: ``aggregation`` applied to ``extract(event value)``.

    ``field`` names the event field read (for error messages; ``None`` when the aggregation
    sees the whole event value). Build with :func:`parse_aggregation`.
    """

    name: str
    aggregation: Aggregation
    extract: Callable[[Any], Any] | None = None
    field: str | None = None
    fn: str | None = None
    #: Extra fields read by the extractor (argmax ``result``), for error messages.
    other_fields: tuple[str, ...] = ()
    #: A built-in that skips missing values (``nulls="skip"``): ``aggregation`` is
    #: :func:`skipping_missing` of ``base``, the ``swag_core`` built-in itself.
    skips_missing: bool = False
    #: The ``swag_core`` built-in of a built-in fn (before null handling), else ``None``.
    base: Aggregation | None = None
    #: What the output computes, as text (the spec's fn, field, parameters and null mode; the
    #: class of a custom aggregation): state holding its partials is checked against it.
    source: str = ""


def get_field(value: Any, name: str) -> Any:
    """``value[name]`` for mappings (dicts, pandas rows, Spark Rows), else ``getattr``; raises
    ``KeyError(name)`` when the field is missing."""
    try:
        return value[name]
    except KeyError:
        raise KeyError(name) from None
    except (TypeError, IndexError):
        try:
            return getattr(value, name)
        except AttributeError:
            raise KeyError(name) from None


#: The attribute that marks an extractor built by :func:`_field_getter`: ``(name, the
#: extractor itself)``. An attribute, not a registry of this process, so that the mark travels
#: with the function when an engine pickles the query to its workers (Spark, Beam and Flink
#: ship the parsed query; a process-local registry left every unpickled extractor unmarked,
#: which silently took the kernels, and with them the cross-key runtime, away on every
#: worker). The self-reference keeps a wrapper that copies ``__dict__``
#: (``functools.wraps``) from passing for the plain reader it wraps.
_PLAIN_MARK = "_swag_plain_field"


def plain_field(extract: Callable[[Any], Any] | None) -> str | None:
    """The field name if ``extract`` is a plain field reader built by this module (it returns
    ``value[name]`` whenever that succeeds), else ``None``."""
    mark = getattr(extract, _PLAIN_MARK, None)
    if type(mark) is tuple and len(mark) == 2 and mark[1] is extract \
            and type(mark[0]) is str:
        return mark[0]
    return None


def _field_getter(name: str) -> Callable[[Any], Any]:
    def extract(value: Any) -> Any:
        if type(value) is dict:
            return value[name]
        return get_field(value, name)
    setattr(extract, _PLAIN_MARK, (name, extract))
    return extract


def _optional_field_getter(name: str) -> Callable[[Any], Any]:
    def extract(value: Any) -> Any:
        try:
            return get_field(value, name)
        except KeyError:
            return None
    return extract


#: How built-in aggregations treat missing values (``None``, NaN): ``"skip"`` ignores them
#: (SQL and pandas); ``"error"`` refuses them with :class:`~adapters.errors.BadEventError`.
NULL_MODES = ("skip", "error")


def check_nulls(value: Any, path: str = "nulls") -> str:
    """``value`` if it is a null mode (:data:`NULL_MODES`), else :class:`QuerySpecError`."""
    if value not in NULL_MODES:
        raise QuerySpecError(path, f"must be one of {', '.join(map(repr, NULL_MODES))} "
                                   f"(how built-in aggregations treat null and NaN values), "
                                   f"got {value!r}")
    return str(value)


def is_missing(x: Any) -> bool:
    """True for a missing value: ``None``, or a NaN number (``float``, NumPy or ``Decimal``
    NaN). Any other value, containers included, is present."""
    if x is None:
        return True
    if type(x) is float:
        return x != x
    if isinstance(x, (int, str)):
        return False
    if isinstance(x, numbers.Number):
        try:
            return bool(x != x)
        except (TypeError, ValueError, ArithmeticError):  # Decimal('sNaN') != x signals
            is_nan = getattr(x, "is_nan", None)
            return bool(is_nan()) if callable(is_nan) else False
    return False


def skipping_missing(agg: Aggregation, key: Callable[[Any], Any] | None = None
                     ) -> Aggregation:
    """``agg`` that ignores missing values (:func:`is_missing` of the raw value, or of
    ``key(raw value)``): SQL's rule for aggregate functions. A window whose values are all
    missing gives ``None``.

    A missing value lifts to a neutral element, so only the lift changes: when ``agg``
    lowers its identity to ``None`` (max, mean, variance, first, ...: "nothing seen") the
    neutral element is that identity, and ``combine``, ``subtract`` and ``lower`` are
    ``agg``'s own; a sum's partial counts its values, so it lowers to ``None`` at a count of
    0 and keeps the rest. Otherwise (collect, bloom) the lifted values gain ``None`` as a new
    identity, "no value seen", which ``combine`` passes over and ``lower`` keeps; ``agg``'s
    lifted values are never ``None`` there, so nothing is mistaken for it. That monoid has
    no inverse (evicting the last present value cannot tell an empty collection from
    "none"), so it drops ``subtract``."""
    inner_lift = agg.lift_fn
    empty_is_none = agg.lower_fn(agg.identity) is None
    # Sum's exact partial counts its values (swag_core.exact): "no value" is a count of 0,
    # so a missing value lifts to the identity and the sum keeps its combine and inverse.
    counts_values = isinstance(agg, Sum)
    neutral = agg.identity if empty_is_none or counts_values else None

    lift: Callable[[Any], Any]
    of = key if key is not None else (lambda x: x)
    if _refuses_missing(inner_lift, key):
        # The common case costs one call more: the built-in's own checks find the rare
        # missing value, which this lift then takes back.
        def lift(x: Any) -> Any:
            try:
                return inner_lift(x)
            except InvalidValueError:
                if is_missing(of(x)):
                    return neutral
                raise
    elif key is not None:
        def lift(x: Any) -> Any:
            return neutral if is_missing(of(x)) else inner_lift(x)
    else:  # first, last, collect, bloom: any value is one to them
        def lift(x: Any) -> Any:
            t = type(x)
            if t is float:
                if x != x:
                    return neutral
            elif x is None or (t is not int and t is not str and is_missing(x)):
                return neutral
            return inner_lift(x)
    if empty_is_none:
        return Aggregation(combine=agg.combine, identity=agg.identity, lift=lift,
                           lower=agg.lower, subtract=agg.subtract,
                           commutative=agg.commutative, selective=agg.selective,
                           name=agg.name)
    if counts_values:
        return Aggregation(combine=agg.combine, identity=agg.identity, lift=lift,
                           lower=_sum_of_values, subtract=agg.subtract,
                           commutative=agg.commutative, name=agg.name)
    combine, inner_lower = agg.combine, agg.lower_fn

    def option_combine(a: Any, b: Any) -> Any:
        if a is None:
            return b
        if b is None:
            return a
        return combine(a, b)

    def option_lower(a: Any) -> Any:
        return None if a is None else inner_lower(a)

    return Aggregation(combine=option_combine, identity=None, lift=lift, lower=option_lower,
                       commutative=agg.commutative, selective=agg.selective, name=agg.name)


def _sum_of_values(partial: int) -> Any:
    """A skipping sum's lower: ``None`` when the window holds no value."""
    return sum_value(partial) if value_count(partial) else None


def _refuses_missing(lift: Callable[[Any], Any], key: Callable[[Any], Any] | None) -> bool:
    """Whether ``lift`` raises :class:`InvalidValueError` for ``None`` and NaN (as the value,
    or, with ``key``, as the compared part of an argmin/argmax pair)."""
    for x in (None, math.nan):
        try:
            lift(x if key is None else (x, x))
        except InvalidValueError:
            continue
        return False
    return True


def _count_non_null(skip: bool = False) -> Aggregation:
    missing: Callable[[Any], bool] = is_missing if skip else (lambda x: x is None)
    return Aggregation(combine=operator.add, identity=0,
                       lift=lambda x: 0 if missing(x) else 1, subtract=operator.sub,
                       commutative=True, name="count")


def _listify(agg: Aggregation, name: str) -> Aggregation:
    """``agg`` whose lowered tuple result is returned as a JSON-style list."""
    inner = agg.lower_fn
    return Aggregation(combine=agg.combine, identity=agg.identity, lift=agg.lift,
                       lower=lambda a: None if (r := inner(a)) is None else list(r),
                       subtract=agg.subtract, commutative=agg.commutative,
                       selective=agg.selective, name=name)


def _arg_aggregation(fn: str) -> Aggregation:
    # Lifted input is the pair (compared value, returned value); ties go to the oldest.
    base = (ArgMax if fn == "argmax" else ArgMin)(key=operator.itemgetter(0))
    return Aggregation(combine=base.combine, identity=base.identity, lift=base.lift,
                       lower=lambda a: None if a is None else a[1][1],
                       commutative=base.commutative, selective=True, name=fn)


_SIMPLE_FNS: dict[str, Callable[[], Aggregation]] = {
    "sum": Sum, "mean": Mean, "min": Min, "max": Max, "geomean": GeometricMean,
    "first": First, "last": Last, "collect": Collect,
}
AGGREGATION_FNS = ("count", "sum", "mean", "min", "max", "argmin", "argmax", "mincount",
                   "maxcount", "variance", "stddev", "geomean", "first", "last", "collect",
                   "bloom")
_FN_PARAMS: dict[str, set[str]] = {fn: set() for fn in AGGREGATION_FNS}
_FN_PARAMS.update({"argmin": {"result"}, "argmax": {"result"}, "variance": {"ddof"},
                   "stddev": {"ddof"}, "bloom": {"bits", "hashes"}})


def parse_aggregation(name: str, spec: Any, path: str | None = None,
                      nulls: str = "skip") -> AggSpec:
    """One output column from its spec.

    ``spec`` is a dict ``{"fn": NAME, "field": FIELD, ...params}`` (see ``docs/adapters.md``),
    a :class:`~swag_core.Aggregation` (applied to the whole event value), a
    Beam-``CombineFn``-like or Flink-``AggregateFunction``-like object (wrapped by
    :func:`aggregation_from`), or a pair ``(field, aggregation-like)``.

    ``nulls`` (:data:`NULL_MODES`): with ``"skip"`` a built-in fn of a field ignores missing
    values (``None``, NaN; argmin/argmax: a missing compared field) and gives ``None`` when
    a window has no other; ``count`` of a field counts the present values. With
    ``"error"`` a missing value is bad input, as ``swag_core``'s built-ins refuse it
    (``count`` of a field then counts values that are not ``None``). Custom aggregations
    always receive the values as they are.
    """
    path = path if path is not None else f"aggregations.{name}"
    check_nulls(nulls)
    if isinstance(spec, AggSpec):
        return _parse_aggregation(name, spec, path, nulls)
    return dataclasses.replace(_parse_aggregation(name, spec, path, nulls),
                               source=_source(spec, nulls))


def _source(spec: Any, nulls: str) -> str:
    """:attr:`AggSpec.source` of a spec (see :func:`parse_aggregation`)."""
    def kind(obj: Any) -> str:
        return f"{type(obj).__module__}.{type(obj).__qualname__}"

    if isinstance(spec, Mapping):
        return json.dumps({**spec, "nulls": nulls}, sort_keys=True, default=kind)
    if isinstance(spec, tuple) and len(spec) == 2:
        return json.dumps([spec[0], kind(spec[1])])
    return kind(spec)


def _parse_aggregation(name: str, spec: Any, path: str, nulls: str) -> AggSpec:
    """:func:`parse_aggregation` without :attr:`AggSpec.source`."""
    if not isinstance(name, str) or not name:
        raise QuerySpecError(path, f"output names must be non-empty strings, got {name!r}")
    if name in RESERVED_COLUMNS:
        raise QuerySpecError(path, f"{name!r} is a reserved output column "
                                   f"({', '.join(sorted(RESERVED_COLUMNS))})")
    if isinstance(spec, AggSpec):
        return dataclasses.replace(spec, name=name)
    if isinstance(spec, tuple) and len(spec) == 2 and isinstance(spec[0], str):
        agg = _aggregation_like(spec[1], f"{path}[1]")
        return AggSpec(name, agg, _field_getter(spec[0]), spec[0])
    if not isinstance(spec, Mapping):
        return AggSpec(name, _aggregation_like(spec, path))
    fn = spec.get("fn")
    if fn not in _FN_PARAMS:
        raise QuerySpecError(f"{path}.fn", f"must be one of {', '.join(AGGREGATION_FNS)}, "
                                           f"got {fn!r}")
    allowed = {"fn", "field"} | _FN_PARAMS[fn]
    unknown = set(spec) - allowed
    if unknown:
        raise QuerySpecError(f"{path}.{sorted(unknown)[0]}",
                             f"unknown parameter for {fn!r} (allowed: "
                             f"{', '.join(sorted(allowed))})")
    fld = spec.get("field", _MISSING)
    if fld is not _MISSING and not (isinstance(fld, str) and fld):
        raise QuerySpecError(f"{path}.field", f"must be a non-empty string, got {fld!r}")
    skip = nulls == "skip"
    if fn == "count":
        if fld is _MISSING:
            return AggSpec(name, Count(), None, None, fn, base=Count())
        assert isinstance(fld, str)
        return AggSpec(name, _count_non_null(skip), _optional_field_getter(fld), fld, fn,
                       skips_missing=skip)
    if fld is _MISSING:
        raise QuerySpecError(f"{path}.field", f"required for {fn!r}")
    assert isinstance(fld, str)
    built = _builtin(fn, fld, spec, path)
    agg = built.aggregation
    if skip:
        key = operator.itemgetter(0) if fn in ("argmin", "argmax") else None
        agg = skipping_missing(agg, key)
    return dataclasses.replace(built, name=name, aggregation=agg, skips_missing=skip,
                               base=built.aggregation)


def _builtin(fn: str, fld: str, spec: Mapping[str, Any], path: str) -> AggSpec:
    """The output of built-in ``fn`` (not ``count``) of field ``fld`` with ``swag_core``'s
    strict aggregation (its name is set by the caller)."""
    if fn in _SIMPLE_FNS:
        return AggSpec("", _SIMPLE_FNS[fn](), _field_getter(fld), fld, fn)
    if fn in ("mincount", "maxcount"):
        base = MinCount() if fn == "mincount" else MaxCount()
        return AggSpec("", _listify(base, fn), _field_getter(fld), fld, fn)
    if fn in ("variance", "stddev"):
        ddof = spec.get("ddof", 1)
        if ddof not in (0, 1) or type(ddof) is bool:
            raise QuerySpecError(f"{path}.ddof", f"must be 0 (population) or 1 (sample), "
                                                 f"got {ddof!r}")
        return AggSpec("", (Variance if fn == "variance" else StdDev)(ddof),
                       _field_getter(fld), fld, fn)
    if fn == "bloom":
        bits = _check_int(f"{path}.bits", spec.get("bits", 16384), 1)
        hashes = _check_int(f"{path}.hashes", spec.get("hashes", 4), 1)
        return AggSpec("", BloomFilter(bits, hashes), _field_getter(fld), fld, fn)
    # argmin / argmax
    result = spec.get("result", _MISSING)
    key_of = _field_getter(fld)
    if result is _MISSING:
        def extract_pair(value: Any) -> Any:
            return (key_of(value), value)
        return AggSpec("", _arg_aggregation(fn), extract_pair, fld, fn)
    if not (isinstance(result, str) and result):
        raise QuerySpecError(f"{path}.result", f"must be a field name, got {result!r}")
    result_of = _field_getter(result)

    def extract_result(value: Any) -> Any:
        return (key_of(value), result_of(value))
    return AggSpec("", _arg_aggregation(fn), extract_result, fld, fn, (result,))


def _aggregation_like(obj: Any, path: str) -> Aggregation:
    try:
        return aggregation_from(obj)
    except TypeError as exc:
        raise QuerySpecError(path, str(exc)) from None


def aggregation_from(obj: Any, *, name: str | None = None, commutative: bool = False,
                     mutates: bool = True) -> Aggregation:
    """A :class:`~swag_core.Aggregation` from an aggregation-like object.

    Accepted:

    * a :class:`~swag_core.Aggregation` (returned as is);
    * a Beam ``CombineFn``-like object: ``create_accumulator()``, ``add_input(acc, x)``,
      ``merge_accumulators(accs)``, ``extract_output(acc)``;
    * a Flink ``AggregateFunction``-like object: ``create_accumulator()``,
      ``add(x, acc)``, ``merge(a, b)``, ``get_result(acc)``.

    The wrapped ``merge`` **must be associative** (merging ``a`` with ``b`` then ``c`` equals
    ``a`` with ``b``-and-``c``) and ``create_accumulator()`` must be its identity; it need not
    be commutative: ``a`` is always the older part of the window. Declare
    ``commutative=True`` if it is. Structures share accumulators, so the wrapper never lets the
    user code mutate one it did not create: Beam's contract allows mutating only the *first*
    accumulator of ``merge_accumulators``, so a fresh one is put first; Flink's ``merge`` may
    reuse either argument, so both are deep-copied unless ``mutates=False`` promises that
    ``merge`` and ``add`` return new objects.
    """
    if isinstance(obj, Aggregation):
        return obj
    create = getattr(obj, "create_accumulator", None)
    if create is None or not callable(create):
        raise TypeError(f"expected a swag_core.Aggregation, a Beam CombineFn-like object "
                        f"(create_accumulator/add_input/merge_accumulators/extract_output) or "
                        f"a Flink AggregateFunction-like object "
                        f"(create_accumulator/add/merge/get_result), got {obj!r}")
    label = name or getattr(obj, "__name__", None) or type(obj).__name__
    identity = create()
    if all(callable(getattr(obj, m, None)) for m in
           ("add_input", "merge_accumulators", "extract_output")):
        add_input, merge_accs = obj.add_input, obj.merge_accumulators
        extract_output = obj.extract_output

        def beam_lift(x: Any) -> Any:
            return add_input(create(), x)

        def beam_combine(a: Any, b: Any) -> Any:
            # Only the first accumulator may be mutated (Beam CombineFn contract): a fresh one.
            return merge_accs([create(), a, b])

        def beam_lower(a: Any) -> Any:
            return extract_output(copy.deepcopy(a) if mutates else a)

        return Aggregation(combine=beam_combine, identity=identity, lift=beam_lift,
                           lower=beam_lower, commutative=commutative, name=label)
    if all(callable(getattr(obj, m, None)) for m in ("add", "merge", "get_result")):
        add, merge, get_result = obj.add, obj.merge, obj.get_result
        dup = copy.deepcopy if mutates else (lambda a: a)

        def flink_lift(x: Any) -> Any:
            return add(x, create())

        def flink_combine(a: Any, b: Any) -> Any:
            return merge(dup(a), dup(b))

        def flink_lower(a: Any) -> Any:
            return get_result(dup(a))

        return Aggregation(combine=flink_combine, identity=identity, lift=flink_lift,
                           lower=flink_lower, commutative=commutative, name=label)
    raise TypeError(f"{obj!r} has create_accumulator but neither the Beam CombineFn methods "
                    f"(add_input, merge_accumulators, extract_output) nor the Flink "
                    f"AggregateFunction methods (add, merge, get_result)")


# =====================================================================================
# policy measures (declarative form)
# =====================================================================================
def exact_number(x: Any) -> int | Fraction:
    """``x`` as an exact number (``int`` or ``Fraction``), refusing bools, NaN and infinities."""
    if type(x) is int:
        return x
    if type(x) is bool or x is None:
        raise InvalidValueError(f"needs a number, got {x!r}")
    if isinstance(x, int):
        return int(x)
    if isinstance(x, float):
        if not math.isfinite(x):
            raise InvalidValueError(f"needs a finite number, got {x!r}")
        return Fraction(x)
    try:
        return Fraction(x)
    except (TypeError, ValueError):
        raise InvalidValueError(f"needs a number, got {x!r} ({type(x).__name__})") from None


# =====================================================================================
# the query
# =====================================================================================
#: the values of :attr:`Query.layout`
LAYOUTS: Final = ("auto", "memory", "kvs")


@dataclass(frozen=True)
class Query:
    """Window specs, output aggregations and the allowed lateness of one stateful query.

    All window specs share the aggregations: every row carries every output column. Several
    window specs share one structure per key (see ``docs/adapters.md``).

    Args:
        windows: window specs (row field ``"window"`` is the index into this list).
        aggregations: output columns, in order.
        allowed_lateness: L in ms: an event with ``time < watermark - L`` is late; windows
            are emitted once ``watermark - L`` passes them, so results stay final.
        algorithm: force a ``swag_core`` algorithm by name (default: automatic, see
            :func:`adapters.driver.selection.choose_algorithm`).
        nulls: how the built-in aggregations of :meth:`build` treat missing values
            (``None``, NaN): ``"skip"`` (default, SQL and pandas) or ``"error"``
            (:func:`parse_aggregation`). Recorded here; the outputs carry it.
        layout: where the per-event (OVER) structures of a key live (:data:`LAYOUTS`;
            ``docs/adapters.md``, "KVS layout"): ``"memory"`` (in process memory, rebuilt
            from the event log on a cache miss), ``"kvs"`` (the MTA paper's KVS layout in the
            key's engine map state, O(log n) in memory, where the state offers a pair map) or
            ``"auto"`` (default: ``"kvs"`` for a key once its structure is large, see
            :data:`adapters.driver.kvs_lanes.AUTO_MIN_ENTRIES`).
    """

    windows: tuple[WindowSpec, ...]
    aggregations: tuple[AggSpec, ...]
    allowed_lateness: int = 0
    algorithm: str | None = None
    nulls: str = "skip"
    layout: str = "auto"
    _fingerprint: str = field(default="", compare=False, repr=False)

    def __post_init__(self) -> None:
        if not self.windows:
            raise QuerySpecError("windows", "at least one window spec is required")
        if not self.aggregations:
            raise QuerySpecError("aggregations", "at least one aggregation is required")
        names = [a.name for a in self.aggregations]
        if len(set(names)) != len(names):
            raise QuerySpecError("aggregations", f"duplicate output names in {names}")
        _check_int("allowed_lateness", self.allowed_lateness, 0)
        check_nulls(self.nulls)
        if self.layout not in LAYOUTS:
            raise QuerySpecError("layout", f"must be one of {', '.join(LAYOUTS)}, got "
                                           f"{self.layout!r}")
        if self.algorithm is not None and not isinstance(self.algorithm, str):
            raise QuerySpecError("algorithm", f"must be an algorithm name, got "
                                              f"{self.algorithm!r}")
        canonical = json.dumps({"windows": [w.to_dict() for w in self.windows],
                                "allowed_lateness": self.allowed_lateness},
                               sort_keys=True, default=str)
        object.__setattr__(self, "_fingerprint",
                           hashlib.blake2b(canonical.encode(), digest_size=8).hexdigest())

    @property
    def fingerprint(self) -> str:
        """Hash of what the stored state depends on (windows and lateness, not aggregations:
        the state keeps raw events, so aggregations may change across a restart)."""
        return self._fingerprint

    @classmethod
    def build(cls, windows: Sequence[Any] | Any, aggregations: Mapping[str, Any] | Any,
              allowed_lateness: int = 0, algorithm: str | None = None,
              nulls: str = "skip", layout: str = "auto") -> Query:
        """A query from window specs (objects or dicts; one spec alone is fine) and a mapping
        ``{output name: aggregation spec}`` (or a single Aggregation-like, named after it);
        ``nulls`` applies to the built-in aggregations given as dicts."""
        check_nulls(nulls)
        if isinstance(windows, (Mapping, SlidingWindow, OverWindow, CountWindow,
                                PolicyWindow)):
            windows = [windows]
        if not isinstance(windows, Sequence) or isinstance(windows, str):
            raise QuerySpecError("windows", f"must be a list of window specs, got {windows!r}")
        parsed_windows = tuple(parse_window(w, f"windows[{i}]") for i, w in enumerate(windows))
        if not isinstance(aggregations, Mapping):
            agg = _aggregation_like(aggregations, "aggregations")
            aggregations = {agg.name: agg}
        parsed_aggs = tuple(parse_aggregation(n, s, nulls=nulls)
                            for n, s in aggregations.items())
        lateness = _check_int("allowed_lateness", allowed_lateness, 0)
        return cls(parsed_windows, parsed_aggs, lateness, algorithm, nulls, layout)


def parse_query(spec: Any) -> Query:
    """A :class:`Query` from its dict form ``{"windows": [...], "aggregations": {...},
    "allowed_lateness": 0, "algorithm": null, "nulls": "skip", "layout": "auto"}`` (a
    :class:`Query` is returned as is)."""
    if isinstance(spec, Query):
        return spec
    if not isinstance(spec, Mapping):
        raise QuerySpecError("query", f"must be a dict or a Query, got {spec!r}")
    unknown = set(spec) - {"windows", "aggregations", "allowed_lateness", "algorithm",
                           "nulls", "layout"}
    if unknown:
        raise QuerySpecError(sorted(unknown)[0], "unknown query field (fields: windows, "
                                                 "aggregations, allowed_lateness, algorithm, "
                                                 "nulls, layout)")
    if "windows" not in spec:
        raise QuerySpecError("windows", "required")
    if "aggregations" not in spec:
        raise QuerySpecError("aggregations", "required")
    if not isinstance(spec["aggregations"], Mapping):
        raise QuerySpecError("aggregations", "must be an object {output name: spec}")
    return Query.build(spec["windows"], spec["aggregations"],
                       spec.get("allowed_lateness", 0), spec.get("algorithm"),
                       spec.get("nulls", "skip"), spec.get("layout", "auto"))


def lifted_aggregation(specs: tuple[AggSpec, ...]) -> Aggregation:
    """The aggregation the driver's structures maintain: all outputs as one product, over
    values that are already lifted (no lift). ``lower`` gives the single output's result, or
    ``{output name: result}`` for several."""
    if len(specs) == 1:
        agg = specs[0].aggregation
        return Aggregation(
            combine=agg.combine, identity=agg.identity, lower=agg.lower,
            subtract=agg.subtract, commutative=agg.commutative, selective=agg.selective,
            name=agg.name)
    prod = product({s.name: s.aggregation for s in specs})
    return Aggregation(
        combine=prod.combine, identity=prod.identity, lower=prod.lower,
        subtract=prod.subtract, commutative=prod.commutative, name=prod.name)
