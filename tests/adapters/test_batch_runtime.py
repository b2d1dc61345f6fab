"""The cross-key batch runtime of ``process_batch`` / ``advance_keys`` (one sliding or tumbling
window, one ``max`` / ``min`` / ``sum`` / ``mean`` of one float field) changes nothing
observable: the same random scenario is driven in lockstep through ``WindowDriver(q)`` and the
general per-key path ``WindowDriver(q, columnar=False)``, and every call must give

* the same rows in the same order, with the same dict keys and the same types, every value
  bit for bit (``-0.0`` is not ``0.0``; ``sum`` / ``mean`` too: their partials are exact,
  so no association of additions changes them, even over values like ``1e16, 1.0,
  -1e16``);
* the same late events in the same order, the same ``timers`` and the same error (a refused
  call leaves the state untouched, checked byte for byte and by continuing);
* the same ``info`` of every key, live and rebuilt from a snapshot.

Restarts from snapshots, ``drop_cache``, per-key calls, small batches and batches with one
irregular event (all general path) are interleaved with large batches."""

from __future__ import annotations

import copy
import math
import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adapters import (
    END_OF_INPUT,
    KeyInfo,
    LateEvent,
    MemoryStateBackend,
    Output,
    WindowDriver,
)
from adapters.crosskey.batch_runtime import BatchRuntime
from adapters.crosskey.key_loading import KeyLoader

np = pytest.importorskip("numpy")


@pytest.fixture(autouse=True)
def runtime_calls(request: pytest.FixtureRequest,
                  monkeypatch: pytest.MonkeyPatch) -> Iterable[list[int]]:
    """Counts the calls the batch runtime handled; every test must have made some (else it
    compared the per-key path with itself), except those marked ``per_key_only``."""
    calls = [0]
    apply = BatchRuntime._apply

    def counted(self: BatchRuntime, *args: Any) -> None:
        calls[0] += 1
        apply(self, *args)

    monkeypatch.setattr(BatchRuntime, "_apply", counted)
    yield calls
    if request.node.get_closest_marker("per_key_only") is None:
        assert calls[0] > 0, "the batch runtime handled no call: nothing was compared"

FIELD = "v"
FNS = ["max", "min", "sum", "mean"]
LARGE = (64, 200)  # batches the runtime takes (at least 64 events)
#: keys a scenario draws from: strings and ints that look alike ("7" and 7), a tuple
KEYS = ["a", "b", "key-c", "", "7", 7, 0, -3, 2**40, ("t", 1)]
#: keys no event ever has (advance_keys, info and per-key calls on fresh state)
UNSEEN = ["never", 99, ("never", 2)]

Call = tuple[Any, ...]


# =====================================================================================
# scenarios
# =====================================================================================
@dataclass
class Scenario:
    query: dict[str, Any]
    keys: list[Any]
    #: (kind, seed) per step: the seed draws the step's details (events, watermark, ...)
    ops: list[tuple[str, int]]
    #: how values are drawn (see _Script.value) and the scale 2**scale of exact values
    values: str
    scale: int
    #: added to every time and watermark (epoch-like times included)
    base: int

    @property
    def fn(self) -> str:
        return str(next(iter(self.query["aggregations"].values()))["fn"])


@st.composite
def queries(draw: Any, fn: str) -> dict[str, Any]:
    if draw(st.booleans()):
        size = draw(st.integers(1, 60))
        window: dict[str, Any] = {"kind": "tumbling", "size": size}
        if draw(st.booleans()):
            window["offset"] = draw(st.integers(-size - 3, size + 3))
    else:
        # wide slides with a ratio that is not an int: windows of several hundred slices
        slide = draw(st.one_of(st.integers(2, 25), st.integers(1, 25),
                               st.sampled_from([60, 100, 128])))
        k = draw(st.integers(1, 12))  # range / slide
        extra = draw(st.one_of(st.just(0), st.just(0), st.integers(0, slide - 1)))
        window = {"kind": "sliding", "range": k * slide + extra, "slide": slide,
                  "offset": draw(st.integers(-30, 30))}
    name = draw(st.sampled_from(["out", FIELD]))
    return {"windows": [window], "aggregations": {name: {"fn": fn, "field": FIELD}},
            "allowed_lateness": draw(st.sampled_from([0, 0, 1, 9, 40]))}


BATCH_OPS = ["batch"] * 5 + ["small", "advance", "advance", "restart"]
MIXED_OPS = ["batch"] * 4 + ["small", "irregular", "irregular", "advance", "advance",
                             "process", "advance_one", "drop", "drop_key", "info", "restart"]


@st.composite
def scenarios(draw: Any, fn: str, kinds: list[str], max_ops: int) -> Scenario:
    query = draw(queries(fn))
    keys = draw(st.lists(st.sampled_from(KEYS), min_size=1, max_size=8, unique_by=repr))
    seeds = st.integers(0, 2**32 - 1)
    ops = draw(st.lists(st.tuples(st.sampled_from(kinds), seeds), max_size=max_ops))
    if not any(kind == "batch" for kind, _ in ops):
        ops.insert(draw(st.integers(0, len(ops))), ("batch", draw(seeds)))
    if fn in ("max", "min"):
        values = draw(st.sampled_from(["wide", "wide", "ties"]))
    else:
        values = draw(st.sampled_from(["exact", "small", "positive", "cancel", "wide"]))
    return Scenario(query, keys, ops, values, draw(st.sampled_from([-30, 0, 40, 700])),
                    draw(st.sampled_from([0, -10_000, 1_700_000_000_000])))


