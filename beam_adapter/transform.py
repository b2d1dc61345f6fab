"""``SlidingAggregate``: exact sliding, tumbling, per-event (OVER), count and policy windows over
a Beam ``PCollection`` of rows or ``(key, value)`` pairs, as one composite transform giving
schema'd rows (:mod:`beam_adapter._rows`).

The transform only translates; :class:`adapters.WindowDriver` decides (lateness, release,
emission, eviction, state layout). See ``docs/beam.md``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import apache_beam as beam
from apache_beam.transforms.window import GlobalWindows

from adapters import BadEventError, EngineFacts, QueryPlan, WindowDriver, parse_query
from adapters.query.specs import get_field
from adapters.query.windows import query_of_call

from ._rows import check_fields, input_shape, is_row, output_schema
from .dofn import LATE_TAG, STATE_KINDS, dofn_class, timer_suffix

STATE_CHOICES = ("auto", *STATE_KINDS)
TIMESTAMP_CHOICES = ("window", "emission")


# ----------------------------------------------------------------------------- transform
class SlidingAggregate(beam.PTransform):
    """Exact window aggregates over a ``PCollection`` of rows keyed by one of their fields
    (``key=``) or of ``(key, value)`` pairs.

    Args:
        window: one window spec: :func:`sliding`, :func:`tumbling`, :func:`over`,
            :func:`count_window`, an ``adapters`` spec object, or the dict form
            (``{"kind": "sliding", "range": R, "slide": S}``; durations in ms).
        aggregations: ``{output name: spec}``: ``{"fn": "max", "field": "delay"}`` and the
            other built-ins of ``docs/adapters.md``, a ``swag_core.Aggregation``, a pair
            ``(field, aggregation)``, or a Beam ``CombineFn`` (alone: applied to the whole
            value; or as ``(field, combine_fn)``). A ``CombineFn``'s ``merge_accumulators``
            must be associative; it need not be commutative.
        windows: several window specs instead of ``window`` (rows carry ``window``: the
            spec's index). All specs share one structure per key.
        key: the key column's name (``None``: ``"key"``). With a name, the elements may be
            rows (``beam.Row``, ``NamedTuple``, ``dict``) carrying that field, which keys
            them and is also their value, or ``(key, value)`` pairs. Without one they must
            be ``(key, value)`` pairs.
        allowed_lateness: L (integer ms, ``timedelta`` or ``Duration``): an event older than
            ``watermark - L`` is late (side output ``late``, counter ``swag/late_events``);
            windows are emitted once ``watermark - L`` has passed them.
        time: where the event time comes from: ``None`` (default) the element timestamp,
            which must be a whole number of milliseconds; a field name of the row (of the
            value, for pairs); or a function ``value -> time`` returning integer ms, a Beam
            ``Timestamp`` or a ``datetime``.
        algorithm: force a ``swag_core`` algorithm (default: the selection guide).
        state: ``"ordered_list"`` (event log in ``OrderedListState``), ``"bag"``
            (``BagState``: for runners without ordered lists; removal costs O(retained)), or
            ``"auto"``: ``"bag"`` on the DirectRunner with unbounded input (its streaming
            runner has no ``OrderedListState``), ``"ordered_list"`` otherwise.
        timestamps: ``"window"`` (default): a row's timestamp is ``end - 1 us`` (Beam's
            ``IntervalWindow.max_timestamp()``, where ``CombinePerKey`` puts results; OVER
            rows: the event's timestamp). ``"emission"``: never earlier than the timer that
            emitted the row, so rows are never behind the transform's output watermark
            (matters with ``allowed_lateness > 0`` and downstream event-time windowing).
        max_cached_keys: bound of the per-worker structure cache (``None``: unbounded).
        nulls: ``"skip"`` (default, as SQL and pandas): the built-in aggregations leave out
            ``None`` and NaN values of their field (``None`` for a window without any
            other; ``count`` of a field counts the other values); ``"error"``: such a value
            is bad input (``BadEventError`` naming key and field). Custom aggregations and
            ``CombineFn``s get every value as it is.
        with_late_output: return ``result`` with ``result.rows`` and ``result.late`` (the
            late elements as they came in, with their original timestamps) instead of the
            rows alone.

    Output: schema'd ``beam.Row`` elements (a declared ``RowTypeConstraint``, which
    ``apache_beam.dataframe.convert.to_dataframe`` reads) with the columns every engine
    gives (:func:`adapters.engine.rows.output_columns`), each window emitted once, when
    final:

    * one ``[start, end)`` spec: ``<key>, window_start, window_end, <aggregations>``;
    * one per-event spec: the event's fields when the element type declares them (a
      ``beam.Row`` or ``NamedTuple`` schema; the key and time columns first if the event
      lacks them), else ``<key>, <time>, event``; then ``<aggregations>``;
    * several specs: ``window`` (the spec's index, int32), ``<key>, window_start,
      window_end``, then for per-event specs ``<time>`` and the event's other fields, then
      ``<aggregations>``; a row leaves the other kind's columns ``None``.

    ``<key>`` is ``key`` (``"key"``), ``<time>`` the ``time`` field (``"time"`` for the
    element timestamp or a function). Bounds and times are integer ms (a ``Timestamp`` time
    field gives ``Timestamp`` values); key and event fields keep their declared types; the
    built-in aggregations' types follow their declarations (count ``int``, mean ``float``,
    max of a ``float`` field ``float``...), anything unknown is ``typing.Any``.
    """

    def __init__(self, window: Any = None, aggregations: Mapping[str, Any] | Any = None, *,
                 windows: Sequence[Any] | None = None, allowed_lateness: Any = 0,
                 time: str | Callable[[Any], Any] | None = None, algorithm: str | None = None,
                 state: str = "auto", timestamps: str = "window",
                 max_cached_keys: int | None = None, with_late_output: bool = False,
                 label: str | None = None, nulls: str = "skip",
                 key: str | None = None) -> None:
        super().__init__(label)
        if state not in STATE_CHOICES:
            raise ValueError(f"state must be one of {STATE_CHOICES}, got {state!r}")
        if timestamps not in TIMESTAMP_CHOICES:
            raise ValueError(f"timestamps must be one of {TIMESTAMP_CHOICES}, got "
                             f"{timestamps!r}")
        if time is not None and not (isinstance(time, str) or callable(time)):
            raise TypeError(f"time must be None, a field name or a function, got {time!r}")
        if key is not None and not isinstance(key, str):
            raise TypeError(f"key must be None or a field name, got {key!r}")
        self.query = query_of_call(window, windows, aggregations, allowed_lateness,
                                   nulls=nulls)
        # Validate now (QuerySpecError names the bad field at pipeline construction), and
        # check that the algorithm fits.
        WindowDriver(parse_query(self.query), algorithm=algorithm)
        self.algorithm = algorithm
        self.time = time
        self.key = key
        self.state = state
        self.timestamps = timestamps
        self.max_cached_keys = max_cached_keys
        self.with_late_output = with_late_output

    def explain(self, bounded: bool = False) -> QueryPlan:
        """The path this transform's query takes on Beam, and why (``print()`` it): Beam
        calls the driver one key at a time from a stateful ``DoFn`` (``bounded``: the input
        is a bounded ``PCollection``, released at its end)."""
        state = {"auto": "ordered list or bag, chosen by the runner"}.get(self.state,
                                                                            self.state)
        facts = EngineFacts("beam", streaming=not bounded, calls=EngineFacts.PER_KEY,
                            state=f"user state per key (meta, log: {state}), one timer")
        return WindowDriver(parse_query(self.query), algorithm=self.algorithm).plan(facts)

    def _state_kind(self, pcoll: beam.PCollection) -> str:
        if self.state != "auto":
            return self.state
        from apache_beam.runners.direct.direct_runner import (
            BundleBasedDirectRunner,
            SwitchingDirectRunner,
        )
        runner = getattr(pcoll.pipeline, "runner", None)
        if isinstance(runner, BundleBasedDirectRunner):
            return "bag"
        if isinstance(runner, SwitchingDirectRunner) and not pcoll.is_bounded:
            return "bag"  # it will run on the BundleBasedDirectRunner
        return "ordered_list"

    def expand(self, pcoll: beam.PCollection) -> Any:
        windowfn = pcoll.windowing.windowfn
        if not isinstance(windowfn, GlobalWindows):
            pcoll = pcoll | "Into global window" >> beam.WindowInto(GlobalWindows())
        shape = input_shape(pcoll.element_type, self.key)
        query = parse_query(self.query)
        time_field = self.time if isinstance(self.time, str) else None
        check_fields(query, shape, time_field)
        schema = output_schema(query, shape, self.key, time_field)
        keyed = shape.form == "rows" or (shape.form == "untyped" and self.key is not None)
        if keyed:
            # the key's declared type gives the stateful DoFn a deterministic key coder
            keyed_type = beam.typehints.Tuple[shape.key_type, Any]
            pcoll = pcoll | f"Key by {self.key}" >> beam.Map(
                _keyed_by, self.key).with_output_types(keyed_type)
        elif shape.form == "untyped":
            # e.g. beam.Create([TimestampedValue(...)]) infers TimestampedValue: declare the
            # (key, value) pairs the stateful DoFn needs, checking each element's shape here,
            # before Beam's key coder fails on it with a message of its own.
            pcoll = pcoll | "As (key, value)" >> beam.Map(_as_pair).with_output_types(
                tuple[Any, Any])
        cls = dofn_class(self._state_kind(pcoll), timer_suffix(_full_label(pcoll, self.label)))
        dofn = cls(self.query, algorithm=self.algorithm, max_cached_keys=self.max_cached_keys,
                   time=self.time, wake_timers=not pcoll.is_bounded,
                   timestamps=self.timestamps, schema=schema, keyed=keyed)
        result = pcoll | "Windows" >> beam.ParDo(dofn).with_output_types(
            schema.row_type).with_outputs(LATE_TAG, main="rows")
        return result if self.with_late_output else result.rows


def _full_label(pcoll: beam.PCollection, label: str) -> str:
    """The full label of the transform being expanded (``Outer/Inner/...``): unique in the
    pipeline and the same each time the pipeline is built."""
    # Beam has no public accessor: Pipeline.apply pushes the AppliedPTransform it expands.
    current = pcoll.pipeline._current_transform()
    full_label: str = current.full_label
    if not full_label.endswith(label):
        raise RuntimeError(f"SlidingAggregate {label!r}: expanded outside Pipeline.apply "
                           f"(current transform {full_label!r})")
    return full_label


def _as_pair(element: Any) -> tuple[Any, Any]:
    """``element`` as a ``(key, value)`` pair; :class:`BadEventError` for any other shape."""
    if isinstance(element, (tuple, list)) and len(element) == 2 and not is_row(element):
        return element[0], element[1]
    raise BadEventError(
        f"SlidingAggregate takes (key, value) pairs, got {element!r:.80} "
        f"({type(element).__name__}): key the elements first, e.g. "
        f"beam.Map(lambda e: (e['origin'], e)), or name the key field: "
        f"SlidingAggregate(key='origin', ...)")


def _keyed_by(element: Any, key: str) -> tuple[Any, Any]:
    """``(key, element)`` for a row carrying field ``key`` or a ``(key, value)`` pair (the
    ``DoFn`` keeps the element itself: late elements leave unchanged)."""
    if is_row(element):
        try:
            return get_field(element, key), element
        except KeyError:
            raise BadEventError(f"SlidingAggregate(key={key!r}): the element has no field "
                                f"{key!r}: {element!r:.100}", key=None, field=key) from None
    if isinstance(element, (tuple, list)) and len(element) == 2:
        return element[0], element
    raise BadEventError(
        f"SlidingAggregate(key={key!r}) takes rows (beam.Row, NamedTuple, dict) with a field "
        f"{key!r}, or (key, value) pairs; got {element!r:.80} ({type(element).__name__})")


def explain(window: Any = None, aggregations: Mapping[str, Any] | Any = None, *,
            bounded: bool = False, **arguments: Any) -> QueryPlan:
    """The path :class:`SlidingAggregate` with the same arguments takes on Beam, and why
    (:class:`adapters.QueryPlan`; ``print()`` it). ``bounded``: the input is a bounded
    ``PCollection``."""
    return SlidingAggregate(window, aggregations, **arguments).explain(bounded)


__all__ = ["SlidingAggregate", "explain"]
