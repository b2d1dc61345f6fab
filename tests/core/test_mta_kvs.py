"""The KVS layout of Log MTA and AMTA (``swag_core.algorithms.mta_kvs``): the same answers as
a brute force and as the in-memory classes on the same histories (with tiny caches and
buffers, so refill, miss, flush and reopen paths run), and counted (never timed) local
memory and store calls."""

from __future__ import annotations

import gc
import math
import weakref
from functools import partial
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from swag_core.algorithms.mta import Amta, LogMta
from swag_core.algorithms.mta_kvs import (
    HEAD_PAIRS,
    SLOT_BITS,
    DictPairStore,
    KvsAmta,
    KvsLogMta,
    PairStore,
    slot,
)

from .helpers import concat, counting, int_sum, matmul
from .invariants import check_mta
from .test_mta import AGGS, brute_longest, record_agg, run_steps

PAIRS = [(KvsLogMta, LogMta), (KvsAmta, Amta)]


def test_slot_packing() -> None:
    assert slot(0, 0) == 0
    assert slot(3, 5) == (3 << SLOT_BITS) | 5
    assert slot(1, 0) > slot(0, (1 << SLOT_BITS) - 1)   # a level's pairs are consecutive
    assert isinstance(DictPairStore(), PairStore)


@pytest.mark.parametrize("name", list(AGGS))
@pytest.mark.parametrize("kvs", [KvsLogMta, KvsAmta])
def test_against_brute_force(kvs: type, name: str) -> None:
    """The in-memory classes' brute-force history test (insert, bulk insert, evict,
    bulk_evict, enforce, query_since, invariants after every step), on a window whose
    cache and buffer hold one or two pairs."""
    @settings(max_examples=30)
    @given(st.data(), st.integers(1, 2), st.integers(1, 3))
    def check(data: st.DataObject, cache: int, buffer: int) -> None:
        run_steps(data, partial(kvs, cache_pairs=cache, buffer_pairs=buffer), name)

    check()


@pytest.mark.parametrize("kvs,mem", PAIRS)
@settings(max_examples=25)
@given(data=st.data(), cache=st.integers(1, 3), buffer=st.integers(1, 4))
def test_same_as_in_memory_class(kvs: type, mem: type, data: st.DataObject, cache: int,
                                 buffer: int) -> None:
    """Same history on the KVS window and the in-memory one: same answers, same items and
    the KVS window is flushed and reopened from its store and
    local state at random points (a restart)."""
    agg = record_agg("matmul")
    store = DictPairStore()
    w = kvs(agg, store, cache_pairs=cache, buffer_pairs=buffer)
    m = mem(agg)
    draw = data.draw
    clock = 0
    for _ in range(draw(st.integers(1, 60))):
        op = draw(st.sampled_from(["insert", "insert", "insert", "batch", "evict", "bulk",
                                   "enforce", "since", "reopen"]))
        if op in ("insert", "batch"):
            batch = []
            for _ in range(1 if op == "insert" else draw(st.sampled_from([2, 9, 40]))):
                clock += draw(st.integers(0, 2))
                batch.append((clock, (clock, draw(st.integers(0, 50)), 8)))
            results = [x.bulk_insert(batch) for x in (w, m)]
        elif op == "evict":
            results = [x.evict() for x in (w, m)] if len(m) else []
        elif op == "bulk":
            t = draw(st.integers(clock - 50, clock + 1))
            results = [x.bulk_evict(t) for x in (w, m)]
        elif op == "enforce":
            n = draw(st.integers(0, 30))

            def policy(total: Any, p: Any, n: int = n) -> bool:
                return bool(total[1] - p[1] >= n)
            want = brute_longest(agg, [v for _, v in m.items()], policy)
            results = [x.enforce(policy) for x in (w, m)] + [want]
        elif op == "since":
            t = draw(st.integers(clock - 40, clock + 1))
            results = [x.query_since(t) for x in (w, m)]
        else:
            if draw(st.booleans()):
                w.flush()
                local: Any = w.local_state()
            else:  # the write buffer kept in the local part
                local = w.park()
            w = kvs.reopen(agg, store, local, cache_pairs=cache, buffer_pairs=buffer)
            results = []
        assert len(set(map(repr, results))) <= 1, (op, results)
        assert w.query() == m.query()
        assert len(w) == len(m)
        check_mta(w)
    assert list(w.items()) == list(m.items())


