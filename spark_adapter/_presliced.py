"""Pre-slicing on Spark: Spark aggregates each (key, slice) once, the driver combines slices.

The engine-free part, :mod:`adapters.engine.presliced`, decides whether a query can be
pre-sliced and with which partials (asked through :meth:`adapters.WindowDriver.plan`),
rewrites the query the driver runs over one row per non-empty slice, and checks the rows'
partials into driver events. This module keeps the Spark plan,

    groupBy(keys..., slice start).agg(partials)  ->  groupBy(keys).applyInArrow(driver)

(streaming: Spark's stateful aggregation per tumbling slice window, :meth:`SlicePlan.
stream_frame`), so Spark's map-side combine computes the partials where the data is, with the
NaN / signed-zero / null handling that makes them the event path's values exactly:

* integers: ``count``/``max``/``min`` are exact; a ``long`` column is summed as two halves
  (``v >> 32`` and ``v & 0xFFFFFFFF``, each far from overflow) that Python joins into one
  unbounded ``int``; narrower integers are summed as ``long``.
* floats: ``max``/``min``. The one tie floats tell apart is ``-0.0 == 0.0``: the event path
  keeps the oldest (time, then ``order_by``), so a slice whose extreme is a zero takes the
  sign of its oldest zero (``min_by``). Spark's floating sums depend on the order, so a
  ``sum``/``mean`` of a floating column (batch only; one such column per query) splits every
  finite non-zero ``x`` exactly into ``x = m * 2**q`` (:func:`_scaled`), groups the slice by
  ``q`` too, and sums the ``m`` as a ``long`` column's values; Python joins the rows of a
  slice into the output's exact partial (:func:`swag_core.exact.from_parts`, with the
  slice's counts of values, ``+inf`` and ``-inf``). A float ``max``/``min`` of another
  floating column could then tie zeros across a slice's rows, so such a query keeps the
  event path.
* bad input raises what the event path raises: a null time the same
  :class:`adapters.BadEventError`; with ``nulls="error"``, a null value (``count(v) <
  count(*)``) or a NaN (Spark's ``max`` is NaN iff the slice holds one) one naming the key,
  the field, the output and the slice ``[start, end)``.
* missing values with ``nulls="skip"``: Spark's aggregates leave nulls out already; a
  floating column's NaN is made null first (``when(isnan(v), null)``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import DataType, LongType, StringType

from adapters.engine.columns import ORDER_IN, TIME_IN
from adapters.engine.presliced import (
    COUNT,
    FLOAT,
    INT,
    LONG,
    MAX,
    MIN,
    NEG_INF,
    NON_NULL,
    POS_INF,
    SCALE,
    SUM,
    SUM_HI,
    SUM_LO,
    ZERO,
    SliceField,
    SliceLayout,
)
from adapters.engine.worker import Plan

from ._types import FLOATING, INTEGRAL

_LOW_MASK = 0xFFFFFFFF
#: the scales of an exactly summed floating field's rows are multiples of this many bits
#: (:func:`_scaled`): at most 9 more bits than a double's 53, so ``m`` fits a ``long`` and
#: each half summed stays far from overflow (``m >> 32`` below ``2**30``)
_SCALE_STEP = 10


def slice_kinds(value_types: Mapping[str, DataType]) -> dict[str, str]:
    """The engine-free column kind of each numeric value column (``long``: summed as two
    halves; floats: max/min, and sums exactly by scale in batch)."""
    kinds = {}
    for name, dt in value_types.items():
        if isinstance(dt, LongType):
            kinds[name] = LONG
        elif isinstance(dt, INTEGRAL):
            kinds[name] = INT
        elif isinstance(dt, FLOATING):
            kinds[name] = FLOAT
    return kinds


def time_block(time_is_string: bool) -> str | None:
    """Why Spark's own aggregation ahead of the driver (pre-slicing) or instead of it
    (:mod:`spark_adapter._engine_plan`) cannot give the event path's rows for this call's
    time column; ``None``: it can. (Floating keys can: Spark's grouping turns a ``-0.0`` key
    into ``0.0`` and merges NaN keys, as the event path's keys are,
    :func:`spark_adapter._types.grouping_key`.)"""
    if time_is_string:
        return "the time column is a string (Spark and the driver parse it differently)"
    return None


@dataclass(frozen=True)
class SlicePlan:
    """A query that runs pre-sliced on Spark: the planner's layout and the transport
    column (``swag_v<i>``) of each value field in the prepared frame."""

    layout: SliceLayout
    transport: Mapping[str, str]

    def frame(self, prepared: DataFrame, group_cols: Sequence[str], has_order: bool
              ) -> DataFrame:
        """``prepared`` (the event path's input columns) aggregated per key and slice:
        ``swag_t`` (slice start, null for null times), ``swag_n`` and the per-field
        partials."""
        t = F.col(TIME_IN)
        width, base = self.layout.width, self.layout.base
        start = (t - F.pmod(t - F.lit(base), F.lit(width))).alias(TIME_IN)
        scale = [_scaled(self._value(f))[0].alias(SCALE) for f in self.layout.fields
                 if f.exact]
        return prepared.groupBy(*group_cols, start, *scale).agg(*self.partials(has_order))

    def stream_frame(self, prepared: DataFrame, key_cols: Sequence[str], event_time: str,
                     has_order: bool) -> DataFrame:
        """Streaming: ``prepared`` aggregated per key and slice by Spark's own stateful
        aggregation (append mode), grouped by the tumbling ``window`` of width ``g`` over
        the watermarked timestamp column ``event_time`` (append mode needs the watermark
        column among the grouping keys); a ``(key, slice)`` row leaves it once the watermark
        passed the slice's end. Columns: the key columns, ``swag_t`` (the slice start,
        epoch ms) and the partials."""
        slices = F.window(F.col(event_time), f"{self.layout.width} milliseconds",
                          startTime=f"{self.layout.base} milliseconds")
        sliced = prepared.groupBy(*key_cols, slices.alias("swag_slice")).agg(
            *self.partials(has_order))
        partials = [c for c in sliced.columns if c not in key_cols and c != "swag_slice"]
        return sliced.select(*key_cols,
                             F.unix_millis(F.col("swag_slice.start")).alias(TIME_IN),
                             *partials)

    def partials(self, has_order: bool) -> list[Column]:
        """The per-slice partial aggregates over the event path's input columns."""
        t = F.col(TIME_IN)
        aggs: list[Column] = [F.count(F.lit(1)).alias(COUNT)]
        if has_order:
            o = F.col(ORDER_IN)
            order: Column = F.struct(t, o.isNull(), o)  # time, then order_by (nulls last)
        else:
            order = t
        for i, f in enumerate(self.layout.fields):
            aggs += self._field_partials(i, f, order)
        return aggs

    def _field_partials(self, i: int, f: SliceField, order: Column) -> list[Column]:
        """The partial aggregates of field ``f`` (index ``i``)."""
        c = self._value(f)
        aggs = [F.count(c).alias(f"{NON_NULL}{i}")]
        if "max" in f.needs or (f.floating and not self.layout.skip):
            aggs.append(F.max(c).alias(f"{MAX}{i}"))  # (a float max is NaN iff a NaN)
        if "min" in f.needs:
            aggs.append(F.min(c).alias(f"{MIN}{i}"))
        if f.floating and f.needs & {"max", "min"}:
            # (min_by of a struct makes Spark's aggregate a sort aggregate: only when a
            # zero's sign can matter; measured on a mean alone: 5.0 s with it)
            aggs.append(F.min_by(c, F.when(c == 0, order)).alias(f"{ZERO}{i}"))
        if "sum" not in f.needs:
            return aggs
        if f.exact:
            m = _scaled(c)[1]
            return [
                *aggs, F.sum(F.shiftright(m, 32)).alias(f"{SUM_HI}{i}"),
                F.sum(m.bitwiseAND(F.lit(_LOW_MASK))).alias(f"{SUM_LO}{i}"),
                F.count(F.when(c == F.lit(math.inf), 1)).alias(f"{POS_INF}{i}"),
                F.count(F.when(c == F.lit(-math.inf), 1)).alias(f"{NEG_INF}{i}")]
        if f.wide:
            return [*aggs, F.sum(F.shiftright(c, 32)).alias(f"{SUM_HI}{i}"),
                    F.sum(c.bitwiseAND(F.lit(_LOW_MASK))).alias(f"{SUM_LO}{i}")]
        return [*aggs, F.sum(c).alias(f"{SUM}{i}")]

    def _value(self, f: SliceField) -> Column:
        """The field's values as its partials read them: NaN is missing, as null is, when
        missing values are skipped."""
        c = F.col(self.transport[f.name])
        return F.when(~F.isnan(c), c) if self.layout.skip and f.floating else c


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


