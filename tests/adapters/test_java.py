"""The Java check of the JVM engines (``adapters.engine.java.find_java``), against fake
``java`` executables printing what real ones print."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from adapters.engine.java import JavaNotFoundError, find_java


def fake_home(tmp_path: Path, banner: str) -> str:
    """A ``JAVA_HOME`` whose ``bin/java -version`` prints ``banner`` to stderr."""
    java = tmp_path / "bin" / "java"
    java.parent.mkdir()
    java.write_text(f"#!/bin/sh\necho '{banner}' >&2\n")
    java.chmod(java.stat().st_mode | stat.S_IXUSR)
    return str(tmp_path)


@pytest.mark.parametrize(("banner", "major"), [
    ('openjdk version "17.0.2" 2022-01-18', 17),
    ('java version "1.8.0_392"', 8),
    ('openjdk version "21-ea" 2023-09-19', 21),
    ('openjdk version "11.0.21" 2023-10-17', 11),
])
def test_the_major_version_is_read(tmp_path, monkeypatch, banner, major):
    monkeypatch.setenv("JAVA_HOME", fake_home(tmp_path, banner))
    assert find_java(8, "Flink") == (os.path.join(str(tmp_path), "bin", "java"), major)


def test_an_old_java_is_refused_naming_the_engine_and_the_minimum(tmp_path, monkeypatch):
    monkeypatch.setenv("JAVA_HOME", fake_home(tmp_path, 'openjdk version "11.0.21"'))
    with pytest.raises(JavaNotFoundError, match=r"Spark needs Java 17\+, but .* is Java 11 "
                                                r".*openjdk-17-jre-headless"):
        find_java(17, "Spark")


def test_no_java_and_an_unreadable_banner_are_clear_errors(tmp_path, monkeypatch):
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "none"))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(JavaNotFoundError, match="no 'java' was found"):
        find_java(17, "Spark")
    monkeypatch.setenv("JAVA_HOME", fake_home(tmp_path, "something else"))
    with pytest.raises(JavaNotFoundError, match="could not read the Java version"):
        find_java(17, "Spark")
