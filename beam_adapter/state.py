"""The driver's per-key state (:class:`adapters.KeyState`) on Beam user state.

* **meta**: a ``ReadModifyWriteState`` of ``bytes`` (``BytesCoder``), read and written once
  per call.
* **event log**, one of:

  - ``OrderedListState`` of ``(seq, data)`` sorted by the event time (as a ``Timestamp`` of
    ``time * 1000`` us): appending is one ``add``; the driver's ``remove_events(before, ...)``
    is one ``clear_range(MIN, before)``. Supported by the portable runners (the
    ``FnApiRunner`` behind the DirectRunner in batch, Dataflow Runner v2 ...).
  - ``BagState`` of ``(time, seq, data)``: appending is one ``add``; removal reads the bag,
    clears it and re-adds the survivors, so each removal costs O(retained events) instead of
    O(removed). Used where ``OrderedListState`` is missing: Beam 2.77's
    ``BundleBasedDirectRunner``, which runs every streaming (``TestStream``) pipeline on the
    DirectRunner, rejects ``OrderedListStateSpec`` ("Invalid state spec").

``read_events`` is only called when the driver's process-local cache misses (new worker,
restart, rebalanced key); it reads the whole log once.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from apache_beam.coders import BytesCoder, TupleCoder, VarIntCoder
from apache_beam.transforms.userstate import (
    BagStateSpec,
    OrderedListStateSpec,
    ReadModifyWriteStateSpec,
)
from apache_beam.utils.timestamp import Timestamp

#: State cell names (part of the pipeline's state layout: keep them for update compatibility).
META_NAME = "swag_meta"
LOG_NAME = "swag_log"

META_SPEC = ReadModifyWriteStateSpec(META_NAME, BytesCoder())
ORDERED_LOG_SPEC = OrderedListStateSpec(LOG_NAME, TupleCoder([VarIntCoder(), BytesCoder()]))
BAG_LOG_SPEC = BagStateSpec(LOG_NAME, TupleCoder([VarIntCoder(), VarIntCoder(), BytesCoder()]))

_RANGE_MIN = Timestamp(micros=-(1 << 63))


class _View:
    """Common part: the meta cell, and what this call read and wrote (the adapter uses them
    to tell whether its remembered timer still matches the state)."""

    __slots__ = ("log", "meta", "meta_read", "meta_written")

    def __init__(self, meta: Any, log: Any) -> None:
        self.meta = meta
        self.log = log
        self.meta_read: bytes | None = None
        self.meta_written: bytes | None = None

    def get_meta(self) -> bytes | None:
        data = self.meta.read()
        self.meta_read = data
        return data

    def put_meta(self, data: bytes) -> None:
        self.meta.write(data)
        self.meta_written = data


class OrderedLogState(_View):
    """:class:`adapters.KeyState` over ``ReadModifyWriteState`` + ``OrderedListState``."""

    __slots__ = ()

    def add_events(self, entries: Sequence[tuple[int, int, bytes]]) -> None:
        add = self.log.add
        for time, seq, data in entries:
            add((Timestamp(micros=time * 1000), (seq, data)))

    def read_events(self) -> Iterator[tuple[int, int, bytes]]:
        for ts, (seq, data) in self.log.read():
            yield ts.micros // 1000, seq, data

    def remove_events(self, before: int, keys: Sequence[tuple[int, int]]) -> None:
        self.log.clear_range(_RANGE_MIN, Timestamp(micros=before * 1000))


class BagLogState(_View):
    """:class:`adapters.KeyState` over ``ReadModifyWriteState`` + ``BagState``."""

    __slots__ = ()

    def add_events(self, entries: Sequence[tuple[int, int, bytes]]) -> None:
        add = self.log.add
        for entry in entries:
            add(entry)

    def read_events(self) -> list[tuple[int, int, bytes]]:
        return list(self.log.read())

    def remove_events(self, before: int, keys: Sequence[tuple[int, int]]) -> None:
        # A bag cannot delete single entries: keep the survivors, clear, re-add them.
        log = self.log
        survivors = [e for e in log.read() if e[0] >= before]
        log.clear()
        for entry in survivors:
            log.add(entry)


__all__ = ["BAG_LOG_SPEC", "META_SPEC", "ORDERED_LOG_SPEC", "BagLogState", "OrderedLogState"]
