"""The cross-key batch runtime for per-event (OVER) windows:
:meth:`adapters.WindowDriver.process_batch` and :meth:`~adapters.WindowDriver.advance_keys` of a
query of one ``{"kind": "over", "range": R}`` window and one ``max``, ``min``, ``sum`` or
``mean`` of a field, on batches of ``(key, int time, {field: finite float})`` events (each
value a dict of that field alone, so that a row's ``"event"`` equals the event's value).

It is :class:`~adapters.crosskey.batch_runtime.BatchRuntime` with slices of one millisecond
(an OVER lane's slices are its distinct event times: peers fold into one slice) and its own
emission: when the watermark releases events (``time < watermark - allowed lateness``), each
released event's row is the aggregate of its key's slices in ``[t - R, t]`` (every event of
that frame is released by then: a later one would be late). All rows of a call at once:
frames by binary search on (key, time) (:func:`~adapters.crosskey.over_runtime.frames_at`),
``max`` / ``min`` from a sparse table over the slice partials
(:func:`~adapters.crosskey.over_runtime.range_extreme`: O(1) per row, where a reduction of
each frame would cost its ~R slices), sums and means as differences of exact prefix sums.
Everything about state (log entries, metadata, trim point ``B - R``, timers, taking a key
over from the per-key path, rebuilds, ``max_cached_keys``) is the base runtime's, through
:class:`~adapters.driver.key_store.KeyStore`, so the state is the per-key path's and either
path continues from what the other wrote.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

from adapters.crosskey.batch_runtime import BatchRuntime, _NotCovered
from adapters.crosskey.columnar import ColumnarIntake
from adapters.crosskey.over_runtime import float_partials, frames_at, range_extreme
from adapters.driver.kernels import kernel_for
from adapters.driver.key_runtime import VALUE, KeyRuntime
from adapters.driver.key_store import KeyStore
from adapters.driver.results import Output
from adapters.driver.time_lane import TimeLane
from adapters.query.specs import AggSpec, OverWindow
from adapters.state.backend import StateBackend
from adapters.state.codec import encode_float_record_segment

try:
    import numpy as np
except ImportError:  # pragma: no cover - without NumPy the per-key path runs
    np = None  # type: ignore[assignment]


_VALUE = operator.itemgetter(2)


class OverBatchRuntime(BatchRuntime):
    """See the module docstring. Build it with :meth:`for_over` (``None``: not covered)."""

    #: batches of int values take the per-key path (rows rebuild the event from a float)
    _TAKES_INTS = False

    def __init__(self, store: KeyStore, intake: ColumnarIntake, lane: TimeLane,
                 spec: AggSpec) -> None:
        kernel = kernel_for(spec)
        assert kernel is not None and spec.fn is not None
        super().__init__(store, intake, lane, [spec.fn], [kernel])
        #: ``np.maximum`` / ``np.minimum`` for max / min, else ``None`` (exact sums)
        comp = self._comps[0]
        self._select = comp.ufunc if comp.kind == "select" else None
        (self._idx, window), = lane.specs
        assert isinstance(window, OverWindow)
        self._range = window.range

    @classmethod
    def for_over(cls, store: KeyStore, aggregations: Sequence[AggSpec],
                 forced: str | None) -> OverBatchRuntime | None:
        """The runtime of an OVER query whose keys ``store`` holds, or ``None`` if it does
        not cover it (see the module docstring)."""
        lanes = store.lanes
        if store.query.layout == "kvs":
            return None  # the per-key path keeps the windows in the keys' pair maps
        if (np is None or forced is not None or len(lanes) != 1 or len(aggregations) != 1
                or not isinstance(lanes[0], TimeLane) or len(lanes[0].specs) != 1
                or not isinstance(lanes[0].specs[0][1], OverWindow)):
            return None
        spec = aggregations[0]
        kernel = kernel_for(spec)
        if kernel is None or kernel.field is None or spec.fn not in ("max", "min", "sum",
                                                                     "mean"):
            return None
        if encode_float_record_segment(kernel.field, 2, b"", b"") is None:
            return None  # not storable as a packed header key
        lane = lanes[0]
        probe = object()
        if spec.fn in ("max", "min") and lane.aggregation.lower_fn(probe) is not probe:
            return None  # max and min results are their partials
        return cls(store, ColumnarIntake(kernel.field, [True]), lane, spec)

    def process(self, events: Sequence[Any], backend: StateBackend,
                watermark: int | float | None, out: Output) -> bool:
        """As the base's, for batches whose every value is a dict of the field alone (a
        row's ``"event"`` is rebuilt from the float)."""
        try:  # (the reader checks that the field is there)
            if set(map(len, map(_VALUE, events))) != {1}:
                return False
        except (TypeError, IndexError):
            return False  # not triples of dicts: the per-key path reports it
        return super().process(events, backend, watermark, out)

    def _run_partials(self, columns: list[Any], run_at: Any, run_end: Any,
                      goes_on: Any) -> list[Any]:
        """As the base's; the exact partials of sums and means (each run usually one event:
        an OVER lane's slices are its distinct times) from vectorized fixed-point values
        (:func:`~adapters.crosskey.over_runtime.float_partials`, ``lift_float`` of each
        value) added per run, the same ints the kernel's fold gives."""
        (rx,) = columns  # one field
        if self._select is not None or not len(rx) or not np.isfinite(rx).all():
            return super()._run_partials(columns, run_at, run_end, goes_on)
        lifted = float_partials(rx)
        parts = np.empty(len(run_at), object)
        if len(run_at) == len(rx):
            parts[:] = lifted
        else:
            parts[:] = [sum(lifted[a:e]) for a, e in zip(run_at.tolist(), run_end.tolist())]
        parts[goes_on] = 0  # continued by the caller (never with one-millisecond slices)
        return [parts]

    def _pending_pairs(self, rt: KeyRuntime) -> list[tuple[Any, ...]]:
        """The per-key runtime's pending events as ``(time, float)`` from their values
        (an OVER lane's records hold the lifted value and the event's value);
        :class:`_NotCovered` for a value that is not a dict of one float, or is NaN (a
        missing value the per-key path skips)."""
        field = self._field
        pairs = []
        for rec in sorted(rt.pending, key=lambda rec: rec[0]):  # stable: (time, arrival)
            value = rec[VALUE]
            x = value.get(field) if type(value) is dict and len(value) == 1 else None
            if type(x) is not float or x != x:
                raise _NotCovered
            pairs.append((rec[0], x))
        return pairs

    def _emit(self, keys: list[Any], ids: Any,
              windows: list[tuple[int, int | float, int | float]],
              rows: list[dict[str, Any]], released: tuple[Any, ...]) -> None:
        """A row per released event: its key's slices in ``[t - R, t]`` aggregated; per key
        in call order, time order within a key."""
        rid, rtime, rx = released
        if not len(rid):
            return
        closed = self._closed
        lo, hi = frames_at(closed[0], closed[1], rid, rtime, self._range)
        if self._select is not None:
            values = range_extreme(self._select is np.maximum, closed[2], None, lo, hi)
        else:
            values = np.empty(len(lo), object)
            values[:] = self._window_values(closed, lo, hi)
        pos_of = np.zeros(self._next_id, np.int64)
        pos_of[ids] = np.arange(len(ids))
        order = np.argsort(pos_of[rid], kind="stable")  # (position, time, arrival)
        key_of = np.empty(len(keys), object)
        for i, key in enumerate(keys):  # (a slice assignment would unpack tuple keys)
            key_of[i] = key
        idx, name, field = self._idx, self._out, self._field
        assert name is not None  # one output
        rows.extend([{"window": idx, "key": k, "time": t, "event": {field: x}, name: v}
                     for k, t, x, v in zip(key_of[pos_of[rid[order]]].tolist(),
                                           rtime[order].tolist(), rx[order].tolist(),
                                           values[order].tolist())])
