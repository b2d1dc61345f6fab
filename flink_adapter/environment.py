"""A local PyFlink ``StreamExecutionEnvironment`` set up for :func:`sliding_aggregate`, in
either of PyFlink's Python execution modes.

* ``"thread"`` (``python.execution-mode: thread``): Python runs inside the TaskManager's JVM
  through PEMJA, with no separate worker process nor gRPC harness between Flink and the
  function (``docs/flink.md``, "Execution mode": several times the process mode's events
  per CPU second).
* ``"process"``: each Python operator runs in a separate worker process (PyFlink's
  default).

The embedded interpreter of thread mode is the one the ``python.executable`` names (PEMJA
loads its ``libpython``), but its import path is the base installation's: a virtual
environment's ``site-packages`` is not on it, so it fails at once with ``No module named
'pemja'``. Flink puts ``PYTHONPATH`` and the ``python.pythonpath`` option at the front of
that path (``EmbeddedPythonEnvironmentManager``); :func:`python_settings` fills that option
with this interpreter's import path, so the embedded interpreter imports what this one does.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import Any

#: PyFlink's Python execution modes.
MODES = ("thread", "process")


def embedded_python_path() -> list[str]:
    """This interpreter's import path for the embedded one: the existing directories of
    ``sys.path`` (``site-packages`` included), then the directories holding swag's own
    packages (an editable install reaches them through an import hook that a path cannot
    carry)."""
    import adapters
    import swag_core

    paths = [os.path.abspath(p) for p in sys.path if p and os.path.isdir(p)]
    for package_init in (swag_core.__file__, adapters.__file__, __file__):
        paths.append(os.path.dirname(os.path.dirname(os.path.abspath(str(package_init)))))
    return list(dict.fromkeys(paths))


def python_settings(mode: str = "thread") -> dict[str, str]:
    """The Flink settings that run swag's Python functions in ``mode`` with this
    interpreter (for a ``Configuration``, ``config.yaml`` or ``-D`` options):
    ``python.execution-mode``, ``python.executable``, a raised ``python.state.cache-size``
    (process mode's state access is ~3x faster above its default of 1000) and, in thread
    mode, ``python.pythonpath`` (:func:`embedded_python_path`)."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    settings = {"python.execution-mode": mode, "python.executable": sys.executable,
                "python.state.cache-size": "100000"}
    if mode == "thread":
        settings["python.pythonpath"] = os.pathsep.join(embedded_python_path())
    return settings


def local_environment(mode: str = "thread", *, streaming: bool = True, parallelism: int = 1,
                      config: Mapping[str, str] | None = None) -> Any:
    """A local ``StreamExecutionEnvironment`` (an embedded MiniCluster) whose Python
    functions run in ``mode`` (``"thread"`` or ``"process"``) with this interpreter and
    its packages: :func:`python_settings`, then ``config`` (added or overriding).

    PyFlink starts one JVM per client process; a later call in the same process configures
    a new environment in that JVM, so jobs of both modes can run one after the other.
    """
    from pyflink.common import Configuration
    from pyflink.datastream import RuntimeExecutionMode, StreamExecutionEnvironment

    conf = Configuration()
    for key, value in {**python_settings(mode), **(config or {})}.items():
        conf.set_string(key, value)
    env = StreamExecutionEnvironment.get_execution_environment(conf)
    env.set_parallelism(parallelism)
    env.set_runtime_mode(RuntimeExecutionMode.STREAMING if streaming
                         else RuntimeExecutionMode.BATCH)
    return env


__all__ = ["MODES", "embedded_python_path", "local_environment", "python_settings"]
