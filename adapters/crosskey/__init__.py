"""The cross-key path: one call over the events of many keys, in NumPy.

* :mod:`~adapters.crosskey.columnar`: reads a micro-batch of ``(key, time, value)`` events into
  per-key columns (the compiled ``_batch_reader`` when built, else pure Python; same result);
* :mod:`~adapters.crosskey.batch_runtime`: releases, slices and emits the windows of all keys
  of a call at once, for the queries it covers; the driver falls back to the per-key path
  for the others.

:meth:`adapters.WindowDriver.process_batch` and :meth:`~adapters.WindowDriver.advance_keys`
are the entry points; nothing here is called by engines directly.
"""
