"""Pieces shared by several window algorithms, each written once.

* Markers: :data:`EMPTY` (the papers' bottom / empty-set marker for an empty part of a
  structure, never given to ``combine``) and :data:`NO_CACHE` (no cached query aggregate).
* :class:`FifoWindow`, the bookkeeping of the in-order FIFO windows (recalc, soe,
  two_stacks[_lite], daba[_lite], slickdeque), and :class:`DabaWindow`, the pointers and
  bulk eviction shared by DABA and DABA Lite.
* :func:`suffix_sums`, the right-to-left fold of Two-Stacks' flip, also used to rebuild the
  DABA front after a bulk eviction.
* Ring buffers (flatfat, flatfit, reactive): :func:`ring_bisect`, :func:`ring_runs`,
  :func:`ring_slice`, :func:`ring_assign`, :func:`grown_capacity`, :func:`shrunk_capacity` and
  :class:`RingWindow`.

FIFO windows: every entry's time lives in ``_times``, a Python list used as a FIFO queue: live
entries are ``_times[_head:]``; evicting advances ``_head`` and the dead prefix is deleted in
one C-level ``del`` once it is at least as long as the live part (amortized O(1), no
``combine`` calls). Algorithms that keep a value list (``_vals``) or an aggregate list index it
with the same absolute positions, which is how DABA's pointers F, L, R, A, B, E (DABA paper,
section 6) map onto plain list indices: F is ``_head`` and E is ``len(_vals)``. Times are
sorted (in-order windows), so ``bulk_evict(t)`` finds how many entries to drop with one
``bisect`` instead of a loop of ``oldest()`` calls.
"""

from __future__ import annotations

from abc import abstractmethod
from bisect import bisect_right
from collections.abc import Callable, Iterator
from typing import Any, ClassVar, Final

from swag_core.aggregation import Aggregation
from swag_core.errors import EmptyWindowError
from swag_core.window import Window, as_time


class _Marker:
    """Type of the module's markers: named, and the same object after ``copy.deepcopy`` or
    pickling (they reduce to their global name), since structures test them with ``is``."""

    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return self._name

    def __reduce__(self) -> str:
        return self._name


#: The papers' bottom marker (FlatFAT's unused leaves, the MTA's empty slots): an empty part
#: of a structure, short-circuited by every combine site, never given to ``combine``.
EMPTY: Final[Any] = _Marker("EMPTY")

#: Marker for "no cached query aggregate". Internal only: never passed to ``combine``.
NO_CACHE: Final[Any] = _Marker("NO_CACHE")

#: The dead prefix of the FIFO lists is deleted once it is this long and at least as long as
#: the live part.
COMPACT_MIN: Final = 64


def suffix_sums(combine: Callable[[Any, Any], Any], vals: list[Any], start: int,
                end: int) -> list[Any]:
    """The suffix aggregates of ``vals[start:end]``, youngest first: ``vals[end-1]``, then
    ``vals[end-2] (+) vals[end-1]``, ..., ``vals[start] (+) ... (+) vals[end-1]``.

    Each value goes on the *left* of the aggregate so far (it is older): the flip of
    Two-Stacks (DABA paper, section 4, Fig. 5 line 17). ``end - start - 1`` ``combine`` calls;
    ``[]`` when ``start >= end``.
    """
    if start >= end:
        return []
    acc = vals[end - 1]
    sums = [acc]
    append = sums.append
    for i in range(end - 2, start - 1, -1):
        acc = combine(vals[i], acc)
        append(acc)
    return sums


