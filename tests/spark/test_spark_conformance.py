"""The conformance corpus through Spark batch (every scenario whose result a batch run can
reproduce) and Spark Structured Streaming (a representative set; one micro-batch per step
costs ~2 s on 2 cores)."""

from __future__ import annotations

import pytest

from tests.conformance import corpus
from tests.conformance.runner import assert_conforms, scenario_names
from tests.spark.engine import batch_eligible, batch_engine, streaming_engine

BATCH = [n for n in scenario_names() if batch_eligible(corpus.expand(corpus.load(n)))]

#: Streaming covers what batch cannot (lateness, watermark steps, no end of input) plus the
#: window kinds, several keys, int keys and a bad-input error raised inside a streaming query.
STREAMING = [
    "late_boundary_exact",          # late events at the exact boundary, sliding
    "allowed_lateness_accepts",     # allowed lateness > 0
    "watermark_regression",         # regressing watermarks are ignored
    "over_out_of_order_late",       # per-event windows with late events, two keys
    "count_window_partial_emission",  # no end of input, lateness boundary
    "mixed_kinds_stream",           # every window kind at once, many keys, late events
    "int_keys",                     # integer keys
    "bad_null_value",               # bad input after rows were emitted
]


def test_selection_is_meaningful():
    assert len(BATCH) >= 35
    assert set(STREAMING) <= set(scenario_names())
    # most of the streaming set depends on watermark steps, which batch cannot reproduce
    assert len(set(STREAMING) - set(BATCH)) >= 5


@pytest.mark.parametrize("name", BATCH)
def test_batch(spark, name):
    assert_conforms(batch_engine, corpus.load(name))


@pytest.mark.parametrize("name", STREAMING)
def test_streaming(spark, name):
    assert_conforms(streaming_engine, corpus.load(name))
