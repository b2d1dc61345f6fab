"""The contract every window structure implements: :class:`Window`.

A window holds entries ``(time, lifted value)`` ordered by time (ties in insertion order) and
answers ``query() = lower(v_oldest (+) ... (+) v_youngest)``. Subclasses implement the
structure; this base class owns argument checking, the generic bulk operations and the
broken state of a window whose update was interrupted half-way (:meth:`Window._fail`), so
that a failed call never leaves a half-changed structure that still answers.

Subclass checklist (see ``docs/algorithms.md``):

* set the class attributes ``name``, ``in_order``, ``needs_invertible``, ``needs_selective``,
  ``range_queries``, ``coalesces_equal_times`` and ``complexity``;
* implement ``_insert_lifted``, ``evict``, ``query``, ``__len__``, ``oldest``, ``youngest`` and
  ``items``; override ``_bulk_insert_lifted`` / ``bulk_evict`` / ``query_since`` where the
  algorithm does better than the generic loop;
* exception safety (``docs/algorithms.md``, "Errors and exception safety"): when a user
  function (or any ``BaseException``) interrupts an operation, either nothing has changed yet
  (strong guarantee: call user functions before the first write where the algorithm allows
  it) or the handler calls :meth:`Window._fail` and re-raises, which makes every later call
  raise :class:`~swag_core.errors.BrokenWindowError`. ``_insert_lifted`` and ``evict`` must
  give one of the two themselves (the generic bulk loops rely on it). Queries must never
  leave a wrong answer behind (caches are written only after the value is computed).
"""

from __future__ import annotations

import inspect
import operator
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator
from typing import Any, ClassVar

from swag_core.aggregation import Aggregation
from swag_core.errors import (
    AlgorithmMismatchError,
    BrokenWindowError,
    EmptyWindowError,
    InvalidTimeError,
    OutOfOrderError,
    UnsupportedQueryError,
)


def as_time(time: Any) -> int:
    """``time`` as an ``int`` (integer milliseconds), or :class:`InvalidTimeError`."""
    if type(time) is int:
        return time
    if time is None or isinstance(time, (bool, float)):
        raise InvalidTimeError(f"event time must be an integer number of milliseconds, "
                               f"got {time!r} ({type(time).__name__})")
    try:
        return operator.index(time)  # numpy integers and other int-likes
    except TypeError:
        raise InvalidTimeError(f"event time must be an integer number of milliseconds, "
                               f"got {time!r} ({type(time).__name__})") from None


