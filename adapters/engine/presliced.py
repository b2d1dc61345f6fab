"""A batch query rewritten to run over per-slice partial aggregates (engine-free).

General stream slicing (Traub et al., "Efficient Window Aggregation with General Stream Slicing",
EDBT 2019; :mod:`adapters.driver.time_lane`) cuts time into slices of width ``g = gcd(ranges,
slides, offset differences)`` (:func:`adapters.driver.time_lane.slice_grid`); every sliding or
tumbling window is a union of whole slices. So an engine may aggregate each ``(key, slice)`` once
and hand the driver one event per non-empty ``(key, slice)``, at the slice's start, whose value
holds the partials named by :func:`partial_field`:

* ``partial_field("count", None)``: the slice's event count (``count(*)``);
* ``partial_field("max" | "min" | "sum", field)``: the slice's max, min or sum of ``field``;
* ``partial_field("mean", field)``: the pair ``(sum of field, count of its values)``; the sum
  must be exact (an ``int``, or a float the engine added exactly);
* for a field of ``exact_fields`` (:func:`sliced_query`), ``sum`` and ``mean`` partials are
  instead the output's own exact partial (:mod:`swag_core.exact`), which an engine builds from
  integers when it cannot add the field's floats exactly.

With ``nulls="skip"`` (:attr:`adapters.Query.nulls`) the partials leave missing values out
(a slice without a value of the field: ``None`` for max, min and sum, ``(0, 0)`` for mean),
and the rewritten query skips ``None`` partials as the original skips missing values.

The driver runs :func:`sliced_query` over those events (count -> sum of slice counts, max ->
max of slice maxima, sum -> sum of slice sums, mean -> ``(sum, count)`` pairs lifted into
:class:`~swag_core.aggregations.Mean`'s exact partial (:func:`swag_core.exact.from_sum`) and
lowered as the exactly rounded ``sum / count``). A window holds a slice's start iff it holds
the slice's events, so in batch mode (every event, then ``END_OF_INPUT``) the same windows are
emitted with the same bounds and, given exact partials, the same values as the query over the
raw events.

Which partials an engine computes for a field, and whether they are exact for the field's
column kind (:func:`slice_layout`: an engine's floating sum is not, unless it sums a float's
exact integer parts, :attr:`SliceField.exact`), is decided here from engine-free column
kinds (:data:`INT`, :data:`LONG`, :data:`FLOAT`); the engine builds its own aggregation of
the named partial columns (:data:`COUNT`, :data:`NON_NULL`, ...) and hands the rows to
:meth:`SliceLayout.values`, which checks them as the event path checks raw values.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from adapters.driver.kernels import kernel_for
from adapters.driver.time_lane import slice_grid
from adapters.errors import BadEventError
from adapters.query.builtins import PRESLICED, fns_taking
from adapters.query.specs import AggSpec, Query, SlidingWindow, lifted_aggregation
from adapters.query.times import parse_time
from swag_core import Aggregation
from swag_core.exact import FRACTION_BITS, from_parts, from_sum

#: the partial holding a slice's event count
COUNT_FIELD = "#n"
#: the aggregation fns with a per-slice partial
SLICEABLE_FNS = fns_taking(PRESLICED)


def partial_field(fn: str, field: str | None) -> str:
    """The name of the partial of ``fn`` over ``field`` in a slice event's value (the one
    place these names are made: engines build slice events with it, :func:`sliced_query`
    reads them with it). ``count`` (no field) is the slice's event count."""
    if fn == "count" and field is None:
        return COUNT_FIELD
    if fn == "count" or fn not in SLICEABLE_FNS or field is None:
        raise ValueError(f"no slice partial for fn {fn!r} of field {field!r} (partials: "
                         f"count of events, and max, min, sum or mean of a field)")
    return f"{fn}:{field}"


def _mean_partial(pair: tuple[Any, int]) -> int:
    """Mean's partial of a slice's ``(exact sum, count)``."""
    return from_sum(pair[0], pair[1])


