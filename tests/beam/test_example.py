"""The Beam flights example (``examples/beam_flights.py``) runs, batch and streaming, and its
rows match its own pandas recomputation (the example's exit status)."""

from __future__ import annotations

import os
import sys

import pandas as pd
import pytest

EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "examples")
sys.path.insert(0, EXAMPLES)

import beam_flights  # noqa: E402  (examples/)
import flights_report  # noqa: E402


@pytest.mark.parametrize("streaming", [False, True], ids=["batch", "streaming"])
def test_the_example_agrees_with_pandas(streaming: bool,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    args = ["--limit", "1500"] + (["--streaming"] if streaming else [])
    assert beam_flights.main(args) == 0
    printed = capsys.readouterr().out
    assert "1,500 departed flights" in printed
    assert "0 differ" in printed


def test_event_time_is_the_actual_departure() -> None:
    """A flight that left on a later (UTC) day than scheduled counts on the day it left:
    its event time is the scheduled departure plus its delay."""
    f = flights_report.load_flights()
    late_night = f[(f["dep_ts"].dt.date != f["sched_ts"].dt.date) & ~f["cancelled"]]
    assert len(late_night) > 1000
    row = late_night.iloc[0]
    assert row["dep_ts"] - row["sched_ts"] == pd.Timedelta(minutes=int(row["dep_delay"]))