class Window(ABC):
    """A sliding-window aggregator over ``(time, value)`` entries.

    Args:
        aggregation: the :class:`~swag_core.Aggregation` to maintain.
    """

    #: Registry name, as in ``ALGORITHMS``.
    name: ClassVar[str]
    #: True when inserts older than ``youngest()`` are refused with :class:`OutOfOrderError`.
    in_order: ClassVar[bool] = True
    #: True when the aggregation must have ``subtract``.
    needs_invertible: ClassVar[bool] = False
    #: True when the aggregation must be ``selective``.
    needs_selective: ClassVar[bool] = False
    #: True when ``query_since`` is supported (its cost is part of ``complexity``).
    range_queries: ClassVar[bool] = False
    #: True when entries with equal times are merged into one (``existing (+) new``), so that
    #: ``len()`` counts distinct times and ``evict()`` removes every entry of the oldest time.
    coalesces_equal_times: ClassVar[bool] = False
    #: Human-readable cost summary, shown in docs and error messages.
    complexity: ClassVar[str] = ""

    def __init__(self, aggregation: Aggregation) -> None:
        if not isinstance(aggregation, Aggregation):
            raise TypeError(f"{type(self).__name__} needs a swag_core.Aggregation, "
                            f"got {aggregation!r}")
        reason = type(self).mismatch(aggregation)
        if reason is not None:
            raise AlgorithmMismatchError(reason)
        self.aggregation = aggregation
        self._combine = aggregation.combine
        self._identity = aggregation.identity
        self._lift = aggregation.lift_fn
        self._lower = aggregation.lower_fn

    # ------------------------------------------------------------------ requirements
    @classmethod
    def mismatch(cls, aggregation: Aggregation) -> str | None:
        """Why ``aggregation`` cannot be used with this algorithm, or ``None`` if it can."""
        if cls.needs_invertible and not aggregation.invertible:
            return (f"{cls.name!r} needs an invertible aggregation (one with subtract=...), "
                    f"but {aggregation.name!r} has {aggregation.properties()}")
        if cls.needs_selective and not aggregation.selective:
            return (f"{cls.name!r} needs a selective aggregation (combine returns one of its "
                    f"arguments), but {aggregation.name!r} has {aggregation.properties()}")
        return None

    # ------------------------------------------------------------------ abstract core
    @abstractmethod
    def _insert_lifted(self, time: int, value: Any) -> None:
        """Append an already-lifted value; ``time`` is valid and, if ``in_order``, not older
        than ``youngest()``."""

    @abstractmethod
    def evict(self) -> None:
        """Remove the oldest entry; :class:`~swag_core.errors.EmptyWindowError` if empty."""

    @abstractmethod
    def query(self) -> Any:
        """``lower(v_oldest (+) ... (+) v_youngest)``; ``lower(identity)`` when empty."""

    @abstractmethod
    def __len__(self) -> int:
        """Number of entries."""

    @abstractmethod
    def oldest(self) -> int:
        """Time of the oldest entry; :class:`~swag_core.errors.EmptyWindowError` if empty."""

    @abstractmethod
    def youngest(self) -> int:
        """Time of the youngest entry; :class:`~swag_core.errors.EmptyWindowError` if empty."""

    @abstractmethod
    def items(self) -> Iterator[tuple[int, Any]]:
        """``(time, lifted value)`` pairs, oldest first (for snapshots, tests and debugging)."""

    # ------------------------------------------------------------------ public operations
    def insert(self, time: int, value: Any) -> None:
        """Insert raw ``value`` at ``time``; ``lift`` is applied here.

        Raises :class:`OutOfOrderError` (a ``ValueError``) for an in-order algorithm given a
        time older than ``youngest()``. After any error the window is unchanged, or, when a
        ``combine`` interrupted the insert half-way (see ``docs/algorithms.md``, "Errors and
        exception safety"), it refuses every later call with
        :class:`~swag_core.errors.BrokenWindowError`; it never gives a wrong answer.
        """
        if type(time) is not int:
            time = as_time(time)
        if self.in_order and len(self) and time < self.youngest():
            raise self._out_of_order(time, self.youngest())
        self._insert_lifted(time, self._lift(value))

    def _empty_evict(self) -> EmptyWindowError:
        """The error for ``evict()`` on an empty window (one message for every algorithm)."""
        return EmptyWindowError(f"evict() on an empty {self.name!r} window")

    def _out_of_order(self, time: int, youngest: int) -> OutOfOrderError:
        """The error for an insert at ``time`` older than the ``youngest`` entry (for the
        faster ``insert`` overrides of in-order algorithms, so the message is written once)."""
        return OutOfOrderError(
            f"{self.name!r} accepts in-order inserts only: time {time} is older than the "
            f"youngest entry {youngest}; use 'fiba' or 'reactive' for out-of-order data")

    def bulk_insert(self, pairs: Iterable[tuple[int, Any]]) -> None:
        """Insert many ``(time, value)`` pairs at once.

        In-order algorithms need the batch sorted by time and not older than ``youngest()``;
        out-of-order algorithms accept any order (sorted stably here, so equal times keep
        their order in the batch). All times and lifts are checked before anything changes.
        """
        batch: list[tuple[int, Any]] = []
        lift = self._lift
        for time, value in pairs:
            if type(time) is not int:
                time = as_time(time)
            batch.append((time, lift(value)))
        if not batch:
            return
        if self.in_order:
            previous = self.youngest() if len(self) else batch[0][0]
            for time, _ in batch:
                if time < previous:
                    raise OutOfOrderError(
                        f"{self.name!r} needs bulk_insert sorted by time and not older than "
                        f"the youngest entry: time {time} follows {previous}; nothing inserted")
                previous = time
        else:
            batch.sort(key=_time_of)
        try:
            self._bulk_insert_lifted(batch)
        except BaseException as error:
            self._name_failure("bulk_insert", error)
            raise

    def _bulk_insert_lifted(self, batch: list[tuple[int, Any]]) -> None:
        """Insert a checked, time-sorted batch of lifted values (override to do better).

        An interruption after the first entry went in leaves the batch half inserted: the
        window is then broken (:meth:`_fail`)."""
        insert = self._insert_lifted
        done = 0
        try:
            for done, (time, value) in enumerate(batch):  # noqa: B007 (read by the handler)
                insert(time, value)
        except BaseException as error:
            if done:
                self._fail("bulk_insert", error)
            raise

    def bulk_evict(self, time: int) -> int:
        """Remove every entry with ``entry.time <= time``; returns how many were removed."""
        if type(time) is not int:
            time = as_time(time)
        removed = 0
        try:
            while len(self) and self.oldest() <= time:
                self.evict()
                removed += 1
        except BaseException as error:
            if removed:
                self._fail("bulk_evict", error)
            raise
        return removed

    def query_since(self, time: int) -> Any:
        """Lowered aggregate of the entries with ``entry.time >= time`` (range sharing).

        Supported by the algorithms with ``range_queries = True``; others raise
        :class:`~swag_core.errors.UnsupportedQueryError`.
        """
        raise UnsupportedQueryError(
            f"{self.name!r} cannot answer query_since; use one with range_queries = True, "
            f"e.g. 'fiba' or 'flatfat' (swag_core.range_query_algorithms() lists them all)")

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.aggregation.name}, {len(self)} entries)"

    # ------------------------------------------------------------------ exception safety
    #: True on the broken variant of a class (see :meth:`_fail`).
    _broken: ClassVar[bool] = False
    #: On a broken window only: the interrupted operation and its exception.
    _broken_by: tuple[str, BaseException]

    def _name_failure(self, operation: str, error: BaseException) -> None:
        """If ``error`` broke the window inside ``operation`` (an inner insert or evict),
        make the broken window's message name ``operation``, the call the user made."""
        if self._broken:
            self._fail(operation, error)

    def _fail(self, operation: str, error: BaseException) -> None:
        """Mark the window broken because ``error`` interrupted ``operation`` after it had
        started changing the structure; the caller re-raises ``error``.

        The instance's class becomes a broken variant whose every public method raises
        :class:`BrokenWindowError` naming ``operation`` and ``error`` (nothing to check on the
        hot path), and its state is dropped, so that even a bound method taken before the
        failure cannot read it (the broken class's ``__getattr__`` raises the same error).
        Called again by an enclosing operation for the same error, it renames the operation
        to the outer one: the message names the call the user made.
        """
        cls = type(self)
        if cls._broken:
            previous = self.__dict__.get("_broken_by")
            if previous is not None and previous[1] is error:
                self._broken_by = (operation, error)
            return
        self.__dict__.clear()
        self._broken_by = (operation, error)
        self.__class__ = _broken_class(cls)


