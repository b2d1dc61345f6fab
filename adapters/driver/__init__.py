"""The per-key path: :class:`WindowDriver` and what it is made of.

* :mod:`~adapters.driver.window_driver`: the driver (engines call ``process`` /
  ``advance_watermark`` per key, or ``process_batch`` / ``advance_keys`` for many keys);
* :mod:`~adapters.driver.intake`: validation, lifting and encoding of a call's events;
* :mod:`~adapters.driver.kernels`: built-in aggregations folded over runs with C builtins;
* :mod:`~adapters.driver.key_runtime`: the cached in-memory runtime of one key (pending
  buffer, lane states), rebuilt from the engine's state on a cache miss;
* :mod:`~adapters.driver.key_store`: the seam the per-key and the cross-key paths share
  (``driver.key_store``): loading, caching and rebuilding a key's runtime, its state writes,
  its timer, and release / emit / evict / log trimming;
* lanes, one structure per key each: :mod:`~adapters.driver.time_lane` (sliding, tumbling and
  OVER windows over time slices) and :mod:`~adapters.driver.position_lanes` (count and policy
  windows, one entry per event);
* :mod:`~adapters.driver.selection`: which ``swag_core`` structure a lane uses;
* :mod:`~adapters.driver.results`: what driver calls return.
"""

from adapters.driver.key_store import KeyStore
from adapters.driver.results import KeyInfo, LateEvent, Output
from adapters.driver.window_driver import WindowDriver

__all__ = ["KeyInfo", "KeyStore", "LateEvent", "Output", "WindowDriver"]
