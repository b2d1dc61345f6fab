"""``ALGORITHMS`` (name -> window class), ``make_window`` and the look-ups over them.

Algorithm modules are imported on first use, so ``import swag_core`` stays cheap and an
engine worker only loads the structures it runs. Imports go one way: this catalog imports
the :class:`~swag_core.window.Window` contract, and the contract never the catalog.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from typing import Any

from swag_core.aggregation import Aggregation
from swag_core.errors import AlgorithmMismatchError, UnknownAlgorithmError
from swag_core.window import Window

# name -> (module under swag_core.algorithms, class name)
_TABLE: dict[str, tuple[str, str]] = {
    "recalc": ("recalc", "Recalc"),
    "soe": ("soe", "SubtractOnEvict"),
    "two_stacks": ("two_stacks", "TwoStacks"),
    "two_stacks_lite": ("two_stacks_lite", "TwoStacksLite"),
    "daba": ("daba", "Daba"),
    "daba_lite": ("daba_lite", "DabaLite"),
    "flatfat": ("flatfat", "FlatFat"),
    "flatfit": ("flatfit", "FlatFit"),
    "slickdeque": ("slickdeque", "SlickDeque"),
    "log_mta": ("mta", "LogMta"),
    "amta": ("mta", "Amta"),
    "fiba": ("fiba", "Fiba"),
    "reactive": ("reactive", "Reactive"),
}


class _Algorithms(Mapping[str, type[Window]]):
    """Read-only mapping of algorithm name to window class, importing classes lazily."""

    def __init__(self, table: dict[str, tuple[str, str]]) -> None:
        self._table = table
        self._loaded: dict[str, type[Window]] = {}

    def __getitem__(self, name: str) -> type[Window]:
        cls = self._loaded.get(name)
        if cls is None:
            if name not in self._table:
                raise KeyError(name)
            module, attr = self._table[name]
            cls = getattr(importlib.import_module(f"swag_core.algorithms.{module}"), attr)
            self._loaded[name] = cls
        return cls

    def __iter__(self) -> Iterator[str]:
        return iter(self._table)

    def __len__(self) -> int:
        return len(self._table)

    def __repr__(self) -> str:
        return f"ALGORITHMS({', '.join(self._table)})"


ALGORITHMS: Mapping[str, type[Window]] = _Algorithms(_TABLE)


def algorithms_for(aggregation: Aggregation) -> list[str]:
    """Names of the algorithms whose requirements ``aggregation`` meets."""
    return [name for name, cls in ALGORITHMS.items() if cls.mismatch(aggregation) is None]


def range_query_algorithms() -> list[str]:
    """Names of the algorithms that answer ``query_since`` (``range_queries = True``)."""
    return [name for name, cls in ALGORITHMS.items() if cls.range_queries]


def make_window(name: str, aggregation: Aggregation, **options: Any) -> Window:
    """A new, empty window of algorithm ``name`` maintaining ``aggregation``.

    ``options`` go to the algorithm (e.g. ``arity=`` for ``fiba``). Raises
    :class:`UnknownAlgorithmError` (a ``KeyError``) for an unknown name and
    :class:`AlgorithmMismatchError` (a ``ValueError``) when the aggregation lacks what the
    algorithm needs, naming the algorithms that would fit.
    """
    if name not in _TABLE:
        raise UnknownAlgorithmError(
            f"unknown window algorithm {name!r}; choose one of: {', '.join(_TABLE)}")
    if not isinstance(aggregation, Aggregation):
        raise TypeError(f"make_window({name!r}, ...) needs a swag_core.Aggregation, "
                        f"got {aggregation!r}")
    cls = ALGORITHMS[name]
    reason = cls.mismatch(aggregation)
    if reason is not None:
        raise AlgorithmMismatchError(
            f"{reason}. Algorithms that fit {aggregation.name!r}: "
            f"{', '.join(algorithms_for(aggregation))}")
    return cls(aggregation, **options)
