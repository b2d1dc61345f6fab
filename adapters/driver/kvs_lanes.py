"""Per-event structures in the MTA paper's KVS layout, kept in the key's engine map state
(``docs/adapters.md``, "KVS layout").

A lane is *eligible* when it is a time lane of OVER specs only (its entries are the distinct
event times: no open slice, no released-time index needed to emit). For a key whose
:class:`~adapters.state.backend.KeyState` offers ``pair_map()``, such a lane's structure is a
:class:`~swag_core.algorithms.mta_kvs.KvsAmta` (:class:`~swag_core.algorithms.mta_kvs.KvsLogMta`
if the lane's algorithm is ``log_mta``) over :class:`~adapters.state.pairs.LanePairs`:

* **save** (every call that changed the key): the structure is flushed and its local part
  written with the call's pairs (:meth:`KvsLanes.save`);
* **retention**: the structure is durable, so the event log keeps only pending events for it
  (:func:`is_kvs`, used by :meth:`~adapters.driver.key_store.KeyStore.retention_bound`);
* **load** after a cache miss or a restart: the structure is reopened from its local part
  (O(log n) reads), not rebuilt from the log (:meth:`KvsLanes.reopen`).

Which keys: ``Query.layout = "kvs"``: every key with a pair map, from its next load;
``"auto"``: a key's lane switches once its structure holds :data:`AUTO_MIN_ENTRIES` entries
(:data:`AUTO_MIN_ENTRIES_UNBOUNDED` when the driver's cache is unbounded: only memory is
saved then, no rebuilds), if its partials have a codec encoding (the built-in
aggregations' do; a user aggregation's may not); ``"memory"``: never. A key whose map
holds a lane's local part keeps the layout whatever the query says (its log no longer holds
that lane's events).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Final

from adapters.driver.key_runtime import KeyRuntime, LaneState
from adapters.driver.position_lanes import CountLane, PolicyLane
from adapters.driver.time_lane import TimeLane
from adapters.errors import CodecError, StateError
from adapters.query.specs import OverWindow, Query
from adapters.state.backend import KeyState
from adapters.state.codec import encode_value
from adapters.state.pairs import LanePairs, encode_locals
from swag_core import Window
from swag_core.algorithms.mta_kvs import KvsAmta, KvsLogMta, _KvsLayout

#: ``layout="auto"``: entries from which a key's eligible lane goes to the KVS layout when
#: the driver's structure cache is bounded (a miss would rebuild the structure)
AUTO_MIN_ENTRIES: Final = 1024
#: the same when the cache is unbounded (no rebuilds: only memory is saved)
AUTO_MIN_ENTRIES_UNBOUNDED: Final = 65536
#: head cache (per level) and write buffer of a lane's structure, in pairs: a refill per 16
#: evictions of a level, a store write per 16 retired pairs at most (and one per call)
CACHE_PAIRS: Final = 16

Lane = TimeLane | CountLane | PolicyLane


def is_kvs(w: Window) -> bool:
    """Whether structure ``w`` is in the KVS layout (durable in the key's pair map)."""
    return isinstance(w, _KvsLayout)


def uses_pairs(query: Query) -> bool:
    """Whether an engine's per-key state should offer a pair map for ``query``: when some
    window is per-event (the KVS layout's lanes are OVER-only), whatever its layout: a key
    whose map holds its structure keeps that layout (its log no longer holds the released
    events), so a restart with ``layout="memory"`` must still see the map."""
    return any(isinstance(w, OverWindow) for w in query.windows)


def _pair_map(state: KeyState) -> Any:
    get = getattr(state, "pair_map", None)
    return None if get is None else get()


class KvsLanes:
    """The KVS layout of a query's eligible lanes (see the module docstring).

    Args:
        query: the query (its ``layout``).
        lanes: the query's lanes.
        bounded: whether the driver's structure cache is bounded (``max_cached_keys``).
    """

    def __init__(self, query: Query, lanes: list[Lane], bounded: bool) -> None:
        self.layout = query.layout
        self.lanes = lanes
        self.eligible = [i for i, lane in enumerate(lanes)
                         if isinstance(lane, TimeLane) and lane.has_over and not lane.sliding]
        self.eligible_set = frozenset(self.eligible)
        self.auto_min = AUTO_MIN_ENTRIES if bounded else AUTO_MIN_ENTRIES_UNBOUNDED
        self._encodes: dict[int, bool] = {}
        self._fingerprints: dict[int, str] = {}
        # ``auto`` moves built-in aggregations only: a custom one's partials may encode for
        # some values and not for later ones
        self._builtins = all(a.fn is not None for a in query.aggregations)
        # every lane aggregates every output of the query (lifted_aggregation)
        self._sources = hashlib.blake2b(
            json.dumps([a.source for a in query.aggregations]).encode(),
            digest_size=8).hexdigest()

    def _class(self, i: int) -> type[_KvsLayout]:
        return KvsLogMta if self.lanes[i].algorithm == "log_mta" else KvsAmta

    def _fingerprint(self, i: int) -> str:
        """What a lane's stored pairs depend on: the structure and what every aggregation of
        the lane computes (fn, field, parameters, null mode: :attr:`AggSpec.source`; not the
        output names)."""
        fp = self._fingerprints.get(i)
        if fp is None:
            fp = self._fingerprints[i] = (f"{self._class(i).__name__}:"
                                          f"{self.lanes[i].aggregation.name}:{self._sources}")
        return fp

    def _new(self, i: int, pairs: LanePairs) -> Window:
        return self._class(i)(self.lanes[i].aggregation, pairs, cache_pairs=CACHE_PAIRS,
                              buffer_pairs=CACHE_PAIRS)

    # ------------------------------------------------------------------ load
    def reopen(self, rt: KeyRuntime, key: Any, state: KeyState, b: int | float,
               nonce: int, records: dict[int, bytes] | None) -> set[int]:
        """After a miss: give ``rt``'s eligible lanes their KVS structures (reopened from
        their local parts, or new and empty under ``layout="kvs"``); returns the lanes
        reopened (the others are restored from the log by the caller). ``records``: the
        local parts the metadata holds (:func:`~adapters.state.pairs.decode_locals`;
        ``None`` for metadata without them: no lane is in the KVS layout yet)."""
        if records and not self.eligible_set.issuperset(records):
            raise StateError(f"key {key!r}: its metadata holds window pairs of lanes "
                             f"{sorted(set(records) - self.eligible_set)}, which this query "
                             f"does not keep in the KVS layout (corrupt metadata)")
        if not self.eligible:
            return set()
        records = records or {}
        if records:
            pair_map = _pair_map(state)
            if pair_map is None:
                raise StateError(f"key {key!r}: its metadata holds window pairs but its "
                                 f"state offers no pair map")
        else:
            pair_map = None
        reopened = set()
        for i in self.eligible:
            ls = rt.lanes[i]
            data = records.get(i)
            if data is None:
                if self.layout == "kvs" and pair_map is None:
                    pair_map = _pair_map(state)
                if self.layout == "kvs" and pair_map is not None:
                    ls.w = self._new(i, LanePairs(pair_map, i, key))
                continue
            pairs = LanePairs(pair_map, i, key)
            fingerprint, ints, partials, tails, buffer = pairs.reopened(data)
            ls.w = self._reopen(i, key, pairs, fingerprint, ints, partials, tails, buffer)
            lane = self.lanes[i]
            assert isinstance(lane, TimeLane)
            ls.low = lane.need(b)
            reopened.add(i)
        return reopened

    def _reopen(self, i: int, key: Any, pairs: LanePairs, fingerprint: str, ints: list[int],
                partials: list[Any], tails: list[Any],
                buffer: list[tuple[int, Any]]) -> Window:
        if fingerprint != self._fingerprint(i):
            raise StateError(
                f"key {key!r}: its per-event structure was stored for {fingerprint!r}, this "
                f"query needs {self._fingerprint(i)!r} (structure:aggregation:hash of the "
                f"aggregation specs; the KVS layout keeps aggregates, not events: keep the "
                f"algorithm and the aggregations, or start from empty state)")
        cls = self._class(i)
        try:
            w: Window = cls.reopen(self.lanes[i].aggregation, pairs,
                                   (ints, partials, tails, buffer),
                                   cache_pairs=CACHE_PAIRS, buffer_pairs=CACHE_PAIRS)
        except (ValueError, TypeError, IndexError) as exc:
            raise StateError(f"key {key!r}: corrupt window pairs record: {exc}") from None
        return w

    def new_key(self, rt: KeyRuntime, key: Any, state: KeyState) -> None:
        """A key without state: KVS structures from the start under ``layout="kvs"``."""
        if self.layout != "kvs" or not self.eligible:
            return
        pair_map = _pair_map(state)
        if pair_map is not None:
            for i in self.eligible:
                rt.lanes[i].w = self._new(i, LanePairs(pair_map, i, key))

    # ------------------------------------------------------------------ save
    def save(self, rt: KeyRuntime, key: Any, state: KeyState, nonce: int) -> bytes:
        """Write the pairs of every KVS structure of ``rt`` (flushed; with the mark of
        ``nonce``, that of the metadata written next, if it wrote any) to the key's map and
        return their local parts as the metadata's extension
        (:func:`~adapters.state.pairs.encode_locals`; empty if no lane is in the KVS
        layout); under ``layout="auto"`` first move a structure that became large there.
        Every lane is encoded before any is written: an encoding error writes nothing."""
        lanes = rt.lanes
        writes = []
        records = []
        for i in self.eligible:
            ls = lanes[i]
            w = ls.w
            if not isinstance(w, _KvsLayout):
                if (self.layout != "auto" or not self._builtins or len(w) < self.auto_min
                        or not self._storable(i, w)):
                    continue
                pair_map = _pair_map(state)
                if pair_map is None:
                    continue
                w = self._moved(i, ls, LanePairs(pair_map, i, key))
            # the write buffer stays in the local part until it is full (KvsAmta.park):
            # most calls then write no pair
            ints, partials, tails, buffer = w.park()
            store = w.store
            assert isinstance(store, LanePairs)
            try:
                gone, puts, record = store.encode(self._fingerprint(i), ints, partials,
                                                  nonce, tails, buffer)
            except CodecError as exc:
                raise StateError(
                    f"key {key!r}: a partial aggregate of its per-event window cannot be "
                    f"stored in the KVS layout ({exc}); run this aggregation with "
                    f"layout='memory' (from empty state)") from exc
            writes.append((store, gone, puts))
            records.append((i, record))
        for store, gone, puts in writes:
            store.apply(gone, puts)
        return encode_locals(records) if records else b""

    def _storable(self, i: int, w: Window) -> bool:
        """Whether the lane's partials have a codec encoding (tried once per lane, on the
        oldest entry): ``auto`` leaves a lane of other partials in memory."""
        ok = self._encodes.get(i)
        if ok is None:
            try:
                encode_value(next(iter(w.items()))[1])
                ok = True
            except CodecError:
                ok = False
            self._encodes[i] = ok
        return ok

    def _moved(self, i: int, ls: LaneState, pairs: LanePairs) -> _KvsLayout:
        """The structure of ``ls`` moved to the KVS layout (once per key: O(entries))."""
        w = self._new(i, pairs)
        w.bulk_insert(ls.w.items())
        ls.w = w
        assert isinstance(w, _KvsLayout)
        return w


__all__ = ["AUTO_MIN_ENTRIES", "AUTO_MIN_ENTRIES_UNBOUNDED", "KvsLanes", "is_kvs",
           "uses_pairs"]
