"""The cross-key batch runtime for queries with several outputs over one sliding or tumbling
window (issue 14): any combination of ``count`` of events and ``max`` / ``min`` / ``sum`` /
``mean`` of the field, the same fn twice included (its partial array is shared).

As in :mod:`tests.adapters.test_batch_runtime`, whose scenarios and lockstep comparison this
reuses, every call through ``WindowDriver(q)`` must give what the per-key path
``WindowDriver(q, columnar=False)`` gives, bit for bit (rows, late events, timers, errors,
``info``), with restarts, per-key calls on the same keys (state continued by the other path),
batches holding missing values (``None`` / NaN: per-key path, then the batch runtime again)
and bounded caches; and rows must equal a brute-force evaluation. Every test checks that the
batch runtime completed calls (not a silent fallback to the per-key path)."""

from __future__ import annotations

import dataclasses
import math
import random
from collections.abc import Iterable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adapters import END_OF_INPUT, MemoryStateBackend, Output, WindowDriver
from adapters.crosskey.batch_runtime import BatchRuntime

from .brute import brute_force
from .test_batch_runtime import (
    BATCH_OPS,
    FIELD,
    KEYS,
    LARGE,
    MIXED_OPS,
    QUERY_SHAPES,
    Call,
    Scenario,
    _bounded,
    _events,
    _lockstep,
    _mixed_calls,
    _pairs,
    _Script,
    queries,
    scenarios,
)
from .util import same

np = pytest.importorskip("numpy")


@pytest.fixture(autouse=True)
def fast_calls(request: pytest.FixtureRequest,
               monkeypatch: pytest.MonkeyPatch) -> Iterable[list[int]]:
    """Counts the calls the batch runtime completed (a call it refuses as not covered, after
    starting it, does not count): ``[all, with new events]``; every test must have had
    batches of new events through it (``advance_keys`` alone would not show that its
    reading of the batches ran)."""
    calls = [0, 0]
    apply = BatchRuntime._apply

    def counted(self: BatchRuntime, *args: Any) -> None:
        apply(self, *args)
        calls[0] += 1
        calls[1] += args[-1] is not None  # the batch's columns

    monkeypatch.setattr(BatchRuntime, "_apply", counted)
    yield calls
    if request.node.get_closest_marker("per_key_only") is None:
        assert calls[1] > 0, "the batch runtime took no batch: nothing was compared"


#: (fn, field) of the outputs a query draws from
OUTPUTS = [("count", None), ("max", FIELD), ("min", FIELD), ("sum", FIELD), ("mean", FIELD),
           ("count", FIELD)]
NAMES = ["n", "hi", "lo", "total", "avg", FIELD, "x2", "count", "w2"]


def _aggs(outputs: list[tuple[str, str | None]], names: list[str]) -> dict[str, Any]:
    return {name: {"fn": fn} if field is None else {"fn": fn, "field": field}
            for name, (fn, field) in zip(names, outputs)}


#: the second field of queries over several fields
W = "w"
OUTPUTS_W = [(fn, W) for fn, field in OUTPUTS if field is not None]


@st.composite
def multi_queries(draw: Any, fields: int = 1) -> dict[str, Any]:
    """Several outputs over one field, or (``fields=2``) over ``FIELD`` and ``W``, each
    read by at least one output."""
    query = draw(queries("max"))
    pool = OUTPUTS if fields == 1 else OUTPUTS + OUTPUTS_W
    outputs = draw(st.lists(st.sampled_from(pool), min_size=2, max_size=6))
    if draw(st.booleans()):  # count of the field is rarer: it needs nulls="skip"
        outputs = [o for o in outputs if o != ("count", FIELD)]
    if all(field is None for _, field in outputs):  # at least one output reads the field
        outputs.append(draw(st.sampled_from(OUTPUTS[1:])))
    if fields == 2:
        for chosen in (OUTPUTS[1:], OUTPUTS_W):
            if not set(outputs) & set(chosen):
                outputs.insert(draw(st.integers(0, len(outputs))),
                               draw(st.sampled_from(chosen)))
    names = draw(st.permutations(NAMES))[:len(outputs)]
    query["aggregations"] = _aggs(outputs, names)
    nulls = draw(st.sampled_from([None, "skip", "skip", "error"]))
    if nulls is not None:
        query["nulls"] = nulls
    return query


