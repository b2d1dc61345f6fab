"""swag_core imports only the standard library (DESIGN.md: engine-free, no dependencies).

The Makefile relies on it: the engine environments differ from the core one only in pinned
third-party packages, so they re-run the suites that import some (tests/adapters,
tests/conformance) and not tests/core, whose code under test could not see a pin.
"""

import ast
import sys
from pathlib import Path

import swag_core

_ROOT = Path(swag_core.__file__).parent


def _imported_top_levels(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_swag_core_imports_only_the_standard_library() -> None:
    modules = sorted(_ROOT.rglob("*.py"))
    assert len(modules) > 10, f"swag_core modules not found under {_ROOT}"
    outside = {
        f"{path.relative_to(_ROOT)}: {name}"
        for path in modules
        for name in _imported_top_levels(path)
        if name != "swag_core" and name not in sys.stdlib_module_names
    }
    assert not outside, f"swag_core imports packages outside the standard library: {outside}"
