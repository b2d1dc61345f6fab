"""The packed transport of the streaming bucket layout: many events per row, typed.

PySpark 4.3's ``transformWithStateInPandas`` worker turns every input row into a pandas
namedtuple (``itertuples()``) and rebuilds a frame from them before the processor sees it:
microseconds of Python per row. So a stateless ``mapInArrow`` stage before the operator
packs each Arrow record batch's rows *per bucket into one row*: ``swag_b int`` (the bucket,
computed by the JVM as before) and ``swag_p binary``, an Arrow IPC stream of that bucket's
rows with their exact types (``swag_k`` key JSON, ``swag_t``, the typed value columns
``swag_v<i>``, ``swag_v`` JSON for arrays and structs, ``swag_o``). The processor decodes
the streams with pyarrow (:func:`unpack_frames`); nothing on the way rounds a 64-bit
integer or confuses null with NaN (pandas would, for a nullable ``long`` column).

The way out is the same in reverse: a bucket's call returns its whole output as one row
``swag_p`` (an IPC stream of :func:`spark_adapter._runtime.batch_schema`'s typed columns,
built as in batch mode), and a ``mapInArrow`` after the operator unpacks it
(:func:`make_unpacker`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

#: The packed rows: the bucket (grouping column) and an Arrow IPC stream of its rows.
PACKED = "swag_p"
PACKED_IN_SCHEMA = "swag_b int, swag_p binary"
PACKED_OUT_SCHEMA = "swag_p binary"


def to_ipc(table: Any) -> bytes:
    """``table`` (an Arrow table or record batch) as the bytes of one IPC stream."""
    import pyarrow as pa

    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write(table)
    return sink.getvalue().to_pybytes()


def from_ipc(blob: bytes) -> Any:
    """The Arrow table of an IPC stream made by :func:`to_ipc`."""
    import pyarrow as pa

    return pa.ipc.open_stream(blob).read_all()


def make_packer(bucket: str, large: bool) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """The ``mapInArrow`` function packing each record batch per value of column ``bucket``
    (rows in their order within a bucket); ``large``: Spark's Arrow binary type is
    ``large_binary`` (``spark.sql.execution.arrow.useLargeVarTypes``)."""

    def swag_pack(batches: Iterator[Any]) -> Iterator[Any]:
        import numpy as np
        import pyarrow as pa

        binary = pa.large_binary() if large else pa.binary()
        for batch in batches:
            n = batch.num_rows
            if n == 0:
                continue
            b = batch.column(bucket).to_numpy(zero_copy_only=False)
            order = np.argsort(b, kind="stable")  # stable: arrival order within a bucket
            b = b[order]
            starts = np.concatenate(([0], np.flatnonzero(b[1:] != b[:-1]) + 1))
            ends = np.append(starts[1:], n)
            body = batch.drop_columns([bucket]).take(pa.array(order))
            blobs = [to_ipc(body.slice(s, e - s)) for s, e in zip(starts.tolist(), ends.tolist())]
            yield pa.RecordBatch.from_arrays(
                [pa.array(b[starts], type=pa.int32()), pa.array(blobs, type=binary)],
                names=[bucket, PACKED])

    return swag_pack


def unpack_frames(frames: Any) -> Any:
    """One Arrow table of the packed rows of a call's pandas frames (``None`` if none)."""
    import pyarrow as pa

    tables = [from_ipc(blob) for pdf in frames for blob in pdf[PACKED].tolist()]
    if not tables:
        return None
    return tables[0] if len(tables) == 1 else pa.concat_tables(tables)


def packed_frame(table: Any) -> Any:
    """A call's output table as the one-row pandas frame the operator returns."""
    import pandas as pd

    return pd.DataFrame({PACKED: [to_ipc(table)]})


def make_unpacker() -> Callable[[Iterator[Any]], Iterator[Any]]:
    """The ``mapInArrow`` function after the operator: each packed row's record batches."""

    def swag_unpack(batches: Iterator[Any]) -> Iterator[Any]:
        for batch in batches:
            for blob in batch.column(0).to_pylist():
                yield from from_ipc(blob).to_batches()

    return swag_unpack
