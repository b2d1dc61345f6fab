#!/usr/bin/env bash
# Fails early, with a clear message, when the Python that creates the environments is unusable.
set -euo pipefail
py="${1:-python3}"
if ! command -v "$py" >/dev/null 2>&1; then
  echo "swag: '$py' was not found; install Python 3.10+ or run 'make PYTHON=/path/to/python3'" >&2
  exit 1
fi
"$py" - <<'PY'
import sys
if sys.version_info < (3, 10):
    sys.exit(f"swag: Python 3.10+ is required, found {sys.version.split()[0]} at {sys.executable}")
import venv  # noqa: F401  (Debian splits venv into python3-venv)
PY