def _as_list(xs: list[Any]) -> list[Any]:
    return list(xs)


def _as_tuple(xs: list[Any]) -> tuple[Any, ...]:
    return tuple(xs)


def _as_iter(xs: list[Any]) -> Iterable[Any]:
    return iter(list(xs))


CONTAINERS: dict[str, Callable[[list[Any]], Iterable[Any]]] = {
    "list": _as_list, "tuple": _as_tuple, "iter": _as_iter}


class _Script:
    """Turns a :class:`Scenario` into driver calls (independent of what the drivers do)."""

    def __init__(self, sc: Scenario) -> None:
        self.sc = sc
        window = sc.query["windows"][0]
        self.span = int(window.get("range", window.get("size")))
        self.lateness = int(sc.query["allowed_lateness"])
        self.clock = 0  # the newest watermark handed out, relative to sc.base

    # ------------------------------------------------------------------ values, times
    def value(self, rnd: random.Random) -> float:
        mode = self.sc.values
        r = rnd.random()
        if r < 0.08:
            return rnd.choice([0.0, -0.0])
        if mode == "ties":
            return rnd.choice([0.0, -0.0, 2.5, -2.5, 1e300])
        if mode == "wide":  # sums overflow: the general path's kernels refuse the batch
            if r < 0.2:
                return rnd.choice([1.0, -1.0, 1.7976931348623157e308, -1.7976931348623157e308,
                                   2.0**1000, 5e-324, -5e-324, 0.1, -1e-300])
            if r < 0.6:
                return math.ldexp(rnd.uniform(-1.0, 1.0), rnd.randint(-1074, 1023))
            return rnd.uniform(-100.0, 100.0)
        if mode == "exact":  # m * 2**scale: every sum of a few thousand is exact
            m = rnd.randint(-(2**40), 2**40) if r < 0.6 else rnd.randint(-3, 3)
            return float(m) * 2.0**self.sc.scale
        if mode == "small":
            return round(rnd.uniform(-10.0, 10.0), rnd.randint(0, 6))
        if mode == "cancel":  # float additions in different orders give different sums
            return rnd.choice([1e16, -1e16, 1.0, 0.1, -0.3, 2.0**-60, 1e300, -1e300,
                               5e-324, 3.0])
        return rnd.uniform(0.0, 1e6)  # "positive": no cancellation

    def int_value(self, rnd: random.Random) -> int:
        if self.sc.fn in ("max", "min"):
            return rnd.choice([0, 3, -1, 2**70])
        return rnd.randint(-3, 3) * 2 ** max(self.sc.scale, 0)  # still exact for sums

    def now(self) -> int:
        return self.sc.base + self.clock

    def time(self, rnd: random.Random) -> int:
        return self.now() + rnd.randint(-(self.lateness + 2 * self.span + 3), 3 * self.span + 3)

    def watermark(self, rnd: random.Random, none: bool = True, end: bool = False) -> Any:
        r = rnd.random()
        if none and r < 0.12:
            return None
        if end and r > 0.97:
            return rnd.choice([END_OF_INPUT, "end"])
        w = self.clock
        if r < 0.6:  # advances
            self.clock = w = w + rnd.randint(1, 2 * self.span + self.lateness + 1)
        elif r < 0.75:  # regresses (ignored by the drivers)
            w -= rnd.randint(1, self.span + self.lateness + 1)
        w += self.sc.base  # else: stands still
        return rnd.choice([w, w, w, float(w), np.int64(w)])

    def events(self, rnd: random.Random, n: int) -> list[Any]:
        keys = self.sc.keys
        mode = rnd.choice(["random", "random", "sorted", "ties", "hot"])
        times = [self.time(rnd) for _ in range(rnd.randint(1, 4))]
        weights = [10.0] + [1.0] * (len(keys) - 1) if mode == "hot" else None
        out = []
        for key in rnd.choices(keys, weights, k=n):
            t = rnd.choice(times) if mode == "ties" else self.time(rnd)
            out.append((key, t, {FIELD: self.value(rnd)}))
        if mode == "sorted":
            out.sort(key=lambda e: e[1])
        return out

    def irregular(self, rnd: random.Random, event: tuple[Any, int, Any]) -> Any:
        key, t, value = event
        x = value[FIELD]
        return rnd.choice([
            (key, t, {FIELD: self.int_value(rnd)}),    # an int value (accepted)
            (key, t, {FIELD: float("nan")}),           # NaN (refused)
            (key, t, {FIELD: rnd.choice([math.inf, -math.inf])}),  # accepted, then stored
            (key, t, {FIELD: np.float64(x)}),          # a NumPy float (accepted)
            (key, t, {FIELD: x, "w": 1}),              # a second field (accepted)
            (key, t, {"w": x}),                        # no field (refused)
            (key, t + 0.5, value),                     # a float time (refused)
            (key, float(t), value),                    # an integral float time (accepted)
            (key, str(t), value),                      # a decimal string time (accepted)
            (key, np.int64(t), value),                 # a NumPy int time (accepted)
            (key, True, value),                        # a bool time (refused)
            (key, t),                                  # not a triple (refused)
            ([key], t, value),                         # an unhashable key (refused)
        ])

    # ------------------------------------------------------------------ calls
    def call(self, kind: str, rnd: random.Random) -> Call:
        any_key = [*self.sc.keys, *UNSEEN]
        if kind in ("batch", "small", "irregular"):
            n = rnd.randint(*LARGE) if kind != "small" else rnd.randint(0, LARGE[0] - 1)
            events = self.events(rnd, n)
            if kind == "irregular":
                i = rnd.randrange(n)
                events[i] = self.irregular(rnd, events[i])
            return ("batch", events, self.watermark(rnd, end=kind == "batch"),
                    rnd.choice(["list", "list", "tuple", "iter"]))
        if kind == "advance":
            keys = rnd.sample(any_key, rnd.randint(0, len(any_key)))
            keys += rnd.choices(keys, k=rnd.randint(0, 2)) if keys else []  # duplicates
            rnd.shuffle(keys)
            w = self.watermark(rnd, none=rnd.random() < 0.05, end=True)  # None: refused
            return ("advance", keys, w, rnd.choice(["list", "tuple", "iter"]))
        if kind == "process":
            key = rnd.choice(any_key)
            pairs = [(self.time(rnd), {FIELD: self.value(rnd)})
                     for _ in range(rnd.randint(0, 20))]
            return ("process", key, pairs, self.watermark(rnd))
        if kind == "advance_one":
            return ("advance_one", rnd.choice(any_key), self.watermark(rnd, none=False))
        if kind == "info":
            return ("info", any_key)
        if kind == "drop_key":
            return ("drop", rnd.choice(any_key))
        return (kind,)  # drop (all keys), restart

    def calls(self) -> list[Call]:
        calls = [self.call(kind, random.Random(seed)) for kind, seed in self.sc.ops]
        everything = [*self.sc.keys, *UNSEEN]
        rnd = random.Random(len(calls))
        after_end = self.events(rnd, 100)  # all late once the keys are at END_OF_INPUT
        return [*calls, ("rebuilt_info",), ("advance", everything, END_OF_INPUT, "list"),
                ("batch", after_end, None, "list"), ("final_info",)]


