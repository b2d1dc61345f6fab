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
* :mod:`~adapters.engine.presliced`: a query rewritten to run over per-slice partial
  aggregates that an engine computes natively (Spark batch pre-slicing).
"""
