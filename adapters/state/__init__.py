"""Where a key's state lives between calls, and its bytes.

* :mod:`~adapters.state.backend`: the :class:`KeyState` protocol engine adapters implement
  over their managed state (metadata blob + event log), and the in-memory reference backends;
* :mod:`~adapters.state.codec`: the versioned codec of everything the driver persists
  (metadata, log entries, values). No pickle: decoding never executes code;
* :mod:`~adapters.state.segments`: packed segments of several log entries (Spark's log);
* :mod:`~adapters.state.buckets`: the bucket blob of Spark streaming (each key's id,
  metadata, timer and log trim bound in one ``ValueState``);
* :mod:`~adapters.state.pairs`: the KVS layout's pair map (pages, marks) and the local parts
  it keeps in the metadata.

Each persisted format has its owner here, exactly one version (any other is refused naming
the format, the version found and the one supported) and golden samples (``tests/golden``);
``docs/adapters.md`` section 5 lists them.
"""

from adapters.state.backend import (
    KeyState,
    LogEntry,
    MemoryKeyState,
    MemoryStateBackend,
    StateBackend,
    TransientKeyState,
)

__all__ = ["KeyState", "LogEntry", "MemoryKeyState", "MemoryStateBackend", "StateBackend",
           "TransientKeyState"]