@st.composite
def multi_scenarios(draw: Any, kinds: list[str], max_ops: int, fields: int = 1) -> Scenario:
    query = draw(multi_queries(fields))
    keys = draw(st.lists(st.sampled_from(KEYS), min_size=1, max_size=8, unique_by=repr))
    seeds = st.integers(0, 2**32 - 1)
    ops = draw(st.lists(st.tuples(st.sampled_from(kinds), seeds), max_size=max_ops))
    if not any(kind == "batch" for kind, _ in ops):
        ops.insert(draw(st.integers(0, len(ops))), ("batch", draw(seeds)))
    values = draw(st.sampled_from(["exact", "small", "positive", "cancel", "wide", "ties",
                                   "ints", "ints"]))
    return Scenario(query, keys, ops, values, draw(st.sampled_from([-30, 0, 40, 700])),
                    draw(st.sampled_from([0, -10_000, 1_700_000_000_000])))


#: int values (values mode "ints"): int64 bounds, beyond 2**53 (not a float), beyond int64
INTS = [0, 1, -1, 7, -3, 2**53 + 1, -(2**53) - 1, 2**63 - 1, -(2**63), 10**15]


class _NullScript(_Script):
    """:class:`_Script` with one more kind of call: ``"nulls"``, a large batch in which a few
    events have a missing value (``None`` or NaN: the per-key path takes it; accepted with
    ``nulls="skip"``, refused with ``"error"``). With values mode ``"ints"`` most batches
    hold int values (the issue's long columns; the others floats, so a field's type
    changes between batches), rarely one beyond int64 (the reader refuses the batch)."""

    ints = False  # the values of the batch being drawn are ints

    def events(self, rnd: random.Random, n: int) -> list[Any]:
        self.ints = self.sc.values == "ints" and rnd.random() < 0.75
        return super().events(rnd, n)

    def value(self, rnd: random.Random) -> Any:
        if not self.ints:
            return super().value(rnd)
        r = rnd.random()
        if r < 0.003:
            return 2**70
        return rnd.choice(INTS) if r < 0.3 else rnd.randint(-1000, 1000)

    def call(self, kind: str, rnd: random.Random) -> Call:
        if kind != "nulls":
            return super().call(kind, rnd)
        n = rnd.randint(*LARGE)
        events = self.events(rnd, n)
        for i in rnd.sample(range(n), rnd.randint(1, 4)):
            key, t, _ = events[i]
            events[i] = (key, t, {FIELD: rnd.choice([None, math.nan])})
        return ("batch", events, self.watermark(rnd), "list")


class _FieldsScript(_NullScript):
    """:class:`_NullScript` whose events hold two fields, ``FIELD`` and ``W``; the key order
    of the dicts is the same in most batches (either order) and mixed in some (then the
    general path takes the batch)."""

    def events(self, rnd: random.Random, n: int) -> list[Any]:
        order = rnd.choice(["vw", "wv", "vw", "mixed"])
        out = []
        for key, t, value in super().events(rnd, n):
            x, y = value[FIELD], self.value(rnd)
            first = order == "vw" or (order == "mixed" and rnd.random() < 0.5)
            out.append((key, t, {FIELD: x, W: y} if first else {W: y, FIELD: x}))
        return out

    def call(self, kind: str, rnd: random.Random) -> Call:
        call = super().call(kind, rnd)
        if kind == "nulls":  # a missing value of the second field too
            events = list(call[1])
            i = rnd.randrange(len(events))
            key, t, _ = events[i]
            events[i] = (key, t, {FIELD: 1.0, W: rnd.choice([None, math.nan])})
            return ("batch", events, *call[2:])
        if kind == "process":
            key, pairs, watermark = call[1:]
            return ("process", key, [(t, {FIELD: v[FIELD], W: self.value(rnd)})
                                     for t, v in pairs], watermark)
        return call


