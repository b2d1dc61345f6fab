"""The streaming query of ``test_packed``'s transport tests and its input: nulls, NaN, longs
beyond 2^53, ``order_by`` ties and a late event, micro-batch by micro-batch."""

from __future__ import annotations

import json
import os
from typing import Any

_START = 1_700_000_000_000
BIG = 2**60 + 7  # not a double: pandas' float64 for a nullable long would round it


def rows(batch: int) -> list[dict[str, Any]]:
    """Micro-batch ``batch``'s events: nulls, NaN, longs beyond 2^53, ``o`` (order_by) with
    nulls and ties; batch 2 has a late event."""
    out = []
    for i in range(30):
        out.append({"key": f"k{(i * 7 + batch) % 4}", "ts": _START + batch * 600_000 + i * 17_000,
                    "v": None if i % 11 == 3 else BIG + i * batch,
                    "x": "NaN" if i % 9 == 4 else (None if i % 9 == 5 else i * 0.1 + batch),
                    "o": (30 - i) % 7 if i % 13 else None})
    if batch == 2:  # late: before the watermark
        out.append({"key": "k1", "ts": _START, "v": 5, "x": 1.0, "o": 1})
    return out


def write(src: str, batch: int) -> None:
    """Micro-batch ``batch`` as a JSON-lines file (modification times in batch order)."""
    os.makedirs(src, exist_ok=True)
    path = os.path.join(src, f"b{batch}.json")
    with open(path, "w", encoding="utf-8") as f:
        f.writelines(json.dumps(r) + "\n" for r in rows(batch))
    os.utime(path, (1_000_000 + batch, 1_000_000 + batch))


def run(spark: Any, src: str, ckpt: str, out: str) -> None:
    """One ``availableNow`` run of the query over ``src`` into Parquet ``out``."""
    from spark_adapter import over, sliding, sliding_aggregate

    df = (spark.readStream.schema("key string, ts long, v long, x double, o int")
          .option("maxFilesPerTrigger", 1).option("allowNonNumericNumbers", "true").json(src))
    res = sliding_aggregate(
        df, key="key", time="ts", window=[sliding("20 minutes", "5 minutes"), over("10 minutes")],
        aggregations={"mx": {"fn": "max", "field": "v"}, "n": {"fn": "count"},
                      "m": {"fn": "mean", "field": "x"}, "f": {"fn": "first", "field": "v"},
                      "l": {"fn": "last", "field": "x"}},
        watermark="1 minute", order_by="o", late_rows="include", key_buckets=4)
    q = (res.writeStream.format("parquet").option("path", out)
         .option("checkpointLocation", ckpt).outputMode("append")
         .trigger(availableNow=True).start())
    q.awaitTermination()
    assert q.exception() is None

