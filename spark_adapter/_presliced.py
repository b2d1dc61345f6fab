"""Batch pre-slicing: Spark aggregates each (key, slice) once, the driver combines slices.

General stream slicing (Traub et al., EDBT 2019; :mod:`adapters.driver.time_lane`) cuts time into
slices of width ``g = gcd(ranges, slides, offset differences)`` (:func:`adapters.driver.time_lane.
slice_grid`); every sliding or tumbling window is a union of whole slices. When every
aggregation's per-slice partial is one Spark computes exactly, the batch plan becomes

    groupBy(keys..., slice start).agg(partials)  ->  groupBy(keys).applyInArrow(driver)

so Spark's map-side combine does the per-slice partial aggregation where the data already
is, and the Python side gets one row per non-empty slice instead of one per event. The
engine-free part, :mod:`adapters.engine.presliced`, names the partials
(:func:`~adapters.engine.presliced.partial_field`) and rewrites the query the driver runs over
those rows (:func:`~adapters.engine.presliced.sliced_query`: count -> sum of slice counts, max
-> max of slice maxima, sum -> sum of slice sums, mean -> ``(sum, count)`` pairs); a slice
row's time is the slice's start, so a window holds a slice row iff it holds an event of that
slice: the same windows are emitted, with the same bounds. This module keeps the Spark plan,
the column type checks and the NaN / signed-zero / null handling.

Why the values are identical to the event path (``swag_core``'s kernels over raw values):

* integers: Spark's per-slice ``count``/``max``/``min`` are exact, and sums are exact because
  a ``long`` column is summed as two halves (``v >> 32`` and ``v & 0xFFFFFFFF``, each sum far
  from overflow) that Python joins into one unbounded ``int``; narrower integers are summed
  as ``long``. The driver lifts each ``(sum, count)`` into
  :class:`swag_core.aggregations.Mean`'s exact partial, so a mean is the same correctly
  rounded quotient as over the raw events.
* floats: ``max``/``min`` (a maximum does not depend on summation order). The one tie floats
  can tell apart is ``-0.0 == 0.0``: the event path keeps the oldest (time, then
  ``order_by``), so a slice whose extreme is a zero takes the sign of its oldest zero
  (``min_by``). Spark's floating sums depend on the order, so a ``sum``/``mean`` of a
  floating column is not Spark's ``sum`` (batch only; one such column per query): every
  finite non-zero value ``x`` is split exactly into integers, ``x = m * 2**q`` with
  ``|m| < 2**62`` and ``q`` on a grid of 10 bits (:func:`_scaled`), the slice is grouped by
  ``q`` as well, and Spark sums the ``m`` of each ``(key, slice, q)`` as two halves, as a
  ``long`` column's values; Python
  joins ``sum(m) * 2**q`` of every row of the slice into the output's own exact partial
  (:func:`swag_core.exact.from_parts`, with the slice's counts of values, ``+inf`` and
  ``-inf``), which is the event path's partial exactly. A slice then reaches the driver as
  one row per ``q`` (zeros, infinities and missing values in a row of their own), which it
  combines like any rows of one slice; a float ``max``/``min`` of the same column still
  ties zeros only within the zeros' row, but of another floating column it could tie them
  across rows, so such a query keeps the event path.
* bad input raises what the event path raises: a null time the same
  :class:`adapters.BadEventError` (from :func:`adapters.query.times.parse_time`); with
  ``nulls="error"``, a null value (``count(v) < count(*)``) or a NaN (Spark's ``max`` is NaN
  iff the slice holds one) a :class:`~adapters.BadEventError` naming the key, the field and
  the output, with the slice ``[start, end)`` holding the bad event (its exact time is not
  computed).
* missing values with ``nulls="skip"``: Spark's ``count(v)``, ``max``, ``min``, ``sum`` and
  ``min_by`` leave nulls out already; a floating column's NaN is made null first
  (``when(isnan(v), null)``), as the event path leaves NaN out. A mean's partial count is
  ``count(v)``; a slice without values gives null partials, which the driver's skipping
  query passes over, as the event path's all-null slice.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import DataType, LongType

from adapters import BadEventError, Query
from adapters.driver.time_lane import slice_grid
from adapters.engine.presliced import partial_field, sliced_query
from adapters.query.specs import AggSpec, SlidingWindow
from adapters.query.times import parse_time
from swag_core.exact import FRACTION_BITS, from_parts

from ._runtime import ORDER_IN, TIME_IN
from ._types import FLOATING, INTEGRAL

#: per-slice count of events (``count(*)``)
COUNT = "swag_n"
#: per-field partial columns: "<prefix><field index>"
NON_NULL, MAX, MIN, SUM, SUM_HI, SUM_LO, ZERO = ("swag_c", "swag_x", "swag_m", "swag_s",
                                                 "swag_h", "swag_l", "swag_z")
#: an exactly summed floating field (:func:`_scaled`): its counts of +inf and -inf per row
POS_INF, NEG_INF = "swag_p", "swag_g"
#: the grouping column of an exactly summed floating field: the row's power-of-two scale q
SCALE = "swag_q"
_LOW_MASK = 0xFFFFFFFF
#: the scales of an exactly summed floating field's rows are multiples of this many bits
#: (:func:`_scaled`): at most 9 more bits than a double's 53, so ``m`` fits a ``long`` and
#: each half summed stays far from overflow (``m >> 32`` below ``2**30``)
_SCALE_STEP = 10


@dataclass(frozen=True)
class SliceField:
    """One aggregated field and the partials Spark computes for it."""

    #: the event field (input column) name
    name: str
    #: its transport column in the prepared frame (``swag_v<i>``)
    column: str
    #: ``{"max", "min", "sum"}`` subset: the partials the outputs need
    needs: frozenset[str]
    #: a float/double column (max/min only; NaN and signed zeros checked)
    floating: bool
    #: a ``long`` column: its sum is taken as two halves (see the module docstring)
    wide: bool
    #: the first output reading the field, and its fn (for error messages)
    output: str
    fn: str
    #: a floating column whose sum the outputs need: summed exactly (:func:`_scaled`)
    exact: bool = False


@dataclass(frozen=True)
class SlicePlan:
    """A batch query that runs pre-sliced (built by :func:`slice_plan`)."""

    width: int
    base: int
    fields: tuple[SliceField, ...]
    #: the query the driver runs over slice rows (same windows, same output names)
    query: Query
    #: missing values are left out (``nulls="skip"``), not bad input
    skip: bool = False

    def frame(self, prepared: DataFrame, group_cols: Sequence[str], has_order: bool
              ) -> DataFrame:
        """``prepared`` (the event path's input columns) aggregated per key and slice:
        ``swag_t`` (slice start, null for null times), ``swag_n`` and the per-field
        partials."""
        t = F.col(TIME_IN)
        start = (t - F.pmod(t - F.lit(self.base), F.lit(self.width))).alias(TIME_IN)
        scale = [_scaled(self._value(f))[0].alias(SCALE) for f in self.fields if f.exact]
        return prepared.groupBy(*group_cols, start, *scale).agg(*self.partials(has_order))

    def stream_frame(self, prepared: DataFrame, key_cols: Sequence[str], event_time: str,
                     has_order: bool) -> DataFrame:
        """Streaming: ``prepared`` aggregated per key and slice by Spark's own stateful
        aggregation (append mode), grouped by the tumbling ``window`` of width ``g`` over
        the watermarked timestamp column ``event_time`` (append mode needs the watermark
        column among the grouping keys); a ``(key, slice)`` row leaves it once the watermark
        passed the slice's end. Columns: the key columns, ``swag_t`` (the slice start,
        epoch ms) and the partials."""
        slices = F.window(F.col(event_time), f"{self.width} milliseconds",
                          startTime=f"{self.base} milliseconds")
        sliced = prepared.groupBy(*key_cols, slices.alias("swag_slice")).agg(
            *self.partials(has_order))
        partials = [c for c in sliced.columns if c not in key_cols and c != "swag_slice"]
        return sliced.select(*key_cols,
                             F.unix_millis(F.col("swag_slice.start")).alias(TIME_IN),
                             *partials)

    def closed(self, watermark: int) -> int:
        """Streaming: the driver's watermark when Spark's is ``watermark``: the start of the
        slice holding it. Every slice that ends at or before ``watermark`` has left Spark's
        aggregation, the others start at or after this bound, so no slice row is ever
        behind the driver's watermark; window ends lie on the grid, so a window ends at or
        before ``watermark`` iff it ends at or before this bound."""
        return watermark - (watermark - self.base) % self.width

    def partials(self, has_order: bool) -> list[Column]:
        """The per-slice partial aggregates over the event path's input columns."""
        t = F.col(TIME_IN)
        aggs: list[Column] = [F.count(F.lit(1)).alias(COUNT)]
        if has_order:
            o = F.col(ORDER_IN)
            order: Column = F.struct(t, o.isNull(), o)  # time, then order_by (nulls last)
        else:
            order = t
        for i, f in enumerate(self.fields):
            c = self._value(f)
            aggs.append(F.count(c).alias(f"{NON_NULL}{i}"))
            if "max" in f.needs or (f.floating and not self.skip):
                aggs.append(F.max(c).alias(f"{MAX}{i}"))  # (a float max is NaN iff a NaN)
            if "min" in f.needs:
                aggs.append(F.min(c).alias(f"{MIN}{i}"))
            if f.floating and f.needs & {"max", "min"}:
                # (min_by of a struct makes Spark's aggregate a sort aggregate: only when a
                # zero's sign can matter; measured on a mean alone: 5.0 s with it)
                aggs.append(F.min_by(c, F.when(c == 0, order)).alias(f"{ZERO}{i}"))
            if "sum" in f.needs:
                if f.exact:
                    m = _scaled(c)[1]
                    aggs.append(F.sum(F.shiftright(m, 32)).alias(f"{SUM_HI}{i}"))
                    aggs.append(F.sum(m.bitwiseAND(F.lit(_LOW_MASK))).alias(f"{SUM_LO}{i}"))
                    aggs.append(F.count(F.when(c == F.lit(math.inf), 1)).alias(f"{POS_INF}{i}"))
                    aggs.append(F.count(F.when(c == F.lit(-math.inf), 1)).alias(f"{NEG_INF}{i}"))
                elif f.wide:
                    aggs.append(F.sum(F.shiftright(c, 32)).alias(f"{SUM_HI}{i}"))
                    aggs.append(F.sum(c.bitwiseAND(F.lit(_LOW_MASK))).alias(f"{SUM_LO}{i}"))
                else:
                    aggs.append(F.sum(c).alias(f"{SUM}{i}"))
        return aggs

    def _value(self, f: SliceField) -> Column:
        """The field's values as its partials read them: NaN is missing, as null is, when
        missing values are skipped."""
        c = F.col(f.column)
        return F.when(~F.isnan(c), c) if self.skip and f.floating else c

    def events(self, table: Any, key: Any, time_field: str) -> list[tuple[Any, Any]]:
        """The driver's events of one key's slice rows (an Arrow table of :meth:`frame`):
        ``(slice start, {partials})``; raises :class:`BadEventError` as the event path
        does for null times, null values and NaN."""
        cols = {name: table.column(name).to_pylist() for name in table.column_names}
        starts = cols[TIME_IN]
        if None in starts:
            parse_time(None, key, time_field)  # raises the event path's error
        return list(zip(starts, self.values(cols, [key] * len(starts))))

    def values(self, cols: Mapping[str, list[Any]], keys: Sequence[Any]
               ) -> list[dict[str, Any]]:
        """The driver's event values (``{partial name: partial}``) of slice rows given as
        columns (``cols``: the partials of :meth:`partials` and ``swag_t``; ``keys[i]``: row ``i``'s
        driver key, for errors); raises :class:`BadEventError` as the event path does for
        null values and NaN."""
        starts, counts = cols[TIME_IN], cols[COUNT]
        values: list[dict[str, Any]] = [{partial_field("count", None): n} for n in counts]
        for i, f in enumerate(self.fields):
            present = cols[f"{NON_NULL}{i}"]
            for key, s, n, nn in zip(keys, starts, counts, present):
                if nn < n and not self.skip:
                    self._bad(key, s, f, None)
            if f.floating and not self.skip:
                for key, s, mx in zip(keys, starts, cols[f"{MAX}{i}"]):
                    if mx != mx:
                        self._bad(key, s, f, mx)
            zeros = cols.get(f"{ZERO}{i}")
            for what in ("max", "min"):
                if what in f.needs:
                    extremes = cols[f"{MAX if what == 'max' else MIN}{i}"]
                    if zeros is not None:  # the oldest zero's sign (see the module docstring)
                        extremes = [z if x == 0 else x for x, z in zip(extremes, zeros)]
                    name = partial_field(what, f.name)
                    for value, x in zip(values, extremes):
                        value[name] = x
            if "sum" in f.needs and f.exact:
                total, mean = partial_field("sum", f.name), partial_field("mean", f.name)
                for value, h, lo, q, nn, pos, neg in zip(
                        values, cols[f"{SUM_HI}{i}"], cols[f"{SUM_LO}{i}"], cols[SCALE],
                        present, cols[f"{POS_INF}{i}"], cols[f"{NEG_INF}{i}"]):
                    # sum(m) * 2**q in units of 2**-1074 (q >= -1074)
                    fixed = 0 if h is None else ((h << 32) + lo) << (q + FRACTION_BITS)
                    value[total] = value[mean] = from_parts(fixed, nn, pos, neg)
            elif "sum" in f.needs:
                if f.wide:
                    sums = [None if h is None else (h << 32) + lo
                            for h, lo in zip(cols[f"{SUM_HI}{i}"], cols[f"{SUM_LO}{i}"])]
                else:
                    sums = cols[f"{SUM}{i}"]
                total, mean = partial_field("sum", f.name), partial_field("mean", f.name)
                for value, s, nn in zip(values, sums, present):
                    value[total] = s
                    value[mean] = (0, 0) if s is None else (s, nn)  # mean's identity
        return values

    def json_values(self, texts: Sequence[str], starts: Sequence[int], keys: Sequence[Any]
                    ) -> list[dict[str, Any]]:
        """Streaming: :meth:`values` of slice rows whose partials travel as JSON objects
        (``to_json`` writes a floating NaN or infinity as a string, pitfall 9)."""
        rows = [json.loads(t) for t in texts]
        if not rows:
            return []
        cols: dict[str, list[Any]] = {name: [r[name] for r in rows] for name in rows[0]}
        for i, f in enumerate(self.fields):
            if f.floating:
                for prefix in (MAX, MIN, ZERO):
                    col = cols.get(f"{prefix}{i}")
                    if col is not None:
                        cols[f"{prefix}{i}"] = [float(x) if type(x) is str else x for x in col]
        cols[TIME_IN] = list(starts)
        return self.values(cols, keys)

    def _bad(self, key: Any, start: int, f: SliceField, x: Any) -> None:
        what = "None (a null value)" if x is None else "NaN"
        raise BadEventError(
            f"key {key!r}, an event in [{start}, {start + self.width}): field {f.name!r} = "
            f"{x!r} cannot be aggregated by output {f.output!r} ({f.fn}): {f.fn} cannot "
            f"aggregate {what}", key=key, field=f.name, time=start)


