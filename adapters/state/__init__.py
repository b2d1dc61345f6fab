"""Where a key's state lives between calls, and its bytes.

* :mod:`~adapters.state.backend`: the :class:`KeyState` protocol engine adapters implement
  over their managed state (metadata blob + event log), and the in-memory reference backends;
* :mod:`~adapters.state.codec`: the versioned codec of everything persisted (metadata, log
  entries, values). No pickle: decoding never executes code.
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
