"""No cyclic garbage collection while an engine's worker runs one batch through the driver.

A key's batch allocates an object or more per event (values, records, rows), which triggers
collections that also walk every long-lived object of the worker, a large share of the Python
side's time. What the block drops is freed by reference counting as usual; cycles wait for the
next collection after it."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused() -> Iterator[None]:
    """No cyclic garbage collection inside the block (restored after it, if it was on)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


__all__ = ["gc_paused"]