def _check(sc: Scenario, **options: Any) -> list[tuple[Any, ...]]:
    driver = WindowDriver(sc.query)
    # covered by the batch runtime, unless the slices are 1 ms wide (no kernels: the
    # per-key structures hold lifted values) or a count of the field counts NaN
    # (nulls="error": no kernel); compared all the same
    counts_nan = sc.query.get("nulls") == "error" and any(
        a["fn"] == "count" and "field" in a for a in sc.query["aggregations"].values())
    assert driver.batch_runtime == (driver.key_store.lanes[0].width > 1 and not counts_nan), \
        sc.query
    fields = {a.get("field") for a in sc.query["aggregations"].values()} - {None}
    script = _FieldsScript(sc) if W in fields else _NullScript(sc)
    return _lockstep(sc.query, script.calls(), **options)


# =====================================================================================
# property tests: against the per-key path
# =====================================================================================
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_several_outputs_match_the_per_key_path(data: Any) -> None:
    """Large and small batches, ``advance_keys``, restarts from snapshots."""
    outcomes = _check(data.draw(multi_scenarios(BATCH_OPS, max_ops=7), label="scenario"))
    assert outcomes[-2][0] == "ok"  # the batch after END_OF_INPUT: all late
    assert outcomes[-2][1].late and not outcomes[-2][1].rows


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_several_outputs_with_per_key_calls_nulls_and_restarts(data: Any) -> None:
    """Per-key ``process`` / ``advance_watermark`` on the keys the batches hold, batches
    with missing values or one irregular event, ``drop_cache``, ``info``, restarts."""
    kinds = [*MIXED_OPS, "nulls", "nulls"]
    _check(data.draw(multi_scenarios(kinds, max_ops=10), label="scenario"))


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_several_fields_match_the_per_key_path(data: Any) -> None:
    """Outputs over two fields (events ``{FIELD: x, W: y}``, either key order), with every
    kind of call, missing values in either field and restarts."""
    kinds = [*MIXED_OPS, "nulls", *BATCH_OPS]
    _check(data.draw(multi_scenarios(kinds, max_ops=10, fields=2), label="scenario"))


@pytest.mark.parametrize("fn", ["max", "min", "sum", "mean"])
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_one_output_over_int_values(fn: str, data: Any) -> None:
    """Int values (a long column) for one output too: max / min partials are ints (exact
    beyond 2**53), sums exact; batches switch between ints and floats."""
    sc = data.draw(scenarios(fn, [*MIXED_OPS, *BATCH_OPS], max_ops=10), label="scenario")
    _check(dataclasses.replace(sc, values="ints"))


@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_several_outputs_with_a_bounded_key_cache(data: Any) -> None:
    limit = data.draw(st.integers(1, 4), label="max_cached_keys")
    fast, general, within_bound = _bounded(limit)
    fields = data.draw(st.sampled_from([1, 2]), label="fields")
    _check(data.draw(multi_scenarios([*MIXED_OPS, "nulls"], max_ops=10, fields=fields),
                     label="scenario"),
           fast=fast, reference=general, after_each_call=within_bound)


# =====================================================================================
# worked examples
# =====================================================================================
MULTI = {
    "count+max": [("count", None), ("max", FIELD)],
    "count+mean+max": [("count", None), ("mean", FIELD), ("max", FIELD)],
    "all five": OUTPUTS[:5],
    "sum+mean, max twice": [("sum", FIELD), ("max", FIELD), ("mean", FIELD), ("max", FIELD)],
    "min+count": [("min", FIELD), ("count", None)],
    "count of the field+sum": [("count", FIELD), ("sum", FIELD), ("count", None)],
}


SHORT = {"count": "n", "max": "hi", "min": "lo", "sum": "total", "mean": "avg"}


def _query(outputs: str, shape: str, nulls: str | None = None) -> dict[str, Any]:
    window, lateness = QUERY_SHAPES[shape]
    names: list[str] = []
    for fn, _ in MULTI[outputs]:
        names.append(SHORT[fn] + ("2" if SHORT[fn] in names else ""))
    query = {"windows": [window], "aggregations": _aggs(MULTI[outputs], names),
             "allowed_lateness": lateness}
    if nulls is not None:
        query["nulls"] = nulls
    return query


@pytest.mark.parametrize("shape", sorted(QUERY_SHAPES))
@pytest.mark.parametrize("outputs", sorted(MULTI))
def test_state_written_per_key_is_continued_by_batches_and_back(outputs: str,
                                                               shape: str) -> None:
    outcomes = _lockstep(_query(outputs, shape), _mixed_calls())
    assert all(o[0] == "ok" for o in outcomes)
    assert sum(len(o[1].rows) for o in outcomes if isinstance(o[1], Output)) > 20
    assert any(o[1].late for o in outcomes if isinstance(o[1], Output))