def _over_partials(spec: AggSpec, exact_fields: frozenset[str]) -> Any:
    """The aggregation spec combining the slice partials of one output (same output name)."""
    if spec.fn == "count":
        return {"fn": "sum", "field": partial_field("count", None)}
    field = partial_field(spec.fn or "", spec.field)
    if spec.fn in ("sum", "mean") and spec.field in exact_fields:
        # the slice's value is the output's own exact partial: combined and lowered as is
        return (field, lifted_aggregation((spec,)))
    if spec.fn == "mean":
        # Mean's own combine and lower over its exact partials of the (sum, count) pairs
        agg = lifted_aggregation((spec,))
        return (field, Aggregation(combine=agg.combine, identity=agg.identity,
                                   lift=_mean_partial, lower=agg.lower, subtract=agg.subtract,
                                   commutative=agg.commutative, name=agg.name))
    return {"fn": spec.fn, "field": field}


def sliced_query(query: Query, exact_fields: frozenset[str] = frozenset()) -> Query | str:
    """The query the driver runs over slice events (same windows, lateness, algorithm and
    output names), or why ``query``'s windows or aggregations cannot run over slice
    partials (see the module docstring). ``exact_fields``: the fields whose ``sum`` and
    ``mean`` partials are not a sum and a ``(sum, count)`` pair but the output's own exact
    partial (:func:`swag_core.exact.from_parts`; the identity for a slice without values),
    as an engine builds for a float column whose values it cannot add exactly itself."""
    sliding = [w for w in query.windows if isinstance(w, SlidingWindow)]
    if len(sliding) < len(query.windows):
        return "a window spec is not sliding or tumbling"
    if slice_grid(sliding)[0] <= 1:
        return "the slice width (gcd of ranges, slides and offsets) is 1 ms"
    for a in query.aggregations:
        # kernel_for: count of events, or a plain field's stock max/min/sum/mean
        if a.fn not in SLICEABLE_FNS or kernel_for(a) is None or (
                a.fn == "count" and a.field is not None):  # count of a field: no partial
            return f"aggregation {a.name!r} is not count, max, min, sum or mean of a field"
    return Query.build(list(query.windows),
                       {a.name: _over_partials(a, exact_fields) for a in query.aggregations},
                       query.allowed_lateness, query.algorithm, query.nulls)


#: engine-free column kinds of an aggregated field (anything else is not numeric)
INT, LONG, FLOAT = "int", "long", "float"

#: per-slice count of events (``count(*)``)
COUNT = "swag_n"
#: per-field partial columns: "<prefix><field index>"
NON_NULL, MAX, MIN, SUM, SUM_HI, SUM_LO, ZERO = ("swag_c", "swag_x", "swag_m", "swag_s",
                                                 "swag_h", "swag_l", "swag_z")
#: an exactly summed floating field: its counts of +inf and -inf per row
POS_INF, NEG_INF = "swag_p", "swag_g"
#: the grouping column of an exactly summed floating field: the row's power-of-two scale q
SCALE = "swag_q"
#: the slice start column of slice rows
START = "swag_t"


@dataclass(frozen=True)
class SliceField:
    """One aggregated field and the partials an engine computes for it."""

    #: the event field name
    name: str
    #: ``{"max", "min", "sum"}`` subset: the partials the outputs need
    needs: frozenset[str]
    #: a floating column (NaN and signed zeros checked)
    floating: bool
    #: a 64-bit integer column: its sum is taken as two 32-bit halves (``SUM_HI``/``SUM_LO``)
    wide: bool
    #: the first output reading the field, and its fn (for error messages)
    output: str
    fn: str
    #: a floating column whose sum the outputs need: summed exactly as integer parts
    #: ``m * 2**q`` grouped by ``q`` (``SCALE``), as ``SUM_HI``/``SUM_LO`` halves
    exact: bool = False