def slice_plan(query: Query, value_types: Mapping[str, DataType],
               transport: Mapping[str, str], time_is_string: bool,
               key_types: Sequence[DataType] | None,
               floating_sums: bool = False) -> SlicePlan | str:
    """The :class:`SlicePlan` of a batch query, or why it cannot be pre-sliced.

    ``value_types``: the Spark types of the value columns; ``transport``: their typed
    transport columns (``swag_v<i>``) in the prepared frame; ``key_types``: the typed key
    columns' transport types (``None``: the keys travel as JSON text); ``floating_sums``:
    whether a sum or mean of a floating column may be summed exactly by scale (batch:
    :meth:`SlicePlan.frame`; streaming's :meth:`SlicePlan.stream_frame` does not)."""
    if time_is_string:
        return "the time column is a string (Spark and the driver parse it differently)"
    if key_types is not None and any(isinstance(t, FLOATING) for t in key_types):
        return ("a key column is floating (Spark's aggregate would turn a -0.0 key into 0.0 "
                "and merge NaN keys)")
    rewritten = sliced_query(query)  # (the windows and fns; run again below with exact fields)
    if isinstance(rewritten, str):
        return rewritten
    # every window is sliding (sliced_query checked), so the grid is defined
    width, base = slice_grid([w for w in query.windows if isinstance(w, SlidingWindow)])
    needs: dict[str, set[str]] = {}
    first: dict[str, AggSpec] = {}
    for a in query.aggregations:  # count, max, min, sum, mean (sliced_query checked)
        if a.fn == "count":
            continue
        field = a.field
        assert field is not None and a.fn is not None
        dt = value_types.get(field)
        if field not in transport or not isinstance(dt, (*INTEGRAL, *FLOATING)):
            return f"aggregation {a.name!r}: field {field!r} is not numeric"
        if a.fn in ("sum", "mean") and not isinstance(dt, INTEGRAL) and not floating_sums:
            return (f"aggregation {a.name!r}: {a.fn} of the floating column {field!r} (Spark "
                    f"sums in another order: not bit-identical; only batch sums it exactly)")
        needs.setdefault(field, set()).add("sum" if a.fn == "mean" else a.fn)
        first.setdefault(field, a)
    exact = {n for n, need in needs.items()
             if "sum" in need and isinstance(value_types[n], FLOATING)}
    if len(exact) > 1:
        return (f"sums of several floating columns ({', '.join(sorted(exact))}): the slices "
                f"would be grouped by the scale of each")
    for n, need in needs.items():
        if exact and n not in exact and isinstance(value_types[n], FLOATING) and \
                need & {"max", "min"}:
            return (f"the max/min of the floating column {n!r} beside the exact sum of "
                    f"{min(exact)!r} (rows of one slice split by scale could tie 0.0 and "
                    f"-0.0 of {n!r})")
    rewritten = sliced_query(query, frozenset(exact))
    assert not isinstance(rewritten, str)
    fields = tuple(
        SliceField(name=n, column=transport[n], needs=frozenset(needs[n]),
                   floating=isinstance(value_types[n], FLOATING),
                   wide=isinstance(value_types[n], LongType), output=first[n].name,
                   fn=first[n].fn or "", exact=n in exact)
        for n in sorted(needs))
    return SlicePlan(width=width, base=base, fields=fields, query=rewritten,
                     skip=query.nulls == "skip")