def test_count_and_max_of_a_long_column() -> None:
    """Workload (a) of the Spark streaming benchmark: ``count`` and ``max`` of int values,
    through the batch runtime (keys held, int64 partials), restarts and per-key calls in
    between; the rows are the per-key path's (ints, not floats)."""
    rnd = random.Random(13)
    keys = ["a", "b", 3]

    def batch(lo: int, hi: int) -> list[Any]:
        return [(rnd.choice(keys), rnd.randint(lo, hi), {FIELD: rnd.choice(INTS)})
                for _ in range(120)]

    query = _query("count+max", "sliding k=4, lateness 5")
    calls: list[Call] = [
        ("batch", batch(0, 80), 30, "list"),
        ("batch", batch(20, 120), 70, "list"),
        ("restart",),
        ("process", "a", [(t, {FIELD: rnd.choice(INTS)}) for t in range(70, 90)], 75),
        ("batch", batch(60, 160), 110, "list"),
        ("advance", keys, END_OF_INPUT, "list"),
        ("final_info",),
    ]
    outcomes = _lockstep(query, calls)
    rows = [r for o in outcomes if isinstance(o[1], Output) for r in o[1].rows]
    assert len(rows) > 20 and all(type(r["hi"]) is int for r in rows)
    assert any(r["hi"] == 2**63 - 1 for r in rows)
    driver = WindowDriver(query)
    driver.process_batch(batch(0, 80), MemoryStateBackend(), watermark=30)
    assert driver._batch._ints == (True,) and driver._batch._keys  # type: ignore[union-attr]


@pytest.mark.parametrize("outputs", sorted(MULTI))
def test_drop_cache_or_a_restart_before_each_call(outputs: str) -> None:
    calls = _mixed_calls(seed=2)
    _lockstep(_query(outputs, "sliding k=12"), calls, drop_after_each_call=True)
    restarting = [c for call in calls for c in (("restart",), call)]
    _lockstep(_query(outputs, "sliding k=4, lateness 5"), restarting)


def test_the_batch_runtime_takes_over_per_key_state() -> None:
    """Keys with pending events and open slices written by the per-key path are taken over
    by the next batch (held by the batch runtime, not refused), and per-key calls continue
    the state the batch wrote."""
    rnd = random.Random(8)
    query = _query("count+mean+max", "sliding k=4, lateness 5")
    driver, backend = WindowDriver(query), MemoryStateBackend()
    reference, ref_backend = WindowDriver(query, columnar=False), MemoryStateBackend()
    pairs = _pairs(rnd, 40, 0, 120)
    batch = _events(rnd, ["a", "b"], 120, 30, 160)
    rows: list[list[Any]] = [[], []]
    for i, (d, b) in enumerate(((driver, backend), (reference, ref_backend))):
        rows[i] += d.process("a", list(pairs), b.key_state("a"), watermark=60).rows
        assert d.key_store.cached("a") is not None
        rows[i] += d.process_batch(list(batch), b, watermark=100).rows
        if d is driver:
            assert set(d._batch._keys) == {"a", "b"}  # type: ignore[union-attr]
            assert d.key_store.cached("a") is None  # taken over
        rows[i] += d.process("b", _pairs(random.Random(9), 10, 100, 200), b.key_state("b"),
                             watermark=130).rows
        rows[i] += d.advance_keys(["a", "b"], END_OF_INPUT, b).rows
    assert rows[0] == rows[1] and len(rows[0]) > 20
    assert [repr(r) for r in rows[0]] == [repr(r) for r in rows[1]]  # -0.0 too
    assert list(rows[0][0]) == ["window", "key", "start", "end", "n", "avg", "hi"]


@pytest.mark.parametrize(("outputs", "nulls"), [("all five", "skip"), ("all five", "error"),
                                               ("count of the field+sum", "skip")])