# =====================================================================================
# running two drivers in lockstep
# =====================================================================================
def _reference(query: dict[str, Any]) -> WindowDriver:
    return WindowDriver(query, columnar=False)


def _default(query: dict[str, Any]) -> WindowDriver:
    return WindowDriver(query)


class _World:
    """A driver, its backend and how to restart it."""

    def __init__(self, query: dict[str, Any], make: Callable[[dict[str, Any]], WindowDriver],
                 drop_after_each_call: bool = False) -> None:
        self.query = query
        self.make = make
        self.driver = make(query)
        self.backend = MemoryStateBackend()
        self.drop_after_each_call = drop_after_each_call

    def restart(self) -> None:
        self.backend = MemoryStateBackend.restore(self.backend.snapshot())
        self.driver = self.make(self.query)

    def keys_with_state(self) -> list[Any]:
        stored = self.backend.keys()  # a backend is not iterable
        return sorted((k for k in stored if self.backend.key_state(k).get_meta() is not None),
                      key=repr)

    def digest(self) -> dict[str, Any]:
        """Everything the backend holds (states created empty do not count)."""
        out = {}
        stored = self.backend.keys()
        for key in stored:
            state = self.backend.key_state(key)
            if state.get_meta() is not None or len(state):
                out[repr(key)] = (state.get_meta(), state.entries())
        return out

    def execute(self, call: Call) -> Any:
        kind, driver, backend = call[0], self.driver, self.backend
        if kind == "batch":
            _, events, watermark, container = call
            events = CONTAINERS[container](copy.deepcopy(events))
            return driver.process_batch(events, backend, watermark=watermark)
        if kind == "advance":
            _, keys, watermark, container = call
            return driver.advance_keys(CONTAINERS[container](keys), watermark, backend)
        if kind == "process":
            _, key, pairs, watermark = call
            return driver.process(key, copy.deepcopy(pairs), backend.key_state(key),
                                  watermark=watermark)
        if kind == "advance_one":
            _, key, watermark = call
            return driver.advance_watermark(key, watermark, backend.key_state(key))
        if kind == "info":
            return [driver.info(key, backend.key_state(key)) for key in call[1]]
        if kind == "rebuilt_info":  # a fresh driver on a copy of the state: from the log
            other = MemoryStateBackend.restore(backend.snapshot())
            fresh = self.make(self.query)
            keys = self.keys_with_state()
            return [(repr(k), fresh.info(k, other.key_state(k))) for k in keys]
        if kind == "final_info":
            keys = self.keys_with_state()
            return [(repr(k), driver.info(k, backend.key_state(k))) for k in keys]
        raise AssertionError(f"unknown call {kind!r}")

    def run(self, call: Call) -> tuple[Any, ...]:
        """``("ok", result)`` or ``("error", type, message)``; a refused call must leave the
        state as it was."""
        kind = call[0]
        if kind == "restart":
            self.restart()
            return ("ok", None)
        if kind == "drop":
            self.driver.drop_cache(*call[1:])
            return ("ok", None)
        before = self.digest()
        try:
            result = self.execute(call)
        except Exception as exc:
            assert self.digest() == before, f"{call[0]}: the refused call changed the state"
            return ("error", type(exc).__name__, str(exc))
        finally:
            if self.drop_after_each_call:
                self.driver.drop_cache()
        return ("ok", result)


