"""The storage interface engine adapters implement, and the in-memory reference backend.

Per key the driver stores two things (``docs/adapters.md``, "State"):

* **meta**: one small value (a few dozen bytes: watermark, counters, codec version), written
  once per call, read once per call;
* **the event log**: the key's accepted, not yet evicted events, one entry
  ``(time, seq, data)`` per call that accepted events. ``data`` holds the call's events
  (:func:`adapters.state.codec.encode_entry`), ``time`` is their newest time in ms, ``seq`` the
  key's arrival number of the first of them (unique per key, so ``(time, seq)`` identifies an
  entry). The driver appends one entry per call and removes whole time-prefixes once no
  window needs any of an entry's events.

How the engines map it:

==========  ===========================  ================================================
engine      meta                         event log
==========  ===========================  ================================================
Flink       ``ValueState[bytes]``        ``MapState[seq -> (time, data)]``; remove by key
Spark       ``ValueState`` (binary)      ``ListState`` of packed segments, one per call
                                         (:mod:`adapters.state.segments`)
Beam        ``ReadModifyWriteState``     ``OrderedListState`` with sort key ``time``:
                                         ``clear_range(min, before)``
==========  ===========================  ================================================
"""

from __future__ import annotations

import bisect
import operator
from collections.abc import Hashable, Iterable, Iterator, Sequence
from typing import Any, Protocol, runtime_checkable

from adapters.errors import StateError
from adapters.state.pairs import MemoryPairMap

#: One log entry: (event time in ms, arrival sequence number, encoded value).
LogEntry = tuple[int, int, bytes]
_TIME, _SEQ, _DATA = (operator.itemgetter(i) for i in range(3))
_FEW = 8  # batches up to this size are inserted item by item


def append_sorted(log: list[Any], batch: list[Any]) -> None:
    """Append ``batch`` to ``log``, both sorted by their items' first element (a time),
    keeping ``log`` sorted; of equal times, ``log``'s items stay first. O(len(batch)) when
    ``batch`` is not older than ``log``'s newest item; otherwise a binary search per item and
    a C-level move of the items newer than it (a few items), or one merge of the batch with
    the items newer than ``batch[0]`` (many). ``batch`` may be modified."""
    if not log or batch[0][0] >= log[-1][0]:
        log.extend(batch)
        return
    i = bisect.bisect_right(log, batch[0][0], key=_TIME)
    if len(batch) <= _FEW:
        for item in batch:  # after equal times: ties stay in arrival order
            bisect.insort_right(log, item, i, key=_TIME)
            i += 1
        return
    tail = log[i:]
    del log[i:]
    tail.extend(batch)
    tail.sort(key=_TIME)  # two sorted runs: one stable linear merge, log's items first
    log.extend(tail)


@runtime_checkable
class KeyState(Protocol):
    """The driver's state for one key, held by the engine.

    Contract: writes are applied in call order; nothing else writes this state. Reads after a
    restore return what was written before the checkpoint.
    """

    def get_meta(self) -> bytes | None:
        """The metadata value, or ``None`` if never written (a new key)."""
        ...

    def put_meta(self, data: bytes) -> None:
        """Replace the metadata value."""
        ...

    def add_events(self, entries: Sequence[LogEntry]) -> None:
        """Append entries to the event log (they may be out of time order)."""
        ...

    def read_events(self) -> Iterable[LogEntry]:
        """Every entry of the event log, in any order (the driver sorts by ``(time, seq)``).
        Only called when the driver's process-local cache misses (e.g. after a restart)."""
        ...

    def remove_events(self, before: int, keys: Sequence[tuple[int, int]]) -> None:
        """Remove every entry with ``time < before``.

        ``keys`` lists exactly those entries' ``(time, seq)`` pairs, so a map-based backend
        can delete by key and an ordered-list backend can clear the range
        ``[-inf, before)``; use whichever your engine offers.
        """
        ...

    # An implementation may set a class attribute ``keeps_log = False`` (see
    # :class:`TransientKeyState`): the driver then writes no log entries and never rebuilds
    # the key from this state. Absent means True.
    #
    # Optional capability ``pair_map() -> adapters.state.pairs.PairMap``: the key's map
    # ``int -> bytes`` (an engine's keyed map state). With it the driver can keep per-event
    # window structures in the MTA paper's KVS layout (``docs/adapters.md``, "KVS layout"):
    # a cache miss or a restart then reopens them in O(log n) reads instead of rebuilding
    # them from the event log. Absent: the in-memory layout.


@runtime_checkable
class StateBackend(Protocol):
    """Per-key states of many keys (what an engine hands a batch of keys)."""

    def key_state(self, key: Hashable) -> KeyState:
        """The state of ``key`` (created empty on first use)."""
        ...