def null_times_checked(df: DataFrame, plan: Plan) -> DataFrame:
    """``df`` observed so that its first null time raises the event path's
    :class:`adapters.BadEventError` text, naming the key as Python shows it. Spark's own
    aggregations ahead of (or instead of) the driver drop null times (``window()``
    filters them, and Spark pushes that filter below any projection); a filter is not
    pushed through an observed metric, so the check sits in one."""
    types = {f.name: f.dataType for f in df.schema.fields}
    parts = [_shown(F.col(k), types[k]) for k in plan.key_names]
    key = parts[0] if len(parts) == 1 else F.concat(
        F.lit("("), F.concat_ws(", ", *parts), F.lit(")"))
    bad = F.raise_error(F.concat(F.lit("BadEventError: key "), key,
                                 F.lit(f": event time None (field {plan.time_name!r}) is null")))
    null = F.col(plan.time_name).isNull()
    return df.observe(f"swag_null_times_{plan.token[:12]}",
                      F.count(F.when(null, bad)).alias("null_times"))


def _shown(col: Column, dt: DataType) -> Column:
    """A key column's value about as ``repr`` shows it (strings quoted, null as None)."""
    text = col.cast(StringType())
    if isinstance(dt, StringType):
        text = F.concat(F.lit("'"), text, F.lit("'"))
    return F.coalesce(text, F.lit("None"))


__all__ = ["SlicePlan", "null_times_checked", "slice_kinds", "time_block"]