# =====================================================================================
# comparison
# =====================================================================================
def _same(a: Any, b: Any) -> bool:
    """Equal with equal types all the way down; floats bit for bit; NaN equals NaN; dicts
    also in key order."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return repr(a) == repr(b)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    return bool(a == b)


def _assert_same_output(got: Output, want: Output, where: str) -> None:
    assert len(got.rows) == len(want.rows), \
        f"{where}: {len(got.rows)} rows, want {len(want.rows)}\n  got {got.rows[:4]}\n" \
        f"  want {want.rows[:4]}"
    for i, (g, w) in enumerate(zip(got.rows, want.rows)):
        same = list(g) == list(w) and all(
            _same(g[f], w[f]) for f in w)
        assert same, f"{where}: row {i} differs\n  got  {g!r}\n  want {w!r}"
    assert len(got.late) == len(want.late), \
        f"{where}: {len(got.late)} late events, want {len(want.late)}"
    for i, (g, w) in enumerate(zip(got.late, want.late)):
        assert type(g) is LateEvent and _same(tuple(g), tuple(w)), \
            f"{where}: late event {i} differs\n  got  {g!r}\n  want {w!r}"
    got_timers = sorted((repr(k), repr(t)) for k, t in got.timers.items())
    want_timers = sorted((repr(k), repr(t)) for k, t in want.timers.items())
    assert got_timers == want_timers, f"{where}: timers differ\n  got  {got_timers}\n" \
                                      f"  want {want_timers}"


def _assert_same(got: tuple[Any, ...], want: tuple[Any, ...], where: str) -> None:
    if got[0] == "error" or want[0] == "error":
        assert got == want, f"{where}: outcomes differ\n  got  {got[1:]}\n  want {want[1:]}"
        return
    g, w = got[1], want[1]
    if isinstance(w, Output):
        assert isinstance(g, Output), f"{where}: got {g!r}"
        _assert_same_output(g, w, where)
    elif w is None:  # restart, drop_cache
        assert g is None, f"{where}: got {g!r}"
    else:  # info: lists of KeyInfo or of (repr(key), KeyInfo)
        assert _same(g, w), f"{where}: info differs\n  got  {g}\n  want {w}"
        assert all(type(i) is KeyInfo for i in _infos(g)), f"{where}: {g}"


def _infos(result: list[Any]) -> list[Any]:
    return [x[1] if type(x) is tuple and len(x) == 2 else x for x in result]


def _describe(call: Call) -> str:
    kind = call[0]
    if kind == "batch":
        return f"process_batch({len(call[1])} events, watermark={call[2]!r}) ({call[3]})"
    if kind == "advance":
        return f"advance_keys({call[1]!r}, {call[2]!r}) ({call[3]})"
    if kind == "process":
        return f"process({call[1]!r}, {len(call[2])} events, watermark={call[3]!r})"
    if kind == "advance_one":
        return f"advance_watermark({call[1]!r}, {call[2]!r})"
    return f"{call!r:.100}"


def _lockstep(query: dict[str, Any], calls: list[Call],
              fast: Callable[[dict[str, Any]], WindowDriver] = _default,
              drop_after_each_call: bool = False,
              reference: Callable[[dict[str, Any]], WindowDriver] = _reference,
              after_each_call: Callable[[WindowDriver], None] | None = None,
              ) -> list[tuple[Any, ...]]:
    """Runs ``calls`` through a ``fast`` driver and the general path (``reference``),
    comparing each call; returns the general path's outcomes. ``drop_after_each_call``: both
    drop their caches after every call (``info().retained`` of the general path itself
    depends on whether a key was rebuilt from its log, which is trimmed by whole entries).
    ``after_each_call``: a check of the fast driver after every call."""
    worlds = (_World(query, fast, drop_after_each_call),
              _World(query, reference, drop_after_each_call))
    outcomes = []
    for i, call in enumerate(calls):
        got, want = (world.run(call) for world in worlds)
        where = f"call {i}: {_describe(call)}"
        _assert_same(got, want, where)
        if after_each_call is not None:
            after_each_call(worlds[0].driver)
        outcomes.append(want)
    return outcomes


def _check(sc: Scenario, **options: Any) -> list[tuple[Any, ...]]:
    return _lockstep(sc.query, _Script(sc).calls(), **options)


# =====================================================================================
# property tests
# =====================================================================================
@pytest.mark.parametrize("fn", FNS)
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_batches_and_advance_keys_match_the_general_path(fn: str, data: Any) -> None:
    """Large and small batches, ``advance_keys`` on random subsets (unseen and duplicated
    keys, any iterable), watermarks that advance, stand still, regress, are ``None`` or the
    end, restarts from snapshots."""
    outcomes = _check(data.draw(scenarios(fn, BATCH_OPS, max_ops=7), label="scenario"))
    assert outcomes[-2][0] == "ok"  # the batch after END_OF_INPUT: all late
    assert outcomes[-2][1].late and not outcomes[-2][1].rows


@pytest.mark.parametrize("fn", FNS)
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_interleaved_calls_restarts_and_bad_batches_match(fn: str, data: Any) -> None:
    """Per-key ``process`` / ``advance_watermark``, ``info``, ``drop_cache`` (all or one
    key), restarts and batches with one irregular event (general path; may be refused)
    between large batches."""
    _check(data.draw(scenarios(fn, MIXED_OPS, max_ops=10), label="scenario"))


@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_drop_cache_between_calls_changes_nothing(data: Any) -> None:
    fn = data.draw(st.sampled_from(FNS), label="fn")
    _check(data.draw(scenarios(fn, BATCH_OPS, max_ops=6), label="scenario"),
           drop_after_each_call=True)


def _bounded(limit: int) -> tuple[Callable[[dict[str, Any]], WindowDriver],
                                   Callable[[dict[str, Any]], WindowDriver],
                                   Callable[[WindowDriver], None]]:
    """The fast and the general driver with ``max_cached_keys=limit``, and a check that the
    fast one's batch runtime keeps at most ``limit`` keys between calls."""
    def fast(query: dict[str, Any]) -> WindowDriver:
        driver = WindowDriver(query, max_cached_keys=limit)
        assert driver.batch_runtime == WindowDriver(query).batch_runtime  # the bound: no matter
        return driver

    def general(query: dict[str, Any]) -> WindowDriver:
        return WindowDriver(query, columnar=False, max_cached_keys=limit)

    def within_bound(driver: WindowDriver) -> None:
        if driver.batch_runtime:
            held = driver._batch._keys  # type: ignore[union-attr]
            assert len(held) <= limit, f"{len(held)} keys cached, bound {limit}"
    return fast, general, within_bound


