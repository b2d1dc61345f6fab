"""Exception safety of every window structure (issue 16, item 3).

A user function (``lift``, ``combine``, ``lower``, ``subtract``, a slide policy) that raises
once, at any call position of any operation, must leave the window either exactly as it was
before the call (strong guarantee) or broken: every later call raises
:class:`BrokenWindowError` naming the call and the original exception (its ``__cause__``).
Never a wrong answer.

Windows are built from random histories (hypothesis); then, for every operation and every
user function, the test counts the calls the operation makes and replays it on a copy of the
window once per call position ``n``, failing the n-th call (deterministic enumeration). The
failure is an ``Exception`` or an interrupt (a ``BaseException`` like ``KeyboardInterrupt``).
After it, the window must match the brute-force model from before the call and keep agreeing
with it over further operations, or refuse everything. ``STRONG`` states, per algorithm,
which operations keep the strong guarantee when ``combine``/``subtract`` fails (the table of
``docs/algorithms.md``): those must never break. Failures of ``lift``, ``lower`` and the
policy must never break any window.
"""

from __future__ import annotations

import bisect
import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from swag_core import ALGORITHMS, Aggregation, BrokenWindowError, make_window

from .helpers import Model, concat, matgroup


class Boom(Exception):
    """The injected failure of a user function."""


class Interrupt(BaseException):
    """An injected interrupt (what ``KeyboardInterrupt`` would do inside a user function)."""


class Injector:
    """Counts the calls of one kind of user function and fails the ``at``-th (0: never)."""

    def __init__(self) -> None:
        self.kind: str | None = None
        self.at = 0
        self.calls = 0
        self.error_type: type[BaseException] = Boom
        self.error: BaseException | None = None

    def arm(self, kind: str | None, at: int = 0, error_type: type[BaseException] = Boom) -> None:
        self.kind, self.at, self.calls, self.error_type, self.error = kind, at, 0, error_type, None

    def hit(self, kind: str) -> None:
        if kind == self.kind:
            self.calls += 1
            if self.calls == self.at:
                self.error = self.error_type(f"injected {kind} failure at call {self.at}")
                raise self.error


def injected(agg: Aggregation, inj: Injector) -> Aggregation:
    """``agg`` whose user functions report to ``inj`` before running."""
    combine, lift, lower, subtract = agg.combine, agg.lift_fn, agg.lower_fn, agg.subtract

    def c(a: Any, b: Any) -> Any:
        inj.hit("combine")
        return combine(a, b)

    def li(x: Any) -> Any:
        inj.hit("lift")
        return lift(x)

    def lo(a: Any) -> Any:
        inj.hit("lower")
        return lower(a)

    def su(total: Any, old: Any) -> Any:
        inj.hit("subtract")
        assert subtract is not None
        return subtract(total, old)

    return Aggregation(combine=c, identity=agg.identity, lift=li, lower=lo,
                       subtract=su if subtract is not None else None,
                       commutative=agg.commutative, selective=agg.selective, name=agg.name)


