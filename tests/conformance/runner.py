"""Run conformance scenarios through an engine and compare with the oracle.

An *engine* is any callable taking an expanded scenario dict (``generate`` steps replaced by
their events, watermarks as in JSON: an int or ``"end"``) and returning
``{"rows": [row, ...], "late": {key: n}}`` in the row format of the shared conventions; for a
scenario with ``expect_error`` it must raise. It may also report the schema of its output
rows: ``"schema": [(column name, logical type), ...]`` (its native schema in the logical
types of :mod:`.schema`) with ``"feed"``, the :class:`.schema.Feed` it gave the engine, and
optionally ``"runner"``, its name for messages; the schema must then be the one
:func:`.schema.expected_schema` derives from the scenario's query and that feed (names,
order and types). Plugging one in::

    from tests.conformance.runner import assert_conforms, load, scenario_names

    @pytest.mark.parametrize("name", scenario_names())
    def test_my_engine(name):
        assert_conforms(my_engine, load(name))

or from the command line: ``python -m tests.conformance.runner --engine pkg.module:factory``.

Comparison: rows are a multiset, matched by identity (window, key, start, end; over rows:
window, key, time), numbers exactly by value (floats bit for bit: sums, means and variances
are exactly rounded everywhere; an int equals the float of the same value), tuples equal to
lists, NaN equal to NaN; bloom columns structurally (see :mod:`.oracle`); late counts as a
dict without zero entries; a reported schema exactly (:func:`.schema.schema_problem`).
"""

from __future__ import annotations

import argparse
import copy
import importlib
import numbers
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from . import corpus
from .oracle import BloomExpected, OracleInputError, expected

#: How many differing / missing / extra rows a diff shows.
DIFF_LIMIT = 8


class Engine(Protocol):
    """What the runner calls: ``engine(scenario) -> {"rows": [...], "late": {...}}``."""

    def __call__(self, scenario: dict[str, Any]) -> dict[str, Any]: ...


load = corpus.load
load_all = corpus.load_all


def scenario_names(tags: Iterable[str] | None = None) -> list[str]:
    """Names of the corpus's scenarios (those with one of ``tags`` when given), sorted."""
    wanted = set(tags) if tags is not None else None
    names = []
    for path in corpus.scenario_paths():
        if wanted is None or wanted & set(corpus.load_raw(path)["tags"]):
            names.append(path.stem)
    return names


# --------------------------------------------------------------------------- values
def _short(x: Any, limit: int = 160) -> str:
    text = repr(x)
    return text if len(text) <= limit else text[:limit - 20] + f"... ({len(text)} chars)"


def _plain(x: Any) -> Any:
    """Engine values in plain Python form: tuples -> lists, numpy-like numbers -> int/float."""
    if isinstance(x, bool) or x is None or isinstance(x, str):
        return x
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    if isinstance(x, dict):
        return {k: _plain(v) for k, v in x.items()}
    if isinstance(x, numbers.Integral):
        return int(x)
    if isinstance(x, numbers.Real):
        return float(x)
    return x


def _bloom_mask(actual: Any) -> tuple[int | None, str]:
    """An engine's bloom result as an int mask (BloomFilterValue, bytes or int)."""
    if hasattr(actual, "mask"):
        return int(actual.mask), ""
    if isinstance(actual, (bytes, bytearray)):
        return int.from_bytes(actual, "little"), ""
    if isinstance(actual, int) and not isinstance(actual, bool):
        return actual, ""
    return None, f"not a bloom filter value: {_short(actual)}"


def _bloom_problem(exp: BloomExpected, actual: Any) -> str | None:
    mask, why = _bloom_mask(actual)
    if mask is None:
        return why
    for attr in ("bits", "hashes"):
        if hasattr(actual, attr) and getattr(actual, attr) != getattr(exp, attr):
            return f"{attr} {getattr(actual, attr)} != {getattr(exp, attr)}"
    for item, item_mask in zip(exp.items, exp.item_masks):
        if mask & item_mask != item_mask:
            return f"inserted item {item!r} is not contained"
    if mask.bit_count() != exp.mask.bit_count():
        return (f"{mask.bit_count()} bits set, expected {exp.mask.bit_count()} "
                f"(the OR of the {len(exp.items)} single-item filters)")
    return None


