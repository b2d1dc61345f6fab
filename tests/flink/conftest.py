"""One JVM per test session (PyFlink's gateway), a fresh execution environment per job, in
either Python execution mode (``MODES``: jobs of both modes share the JVM).

Outside ``.venvs/flink`` (no PyFlink) the Flink tests are not collected; without Java,
``make test-flink`` stops first with ``scripts/check_java.sh``'s message.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from typing import Any

import pytest

if importlib.util.find_spec("pyflink") is None:
    collect_ignore_glob = ["test_*.py"]


#: PyFlink's Python execution modes, in the order the parametrized tests run them.
MODES = ("process", "thread")


def make_env(streaming: bool = True, parallelism: int = 1,
             config: dict[str, str] | None = None, mode: str = "process") -> Any:
    """A local ``StreamExecutionEnvironment`` whose Python functions run in ``mode``
    (``"process"``: worker processes, ``"thread"``: embedded in the JVM) with this interpreter
    and a raised state cache: :func:`flink_adapter.local_environment`. Every call shares the
    session's one JVM."""
    from flink_adapter import local_environment

    return local_environment(mode, streaming=streaming, parallelism=parallelism, config=config)


@pytest.fixture(scope="session")
def flink_env() -> Callable[..., Any]:
    return make_env
