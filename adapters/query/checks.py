"""Checks of query spec values shared by the spec modules."""

from __future__ import annotations

from typing import Any

from adapters.errors import QuerySpecError


def check_int(path: str, value: Any, minimum: int | None = None) -> int:
    """``value`` as an int (an integral float is taken), at least ``minimum``; else
    :class:`QuerySpecError` naming ``path``."""
    if type(value) is bool or not isinstance(value, int):
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        else:
            raise QuerySpecError(path, f"must be an integer (milliseconds or a count), "
                                       f"got {value!r}")
    if minimum is not None and value < minimum:
        raise QuerySpecError(path, f"must be >= {minimum}, got {value!r}")
    return int(value)