def value_problem(exp: Any, actual: Any) -> str | None:
    """Why ``actual`` does not match ``exp`` (None when it does); numbers exactly."""
    if isinstance(exp, BloomExpected):
        return _bloom_problem(exp, actual)
    actual = _plain(actual)
    if isinstance(exp, bool) or isinstance(actual, bool):
        return None if exp is actual else f"{_short(actual)} != {_short(exp)}"
    if isinstance(exp, (int, float)) and isinstance(actual, (int, float)):
        if isinstance(exp, float) and isinstance(actual, float) and exp != exp:
            return None if actual != actual else f"{actual!r} != nan"
        if exp == actual:
            return None
        return f"{actual!r} != {exp!r}"
    if isinstance(exp, list) and isinstance(actual, list):
        if len(exp) != len(actual):
            return f"length {len(actual)} != {len(exp)}: {_short(actual)} vs {_short(exp)}"
        for i, (e, a) in enumerate(zip(exp, actual)):
            if (why := value_problem(e, a)) is not None:
                return f"[{i}]: {why}"
        return None
    if isinstance(exp, dict) and isinstance(actual, dict):
        if set(exp) != set(actual):
            return f"fields {sorted(map(str, actual))} != {sorted(map(str, exp))}"
        for k in exp:
            if (why := value_problem(exp[k], actual[k])) is not None:
                return f"[{k!r}]: {why}"
        return None
    if type(exp) is not type(actual) or exp != actual:
        return f"{_short(actual)} != {_short(exp)}"
    return None


def row_problems(exp: dict[str, Any], actual: dict[str, Any]) -> dict[str, str]:
    """Column -> problem for two rows (empty when they match)."""
    out = {}
    for col in exp:
        if col not in actual:
            out[col] = "missing column"
        elif (why := value_problem(exp[col], actual[col])) is not None:
            out[col] = why
    for col in actual:
        if col not in exp:
            out[col] = f"unexpected column (value {_short(actual[col])})"
    return out


# --------------------------------------------------------------------------- rows
def _identity(row: dict[str, Any]) -> tuple[Any, ...]:
    if "time" in row and "start" not in row:
        return (row.get("window"), row.get("key"), "time", _plain(row.get("time")))
    return (row.get("window"), row.get("key"), "range", _plain(row.get("start")),
            _plain(row.get("end")))


