"""The shape the product code keeps: no function over 60 lines in the five product packages
(ruff's statement-count and complexity rules, configured in pyproject.toml, keep them in
check too; this counts lines, which they do not)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("swag_core", "adapters", "spark_adapter", "beam_adapter", "flink_adapter")
MAX_LINES = 60


def long_functions(folder: Path) -> list[str]:
    """``path:line name (n lines)`` of each function under ``folder`` over MAX_LINES lines
    (from its ``def`` line to its last line)."""
    found = []
    for path in sorted(folder.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > MAX_LINES:
                    found.append(f"{path.relative_to(folder.parent)}:{node.lineno} "
                                 f"{node.name} ({lines} lines)")
    return found


@pytest.mark.parametrize("package", PACKAGES)
def test_no_product_function_over_60_lines(package: str) -> None:
    assert (ROOT / package / "__init__.py").is_file()
    long = long_functions(ROOT / package)
    assert not long, "split by concern:\n" + "\n".join(long)


def test_the_count_finds_exactly_the_long_functions(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()

    def function(name: str, lines: int, indent: str = "") -> str:
        body = "\n".join(f"{indent}    x{i} = {i}" for i in range(lines - 1))
        return f"{indent}def {name}():\n{body}\n"
    (package / "mod.py").write_text(
        function("fits", MAX_LINES) + function("too_long", MAX_LINES + 1)
        + "class C:\n" + function("long_method", MAX_LINES + 5, "    "))
    assert long_functions(package) == [f"pkg/mod.py:{MAX_LINES + 1} too_long (61 lines)",
                                       f"pkg/mod.py:{2 * MAX_LINES + 3} long_method "
                                       f"(65 lines)"]