class FifoWindow(Window):
    """Base of the in-order windows that keep their entry times in a list used as a FIFO.

    Provides ``__len__``, ``oldest``, ``youngest``, an ``insert`` with the in-order check
    (without :meth:`Window.insert`'s method calls), ``evict`` and ``bulk_evict`` (the count is
    one bisect; subclasses remove the prefix in :meth:`_evict_prefix` and may override
    ``evict`` with a faster single step) and the compaction of the dead prefix. Subclasses
    name their other lists indexed like ``_times`` in ``_fifo_lists`` and their attributes
    holding absolute positions in ``_fifo_positions``: the compaction deletes the dead prefix
    of those lists too and shifts those positions.
    """

    #: Attribute names of the lists indexed like ``_times`` (compacted with it).
    _fifo_lists: ClassVar[tuple[str, ...]] = ()
    #: Attribute names of the absolute positions into those lists (shifted by a compaction).
    _fifo_positions: ClassVar[tuple[str, ...]] = ()

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
            raise self._out_of_order(time, times[-1])
        self._insert_lifted(time, self._lift(value))

    def evict(self) -> None:
        """Remove the oldest entry; :class:`~swag_core.errors.EmptyWindowError` if empty."""
        if self._head == len(self._times):
            raise self._empty_evict()
        self._evict_prefix(1)

    def bulk_evict(self, time: int) -> int:
        """Remove every entry with ``entry.time <= time``; returns how many were removed
        (see the class docstring for the cost)."""
        if type(time) is not int:
            time = as_time(time)
        head = self._head
        count = bisect_right(self._times, time, head) - head
        if count:
            try:
                self._evict_prefix(count)
            except BaseException as error:
                self._name_failure("bulk_evict", error)
                raise
        return count

    @abstractmethod
    def _evict_prefix(self, count: int) -> None:
        """Remove the ``count`` oldest entries, ``0 < count <= len(self)`` (then call
        :meth:`_advance`, or :meth:`evict` that does)."""

    # ------------------------------------------------------------------ helpers
    def _advance(self, count: int) -> None:
        """Move the head past ``count`` entries (the caller updated its own structures).

        The evicted slots are released here, so each entry's objects are freed by its own
        eviction: left for :meth:`_compact`, half a window of them would be freed at once, a
        latency spike (milliseconds at n = 2^14) in every in-order structure.
        """
        old = self._head
        head = old + count
        self._head = head
        times: list[Any] = self._times
        if count == 1:
            times[old] = None
            for name in self._fifo_lists:
                getattr(self, name)[old] = None
        else:
            released = [None] * count
            times[old:head] = released
            for name in self._fifo_lists:
                getattr(self, name)[old:head] = released
        if head >= COMPACT_MIN and head + head >= len(times):
            self._compact()

    def _items_with(self, vals: list[Any]) -> Iterator[tuple[int, Any]]:
        """Snapshot of ``(time, value)`` pairs for a value list indexed like ``_times``."""
        head = self._head
        return zip(self._times[head:], vals[head:], strict=True)

    def _compact(self) -> None:
        """Delete the dead prefix ``[0, _head)`` of ``_times`` and of the ``_fifo_lists``,
        and shift the ``_fifo_positions`` (subclasses with more to do extend this)."""
        head = self._head
        for name in self._fifo_lists:
            del getattr(self, name)[:head]
        for name in self._fifo_positions:
            setattr(self, name, getattr(self, name) - head)
        del self._times[:head]
        self._head = 0


class DabaWindow(FifoWindow):
    """State shared by DABA and DABA Lite (DABA paper, section 6; IBM ``DABALite.hpp``): the
    values ``_vals`` and one list of partial aggregates indexed like ``_times`` (named in
    ``_fifo_lists``), cut by the pointers ``F <= _l <= _r <= _a <= _b <= E`` (F is ``_head``,
    E is ``len(_vals)``). Provides the bulk eviction and ``items``."""

    _fifo_positions: ClassVar[tuple[str, ...]] = ("_l", "_r", "_a", "_b")

    def __init__(self, aggregation: Aggregation) -> None:
        super().__init__(aggregation)
        self._vals: list[Any] = []
        self._l = 0
        self._r = 0
        self._a = 0
        self._b = 0
        self._cache: Any = NO_CACHE

    def _step(self) -> None:
        """One constant-time step of incremental reversal, after every insert and evict
        (the subclass's algorithm)."""
        raise NotImplementedError

    def evict(self) -> None:
        """Remove the oldest entry; :class:`~swag_core.errors.EmptyWindowError` if empty."""
        if self._head == len(self._times):
            raise self._empty_evict()
        self._cache = NO_CACHE
        self._advance(1)
        try:
            self._step()
        except BaseException as error:
            self._fail("evict", error)    # the step was cut half-way
            raise

    def _evict_prefix(self, count: int) -> None:
        """Evicting m of n entries costs at most 2 * min(m, n - m) ``combine`` calls: up to half
        the window is evicted one by one; beyond that the n - m survivors are rebuilt as one
        front element followed by l_A, all suffix sums to E (a valid state: the size
        invariant ``0 + 0 + (k - 1) + 1 = k - 0`` holds), for n - m - 1 calls."""
        vals = self._vals
        end = len(vals)
        start = self._head + count
        if count < end - start:
            evict = self.evict
            done = 0
            try:
                for done in range(count):  # noqa: B007 (read by the handler)
                    evict()
            except BaseException as error:
                if done:    # evicted part of the prefix: neither before nor after
                    self._fail("bulk_evict", error)
                raise
            return
        # The sums are computed before anything changes: a failing combine changes nothing.
        sums = suffix_sums(self._combine, vals, start, end)
        sums.reverse()
        self._rebuilt(start, end, sums)
        self._l = self._r = self._a = min(start + 1, end)
        self._b = end
        self._cache = NO_CACHE
        self._advance(count)

    @abstractmethod
    def _rebuilt(self, start: int, end: int, sums: list[Any]) -> None:
        """Store ``sums``, the suffix sums to E of the survivors ``[start, end)``, oldest
        first, as the front element and l_A of the rebuilt window."""

    def items(self) -> Iterator[tuple[int, Any]]:
        """``(time, lifted value)`` pairs, oldest first (a snapshot)."""
        return self._items_with(self._vals)


