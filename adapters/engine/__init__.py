"""Glue shared by the engine adapters (Spark, Beam, Flink), so each engine's package only
translates its own types and calls:

* :mod:`~adapters.engine.event_time`: the ``time=`` argument (field or function) and exact
  ``datetime`` -> ms;
* :mod:`~adapters.engine.presliced`: a query rewritten to run over per-slice partial
  aggregates that an engine computes natively (Spark batch pre-slicing).
"""
