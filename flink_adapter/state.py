"""The driver's per-key state (:class:`adapters.KeyState`) on Flink managed keyed state.

* **meta** (``swag_meta``): a ``ValueState`` of ``bytes``, read and written once per call.
* **event log** (``swag_log``): a ``MapState`` from the entry's arrival number ``seq`` (long)
  to ``(time, data)`` (long, bytes). Appending an entry is one ``put``; the driver's
  ``remove_events(before, keys)`` hands over exactly the ``(time, seq)`` of the entries to
  drop, so removal is one ``remove(seq)`` per entry: O(removed), whatever the window holds.
* **armed timer** (``swag_timer``): a ``ValueState`` of ``long``, the event-time timer the
  key has registered (one live timer per key: :mod:`flink_adapter.function`).
* **pair map** (``swag_pairs``, declared by queries with a per-event window:
  :func:`adapters.driver.kvs_lanes.uses_pairs`): a ``MapState`` from ``long`` to ``bytes``,
  the key's :class:`~adapters.state.pairs.PairMap` for the KVS layout (``layout="kvs"`` or
  ``"auto"``, ``docs/adapters.md``; map keys and values in the format of
  ``adapters/state/pairs.py``: pages of pairs). A cached structure holds it across calls;
  Flink scopes it to the key being processed, which is the structure's own key whenever
  the driver uses it.

Two small per-key values are also kept in a per-task write-through copy
(:class:`KeyCache`): the metadata (read on every call) and the armed timer. Flink changes a
key's state only through the operator instance that owns the key, and a restore or failover
builds new instances (whose copies start empty), so the copy always equals the state; it
saves a state read per call each (figures: ``docs/flink.md``, "Benchmark").

**Declared types per execution mode.** A ``bytes`` value is declared as
``PRIMITIVE_ARRAY(BYTE)`` in process mode (PyFlink's default: the Python worker codes it as
raw bytes). In thread mode (:mod:`flink_adapter.environment`) PyFlink 2.3 converts a declared
array with ``ArrayDataConverter`` (``pyflink/fn_execution/embedded/converters.py``), which
turns an absent value into ``tuple(None)`` (``TypeError: 'NoneType' object is not
iterable``) and a present one into a tuple of ints, so there the value is declared
``PICKLED_BYTE_ARRAY`` (``PickleDataConverter``: ``None`` stays ``None``, ``bytes`` come back
as ``bytes``; the JVM holds a ``byte[]``). Process mode stores what it always did. A
checkpoint restores only in the mode that wrote it whatever the declaration: process mode
keeps every state as the worker's coded bytes (Flink's ``BeamKeyedStateStore``), thread mode
in the declared Java types.

``read_events`` is only called when the driver's process-local cache misses (a new task, a
restore from a checkpoint, a rescaled key); it reads the whole map once. Nothing stored here
is pickled: the bytes are the shared codec's (``adapters.state.codec``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pyflink.common import Types
from pyflink.common.typeinfo import TypeInformation
from pyflink.datastream.state import MapStateDescriptor, ValueStateDescriptor

from adapters import StateError

#: State names (part of the job's state layout: keep them for savepoint compatibility).
META_NAME = "swag_meta"
LOG_NAME = "swag_log"
TIMER_NAME = "swag_timer"
PAIRS_NAME = "swag_pairs"

_BYTES = Types.PRIMITIVE_ARRAY(Types.BYTE())
#: ``bytes`` in thread mode, where a declared byte array fails on an absent value.
_EMBEDDED_BYTES = Types.PICKLED_BYTE_ARRAY()
#: Keys a :class:`KeyCache` holds before it starts over (each entry is a few dozen bytes).
CACHE_KEYS = 65_536
#: What :meth:`KeyCache.get` returns for a key it does not hold.
MISSING: Any = object()
#: :attr:`FlinkKeyState.key` when no key is set: the metadata is not cached.
NO_KEY: Any = object()


def bytes_type(embedded: bool = False) -> TypeInformation:
    """The declared type of a ``bytes`` state value: ``PRIMITIVE_ARRAY(BYTE)``, or in thread
    mode (``embedded``) ``PICKLED_BYTE_ARRAY`` (module docstring)."""
    return _EMBEDDED_BYTES if embedded else _BYTES


def meta_descriptor(embedded: bool = False) -> ValueStateDescriptor:
    """The ``ValueState<byte[]>`` holding the driver's metadata."""
    return ValueStateDescriptor(META_NAME, bytes_type(embedded))


def log_descriptor(embedded: bool = False) -> MapStateDescriptor:
    """The ``MapState<Long, Tuple2<Long, byte[]>>`` holding the event log by ``seq``."""
    return MapStateDescriptor(LOG_NAME, Types.LONG(),
                              Types.TUPLE([Types.LONG(), bytes_type(embedded)]))


def pairs_descriptor(embedded: bool = False) -> MapStateDescriptor:
    """The ``MapState<Long, byte[]>`` of the KVS layout's pairs."""
    return MapStateDescriptor(PAIRS_NAME, Types.LONG(), bytes_type(embedded))