class MemoryKeyState:
    """In-memory :class:`KeyState`, the reference implementation used by tests.

    Counts what a real engine would persist (``bytes_written``: meta bytes + log entry bytes
    with 16 bytes for time and seq; ``entries_removed``). With ``strict=True`` (the default)
    it checks the driver's calls: log entries must be ``(int, int, bytes)`` and the ``keys`` of
    ``remove_events`` exactly the entries with ``time < before``. ``strict=False`` skips the
    checks (benchmarks). The log is kept sorted by time: appending entries no older than the
    newest is O(1) each, an older entry costs O(entries newer than it).
    """

    __slots__ = ("_log", "_meta", "_pairs", "bytes_written", "entries_removed", "meta_writes",
                 "strict")

    def __init__(self, strict: bool = True) -> None:
        self._meta: bytes | None = None
        self._log: list[LogEntry] = []  # sorted by time
        self.bytes_written = 0
        self.entries_removed = 0
        self.meta_writes = 0
        self.strict = strict
        self._pairs: MemoryPairMap | None = None

    def pair_map(self) -> MemoryPairMap:
        """The key's pair map (the KVS layout's store, created empty on first use)."""
        if self._pairs is None:
            self._pairs = MemoryPairMap()
        return self._pairs

    def get_meta(self) -> bytes | None:
        return self._meta

    def put_meta(self, data: bytes) -> None:
        if not isinstance(data, bytes):
            raise TypeError(f"meta must be bytes, got {type(data).__name__}")
        self._meta = data
        self.bytes_written += len(data)
        self.meta_writes += 1

    def add_events(self, entries: Sequence[LogEntry]) -> None:
        # O(len(entries)) when they are not older than the log's newest entry (in-order
        # arrival); otherwise O(len(entries) + the entries newer than the oldest new one).
        if not entries:
            return
        if len(entries) == 1 and not self.strict:
            entry = entries[0]
            self.bytes_written += 16 + len(entry[2])
            append_sorted(self._log, [entry])
            return
        if self.strict:
            batch = []
            for entry in entries:
                time, seq, data = entry
                if type(time) is not int or type(seq) is not int or \
                        not isinstance(data, bytes):
                    raise TypeError(f"log entries are (int time, int seq, bytes), got "
                                    f"{entry!r}")
                batch.append((time, seq, data))
        else:
            batch = list(entries)
        self.bytes_written += 16 * len(batch) + sum(map(len, map(_DATA, batch)))
        # sorted by time (a no-op pass when it already is); equal times keep their order:
        # the driver passes them in arrival (seq) order, and entries() sorts by (time, seq)
        batch.sort(key=_TIME)
        append_sorted(self._log, batch)

    def read_events(self) -> Iterator[LogEntry]:
        return iter(list(self._log))

    def remove_events(self, before: int, keys: Sequence[tuple[int, int]]) -> None:
        log = self._log
        k = bisect.bisect_left(log, before, key=_TIME)
        if self.strict:
            expected = sorted([(t, s) for t, s, _ in log[:k]])
            if sorted(keys) != expected:
                raise AssertionError(f"remove_events({before}): keys {sorted(keys)[:5]}... "
                                     f"differ from the entries before it {expected[:5]}...")
        del log[:k]
        self.entries_removed += k

    # ---------------------------------------------------------------- test helpers
    def __len__(self) -> int:
        """Number of log entries."""
        return len(self._log)

    def entries(self) -> list[LogEntry]:
        """A copy of the log, sorted by ``(time, seq)``."""
        return sorted(self._log)

    def copy(self) -> MemoryKeyState:
        """An independent copy (entries are immutable tuples of bytes)."""
        other = MemoryKeyState(self.strict)
        other._meta = self._meta
        other._log = list(self._log)
        if self._pairs is not None:
            other._pairs = MemoryPairMap(dict(self._pairs.data))
        return other


class TransientKeyState:
    """A :class:`KeyState` that keeps only the metadata, in memory, and no event log.

    For runs that never restart from state, e.g. a batch job that feeds one key's whole
    input and then ``END_OF_INPUT`` (Spark batch, ``applyInArrow``): the driver sees
    ``keeps_log = False`` and skips encoding the events into a log.
    The driver's process-local cache then holds the only copy of the key's events, so it
    raises :class:`~adapters.errors.StateError` rather than rebuild such a key from state
    (after :meth:`~adapters.WindowDriver.drop_cache`, or with ``max_cached_keys`` exceeded).
    """

    __slots__ = ("_meta",)

    #: the driver writes no event log to this state
    keeps_log = False

    def __init__(self) -> None:
        self._meta: bytes | None = None

    def get_meta(self) -> bytes | None:
        return self._meta

    def put_meta(self, data: bytes) -> None:
        self._meta = data

    def add_events(self, entries: Sequence[LogEntry]) -> None:
        if entries:
            raise StateError("a TransientKeyState keeps no event log (the driver writes "
                             "none to it)")

    def read_events(self) -> Iterator[LogEntry]:
        return iter(())

    def remove_events(self, before: int, keys: Sequence[tuple[int, int]]) -> None:
        if keys:
            raise StateError("a TransientKeyState keeps no event log")


class MemoryStateBackend:
    """In-memory :class:`StateBackend`: a dict of :class:`MemoryKeyState`.

    ``snapshot()`` / ``MemoryStateBackend.restore(snapshot)`` model an engine checkpoint and
    a restart from it.
    """

    def __init__(self, strict: bool = True) -> None:
        self._states: dict[Any, MemoryKeyState] = {}
        self.strict = strict

    def key_state(self, key: Hashable) -> MemoryKeyState:
        state = self._states.get(key)
        if state is None:
            state = self._states[key] = MemoryKeyState(self.strict)
        return state

    def keys(self) -> list[Any]:
        """Keys that have state."""
        return list(self._states)

    def __contains__(self, key: object) -> bool:
        return key in self._states

    def snapshot(self) -> dict[Any, MemoryKeyState]:
        """A deep, independent copy of every key's state (a checkpoint)."""
        return {k: s.copy() for k, s in self._states.items()}

    @classmethod
    def restore(cls, snapshot: dict[Any, MemoryKeyState],
                strict: bool = True) -> MemoryStateBackend:
        """A backend holding a copy of ``snapshot``."""
        backend = cls(strict)
        backend._states = {k: s.copy() for k, s in snapshot.items()}
        return backend

    @property
    def bytes_written(self) -> int:
        """Total bytes written by every key (meta + log entries)."""
        return sum(s.bytes_written for s in self._states.values())