@pytest.mark.parametrize("kvs", [KvsLogMta, KvsAmta])
def test_same_combine_calls_as_in_memory(kvs: type) -> None:
    """Insert, evict and enforce make exactly the in-memory class's ``combine`` calls (the
    layout moves pairs, it does not compute more)."""
    counts = []
    for cls in (kvs, kvs.__mro__[2]):
        agg, counter = counting(matmul())
        w = cls(agg)
        for i in range(3000):
            w.insert(i, i)
            if i % 3:
                w.evict()
            if i % 500 == 499:
                w.enforce(lambda total, p: False)
                w.bulk_evict(i - 200)
        counts.append(counter.calls)
    assert counts[0] == counts[1]


@pytest.mark.parametrize("kvs", [KvsLogMta, KvsAmta])
def test_local_memory_is_logarithmic(kvs: type) -> None:
    """A sliding window of n entries (insert + evict): the pairs held locally stay within
    3 log2(n) + caches + buffer, and the store holds O(n) pairs (dead pairs deleted)."""
    cache, buffer = 8, 8
    for n in (1 << 8, 1 << 12):
        store = DictPairStore()
        w = kvs(int_sum(), store, cache_pairs=cache, buffer_pairs=buffer)
        worst = 0
        for i in range(3 * n):
            w.insert(i, i)
            if i >= n:
                w.evict()
            worst = max(worst, w.resident_pairs())
        h = math.log2(n)
        assert worst <= 3 * h + cache * (h + 2) + buffer, (n, worst)
        assert len(store.data) <= n + 4 * buffer * (h + 2)
        assert w.query() == sum(range(2 * n, 3 * n))


