"""Reactive Aggregator on FlatFAT (``reactive``): the note's concrete cases T1-T14
(``notes/reactive-flatfat.md`` section 5.2) adapted to the time-ordered API, out-of-order and
non-FIFO specifics, combine-call bounds (Theorem 4.2) and a differential test against brute
force with structural invariants checked after every step."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from swag_core import Aggregation, EmptyWindowError, InvalidTimeError, make_window
from swag_core.aggregations import ArgMax, Collect, Max, MaxCount
from swag_core.algorithms._queues import EMPTY, NO_CACHE
from swag_core.algorithms.reactive import Reactive
from swag_core.errors import EntryNotFoundError

from .helpers import Model, concat, counting, matmul
from .invariants import check_reactive


def layout(w: Reactive) -> tuple[int, int, list[Any]]:
    """``(F, B, leaves)`` of the flat tree, ``None`` for the paper's ⊥ slots (its Figure 5
    shows the structure in this form)."""
    fat = w._fat
    cap = fat.capacity
    leaves = [None if v is EMPTY else v for v in fat.tree[cap:]]
    back = (w._front + w._span - 1) & (cap - 1)
    return w._front, back, leaves


def plain_concat() -> Aggregation:
    """Concatenation of the values themselves (the note's strings "12345678")."""
    return Aggregation(combine=lambda a, b: a + b, identity="", name="plain_concat")


def update_bound(m: int, cap: int) -> int:
    """Theorem 4.2(ii): m(1 + ceil(log2(cap / m))) combine calls for m unique leaves."""
    if m == 0 or cap == 1:
        return 0
    k = 0
    while m << k < cap:
        k += 1
    return m * (1 + k)


def log2(cap: int) -> int:
    return cap.bit_length() - 1


def flush_calls(w: Reactive, counter: Any) -> tuple[int, int]:
    """(dirty leaves, combine calls) of the pending batched update."""
    m = len(w._fat.dirty_leaves())
    counter.reset()
    w._fat.flush()
    return m, counter.reset()


def full_window(n: int, agg: Aggregation) -> Reactive:
    w = Reactive(agg, capacity=n, min_capacity=n)
    w.bulk_insert((i, str(i)) for i in range(1, n + 1))
    return w


# --------------------------------------------------------------------------- FlatFAT (T1-T6)
def test_t1_new_costs_n_minus_1() -> None:
    agg, counter = counting(plain_concat())
    w = full_window(8, agg)
    assert counter.calls == 7  # W1 = {a,b,c,d}, W2 = {e,f}, W3 = {g}
    assert w._fat.tree[1] == "12345678"
    assert w.query() == "12345678"


def _write_leaf(w: Reactive, loc: int, value: str) -> None:
    """The paper's update() location loc (1-based): heap index h(leaf(loc)) = n + loc - 1."""
    w._fat.set(loc - 1, value)


def test_t2_t3_t4_t5_update_and_prefix_suffix() -> None:
    agg, counter = counting(plain_concat())
    w = full_window(8, agg)
    counter.reset()
    for loc, value in [(1, "A"), (2, "B"), (4, "D"), (7, "G")]:
        _write_leaf(w, loc, value)
    heap = [w.capacity + i for i in w._fat.dirty_leaves()]
    assert heap == [8, 9, 11, 14]  # T5: leaf(i) = 7 + i; parent(14) = 7 (d)
    assert flush_calls(w, counter) == (4, 6)  # T2: W1 = {a,b,d}, W2 = {e,f}, W3 = {g}
    assert update_bound(4, 8) == 8
    assert w._fat.tree[1] == "AB3D56G8"
    _write_leaf(w, 3, "C")
    assert flush_calls(w, counter) == (1, 3)  # T3: b, e, g
    assert w._fat.tree[1] == "ABCD56G8"
    assert w._fat.prefix(6) == "ABCD56G"  # T4 prefix(7) = T(e) + T(c) + a[7]
    assert counter.reset() == 2
    assert w._fat.suffix(1) == "BCD56G8"  # suffix(2)
    assert counter.reset() == 2
    check_reactive(w)


@pytest.mark.parametrize(("m", "calls"), [(1, 10), (2, 10), (64, 67), (256, 257), (1024, 1023)])
def test_t6_contiguous_block_update(m: int, calls: int) -> None:
    agg, counter = counting(plain_concat())
    w = full_window(1024, agg)
    for loc in range(1, m + 1):
        _write_leaf(w, loc, "x")
    assert flush_calls(w, counter) == (m, calls)
    assert calls <= update_bound(m, 1024)
    check_reactive(w)


def test_t6_random_unique_locations_within_bound() -> None:
    rng = random.Random(6)
    agg, counter = counting(plain_concat())
    for n in (8, 64, 1024, 4096):
        w = full_window(n, agg)
        for _ in range(20):
            m = rng.randint(1, n)
            for loc in rng.sample(range(1, n + 1), m):
                _write_leaf(w, loc, rng.choice("xyz"))
            got_m, calls = flush_calls(w, counter)
            assert got_m == m and calls <= update_bound(m, n)
        check_reactive(w)


# --------------------------------------------------------------------------- inverted buffer
def test_t7_figure_5_collect() -> None:
    w = Reactive(Collect(), capacity=4)
    states = []
    for time, value in [(1, 4), (2, 7), (3, 3), (4, 2)]:
        w.insert(time, value)
        states.append(layout(w))
    w.evict()  # 4 leaves
    states.append(layout(w))
    w.insert(5, 9)
    states.append(layout(w))
    leaves = [(4,), (7,), (3,), (2,)]
    assert states == [
        (0, 0, [leaves[0], None, None, None]),
        (0, 1, [*leaves[:2], None, None]),
        (0, 2, [*leaves[:3], None]),
        (0, 3, leaves),
        (1, 3, [None, *leaves[1:]]),
        (1, 0, [(9,), *leaves[1:]]),  # B = 0 precedes F = 1: inverted
    ]
    assert w.query() == [7, 3, 2, 9]
    assert w._fat.tree[1] == (9, 7, 3, 2)  # the naive root is wrong
    assert w.capacity == 4
    check_reactive(w)


def test_t8_argmax_tie_on_inverted_buffer() -> None:
    w = Reactive(ArgMax(key=lambda r: r[0]), capacity=4)
    for time, value in [(1, (1, "p")), (2, (5, "x")), (3, (2, "q")), (4, (3, "r"))]:
        w.insert(time, value)
    assert w.query() == (5, "x")
    w.evict()
    w.insert(5, (5, "y"))
    front, back, _ = layout(w)
    assert (front, back) == (1, 0)
    assert w.query() == (5, "x")  # first maximum in window order
    assert w.aggregation.lower_fn(w._fat.tree[1]) == (5, "y")  # the naive root
    w.remove(2)  # x
    assert w.query() == (5, "y")
    check_reactive(w)


def test_inverted_query_costs_at_most_2_log_cap_plus_1() -> None:
    agg, counter = counting(concat())
    w = Reactive(agg, capacity=64, min_capacity=64)
    for t in range(64):
        w.insert(t, t)
    for t in range(64, 200):
        w.evict()
        w.insert(t, t)
        w._fat.flush()
        counter.reset()
        assert w.query() == "".join(f"{i};" for i in range(t - 63, t + 1))
        assert counter.reset() <= 2 * log2(64) + 1
        assert w.query() and counter.calls == 0  # cached


# --------------------------------------------------------------------------- compaction/resize
def test_t9_compaction_instead_of_growth() -> None:
    w = Reactive(plain_concat(), capacity=4)
    for t, v in enumerate("abcd"):
        w.insert(t, v)
    w.remove(1)  # b: a hole
    assert layout(w) == (0, 3, ["a", None, "c", "d"])
    w.insert(4, "e")  # full span and 3 <= 3/4 * 4: compact, no growth
    assert layout(w) == (0, 3, ["a", "c", "d", "e"])
    assert w.capacity == 4 and w.query() == "acde"
    check_reactive(w)


def test_t10_compaction_of_inverted_buffer_keeps_order() -> None:
    w = Reactive(plain_concat(), capacity=4)
    for t, v in enumerate("abcd"):
        w.insert(t, v)
    w.evict()  # a
    w.insert(4, "e")  # slot 0
    w.remove(2)  # c
    assert layout(w) == (1, 0, ["e", "b", None, "d"])
    assert w.query() == "bde"
    w.insert(5, "f")  # compacts circularly from F
    assert layout(w) == (1, 0, ["f", "b", "d", "e"])
    assert w.query() == "bdef" and w.capacity == 4
    check_reactive(w)


def test_t11_shrink() -> None:
    w = Reactive(plain_concat(), capacity=8)
    w.insert(1, "a")
    w.insert(2, "b")
    w.evict()  # 1 < 8/4
    assert w.capacity == 4 and w.query() == "b"
    check_reactive(w)


def _count_calls(w: Reactive, method: str) -> list[int]:
    calls: list[int] = []
    original = getattr(w, method)

    def wrapper(*args: Any) -> Any:
        calls.append(1)
        return original(*args)

    setattr(w, method, wrapper)
    return calls


def test_t12_fifo_count_window_grows_to_1024_without_compaction() -> None:
    w = Reactive(Max(), capacity=1, min_capacity=1)
    compactions = _count_calls(w, "_compact")
    capacities = [w.capacity]
    for t in range(5000):
        if len(w) == 1000:
            w.evict()
        w.insert(t, t % 97)
        if w.capacity != capacities[-1]:
            capacities.append(w.capacity)
    assert capacities == [2**k for k in range(11)]  # 10 doublings
    assert not compactions
    assert w.query() == max(t % 97 for t in range(4000, 5000))
    check_reactive(w)


def test_pitfall_13_insert_then_evict_doubles_once() -> None:
    w = Reactive(Max(), capacity=1024)
    for t in range(3000):
        w.insert(t, t)
        if len(w) > 1024:
            w.evict()
    assert w.capacity == 2048 and len(w) == 1024


def test_t13_oscillation() -> None:
    w = Reactive(Max())
    for t in range(1025):
        w.insert(t, t)
    assert w.capacity == 2048
    while len(w) > 512:
        w.evict()
    assert w.capacity == 2048  # 512 is not < 2048 / 4
    w.evict()
    assert len(w) == 511 and w.capacity == 1024
    for t in range(1025, 1025 + 514):
        w.insert(t, t)
    assert len(w) == 1025 and w.capacity == 2048
    check_reactive(w)


def test_compact_and_resize_are_amortized() -> None:
    agg, counter = counting(Max())
    w = Reactive(agg, capacity=1, min_capacity=1)
    rng = random.Random(3)
    ops = 0
    recent: list[int] = []
    for t in range(8000):
        time = rng.randint(max(0, t - 50), t)
        w.insert(time, t)
        recent.append(time)
        ops += 1
        if len(w) > 300:
            for _ in range(rng.randint(1, 5)):
                if rng.random() < 0.5 and recent:  # non-FIFO removal of a recent entry
                    time = recent.pop(rng.randrange(len(recent)))
                    try:
                        w.remove(time)
                    except KeyError:  # already evicted
                        continue
                else:
                    w.evict()
                ops += 1
        if t % 7 == 0:
            w.query()
    # Everything (compaction, resizes, batched updates) stays within a few log2(cap) per op
    # (measured: about 7 calls per operation at capacity 512).
    assert counter.calls <= 2 * log2(w.capacity) * ops
    check_reactive(w)


# --------------------------------------------------------------------------- out of order
def test_out_of_order_ties_keep_insertion_order() -> None:
    w = Reactive(concat(), capacity=4)
    for t, v in [(5, "a"), (1, "b"), (5, "c"), (3, "d"), (1, "e"), (9, "f"), (5, "g"), (0, "h")]:
        w.insert(t, v)
        check_reactive(w)
    assert [t for t, _ in w.items()] == [0, 1, 1, 3, 5, 5, 5, 9]
    assert w.query() == "h;b;e;d;a;c;g;f;"
    assert (w.oldest(), w.youngest()) == (0, 9)


def test_out_of_order_insert_moves_the_nearer_side() -> None:
    agg, counter = counting(concat())
    w = Reactive(agg, capacity=128, min_capacity=128)
    for t in range(0, 200, 2):  # 100 entries, times 0..198
        w.insert(t, t)
    w.query()
    check_reactive(w)
    w.insert(195, "late")  # 2 younger entries move right: 3 dirty leaves
    assert len(w._fat.dirty_leaves()) == 3
    m, calls = flush_calls(w, counter)
    assert calls <= update_bound(m, 128)
    w.insert(3, "early")  # 2 older entries move left (into the free slot before F)
    assert len(w._fat.dirty_leaves()) == 3
    w.insert(-1, "oldest")  # no move at all
    w.insert(1000, "youngest")
    assert len(w._fat.dirty_leaves()) == 5
    check_reactive(w)
    times = [t for t, _ in w.items()]
    assert times == sorted(times) and len(times) == 104


def test_out_of_order_insert_refills_the_nearest_hole() -> None:
    w = Reactive(concat(), capacity=64, min_capacity=64)
    for t in range(40):
        w.insert(10 * t, t)
    w.remove(200)  # hole at logical 20
    w._fat.flush()
    w.insert(215, "x")  # goes right before 220: the hole at 20 is 1 step left
    assert len(w._fat.dirty_leaves()) == 2 and w._span == 40  # one entry moved, span unchanged
    check_reactive(w)
    assert [t for t, _ in w.items()][19:23] == [190, 210, 215, 220]


def test_wrapped_moves() -> None:
    """Moves across the physical end of the circular buffer (the non-slice paths)."""
    model_agg = concat()
    for front_shift in range(8):
        w = Reactive(model_agg, capacity=8, min_capacity=8)
        model = Model(model_agg)
        for t in range(front_shift):
            w.insert(t, "pad")
        for _ in range(front_shift):
            w.evict()
        for t in range(100, 160, 10):
            w.insert(t, t)
            model.insert(t, t)
        for t, v in [(135, "a"), (105, "b"), (155, "c")]:
            if len(w) == w.capacity - 1:
                w.evict()
                model.evict()
            w.insert(t, v)
            model.insert(t, v)
            check_reactive(w)
            assert w.query() == model.query()


# --------------------------------------------------------------------------- non-FIFO removal
def test_remove_takes_the_oldest_inserted_of_equal_times() -> None:
    w = Reactive(concat(), capacity=16)
    for t, v in [(1, "a"), (2, "b"), (2, "c"), (2, "d"), (3, "e")]:
        w.insert(t, v)
    w.remove(2)
    assert w.query() == "a;c;d;e;"
    w.remove(2)
    assert w.query() == "a;d;e;"
    w.insert(2, "f")  # after d (insertion order among equal times)
    assert w.query() == "a;d;f;e;"
    w.remove(3)  # the youngest: the back moves
    w.remove(2)
    assert w.query() == "a;f;"
    assert (w.oldest(), w.youngest()) == (1, 2)
    check_reactive(w)


def test_remove_missing_time_changes_nothing() -> None:
    w = Reactive(concat(), capacity=8)
    with pytest.raises(EntryNotFoundError):
        w.remove(3)
    for t in (1, 2, 4):
        w.insert(t, t)
    w.remove(2)
    before = (list(w.items()), layout(w), w.query())
    for t in (0, 2, 3, 5):
        with pytest.raises(KeyError, match=f"no entry at time {t}"):
            w.remove(t)
    assert (list(w.items()), layout(w), w.query()) == before
    with pytest.raises(InvalidTimeError):
        w.remove(1.5)  # type: ignore[arg-type]
    check_reactive(w)


def test_remove_everything_in_random_order() -> None:
    rng = random.Random(11)
    w = Reactive(concat(), capacity=2, min_capacity=2)
    model = Model(concat())
    for _ in range(300):
        t = rng.randint(0, 50)
        w.insert(t, t)
        model.insert(t, t)
    while len(model):
        t = rng.choice(model.times)
        w.remove(t)
        i = model.times.index(t)
        del model.times[i], model.values[i]
        check_reactive(w)
        assert w.query() == model.query()
    assert w.capacity == 2


# --------------------------------------------------------------------------- bulk operations
def test_bulk_evict_costs_log_combines_not_m() -> None:
    agg, counter = counting(concat())
    w = Reactive(agg, capacity=4096)
    w.bulk_insert((t, t) for t in range(4096))
    w.query()
    for t in range(4096, 4096 + 1000):  # wrap the buffer
        w.evict()
        w.insert(t, t)
    w.query()
    counter.reset()
    assert w.bulk_evict(2000) == 1001  # times 1000..2000
    assert counter.calls == 0
    _, calls = flush_calls(w, counter)
    assert calls <= 2 * log2(w.capacity), calls
    assert w.oldest() == 2001 and len(w) == 3095
    check_reactive(w)


def test_bulk_evict_counts_entries_not_holes() -> None:
    w = Reactive(concat(), capacity=32)
    for t in range(20):
        w.insert(t, t)
    for t in (3, 5, 6, 12):
        w.remove(t)
    assert w.bulk_evict(10) == 8  # 0..10 minus 3, 5, 6
    assert w.oldest() == 11 and len(w) == 8
    check_reactive(w)
    assert w.bulk_evict(11) == 1 and w.oldest() == 13  # the hole at 12 is skipped
    assert w.bulk_evict(100) == 7 and len(w) == 0
    assert w.bulk_evict(100) == 0
    check_reactive(w)


def test_bulk_insert_is_one_batched_update() -> None:
    agg, counter = counting(concat())
    w = Reactive(agg, capacity=1024, min_capacity=1024)
    w.bulk_insert((t, t) for t in range(0, 1000, 2))  # 500 entries
    w.query()
    burst = [(t, "late") for t in range(951, 999, 2)]  # 24 late entries among the last 24
    w.bulk_insert(burst)
    m, calls = flush_calls(w, counter)
    assert m == 24 + 24 and calls <= update_bound(m, 1024)  # only the younger side moved
    early = [(t, "early") for t in range(-5, 9)]
    w.bulk_insert(early)
    assert len(w._fat.dirty_leaves()) == 14 + 5  # the older side moved (times 0..8)
    check_reactive(w)
    model = Model(concat())
    model.bulk_insert((t, t) for t in range(0, 1000, 2))
    model.bulk_insert(burst)
    model.bulk_insert(early)
    assert w.query() == model.query()


def test_bulk_insert_grows_in_one_rebuild() -> None:
    agg, counter = counting(concat())
    w = Reactive(agg, capacity=4)
    w.bulk_insert([(t, t) for t in range(1000, 0, -1)])
    assert w.capacity == 1024 and counter.calls == 999  # Algorithm 1 once: n - 1 calls
    assert w.query_since(995) == "995;996;997;998;999;1000;"
    check_reactive(w)


def test_query_since_cost() -> None:
    agg, counter = counting(concat())
    w = Reactive(agg, capacity=256, min_capacity=256)
    for t in range(256):
        w.insert(t, t)
    for t in range(256, 356):
        w.evict()
        w.insert(t, t)
    w._fat.flush()
    for since in range(90, 360, 7):
        counter.reset()
        want = "".join(f"{i};" for i in range(max(since, 100), 356))
        assert w.query_since(since) == want
        assert counter.calls <= 2 * log2(256) + 1


# --------------------------------------------------------------------------- contract basics
def test_registry_and_errors() -> None:
    w = make_window("reactive", Max(), capacity=16)
    assert isinstance(w, Reactive) and w.capacity == 16
    assert not Reactive.in_order and Reactive.range_queries
    assert not Reactive.coalesces_equal_times and Reactive.complexity
    for call in (w.evict, w.oldest, w.youngest):
        with pytest.raises(EmptyWindowError):
            call()
    assert w.query() is None and w.query_since(0) is None and list(w.items()) == []
    for bad in (0, 3, 12, -4, 2.0):
        with pytest.raises(ValueError):
            Reactive(Max(), capacity=bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        Reactive(Max(), capacity=4, min_capacity=8)
    with pytest.raises(ValueError):
        Reactive(Max(), capacity=4, min_capacity=3)


def test_bottom_never_reaches_combine() -> None:
    seen: list[Any] = []

    def combine(a: Any, b: Any) -> Any:
        seen.append(type(a))
        seen.append(type(b))
        return a + b

    w = Reactive(Aggregation(combine=combine, identity=0), capacity=2, min_capacity=2)
    rng = random.Random(4)
    for _ in range(400):
        w.insert(rng.randint(0, 60), 1)
        if rng.random() < 0.3:
            w.remove(rng.choice([tt for tt, _ in w.items()]))
        if rng.random() < 0.1:
            w.bulk_evict(rng.randint(0, 30))
        assert w.query() == len(w)
        w.query_since(rng.randint(0, 60))
    assert set(seen) == {int}


# --------------------------------------------------------------------------- T14 differential
AGGS = {
    "concat": (concat, st.integers(-20, 20)),
    "matmul": (matmul, st.integers(-20, 20)),
    "collect": (Collect, st.integers(0, 9)),
    "argmax": (lambda: ArgMax(key=lambda r: r[0]), st.tuples(st.integers(0, 3), st.integers())),
    "maxcount": (MaxCount, st.integers(-3, 3)),
}


def run_differential(data: st.DataObject, name: str) -> None:
    make, values = AGGS[name]
    agg, counter = counting(make())
    capacity = data.draw(st.sampled_from([1, 2, 4, 8]))
    w = Reactive(agg, capacity=capacity, min_capacity=data.draw(st.sampled_from([1, capacity])))
    model = Model(make())  # its own combine: not counted
    draw = data.draw
    times = st.integers(0, 25)
    ops = ["insert"] * 5 + ["evict", "remove", "remove", "missing", "bulk_evict",
                            "bulk_insert", "query_since", "query"]
    for _ in range(draw(st.integers(1, 60))):
        op = draw(st.sampled_from(ops))
        if op == "insert":
            t, v = draw(times), draw(values)
            w.insert(t, v)
            model.insert(t, v)
        elif op == "evict":
            if len(model):
                w.evict()
                model.evict()
            else:
                with pytest.raises(EmptyWindowError):
                    w.evict()
        elif op == "remove" and len(model):
            t = draw(st.sampled_from(model.times))
            w.remove(t)
            i = model.times.index(t)
            del model.times[i], model.values[i]
        elif op == "missing":
            t = draw(times)
            if t not in model.times:
                with pytest.raises(EntryNotFoundError):
                    w.remove(t)
        elif op == "bulk_evict":
            t = draw(st.integers(-1, 26))
            assert w.bulk_evict(t) == model.bulk_evict(t)
        elif op == "bulk_insert":
            batch = draw(st.lists(st.tuples(times, values), max_size=12))
            w.bulk_insert(batch)
            model.bulk_insert(batch)
        elif op == "query_since":
            t = draw(st.integers(-1, 27))
            m, calls = flush_calls(w, counter)
            assert calls <= update_bound(m, w.capacity)
            assert w.query_since(t) == model.query_since(t)
            assert counter.calls <= 2 * log2(w.capacity) + 1
        check_reactive(w)  # with the batch still pending: it checks the clean nodes
        counter.reset()
        assert len(w) == len(model)
        if len(model):
            assert (w.oldest(), w.youngest()) == (model.oldest(), model.youngest())
        if op == "query" or draw(st.booleans()):  # the paper's trigger: a batch of updates
            # The pending batch of m dirty leaves costs at most m(1 + ceil(log2(cap / m))).
            m, calls = flush_calls(w, counter)
            assert calls <= update_bound(m, w.capacity), (m, calls, w.capacity)
            got = w.query()
            assert counter.calls <= 2 * log2(w.capacity) + 1
            assert got == model.query()
            check_reactive(w)
    assert w.query() == model.query()
    check_reactive(w)
    assert list(w.items()) == list(zip(model.times, model.values, strict=True))


@pytest.mark.parametrize("name", list(AGGS))
def test_t14_differential(name: str) -> None:
    @settings(max_examples=120 if name in ("concat", "matmul") else 50, deadline=None)
    @given(st.data())
    def check(data: st.DataObject) -> None:
        run_differential(data, name)

    check()


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_differential_bursts_and_sliding(data: st.DataObject) -> None:
    """Bigger windows: a sliding stream with lateness, bursts and random removals."""
    agg = concat()
    w = Reactive(agg, capacity=data.draw(st.sampled_from([1, 4, 16])), min_capacity=1)
    model = Model(agg)
    clock = 0
    for _ in range(data.draw(st.integers(1, 40))):
        kind = data.draw(st.sampled_from(["tick", "burst", "late", "slide", "remove"]))
        if kind == "tick":
            clock += data.draw(st.integers(0, 3))
            w.insert(clock, clock)
            model.insert(clock, clock)
        elif kind == "burst":
            batch = [(clock + data.draw(st.integers(-30, 5)), i)
                     for i in range(data.draw(st.integers(10, 80)))]
            w.bulk_insert(batch)
            model.bulk_insert(batch)
        elif kind == "late":
            t = clock - data.draw(st.integers(0, 40))
            w.insert(t, "late")
            model.insert(t, "late")
        elif kind == "slide":
            t = clock - data.draw(st.integers(10, 60))
            assert w.bulk_evict(t) == model.bulk_evict(t)
        elif len(model):
            for _ in range(data.draw(st.integers(1, 10))):
                if not len(model):
                    break
                t = model.times[data.draw(st.integers(0, len(model) - 1))]
                w.remove(t)
                i = model.times.index(t)
                del model.times[i], model.values[i]
        check_reactive(w)
        assert w.query() == model.query()
        since = clock - data.draw(st.integers(0, 50))
        assert w.query_since(since) == model.query_since(since)
    assert list(w.items()) == list(zip(model.times, model.values, strict=True))


def test_check_invariants_detects_corruption() -> None:
    def fresh() -> Reactive:
        w = Reactive(plain_concat(), capacity=8, min_capacity=8)
        for t, v in enumerate("abcdef"):
            w.insert(t, v)
        w.remove(2)
        assert w.query() == "abdef"
        check_reactive(w)
        return w

    corruptions = [
        lambda w: w._fat.tree.__setitem__(3, "zz"),  # an internal node
        lambda w: w._times.__setitem__(4, -1),  # time order
        lambda w: w._fat.tree.__setitem__(8 + 7, "x"),  # a leaf outside the span
        lambda w: setattr(w, "_n", 4),  # entry count
        lambda w: setattr(w, "_cache", "abcdef"),  # stale cache
        lambda w: w._fat.tree.__setitem__(8 + 5, EMPTY),  # the back is a hole
    ]
    for corrupt in corruptions:
        w = fresh()
        corrupt(w)
        with pytest.raises(AssertionError, match="reactive invariant"):
            check_reactive(w)
    w = fresh()
    w._fat.set(1, "B")  # a leaf rewritten and marked dirty: only its ancestors are pending
    w._cache = NO_CACHE
    check_reactive(w)
    assert w.query() == "aBdef"