def _scaled(c: Column) -> tuple[Column, Column]:
    """``(q, m)`` with ``c = m * 2**q`` exactly, ``m`` an integer (``long``) below ``2**62`` in
    magnitude and ``q + 1074`` a multiple of :data:`_SCALE_STEP`, for a finite non-zero
    double ``c`` (both null otherwise). With ``e = floor(log2 |c|)`` (the logarithm's rounding
    corrected by comparisons with powers of two: Java's ``Math.pow`` is exact where the power
    is a double), ``c`` is an integer ``< 2**53`` times ``2**(max(e, -1022) - 52)``; ``q`` is
    that exponent rounded down to the step (so the values of a slice fall into few rows),
    hence ``|m| < 2**(53 + step - 1)``; ``c / 2**q`` is an integer-valued double (division by
    a power of two is exact when the quotient is representable) and its cast to ``long``
    exact. Checked against exact rationals for every power of two, its neighbours,
    subnormals and random bit patterns (``tests/spark/test_presliced.py``)."""
    a = F.abs(c)
    two = F.lit(2.0)
    e0 = F.floor(F.log2(a)).cast("int")
    e = (e0 - F.when(a < F.pow(two, e0), 1).otherwise(0)
         + F.when(a >= F.pow(two, e0 + 1), 1).otherwise(0))
    finite = (c != 0) & (a < F.lit(math.inf))  # (Spark orders NaN above +inf)
    units = F.greatest(e, F.lit(-1022)) - 52 + 1074  # >= 0
    q = F.when(finite, units - F.pmod(units, F.lit(_SCALE_STEP)) - 1074)
    m = F.when(finite, (c / F.pow(two, q)).cast("long"))
    return q, m


__all__ = ["SlicePlan", "slice_plan"]