@pytest.mark.parametrize("fn", FNS)
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_a_bounded_key_cache_matches_the_general_path(fn: str, data: Any) -> None:
    """``max_cached_keys`` (the Spark adapter sets it): both drivers bounded alike, keys
    evicted and rebuilt from their logs between calls (cache misses), with every kind of
    call, restarts included; the batch runtime never keeps more keys than the bound."""
    limit = data.draw(st.integers(1, 4), label="max_cached_keys")
    fast, general, within_bound = _bounded(limit)
    _check(data.draw(scenarios(fn, MIXED_OPS, max_ops=10), label="scenario"), fast=fast,
           reference=general, after_each_call=within_bound)


class _TwoWorkers:
    """Two drivers of one query on one backend, each call on one of them by a schedule drawn
    from ``seed``: how Spark runs a bucket's task on whichever of its two Python workers is
    free, so a worker's cached runtime of a key is stale as often as not (the batch runtime
    then rebuilds it from the log in arrays, :meth:`KeyLoader.rebuild`, or replaces its
    stale rows)."""

    def __init__(self, make: Callable[[dict[str, Any]], WindowDriver], query: dict[str, Any],
                 seed: int) -> None:
        self.drivers = [make(query), make(query)]
        self._pick = random.Random(seed).randrange
        self.batch_runtime = self.drivers[0].batch_runtime

    def _next(self) -> WindowDriver:
        return self.drivers[self._pick(2)]

    def process_batch(self, *args: Any, **kwargs: Any) -> Output:
        return self._next().process_batch(*args, **kwargs)

    def advance_keys(self, *args: Any, **kwargs: Any) -> Output:
        return self._next().advance_keys(*args, **kwargs)

    def process(self, *args: Any, **kwargs: Any) -> Output:
        return self._next().process(*args, **kwargs)

    def advance_watermark(self, *args: Any, **kwargs: Any) -> Output:
        return self._next().advance_watermark(*args, **kwargs)

    def info(self, *args: Any, **kwargs: Any) -> KeyInfo:
        return self._next().info(*args, **kwargs)

    def drop_cache(self, *keys: Any) -> None:
        for driver in self.drivers:
            driver.drop_cache(*keys)


def _two_workers(seed: int, limit: int | None = None
                 ) -> tuple[Callable[[dict[str, Any]], Any], Callable[[dict[str, Any]], Any]]:
    """The fast and the general path, each as :class:`_TwoWorkers` on the same schedule."""
    def fast(query: dict[str, Any]) -> Any:
        return _TwoWorkers(lambda q: WindowDriver(q, max_cached_keys=limit), query, seed)

    def general(query: dict[str, Any]) -> Any:
        return _TwoWorkers(lambda q: WindowDriver(q, columnar=False, max_cached_keys=limit),
                           query, seed)
    return fast, general


@pytest.mark.parametrize("fn", FNS)
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_two_workers_taking_turns_match_the_general_path(fn: str, data: Any) -> None:
    """Every kind of call, each on one of two drivers sharing the state: stale caches and
    misses on both sides, rebuilt from the log (in arrays by the batch runtime)."""
    seed = data.draw(st.integers(0, 2**16), label="schedule")
    limit = data.draw(st.sampled_from([None, 2]), label="max_cached_keys")
    fast, general = _two_workers(seed, limit)
    _check(data.draw(scenarios(fn, MIXED_OPS, max_ops=10), label="scenario"), fast=fast,
           reference=general)


# =====================================================================================
# worked examples
# =====================================================================================
QUERY_SHAPES = {
    "sliding k=4, lateness 5": ({"kind": "sliding", "range": 40, "slide": 10, "offset": 3}, 5),
    "tumbling": ({"kind": "tumbling", "size": 25}, 0),
    "sliding k=12": ({"kind": "sliding", "range": 36, "slide": 3}, 0),
}


def _query(fn: str, shape: str) -> dict[str, Any]:
    window, lateness = QUERY_SHAPES[shape]
    return {"windows": [window], "aggregations": {"out": {"fn": fn, "field": FIELD}},
            "allowed_lateness": lateness}


def _events(rnd: random.Random, keys: list[Any], n: int, lo: int, hi: int) -> list[Any]:
    return [(rnd.choice(keys), rnd.randint(lo, hi),
             {FIELD: rnd.choice([0.0, -0.0, float(rnd.randint(-50, 50)), rnd.random()])})
            for _ in range(n)]


def _pairs(rnd: random.Random, n: int, lo: int, hi: int) -> list[Any]:
    return [(t, v) for _, t, v in _events(rnd, [None], n, lo, hi)]


