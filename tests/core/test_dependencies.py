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


def _module_name(path: Path) -> str:
    parts = ("swag_core", *path.relative_to(_ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _swag_core_imports(path: Path, modules: set[str]) -> set[str]:
    """The swag_core modules ``path`` imports anywhere (a function-level import counts)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.update(t for t in [node.module, *(f"{node.module}.{a.name}"
                                                    for a in node.names)] if t in modules)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name in modules)
    return found


def test_swag_core_has_no_import_circle() -> None:
    """Imports between swag_core's modules go one way: a lazy import that closes a circle
    counts too (the package ``__init__`` re-exporting its modules is not an edge)."""
    paths = {_module_name(p): p for p in _ROOT.rglob("*.py")}
    graph = {name: _swag_core_imports(path, set(paths)) - {name} - {"swag_core"}
             for name, path in paths.items()}
    visiting: list[str] = []
    done: set[str] = set()

    def visit(name: str) -> None:
        assert name not in visiting, f"import circle: {' -> '.join([*visiting, name])}"
        if name in done:
            return
        visiting.append(name)
        for other in sorted(graph[name]):
            visit(other)
        visiting.pop()
        done.add(name)

    for name in sorted(graph):
        visit(name)
