"""Many rows in one: an Arrow record batch packed per value of a grouping column into one
Arrow IPC stream per group, and back. For an engine whose Python operator costs time per
row whatever the row holds (Spark's ``transformWithStateInPandas`` builds a pandas namedtuple
per input row): one row per group and batch crosses instead, with the rows' exact Arrow
types inside (no 64-bit integer rounded, null and NaN kept apart)."""

from __future__ import annotations

from collections.abc import Iterable
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


__all__ = ["PACKED", "from_ipc", "pack_batch", "to_ipc", "unpack"]
