"""The Flink state layout against its golden sample (``tests/golden/flink_state.json``): state
names and type information (a savepoint is read back only with the same ones), and the map
entries ``FlinkKeyState`` writes. Fix the code, never the sample."""

from __future__ import annotations

import json
from pathlib import Path

from flink_adapter.state import (
    FlinkKeyState,
    log_descriptor,
    meta_descriptor,
    pairs_descriptor,
    timer_descriptor,
)
from tests.flink.test_flink_state import Map, Value
from tests.golden import samples

GOLDEN = json.loads((Path(__file__).parent.parent / "golden" / "flink_state.json").read_text())


def test_descriptors() -> None:
    for kind, descriptor in [("meta", meta_descriptor()), ("log", log_descriptor()),
                             ("timer", timer_descriptor()), ("pairs", pairs_descriptor())]:
        assert {"name": descriptor.name, "type": str(descriptor.type_info)} == GOLDEN[kind]


def test_log_map_entries() -> None:
    log = Map()
    FlinkKeyState(Value(), log).add_events(samples.ENGINE_LOG)
    assert dict(log) == {seq: (time, data) for time, seq, data in samples.ENGINE_LOG}
    assert sorted(FlinkKeyState(Value(), log).read_events()) == sorted(samples.ENGINE_LOG)
