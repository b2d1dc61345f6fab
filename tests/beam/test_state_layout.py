"""The Beam state layout against its golden sample (``tests/golden/beam_state.json``): cell
names and the coders' bytes of log entries and metadata as the state views hand them to Beam.
A change here makes running pipelines' state unreadable after an update: fix the code, never
the sample."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from apache_beam.utils.timestamp import Timestamp

from beam_adapter.state import (
    BAG_LOG_SPEC,
    META_SPEC,
    ORDERED_LOG_SPEC,
    BagLogState,
    OrderedLogState,
)
from tests.golden import samples

GOLDEN = json.loads((Path(__file__).parent.parent / "golden" / "beam_state.json").read_text())


class Cell:
    """A stand-in for a Beam state cell: what was added, read back in order."""

    def __init__(self) -> None:
        self.items: list[Any] = []
        self.value: Any = None

    def add(self, item: Any) -> None:
        self.items.append(item)

    def read(self) -> Any:
        return self.value if self.value is not None else list(self.items)

    def write(self, value: Any) -> None:
        self.value = value


def test_meta_cell() -> None:
    meta = bytes.fromhex(GOLDEN["meta"]["value_hex"])
    cell = Cell()
    OrderedLogState(cell, Cell()).put_meta(meta)
    assert META_SPEC.name == GOLDEN["meta"]["name"]
    assert META_SPEC.coder.encode(cell.value).hex() == GOLDEN["meta"]["coded_hex"]
    assert META_SPEC.coder.decode(bytes.fromhex(GOLDEN["meta"]["coded_hex"])) == meta


def test_ordered_list_log() -> None:
    golden = GOLDEN["ordered_list"]
    log = Cell()
    OrderedLogState(Cell(), log).add_events(samples.ENGINE_LOG)
    assert ORDERED_LOG_SPEC.name == golden["name"]
    assert [{"sort_micros": ts.micros, "coded_hex": ORDERED_LOG_SPEC.coder.encode(v).hex()}
            for ts, v in log.items] == golden["entries"]
    stored = Cell()
    stored.items = [(Timestamp(micros=e["sort_micros"]),
                     ORDERED_LOG_SPEC.coder.decode(bytes.fromhex(e["coded_hex"])))
                    for e in golden["entries"]]
    assert list(OrderedLogState(Cell(), stored).read_events()) == samples.ENGINE_LOG


def test_bag_log() -> None:
    golden = GOLDEN["bag"]
    log = Cell()
    BagLogState(Cell(), log).add_events(samples.ENGINE_LOG)
    assert BAG_LOG_SPEC.name == golden["name"]
    assert [{"coded_hex": BAG_LOG_SPEC.coder.encode(v).hex()} for v in log.items] == \
        golden["entries"]
    stored = Cell()
    stored.items = [BAG_LOG_SPEC.coder.decode(bytes.fromhex(e["coded_hex"]))
                    for e in golden["entries"]]
    assert BagLogState(Cell(), stored).read_events() == samples.ENGINE_LOG
