"""A streaming job for the restart test: run as ``python -m tests.flink.restart_job MODE OUT
CKPT [RESTORE]`` (``MODE``: PyFlink's Python execution mode, ``process`` or ``thread``).

A checkpointable source (``NumberSequenceSource``) of ``N`` numbers becomes events
(:func:`event`, slowed down so that checkpoints happen mid-stream), aggregated by
:func:`flink_adapter.sliding_aggregate` with RocksDB state, checkpoints every 300 ms retained
on cancellation, rows written as JSON lines by a ``FileSink`` (exactly-once: files are
committed on checkpoints). With ``RESTORE`` (a retained checkpoint), the job starts from it.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

N = 3_000
WINDOW = {"kind": "sliding", "range": 2_000, "slide": 1_000}
AGGREGATIONS = {"total": {"fn": "sum", "field": "v"}, "n": {"fn": "count"},
                "top": {"fn": "max", "field": "v"}}


def event(n: int) -> tuple[str, int, int]:
    """The ``n``-th event: ``(key, time ms, value)``, in time order."""
    return f"k{n % 3}", n * 100, (n * 7919) % 101


def main(mode: str, out: str, checkpoints: str, restore: str | None) -> None:
    from pyflink.common import Encoder, Row, Types, WatermarkStrategy
    from pyflink.datastream.connectors.file_system import FileSink
    from pyflink.datastream.connectors.number_seq import NumberSequenceSource

    import flink_adapter as fa

    settings = {
        "state.backend.type": "rocksdb",
        "execution.checkpointing.interval": "300 ms",
        "execution.checkpointing.dir": f"file://{checkpoints}",
        "execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION",
        "execution.checkpointing.num-retained": "100",
    }
    if restore:
        settings["execution.state-recovery.path"] = f"file://{restore}"
    env = fa.local_environment(mode, config=settings)
    row_type = Types.ROW_NAMED(["k", "t", "v"], [Types.STRING(), Types.LONG(), Types.LONG()])

    def to_event(n: int) -> Any:
        time.sleep(0.003)  # about 9 s in all: many checkpoints while the input flows
        return Row(*event(n))

    numbers = env.from_source(NumberSequenceSource(0, N - 1),
                              WatermarkStrategy.no_watermarks(), "numbers")
    events = numbers.map(to_event, row_type)
    rows = fa.sliding_aggregate(events, key="k", time="t", watermark=0, window=WINDOW,
                                aggregations=AGGREGATIONS)
    lines = rows.map(lambda r: json.dumps(r.as_dict(), sort_keys=True), Types.STRING())
    lines.sink_to(FileSink.for_row_format(out, Encoder.simple_string_encoder()).build())
    env.execute("swag restart test")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] if len(sys.argv) > 4 else None)
