"""The Java runtime a JVM engine (Spark, Flink, Beam's Flink runner) would start: found the
way the engines find it (``JAVA_HOME`` first, then ``PATH``) and checked before the engine
starts, so that a missing or old Java is a clear error instead of a JVM stack trace."""

from __future__ import annotations

import os
import re
import shutil
import subprocess


class JavaNotFoundError(RuntimeError):
    """No usable Java runtime for the engine (the message says how to install one)."""


def _install_hint(minimum: int) -> str:
    return (f"install Java {minimum} or newer, e.g. 'sudo apt-get install openjdk-{minimum}-"
            f"jre-headless' (Debian/Ubuntu) or 'brew install openjdk@{minimum}' (macOS), or "
            f"point JAVA_HOME at one")


def find_java(minimum: int, needed_by: str) -> tuple[str, int]:
    """``(path, major version)`` of the Java ``needed_by`` (an engine's name, for the
    messages) would use; raises :class:`JavaNotFoundError` with an install hint if there is
    none, or its version is below ``minimum``."""
    hint = _install_hint(minimum)
    home = os.environ.get("JAVA_HOME")
    java = os.path.join(home, "bin", "java") if home else None
    if not (java and os.access(java, os.X_OK)):
        java = shutil.which("java")
    if java is None:
        raise JavaNotFoundError(f"{needed_by} needs Java {minimum}+, but no 'java' was found "
                                f"(JAVA_HOME unset or wrong, none on PATH); {hint}")
    try:
        text = subprocess.run([java, "-version"], capture_output=True, text=True,
                              timeout=60).stderr
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise JavaNotFoundError(f"could not run '{java} -version' ({exc}); {hint}") from None
    found = re.search(r'version "(1\.(\d+)|(\d+))[^"]*"', text)
    if not found:
        raise JavaNotFoundError(f"could not read the Java version from '{java} -version' "
                                f"(got {text.strip()[:100]!r}); {needed_by} needs Java "
                                f"{minimum}+: {hint}")
    major = int(found.group(2) or found.group(3))  # "1.8.0_392" is Java 8
    if major < minimum:
        raise JavaNotFoundError(f"{needed_by} needs Java {minimum}+, but {java} is Java "
                                f"{major} ({found.group(0)}); {hint}")
    return java, major


__all__ = ["JavaNotFoundError", "find_java"]