def test_missing_values_take_the_per_key_path_then_batches_resume(outputs: str,
                                                                  nulls: str) -> None:
    """A batch with a missing value goes to the per-key path (accepted with ``skip``,
    refused with ``error``); a key whose pending events hold the missing value stays there
    while they are pending; later batches run in the batch runtime again."""
    rnd = random.Random(10)
    keys = ["k1", "k2", 3]
    bad = _events(rnd, keys, 150, 0, 100)
    bad[77] = ("k2", 90, {FIELD: None})
    bad[78] = ("k1", 95, {FIELD: math.nan})
    outcomes = _lockstep(_query(outputs, "sliding k=4, lateness 5", nulls), [
        ("batch", _events(rnd, keys, 100, 0, 80), 30, "list"),
        ("batch", bad, 40, "list"),
        ("batch", _events(rnd, keys, 100, 40, 140), 60, "list"),
        ("batch", _events(rnd, keys, 100, 80, 200), 150, "list"),
        ("batch", _events(rnd, keys, 100, 150, 250), 240, "list"),
        ("advance", keys, END_OF_INPUT, "list"),
        ("final_info",),
    ])
    assert (outcomes[1][0] == "error") == (nulls == "error")


def test_state_the_runtime_cannot_hold_stays_per_key(fast_calls: list[int]) -> None:
    """A slice whose values are all missing has ``None`` partials (skip): such a key is
    refused by the batch runtime (the per-key path runs the call) until that slice is gone."""
    query = _query("count+mean+max", "tumbling", "skip")
    rnd = random.Random(11)
    calls: list[Call] = [
        ("process", "a", [(5, {FIELD: None}), (6, {FIELD: math.nan})], 3),
        ("advance_one", "a", 10),  # releases the two: an open slice of None partials
        ("batch", _events(rnd, ["a", "b"], 100, 30, 80), 20, "list"),  # per-key path
        ("batch", _events(rnd, ["a", "b"], 100, 40, 120), 90, "list"),  # per-key path
        ("batch", _events(rnd, ["a", "b"], 100, 90, 160), 150, "list"),  # batch runtime
        ("advance", ["a", "b"], END_OF_INPUT, "list"),
        ("final_info",),
    ]
    counted = fast_calls[0]
    outcomes = _lockstep(query, calls)
    rows = outcomes[3][1].rows
    assert {"window": 0, "key": "a", "start": 0, "end": 25, "n": 2, "avg": None,
            "hi": None} in rows
    assert fast_calls[0] == counted + 2  # the third batch and the advance


# =====================================================================================
# against brute force
# =====================================================================================
def _assert_same_rows(got: list[dict[str, Any]], want: list[dict[str, Any]],
                      where: str) -> None:
    """The same rows as multisets (keys told apart by ``repr``: ``7`` is not ``"7"``),
    floats within 1e-9."""
    def order(row: dict[str, Any]) -> tuple[Any, ...]:
        return row["window"], repr(row["key"]), row["start"]

    g, w = sorted(got, key=order), sorted(want, key=order)
    assert len(g) == len(w) and all(same(x, y) for x, y in zip(g, w)), \
        f"{where}: rows differ\n  got  {g[:5]}\n  want {w[:5]}"


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_several_outputs_match_brute_force(data: Any) -> None:
    """Batches through ``process_batch`` (or, at random, per-key ``process`` calls: the
    state continues on the other path), watermarks through ``advance_keys``, restarts from
    snapshots; each step's rows against :func:`brute.brute_force` (sums and means within
    1e-9: brute force adds floats; counts, max and min exact)."""
    fields = data.draw(st.sampled_from([1, 2]), label="fields")
    query = data.draw(multi_queries(fields), label="query")
    query.pop("nulls", None)
    seed = data.draw(st.integers(0, 2**32 - 1), label="seed")
    rnd = random.Random(seed)
    keys = rnd.sample(KEYS, rnd.randint(1, 5))
    window = query["windows"][0]
    span = int(window.get("range", window.get("size")))
    steps: list[dict[str, Any]] = []
    clock = 0
    for _ in range(rnd.randint(2, 8)):
        def value() -> float:
            return rnd.choice([0.0, -0.0, float(rnd.randint(-50, 50)),
                               rnd.uniform(-100.0, 100.0)])

        events = [(rnd.choice(keys), clock + rnd.randint(-span, 3 * span),
                   {FIELD: value()} if fields == 1 else {FIELD: value(), W: value()})
                  for _ in range(rnd.randint(64, 200))]
        steps.append({"events": events})
        clock += rnd.randint(0, 2 * span)
        steps.append({"watermark": clock})
    steps.append({"watermark": "end"})
    want, want_late = brute_force(query, steps)
    driver, backend = WindowDriver(query), MemoryStateBackend()
    late: dict[Any, int] = {}
    for k, step in enumerate(steps):
        if rnd.random() < 0.2:  # a restart from a snapshot
            backend = MemoryStateBackend.restore(backend.snapshot())
            driver = WindowDriver(query)
        if "events" in step:
            if rnd.random() < 0.25:  # per key
                out = Output()
                for key in keys:
                    got = driver.process(key, [(t, v) for kk, t, v in step["events"]
                                               if kk == key], backend.key_state(key))
                    out.late.extend(got.late)
            else:
                out = driver.process_batch(step["events"], backend)
            for e in out.late:
                late[e.key] = late.get(e.key, 0) + 1
            assert not out.rows
        else:
            w = END_OF_INPUT if step["watermark"] == "end" else step["watermark"]
            out = driver.advance_keys(keys, w, backend)
        _assert_same_rows(out.rows, want[k], f"step {k}")
    assert late == want_late


