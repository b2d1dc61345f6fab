"""The MTA paper's KVS layout (section 4.1.5, Fig. 3; note ``mta.md`` 2.5 and P17): Log MTA
and AMTA whose central pairs live in a key-value :class:`PairStore`, with only O(log n) pairs
in local memory.

Each level queue is split in three sections over two memory layers:

* **tail** (local): the level's last two pairs, the rightmost branch that inserts rewrite.
  When the tail grows past two pairs its oldest pair is final (no insert or eviction rewrites
  a pair between the head and the tail) and *retires* into the write buffer. Tails are never
  stored as pairs: they are part of :meth:`~_KvsLayout.local_state`, so the store holds
  final pairs (and modified heads) only;
* **write buffer** (local, shared by all levels): retired pairs not yet stored; written to
  the store in one ``put_many`` once it holds ``buffer_pairs`` pairs. Every read that misses
  the tail and the cache looks here before the store (P17);
* **head cache** (local, per level): up to ``cache_pairs`` pairs from the level's first live
  one. A read in ``[head, head + cache)`` that misses refills the whole range in one
  ``get_many`` (buffer first); a refill never replaces a pair the cache already holds, so a
  head modified locally (Log MTA's leftmost-branch recompute, AMTA's refresh) is never
  overwritten by an older stored copy (P17). Modified cached pairs are written on
  :meth:`flush`;
* everything else is in the store. A read far from the head (a root-to-leaf search, a
  ``query_since`` path, a time search) fetches that one pair, O(1) store call per read.

A short level has its head in its tail (P17): positions in the tail are only ever held by
the tail, the cache stops where the tail starts.

**Keys.** A level is indexed by position in its queue (the in-memory classes' list index;
the layout never compacts, so a position is fixed for the level's lifetime). Pair ``q`` of
level ``l`` (positions ``2q`` and ``2q + 1``) is stored under ``slot(l, q) = l << 48 | q``:
one int, O(1) retrieval, and a level's pairs are consecutive slots. A stored value is a
tuple of the pair's one or two elements: raw partials, and at level 0 ``(time, lifted
value)`` tuples, so the entry times are not kept in local memory either. Dead pairs (older
than the level's head) are deleted in batches of ``buffer_pairs`` (``delete_many``).

The slot numbering (:data:`SLOT_BITS`, :func:`slot`) is part of this module's contract with
its :class:`PairStore` and is defined here only: the store sees nothing else of the levels.
How slots become persisted map keys and bytes (lanes, pages, the format version) belongs to
the store's owner, ``adapters/state/pairs.py``, which reads the numbering from here
(swag_core imports nothing from ``adapters``).

The algorithms are the in-memory classes' code unchanged (:mod:`swag_core.algorithms.mta`):
the level lists are replaced by :class:`_Row` objects with the same list operations. Two
differences: ``bulk_insert`` inserts one entry at a time (the in-memory level rebuild reads
back every new pair, which would go to the store), and ``bulk_evict`` / ``query_since`` find
their leaf by a galloping search from the head (O(log k) reads for k entries, mostly cache
hits) instead of a ``bisect`` over a time list.

:meth:`flush` writes every buffered and modified head pair to the store; :meth:`local_state`
is then the small rest (positions per level, the tails, Log MTA's shifts and total, AMTA's
result pair and stack), from which :meth:`reopen` rebuilds the window without a read: each
level reads its head (a refill) when first used, so one operation after a reopen reads only
the heads it touches (inserts touch tails only: no read).
:meth:`park` is :meth:`flush` for a window saved after every operation: it keeps a write
buffer that is not full local and returns it with the local part (the paper's buffer: the
store is written once per ``buffer_pairs`` retired or modified pairs, not on every save),
and a reopened level's first refill reads :data:`HEAD_PAIRS` pairs.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterator, Sequence
from typing import Any, ClassVar, Final, Protocol, runtime_checkable

from swag_core.aggregation import Aggregation
from swag_core.algorithms._queues import EMPTY
from swag_core.algorithms.mta import Amta, LogMta, _MtaBase
from swag_core.window import Window, as_time

#: bits of a slot that hold the pair index (the level is above them)
SLOT_BITS: Final = 48
_TAIL: Final = 4        # elements a tail holds at most (two pairs)
_CLEAN: Final[frozenset[int]] = frozenset()
#: pairs of a level's head cache kept in the local part (a reopened level evicts a few
#: entries without a read)
HEAD_PAIRS: Final = 4


def slot(level: int, pair: int) -> int:
    """The store key of pair ``pair`` of level ``level`` (both >= 0, pair < 2**48)."""
    return (level << SLOT_BITS) | pair


@runtime_checkable
class PairStore(Protocol):
    """A key-value store of pairs keyed by int slot (see :func:`slot`); values are tuples of
    the aggregation's raw partials (and of ``(time, partial)`` tuples at level 0), handed over
    as Python objects: a store that persists them encodes them itself."""

    def get_many(self, slots: Sequence[int]) -> list[Any]:
        """The values stored at ``slots``, in order, ``None`` where nothing is stored."""
        ...

    def put_many(self, items: Sequence[tuple[int, Any]]) -> None:
        """Store each ``(slot, value)`` (replacing what was there)."""
        ...

    def delete_many(self, slots: Sequence[int]) -> None:
        """Delete the values at ``slots`` (absent slots are ignored)."""
        ...


class DictPairStore:
    """In-memory :class:`PairStore` (tests and the reference): a dict, with call counters
    (``gets``, ``puts``, ``deletes``: calls; ``read``: values asked for)."""

    def __init__(self) -> None:
        self.data: dict[int, Any] = {}
        self.gets = self.puts = self.deletes = self.read = 0

    def get_many(self, slots: Sequence[int]) -> list[Any]:
        self.gets += 1
        self.read += len(slots)
        get = self.data.get
        return [get(s) for s in slots]

    def put_many(self, items: Sequence[tuple[int, Any]]) -> None:
        self.puts += 1
        self.data.update(items)

    def delete_many(self, slots: Sequence[int]) -> None:
        self.deletes += 1
        pop = self.data.pop
        for s in slots:
            pop(s, None)

    @property
    def calls(self) -> int:
        """Store calls so far."""
        return self.gets + self.puts + self.deletes


class _Pairs:
    """What the rows of one window share: the store, the write buffer and the sizes, and
    the window (weakly: a strong reference would make a reference cycle, so a dropped
    window, e.g. a driver's evicted key, would wait for a full garbage collection instead
    of being freed at once)."""

    __slots__ = ("buffer", "buffer_pairs", "cache_pairs", "store", "window")

    def __init__(self, store: PairStore, cache_pairs: int, buffer_pairs: int,
                 window: _KvsLayout) -> None:
        if cache_pairs < 1 or buffer_pairs < 1:
            raise ValueError(f"cache_pairs and buffer_pairs must be >= 1, got "
                             f"{cache_pairs} and {buffer_pairs}")
        self.store = store
        self.cache_pairs = cache_pairs
        self.buffer_pairs = buffer_pairs
        self.buffer: dict[int, tuple[Any, ...]] = {}
        self.window = weakref.ref(window)

    def head_of(self, level: int) -> int:
        """The position of the first live element of ``level``."""
        window = self.window()
        assert window is not None   # rows are used through their window only
        return window._head_of(level)

    def buffer_put(self, key: int, pair: tuple[Any, ...]) -> None:
        buffer = self.buffer
        buffer[key] = pair
        if len(buffer) >= self.buffer_pairs:
            self.flush_buffer()

    def flush_buffer(self) -> None:
        if self.buffer:
            self.store.put_many(list(self.buffer.items()))
            self.buffer.clear()

    def read(self, keys: list[int]) -> list[Any]:
        """The pairs at ``keys``: buffer first, the rest in one store call."""
        buffer = self.buffer
        got = [buffer.get(k) for k in keys]
        missing = [k for k, p in zip(keys, got) if p is None]
        if missing:
            found = iter(self.store.get_many(missing))
            got = [next(found) if p is None else p for p in got]
        return got


class _Row:
    """One level queue: the list operations the MTA code uses (``len``, ``row[i]`` with
    negative indices, ``row[i] = x``, ``append``) over tail, head cache, buffer and store."""

    __slots__ = ("c_lo", "cache", "dirty", "end", "fill", "gc", "kv", "level", "tail",
                 "tail_from")

    def __init__(self, kv: _Pairs, level: int) -> None:
        self.kv = kv
        self.level = level
        self.end = 0             # positions [0, end) exist
        self.tail: list[Any] = []
        self.tail_from = 0       # tail = positions [tail_from, end), tail_from even
        self.cache: list[Any] = []
        self.c_lo = 0            # cache = positions [c_lo, c_lo + len(cache)), even bounds
        # cached pairs modified locally (a set once there is one: most rows never have any,
        # and a reopen creates every row)
        self.dirty: set[int] | frozenset[int] = _CLEAN
        self.gc = 0              # pairs below gc are deleted from the store
        self.fill = 1            # pairs the next refill reads (doubles up to cache_pairs)

    @classmethod
    def reopened(cls, kv: _Pairs, level: int, end: int, gc: int, fill: int,
                 saved: Sequence[Any]) -> _Row:
        """The row of a level of ``end`` positions in a reopened window (every field set
        once: a cache miss reopens every level). ``saved``: its ``[tail, lo, head]``
        (:meth:`_KvsLayout.local_state`), whose lists become the row's tail and head cache
        (taken over, not copied). :class:`ValueError` if ``saved`` does not fit ``end``."""
        row = cls.__new__(cls)
        row.kv = kv
        row.level = level
        row.end = end
        row.gc = gc
        row.fill = fill
        row.dirty = _CLEAN
        tail, lo, head = saved
        start = end - len(tail)
        if (start < 0 or start & 1 or len(tail) > _TAIL or lo < 0 or lo & 1
                or len(head) & 1 or lo + len(head) > start):
            raise ValueError(f"corrupt local part: level {level} has {end} positions, a "
                             f"tail of {len(tail)} and a head of {len(head)} from {lo}")
        row.tail_from = start
        row.tail = tail if type(tail) is list else list(tail)
        if head:
            row.cache = head if type(head) is list else list(head)
            row.c_lo = lo
        else:
            row.cache = []
            row.c_lo = start
        return row

    def __len__(self) -> int:
        return self.end

    def __getitem__(self, p: int) -> Any:
        if p < 0:
            p += self.end
        if p >= self.tail_from:
            return self.tail[p - self.tail_from]
        i = p - self.c_lo
        if 0 <= i < len(self.cache):
            return self.cache[i]
        return self._miss(p)

    def __setitem__(self, p: int, value: Any) -> None:
        if p < 0:
            p += self.end
        if p >= self.tail_from:
            self.tail[p - self.tail_from] = value
            return
        i = p - self.c_lo
        if 0 <= i < len(self.cache):
            self.cache[i] = value
            dirty = self.dirty
            if dirty is _CLEAN:
                dirty = self.dirty = set()
            dirty.add(p >> 1)   # type: ignore[union-attr]
            return
        key = slot(self.level, p >> 1)
        pair = list(self.kv.read([key])[0])
        pair[p & 1] = value
        self.kv.buffer_put(key, tuple(pair))

    def append(self, value: Any) -> None:
        tail = self.tail
        tail.append(value)
        self.end += 1
        if len(tail) > _TAIL:
            self._retire()

    def _retire(self) -> None:
        """The tail's oldest pair is final: to the buffer, and to the cache if the cache
        reaches up to it and has room (so a short window never reads the store)."""
        tail = self.tail
        q = self.tail_from >> 1
        pair = (tail[0], tail[1])
        del tail[:2]
        self.tail_from += 2
        if q >= self.gc:
            self.kv.buffer_put(slot(self.level, q), pair)
        cache = self.cache
        if self.c_lo + len(cache) == q + q and len(cache) < 2 * self.kv.cache_pairs:
            cache.extend(pair)

    def _miss(self, p: int) -> Any:
        """A read outside tail and cache: refill the cache if ``p`` is near the head,
        else read the one pair."""
        head = max(self.kv.head_of(self.level), 0)
        if head & ~1 <= p < (head & ~1) + 2 * self.kv.cache_pairs:
            self._refill(head, p)
            return self.cache[p - self.c_lo]
        pair = self.kv.read([slot(self.level, p >> 1)])[0]
        return pair[p & 1]

    def _refill(self, head: int, p: int) -> None:
        """Cache the pairs from the one holding ``head`` on, up to the one holding ``p`` and
        at least ``fill`` (not into the tail). ``fill`` doubles on every refill up to
        ``cache_pairs``: a level read once after a reopen reads a pair or two, a level read
        on and on reaches the full cache after log2(cache_pairs) refills. Pairs the cache
        holds are kept as they are, never replaced by a stored copy (P17). The dropped ones
        are dead: a pair is modified only while it holds its level's head, which never moves
        back, so a modified pair is either dead or from ``head`` on, which the cache keeps."""
        kv = self.kv
        lo = head & ~1
        hi = min(max(lo + 2 * self.fill, (p | 1) + 1), self.tail_from)
        self.fill = min(2 * self.fill, kv.cache_pairs)
        old, old_lo = self.cache, self.c_lo
        old_hi = old_lo + len(old)
        keep_lo, keep_hi = max(lo, old_lo), min(hi, old_hi)
        level = self.level
        if self.dirty:
            self.dirty = {q for q in self.dirty if keep_lo <= q + q < keep_hi}
        if keep_lo >= keep_hi:
            keep_lo = keep_hi = lo
        need = [slot(level, q) for q in range(lo >> 1, keep_lo >> 1)]
        need += [slot(level, q) for q in range(keep_hi >> 1, hi >> 1)]
        pairs = iter(kv.read(need)) if need else iter(())
        cache: list[Any] = []
        for _ in range(lo, keep_lo, 2):
            cache.extend(next(pairs))
        cache.extend(old[keep_lo - old_lo:keep_hi - old_lo])
        for _ in range(keep_hi, hi, 2):
            cache.extend(next(pairs))
        self.cache = cache
        self.c_lo = lo

    def collect(self, head: int) -> None:
        """Delete the stored pairs wholly before ``head`` once a batch of them is dead."""
        dead = min(head >> 1, self.tail_from >> 1)
        if dead - self.gc < self.kv.buffer_pairs:
            return
        self._delete(self.gc, dead)
        self.gc = dead

    def _delete(self, q0: int, q1: int) -> None:
        keys = [slot(self.level, q) for q in range(q0, q1)]
        if keys:
            buffer = self.kv.buffer
            for k in keys:
                buffer.pop(k, None)
            self.kv.store.delete_many(keys)

    def discard(self) -> None:
        """The level is removed: delete everything it stored."""
        self._delete(self.gc, (self.end + 1) >> 1)
        self.gc = (self.end + 1) >> 1

    def flush(self) -> None:
        """Put the modified cached pairs into the buffer. The tail is not stored as pairs:
        it goes with the local part (:meth:`_KvsLayout.local_state`), so a reopen needs no
        read for it and a call writes no tail pair (a pair is stored once it is final)."""
        if not self.dirty:
            return
        kv, level = self.kv, self.level
        for q in self.dirty:
            i = q + q - self.c_lo
            kv.buffer[slot(level, q)] = (self.cache[i], self.cache[i + 1])
        self.dirty = _CLEAN

    def resident(self) -> int:
        """Elements held in local memory by this row (tail and cache)."""
        return len(self.tail) + len(self.cache)


class _LeafRow(_Row):
    """Level 0: elements are ``(time, lifted value)``; indexing gives the value."""

    __slots__ = ("next_time",)

    def __init__(self, kv: _Pairs) -> None:
        super().__init__(kv, 0)
        self.next_time = 0

    @classmethod
    def reopened(cls, kv: _Pairs, level: int, end: int, gc: int, fill: int,
                 saved: Sequence[Any]) -> _Row:
        row = super().reopened(kv, level, end, gc, fill, saved)
        assert isinstance(row, _LeafRow)
        row.next_time = 0
        return row

    def __getitem__(self, p: int) -> Any:
        return _Row.__getitem__(self, p)[1]

    def __setitem__(self, p: int, value: Any) -> None:
        raise TypeError("MTA leaves are never rewritten")

    def append(self, value: Any) -> None:
        _Row.append(self, (self.next_time, value))

    def time(self, p: int) -> int:
        return _Row.__getitem__(self, p)[0]


class _Times:
    """The entry times as the MTA code reads them (``len``, ``t[i]``, ``append``), held by
    the leaf row: ``append(time)`` gives the time of the leaf appended next."""

    __slots__ = ("leaf",)

    def __init__(self, leaf: _LeafRow) -> None:
        self.leaf = leaf

    def __len__(self) -> int:
        return self.leaf.end

    def __getitem__(self, p: int) -> int:
        return self.leaf.time(p)

    def append(self, time: int) -> None:
        self.leaf.next_time = time


class _Levels(list):
    """The list of level rows: a plain list appended to it becomes a row holding its
    elements; removed rows delete what they stored."""

    def __init__(self, kv: _Pairs, rows: list[_Row] | None = None) -> None:
        super().__init__([_LeafRow(kv)] if rows is None else rows)
        self.kv = kv

    def append(self, elements: Any) -> None:
        row = _Row(self.kv, len(self))
        for x in elements:
            row.append(x)
        super().append(row)

    def pop(self, index: Any = -1) -> Any:
        row = super().pop(index)
        row.discard()
        return row

    def __delitem__(self, index: Any) -> None:
        rows = self[index] if isinstance(index, slice) else [self[index]]
        for row in rows:
            row.discard()
        super().__delitem__(index)


class _KvsLayout(_MtaBase):
    """The KVS layout over an MTA class (mixed in before it; see the module docstring).

    Args:
        aggregation: the aggregation.
        store: where the central pairs go (default: a new :class:`DictPairStore`); it
            must be empty, or hold only what this window writes.
        cache_pairs: pairs per level's head cache (the paper used 512).
        buffer_pairs: pairs the write buffer holds before it is stored (the paper: 512);
            also the batch of dead pairs deleted at once.
    """

    #: one entry at a time: the in-memory level rebuild would read every new pair back
    _bulk_min: ClassVar[int] = 1 << 62

    _kv: _Pairs
    _v: _Levels

    def __init__(self, aggregation: Aggregation, store: PairStore | None = None, *,
                 cache_pairs: int = 64, buffer_pairs: int = 64) -> None:
        self._kv = _Pairs(DictPairStore() if store is None else store, cache_pairs,
                          buffer_pairs, self)
        super().__init__(aggregation)

    @property
    def store(self) -> PairStore:
        """The pair store."""
        return self._kv.store

    def _head_of(self, level: int) -> int:
        return self._live_range(level)[0] - self._base[level]

    def _clear(self) -> None:
        old = self.__dict__.get("_v")
        if isinstance(old, _Levels):
            for row in old:
                row.discard()
            self._kv.buffer.clear()
        super()._clear()
        levels = _Levels(self._kv)
        self._v = levels
        self._t = _Times(levels[0])  # type: ignore[assignment]

    def _compact(self, level: int, lo: int) -> None:
        # positions never move in the store: collect the dead pairs instead
        self._v[level].collect(lo - self._base[level])

    # ------------------------------------------------------------------ times
    def _first_leaf_after(self, time: int, strict: bool) -> int:
        """Smallest leaf position ``p >= head`` whose time is ``> time`` (``strict``) or
        ``>= time``, or the end: a galloping search from the head (O(log k) reads for the
        answer k leaves in, the first ones from the head cache)."""
        leaf = self._v[0]
        end = leaf.end
        lo = self._lo0 - self._base[0]
        base = lo
        probe, step = lo, 1
        while probe < end:
            t = leaf.time(probe)
            if t > time or (not strict and t == time):
                break
            lo = probe + 1
            probe = base + step
            step += step
        hi = min(probe, end)
        while lo < hi:
            mid = (lo + hi) >> 1
            t = leaf.time(mid)
            if t > time or (not strict and t == time):
                hi = mid
            else:
                lo = mid + 1
        return lo

    def bulk_evict(self, time: int) -> int:
        """Remove every entry with ``entry.time <= time``; returns how many were removed
        (a galloping search for the count, then the class's O(log n) removal)."""
        if type(time) is not int:
            time = as_time(time)
        if not len(self):
            return 0
        k = self._first_leaf_after(time, True) - (self._lo0 - self._base[0])
        if k:
            self._evict_count(k, "bulk_evict")
        return k

    def query_since(self, time: int) -> Any:
        """Lowered aggregate of the entries with ``entry.time >= time`` (O(log n))."""
        if type(time) is not int:
            time = as_time(time)
        if not len(self):
            return self._lower(self._identity)
        i0 = self._lo0 - self._base[0]
        i = self._first_leaf_after(time, False)
        if i == self._v[0].end:
            return self._lower(self._identity)
        if i == i0:
            return self.query()
        return self._lower(self._suffix(self._base[0] + i))

    def items(self) -> Iterator[tuple[int, Any]]:
        """``(time, lifted value)`` pairs, oldest first (read through cache and store)."""
        leaf = self._v[0]
        lo = self._lo0 - self._base[0]
        return iter([_Row.__getitem__(leaf, p) for p in range(lo, leaf.end)])

    # ------------------------------------------------------------------ persistence
    def flush(self) -> None:
        """Write the pairs held locally (modified heads, the buffer) to the store, so that
        the store and :meth:`local_state` describe the window, and delete the dead pairs of
        every level once a batch (``buffer_pairs``) of them is dead. Without that, dead
        pairs would wait for the in-memory class's compaction (a dead prefix half its
        level), which first comes after about 2n entries and then deletes O(n) pairs in one
        ``delete_many``: the store held twice the window and the call held O(n) slots."""
        self._settle()
        self._kv.flush_buffer()

    def park(self) -> tuple[list[int], list[Any], list[list[Any]], list[tuple[int, Any]]]:
        """:meth:`flush` that keeps a write buffer smaller than ``buffer_pairs`` local: the
        modified heads go to the buffer, dead pairs are deleted as by :meth:`flush`, and the
        buffer is written only once it holds ``buffer_pairs`` pairs. Returns the local part
        with the buffer: :meth:`local_state` and the buffered ``(slot, pair)`` items, for
        :meth:`reopen` (``local`` with a fourth element). A window saved after every
        operation (a driver call) then writes the store once per ``buffer_pairs`` retired
        or modified pairs instead of on every save (the paper's buffer, section 2.5), at the
        price of a local part up to ``buffer_pairs`` pairs larger."""
        kv = self._kv
        heads = self._settle()
        if len(kv.buffer) >= kv.buffer_pairs:
            kv.flush_buffer()
        ints, partials, rows = self._local_state(heads)
        return ints, partials, rows, list(kv.buffer.items())

    def _settle(self) -> list[int]:
        """The modified cached pairs to the buffer, the batches of dead pairs deleted;
        returns :meth:`_heads`."""
        heads = self._heads()
        for row, head in zip(self._v, heads):
            if row.dirty:
                row.flush()
            row.collect(head)
        return heads

    def _heads(self) -> list[int]:
        """:meth:`_head_of` of every level."""
        return [self._head_of(level) for level in range(len(self._v))]

    def resident_pairs(self) -> int:
        """Pairs held in local memory: tails, head caches, buffer and the class's own
        O(log n) state (counted in elements / 2, rounded up)."""
        elements = sum(row.resident() for row in self._v) + 2 * len(self._kv.buffer)
        return (elements + self._extra_resident() + 1) // 2

    def _extra_resident(self) -> int:
        return 0

    def local_state(self) -> tuple[list[int], list[Any], list[list[Any]]]:
        """The local part after :meth:`flush`: ``(ints, partials, rows)``, a list of ints,
        a list of raw partials and per level ``[tail, lo, head]``: its tail (its last two
        pairs' elements, the positions ``end - len(tail)`` on) and the first
        :data:`HEAD_PAIRS` pairs of its head cache from position ``lo`` (the pair holding the
        level's head; ``[]`` if the cache does not hold it), O(log n) long in all; for
        :meth:`reopen`."""
        return self._local_state(self._heads())

    def _local_state(self, heads: list[int]) -> tuple[list[int], list[Any], list[list[Any]]]:
        """:meth:`local_state`, ``heads`` the levels' :meth:`_heads`."""
        rows = self._v
        ints = [self._lo0, len(rows)]
        saved = []
        for row, head, base in zip(rows, heads, self._base):
            ints += (row.end, row.gc, base)
            cache = row.cache
            lo = head & ~1 if head > 0 else 0
            i = lo - row.c_lo
            if cache and 0 <= i < len(cache):
                saved.append([list(row.tail), lo, cache[i:i + 2 * HEAD_PAIRS]])
            else:
                saved.append([list(row.tail), 0, []])
        extra_ints, partials = self._local_extra()
        return ints + extra_ints, partials, saved

    def _local_extra(self) -> tuple[list[int], list[Any]]:
        raise NotImplementedError

    def _set_local_extra(self, ints: list[int], partials: list[Any]) -> None:
        raise NotImplementedError

    @classmethod
    def reopen(cls, aggregation: Aggregation, store: PairStore,
               local: tuple[Sequence[int], Sequence[Any], Sequence[Sequence[Any]]]
               | tuple[Sequence[int], Sequence[Any], Sequence[Sequence[Any]],
                       Sequence[tuple[int, Any]]], *,
               cache_pairs: int = 64, buffer_pairs: int = 64) -> Any:
        """The window that :meth:`local_state` described, over the ``store`` it flushed to
        (no read here; a level's head beyond what ``local`` holds is read on first use);
        with a fourth element, the write buffer that :meth:`park` kept local. The lists of
        the rows (each level's tail and head) are taken over, not copied: pass lists nothing
        else holds, as :meth:`local_state` and :meth:`park` return them.
        :class:`ValueError` if ``local`` is inconsistent."""
        self = cls.__new__(cls)
        Window.__init__(self, aggregation)
        kv = self._kv = _Pairs(store, cache_pairs, buffer_pairs, self)
        ints, partials = list(local[0]), list(local[1])
        tails = local[2]
        if len(local) > 3:
            kv.buffer.update(local[3])
        self._lo0, h = ints[0], ints[1]
        if h < 1 or len(ints) < 2 + 3 * h or len(tails) != h:
            raise ValueError(f"corrupt local part: {h} levels, {len(ints)} ints")
        # a refill reads at least what the local part keeps of a head: a reopened level
        # that evicts on then reads once per HEAD_PAIRS pairs, not per pair
        fill = min(HEAD_PAIRS, cache_pairs)
        rows: list[_Row] = []
        for level in range(h):
            j = 2 + 3 * level
            rows.append((_Row if level else _LeafRow).reopened(
                kv, level, ints[j], ints[j + 1], fill, tails[level]))
        levels = self._v = _Levels(kv, rows)
        self._t = _Times(levels[0])  # type: ignore[assignment]
        self._base = ints[4:2 + 3 * h:3]
        self._set_local_extra(ints[2 + 3 * h:], partials)
        return self


def _opt(x: Any) -> list[Any]:
    return [] if x is EMPTY else [x]


class KvsLogMta(_KvsLayout, LogMta):
    """:class:`~swag_core.algorithms.mta.LogMta` in the KVS layout (module docstring):
    the same results and ``combine`` calls (``bulk_insert`` costs m single inserts), with
    O(log n + cache) pairs in local memory."""

    name: ClassVar[str] = "log_mta"

    def _local_extra(self) -> tuple[list[int], list[Any]]:
        return [*self._lo, *self._sh], _opt(self._total)

    def _head_of(self, level: int) -> int:
        # LogMta._live_range, inlined
        return (self._lo[level] if level else self._lo0) - self._base[level]

    def _heads(self) -> list[int]:
        heads = [lo - b for lo, b in zip(self._lo, self._base)]
        heads[0] = self._lo0 - self._base[0]
        return heads

    def _set_local_extra(self, ints: list[int], partials: list[Any]) -> None:
        h = len(self._v)
        self._lo, self._sh = ints[:h], ints[h:2 * h]
        self._total = partials[0] if partials else EMPTY


class KvsAmta(_KvsLayout, Amta):
    """:class:`~swag_core.algorithms.mta.Amta` in the KVS layout (module docstring): the
    same results and ``combine`` calls, with O(log n + cache) pairs in local memory (the
    stack and result pair are local, Fig. 4c)."""

    name: ClassVar[str] = "amta"

    def _extra_resident(self) -> int:
        return len(self._stack) + 3

    def _head_of(self, level: int) -> int:
        return (self._lo0 >> level) - self._base[level]   # Amta._live_range, inlined

    def _heads(self) -> list[int]:
        lo0 = self._lo0
        return [(lo0 >> level) - b for level, b in enumerate(self._base)]

    def _local_extra(self) -> tuple[list[int], list[Any]]:
        r0, r1 = self._r0, self._r1
        flags = [r0 is not EMPTY, r1 is not EMPTY]
        return [int(f) for f in flags], [*_opt(r0), *_opt(r1), *self._stack]

    def _set_local_extra(self, ints: list[int], partials: list[Any]) -> None:
        it = iter(partials)
        self._r0 = next(it) if ints[0] else EMPTY
        self._r1 = next(it) if ints[1] else EMPTY
        self._stack = list(it)
        self._cache = EMPTY


__all__ = ["HEAD_PAIRS", "SLOT_BITS", "DictPairStore", "KvsAmta", "KvsLogMta", "PairStore", "slot"]