# ---------------------------------------------------------------------- ring buffers
def ring_bisect(bisect: Callable[..., int], times: list[int], time: int, front: int,
                size: int) -> int:
    """Logical position given by ``bisect`` (``bisect_left`` or ``bisect_right``) for
    ``time`` among the ring buffer slots ``front, front + 1, ...`` (``size`` of them, modulo
    ``len(times)``), whose times are sorted in that order. Two C-level bisects at most."""
    cap = len(times)
    end = front + size
    if end <= cap:
        return bisect(times, time, front, end) - front
    # Wrapped: slots [front, cap), then [0, end - cap). The position lies in the second run
    # exactly when bisect puts it after slot 0.
    if bisect(times, time, 0, 1):
        return cap - front + bisect(times, time, 0, end - cap)
    return bisect(times, time, front, cap) - front


def ring_runs(capacity: int, slot: int, count: int) -> tuple[tuple[int, int], ...]:
    """The ``count`` slots of a ring buffer of ``capacity`` slots from ``slot`` on
    (``slot < 2 * capacity``, taken modulo ``capacity``) as plain ranges ``(start, end)``:
    one, or two when they wrap around the last slot."""
    if slot >= capacity:
        slot -= capacity
    end = slot + count
    if end <= capacity:
        return ((slot, end),)
    return ((slot, capacity), (0, end - capacity))


def ring_slice(values: list[Any], capacity: int, slot: int, count: int,
               offset: int = 0) -> list[Any]:
    """``values[offset + s]`` for the ``count`` ring slots ``s`` from ``slot`` on (see
    :func:`ring_runs`), as one new list: one or two C-level slices."""
    if slot >= capacity:
        slot -= capacity
    end = slot + count
    if end <= capacity:
        return values[offset + slot:offset + end]
    return values[offset + slot:offset + capacity] + values[offset:offset + end - capacity]


def ring_assign(target: list[Any], capacity: int, slot: int, values: list[Any],
                offset: int = 0) -> None:
    """Write ``values`` to the ring slots from ``slot`` on (slot ``s`` is
    ``target[offset + s]``, see :func:`ring_runs`): one or two slice assignments."""
    if slot >= capacity:
        slot -= capacity
    end = slot + len(values)
    if end <= capacity:
        target[offset + slot:offset + end] = values
    else:
        cut = capacity - slot
        target[offset + slot:offset + capacity] = values[:cut]
        target[offset:offset + end - capacity] = values[cut:]


def grown_capacity(capacity: int, size: int) -> int:
    """The capacity that a run of doublings from ``capacity`` reaches to hold ``size``."""
    while capacity < size:
        capacity += capacity
    return capacity


def shrunk_capacity(capacity: int, size: int, min_capacity: int) -> int:
    """The capacity after evictions down to ``size`` entries: halved while ``size`` is below
    a quarter of it (strictly), not below
    ``min_capacity``."""
    while 4 * size < capacity and capacity > min_capacity:
        capacity = max(capacity >> 1, min_capacity)
    return capacity


class RingWindow(Window):
    """Base of the in-order windows on a circular buffer (flatfat, flatfit): the entry times
    are in ``_times`` (one slot per buffer slot, so ``len(_times)`` is the capacity), the
    window is the ``_size`` slots from ``_front`` on. Provides ``__len__``, ``oldest``,
    ``youngest``, the in-order ``insert`` check and bisect counts."""

    _times: list[int]
    _front: int
    _size: int
    _cache: Any

    def __len__(self) -> int:
        return self._size

    def _pop_front(self, count: int) -> None:
        """Move the front past the ``count`` oldest entries, whose slots the caller cleared
        (back to slot 0 when the window empties), and drop the cached aggregate."""
        size = self._size - count
        self._size = size
        front = self._front + count
        cap = len(self._times)
        self._front = (front - cap if front >= cap else front) if size else 0
        self._cache = NO_CACHE

    def _back(self) -> int:
        """Slot of the youngest entry (the window must be non-empty)."""
        back = self._front + self._size - 1
        cap = len(self._times)
        return back - cap if back >= cap else back

    def oldest(self) -> int:
        """Time of the oldest entry; :class:`EmptyWindowError` if empty."""
        if not self._size:
            raise EmptyWindowError(f"oldest() of an empty {self.name!r} window")
        return self._times[self._front]

    def youngest(self) -> int:
        """Time of the youngest entry; :class:`EmptyWindowError` if empty."""
        if not self._size:
            raise EmptyWindowError(f"youngest() of an empty {self.name!r} window")
        return self._times[self._back()]

    def insert(self, time: int, value: Any) -> None:
        """Insert raw ``value`` at ``time`` (see :meth:`Window.insert`; same checks)."""
        if type(time) is not int:
            time = as_time(time)
        if self._size:
            youngest = self._times[self._back()]
            if time < youngest:
                raise self._out_of_order(time, youngest)
        self._insert_lifted(time, self._lift(value))

    def _count_through(self, time: int) -> int:
        """How many entries have ``entry.time <= time``."""
        return ring_bisect(bisect_right, self._times, time, self._front, self._size)

    def evict(self) -> None:
        """Remove the oldest entry; :class:`~swag_core.errors.EmptyWindowError` if empty."""
        if not self._size:
            raise self._empty_evict()
        self._evict_oldest()

    @abstractmethod
    def _evict_oldest(self) -> None:
        """Remove the oldest entry of the non-empty window (clear its slot, then
        :meth:`_pop_front`)."""
