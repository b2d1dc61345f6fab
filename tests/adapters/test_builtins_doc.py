"""The table of built-ins in ``docs/aggregations.md`` is the declaration's
(``adapters/query/builtins.py``). After a change of the declaration, print the table with
``PYTHONPATH=. python tests/adapters/test_builtins_doc.py`` and paste it into the doc."""

from __future__ import annotations

from pathlib import Path

from adapters.query.builtins import (
    BUILTINS,
    COUNT_PRESENT,
    FAST_PATHS,
    FIELD,
    FIELD_OR_EVENT,
    KEYED_PAIR,
    SKIP_COMPARED,
    SKIP_VALUE,
    Builtin,
)
from adapters.query.output_types import describe

DOC = Path(__file__).resolve().parents[2] / "docs" / "aggregations.md"
_READS = {FIELD: "`field`", FIELD_OR_EVENT: "`field` optional",
          KEYED_PAIR: "`field` (compared), `result` optional"}
_MISSING = {SKIP_VALUE: "skipped", SKIP_COMPARED: "compared value skipped",
            COUNT_PRESENT: "not counted"}


def _params(builtin: Builtin) -> str:
    own = [f"`{name}` ({param.default}: {param.doc})" if param.doc else
           f"`{name}` ({param.default})" for name, param in builtin.params.items()]
    return ", ".join([_READS[builtin.reads], *own])


def builtin_table() -> str:
    """The markdown table of every built-in, in declaration order."""
    lines = ["| fn | reads, params (default) | result | output type | missing values | "
             "fast paths |", "|---|---|---|---|---|---|"]
    for b in BUILTINS.values():
        paths = ", ".join(p for p in FAST_PATHS if p in b.paths) or "none"
        lines.append(f"| `{b.name}` | {_params(b)} | {b.summary} | `{describe(b.output)}` | "
                     f"{_MISSING[b.missing]} | {paths} |")
    return "\n".join(lines) + "\n"


def test_the_doc_table_is_the_declaration() -> None:
    table = builtin_table()
    assert table in DOC.read_text(), \
        f"docs/aggregations.md does not hold the declared table; paste:\n{table}"


if __name__ == "__main__":
    print(builtin_table(), end="")
