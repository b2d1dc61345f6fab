"""The seam between the per-key and the cross-key paths: what happens to one key between two
calls, written once.

A :class:`KeyStore` is owned by a :class:`~adapters.WindowDriver` (``driver.key_store``) and
used by both of its paths: the per-key path (``process`` / ``advance_watermark``) and the
cross-key batch runtime (:mod:`adapters.crosskey.batch_runtime`, ``process_batch`` /
``advance_keys``). It holds the query's lanes and does, for one key:

* **load** its runtime: the cached one if it matches the key's metadata (a random nonce,
  rewritten on every call, so a runtime the other path or a restore made stale is detected),
  else rebuilt from the event log (:meth:`load`, :meth:`forget`, :meth:`clear`); the cache
  is bounded by ``max_cached_keys`` (least recently used keys go first);
* **save** a call's state writes: log removals, the new log entry, the metadata
  (:meth:`write`), for a :class:`~adapters.driver.key_runtime.KeyRuntime` or any record with
  the same counters (:class:`~adapters.driver.key_runtime.KeyCounters`);
* **release, emit, evict** when its watermark advances (:meth:`advance`) and **trim** its
  log to what a window can still need (:meth:`trim_log`, :meth:`retention_bound`);
* its **timer**: the smallest watermark at which an advance emits something (:meth:`timer`).

The cross-key runtime keeps pending events and slices of all keys in NumPy arrays, so it
releases, folds and emits with array operations instead of :meth:`advance`; it takes every
*decision* from here and the time lane: the boundary (``watermark - lateness``), the trim
point (:meth:`adapters.driver.time_lane.TimeLane.need`), which log entries go
(:meth:`trim_log`), the due window ends (:func:`adapters.driver.time_lane.end_after`,
:func:`~adapters.driver.time_lane.due_window_ends`), the timer (:meth:`timer`), the state
writes (:meth:`write`) and, on a cache miss, the rebuild (:meth:`load`).
"""

from __future__ import annotations

import heapq
import operator
import random
from bisect import bisect_left
from collections import OrderedDict
from collections.abc import Container
from typing import Any

from adapters.driver.intake import Intake
from adapters.driver.key_runtime import (
    INF,
    TIME,
    KeyCounters,
    KeyRuntime,
    LaneState,
    Record,
    pop_segments,
)
from adapters.driver.kvs_lanes import KvsLanes, is_kvs
from adapters.driver.position_lanes import CountLane, PolicyLane
from adapters.driver.time_lane import TimeLane, end_after
from adapters.errors import BadEventError, CodecError, StateError
from adapters.query.specs import Query, SlidingWindow
from adapters.state.backend import KeyState
from adapters.state.codec import (
    MetaWriter,
    decode_entry,
    decode_meta,
    decode_watermark,
    split_meta,
)
from adapters.state.pairs import decode_locals
from swag_core import make_window

_COMPACT_MIN = 4096
_TIME = operator.itemgetter(TIME)

#: a lane: one structure per key and the specs it answers
Lane = TimeLane | CountLane | PolicyLane
#: ``remove_events(before, keys)`` arguments of a log trim (``None``: nothing to remove)
Removal = tuple[int, list[tuple[int, int]]] | None


def _row_time(row: dict[str, Any]) -> int:
    end = row.get("end")
    return end if end is not None else row["time"] + 1


_getrandbits = random.Random().getrandbits


