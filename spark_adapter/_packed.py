"""The packed transport of the streaming bucket layout: many events per row, typed.

PySpark 4.3's ``transformWithStateInPandas`` worker turns every input row into a pandas
namedtuple (``itertuples()``) and rebuilds a frame from them before the processor sees it:
microseconds of Python per row. So a stateless ``mapInArrow`` stage before the operator
packs each Arrow record batch's rows *per bucket into one row*: ``swag_b int`` (the bucket,
computed by the JVM as before) and ``swag_p binary``, an Arrow IPC stream of that bucket's
rows with their exact types (``swag_k`` key JSON, ``swag_t``, the typed value columns
``swag_v<i>``, ``swag_v`` JSON for arrays and structs, ``swag_o``). The processor decodes
the streams (:func:`unpack_frames`; the packing itself: :mod:`adapters.engine.packed`).

The way out is the same in reverse: a bucket's call returns its whole output as one row
``swag_p`` (an IPC stream of :func:`spark_adapter._runtime.batch_schema`'s typed columns,
built as in batch mode), and a ``mapInArrow`` after the operator unpacks it
(:func:`make_unpacker`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from adapters.engine.packed import PACKED, from_ipc, pack_batch, to_ipc, unpack

PACKED_IN_SCHEMA = f"swag_b int, {PACKED} binary"
PACKED_OUT_SCHEMA = f"{PACKED} binary"


def make_packer(bucket: str, large: bool) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """The ``mapInArrow`` function packing each record batch per value of column ``bucket``
    (:func:`adapters.engine.packed.pack_batch`); ``large``: Spark's Arrow binary type is
    ``large_binary`` (``spark.sql.execution.arrow.useLargeVarTypes``)."""

    def swag_pack(batches: Iterator[Any]) -> Iterator[Any]:
        for batch in batches:
            packed = pack_batch(batch, bucket, large)
            if packed is not None:
                yield packed

    return swag_pack


def unpack_frames(frames: Any) -> Any:
    """One Arrow table of the packed rows of a call's pandas frames (``None`` if none)."""
    return unpack(blob for pdf in frames for blob in pdf[PACKED].tolist())


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
