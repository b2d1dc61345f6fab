"""Typed query specs: aggregation specs and the :class:`Query` that bundles them with the
window specs (:mod:`adapters.query.window_specs`).

A query is written either as these dataclasses or as the JSON/dict form shared with the
conformance corpus (``docs/adapters.md``); :func:`parse_query` turns the dict form into a
:class:`Query` and names the bad field in every error (``windows[1].slide: ...``). Built-in
aggregations are declared in :mod:`adapters.query.builtins`, their missing values handled by
:mod:`adapters.query.missing`. This module is the query surface the rest of the product
imports: it also exports the window specs and the missing-value helpers (``__all__``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, TypeVar

from adapters.errors import QuerySpecError
from adapters.query.adapted import aggregation_from
from adapters.query.builtins import (
    BUILTINS,
    COUNT_PRESENT,
    FIELD_OR_EVENT,
    KEYED_PAIR,
    SKIP_COMPARED,
    Builtin,
)
from adapters.query.checks import check_int
from adapters.query.missing import (
    NULL_MODES,
    check_nulls,
    count_present,
    is_missing,
    skipping_missing,
)
from adapters.query.output_types import EngineTypes, OutputType, resolve
from adapters.query.window_specs import (
    POLICY_MEASURES,
    CountWindow,
    OverWindow,
    PolicyWindow,
    SlidingWindow,
    TumblingWindow,
    WindowSpec,
    parse_window,
)
from swag_core import Aggregation, product

#: Output column names the driver itself writes; aggregations may not use them.
RESERVED_COLUMNS = frozenset({"window", "key", "start", "end", "time", "event"})
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

    @property
    def keyed(self) -> bool:
        """Whether the output's values are keyed pairs ``(compared value, result)``
        (argmin, argmax: :data:`~adapters.query.builtins.KEYED_PAIR`)."""
        builtin = BUILTINS.get(self.fn or "")
        return builtin is not None and builtin.reads == KEYED_PAIR

    @property
    def reads_event(self) -> bool:
        """Whether the output reads the whole event value (a custom aggregation; a keyed
        built-in without a ``result`` field)."""
        return self.fn is None or (self.keyed and not self.other_fields)


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


def parse_aggregation(name: str, spec: Any, path: str | None = None,
                      nulls: str = "skip") -> AggSpec:
    """One output column from its spec.

    ``spec`` is a dict ``{"fn": NAME, "field": FIELD, ...params}`` (a built-in of
    :data:`~adapters.query.builtins.BUILTINS`, see ``docs/aggregations.md``), a
    :class:`~swag_core.Aggregation` (applied to the whole event value), a
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
    return _builtin_spec(name, spec, path, nulls == "skip")


def _builtin_spec(name: str, spec: Mapping[str, Any], path: str, skip: bool) -> AggSpec:
    """The output ``name`` of the built-in dict ``spec`` (``skip``: ``nulls="skip"``)."""
    fn = spec.get("fn")
    builtin = BUILTINS.get(fn) if isinstance(fn, str) else None
    if builtin is None:
        raise QuerySpecError(f"{path}.fn", f"must be one of {', '.join(BUILTINS)}, "
                                           f"got {fn!r}")
    allowed = {"fn", "field"} | builtin.spec_params
    unknown = set(spec) - allowed
    if unknown:
        raise QuerySpecError(f"{path}.{sorted(unknown)[0]}",
                             f"unknown parameter for {fn!r} (allowed: "
                             f"{', '.join(sorted(allowed))})")
    params = {p: param.check(spec.get(p, param.default), f"{path}.{p}")
              for p, param in builtin.params.items()}
    fld = spec.get("field", _MISSING)
    if fld is _MISSING:
        if builtin.reads != FIELD_OR_EVENT:
            raise QuerySpecError(f"{path}.field", f"required for {fn!r}")
        agg = builtin.monoid(**params)
        return AggSpec(name, agg, None, None, fn, base=agg)
    if not (isinstance(fld, str) and fld):
        raise QuerySpecError(f"{path}.field", f"must be a non-empty string, got {fld!r}")
    if builtin.missing == COUNT_PRESENT:
        return AggSpec(name, count_present(skip), _optional_field_getter(fld), fld, fn,
                       skips_missing=skip)
    extract, others = _builtin_reader(builtin, fld, spec, path)
    base = builtin.monoid(**params)
    agg = base
    if skip:
        agg = skipping_missing(base, operator.itemgetter(0)
                               if builtin.missing == SKIP_COMPARED else None)
    return AggSpec(name, agg, extract, fld, fn, others, skips_missing=skip, base=base)


def _builtin_reader(builtin: Builtin, fld: str, spec: Mapping[str, Any], path: str
                    ) -> tuple[Callable[[Any], Any], tuple[str, ...]]:
    """How ``builtin`` reads an event (see :attr:`Builtin.reads`), and the fields it reads
    besides ``fld``."""
    if builtin.reads != KEYED_PAIR:
        return _field_getter(fld), ()
    result = spec.get("result", _MISSING)
    key_of = _field_getter(fld)
    if result is _MISSING:
        def extract_pair(value: Any) -> Any:
            return (key_of(value), value)
        return extract_pair, ()
    if not (isinstance(result, str) and result):
        raise QuerySpecError(f"{path}.result", f"must be a field name, got {result!r}")
    result_of = _field_getter(result)

    def extract_result(value: Any) -> Any:
        return (key_of(value), result_of(value))
    return extract_result, (result,)


def _aggregation_like(obj: Any, path: str) -> Aggregation:
    try:
        return aggregation_from(obj)
    except TypeError as exc:
        raise QuerySpecError(path, str(exc)) from None


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
        check_int("allowed_lateness", self.allowed_lateness, 0)
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
        lateness = check_int("allowed_lateness", allowed_lateness, 0)
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


T = TypeVar("T")


def output_type(spec: AggSpec, engine: EngineTypes[T], field_type: Callable[[str], T | None],
                row: T | None) -> T | None:
    """The engine type of a built-in output ``spec`` (``None``: not a built-in, or the
    engine has no type for it). ``field_type(name)`` gives an event field's type, ``row``
    the type of a whole event."""
    builtin = BUILTINS.get(spec.fn or "")
    if builtin is None:
        return None
    read, others = spec.field, spec.other_fields

    def input_type() -> T | None:
        return None if read is None else field_type(read)

    def keyed_type() -> T | None:
        return field_type(others[0]) if others else row
    return resolve(builtin.output, engine, input_type, keyed_type)


def declared_output(spec: AggSpec) -> OutputType | None:
    """The declared output type of ``spec``'s fn, ``None`` for a custom aggregation."""
    builtin = BUILTINS.get(spec.fn or "")
    return None if builtin is None else builtin.output


__all__ = [
    "LAYOUTS",
    "NULL_MODES",
    "POLICY_MEASURES",
    "RESERVED_COLUMNS",
    "AggSpec",
    "CountWindow",
    "OverWindow",
    "PolicyWindow",
    "Query",
    "SlidingWindow",
    "TumblingWindow",
    "WindowSpec",
    "aggregation_from",
    "check_nulls",
    "declared_output",
    "get_field",
    "is_missing",
    "lifted_aggregation",
    "output_type",
    "parse_aggregation",
    "parse_query",
    "parse_window",
    "plain_field",
    "skipping_missing",
]