def _mixed_calls(seed: int = 1) -> list[Call]:
    """Per-key state, then batches over those keys and new ones, then per-key calls on state
    the batches wrote."""
    rnd = random.Random(seed)
    return [
        ("process", "a", _pairs(rnd, 30, 0, 120), 20),
        ("process", 7, _pairs(rnd, 5, 0, 60), None),
        ("advance_one", 7, 30),
        # "a" and 7 have state from per-key calls (pending and released events), "b" not
        ("batch", _events(rnd, ["a", 7, "b"], 100, 10, 160), 60, "list"),
        ("info", ["a", 7, "b"]),
        # per-key calls on state the batch wrote, then batches again
        ("process", "b", _pairs(rnd, 10, 40, 160), 70),
        ("advance_one", "a", 95),
        ("process", 7, _pairs(rnd, 3, 0, 200), None),
        ("batch", _events(rnd, ["a", 7, "b", "c"], 150, 50, 220), 110, "list"),
        ("batch", _events(rnd, ["b"], 5, 100, 200), 90, "list"),  # small: general path
        ("process", "c", _pairs(rnd, 4, 100, 250), 150),
        ("batch", _events(rnd, ["a", 7, "b", "c"], 64, 120, 260), None, "list"),
        ("advance", ["c", "a", "a", "zz", 7], 180, "list"),
        ("batch", _events(rnd, ["a", 7, "b", "c"], 80, 100, 300), 230, "tuple"),
        ("advance", ["a", "b", "c", 7], END_OF_INPUT, "list"),
        ("final_info",),
    ]


@pytest.mark.parametrize("shape", sorted(QUERY_SHAPES))
@pytest.mark.parametrize("fn", FNS)
def test_state_written_per_key_is_continued_by_batches_and_back(fn: str, shape: str) -> None:
    outcomes = _lockstep(_query(fn, shape), _mixed_calls())
    assert all(o[0] == "ok" for o in outcomes)
    assert sum(len(o[1].rows) for o in outcomes if isinstance(o[1], Output)) > 20
    assert any(o[1].late for o in outcomes if isinstance(o[1], Output))


@pytest.mark.parametrize("limit", [1, 2, 3])
@pytest.mark.parametrize("shape", sorted(QUERY_SHAPES))
@pytest.mark.parametrize("fn", FNS)
def test_a_bounded_key_cache_in_worked_examples(fn: str, shape: str, limit: int) -> None:
    """:func:`_mixed_calls` (4 keys, per-key and batch calls on the same keys) with a cache
    smaller than the keys of a call: keys leave the batch runtime and come back from state."""
    fast, general, within_bound = _bounded(limit)
    outcomes = _lockstep(_query(fn, shape), _mixed_calls(), fast=fast, reference=general,
                         after_each_call=within_bound)
    assert all(o[0] == "ok" for o in outcomes)
    assert sum(len(o[1].rows) for o in outcomes if isinstance(o[1], Output)) > 20


def test_a_bounded_cache_keeps_the_keys_the_per_key_path_keeps() -> None:
    """Least recently used first, where ``advance_keys`` touches a repeated key again at its
    last place (as the per-key path's loop does)."""
    rnd = random.Random(6)
    query = _query("max", "sliding k=4, lateness 5")
    fast = WindowDriver(query, max_cached_keys=2)
    general = WindowDriver(query, columnar=False, max_cached_keys=2)
    keys = ["a", "b", "c"]
    calls: list[Call] = [("batch", _events(rnd, keys, 100, 0, 50), 10, "list"),
                         ("advance", ["c", "a", "c"], 30, "list"),
                         ("batch", _events(rnd, ["b"], 80, 20, 60), 35, "list")]
    worlds = _World(query, lambda q: fast), _World(query, lambda q: general)
    for call in calls:
        _assert_same(worlds[0].run(call), worlds[1].run(call), _describe(call))
        held = list(fast._batch._keys)  # type: ignore[union-attr]
        assert set(held) == {k for k in keys if general.key_store.cached(k) is not None}
    assert held == ["c", "b"]  # "a" was used before the last "c"


@pytest.mark.parametrize("fn", FNS)
def test_drop_cache_or_a_restart_before_each_call(fn: str) -> None:
    calls = _mixed_calls(seed=2)
    _lockstep(_query(fn, "sliding k=12"), calls, drop_after_each_call=True)
    restarting = [c for call in calls for c in (("restart",), call)]
    _lockstep(_query(fn, "sliding k=4, lateness 5"), restarting)


def test_advance_keys_on_unseen_duplicated_and_iterated_keys() -> None:
    rnd = random.Random(3)
    events = _events(rnd, ["a", 1, "1"], 120, 0, 100)
    _lockstep(_query("max", "sliding k=4, lateness 5"), [
        ("advance", ["x", 2, ("t", 3)], 10, "list"),   # only unseen keys
        ("batch", events, 30, "list"),
        ("advance", [], 60, "list"),                   # no keys
        ("advance", ["a", "a", "x", 1, "1", 1], 60, "iter"),
        ("advance", ["1", "a"], 45, "tuple"),          # a regression
        ("advance", ["a", 1], None, "list"),           # refused: no watermark
        ("advance", ["a", "1", 1, "y"], np.int64(90), "list"),
        ("batch", _events(rnd, ["a", 1, "1"], 64, 60, 160), 120.0, "list"),
        ("advance", ["a", 1, "1", "x", "y", 2], "end", "iter"),
        ("final_info",),
    ])


IRREGULAR = {
    "int value": ("k1", 50, {FIELD: 4}),
    "NaN": ("k1", 50, {FIELD: float("nan")}),
    "null": ("k2", 50, {FIELD: None}),
    "inf": ("k2", 50, {FIELD: math.inf}),
    "NumPy float": ("k2", 50, {FIELD: np.float64(2.5)}),
    "float time": ("k1", 50.5, {FIELD: 1.0}),
    "integral float time": ("k1", 50.0, {FIELD: 1.0}),
    "no field": ("k1", 50, {"w": 1.0}),
    "pair": ("k1", 50),
    "unhashable key": (["k1"], 50, {FIELD: 1.0}),
}


