"""Glue shared by the engine adapters (Spark, Beam, Flink), so each engine's package only
translates its own types and calls:

* :mod:`~adapters.engine.event_time`: the ``time=`` argument (field or function) and exact
  ``datetime`` -> ms;
* :mod:`~adapters.engine.timers`: one live engine timer per key at the driver's next timer
  (which registrations to delete and make);
* :mod:`~adapters.engine.fields`: which fields of an event value a query reads (what an
  engine must ship to the driver);
* :mod:`~adapters.engine.rows`: the columns of the driver's output rows (for engines that
  declare an output schema);
* :mod:`~adapters.engine.presliced`: which queries run over per-slice partial aggregates
  that an engine computes natively, with which partials, the query rewritten over them and
  the partials checked into driver events (Spark batch and streaming pre-slicing);
* :mod:`~adapters.engine.over_kernel`: the OVER kernel's columns in and out
  (:meth:`adapters.WindowDriver.finish_columns`);
* :mod:`~adapters.engine.buckets`: many keys in one state group (one metadata blob, one
  tagged segment list, one map of the keys' KVS pairs) and a bucket's call into the driver,
  for engines whose state calls cost a round trip per element;
  :mod:`~adapters.engine.bucket_rows`: a bucket's input rows as driver events and its
  output as columns;
* :mod:`~adapters.engine.columns` and :mod:`~adapters.engine.packed`: driver events and rows
  as typed Arrow columns (JSON text for arrays and structs), and many such rows packed in
  one, for engines whose Python operator costs time per row;
* :mod:`~adapters.engine.worker`: the plan an engine pickles to its Python workers, and each
  worker process's drivers.

Which of these an engine uses for a query is the driver's decision: the engine describes
itself (:class:`adapters.EngineFacts`) and reads :meth:`adapters.WindowDriver.plan`.
"""