def runs_embedded(runtime_context: Any) -> bool:
    """True when the function runs in PyFlink's thread mode (Python embedded in the JVM
    through PEMJA): its runtime context is PyFlink's embedded one. (The embedded modules
    cannot be imported to compare classes: they need PEMJA's JVM bridge.)"""
    return ".embedded." in type(runtime_context).__module__


def timer_descriptor() -> ValueStateDescriptor:
    """The ``ValueState<Long>`` holding the key's armed event-time timer."""
    return ValueStateDescriptor(TIMER_NAME, Types.LONG())


class KeyCache:
    """A per-task copy of one small keyed-state value per key, written through by its
    owner (see the module docstring for why it always equals the state). Bounded: past
    ``limit`` keys it drops everything and refills from the state."""

    __slots__ = ("_limit", "_values")

    def __init__(self, limit: int = CACHE_KEYS) -> None:
        self._values: dict[Any, Any] = {}
        self._limit = limit

    def get(self, key: Any) -> Any:
        """The value stored for ``key``, or :data:`MISSING`."""
        return self._values.get(key, MISSING)

    def put(self, key: Any, value: Any) -> None:
        """Record ``value`` for ``key`` (call it after the state write succeeded)."""
        values = self._values
        if len(values) >= self._limit and key not in values:
            values.clear()
        values[key] = value


class FlinkPairMap:
    """:class:`adapters.state.pairs.PairMap` over the current key's ``swag_pairs``
    ``MapState`` (one element per map key: the KVS layout stores pages of pairs, so a call
    touches few)."""

    __slots__ = ("_map",)

    def __init__(self, map_state: Any) -> None:
        self._map = map_state

    def get_many(self, keys: Sequence[int]) -> list[bytes | None]:
        get = self._map.get
        out: list[bytes | None] = []
        for k in keys:
            value = get(k)
            out.append(None if value is None else bytes(value))
        return out

    def put_many(self, items: Sequence[tuple[int, bytes]]) -> None:
        # not put_all: PyFlink 2.3 iterates its dict argument as (key, value) pairs; put
        # goes to PyFlink's write cache anyway (sent to the JVM in batches)
        put = self._map.put
        for k, v in items:
            put(k, v)

    def delete_many(self, keys: Sequence[int]) -> None:
        remove = self._map.remove
        for k in keys:
            remove(k)


class FlinkKeyState:
    """:class:`adapters.KeyState` over the current key's ``ValueState`` + ``MapState``
    (and, given ``pairs``, the ``swag_pairs`` map: :meth:`pair_map`).

    Flink scopes keyed state to the key of the element or timer being processed, so one
    instance serves every key of the operator. The process function sets :attr:`key` to
    that key before each driver call, which lets the metadata be served from a
    :class:`KeyCache`; left at :data:`NO_KEY`, every read goes to Flink.
    """

    __slots__ = ("_metas", "_pairs", "key", "log", "meta")

    def __init__(self, meta: Any, log: Any, pairs: Any = None) -> None:
        self.meta = meta
        self.log = log
        self.key: Any = NO_KEY
        self._metas = KeyCache()
        self._pairs = None if pairs is None else FlinkPairMap(pairs)

    def pair_map(self) -> FlinkPairMap | None:
        """The key's pair map (``None`` for a query without a per-event window)."""
        return self._pairs

    def get_meta(self) -> bytes | None:
        key = self.key
        if key is not NO_KEY:
            cached = self._metas.get(key)
            if cached is not MISSING:
                return cached
        data = self.meta.value()
        data = None if data is None else bytes(data)
        if key is not NO_KEY:
            self._metas.put(key, data)
        return data

    def put_meta(self, data: bytes) -> None:
        self.meta.update(data)
        if self.key is not NO_KEY:
            self._metas.put(self.key, data)

    def add_events(self, entries: Sequence[tuple[int, int, bytes]]) -> None:
        put = self.log.put
        for time, seq, data in entries:
            put(seq, (time, data))

    def read_events(self) -> list[tuple[int, int, bytes]]:
        out = [(time, seq, bytes(data)) for seq, (time, data) in self.log.items()]
        if not out and not self.log.is_empty():
            # With PyFlink 2.3 in BATCH execution, inside on_timer, iterating a
            # MapState yields nothing although it holds entries (is_empty() is False, get()
            # finds them). Rebuilding from that would silently drop the key's events.
            raise StateError(
                "PyFlink returned no entries when iterating the swag_log MapState, which is "
                "not empty (PyFlink 2.3 does this in on_timer under BATCH execution); the "
                "driver's cache missed there: do not set max_cached_keys in BATCH mode")
        return out

    def remove_events(self, before: int, keys: Sequence[tuple[int, int]]) -> None:
        remove = self.log.remove
        for _time, seq in keys:
            remove(seq)


__all__ = ["CACHE_KEYS", "LOG_NAME", "META_NAME", "MISSING", "NO_KEY", "PAIRS_NAME",
           "TIMER_NAME", "FlinkKeyState", "FlinkPairMap", "KeyCache", "bytes_type",
           "log_descriptor", "meta_descriptor", "pairs_descriptor", "runs_embedded",
           "timer_descriptor"]
