"""Which ``swag_core`` structure to use: one documented function, :func:`choose_algorithm`.

The driver releases events into its structures in time order (events wait in the pending
buffer until the watermark passes them), so every structure it builds sees in-order data;
what varies is whether one structure must answer several ranges (``query_since``), whether it
must enforce a slide policy, and what the aggregation offers. ``docs/adapters.md`` has the
same table as a selection guide, also for direct use of ``swag_core`` on out-of-order data.
"""

from __future__ import annotations

from swag_core import ALGORITHMS, Aggregation
from swag_core.errors import AlgorithmMismatchError, UnknownAlgorithmError

#: Preference lists, best first. ``soe`` (subtract-on-evict) is never chosen automatically:
#: with floats, subtracting evicted values accumulates rounding error; force it by name when
#: values are exact (ints) and speed matters most.
PREFERENCES: dict[str, tuple[str, ...]] = {
    # one structure per range, in-order, FIFO eviction (bulk_evict per emitted window)
    "fifo_selective": ("slickdeque", "amta", "daba", "two_stacks_lite", "two_stacks",
                       "recalc"),
    # (two_stacks_lite first: the fewest Python-level steps per FIFO round, figures in
    # docs/benchmarks.md; amta's O(log n) bulk eviction does not pay off for the one or few
    # slices each emitted window evicts)
    "fifo": ("two_stacks_lite", "daba", "amta", "two_stacks", "daba_lite", "recalc"),
    # one structure answers several ranges with query_since
    "shared_selective": ("slickdeque", "fiba", "flatfat", "reactive", "recalc"),
    "shared": ("fiba", "flatfat", "reactive", "recalc"),
    # the MTA window slide policy needs enforce()
    "policy": ("amta", "log_mta"),
    # direct core use on out-of-order data
    "out_of_order": ("fiba", "reactive"),
}


def capability_problem(name: str, aggregation: Aggregation, *, range_queries: bool = False,
                       policy: bool = False, in_order: bool = True) -> str | None:
    """Why algorithm ``name`` cannot serve this use, or ``None`` if it can.

    Raises :class:`~swag_core.UnknownAlgorithmError` for an unknown name.
    """
    if name not in ALGORITHMS:
        raise UnknownAlgorithmError(f"unknown window algorithm {name!r}; choose one of: "
                                    f"{', '.join(ALGORITHMS)}")
    cls = ALGORITHMS[name]
    reason = cls.mismatch(aggregation)
    if reason is not None:
        return reason
    if range_queries and not cls.range_queries:
        return (f"{name!r} cannot answer query_since, needed to share one structure among "
                f"several window ranges")
    if policy and not callable(getattr(cls, "enforce", None)):
        return f"{name!r} has no enforce(policy), needed by a policy window"
    if not in_order and cls.in_order:
        return f"{name!r} accepts in-order inserts only"
    return None


def _available(name: str) -> bool:
    try:
        ALGORITHMS[name]
    except ImportError:  # a structure module not present in this installation
        return False
    return True


def choose_algorithm(aggregation: Aggregation, *, range_queries: bool = False,
                     policy: bool = False, in_order: bool = True,
                     forced: str | None = None) -> str:
    """The ``swag_core`` algorithm name for one structure.

    Args:
        aggregation: what the structure maintains (its ``selective`` / ``invertible`` flags
            matter).
        range_queries: one structure must answer ``query_since`` for several ranges (the
            driver needs this when several window specs share a structure).
        policy: the structure must offer ``enforce(policy)`` (MTA slide policy windows).
        in_order: inserts arrive in time order (always true inside the driver).
        forced: a name chosen by the user; checked against the needs above.

    Selection (first available that fits):

    ==========================  =================================================
    need                        preference
    ==========================  =================================================
    policy window               amta, log_mta
    out-of-order inserts        fiba, reactive
    shared ranges, selective    slickdeque, fiba, flatfat, reactive, recalc
    shared ranges               fiba, flatfat, reactive, recalc
    one range, selective        slickdeque, amta, daba, two_stacks_lite, ...
    one range                   two_stacks_lite, daba, amta, two_stacks, ...
    ==========================  =================================================

    Candidates lacking a needed capability (``range_queries`` class flag, ``enforce``) are
    skipped, so the list stays right as structures gain features.
    """
    if forced is not None:
        problem = capability_problem(forced, aggregation, range_queries=range_queries,
                                     policy=policy, in_order=in_order)
        if problem is not None:
            raise AlgorithmMismatchError(f"algorithm {forced!r} was forced but cannot be "
                                         f"used: {problem}")
        return forced
    if policy:
        kind = "policy"
    elif not in_order:
        kind = "out_of_order"
    else:
        kind = ("shared" if range_queries else "fifo") + (
            "_selective" if aggregation.selective else "")
    tried = []
    for name in PREFERENCES[kind]:
        if not _available(name):
            continue
        tried.append(name)
        if capability_problem(name, aggregation, range_queries=range_queries, policy=policy,
                              in_order=in_order) is None:
            return name
    raise AlgorithmMismatchError(
        f"no window algorithm fits {aggregation.name!r} ({aggregation.properties()}) with "
        f"range_queries={range_queries}, policy={policy}, in_order={in_order}; tried "
        f"{', '.join(tried) or 'none (no structure modules importable)'}")
