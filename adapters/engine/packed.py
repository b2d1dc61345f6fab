"""Many rows in one: an Arrow record batch packed per value of a grouping column into one
Arrow IPC stream per group, and back. For an engine whose Python operator costs time per
row whatever the row holds (Spark's ``transformWithStateInPandas`` builds a pandas namedtuple
per input row): one row per group and batch crosses instead, with the rows' exact Arrow
types inside (no 64-bit integer rounded, null and NaN kept apart). The stages around such an
operator (:func:`make_packer`) maps iterators of Arrow record batches (Spark's
``mapInArrow``); the operator reads pandas frames of packed rows (:func:`unpack_frames`) and
returns its output as a pandas frame of Arrow-backed columns (:func:`arrow_frame`), which
the engine's conversion back to Arrow takes as they are. Spark's use:
``spark_adapter._packed``."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

#: the column of the packed rows holding the IPC stream
PACKED = "swag_p"


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


def pack_batch(batch: Any, group: str, large: bool = False) -> Any:
    """``batch`` as one row per value of its int column ``group``: that value and
    :data:`PACKED`, an IPC stream of the group's other columns (rows in their order within
    the group); ``None`` for an empty batch. ``large``: the binary column is
    ``large_binary``."""
    import numpy as np
    import pyarrow as pa

    n = batch.num_rows
    if n == 0:
        return None
    groups = batch.column(group).to_numpy(zero_copy_only=False)
    order = np.argsort(groups, kind="stable")  # stable: arrival order within a group
    groups = groups[order]
    starts = np.concatenate(([0], np.flatnonzero(groups[1:] != groups[:-1]) + 1))
    ends = np.append(starts[1:], n)
    body = batch.drop_columns([group]).take(pa.array(order))
    blobs = [to_ipc(body.slice(s, e - s)) for s, e in zip(starts.tolist(), ends.tolist())]
    binary = pa.large_binary() if large else pa.binary()
    return pa.RecordBatch.from_arrays(
        [pa.array(groups[starts], type=pa.int32()), pa.array(blobs, type=binary)],
        names=[group, PACKED])


def unpack(blobs: Iterable[bytes]) -> Any:
    """One Arrow table of the packed rows' IPC streams (``None`` if there are none)."""
    import pyarrow as pa

    tables = [from_ipc(blob) for blob in blobs]
    if not tables:
        return None
    return tables[0] if len(tables) == 1 else pa.concat_tables(tables)


def make_packer(group: str, large: bool) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """The stage before the operator: each record batch packed per value of column
    ``group`` (:func:`pack_batch`); ``large``: the engine's Arrow binary type is
    ``large_binary`` (Spark's ``spark.sql.execution.arrow.useLargeVarTypes``)."""

    def swag_pack(batches: Iterator[Any]) -> Iterator[Any]:
        for batch in batches:
            packed = pack_batch(batch, group, large)
            if packed is not None:
                yield packed

    return swag_pack


def unpack_frames(frames: Any) -> Any:
    """One Arrow table of the packed rows of an operator call's pandas frames (``None`` if
    none)."""
    return unpack(blob for pdf in frames for blob in pdf[PACKED].tolist())


def arrow_frame(table: Any) -> Any:
    """An operator call's output table as the pandas frame it returns: each column Arrow-backed
    (``pandas.ArrowDtype``, no copy into NumPy), so the engine's pandas-to-Arrow conversion
    (PySpark's ``PandasToArrowConversion``: ``__arrow_array__``, no null mask) takes the
    Arrow arrays back as they are, with their exact values (nulls, NaN, -0.0, 64-bit
    integers), in one row per output row, without a stage after the operator."""
    import pandas as pd

    return table.to_pandas(types_mapper=pd.ArrowDtype)


__all__ = ["PACKED", "arrow_frame", "from_ipc", "make_packer", "pack_batch",
           "to_ipc", "unpack", "unpack_frames"]
