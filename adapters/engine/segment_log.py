"""A key's :class:`adapters.KeyState` over two engine state cells (engine-free): a value cell
for the driver's metadata and a list of *segments* for its event log
(:mod:`adapters.state.segments`), for an engine whose state calls cost a round trip per
element (Spark's ``transformWithStateInPandas``).

Each ``add_events`` call (one per key and call of the driver) appends one element holding all
its entries; ``remove_events`` drops the segments entirely before ``before``, rewrites the
one(s) straddling it and keeps the others as they are. Why not one state entry per event (a
map keyed by ``seq``): each element of a state call would then be one round trip; with
segments a call costs a few state calls per key whatever its size.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from adapters.state.backend import LogEntry
from adapters.state.segments import decode_segment, encode_segment, segment_range


class SegmentLogState:
    """:class:`adapters.KeyState` over ``meta`` (a value cell: ``get()`` -> ``None`` or a
    row whose first item is the metadata bytes, ``update((bytes,))``) and ``log`` (a list
    of one-item rows, each a segment: ``get()``, ``appendValue(row)``, ``put(rows)``,
    ``clear()``)."""

    __slots__ = ("_log", "_meta")

    def __init__(self, meta: Any, log: Any) -> None:
        self._meta = meta
        self._log = log

    def get_meta(self) -> bytes | None:
        row = self._meta.get()
        if row is None:
            return None
        return bytes(row[0])

    def put_meta(self, data: bytes) -> None:
        self._meta.update((data,))

    def add_events(self, entries: Sequence[LogEntry]) -> None:
        if entries:
            self._log.appendValue((encode_segment(entries),))

    def read_events(self) -> Iterator[LogEntry]:
        for row in self._log.get():
            yield from decode_segment(bytes(row[0]))

    def remove_events(self, before: int, keys: Sequence[tuple[int, int]]) -> None:
        if not keys:
            return
        kept: list[tuple[bytes]] = []
        changed = False
        for row in self._log.get():
            blob = bytes(row[0])
            lo, hi = segment_range(blob)
            if lo >= before:
                kept.append((blob,))
            elif hi < before:
                changed = True
            else:
                survivors = [e for e in decode_segment(blob) if e[0] >= before]
                kept.append((encode_segment(survivors),))
                changed = True
        if not changed:
            return
        if kept:
            self._log.put(kept)
        else:
            self._log.clear()


class SegmentLogPairsState(SegmentLogState):
    """:class:`SegmentLogState` with the KVS layout's pair map (``docs/adapters.md``, "KVS
    layout"): the driver keeps the key's per-event structures in ``pairs``
    (:class:`adapters.state.pairs.PairMap`)."""

    __slots__ = ("_pairs",)

    def __init__(self, meta: Any, log: Any, pairs: Any) -> None:
        super().__init__(meta, log)
        self._pairs = pairs

    def pair_map(self) -> Any:
        return self._pairs


__all__ = ["SegmentLogPairsState", "SegmentLogState"]
