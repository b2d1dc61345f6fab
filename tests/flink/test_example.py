"""The Flink flights example (``examples/flink_flights.py``) runs and its rows match its own
pandas recomputation (the example's exit status)."""

from __future__ import annotations

import os
import sys

import pytest

EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "examples")
sys.path.insert(0, EXAMPLES)

import flink_flights  # noqa: E402  (examples/)


def test_the_example_agrees_with_pandas(capsys: pytest.CaptureFixture[str]) -> None:
    assert flink_flights.main(["--limit", "1500"]) == 0
    printed = capsys.readouterr().out
    assert "1,500 departed flights" in printed
    assert "0 differ" in printed
