"""One JVM per test session (PyFlink's gateway), a fresh execution environment per job.

Outside ``.venvs/flink`` (no PyFlink) the Flink tests are not collected; without Java,
``make test-flink`` stops first with ``scripts/check_java.sh``'s message.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from typing import Any

import pytest

if importlib.util.find_spec("pyflink") is None:
    collect_ignore_glob = ["test_*.py"]


def make_env(streaming: bool = True, parallelism: int = 1,
             config: dict[str, str] | None = None) -> Any:
    """A local ``StreamExecutionEnvironment`` whose Python workers run this interpreter,
    with the state cache raised (PyFlink's default of 1000 entries makes state access ~3x
    slower)."""
    from pyflink.common import Configuration
    from pyflink.datastream import RuntimeExecutionMode, StreamExecutionEnvironment

    conf = Configuration()
    conf.set_string("python.state.cache-size", "100000")
    for k, v in (config or {}).items():
        conf.set_string(k, v)
    env = StreamExecutionEnvironment.get_execution_environment(conf)
    env.set_python_executable(sys.executable)
    env.set_parallelism(parallelism)
    env.set_runtime_mode(RuntimeExecutionMode.STREAMING if streaming
                         else RuntimeExecutionMode.BATCH)
    return env


@pytest.fixture(scope="session")
def flink_env() -> Callable[..., Any]:
    return make_env
