"""Shared bookkeeping of the in-order FIFO windows (recalc, soe, two_stacks[_lite], daba[_lite]).

Every entry's time lives in ``_times``, a Python list used as a FIFO queue: live entries are
``_times[_head:]``; evicting advances ``_head`` and the dead prefix is deleted in one C-level
``del`` once it is at least as long as the live part (amortized O(1), no ``combine`` calls).
Algorithms that keep a value list (``_vals``) or an aggregate list index it with the same
absolute positions, which is how DABA's pointers F, L, R, A, B, E (DABA paper, section 6) map
onto plain list indices: F is ``_head`` and E is ``len(_vals)``.

Times are sorted (in-order windows), so ``bulk_evict(t)`` finds how many entries to drop with
one ``bisect`` instead of a loop of ``oldest()`` calls.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterator
from typing import Any, Final

from swag_core.aggregation import Aggregation
from swag_core.errors import EmptyWindowError, OutOfOrderError
from swag_core.window import Window, as_time

#: Marker for "no cached query aggregate". Internal only: never passed to ``combine``.
NO_CACHE: Final[Any] = object()

#: The dead prefix of the FIFO lists is deleted once it is this long and at least as long as
#: the live part.
COMPACT_MIN: Final = 64


class FifoWindow(Window):
    """Base of the in-order windows that keep their entry times in a list used as a FIFO.

    Provides ``__len__``, ``oldest``, ``youngest``, the in-order check used by the fast
    ``insert`` overrides, the bisect count used by ``bulk_evict`` and the compaction of the
    dead prefix. Subclasses that index more lists with the same positions extend
    :meth:`_compact`.
    """

    def __init__(self, aggregation: Aggregation) -> None:
        super().__init__(aggregation)
        self._init_fifo()

    def _init_fifo(self) -> None:
        """(Re)set the FIFO bookkeeping to an empty window."""
        self._times: list[int] = []   # entry times, live part [_head:], sorted
        self._head = 0

    # ------------------------------------------------------------------ size and times
    def __len__(self) -> int:
        return len(self._times) - self._head

    def oldest(self) -> int:
        """Time of the oldest entry; :class:`EmptyWindowError` if empty."""
        times = self._times
        head = self._head
        if head == len(times):
            raise EmptyWindowError(f"oldest() of an empty {self.name!r} window")
        return times[head]

    def youngest(self) -> int:
        """Time of the youngest entry; :class:`EmptyWindowError` if empty."""
        times = self._times
        if self._head == len(times):
            raise EmptyWindowError(f"youngest() of an empty {self.name!r} window")
        return times[-1]

    def insert(self, time: int, value: Any) -> None:
        """Insert raw ``value`` at ``time``; ``lift`` is applied here.

        Same checks as :meth:`Window.insert` (integer time, :class:`OutOfOrderError` for a
        time older than ``youngest()``, lift before any change), without its method calls.
        """
        if type(time) is not int:
            time = as_time(time)
        times = self._times
        if len(times) > self._head and time < times[-1]:
            raise self._out_of_order(time)
        self._insert_lifted(time, self._lift(value))

    # ------------------------------------------------------------------ helpers
    def _out_of_order(self, time: int) -> OutOfOrderError:
        """The error (same text as :meth:`Window.insert`) for an insert older than youngest."""
        return OutOfOrderError(
            f"{self.name!r} accepts in-order inserts only: time {time} is older than the "
            f"youngest entry {self._times[-1]}; use 'fiba' or 'reactive' for out-of-order data")

    def _empty_evict(self) -> EmptyWindowError:
        return EmptyWindowError(f"evict() on an empty {self.name!r} window")

    def _count_through(self, time: int) -> int:
        """How many entries have ``entry.time <= time`` (they form a prefix: times are sorted)."""
        head = self._head
        return bisect_right(self._times, time, head) - head

    def _advance(self, count: int) -> None:
        """Move the head past ``count`` entries (the caller updated its own structures)."""
        head = self._head + count
        self._head = head
        if head >= COMPACT_MIN and head + head >= len(self._times):
            self._compact()

    def _items_with(self, vals: list[Any]) -> Iterator[tuple[int, Any]]:
        """Snapshot of ``(time, value)`` pairs for a value list indexed like ``_times``."""
        head = self._head
        return zip(self._times[head:], vals[head:], strict=True)

    def _compact(self) -> None:
        """Delete the dead prefix ``[0, _head)`` of the FIFO lists; subclasses extend this
        (deleting from their own lists and shifting their pointers) and call it last."""
        del self._times[:self._head]
        self._head = 0