class KeyStore:
    """Loading, saving, timers and release/emit/evict/trim of a query's keys (see the module
    docstring).

    Args:
        query: the parsed query (its fingerprint and allowed lateness).
        lanes: the query's lanes, policy lanes last.
        intake: the per-key intake (a rebuild re-accepts the logged events with it).
        max_cached_keys: bound of the runtime cache (``None``: no bound).
    """

    def __init__(self, query: Query, lanes: list[Lane], intake: Intake,
                 max_cached_keys: int | None) -> None:
        if max_cached_keys is not None and max_cached_keys < 1:
            raise ValueError(f"max_cached_keys must be >= 1 or None, got {max_cached_keys}")
        self.query = query
        #: the allowed lateness: a key's boundary is ``watermark - lateness``
        self.lateness = query.allowed_lateness
        self.lanes = lanes
        self.intake = intake
        #: the cache bound (``None``: no bound)
        self.max_cached = max_cached_keys
        self._cache: dict[Any, KeyRuntime] = OrderedDict() if max_cached_keys else {}
        self._first_policy = sum(not isinstance(lane, PolicyLane) for lane in lanes)
        self._sliding = [(spec.range, spec.slide, spec.offset + spec.range)
                         for lane in lanes if isinstance(lane, TimeLane)
                         for _, spec in lane.specs if isinstance(spec, SlidingWindow)]
        self._per_event = any(not isinstance(lane, TimeLane) or lane.has_over
                              for lane in lanes)
        self._write_meta = MetaWriter(query.fingerprint)
        #: the lanes that may keep their structure in the key's map state (KVS layout)
        self.kvs = KvsLanes(query, lanes, max_cached_keys is not None)

    # ------------------------------------------------------------------ the cache
    def cached(self, key: Any) -> KeyRuntime | None:
        """The cached runtime of ``key`` as it is (not checked against its state)."""
        return self._cache.get(key)

    def forget(self, key: Any) -> None:
        """Drop the cached runtime of ``key`` (rebuilt from its state when it comes back)."""
        self._cache.pop(key, None)

    def clear(self) -> None:
        """Drop every cached runtime."""
        self._cache.clear()

    def remember(self, key: Any, rt: KeyRuntime) -> None:
        """Cache ``rt`` as the runtime of ``key`` (the most recently used one); beyond
        ``max_cached_keys`` the least recently used keys are dropped."""
        cache = self._cache
        cache[key] = rt
        if self.max_cached is not None:
            assert isinstance(cache, OrderedDict)
            cache.move_to_end(key)
            while len(cache) > self.max_cached:
                cache.popitem(last=False)

    def load(self, key: Any, state: KeyState, meta: Any = False) -> KeyRuntime:
        """The runtime of ``key``: the cached one if it matches ``state``'s metadata
        (``meta``: already read, else read here), else rebuilt from the state and cached.
        Raises :class:`~adapters.errors.StateError` for state it cannot use."""
        if meta is False:
            meta = state.get_meta()
        rt = self._cache.get(key)
        if rt is not None and (rt.meta_bytes is meta or rt.meta_bytes == meta):
            if self.max_cached is not None:
                self._cache.move_to_end(key)  # type: ignore[attr-defined]
            return rt
        if meta is not None and not getattr(state, "keeps_log", True):
            raise StateError(
                f"key {key!r}: its state keeps no event log (TransientKeyState) and its "
                f"structures are no longer cached, so they cannot be rebuilt; do not drop "
                f"the cache of such a key nor bound max_cached_keys below the live keys")
        if meta is None:
            rt = self._new_runtime()
            self.kvs.new_key(rt, key, state)
        else:
            rt = self._rebuild(key, state, meta)
        self.remember(key, rt)
        return rt

    def _new_runtime(self, reopened: Container[int] = ()) -> KeyRuntime:
        """A runtime with new, empty structures (none for the lanes ``reopened``, which the
        caller gives theirs)."""
        return KeyRuntime([LaneState(None if i in reopened  # type: ignore[arg-type]
                                     else make_window(lane.algorithm, lane.aggregation))
                           for i, lane in enumerate(self.lanes)])

    def _rebuild(self, key: Any, state: KeyState, meta_bytes: bytes) -> KeyRuntime:
        text, extension = split_meta(meta_bytes)
        meta = decode_meta(text)
        if meta.get("q") != self.query.fingerprint:
            raise StateError(
                f"the state of key {key!r} was written by a query with different windows or "
                f"allowed lateness (fingerprint {meta.get('q')!r}, this query "
                f"{self.query.fingerprint!r}); start from empty state or keep the query")
        records = None if extension is None else decode_locals(extension)
        # the lanes the metadata holds local parts of are reopened: no structure to build
        rt = self._new_runtime(records or ())
        wm = meta["wm"]
        rt.wm = decode_watermark(wm)
        rt.seq, rt.released, rt.late = int(meta["seq"]), int(meta["rel"]), int(meta["late"])
        b = rt.wm - self.lateness
        released, pending, segments = self._read_log(key, state, b)
        if len(released) > rt.released:
            raise StateError(f"key {key!r}: the state holds {len(released)} released events "
                             f"but its metadata counts {rt.released}")
        heapq.heapify(segments)
        rt.segments = segments
        rt.pending = pending  # sorted by (time, seq)
        rt.pending_min = pending[0][0] if pending else INF
        rt.times = [r[0] for r in released]
        policy_lengths = iter(meta.get("pol", []))
        reopened = self.kvs.reopen(rt, key, state, b, meta["n"], records)
        for i, (lane, ls) in enumerate(zip(self.lanes, rt.lanes)):
            if i not in reopened:
                lane.restore(ls, rt, released, b, key, policy_lengths)
        # retain what a live runtime retains (``trim_log``): the log keeps whole entries,
        # some older than the lanes need
        rt.head = bisect_left(rt.times, self.retention_bound(rt, b))
        rt.meta_bytes = meta_bytes
        return rt

    def _read_log(self, key: Any, state: KeyState, b: int | float
                  ) -> tuple[list[Record], list[Record], list[tuple[int, int]]]:
        """The key's logged events as the records a live run made of them (none is late:
        boundary -inf), split at boundary ``b`` into released and pending, and the log
        entries ``(newest time, seq)``."""
        events: list[tuple[int, int, Any]] = []
        segments: list[tuple[int, int]] = []
        for time, seq, data in state.read_events():
            segments.append((time, seq))
            try:
                events.extend(decode_entry(time, seq, data))
            except CodecError as exc:
                raise StateError(f"key {key!r}: corrupt event entry at time {time}: "
                                 f"{exc}") from None
        if not events:
            return [], [], segments
        events.sort(key=lambda e: (e[0], e[1]))
        try:
            records = self.intake.accept(key, [e[0] for e in events], [e[2] for e in events],
                                         -INF, encode=False)[0]
        except BadEventError as exc:
            raise StateError(f"key {key!r}: a stored event can no longer be aggregated "
                             f"by this query: {exc}") from None
        i = bisect_left(records, b, key=_TIME)
        return list(records[:i]), list(records[i:]), segments

    # ------------------------------------------------------------------ saving
    def write(self, state: KeyState, rt: KeyCounters, removal: Removal,
              entry: tuple[int, int, bytes] | None, policy: str = "", key: Any = None) -> None:
        """A call's state writes for one key (``rt``: its runtime, per-key or cross-key;
        ``policy``: :meth:`policy_lengths`): the structures in the KVS layout (per-key
        runtimes; ``key`` names the key), log removals, the new log entry, then the
        metadata, which the runtime remembers (a restart or the other path is detected by it
        changing)."""
        nonce = None
        locals_ = b""
        if self.kvs.eligible and isinstance(rt, KeyRuntime):
            # the structures' local parts go with the metadata (one value: one write, and a
            # miss reads them with it); pairs written to the map carry the call's nonce in
            # a mark that the local parts name, so a reload detects a call that failed
            # between the two writes (a state without transactions)
            nonce = _getrandbits(62) + 1
            locals_ = self.kvs.save(rt, key, state, nonce)
        meta = self._write_meta(rt.wm, rt.seq, rt.released, rt.late, policy, nonce)
        if locals_:
            meta += locals_
        if removal is not None:
            state.remove_events(*removal)
        if entry is not None:
            state.add_events([entry])
        state.put_meta(meta)
        rt.meta_bytes = meta

    def policy_lengths(self, rt: KeyRuntime) -> str:
        """The metadata's policy-lane lengths (comma-separated; empty without policies)."""
        if self._first_policy == len(rt.lanes):
            return ""
        return ",".join([str(len(ls.w)) for ls in rt.lanes[self._first_policy:]])

    def next_timer(self, rt: KeyRuntime) -> int | None:
        """:meth:`timer` of a per-key runtime."""
        times = rt.times
        return self.timer(rt.wm, times[-1] if len(times) > rt.head else None,
                          rt.pending_min)

    def timer(self, wm: int | float, last: int | None, pmin: int | float) -> int | None:
        """Smallest watermark at which an advance emits something, for a key with watermark
        ``wm``, newest retained released event time ``last`` (``None``: none; a time in the
        same slice answers the same) and oldest pending time ``pmin`` (``INF``: none)."""
        boundary = wm - self.lateness
        best: int | float = INF
        for r, s, e0 in self._sliding:
            if last is not None and -INF < boundary < INF:
                e1 = end_after(boundary, s, e0)
                if last >= e1 - r:  # a released event is in the window ending at e1
                    if e1 < best:
                        best = e1
                    continue
            if pmin != INF:
                e = end_after(pmin, s, e0)
                if e < best:
                    best = e
        if self._per_event and pmin + 1 < best:
            best = pmin + 1
        if best == INF:
            return None
        return int(best) + self.lateness

    # ------------------------------------------------------------------ release, emit, evict, trim
    def advance(self, rt: KeyRuntime, key: Any, watermark: int | float,
                rows: list[dict[str, Any]]) -> Removal:
        """Advance the key's watermark to ``watermark`` (larger than its own): release the
        pending events older than the new boundary, let every lane emit its due rows into
        ``rows`` (time order) and evict; returns the log removal to apply (:meth:`trim_log`)."""
        b_old = rt.wm - self.lateness
        rt.wm = watermark
        b = watermark - self.lateness
        new = self._release(rt, b)
        lanes = self.lanes
        if len(lanes) == 1:
            lanes[0].release(rt.lanes[0], rt, key, new, b_old, b, rows)
        else:
            per_lane: list[list[dict[str, Any]]] = []
            for lane, ls in zip(lanes, rt.lanes):
                lane_rows: list[dict[str, Any]] = []
                lane.release(ls, rt, key, new, b_old, b, lane_rows)
                if lane_rows:
                    per_lane.append(lane_rows)
            if len(per_lane) == 1:
                rows.extend(per_lane[0])
            elif per_lane:
                rows.extend(heapq.merge(*per_lane, key=_row_time))
        return self._trim_released(rt, b)

    @staticmethod
    def _release(rt: KeyRuntime, b: int | float) -> list[Record]:
        """Take the pending records older than boundary ``b`` (in ``(time, arrival)``
        order) and index their times as released."""
        pending = rt.pending
        if not pending or rt.pending_min >= b:
            return []
        if not rt.pending_sorted:  # stable: equal times stay in arrival order
            pending.sort(key=_TIME)
            rt.pending_sorted = True
        if b == INF:
            new, rt.pending = pending, []
            rt.pending_min = INF
        else:  # pending is sorted by (time, seq): release its prefix before b
            i = bisect_left(pending, b, key=_TIME)
            new = pending[:i]
            del pending[:i]
            rt.pending_min = pending[0][0] if pending else INF
        rt.times.extend(map(_TIME, new))
        rt.released += len(new)
        return new

    def _trim_released(self, rt: KeyRuntime, b: int | float) -> Removal:
        """Forget released events no lane needs at boundary ``b``; returns the log removal
        (:meth:`trim_log`) for the entries whose newest event is older than that."""
        times, head = rt.times, rt.head
        if head == len(times):
            return None
        bound = self.retention_bound(rt, b)
        if times[head] >= bound:
            return None
        k = bisect_left(times, bound, head)
        if k >= _COMPACT_MIN and k + k >= len(times):
            del times[:k]
            k = 0
        rt.head = k
        return self.trim_log(rt, bound)

    @staticmethod
    def trim_log(rt: KeyCounters, bound: int | float) -> Removal:
        """Pop the log entries of ``rt`` whose newest event is older than ``bound`` (the
        oldest time a window can still need); returns the ``remove_events`` arguments for
        :meth:`write`, or ``None``."""
        return pop_segments(rt.segments, bound)

    def retention_bound(self, rt: KeyRuntime, b: int | float) -> int | float:
        """The oldest time any lane still needs at boundary ``b`` (at most ``b``; for a time
        lane :meth:`~adapters.driver.time_lane.TimeLane.need`)."""
        bound = b
        for lane, ls in zip(self.lanes, rt.lanes):
            if is_kvs(ls.w):
                continue  # durable in the key's map state: the log keeps its pending only
            need = lane.retention(ls, rt, b)
            if need < bound:
                bound = need
        return bound


__all__ = ["KeyStore", "Lane", "Removal"]