@pytest.mark.parametrize("nulls", ["skip", "error"])
@pytest.mark.parametrize("fn", FNS)
@pytest.mark.parametrize("irregular", sorted(IRREGULAR))
def test_a_batch_with_one_irregular_event(irregular: str, fn: str, nulls: str) -> None:
    """Taken by the general path: refused with the same error and no state change, or
    accepted (a missing value with ``nulls="skip"``); either way later large batches
    continue the same."""
    rnd = random.Random(4)
    keys = ["k1", "k2", 3]
    bad = _events(rnd, keys, 150, 0, 100)
    bad.insert(77, IRREGULAR[irregular])
    outcomes = _lockstep({**_query(fn, "sliding k=4, lateness 5"), "nulls": nulls}, [
        ("batch", _events(rnd, keys, 100, 0, 80), 30, "list"),
        ("batch", bad, 40, "list"),
        ("batch", _events(rnd, keys, 100, 40, 140), 90, "list"),
        ("advance", keys, END_OF_INPUT, "list"),
        ("final_info",),
    ])
    refused = outcomes[1][0] == "error"
    missing = ("NaN", "null") if nulls == "error" else ()
    assert refused == (irregular in (*missing, "float time", "no field", "pair",
                                     "unhashable key")), outcomes[1]


EXTREMES = {
    "max": [1.7976931348623157e308, -1.7976931348623157e308, 2.0**1023, 5e-324, -5e-324,
            0.0, -0.0, 1e-308],
    "sum": [2.0**1013, -(2.0**1013), 3 * 2.0**1012, -(3 * 2.0**1012), 0.0, -0.0, 1e16,
            -1e16, 1.0, 5e-324, 2.0**-1022],
}


@pytest.mark.parametrize("fn", FNS)
def test_extreme_values(fn: str) -> None:
    """The largest and smallest floats (max / min) and sums near the largest, with 1e16, 1.0,
    -1e16 and subnormals among them; the watermark only advances and no event is late."""
    rnd = random.Random(5)
    pool = EXTREMES["max" if fn in ("max", "min") else "sum"]
    keys = ["a", 2, ("t", 1)]
    calls: list[Call] = []
    for step in range(6):
        events = [(rnd.choice(keys), rnd.randint(30 * step, 30 * step + 90),
                   {FIELD: rnd.choice(pool)}) for _ in range(rnd.randint(64, 150))]
        calls.append(("batch", events, 30 * step, "list"))
    calls += [("advance", keys, END_OF_INPUT, "list"), ("final_info",)]
    outcomes = _lockstep(_query(fn, "sliding k=4, lateness 5"), calls)
    assert all(o[0] == "ok" and not (isinstance(o[1], Output) and o[1].late)
               for o in outcomes)


def test_late_events_of_a_batch_the_kernels_refuse() -> None:
    """Finite values whose sum overflows: the general path's kernel check refuses the batch
    and it takes the per-event path, which must still see (and report) the late events it
    had set aside."""
    events = [("k", 5, {FIELD: 1.0}), *(("k", 20 + i, {FIELD: 1e308}) for i in range(70))]
    for columnar_on in (True, False):
        driver = WindowDriver(_query("max", "tumbling"), columnar=columnar_on)
        backend = MemoryStateBackend()
        out = driver.process_batch(events, backend, watermark=10)
        assert out.late == [LateEvent("k", 5, {FIELD: 1.0})], columnar_on
        assert driver.info("k", backend.key_state("k")).late == 1, columnar_on


# =====================================================================================
# the comparison can fail
# =====================================================================================
def _nudge(out: Output, how: str) -> None:
    rows = [r for r in out.rows if r.get("out") not in (0.0, None)]
    if how in ("ulp", "mean ulp") and rows:
        rows[0]["out"] = math.nextafter(float(rows[0]["out"]), math.inf)

    elif how == "row order" and len(out.rows) > 1:
        out.rows[0], out.rows[-1] = out.rows[-1], out.rows[0]
    elif how == "NumPy start" and out.rows:
        out.rows[0]["start"] = np.int64(out.rows[0]["start"])
    elif how == "late event" and out.late:
        out.late.pop()
    elif how == "timer" and out.timers:
        key = next(iter(out.timers))
        out.timers[key] = (out.timers[key] or 0) + 1


@pytest.mark.per_key_only  # compares hand-made outputs only
def test_the_comparison_is_strict() -> None:
    assert _same(1.5, 1.5) and _same(float("nan"), float("nan")) and _same(-0.0, -0.0)
    assert not _same(0.0, -0.0) and not _same(0.1 + 0.2, 0.3)  # bit for bit
    assert not _same(math.nextafter(1.0, 2.0), 1.0)
    assert not _same(3, 3.0) and not _same(np.float64(2.5), 2.5)
    assert not _same(7, np.int64(7)) and not _same("7", 7)
    assert not _same({"a": 1, "b": 2}, {"b": 2, "a": 1})  # key order
    assert _same([{"a": (1, [2.5])}], [{"a": (1, [2.5])}])
    assert not _same([1, 2], [1, 2, 3])


