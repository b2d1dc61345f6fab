"""The packed transport of the streaming bucket layout, the one way rows go into and out of
its Python processor: many rows per row, typed.

PySpark 4.3's ``transformWithStateInPandas`` worker turns every input row into a pandas
namedtuple (``itertuples()``) and rebuilds a frame from them before the processor sees it:
microseconds of Python per row. So a stateless ``mapInArrow`` stage before the operator
packs each Arrow record batch's rows *per bucket into one row*: ``swag_b int`` (the bucket,
computed by the JVM as before) and ``swag_p binary``, an Arrow IPC stream of that bucket's
rows with their exact types (``swag_k`` key JSON, ``swag_t``, the typed value columns
``swag_v<i>``, ``swag_v`` JSON for arrays and structs, ``swag_o``; pre-sliced: ``swag_k``,
``swag_t`` the slice start and the typed partial columns). The processor decodes
the streams (the packing and both stages: :mod:`adapters.engine.packed`).

The way out needs no packing: the worker converts the frames the processor returns with
Arrow column by column, so a bucket's call returns its output rows in
:func:`spark_adapter._runtime.batch_schema`'s typed columns (built as in batch mode) as a
pandas frame of Arrow-backed columns, taken back exactly as they are
(:func:`adapters.engine.packed.arrow_frame`). (Returning them as one packed row, unpacked by
a ``mapInArrow`` after the operator, cost that stage's Python worker on every task.)
"""

from adapters.engine.packed import PACKED

#: Spark's schema of the packed rows into the operator
PACKED_IN_SCHEMA = f"swag_b int, {PACKED} binary"
