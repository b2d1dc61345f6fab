"""Scenario files: loading, deterministic event generators and schema validation.

A scenario is one JSON file in ``scenarios/`` (format: ``docs/conformance.md`` and the shared
conventions). Large inputs are written as a step ``{"generate": {...}}``, which
:func:`expand` replaces by the ``{"events": [...]}`` step it stands for. The generators use
their own PRNG (SplitMix64), so the events are identical on every Python version and platform;
each generate spec records the ``digest`` of the events it must produce, and
:func:`validate_scenario` checks it.

Only the standard library is used: this module and the oracle must not depend on the code
under test.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

SCENARIO_DIR = Path(__file__).resolve().parent / "scenarios"

#: The JSON spelling of the end-of-input watermark (``END_OF_INPUT`` = +inf in Python).
END = "end"

#: Aggregation name -> (needs "field", other required params, optional params). ``count``
#: with a field counts the events whose field is present and not null; argmin / argmax
#: without ``result`` return the whole event value; bloom defaults to 16384 bits, 4 hashes.
AGGREGATIONS: dict[str, tuple[bool, frozenset[str], frozenset[str]]] = {
    "count": (False, frozenset(), frozenset({"field"})),
    "sum": (True, frozenset(), frozenset()),
    "mean": (True, frozenset(), frozenset()),
    "min": (True, frozenset(), frozenset()),
    "max": (True, frozenset(), frozenset()),
    "argmin": (True, frozenset(), frozenset({"result"})),
    "argmax": (True, frozenset(), frozenset({"result"})),
    "mincount": (True, frozenset(), frozenset()),
    "maxcount": (True, frozenset(), frozenset()),
    "variance": (True, frozenset(), frozenset({"ddof"})),
    "stddev": (True, frozenset(), frozenset({"ddof"})),
    "geomean": (True, frozenset(), frozenset()),
    "first": (True, frozenset(), frozenset()),
    "last": (True, frozenset(), frozenset()),
    "collect": (True, frozenset(), frozenset()),
    "bloom": (True, frozenset(), frozenset({"bits", "hashes"})),
}

#: Window kind -> (required fields, optional fields).
WINDOW_KINDS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "sliding": (frozenset({"range", "slide"}), frozenset({"offset"})),
    "tumbling": (frozenset({"size"}), frozenset({"offset"})),
    "over": (frozenset({"range"}), frozenset()),
    "count": (frozenset({"size"}), frozenset({"every"})),
    "policy": (frozenset({"measure", "limit"}), frozenset({"field", "every"})),
}

#: Measures of the declarative ``policy`` window kind (adapters.query.specs.PolicyWindow).
POLICY_MEASURES = ("count", "span", "sum")

#: Output column names an aggregation may not use.
RESERVED_COLUMNS = frozenset({"window", "key", "start", "end", "time", "event"})

#: Error classes a scenario may expect -> the built-in they subclass. ``BadEventError`` is
#: ``adapters.errors.BadEventError``: null or unparsable time, missing field, or a value an
#: aggregation cannot take.
ERROR_CLASSES: dict[str, str] = {
    "BadEventError": "ValueError",
}

#: Allowed tags (a closed list, so that a typo cannot hide a coverage gap).
TAGS = frozenset({
    "in-order", "out-of-order", "burst", "late", "lateness", "lateness-boundary",
    "empty-window", "empty-input", "single-key", "multi-key", "many-keys", "int-keys", "sliding",
    "sliding-divisible", "sliding-nondivisible", "offset", "negative-time", "tumbling", "over",
    "peers", "count-window", "policy", "non-commutative", "ties", "watermark-regression",
    "watermark-stall", "end-of-input", "no-end-of-input", "multi-window", "multi-aggregation",
    "bad-input", "floats", "generated", "duplicates", "nulls",
})

_TOP_KEYS = ("name", "description", "tags", "query", "steps", "expect_error")


# --------------------------------------------------------------------------- generators
class SplitMix64:
    """A tiny deterministic PRNG (Steele, Lea, Flood 2014), independent of ``random``."""

    _MASK = (1 << 64) - 1

    def __init__(self, seed: int) -> None:
        self.state = seed & self._MASK

    def next(self) -> int:
        """The next 64-bit output."""
        self.state = (self.state + 0x9E3779B97F4A7C15) & self._MASK
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & self._MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & self._MASK
        return z ^ (z >> 31)

    def below(self, n: int) -> int:
        """A uniform integer in ``[0, n)`` (rejection sampling, no modulo bias)."""
        if n <= 0:
            raise ValueError("below() needs n > 0")
        limit = (1 << 64) - ((1 << 64) % n)
        while True:
            x = self.next()
            if x < limit:
                return x % n

    def between(self, lo: int, hi: int) -> int:
        """A uniform integer in ``[lo, hi]``."""
        return lo + self.below(hi - lo + 1)


def _field_value(spec: Any, rng: SplitMix64, index: int) -> Any:
    """One field value from its spec (see ``docs/conformance.md``, "Generators")."""
    if not isinstance(spec, dict) or len(spec) != 1:
        raise ValueError(f"field spec must be a one-entry object, got {spec!r}")
    ((kind, arg),) = spec.items()
    if kind == "int":
        return rng.between(int(arg[0]), int(arg[1]))
    if kind == "eighths":
        # Floats k/8 with k in [lo*8, hi*8]: exactly representable (sums of them are exact
        # even in float arithmetic).
        return rng.between(int(arg[0]) * 8, int(arg[1]) * 8) / 8
    if kind == "choice":
        return arg[rng.below(len(arg))]
    if kind == "seq":
        return int(arg) + index
    if kind == "const":
        return arg
    raise ValueError(f"unknown field generator {kind!r}")


def _values(fields: dict[str, Any], rng: SplitMix64, index: int) -> dict[str, Any]:
    return {name: _field_value(spec, rng, index) for name, spec in sorted(fields.items())}


def generate(spec: dict[str, Any]) -> list[list[Any]]:
    """The events ``[key, time, value]`` (arrival order) that a ``generate`` spec stands for.

    Kinds:

    * ``burst``: ``count`` events all at ``time``; keys round-robin over ``keys``.
    * ``stream``: ``count`` events; a base time starts at ``start`` and grows by a uniform
      step in ``[step[0], step[1]]`` per event; each event's time is the base minus a uniform
      jitter in ``[0, disorder]`` (so arrival is out of order by at most ``disorder`` ms);
      the key is drawn uniformly from ``keys``.

    Both take ``seed`` and ``fields`` (field name -> generator: ``{"int": [lo, hi]}``,
    ``{"eighths": [lo, hi]}``, ``{"choice": [...]}``, ``{"seq": first}``, ``{"const": x}``).
    """
    kind = spec["kind"]
    rng = SplitMix64(int(spec["seed"]))
    keys = spec["keys"]
    fields = spec.get("fields", {})
    count = int(spec["count"])
    events: list[list[Any]] = []
    if kind == "burst":
        t = int(spec["time"])
        for i in range(count):
            events.append([keys[i % len(keys)], t, _values(fields, rng, i)])
    elif kind == "stream":
        base = int(spec["start"])
        lo, hi = (int(x) for x in spec.get("step", [1, 1]))
        disorder = int(spec.get("disorder", 0))
        for i in range(count):
            key = keys[rng.below(len(keys))]
            t = base - (rng.between(0, disorder) if disorder else 0)
            events.append([key, t, _values(fields, rng, i)])
            base += rng.between(lo, hi)
    else:
        raise ValueError(f"unknown generator kind {kind!r}")
    return events


def events_digest(events: list[list[Any]]) -> str:
    """A short stable digest of an event list (first 16 hex digits of SHA-256 of its JSON)."""
    text = json.dumps(events, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


# --------------------------------------------------------------------------- loading
def load_raw(path: str | Path) -> dict[str, Any]:
    """A scenario file as written (``generate`` steps not expanded)."""
    with open(path, encoding="utf-8") as fh:
        data: dict[str, Any] = json.load(fh)
    return data


def expand(scenario: dict[str, Any]) -> dict[str, Any]:
    """A deep copy of ``scenario`` with every ``generate`` step replaced by its events.

    This is the form every engine and the oracle receive. Watermarks stay as in JSON
    (an integer or ``"end"``); use :func:`watermark_value` to read them.
    """
    out = copy.deepcopy(scenario)
    out["steps"] = [
        {"events": generate(step["generate"])} if "generate" in step else step
        for step in out["steps"]
    ]
    return out


def scenario_paths() -> list[Path]:
    """Every scenario file, sorted by name."""
    return sorted(SCENARIO_DIR.glob("*.json"))


def load(name_or_path: str | Path) -> dict[str, Any]:
    """One expanded scenario, by file name stem (``"late_boundary"``) or path."""
    path = Path(name_or_path)
    if path.suffix != ".json":
        path = SCENARIO_DIR / f"{name_or_path}.json"
    return expand(load_raw(path))


def load_all(tags: set[str] | None = None) -> list[dict[str, Any]]:
    """Every expanded scenario (those carrying one of ``tags`` when given), sorted by name."""
    out = []
    for path in scenario_paths():
        raw = load_raw(path)
        if tags is None or tags & set(raw.get("tags", ())):
            out.append(expand(raw))
    return out


def watermark_value(step: dict[str, Any]) -> float | int:
    """The watermark of a watermark step as a number (``"end"`` -> ``math.inf``)."""
    w = step["watermark"]
    return math.inf if w == END else int(w)


def iter_events(scenario: dict[str, Any]) -> Iterator[list[Any]]:
    """Every event of an expanded scenario in arrival order."""
    for step in scenario["steps"]:
        yield from step.get("events", ())


# --------------------------------------------------------------------------- validation
def is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _check_window(i: int, spec: Any, errors: list[str]) -> None:
    where = f"query.windows[{i}]"
    before = len(errors)
    if not isinstance(spec, dict) or spec.get("kind") not in WINDOW_KINDS:
        errors.append(f"{where}: kind must be one of {sorted(WINDOW_KINDS)}, got {spec!r}")
        return
    required, optional = WINDOW_KINDS[spec["kind"]]
    fields = set(spec) - {"kind"}
    if missing := required - fields:
        errors.append(f"{where}: missing {sorted(missing)}")
    if unknown := fields - required - optional:
        errors.append(f"{where}: unknown fields {sorted(unknown)}")
    for f in fields & (required | optional):
        if spec["kind"] == "policy" and f in ("measure", "limit", "field"):
            continue
        if not is_int(spec[f]):
            errors.append(f"{where}.{f} must be an integer, got {spec[f]!r}")
    if spec["kind"] == "policy" and not len(errors) > before:
        limit = spec["limit"]
        if spec["measure"] not in POLICY_MEASURES:
            errors.append(f"{where}.measure must be one of {POLICY_MEASURES}")
        elif not (_is_number(limit) and math.isfinite(limit) and limit >= 0):
            errors.append(f"{where}.limit must be a finite number >= 0, got {limit!r}")
        elif (spec["measure"] == "sum") != isinstance(spec.get("field"), str):
            errors.append(f"{where}: the sum measure needs a field, the others take none")
        elif spec.get("every", 1) <= 0:
            errors.append(f"{where}.every must be > 0")
    if len(errors) > before:
        return
    kind = spec["kind"]
    if kind == "sliding" and not spec["range"] >= spec["slide"] > 0:
        errors.append(f"{where}: need range >= slide > 0")
    if kind == "tumbling" and spec["size"] <= 0:
        errors.append(f"{where}: need size > 0")
    if kind == "over" and spec["range"] < 0:
        errors.append(f"{where}: need range >= 0")
    if kind == "count" and (spec["size"] <= 0 or spec.get("every", 1) <= 0):
        errors.append(f"{where}: need size > 0 and every > 0")


def _check_aggregation(name: Any, spec: Any, errors: list[str]) -> None:
    where = f"query.aggregations[{name!r}]"
    if not isinstance(name, str) or not name or name in RESERVED_COLUMNS:
        errors.append(f"{where}: output name must be a non-empty string not in "
                      f"{sorted(RESERVED_COLUMNS)}")
    if not isinstance(spec, dict) or spec.get("fn") not in AGGREGATIONS:
        errors.append(f"{where}: fn must be one of {sorted(AGGREGATIONS)}, got {spec!r}")
        return
    needs_field, required, optional = AGGREGATIONS[spec["fn"]]
    params = set(spec) - {"fn"}
    if needs_field:
        required = required | {"field"}
    if missing := required - params:
        errors.append(f"{where}: missing {sorted(missing)}")
    if unknown := params - required - optional:
        errors.append(f"{where}: unknown params {sorted(unknown)}")
    for p in ("field", "result"):
        if p in spec and not (isinstance(spec[p], str) and spec[p]):
            errors.append(f"{where}.{p} must be a field name")
    if "ddof" in spec and spec["ddof"] not in (0, 1):
        errors.append(f"{where}.ddof must be 0 or 1")
    for p in ("bits", "hashes"):
        if p in spec and not (is_int(spec[p]) and spec[p] > 0):
            errors.append(f"{where}.{p} must be a positive integer")


def _check_steps(steps: Any, bad_input: bool, errors: list[str], nulls: bool = False) -> None:
    """Schema problems of the steps; ``nulls``: values may be null or NaN (a scenario tagged
    ``nulls``)."""
    if not isinstance(steps, list):
        errors.append("steps must be a list")
        return
    for i, step in enumerate(steps):
        where = f"steps[{i}]"
        if not isinstance(step, dict) or len(step) != 1 or \
                next(iter(step)) not in ("events", "watermark", "generate"):
            errors.append(f"{where}: must be exactly one of events / watermark / generate")
            continue
        if "watermark" in step:
            w = step["watermark"]
            if not (is_int(w) or w == END):
                errors.append(f"{where}.watermark must be an integer or {END!r}, got {w!r}")
        elif "generate" in step:
            spec = step["generate"]
            try:
                events = generate(spec)
            except (KeyError, ValueError, TypeError) as exc:
                errors.append(f"{where}.generate: {exc!r}")
                continue
            if spec.get("digest") != events_digest(events):
                errors.append(f"{where}.generate: digest {spec.get('digest')!r} does not match "
                              f"the generated events ({events_digest(events)})")
        else:
            events = step["events"]
            if not isinstance(events, list):
                errors.append(f"{where}.events must be a list")
                continue
            for j, ev in enumerate(events):
                w = f"{where}.events[{j}]"
                if not (isinstance(ev, list) and len(ev) == 3):
                    errors.append(f"{w}: must be [key, time, value]")
                    continue
                key, t, value = ev
                if not (isinstance(key, str) or is_int(key)):
                    errors.append(f"{w}: key must be a string or an integer, got {key!r}")
                if not is_int(t) and not bad_input:
                    errors.append(f"{w}: time must be an integer, got {t!r}")
                if not isinstance(value, dict):
                    errors.append(f"{w}: value must be an object, got {value!r}")
                elif not bad_input:
                    for f, x in value.items():
                        if nulls and (x is None or (isinstance(x, float) and math.isnan(x))):
                            continue
                        if x is None or (isinstance(x, float) and not math.isfinite(x)):
                            errors.append(f"{w}: field {f!r} is {x!r} outside a bad-input "
                                          f"or nulls scenario")


def validate_scenario(scenario: Any, stem: str | None = None) -> list[str]:
    """Schema problems of a raw scenario (empty list: valid). ``stem``: its file name stem."""
    errors: list[str] = []
    if not isinstance(scenario, dict):
        return ["scenario must be a JSON object"]
    if list(scenario) != list(_TOP_KEYS):
        errors.append(f"top-level keys must be exactly {list(_TOP_KEYS)} in this order, got "
                      f"{list(scenario)}")
        if set(_TOP_KEYS) - set(scenario):
            return errors
    name = scenario["name"]
    if not (isinstance(name, str) and name.replace("_", "").isalnum() and name.islower()):
        errors.append(f"name must be lower_snake_case, got {name!r}")
    if stem is not None and name != stem:
        errors.append(f"name {name!r} differs from the file name {stem!r}")
    if not (isinstance(scenario["description"], str) and len(scenario["description"]) >= 20):
        errors.append("description must be a sentence or more")
    tags = scenario["tags"]
    if not (isinstance(tags, list) and tags and all(isinstance(t, str) for t in tags)):
        errors.append("tags must be a non-empty list of strings")
    elif unknown := set(tags) - TAGS:
        errors.append(f"unknown tags {sorted(unknown)} (allowed: {sorted(TAGS)})")

    query = scenario["query"]
    if not isinstance(query, dict) or set(query) - {"windows", "aggregations",
                                                     "allowed_lateness", "nulls"}:
        errors.append("query must be an object with windows, aggregations, allowed_lateness "
                      "(and optionally nulls)")
    elif query.get("nulls", "skip") not in ("skip", "error"):
        errors.append(f"query.nulls must be 'skip' or 'error', got {query['nulls']!r}")
    else:
        windows = query.get("windows")
        if not (isinstance(windows, list) and windows):
            errors.append("query.windows must be a non-empty list")
        else:
            for i, spec in enumerate(windows):
                _check_window(i, spec, errors)
        aggs = query.get("aggregations")
        if not (isinstance(aggs, dict) and aggs):
            errors.append("query.aggregations must be a non-empty object")
        else:
            for out, spec in aggs.items():
                _check_aggregation(out, spec, errors)
        lateness = query.get("allowed_lateness", 0)
        if not (is_int(lateness) and lateness >= 0):
            errors.append(f"query.allowed_lateness must be an integer >= 0, got {lateness!r}")

    expect = scenario["expect_error"]
    bad_input = expect is not None
    if expect is not None:
        if not (isinstance(expect, dict) and set(expect) <= {"class", "field", "key",
                                                            "description"}):
            errors.append("expect_error must be null or {class, field, key, description}")
        elif expect.get("class") not in ERROR_CLASSES:
            errors.append(f"expect_error.class must be one of {sorted(ERROR_CLASSES)}")
        elif "bad-input" not in (tags or ()):
            errors.append("a scenario with expect_error must be tagged bad-input")
    _check_steps(scenario["steps"], bad_input, errors, "nulls" in (tags or ()))
    if not errors:
        errors.extend(_check_tags(scenario))
    if not errors and not bad_input:
        # Every aggregated field must be present in every event of a valid scenario.
        needed = {spec[p] for spec in query["aggregations"].values()
                  for p in ("field", "result") if p in spec}
        for ev in iter_events(expand(scenario)):
            if missing := needed - set(ev[2]):
                errors.append(f"event {ev!r} lacks fields {sorted(missing)}")
                break
    return errors


def _late_count(scenario: dict[str, Any]) -> int:
    """How many events arrive with time < W - L (a tag check; the oracle does the real work)."""
    w: float = -math.inf
    lateness = scenario["query"].get("allowed_lateness", 0)
    late = 0
    for step in scenario["steps"]:
        if "watermark" in step:
            w = max(w, watermark_value(step))
        else:
            late += sum(1 for ev in step["events"] if is_int(ev[1]) and ev[1] < w - lateness)
    return late


def _check_tags(scenario: dict[str, Any]) -> list[str]:
    """Tags that can be checked mechanically must be true (so coverage claims hold)."""
    tags = set(scenario["tags"])
    sc = expand(scenario)
    events = list(iter_events(sc))
    keys = {ev[0] for ev in events}
    kinds = {w["kind"] for w in sc["query"]["windows"]}
    fns = {a["fn"] for a in sc["query"]["aggregations"].values()}
    watermarks = [s["watermark"] for s in sc["steps"] if "watermark" in s]
    per_time: dict[Any, int] = {}  # events per (key, time)
    at_time: dict[Any, int] = {}  # events per time, all keys
    by_key: dict[Any, list[int]] = {}  # integer times per key, in arrival order
    for ev in events:
        if is_int(ev[1]):
            by_key.setdefault(ev[0], []).append(ev[1])
        per_time[(ev[0], ev[1])] = per_time.get((ev[0], ev[1]), 0) + 1
        at_time[ev[1]] = at_time.get(ev[1], 0) + 1
    claims = {
        "single-key": len(keys) == 1,
        "multi-key": len(keys) >= 2,
        "many-keys": len(keys) >= 20,
        "int-keys": bool(keys) and all(is_int(k) for k in keys),
        "burst": max(at_time.values(), default=0) >= 1000,
        "ties": max(per_time.values(), default=0) >= 2,
        "over": "over" in kinds,
        "count-window": "count" in kinds,
        "policy": "policy" in kinds,
        "tumbling": "tumbling" in kinds or any(
            w["kind"] == "sliding" and w["range"] == w["slide"] for w in sc["query"]["windows"]),
        "sliding": "sliding" in kinds,
        "sliding-divisible": any(w["kind"] == "sliding" and w["range"] % w["slide"] == 0
                                 for w in sc["query"]["windows"]),
        "sliding-nondivisible": any(w["kind"] == "sliding" and w["range"] % w["slide"] != 0
                                    for w in sc["query"]["windows"]),
        "offset": any(w.get("offset", 0) != 0 for w in sc["query"]["windows"]),
        "negative-time": any(is_int(ev[1]) and ev[1] < 0 for ev in events),
        "multi-window": len(sc["query"]["windows"]) >= 2,
        "multi-aggregation": len(sc["query"]["aggregations"]) >= 4,
        "non-commutative": bool(fns & {"collect", "first", "last", "argmin", "argmax"}),
        "end-of-input": END in watermarks,
        "no-end-of-input": END not in watermarks,
        "empty-input": not events,
        "lateness": sc["query"].get("allowed_lateness", 0) > 0,
        "late": _late_count(sc) > 0,
        "watermark-regression": any(
            is_int(b) and (a == END or (is_int(a) and b < a))
            for i, a in enumerate(watermarks) for b in watermarks[i + 1:]),
        "watermark-stall": len(watermarks) != len(set(map(str, watermarks))),
        "generated": any("generate" in s for s in scenario["steps"]),
        "floats": any(isinstance(x, float) for ev in events for x in ev[2].values()),
        "nulls": any(x is None or (isinstance(x, float) and math.isnan(x))
                     for ev in events for f, x in ev[2].items()
                     if f in {a.get("field") for a in sc["query"]["aggregations"].values()}),
        "in-order": all(a <= b for ts in by_key.values() for a, b in itertools.pairwise(ts)),
        "out-of-order": any(a > b for ts in by_key.values() for a, b in itertools.pairwise(ts)),
    }
    return [f"tag {t!r} does not hold for this scenario" for t in sorted(tags)
            if t in claims and not claims[t]]