# =====================================================================================
# what the batch runtime covers
# =====================================================================================
@pytest.mark.per_key_only  # only asks which path a query takes
def test_which_queries_the_batch_runtime_covers() -> None:
    def covered(aggs: dict[str, Any], window: dict[str, Any] | None = None,
                nulls: str = "skip") -> bool:
        return WindowDriver({"windows": [window or {"kind": "sliding", "range": 60,
                                                    "slide": 10}],
                             "aggregations": aggs, "nulls": nulls}).batch_runtime

    v, w = {"field": FIELD}, {"field": "w"}
    assert covered({"n": {"fn": "count"}, "m": {"fn": "max", **v}})
    assert covered({"n": {"fn": "count"}, "a": {"fn": "mean", **v}, "m": {"fn": "max", **v},
                    "s": {"fn": "sum", **v}, "lo": {"fn": "min", **v}}, nulls="error")
    assert covered({"m": {"fn": "max", **v}, "m2": {"fn": "max", **v}},
                   {"kind": "tumbling", "size": 7})
    assert covered({"m": {"fn": "max", **v}})  # one output, as before
    # not covered (the per-key path runs them; see the module docstring of the runtime)
    assert not covered({"n": {"fn": "count"}})  # no field to read
    assert covered({"m": {"fn": "max", **v}, "a": {"fn": "mean", **w}})  # two fields
    assert covered({"n": {"fn": "count"}, "m": {"fn": "max", **v}, "c": {"fn": "count", **w},
                    "s": {"fn": "sum", **w}, "x": {"fn": "min", "field": "x"}})
    assert not covered({"m": {"fn": "max", **v}, "i": {"fn": "argmax", **v}})
    assert not covered({"m": {"fn": "max", **v}, "s": {"fn": "stddev", **v}})
    assert covered({"c": {"fn": "count", **v}, "m": {"fn": "max", **v}})
    assert covered({"c": {"fn": "count", **v}})
    # count of a field with nulls="error" counts NaN: the buffer's None cannot tell
    assert not covered({"c": {"fn": "count", **v}, "m": {"fn": "max", **v}}, nulls="error")
    assert not covered({"n": {"fn": "count"}, "m": {"fn": "max", **v}},
                       {"kind": "sliding", "range": 10, "slide": 1})  # 1 ms slices
    assert not covered({"n": {"fn": "count"}, "m": {"fn": "max", **v}},
                       {"kind": "sliding", "range": 5000, "slide": 2})  # 2500 slices


@pytest.mark.per_key_only  # checks the count-of-a-field kernel on both paths, not the runtime
@settings(max_examples=60, deadline=None)
@given(events=st.lists(st.tuples(
    st.sampled_from(["a", "b"]), st.integers(0, 80),
    st.one_of(st.none(), st.just(math.nan), st.floats(allow_nan=False), st.integers(-3, 3),
              st.text(max_size=2), st.just("absent"), st.floats(-5.0, 5.0))),
    min_size=1, max_size=150),
    cut=st.integers(0, 150), batch=st.booleans())
