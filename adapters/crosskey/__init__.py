"""The cross-key path: one call over the events of many keys, in NumPy.

* :mod:`~adapters.crosskey.columnar`: reads a micro-batch of ``(key, time, value)`` events into
  columns for the batch runtime (the compiled ``_batch_reader`` when built, else pure Python;
  same result);
* :mod:`~adapters.crosskey.batch_runtime`: releases, slices and emits the windows of all keys
  of a call at once, for the queries it covers; the driver falls back to the per-key path
  for the others. It is made of :mod:`~adapters.crosskey.sorted_rows` (the shared arrays of
  all keys), :mod:`~adapters.crosskey.partials` (slice partials as arrays),
  :mod:`~adapters.crosskey.key_loading` (a key rebuilt from its log or taken over from the
  per-key path), :mod:`~adapters.crosskey.call_events` (a call's late, released and new
  events, and their slices) and :mod:`~adapters.crosskey.emission` (the due windows' rows);
* :mod:`~adapters.crosskey.over_runtime`: the stateless OVER kernel (frames and aggregates of
  per-event windows over a finished batch).

:meth:`adapters.WindowDriver.process_batch` and :meth:`~adapters.WindowDriver.advance_keys`
are the batch runtime's entry points.
"""
