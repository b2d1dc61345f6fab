"""swag_core: exact sliding-window aggregation structures, engine-free.

>>> from swag_core import make_window
>>> from swag_core.aggregations import Max
>>> w = make_window("two_stacks_lite", Max())
>>> w.insert(1_000, 5); w.insert(2_000, 3); w.query()
5
>>> w.evict(); w.query()
3
"""

from swag_core.aggregation import Aggregation, product
from swag_core.errors import (
    AlgorithmMismatchError,
    BrokenWindowError,
    EmptyWindowError,
    EntryNotFoundError,
    InvalidTimeError,
    InvalidValueError,
    OutOfOrderError,
    PolicyError,
    SwagError,
    UnknownAlgorithmError,
    UnsupportedQueryError,
)
from swag_core.registry import ALGORITHMS, algorithms_for, make_window, range_query_algorithms
from swag_core.window import Window

__all__ = [
    "ALGORITHMS",
    "Aggregation",
    "AlgorithmMismatchError",
    "BrokenWindowError",
    "EmptyWindowError",
    "EntryNotFoundError",
    "InvalidTimeError",
    "InvalidValueError",
    "OutOfOrderError",
    "PolicyError",
    "SwagError",
    "UnknownAlgorithmError",
    "UnsupportedQueryError",
    "Window",
    "algorithms_for",
    "make_window",
    "product",
    "range_query_algorithms",
]
__version__ = "0.1.0"