def test_count_of_a_field_counts_what_its_lift_counts(events: list[tuple[Any, int, Any]],
                                                      cut: int, batch: bool) -> None:
    """``count`` of a field with ``nulls="skip"`` (a kernel: the buffer holds ``None`` for a
    missing value) against the same output folded with its lift and combine (no kernel
    mode: the query also has an output on the whole event): missing values (``None``, NaN,
    no field) are not counted, every other value is (strings, ints, infinities)."""
    from swag_core.aggregations import Count

    window = [{"kind": "sliding", "range": 20, "slide": 5}]
    counts = {"c": {"fn": "count", "field": FIELD}, "n": {"fn": "count"}}
    kernel = WindowDriver({"windows": window, "aggregations": counts})
    lifted = WindowDriver({"windows": window, "aggregations": {**counts, "z": Count()}})
    assert kernel.key_store.lanes[0].kernels is not None
    assert lifted.key_store.lanes[0].kernels is None
    triples = [(k, t, {} if x == "absent" else {FIELD: x}) for k, t, x in events]
    rows: list[list[dict[str, Any]]] = []
    for driver in (kernel, lifted):
        backend = MemoryStateBackend()
        got: list[dict[str, Any]] = []
        for part, mark in ((triples[:cut], 30), (triples[cut:], END_OF_INPUT)):
            if batch:
                got += driver.process_batch(part, backend, watermark=10).rows
            else:
                for key in ("a", "b"):
                    got += driver.process(key, [(t, v) for k, t, v in part if k == key],
                                          backend.key_state(key), watermark=10).rows
            got += driver.advance_keys(["a", "b"], mark, backend).rows
        rows.append(got)
    assert [{f: r[f] for f in r if f != "z"} for r in rows[1]] == rows[0]


@pytest.mark.per_key_only  # the batches must take the general path
def test_fields_too_long_for_one_packed_header_take_the_general_path() -> None:
    """Each field fits a packed header alone, the two together do not: the reader refuses
    the batches (no log segment could hold them) and the per-key path stores them."""
    a, b = "a" * 40_000, "b" * 40_000
    query = {"windows": [{"kind": "tumbling", "size": 10}],
             "aggregations": {"x": {"fn": "max", "field": a}, "y": {"fn": "sum", "field": b}}}
    assert WindowDriver(query).batch_runtime
    rnd = random.Random(12)
    events = [(rnd.choice(["k", 2]), rnd.randint(0, 60), {a: rnd.random(), b: rnd.random()})
              for _ in range(100)]
    outcomes = _lockstep(query, [("batch", events, 20, "list"),
                                 ("advance", ["k", 2], END_OF_INPUT, "list"),
                                 ("final_info",)])
    assert len(outcomes[1][1].rows) > 5


def test_an_int_partial_beyond_int64_stays_per_key() -> None:
    """A batch holding a value beyond int64 takes the per-key path, whose max partial is
    that int; a later int batch must not take the key over (int64 arrays cannot hold it)
    until the partial is gone (found by the bounded-cache property test)."""
    rnd = random.Random(14)
    query = _query("count+max", "tumbling")
    big = [("a", t, {FIELD: 2**70 if t == 3 else rnd.randint(-9, 9)}) for t in range(64)]
    calls: list[Call] = [
        ("batch", big, None, "list"),  # per key: a value beyond int64
        ("batch", [("a", t, {FIELD: rnd.randint(-9, 9)}) for t in range(64, 200)], 10,
         "list"),  # per key still: the key's open slice holds 2**70
        ("batch", [("a", t, {FIELD: rnd.randint(-9, 9)}) for t in range(200, 300)], 150,
         "list"),  # per key (loaded before the call releases the slice)
        ("batch", [("a", t, {FIELD: rnd.randint(-9, 9)}) for t in range(300, 400)], 350,
         "list"),  # the batch runtime
        ("advance", ["a"], END_OF_INPUT, "list"),
        ("final_info",),
    ]
    outcomes = _lockstep(query, calls)
    rows = [r for o in outcomes if isinstance(o[1], Output) for r in o[1].rows]
    assert {"window": 0, "key": "a", "start": 0, "end": 25, "n": 25, "hi": 2**70} in rows