@dataclass(frozen=True)
class SliceLayout:
    """A query that runs pre-sliced (built by :func:`slice_layout`): the slice grid, the
    partials per field, and the query the driver runs over slice rows."""

    width: int
    base: int
    fields: tuple[SliceField, ...]
    #: the query the driver runs over slice rows (same windows, same output names)
    query: Query
    #: missing values are left out (``nulls="skip"``), not bad input
    skip: bool = False

    def closed(self, watermark: int) -> int:
        """Streaming: the driver's watermark when the engine's is ``watermark``: the start of
        the slice holding it (every slice ending at or before ``watermark`` has left the
        engine's aggregation; window ends lie on the grid)."""
        return watermark - (watermark - self.base) % self.width

    def values(self, cols: Mapping[str, list[Any]], keys: Sequence[Any]
               ) -> list[dict[str, Any]]:
        """The driver's event values (``{partial name: partial}``) of slice rows given as
        columns (``cols``: :data:`START`, :data:`COUNT` and the per-field partial columns;
        ``keys[i]``: row ``i``'s driver key, for errors); raises :class:`BadEventError` as
        the event path does for null values and NaN."""
        values: list[dict[str, Any]] = [{partial_field("count", None): n} for n in cols[COUNT]]
        for i, f in enumerate(self.fields):
            self._check(cols, keys, i, f)
            self._extremes(cols, values, i, f)
            if "sum" in f.needs:
                self._sums(cols, values, i, f)
        return values

    def table_events(self, table: Any, key: Any, time_field: str) -> list[tuple[Any, Any]]:
        """The driver's events ``(slice start, {partials})`` of one key's slice rows as an
        Arrow table (:data:`START` and the partial columns); raises :class:`BadEventError` as
        the event path does for null times, null values and NaN."""
        starts = table.column(START).to_pylist()
        if None in starts:
            parse_time(None, key, time_field)  # raises the event path's error
        return list(zip(starts, self.table_values(table, [key] * len(starts))))

    def table_values(self, table: Any, keys: Sequence[Any]) -> list[dict[str, Any]]:
        """:meth:`values` of slice rows as an Arrow table (:data:`START` and the partial
        columns; ``keys[i]``: row ``i``'s driver key)."""
        return self.values({name: table.column(name).to_pylist()
                            for name in table.column_names}, keys)

    def _check(self, cols: Mapping[str, list[Any]], keys: Sequence[Any], i: int,
               f: SliceField) -> None:
        """Bad input (``nulls="error"``): a null value or a NaN in a slice."""
        if self.skip:
            return
        starts = cols[START]
        for key, s, n, nn in zip(keys, starts, cols[COUNT], cols[f"{NON_NULL}{i}"]):
            if nn < n:
                self._bad(key, s, f, None)
        if f.floating:
            for key, s, mx in zip(keys, starts, cols[f"{MAX}{i}"]):
                if mx != mx:
                    self._bad(key, s, f, mx)

    @staticmethod
    def _extremes(cols: Mapping[str, list[Any]], values: list[dict[str, Any]], i: int,
                  f: SliceField) -> None:
        zeros = cols.get(f"{ZERO}{i}")
        for what in ("max", "min"):
            if what in f.needs:
                extremes = cols[f"{MAX if what == 'max' else MIN}{i}"]
                if zeros is not None:  # the oldest zero's sign (the event path keeps it)
                    extremes = [z if x == 0 else x for x, z in zip(extremes, zeros)]
                name = partial_field(what, f.name)
                for value, x in zip(values, extremes):
                    value[name] = x

    @staticmethod
    def _sums(cols: Mapping[str, list[Any]], values: list[dict[str, Any]], i: int,
              f: SliceField) -> None:
        total, mean = partial_field("sum", f.name), partial_field("mean", f.name)
        present = cols[f"{NON_NULL}{i}"]
        if f.exact:
            for value, h, lo, q, nn, pos, neg in zip(
                    values, cols[f"{SUM_HI}{i}"], cols[f"{SUM_LO}{i}"], cols[SCALE],
                    present, cols[f"{POS_INF}{i}"], cols[f"{NEG_INF}{i}"]):
                # sum(m) * 2**q in units of 2**-1074 (q >= -1074)
                fixed = 0 if h is None else ((h << 32) + lo) << (q + FRACTION_BITS)
                value[total] = value[mean] = from_parts(fixed, nn, pos, neg)
            return
        if f.wide:
            sums = [None if h is None else (h << 32) + lo
                    for h, lo in zip(cols[f"{SUM_HI}{i}"], cols[f"{SUM_LO}{i}"])]
        else:
            sums = cols[f"{SUM}{i}"]
        for value, s, nn in zip(values, sums, present):
            value[total] = s
            value[mean] = (0, 0) if s is None else (s, nn)  # mean's identity

    def _bad(self, key: Any, start: int, f: SliceField, x: Any) -> None:
        what = "None (a null value)" if x is None else "NaN"
        raise BadEventError(
            f"key {key!r}, an event in [{start}, {start + self.width}): field {f.name!r} = "
            f"{x!r} cannot be aggregated by output {f.output!r} ({f.fn}): {f.fn} cannot "
            f"aggregate {what}", key=key, field=f.name, time=start)