class _Broken(WindowDriver):
    """The driver with one perturbation of what its batch calls return."""

    how = ""

    def process_batch(self, *args: Any, **kwargs: Any) -> Output:
        out = super().process_batch(*args, **kwargs)
        _nudge(out, self.how)
        return out

    def advance_keys(self, *args: Any, **kwargs: Any) -> Output:
        out = super().advance_keys(*args, **kwargs)
        _nudge(out, self.how)
        return out

    def info(self, *args: Any, **kwargs: Any) -> KeyInfo:
        info = super().info(*args, **kwargs)
        return info._replace(retained=info.retained + 1) if self.how == "info" else info


@pytest.mark.parametrize("how", ["ulp", "mean ulp", "row order",
                                 "NumPy start", "late event", "timer", "info"])
def test_the_comparison_catches_a_divergent_driver(how: str) -> None:
    fn = "mean" if how == "mean ulp" else "max"

    def broken(query: dict[str, Any]) -> WindowDriver:
        driver = _Broken(query)
        driver.how = how
        return driver

    _lockstep(_query(fn, "tumbling"), _mixed_calls())  # as is: the same
    with pytest.raises(AssertionError):
        _lockstep(_query(fn, "tumbling"), _mixed_calls(), fast=broken)


# =====================================================================================
# the array fallbacks: many keys, times spanning most of int64
# =====================================================================================
def test_more_keys_than_16_bit_codes() -> None:
    """Over 2**15 keys: key codes and ids no longer fit the 16-bit radix sort (10 s: the
    general path's per-key calls; one aggregation, the sorts do not depend on it)."""
    fn = "mean"
    rnd = random.Random(11)
    keys = list(range(2**15 + 50))
    first = [(key, rnd.randint(0, 40), {FIELD: float(rnd.randint(-9, 9))}) for key in keys]
    calls: list[Call] = [("batch", first, None, "list"),
                         ("batch", _events(rnd, keys, 3000, 20, 80), 30, "list"),
                         ("advance", keys, 70, "list"),
                         ("advance", keys[::7], END_OF_INPUT, "list"),
                         ("batch", _events(rnd, keys[:500], 200, 60, 90), None, "list"),
                         ("advance", keys, END_OF_INPUT, "list")]
    outcomes = _lockstep(_query(fn, "sliding k=4, lateness 5"), calls)
    assert all(o[0] == "ok" for o in outcomes)
    assert any(isinstance(o[1], Output) and len(o[1].rows) > 2**15 for o in outcomes)


@pytest.mark.parametrize("fn", ["max", "sum"])
def test_times_spanning_most_of_int64(fn: str) -> None:
    """Times near both ends of int64: the combined (key, time) keys would overflow, so the
    merges, sorts and window searches take their fallbacks."""
    rnd = random.Random(12)
    keys = ["a", "b", "c"]
    lo, hi = -(2**62), 2**62
    far = [(rnd.choice(keys), rnd.choice([lo + rnd.randint(0, 90), hi + rnd.randint(0, 90)]),
            {FIELD: float(rnd.randint(-9, 9))}) for _ in range(200)]
    near = [(rnd.choice(keys), hi + rnd.randint(0, 300), {FIELD: float(rnd.randint(-9, 9))})
            for _ in range(150)]
    calls: list[Call] = [("batch", far, None, "list"), ("batch", near, lo + 50, "list"),
                         ("advance", keys, hi + 100, "list"),
                         ("batch", far, hi + 120, "list"),
                         ("advance", keys, END_OF_INPUT, "list")]
    outcomes = _lockstep(_query(fn, "sliding k=4, lateness 5"), calls)
    assert all(o[0] == "ok" for o in outcomes)
    assert sum(len(o[1].rows) for o in outcomes if isinstance(o[1], Output)) > 10


@pytest.mark.parametrize("shape", sorted(QUERY_SHAPES))
@pytest.mark.parametrize("fn", FNS)
def test_two_workers_rebuild_from_the_log_in_arrays(fn: str, shape: str,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """:func:`_mixed_calls` alternating between two workers: the batch runtime rebuilds keys
    from their logs itself (no per-key rebuild), with the general path's results."""
    rebuilt = []
    rebuild = KeyLoader.rebuild

    def counted(self: KeyLoader, *args: Any) -> Any:
        got = rebuild(self, *args)
        rebuilt.append(got is not None)
        return got

    monkeypatch.setattr(KeyLoader, "rebuild", counted)
    fast, general = _two_workers(seed=5)
    outcomes = _lockstep(_query(fn, shape), _mixed_calls(), fast=fast, reference=general)
    assert all(o[0] == "ok" for o in outcomes)
    assert sum(rebuilt) >= 2, rebuilt


@pytest.mark.parametrize("fn", ["max", "min"])
def test_a_rebuild_keeps_arrival_order_among_equal_times(fn: str) -> None:
    """Of ``0.0`` and ``-0.0`` at one time the older wins: a rebuild in arrays must order
    equal times by arrival (the log's sequence numbers), as the live runtime does."""
    rnd = random.Random(11)

    def zeros(n: int, lo: int, hi: int) -> list[Any]:
        return [(rnd.choice(["a", "b"]), rnd.randint(lo, hi), {FIELD: rnd.choice([0.0, -0.0])})
                for _ in range(n)]
    calls: list[Call] = [("batch", zeros(300, 0, 8), None, "list"),
                         ("batch", zeros(300, 0, 30), 12, "list"),
                         ("batch", zeros(300, 10, 60), 40, "list"),
                         ("advance", ["a", "b"], END_OF_INPUT, "list")]
    fast, general = _two_workers(seed=3)
    for shape in sorted(QUERY_SHAPES):
        _lockstep(_query(fn, shape), calls, fast=fast, reference=general)