def _refusal(self: Any) -> BrokenWindowError:
    """The error every call on a broken window raises (``self._broken_by`` names the call
    that broke it and its exception, which becomes the ``__cause__``)."""
    operation, error = self._broken_by
    refusal = BrokenWindowError(
        f"this {self.name!r} window is broken: {operation}() was interrupted by {error!r} "
        f"after it had started changing the structure, so its state is lost; build a new "
        f"window (e.g. from the source events)")
    refusal.__cause__ = error
    return refusal


def _refuse(self: Any, *args: Any, **kwargs: Any) -> Any:
    """Every public method and property of a broken window, ``len()`` and pickling."""
    raise self._refusal()


def _refuse_attribute(self: Any, attribute: str) -> Any:
    """``__getattr__`` of a broken window: only reached for the attributes its dropped state
    held, e.g. from a bound method taken before the failure."""
    if attribute.startswith("__"):
        raise AttributeError(attribute)    # protocol probes (copy, numpy, ...) stay normal
    raise self._refusal()


def _broken_repr(self: Any) -> str:
    operation, error = self._broken_by
    return f"<broken {self.name!r} window: {operation}() interrupted by {error!r}>"


_BROKEN_CLASSES: dict[type, type] = {}


def _broken_class(cls: type) -> type:
    """The broken variant of window class ``cls`` (made once per class): a subclass adding
    no slots (so ``__class__`` can be swapped), so ``isinstance`` and ``name`` still hold,
    whose public methods and properties, ``len()`` and pickling all raise
    :class:`BrokenWindowError`."""
    broken = _BROKEN_CLASSES.get(cls)
    if broken is None:
        namespace: dict[str, Any] = {
            "__doc__": f"A broken {cls.__name__}: every call raises BrokenWindowError.",
            "_broken": True, "_refusal": _refusal, "__getattr__": _refuse_attribute,
            "__len__": _refuse, "__reduce_ex__": _refuse, "__repr__": _broken_repr}
        for attribute in dir(cls):
            if attribute.startswith("_"):
                continue
            member = inspect.getattr_static(cls, attribute)
            if isinstance(member, property):
                namespace[attribute] = property(_refuse)
            elif inspect.isfunction(member):
                namespace[attribute] = _refuse
        broken = type(cls)(f"Broken{cls.__name__}", (cls,), namespace)
        _BROKEN_CLASSES[cls] = broken
    return broken


def _time_of(pair: tuple[int, Any]) -> int:
    return pair[0]