def _field_needs(query: Query, kinds: Mapping[str, str], floating_sums: bool
                 ) -> tuple[dict[str, set[str]], dict[str, AggSpec]] | str:
    """The partials each aggregated field needs and its first output, or why a field's
    kind has no exact partial."""
    needs: dict[str, set[str]] = {}
    first: dict[str, AggSpec] = {}
    for a in query.aggregations:  # count, max, min, sum, mean (sliced_query checked)
        if a.fn == "count":
            continue
        field = a.field
        assert field is not None and a.fn is not None
        kind = kinds.get(field)
        if kind not in (INT, LONG, FLOAT):
            return f"aggregation {a.name!r}: field {field!r} is not numeric"
        if a.fn in ("sum", "mean") and kind == FLOAT and not floating_sums:
            return (f"aggregation {a.name!r}: {a.fn} of the floating column {field!r} (the "
                    f"engine sums in another order: not bit-identical; only batch sums it "
                    f"exactly)")
        needs.setdefault(field, set()).add("sum" if a.fn == "mean" else a.fn)
        first.setdefault(field, a)
    return needs, first


def slice_layout(query: Query, kinds: Mapping[str, str], floating_sums: bool = False
                 ) -> SliceLayout | str:
    """The :class:`SliceLayout` of ``query``, or why it cannot be pre-sliced.

    ``kinds``: each value field's column kind (:data:`INT`, :data:`LONG`, :data:`FLOAT`;
    others are not numeric); ``floating_sums``: whether the engine may sum a floating
    column exactly by scale (:attr:`SliceField.exact`; one such column per query)."""
    rewritten = sliced_query(query)  # (the windows and fns; run again below with exact fields)
    if isinstance(rewritten, str):
        return rewritten
    found = _field_needs(query, kinds, floating_sums)
    if isinstance(found, str):
        return found
    needs, first = found
    exact = {n for n, need in needs.items() if "sum" in need and kinds[n] == FLOAT}
    if len(exact) > 1:
        return (f"sums of several floating columns ({', '.join(sorted(exact))}): the slices "
                f"would be grouped by the scale of each")
    for n, need in needs.items():
        if exact and n not in exact and kinds[n] == FLOAT and need & {"max", "min"}:
            return (f"the max/min of the floating column {n!r} beside the exact sum of "
                    f"{min(exact)!r} (rows of one slice split by scale could tie 0.0 and "
                    f"-0.0 of {n!r})")
    rewritten = sliced_query(query, frozenset(exact))
    assert not isinstance(rewritten, str)
    # every window is sliding (sliced_query checked), so the grid is defined
    width, base = slice_grid([w for w in query.windows if isinstance(w, SlidingWindow)])
    fields = tuple(
        SliceField(name=n, needs=frozenset(needs[n]), floating=kinds[n] == FLOAT,
                   wide=kinds[n] == LONG, output=first[n].name, fn=first[n].fn or "",
                   exact=n in exact)
        for n in sorted(needs))
    return SliceLayout(width=width, base=base, fields=fields, query=rewritten,
                       skip=query.nulls == "skip")


__all__ = ["COUNT", "COUNT_FIELD", "FLOAT", "INT", "LONG", "SLICEABLE_FNS", "SliceField",
           "SliceLayout", "partial_field", "slice_layout", "sliced_query"]