def _oldest_max(a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
    return a if a[0] >= b[0] else b


def oldest_max() -> Aggregation:
    """Selective, not commutative (ties keep the older entry): SlickDeque Non-Inv."""
    return Aggregation(combine=_oldest_max, identity=(-(10**9), -1),
                       lift=lambda x: (x % 4, x), selective=True, name="oldest_max")


@dataclass(frozen=True)
class Case:
    algorithm: str
    make: Callable[[], Aggregation] = concat
    options: dict[str, Any] = field(default_factory=dict)
    label: str = ""

    def __str__(self) -> str:
        return self.label or self.algorithm


CASES = [Case(name) for name in ALGORITHMS if name not in ("soe", "slickdeque", "fiba")] + [
    Case("soe", matgroup),
    Case("slickdeque", oldest_max, label="slickdeque-non_inv"),
    Case("slickdeque", matgroup, label="slickdeque-inv"),
    Case("fiba", options={"arity": 2}),
]

ALL_UPDATES = {"insert", "bulk_insert", "evict", "bulk_evict", "enforce", "remove"}
#: Updates that keep the strong guarantee when ``combine``/``subtract`` raises (docs table).
#: Queries always do; so do all operations when ``lift``, ``lower`` or a policy raises.
STRONG: dict[str, set[str]] = {
    "recalc": ALL_UPDATES,
    "soe": ALL_UPDATES,
    "two_stacks": ALL_UPDATES,
    "two_stacks_lite": ALL_UPDATES,
    "daba": set(),
    "daba_lite": set(),
    "flatfat": ALL_UPDATES,
    "flatfit": ALL_UPDATES,
    "slickdeque": ALL_UPDATES,
    "log_mta": set(),
    "amta": set(),
    "fiba": set(),
    "reactive": ALL_UPDATES,
}
#: Strong for an ``Exception`` but broken by an interrupt: SlickDeque Inv's re-basing fold
#: during an eviction skips the re-base on an ``Exception`` but cannot swallow an interrupt.
INTERRUPT_BREAKS = {("slickdeque", "evict"), ("slickdeque", "bulk_evict")}

QUERIES = {"query", "query_since", "query_range"}


# ----------------------------------------------------------------------------- operations
def operations(case: Case) -> list[str]:
    cls = ALGORITHMS[case.algorithm]
    ops = ["insert", "bulk_insert", "evict", "bulk_evict", "query"]
    if cls.range_queries:
        ops.append("query_since")
    for extra in ("enforce", "remove", "query_range"):
        if hasattr(cls, extra):
            ops.append(extra)
    return ops


def keep_at_most(k: int) -> Callable[[Any, Any], bool]:
    """A prefix-monotone policy on concat aggregates: evict while the prefix has <= k
    entries, i.e. ``enforce`` evicts min(k, n) entries."""
    def policy(total: Any, prefix: Any) -> bool:
        return bool(prefix.count(";") <= k)
    return policy


def draw_args(data: st.DataObject, op: str, case: Case, model: Model) -> tuple[Any, ...] | None:
    """Arguments for ``op`` on a window equal to ``model``; None when it does not apply."""
    in_order = ALGORITHMS[case.algorithm].in_order
    n = len(model)
    low = model.oldest() - 1 if n else 0
    high = model.youngest() + 1 if n else 10

    def new_time() -> int:
        if in_order:
            return (model.youngest() if n else 0) + data.draw(st.integers(0, 2))
        return data.draw(st.integers(0, 30))

    if op == "insert":
        return new_time(), data.draw(st.integers(0, 99))
    if op == "bulk_insert":
        times = [new_time() for _ in range(data.draw(st.integers(1, 6)))]
        if in_order:
            times.sort()
        return ([(t, data.draw(st.integers(0, 99))) for t in times],)
    if op == "evict":
        return () if n else None
    if op in ("bulk_evict", "query_since"):
        return (data.draw(st.integers(low, high)),)
    if op == "query":
        return ()
    if op == "enforce":
        return (keep_at_most(data.draw(st.integers(0, n + 1))),) if n else None
    if op == "remove":
        return (data.draw(st.sampled_from(model.times)),) if n else None
    if op == "query_range":
        lo = data.draw(st.integers(low, high))
        return lo, data.draw(st.integers(lo, high + 1))
    raise AssertionError(op)


def apply_model(model: Model, op: str, args: tuple[Any, ...]) -> Any:
    """``op`` on the brute-force model; returns what the window must return."""
    if op == "enforce":
        k = _policy_k(args[0], model)
        for _ in range(k):
            model.evict()
        return k
    if op == "remove":
        i = model.times.index(args[0])
        del model.times[i], model.values[i]
        return None
    if op == "query_range":
        lo, hi = args
        a, b = bisect.bisect_left(model.times, lo), bisect.bisect_left(model.times, hi)
        return model._fold(model.values[a:b])
    return getattr(model, op)(*args)


def _policy_k(policy: Callable[[Any, Any], bool], model: Model) -> int:
    k = 0
    while k < len(model) and policy("", ";" * (k + 1)):
        k += 1
    return k


def run(w: Any, op: str, args: tuple[Any, ...]) -> Any:
    if op == "bulk_insert":
        return w.bulk_insert(list(args[0]))
    return getattr(w, op)(*args)


# ----------------------------------------------------------------------------- checks
def state(w: Any, case: Case) -> tuple[Any, ...]:
    n = len(w)
    ends = (w.oldest(), w.youngest()) if n else ()
    since = tuple(w.query_since(t) for t in _probe_times(w)) \
        if ALGORITHMS[case.algorithm].range_queries else ()
    return list(w.items()), n, ends, w.query(), since


def model_state(model: Model, w: Any, case: Case) -> tuple[Any, ...]:
    n = len(model)
    ends = (model.oldest(), model.youngest()) if n else ()
    since = tuple(model.query_since(t) for t in _probe_times(w)) \
        if ALGORITHMS[case.algorithm].range_queries else ()
    return list(zip(model.times, model.values)), n, ends, model.query(), since


def _probe_times(w: Any) -> list[int]:
    items = list(w.items())
    return [items[len(items) // 2][0]] if items else [0]


def agrees_after_more_operations(w: Any, model: Model, case: Case) -> None:
    """A few more inserts, evictions one by one, then bulk evictions down to empty, the state
    compared with the model after each step (a half-updated structure shows up here)."""
    in_order = ALGORITHMS[case.algorithm].in_order
    for i in range(3):
        t = (model.youngest() if len(model) else 0) + 1 if in_order else 7 * i % 11
        w.insert(t, 50 + i)
        model.insert(t, 50 + i)
        assert state(w, case) == model_state(model, w, case)
    for _ in range(min(6, len(model))):
        w.evict()
        model.evict()
        assert state(w, case) == model_state(model, w, case)
    while len(model):
        t = model.times[len(model) // 2]
        assert w.bulk_evict(t) == model.bulk_evict(t)
        assert state(w, case) == model_state(model, w, case)


def refuses_everything(w: Any, error: BaseException, op: str, stale: list[Callable[[], Any]]
                       ) -> None:
    """Every public call, and a bound method taken before the failure, raises
    BrokenWindowError naming ``op`` and ``error`` (its cause)."""
    calls: list[Callable[[], Any]] = [
        lambda: w.insert(1000, 1), w.evict, lambda: w.bulk_insert([(1000, 1)]),
        lambda: w.bulk_evict(1000), w.query, lambda: w.query_since(0), lambda: list(w.items()),
        lambda: len(w), w.oldest, w.youngest, *stale]
    for extra in ("enforce", "remove", "query_range"):
        if hasattr(type(w), extra):
            calls.append(lambda extra=extra: getattr(w, extra)(0, 1)
                         if extra == "query_range" else getattr(w, extra)(0))
    for call in calls:
        with pytest.raises(BrokenWindowError) as info:
            call()
        assert info.value.__cause__ is error
        assert repr(error) in str(info.value) and f"{op}()" in str(info.value)


# ----------------------------------------------------------------------------- the test
def build(data: st.DataObject, case: Case, inj: Injector) -> tuple[Any, Model]:
    agg = case.make()
    w = make_window(case.algorithm, injected(agg, inj), **case.options)
    model = Model(agg, coalesce=ALGORITHMS[case.algorithm].coalesces_equal_times)
    inj.arm(None)
    for _ in range(data.draw(st.integers(0, 14), label="history length")):
        op = data.draw(st.sampled_from(["insert"] * 3 + ["bulk_insert", "evict", "bulk_evict",
                                                          "query", "grow"]))
        if op == "grow":    # a larger window now and then (deeper trees, more flips)
            op, args = "bulk_insert", ([(t, t % 97) for t in range(
                model.youngest() if len(model) else 0,
                (model.youngest() if len(model) else 0) + data.draw(st.integers(8, 40)))],)
        else:
            args = draw_args(data, op, case, model)
        if args is not None:
            assert run(w, op, args) == apply_model(model, op, args)
    return w, model


def kinds(op: str, case: Case) -> list[str]:
    out = ["combine"]
    if op in ("insert", "bulk_insert"):
        out.append("lift")
    if op in QUERIES or op == "query":
        out.append("lower")
    if case.make is matgroup:
        out.append("subtract")
    if op == "enforce":
        out.append("policy")
    return out


def fail_everywhere(w0: Any, model0: Model, case: Case, op: str, args: tuple[Any, ...],
                    inj: Injector, error_type: type[BaseException]) -> None:
    for kind in kinds(op, case):
        if kind == "policy":
            args = (FailingPolicy(args[0], inj),)
        want_model = copy.deepcopy(model0)
        want = apply_model(want_model, op, args if kind != "policy" else (args[0].inner,))
        inj.arm(kind)
        w = copy.deepcopy(w0)
        run(w, op, args)
        calls = inj.calls
        for at in range(1, calls + 1):
            w = copy.deepcopy(w0)
            query, insert = w.query, w.insert   # bound before the failure
            stale = [query, lambda insert=insert: insert(1000, 1)]
            inj.arm(kind, at, error_type)
            try:
                got = run(w, op, args)
            except (Boom, Interrupt) as raised:
                assert raised is inj.error
                inj.arm(None)
                check_after_failure(w, model0, case, op, kind, raised, stale)
                continue
            # The structure absorbed the failure (a skipped shrink): the call succeeded.
            assert inj.error is not None and got == want
            inj.arm(None)
            assert state(w, case) == model_state(want_model, w, case)
            agrees_after_more_operations(w, copy.deepcopy(want_model), case)


def check_after_failure(w: Any, model0: Model, case: Case, op: str, kind: str,
                        raised: BaseException, stale: list[Callable[[], Any]]) -> None:
    broken = type(w)._broken
    strong = (kind not in ("combine", "subtract") or op in QUERIES or op == "query"
              or (op in STRONG[case.algorithm]
                  and (isinstance(raised, Exception)
                       or (case.algorithm, op) not in INTERRUPT_BREAKS)))
    if broken:
        assert not strong, f"{case} {op}: {kind} failure broke a window that must stay intact"
        refuses_everything(w, raised, op, stale)
        return
    assert state(w, case) == model_state(model0, w, case), f"{case} {op} {kind}"
    agrees_after_more_operations(w, copy.deepcopy(model0), case)


class FailingPolicy:
    """The user's policy reporting its calls to the injector."""

    def __init__(self, inner: Any, inj: Injector) -> None:
        self.inner = getattr(inner, "inner", inner)
        self.inj = inj

    def __call__(self, total: Any, prefix: Any) -> bool:
        self.inj.hit("policy")
        return bool(self.inner(total, prefix))


@pytest.mark.parametrize("case", CASES, ids=str)
@given(data=st.data())
def test_a_failing_user_function_never_leaves_a_wrong_answer(case: Case,
                                                             data: st.DataObject) -> None:
    inj = Injector()
    w0, model0 = build(data, case, inj)
    error_type = data.draw(st.sampled_from([Boom, Interrupt]), label="failure")
    for op in operations(case):
        args = draw_args(data, op, case, model0)
        if args is not None:
            fail_everywhere(w0, model0, case, op, args, inj, error_type)


# ----------------------------------------------------------------------------- targeted
@pytest.mark.parametrize("error_type", [Boom, Interrupt])
def test_slickdeque_rebase_interrupted(error_type: type[BaseException]) -> None:
    """SlickDeque Inv re-bases its prefixes when the lists compact (64+ evicted entries, four
    times the live ones): an Exception there skips the re-base, the eviction stands; an
    interrupt cannot be swallowed and breaks the window."""
    inj = Injector()
    agg = matgroup()
    w0 = make_window("slickdeque", injected(agg, inj))
    w0.bulk_insert([(t, t) for t in range(80)])
    inj.arm("combine")
    copy.deepcopy(w0).bulk_evict(69)
    assert inj.calls == 9        # the re-base folds the 10 survivors
    for at in range(1, 10):
        model = Model(agg)
        model.bulk_insert([(t, t) for t in range(80)])
        w = copy.deepcopy(w0)
        inj.arm("combine", at, error_type)
        if error_type is Boom:
            assert w.bulk_evict(69) == 70
            inj.arm(None)
            model.bulk_evict(69)
            agrees_after_more_operations(w, model, Case("slickdeque", matgroup))
        else:
            with pytest.raises(Interrupt) as info:
                w.bulk_evict(69)
            inj.arm(None)
            refuses_everything(w, info.value, "bulk_evict", [])


def test_broken_window_keeps_its_type_and_refuses_copies() -> None:
    inj = Injector()
    w = make_window("daba", injected(concat(), inj))
    w.bulk_insert([(t, t) for t in range(5)])
    inj.arm("combine", 1)
    with pytest.raises(Boom) as info:
        for _ in range(5):
            w.evict()       # the first eviction that combines fails
    assert isinstance(w, ALGORITHMS["daba"]) and w.name == "daba"
    assert "broken 'daba' window: evict() interrupted by Boom(" in repr(w)
    for action in (lambda: copy.deepcopy(w), lambda: __import__("pickle").dumps(w),
                   lambda: w.aggregation, lambda: w._vals):
        with pytest.raises(BrokenWindowError) as refused:
            action()
        assert refused.value.__cause__ is info.value
    assert not hasattr(w, "__array__")      # protocol probes still see a plain AttributeError
