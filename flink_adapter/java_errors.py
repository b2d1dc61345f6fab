"""swag's own error, not PyFlink's Java trace, when a job fails on a bad event.

When the process function raises (a null time, a value an aggregation cannot take), Flink
fails the job and PyFlink raises ``Py4JJavaError`` from ``execute``/``hasNext``: a Java
trace of 200 lines or more, with the Python error as one ``Caused by`` deep inside it (in
process mode the text of the worker's traceback, ``adapters.errors.BadEventError: ...``; in
thread mode PEMJA's ``PythonException``, ``<class 'adapters.errors.BadEventError'>: ...``).

:func:`swag_error_of` walks the Java cause chain and rebuilds the swag error it finds in
Python, with its own message; the Java error stays available as its ``flink_error``
attribute. :func:`install` hooks it into Py4J the way PyFlink itself turns Java table
exceptions into Python ones (``pyflink.util.exceptions.install_exception_handler``: every
Java call's result passes through ``py4j.java_gateway.get_return_value``), so that
``execute()``, ``execute_and_collect()`` and a table's ``collect()`` raise swag's error
directly; :func:`flink_adapter.sliding_aggregate` installs it.
"""

from __future__ import annotations

import importlib
import re
from typing import Any

from adapters import QuerySpecError
from swag_core.errors import SwagError

#: A swag exception as Python prints it, in a traceback or in PEMJA's message.
_SWAG_ERROR = re.compile(
    r"(?:<class ')?\b((?:adapters|swag_core)(?:\.\w+)*\.(\w+))(?:'>)?: ([^\n]*)")
#: How many causes to look through (a job failure nests about ten).
_MAX_CAUSES = 50


def install() -> None:
    """Raise swag's error in place of a ``Py4JJavaError`` that carries one, for every call
    into Java from now on (idempotent; other errors pass unchanged)."""
    import py4j.java_gateway as gateway  # type: ignore[import-not-found]
    from py4j.protocol import Py4JJavaError  # type: ignore[import-not-found]

    current = gateway.get_return_value
    if getattr(current, "swag_errors", False):
        return

    def get_return_value(*args: Any, **kwargs: Any) -> Any:
        try:
            return current(*args, **kwargs)
        except Py4JJavaError as error:
            swag = swag_error_of(error)
            if swag is None:
                raise
            raise swag from None

    get_return_value.swag_errors = True  # type: ignore[attr-defined]
    gateway.get_return_value = get_return_value


def swag_error_of(error: Any) -> SwagError | None:
    """The swag error in a ``Py4JJavaError``'s Java cause chain, rebuilt in Python (with
    ``flink_error``: ``error``), or ``None``."""
    cause = getattr(error, "java_exception", None)
    for _ in range(_MAX_CAUSES):
        if cause is None:
            return None
        found = _rebuilt(str(cause.getMessage() or ""))
        if found is not None:
            found.flink_error = error  # type: ignore[attr-defined]
            return found
        cause = cause.getCause()
    return None


def _rebuilt(message: str) -> SwagError | None:
    """The last swag exception printed in ``message``, as a Python exception."""
    matches = list(_SWAG_ERROR.finditer(message))
    for match in reversed(matches):
        qualified, name, text = match.groups()
        try:
            cls = getattr(importlib.import_module(qualified.rsplit(".", 1)[0]), name, None)
        except ImportError:
            continue
        if not (isinstance(cls, type) and issubclass(cls, SwagError)):
            continue
        text = f"{text} (raised in the Flink job; its Java error is this error's flink_error)"
        if issubclass(cls, QuerySpecError):
            return cls("", text)
        try:
            return cls(text)
        except TypeError:
            return SwagError(f"{name}: {text}")
    return None


__all__ = ["install", "swag_error_of"]