def _sorted_identities(ids: Iterable[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    try:
        return sorted(ids, key=lambda i: (i[0], isinstance(i[1], str), *i[1:]))
    except TypeError:  # keys or times of unexpected types: still deterministic
        return sorted(ids, key=repr)


def _describe(ident: tuple[Any, ...]) -> str:
    window, key, kind, *rest = ident
    if kind == "time":
        return f"window {window} key {key!r} time {rest[0]}"
    return f"window {window} key {key!r} [{rest[0]}, {rest[1]})"


def compare(exp: dict[str, Any], actual: Any) -> str | None:
    """A readable diff of an engine result against the oracle's, or None when they match."""
    if not (isinstance(actual, dict) and isinstance(actual.get("rows"), list)
            and isinstance(actual.get("late"), dict)):
        return f"engine result must be {{'rows': [...], 'late': {{...}}}}, got {_short(actual)}"
    lines: list[str] = []
    exp_late = {k: n for k, n in exp["late"].items() if n}
    act_late = {k: _plain(n) for k, n in actual["late"].items() if n}
    if exp_late != act_late:
        keys = sorted(set(exp_late) | set(act_late), key=repr)
        bad = [f"{k!r}: {act_late.get(k, 0)} (expected {exp_late.get(k, 0)})"
               for k in keys if exp_late.get(k, 0) != act_late.get(k, 0)]
        lines.append("late counts differ: " + ", ".join(bad[:DIFF_LIMIT]))

    groups_e: dict[tuple[Any, ...], list[dict[str, Any]]] = defaultdict(list)
    groups_a: dict[tuple[Any, ...], list[dict[str, Any]]] = defaultdict(list)
    for row in exp["rows"]:
        groups_e[_identity(row)].append(row)
    for row in actual["rows"]:
        if not isinstance(row, dict):
            return f"every row must be a dict, got {_short(row)}"
        groups_a[_identity(row)].append(row)

    missing: list[tuple[tuple[Any, ...], dict[str, Any]]] = []
    extra: list[tuple[tuple[Any, ...], dict[str, Any]]] = []
    differing: list[tuple[tuple[Any, ...], dict[str, str]]] = []
    for ident in _sorted_identities(set(groups_e) | set(groups_a)):
        left = list(groups_e.get(ident, ()))
        right = list(groups_a.get(ident, ()))
        unmatched_e = []
        for row in left:  # greedy multiset matching inside one identity (peers, count ties)
            for j, cand in enumerate(right):
                if not row_problems(row, cand):
                    del right[j]
                    break
            else:
                unmatched_e.append(row)
        for e_row, a_row in zip(unmatched_e, right):
            differing.append((ident, row_problems(e_row, a_row)))
        missing.extend((ident, r) for r in unmatched_e[len(right):])
        extra.extend((ident, r) for r in right[len(unmatched_e):])

    if missing or extra or differing:
        lines.append(f"rows: expected {len(exp['rows'])}, got {len(actual['rows'])}; "
                     f"{len(differing)} differing, {len(missing)} missing, {len(extra)} extra")
    for ident, problems in differing[:DIFF_LIMIT]:
        lines.append(f"  differs  {_describe(ident)}:")
        lines.extend(f"      {col}: {why}" for col, why in problems.items())
    for ident, row in missing[:DIFF_LIMIT]:
        lines.append(f"  missing  {_describe(ident)}: {_short(row, 300)}")
    for ident, row in extra[:DIFF_LIMIT]:
        lines.append(f"  extra    {_describe(ident)}: {_short(row, 300)}")
    hidden = sum(max(0, len(x) - DIFF_LIMIT) for x in (differing, missing, extra))
    if hidden:
        lines.append(f"  ... and {hidden} more")
    return "\n".join(lines) if lines else None


# --------------------------------------------------------------------------- errors
def _chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    cur: BaseException | None = exc
    while cur is not None and cur not in seen:
        seen.append(cur)
        cur = cur.__cause__ or cur.__context__
    return seen


def error_problem(expect: dict[str, Any], exc: BaseException) -> str | None:
    """Why ``exc`` does not satisfy a scenario's ``expect_error`` (None when it does).

    The class matches if an exception in the cause/context chain is (a subclass of) a class
    named ``expect["class"]``, or, for engines that re-raise worker errors as text (Spark,
    Flink), if that class name appears in the chain's messages. The message text must
    mention the ``field`` and the ``key`` when the scenario names them.
    """
    chain = _chain(exc)
    text = "\n".join(f"{type(e).__name__}: {e}" for e in chain)
    cls = expect["class"]
    typed = [e for e in chain if cls in {c.__name__ for c in type(e).__mro__}]
    if not typed and cls not in text:
        return f"expected {cls}, got {_short(text, 400)}"
    for attr in ("field", "key"):
        want = expect.get(attr)
        if want is None:
            continue
        # A typed exception carrying the attribute (BadEventError.key / .field) must hold the
        # expected value; otherwise the message text must name it.
        carried = [getattr(e, attr) for e in typed if getattr(e, attr, None) is not None]
        if carried:
            if want not in carried:
                return f"the error's {attr} is {carried[0]!r}, expected {want!r}"
        elif str(want) not in text:
            return f"the error does not name the {attr} {want!r}: {_short(text, 400)}"
    return None


# --------------------------------------------------------------------------- running
@dataclass
class Outcome:
    """The result of one scenario on one engine."""

    name: str
    ok: bool
    message: str
    seconds: float


def check(engine: Engine | Callable[[dict[str, Any]], Any],
          scenario: dict[str, Any]) -> Outcome:
    """Run one scenario through ``engine`` and compare with the oracle."""
    if any("generate" in step for step in scenario["steps"]):
        scenario = corpus.expand(scenario)
    name = scenario["name"]
    expect = scenario.get("expect_error")
    try:
        exp: dict[str, Any] | None = expected(scenario)
    except OracleInputError:
        if expect is None:
            raise
        exp = None
    if expect is not None and exp is not None:
        raise AssertionError(f"{name}: expect_error is set but the oracle found no bad input")
    started = time.perf_counter()
    try:
        actual = engine(copy.deepcopy(scenario))
    except Exception as exc:
        seconds = time.perf_counter() - started
        if expect is None:
            return Outcome(name, False, f"engine raised {type(exc).__name__}: {exc}", seconds)
        why = error_problem(expect, exc)
        return Outcome(name, why is None, why or "raised as expected", seconds)
    seconds = time.perf_counter() - started
    if exp is None:
        assert expect is not None
        n = len(actual.get("rows", ())) if isinstance(actual, dict) else "?"
        return Outcome(name, False, f"expected {expect['class']} (field {expect.get('field')!r},"
                       f" key {expect.get('key')!r}); the engine returned {n} rows", seconds)
    diff = compare(exp, actual)
    if diff is None:
        diff = reported_schema_problem(engine, scenario, actual)
    return Outcome(name, diff is None, diff or f"{len(exp['rows'])} rows match", seconds)


def reported_schema_problem(engine: Any, scenario: dict[str, Any],
                            actual: dict[str, Any]) -> str | None:
    """Why the schema an engine reported (``actual["schema"]``) is not the scenario's
    expected one over the reported ``feed``; None when it is, or when none is reported."""
    if "schema" not in actual:
        return None
    # imported here: the runner itself needs no code under test (the schema rule does)
    from .schema import Feed, expected_schema, schema_problem

    runner = actual.get("runner") or getattr(engine, "__qualname__", None) or repr(engine)
    feed = actual.get("feed")
    if not isinstance(feed, Feed):
        return f"runner {runner}: a reported schema needs the 'feed' it derives from, " \
               f"got {_short(feed)}"
    why = schema_problem(expected_schema(scenario, feed), actual["schema"])
    return None if why is None else f"output schema on runner {runner}: {why}"


def assert_conforms(engine: Engine | Callable[[dict[str, Any]], Any],
                    scenario: dict[str, Any]) -> None:
    """``check`` for pytest: raises AssertionError with the diff on a mismatch."""
    outcome = check(engine, scenario)
    if not outcome.ok:
        raise AssertionError(f"scenario {outcome.name}: {scenario.get('description', '')}\n"
                             f"{outcome.message}")


def run(engine: Engine | Callable[[dict[str, Any]], Any],
        names: Iterable[str] | None = None) -> list[Outcome]:
    """Check every named scenario (default: the whole corpus)."""
    return [check(engine, corpus.load(n)) for n in (names or scenario_names())]


def _load_engine(spec: str) -> Callable[[dict[str, Any]], Any]:
    module, _, attr = spec.partition(":")
    obj = getattr(importlib.import_module(module), attr or "engine")
    # A class or factory without arguments gives the engine; a function taking the scenario
    # is the engine itself.
    engine: Callable[[dict[str, Any]], Any] = obj() if isinstance(obj, type) else obj
    return engine


def main(argv: list[str] | None = None) -> int:
    """Command line: run the corpus through an engine, or print the oracle's rows."""
    parser = argparse.ArgumentParser(prog="python -m tests.conformance.runner",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--engine", help="module:attribute of an engine callable or class")
    parser.add_argument("--scenario", action="append", help="scenario name (repeatable)")
    parser.add_argument("--tag", action="append", help="only scenarios with this tag")
    parser.add_argument("--oracle", action="store_true",
                        help="print the oracle's result for the selected scenarios")
    args = parser.parse_args(argv)
    names = args.scenario or scenario_names(args.tag)
    if args.oracle or not args.engine:
        for n in names:
            try:
                res = expected(corpus.load(n))
            except OracleInputError as exc:
                print(f"== {n}: raises {exc}")
                continue
            print(f"== {n}: {len(res['rows'])} rows, late {res['late']}")
            for row in res["rows"][:50]:
                print("  ", _short(row, 200))
        return 0
    engine = _load_engine(args.engine)
    outcomes = run(engine, names)
    for o in outcomes:
        print(f"{'PASS' if o.ok else 'FAIL'} {o.name} ({o.seconds:.2f}s)")
        if not o.ok:
            print("    " + o.message.replace("\n", "\n    "))
    failed = sum(not o.ok for o in outcomes)
    print(f"{len(outcomes) - failed}/{len(outcomes)} scenarios conform")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
