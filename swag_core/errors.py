"""Exceptions raised by swag_core.

Every error subclasses :class:`SwagError` *and* the built-in exception a Python user would
expect (``ValueError`` for an out-of-order insert, ``IndexError`` for evicting from an empty
window, ...), so callers can catch either.
"""

from __future__ import annotations


class SwagError(Exception):
    """Base class of every error raised by swag."""


class OutOfOrderError(SwagError, ValueError):
    """An in-order window was given a time older than its youngest entry (nothing changed)."""


class EmptyWindowError(SwagError, IndexError):
    """``evict()``, ``oldest()`` or ``youngest()`` was called on an empty window."""


class AlgorithmMismatchError(SwagError, ValueError):
    """``make_window`` was asked for an algorithm whose needs the aggregation does not meet."""


class UnknownAlgorithmError(SwagError, KeyError):
    """``make_window`` was given a name that is not in ``ALGORITHMS``."""

    def __str__(self) -> str:  # KeyError quotes its message; keep it readable
        return str(self.args[0]) if self.args else ""


class EntryNotFoundError(SwagError, KeyError):
    """``remove(time)`` found no entry at exactly ``time`` (nothing changed)."""

    def __str__(self) -> str:  # KeyError quotes its message; keep it readable
        return str(self.args[0]) if self.args else ""


class InvalidTimeError(SwagError, TypeError):
    """A time was not an integer (event times are integer milliseconds in the core)."""


class InvalidValueError(SwagError, ValueError):
    """A value cannot be aggregated by the aggregation (e.g. NaN for ``Max``)."""


class UnsupportedQueryError(SwagError, NotImplementedError):
    """The algorithm cannot answer this kind of query (e.g. ``query_since`` on ``daba``)."""


class PolicyError(SwagError, ValueError):
    """A slide policy given to ``enforce`` is not prefix-monotone (detected; nothing evicted)."""


class BrokenWindowError(SwagError, RuntimeError):
    """The window is unusable: an earlier call was interrupted by an exception (from the
    user's ``lift``/``combine``/``lower``/``subtract``/policy, or a ``BaseException`` such as
    ``KeyboardInterrupt``) after it had started changing the structure.

    The interrupted call re-raised the original exception; every later call on the window
    raises this error, whose message names that call and the original exception, also
    available as ``__cause__``. Build a new window (for example from the source events).
    """
