"""The process-local, cached runtime of one key: pending buffer, released-event index and the
state of each lane's structure. Rebuilt from the engine's state on a cache miss."""

from __future__ import annotations

import heapq
import math
from typing import Any, Protocol

from swag_core import Window

INF = math.inf

#: A pending or released event as the driver keeps it: ``(time, lifted, value, policy
#: lifts)``, the last two only when needed (OVER rows show the event value; policy lanes
#: need the measures). ``lifted`` is the lifted value, or in kernel mode the raw field
#: value(s) (:mod:`adapters.driver.kernels`). Records are kept sorted by time, ties in arrival
#: order (stable sorts and merges).
Record = tuple[Any, ...]
TIME, LIFTED, VALUE, POLICY = range(4)


class LaneState:
    """One lane's structure for one key.

    ``low``: every entry with key ``< low`` has been evicted. ``open_start`` /
    ``open_acc`` (sliced time lanes only): start and partial aggregate of the *open* slice,
    the released events of the slice the watermark is still inside; ``None`` when there is
    none.
    """

    __slots__ = ("low", "open_acc", "open_start", "w")

    def __init__(self, w: Window) -> None:
        self.w = w
        self.low: int | float = -INF
        self.open_start: int | None = None
        self.open_acc: Any = None


class KeyRuntime:
    """The cached, process-local runtime of one key (rebuilt from state on a miss)."""

    __slots__ = (
        "head",
        "lanes",
        "late",
        "meta_bytes",
        "pending",
        "pending_min",
        "pending_sorted",
        "released",
        "segments",
        "seq",
        "times",
        "wm",
    )

    def __init__(self, lanes: list[LaneState]) -> None:
        self.meta_bytes: bytes | None = None
        self.wm: int | float = -INF
        self.seq = 0
        self.released = 0
        self.late = 0
        # records waiting for the watermark, in arrival order of the calls (each call's
        # records sorted); sorted by (time, seq) if pending_sorted; pending_min: the
        # smallest pending time (INF if none)
        self.pending: list[Record] = []
        self.pending_sorted = True
        self.pending_min: int | float = INF
        # times of the released events still retained, sorted; live from head
        self.times: list[int] = []
        self.head = 0
        # (time, seq) of the log entries (a min-heap: removed once time < the trim bound)
        self.segments: list[tuple[int, int]] = []
        self.lanes = lanes

    def time_of(self, position: int) -> int:
        """Time of the released event at 1-based release ``position`` (must be retained)."""
        return self.times[len(self.times) - (self.released - position) - 1]


class KeyCounters(Protocol):
    """What a key's metadata and log bookkeeping record
    (:meth:`adapters.driver.key_store.KeyStore.write` and ``trim_log``): held by
    :class:`KeyRuntime` and by the cross-key batch runtime's per-key record alike."""

    wm: int | float
    seq: int
    released: int
    late: int
    meta_bytes: bytes | None
    segments: list[tuple[int, int]]


def pop_segments(segments: list[tuple[int, int]], bound: int | float
                 ) -> tuple[int, list[tuple[int, int]]] | None:
    """Pops the log entries ``(newest time, seq)`` of the heap ``segments`` whose newest event
    is older than ``bound``; returns the ``remove_events(before, keys)`` arguments, or
    ``None`` if there are none (``bound`` may be ``INF``: at end of input)."""
    if not segments or segments[0][0] >= bound:
        return None
    keys = []
    pop = heapq.heappop
    while segments and segments[0][0] < bound:
        keys.append(pop(segments))
    before = int(bound) if bound != INF else max(t for t, _ in keys) + 1
    return before, keys


__all__ = ["LIFTED", "POLICY", "TIME", "VALUE", "KeyCounters", "KeyRuntime", "LaneState",
           "Record", "pop_segments"]
