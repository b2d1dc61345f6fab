"""``flink_adapter.python_settings``: what each execution mode needs (the jobs of both modes
run in the other test files)."""

from __future__ import annotations

import os
import sys
import sysconfig

import pytest

from flink_adapter import python_settings


def test_thread_mode_gets_this_interpreters_import_path() -> None:
    settings = python_settings("thread")
    assert settings["python.execution-mode"] == "thread"
    assert settings["python.executable"] == sys.executable
    path = settings["python.pythonpath"].split(os.pathsep)
    # pemja, pyflink and the rest live in site-packages, which the embedded interpreter
    # of a virtual environment does not see by itself
    assert os.path.abspath(sysconfig.get_paths()["purelib"]) in path
    import flink_adapter
    assert os.path.dirname(os.path.dirname(os.path.abspath(flink_adapter.__file__))) in path


def test_process_mode_needs_no_python_path() -> None:
    settings = python_settings("process")
    assert settings["python.execution-mode"] == "process"
    assert "python.pythonpath" not in settings


def test_unknown_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="thread"):
        python_settings("threads")
