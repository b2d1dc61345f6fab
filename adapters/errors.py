"""Exceptions raised by the ``adapters`` layer.

Like :mod:`swag_core.errors`, each one subclasses :class:`swag_core.SwagError` *and* the
built-in a Python user would catch (``ValueError``).
"""

from __future__ import annotations

from typing import Any

from swag_core.errors import SwagError


class QuerySpecError(SwagError, ValueError):
    """A query, window or aggregation spec is malformed.

    The message starts with the path of the bad field, e.g. ``windows[1].slide: ...``.
    """

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}" if path else message)
        #: Dotted path of the offending field (``"windows[1].slide"``, ``"aggregations.m.fn"``).
        self.path = path


class BadEventError(SwagError, ValueError):
    """An input event cannot be processed: null or unparsable time, a missing field, or a value
    an aggregation (or the state codec) cannot take.

    Raised before anything changes: the key's state and the driver's cache are left as they
    were, for every key of the call.
    """

    def __init__(self, message: str, *, key: Any = None, field: str | None = None,
                 time: Any = None) -> None:
        super().__init__(message)
        #: The event's key.
        self.key = key
        #: The offending field: the time field's name, or an event field such as ``"v"``.
        self.field = field
        #: The event's time as given (possibly the bad value itself).
        self.time = time


class StateError(SwagError, ValueError):
    """Stored state cannot be used: unknown codec version, corrupt bytes, or state written by a
    query with different windows or lateness."""


class CodecError(SwagError, ValueError):
    """A value cannot be encoded into (or decoded from) the state codec."""
