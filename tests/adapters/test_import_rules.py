"""Import rules of the product code, read from the sources' ASTs (every import, also those
inside functions and under ``if TYPE_CHECKING``):

* an engine package (Spark, Beam, Flink) imports from ``adapters`` only its public surface:
  the top-level package, ``adapters.query.*``, ``adapters.engine.*`` (glue meant for engines)
  and ``adapters.state.*`` (formats): never the driver's internals (``adapters.driver``,
  ``adapters.crosskey``, ``adapters.planning``);
* no import circle among the product modules (a lazy import that closes a circle counts).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = ("swag_core", "adapters", "spark_adapter", "beam_adapter", "flink_adapter")
ENGINES = ("spark_adapter", "beam_adapter", "flink_adapter")
ALLOWED = ("adapters.query", "adapters.engine", "adapters.state")


def modules() -> dict[str, Path]:
    """Every product module by dotted name (a package by its own name)."""
    found = {}
    for package in PRODUCT:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def imports(name: str, path: Path, known: set[str]) -> list[tuple[str, int]]:
    """``(module imported, line)`` of every import in the module's source. ``from p import
    n`` imports ``p.n`` when that is a module, else ``p``."""
    is_package = path.name == "__init__.py"
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = name.split(".") if is_package else name.split(".")[:-1]
                package = package[:len(package) - node.level + 1]
                base = ".".join(package + ([base] if base else []))
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                out.append((sub if sub in known else base, node.lineno))
    return out


def graph() -> dict[str, set[str]]:
    """Product module -> the product modules it imports."""
    mods = modules()
    known = set(mods)
    return {name: {m for m, _ in imports(name, path, known) if m in known and m != name}
            for name, path in mods.items()}


def test_the_walk_sees_lazy_and_relative_imports() -> None:
    """The graph has the edges the rules are about (else the tests below pass vacuously)."""
    edges = graph()
    assert "adapters.driver.window_driver" in edges["adapters"] or \
        "adapters.driver" in edges["adapters"]
    assert "spark_adapter._runtime" in edges["spark_adapter._batch"]  # relative import
    assert len(edges) > 60


def forbidden(module: str) -> bool:
    return module.startswith("adapters.") and not module.startswith(ALLOWED)


@pytest.mark.parametrize("engine", ENGINES)
def test_engines_import_only_the_public_surface_of_adapters(engine: str) -> None:
    mods = modules()
    known = set(mods)
    bad = [f"{path.relative_to(ROOT)}:{line}: {m}"
           for name, path in mods.items() if name.split(".")[0] == engine
           for m, line in imports(name, path, known) if forbidden(m)]
    assert not bad, "engine code imports adapters internals:\n" + "\n".join(bad)


def test_the_rule_catches_an_internal_import() -> None:
    assert forbidden("adapters.crosskey.columnar") and forbidden("adapters.driver.kvs_lanes")
    assert forbidden("adapters.planning")
    assert not forbidden("adapters") and not forbidden("adapters.engine.timers")


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), or of one
    module importing itself."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1 or v in edges.get(v, ()):
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_the_cycle_finder_finds_a_circle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_circles_in_product_code() -> None:
    found = cycles(graph())
    assert not found, "import circles:\n" + "\n".join(" <-> ".join(c) for c in found)
