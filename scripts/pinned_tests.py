"""Which engine-free tests an engine environment runs again with its own pins.

Run by an engine environment's interpreter with the core environment's interpreter as the
argument (``.venvs/flink/bin/python scripts/pinned_tests.py .venvs/core/bin/python``), it
prints the test paths (space-separated; an empty line if none) that ``make test-<engine>``
re-runs there, after ``make test-core`` ran every engine-free suite with the core pins.

``swag_core`` imports only the standard library (``tests/core/test_dependencies.py``), and
``adapters`` only that and, optionally, NumPy (the cross-key runtime, the columnar intake,
the codec's NumPy scalars); the benchmarks that ``tests/adapters/test_benchmark_smoke.py``
runs also use pandas (which uses pyarrow where it is installed). So an engine-free test can
see an engine's pins only through those packages (or another Python): a group of tests runs
again only where one of its packages' versions, or the Python version, differs from the core
environment's. The same versions would only repeat test-core (traced: of
``tests/adapters`` and ``tests/conformance``, only ``test_benchmark_smoke.py`` executes pandas
or pyarrow code; NumPy code runs throughout, wherever the driver takes a batch).
"""

from __future__ import annotations

import json
import subprocess
import sys

#: (packages, tests that execute their code)
GROUPS = ((("numpy",), ["tests/adapters", "tests/conformance"]),
          (("numpy", "pandas", "pyarrow"), ["tests/adapters/test_benchmark_smoke.py"]))

_PROBE = """
import json, sys
from importlib import metadata
def version(name):
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None
print(json.dumps({"python": sys.version, **{n: version(n) for n in sys.argv[1:]}}))
"""


def versions(python: str, names: list[str]) -> dict[str, str | None]:
    out = subprocess.run([python, "-c", _PROBE, *names], check=True, capture_output=True,
                         text=True).stdout
    return json.loads(out)


def pinned_tests(core_python: str) -> list[str]:
    names = sorted({n for packages, _ in GROUPS for n in packages})
    here, core = versions(sys.executable, names), versions(core_python, names)
    tests: list[str] = []
    for packages, paths in GROUPS:
        if any(here[n] != core[n] for n in ("python", *packages)):
            # a path inside one already chosen is not added again (pytest would run it twice)
            tests += [p for p in paths if not any(p == t or p.startswith(t + "/")
                                                  for t in tests)]
    return tests


if __name__ == "__main__":
    print(" ".join(pinned_tests(sys.argv[1])))
