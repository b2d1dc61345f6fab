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

Whether the engine's partials are exact for a column type (e.g. a floating sum is not) is
the engine's check (``spark_adapter._presliced``); this module checks windows and
aggregations only.
"""

from __future__ import annotations

from typing import Any

from adapters.driver.kernels import kernel_for
from adapters.driver.time_lane import slice_grid
from adapters.query.builtins import PRESLICED, fns_taking
from adapters.query.specs import AggSpec, Query, SlidingWindow, lifted_aggregation
from swag_core import Aggregation
from swag_core.exact import from_sum

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


__all__ = ["COUNT_FIELD", "SLICEABLE_FNS", "partial_field", "sliced_query"]