@pytest.mark.parametrize("kvs", [KvsLogMta, KvsAmta])
def test_store_calls_are_constant_amortized(kvs: type) -> None:
    """Store calls (get_many, put_many, delete_many), counted: a steady insert + evict
    stream makes far less than one call per operation; a bulk eviction of half of 2^12
    entries O(log n) calls; a flush one put (and the deletes of dead batches); a reopen
    none, and an operation after it a few (the levels it touches: O(1) for AMTA, both
    branches, O(log n), for Log MTA)."""
    n = 1 << 12
    store = DictPairStore()
    w = kvs(int_sum(), store, cache_pairs=16, buffer_pairs=16)
    for i in range(n):
        w.insert(i, i)
    before = store.calls
    ops = 0
    for i in range(n, 5 * n):
        w.insert(i, i)
        w.evict()
        ops += 2
    per_op = (store.calls - before) / ops
    assert per_op <= 0.25, per_op
    before = store.calls
    assert w.bulk_evict(5 * n - n // 2 - 1) == n // 2
    assert store.calls - before <= 4 * math.log2(n) + 4
    before, puts = store.calls, store.puts
    w.flush()
    # one put, and one delete per level with a batch of dead pairs (the bulk eviction's)
    assert store.puts - puts == 1 and store.calls - before <= 1 + len(w._v)
    before = store.calls
    w.flush()
    assert store.calls == before                  # nothing left to write or delete
    before = store.calls
    w2 = kvs.reopen(w.aggregation, store, w.local_state(), cache_pairs=16, buffer_pairs=16)
    assert w2.query() == w.query() == sum(range(5 * n - n // 2, 5 * n))
    assert store.calls == before                  # a reopen and a query read nothing
    # per level: its tail (two pairs) and HEAD_PAIRS of its head cache
    assert w2.resident_pairs() <= (3 + HEAD_PAIRS) * math.log2(n) + 4
    w2.insert(5 * n, 0)
    w2.evict()
    # one op reads the levels it touches: AMTA one or two, Log MTA its two branches
    h = len(w2._v)
    assert store.calls - before <= (4 if kvs is KvsAmta else 2 * h + 2)
    assert w2.query() == sum(range(5 * n - n // 2 + 1, 5 * n))


@pytest.mark.parametrize("kvs", [KvsLogMta, KvsAmta])
def test_flushes_keep_the_store_to_the_window(kvs: type) -> None:
    """A window of n entries sliding for 3n, flushed every 64 operations (as the driver does
    per call): the store never holds much more than the window's ~n pairs (dead pairs are
    deleted a batch at a time, not when the in-memory compaction would first run, after
    ~2n, all at once) and no flush deletes more than a batch per level."""
    n, buffer = 1 << 11, 16
    store = DictPairStore()
    w = kvs(int_sum(), store, cache_pairs=16, buffer_pairs=buffer)
    deleted: list[int] = []
    delete_many = store.delete_many
    store.delete_many = lambda slots: (deleted.append(len(slots)), delete_many(slots))[1]
    for i in range(n):
        w.insert(i, i)
    most = 0
    for i in range(n, 4 * n):
        w.insert(i, i)
        w.evict()
        if i % 64 == 0:
            w.flush()
            most = max(most, len(store.data))
    h = len(w._v)
    assert most <= n + 2 * buffer * h, (most, n)
    assert max(deleted) <= 2 * buffer + 64, max(deleted)
    assert w.query() == sum(range(3 * n, 4 * n))


@pytest.mark.parametrize("kvs", [KvsLogMta, KvsAmta])
def test_refill_keeps_modified_heads(kvs: type) -> None:
    """P17: the leftmost-branch recompute writes head pairs locally; refills (tiny cache,
    buffer of one pair, so stored copies are older) must not bring older copies back."""
    store = DictPairStore()
    w = kvs(concat(), store, cache_pairs=1, buffer_pairs=1)
    ref = (LogMta if kvs is KvsLogMta else Amta)(concat())
    for i in range(200):
        for x in (w, ref):
            x.insert(i, i)
        if i % 7 == 6:
            for x in (w, ref):
                x.bulk_evict(i - 20)
                x.enforce(lambda total, p: total.count(";") - p.count(";") >= 15)
        assert w.query() == ref.query()
    check_mta(w)


def test_clear_and_level_removal_delete_stored_pairs() -> None:
    """Evicting everything and removing levels leaves no pair behind in the store."""
    for kvs in (KvsLogMta, KvsAmta):
        store = DictPairStore()
        w = kvs(int_sum(), store, cache_pairs=2, buffer_pairs=2)
        for i in range(500):
            w.insert(i, i)
        w.flush()
        assert store.data
        w.bulk_evict(10**9)
        assert len(w) == 0 and not store.data
        for i in range(300):
            w.insert(i, i)
        w.bulk_evict(297)
        w.flush()
        assert len(store.data) <= 2 * 2 + 6 * math.log2(300)


@pytest.mark.parametrize("kvs", [KvsLogMta, KvsAmta])
def test_a_dropped_window_is_freed_without_the_cycle_collector(kvs: type) -> None:
    """A window holds no reference cycle: a driver's evicted key is freed by its last
    reference going, not by a full garbage collection (which a cycle made cost 18% of a
    cache-miss workload's CPU time)."""
    store = DictPairStore()
    w = kvs(int_sum(), store, cache_pairs=2, buffer_pairs=2)
    for i in range(100):
        w.insert(i, i)
    w.bulk_evict(40)
    local = w.park()
    w2 = kvs.reopen(w.aggregation, store, local, cache_pairs=2, buffer_pairs=2)
    assert w2.query_since(60) == sum(range(60, 100))   # reads through its rows
    gc.disable()
    try:
        refs = [weakref.ref(w), weakref.ref(w2)]
        del w, w2
        assert [r() for r in refs] == [None, None]
    finally:
        gc.enable()
