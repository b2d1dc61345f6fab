"""Smoke test of the issue 4 benchmark (``benchmarks/driver.py``): its workload generator,
the ``WindowDriver`` feed, the per-window-assignment baseline, the pandas OVER computation
and the row comparison, on ~2,000 events. No timing assertions."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from adapters.crosskey import columnar
from benchmarks import common
from benchmarks import driver as bench

N, KEYS, HOURS = 2000, 4, 2
# small batches, long delays and a watermark right at the newest event: dozens of late events
SMALL = {"keys": KEYS, "hours": HOURS, "batch": 20, "mean_delay": 5000, "watermark_delay": 0}


@pytest.fixture(scope="module")
def stream() -> bench.Workload:
    return bench.workload(N, **SMALL)


def collect(run: Callable[..., dict[str, Any]],
            *args: Any) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    info = run(*args, rows.extend)
    return rows, info


def test_workload_shape(stream: bench.Workload) -> None:
    assert stream.events == N
    assert stream == bench.workload(N, **SMALL)  # deterministic
    assert stream != bench.workload(N, **SMALL, seed=5)
    assert all(len(b) <= 20 for b in stream.batches)
    assert len(stream.batches) == len(stream.watermarks)
    assert stream.watermarks == sorted(stream.watermarks)
    seen: set[tuple[str, int]] = set()
    out_of_order = 0
    last: dict[str, int] = {}
    for batch in stream.batches:
        for key, t, value in batch:
            assert (key, t) not in seen  # distinct times per key
            seen.add((key, t))
            assert 0 <= value[bench.FIELD] < 1000
            out_of_order += t < last.get(key, t)
            last[key] = max(t, last.get(key, t))
    assert {k for k, _ in seen} == set(stream.keys)
    assert out_of_order > 0
    late = N - len(stream.accepted())
    assert 10 < late < N // 10


@pytest.mark.parametrize("k", sorted(bench.SLIDES))
@pytest.mark.parametrize("label", sorted(bench.AGGREGATIONS))
def test_both_drivers_emit_the_same_rows(stream: bench.Workload, k: int, label: str) -> None:
    name, fn = bench.AGGREGATIONS[label]
    slide = bench.SLIDES[k]
    swag_rows, swag_info = collect(bench.run_swag, stream, bench.sliding_query(slide, fn, name))
    base_rows, base_info = collect(bench.run_baseline, stream, slide, fn, name)
    check = bench.compare_windows(swag_rows, base_rows, name)
    assert check == {"rows": len(base_rows), "equal": True}
    assert swag_info["late"] == base_info["late"] == N - len(stream.accepted())
    # every window holds events: about (span + range) / slide windows per key
    assert len(base_rows) >= KEYS * (HOURS * bench.HOUR // slide)
    assert all(r["end"] - r["start"] == bench.HOUR for r in base_rows)


def test_subset_of_keys_gives_those_keys_rows(stream: bench.Workload) -> None:
    """The key subsets the full run uses for the slow baseline cells are exact: the rows are
    those of the whole stream for the chosen keys."""
    name, fn = bench.AGGREGATIONS["Mean"]
    query = bench.sliding_query(bench.SLIDES[60], fn, name)
    part = stream.subset(stream.keys[:2])
    assert part.watermarks == stream.watermarks
    assert part.events == sum(1 for b in stream.batches for e in b if e[0] in part.keys)
    whole, _ = collect(bench.run_swag, stream, query)
    some, _ = collect(bench.run_swag, part, query)
    assert some
    wanted = [r for r in whole if r["key"] in part.keys]
    assert bench.compare_windows(some, wanted, name)["equal"]
    base, _ = collect(bench.run_baseline, part, bench.SLIDES[60], fn, name)
    assert bench.compare_windows(base, wanted, name)["equal"]


def test_comparison_notices_differences(stream: bench.Workload) -> None:
    name, fn = bench.AGGREGATIONS["Max"]
    rows, _ = collect(bench.run_baseline, stream, bench.SLIDES[6], fn, name)
    assert bench.compare_windows(rows, rows, name)["equal"]
    changed = [dict(r) for r in rows]
    changed[3][name] += 1e-6
    assert not bench.compare_windows(changed, rows, name)["equal"]
    assert not bench.compare_windows(rows[1:], rows, name)["equal"]
    assert not bench.compare_windows(rows + rows[:1], rows, name)["equal"]
    shifted = [dict(r) for r in rows]
    shifted[0]["end"] += 1
    assert not bench.compare_windows(shifted, rows, name)["equal"]


def test_baseline_rejects_other_aggregations(stream: bench.Workload) -> None:
    with pytest.raises(ValueError, match="max and mean"):
        bench.run_baseline(stream, bench.HOUR, "sum", "s", lambda rows: None)


@pytest.mark.parametrize("label", sorted(bench.AGGREGATIONS))
def test_over_windows_match_pandas(stream: bench.Workload, label: str) -> None:
    pytest.importorskip("pandas")
    name, fn = bench.AGGREGATIONS[label]
    rows, info = collect(bench.run_swag, stream, bench.over_query(fn, name))
    accepted = stream.accepted()
    assert len(rows) == len(accepted) == N - info["late"]
    want, build_s, compute_s = bench.pandas_over(accepted, fn)
    assert len(want) == len(accepted)
    assert build_s >= 0 and compute_s >= 0
    assert bench.compare_over(rows, want, name) == {"rows": len(accepted), "equal": True}
    key = next(iter(want))
    assert not bench.compare_over(rows, {**want, key: want[key] + 1.0}, name)["equal"]


def test_measure_and_markdown(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("pandas")
    pytest.importorskip("matplotlib")
    monkeypatch.setattr(common, "IMAGES", tmp_path)
    payload = bench.measure(N, keys=KEYS, hours=HOURS, batch=200,
                            key_share={60: 0.5, 360: 0.25})
    assert len(payload["sliding"]) == len(bench.SLIDES) * len(bench.AGGREGATIONS)
    assert len(payload["over"]) == len(bench.AGGREGATIONS)
    assert all(e["check"]["equal"] for e in payload["sliding"] + payload["over"])
    parts = {e["k"]: e["part_keys"] for e in payload["sliding"]}
    assert parts == {1: KEYS, 6: KEYS, 60: 2, 360: 1}
    text = bench.markdown(payload)
    assert (tmp_path / "driver.png").stat().st_size > 0
    assert "### Goals" in text
    assert text.count("at least 10x") == text.count("never slower") == 2
    assert "8 of 8 runs equal" not in text and "10 of 10 runs equal" in text
    if columnar.compiled_reader is not None:  # the reader A/B ran and is reported
        assert payload["reading"]["reader"] == "compiled" and "by the compiled reader" in text
        ab = payload["reader_ab"]
        assert ab["equal"] and len(ab["compiled_s"]) == len(ab["python_s"]) == bench.REPEATS
        assert "**Without the compiled reader.**" in text


def test_without_the_compiled_reader(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("numpy")
    stream = bench.workload(N, keys=KEYS, hours=HOURS, batch=200)  # the intake's batch size
    monkeypatch.setattr(columnar, "compiled_reader", None)
    reading = bench.reading_costs(stream)
    assert reading["reader"] == "python"
    assert bench.reader_ab(stream) is None
    entry = {"aggregation": "Max", "baseline_s": 1.0, "part_events": N, "part_swag_s": 0.5}
    text = bench._reading_text(reading, stream.events, [entry])
    assert "the compiled one was not built" in text and "by the compiled reader" not in text


def test_driver_over_measures_the_driver(stream: bench.Workload) -> None:
    """``benchmarks/driver_over.py`` on the small stream: the driver's rows equal pandas', and
    the report renders its goals."""
    pytest.importorskip("pandas")
    from benchmarks import driver_over

    small = bench.workload(N, keys=KEYS, hours=HOURS, batch=200)
    over = driver_over.measure(small, rounds=1)
    assert len(over) == len(bench.AGGREGATIONS)
    assert all(e["rows_equal_pandas"] for e in over)
    text = driver_over.markdown({"over": over, "load_before": [], "load_after": []})
    assert text.count("at least as fast as pandas") == len(bench.AGGREGATIONS)
