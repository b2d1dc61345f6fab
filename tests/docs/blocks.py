"""Run the ```python blocks of README.md and docs/*.md, and check what they show.

**Every block says how it runs**, in an HTML comment on the last non-blank line before its
fence (invisible on the rendered page):

* ``<!-- run: ENV -->``: the test of that engine environment runs it (:data:`ENVS`: ``core``,
  ``spark``, ``spark-connect``, ``beam``, ``flink``; ``tests/docs/test_<env>_blocks.py``).
  Options, after commas:

  - ``given: NAME``: run the set-up :data:`GIVEN` ``[(ENV, NAME)]`` first, for a short
    example that uses a name its text describes (the README's ``flights``);
  - ``any order``: its printed lines may come in any order (Beam, Flink rows);
  - ``continued``: it runs in the namespace the page's block above left (which must have
    run first, in the same process), for a page that builds one example in steps.

* ``<!-- no-run: WHY -->``: not run; ``WHY`` says why (a listing, a sketch, a template).

A block without one of these fails ``test_every_block_declares_how_it_runs``, so no block is
silently left untested.

**Shown output is checked**, in two forms:

* ``expression  # -> repr``: the expression statement ending on that line must have that
  ``repr`` (a whole-line ``# -> repr`` checks the statement ending on the line above).
  Whole-line comments right below, indented past ``#`` by three spaces or more, continue
  it. Whitespace runs compare equal, and ``...`` matches anything.
* An untagged (or ``text``) fence right after the block, with only blank lines between, is
  what the block prints: the captured ``sys.stdout`` must equal it (lines compared without
  trailing blanks; ``...`` matches anything, across lines too).

Each block runs in a fresh namespace (``__name__ == "__main__"``), in the directory the test
gives it (an empty temporary one), in the test's process: blocks of one environment share
its sessions (one Spark session, one Flink JVM). A JVM keeps the working directory it started
in, so a block that has an engine read or write files gives it absolute paths.
"""

from __future__ import annotations

import ast
import contextlib
import io
import re
import tokenize
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: the environments a block can run in (one test file each)
ENVS = ("core", "spark", "spark-connect", "beam", "flink")

#: set-ups a block names with ``given: NAME``; each one's text says what the page calls it
GIVEN = {
    ("spark", "flights"): '''
from spark_adapter import local_session
flights = local_session().readStream.format("rate").load().selectExpr(
    "'JFK' AS origin", "timestamp AS dep_ts", "value AS dep_delay", "value AS flight")
''',
    ("beam", "flights"): '''
import apache_beam as beam
_pipeline = beam.Pipeline()
flights = _pipeline | beam.Create([beam.Row(origin="JFK", dep_ms=1_000, delay=2.0),
                                   beam.Row(origin="JFK", dep_ms=700_000, delay=33.0),
                                   beam.Row(origin="LGA", dep_ms=900_000, delay=-4.0)])
''',
    ("flink", "flights"): '''
from pyflink.common import Row, Types
from flink_adapter import local_environment
flights = local_environment().from_collection(
    [Row("JFK", 1_000, 2.0), Row("JFK", 700_000, 33.0), Row("LGA", 900_000, -4.0)],
    Types.ROW_NAMED(["origin", "dep_ms", "delay"], [Types.STRING(), Types.LONG(), Types.DOUBLE()]))
''',
}

_FENCE = re.compile(r"^```(\S*)\s*$")
_MARKER = re.compile(r"^<!--\s*(run|no-run):\s*(.*?)\s*-->$")
_CHECK = "# ->"
#: the namespace each block that ran left, for the blocks that continue it
_namespaces: dict[str, dict[str, object]] = {}


@dataclass(frozen=True)
class Block:
    """One ```python block: where it is, its code, and how it runs."""

    path: str                      # relative to the repository root
    line: int                      # the line of its first code line (1-based)
    code: str
    env: str | None = None         # None: not run (see ``reason``) or no marker (``problem``)
    given: str | None = None
    any_order: bool = False
    continued: str | None = None   # ``continued``: the block above, whose namespace it uses
    reason: str = ""               # why a no-run block is not run
    output: str | None = None      # the untagged block right after it: what it prints
    problem: str = ""              # what is wrong with its marker

    def __str__(self) -> str:
        return f"{self.path}:{self.line}"


def doc_files() -> list[Path]:
    """README.md and docs/*.md."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def read_blocks(paths: list[Path] | None = None) -> list[Block]:
    """Every ```python block of ``paths`` (default :func:`doc_files`), in page order (and
    every ```py..., whose tag is a problem: it would escape the tests)."""
    return [block for path in (paths or doc_files()) for block in _page_blocks(path)]


def blocks_for(env: str) -> list[Block]:
    """The blocks the test of ``env`` runs."""
    return [block for block in read_blocks() if block.env == env]


def _fences(lines: list[str]) -> Iterator[tuple[str, int, int]]:
    """``(info, first line, end line)`` of each fenced block (0-based; ``end`` is the
    closing fence)."""
    start, info = None, ""
    for number, text in enumerate(lines):
        fence = _FENCE.match(text)
        if not fence:
            continue
        if start is None:
            start, info = number, fence.group(1)
        else:
            yield info, start, number
            start = None


def _page_blocks(path: Path) -> Iterator[Block]:
    lines = path.read_text().splitlines()
    fences = list(_fences(lines))
    name = str(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path)
    above = None
    for index, (info, start, end) in enumerate(fences):
        if not info.startswith("py"):
            continue
        output = None
        if index + 1 < len(fences):
            next_info, next_start, next_end = fences[index + 1]
            between = lines[end + 1:next_start]
            if next_info in ("", "text") and not any(text.strip() for text in between):
                output = "\n".join(lines[next_start + 1:next_end])
        before = [text.strip() for text in lines[:start] if text.strip()]
        block = _with_marker(Block(name, start + 2, "\n".join(lines[start + 1:end]),
                                   output=output, continued=above), before[-1] if before else "")
        if info != "python":
            block = replace(block, env=None, problem=f"tagged ```{info}: tag Python ```python")
        above = str(block)
        yield block


def _with_marker(block: Block, marker_line: str) -> Block:
    marker = _MARKER.match(marker_line)
    if not marker:
        return replace(block, problem="no <!-- run: ENV --> or <!-- no-run: WHY --> line "
                                       "before it")
    kind, text = marker.groups()
    if kind == "no-run":
        return replace(block, reason=text, continued=None,
                        problem="" if text else "no-run without a reason")
    env, *options = [part.strip() for part in text.split(",")]
    if env not in ENVS:
        return replace(block, problem=f"unknown environment {env!r} (one of {ENVS})")
    given, any_order, continued = None, False, None
    for option in options:
        if option == "any order":
            any_order = True
        elif option == "continued" and block.continued:
            continued = block.continued
        elif option.startswith("given:"):
            given = option[6:].strip()
            if (env, given) not in GIVEN:
                return replace(block, problem=f"no set-up GIVEN[{(env, given)!r}]")
        else:
            return replace(block, problem=f"unknown option {option!r}")
    return replace(block, env=env, given=given, any_order=any_order, continued=continued)


@dataclass
class _Checks:
    """The ``# ->`` checks of a block: expected text by line, and what failed."""

    expected: dict[int, str]
    failures: list[str] = field(default_factory=list)

    def __call__(self, value: object, line: int) -> None:
        if not matches(repr(value), self.expected[line], collapse=True):
            self.failures.append(f"line {line}: got {value!r}, the page shows "
                                 f"{self.expected[line]}")


def expected_values(code: str, first_line: int = 1) -> dict[int, str]:
    """``{line: shown repr}`` of the ``# ->`` comments of ``code`` (lines numbered from
    ``first_line``), continuation lines joined."""
    comments = [(token.start[0], token.string, token.line)
                for token in tokenize.generate_tokens(io.StringIO(code + "\n").readline)
                if token.type == tokenize.COMMENT]
    expected: dict[int, str] = {}
    target = last = None
    for row, text, line in comments:
        whole_line = line.strip() == text.strip()
        if text.startswith(_CHECK):
            target = row - 1 if whole_line else row
            expected[target] = text[len(_CHECK):].strip()
        elif target is not None and whole_line and re.match(r"#\s{3,}", text) \
                and row == last + 1:
            expected[target] += " " + text[1:].strip()
        else:
            target = None
        last = row
    return {row + first_line - 1: text for row, text in expected.items()}


def matches(got: str, shown: str, *, collapse: bool = False) -> bool:
    """Whether ``got`` is what the page shows: equal, ``...`` matching anything
    (``collapse``: whitespace runs equal)."""
    if collapse:
        got, shown = " ".join(got.split()), " ".join(shown.split())
    pattern = ".*?".join(re.escape(part) for part in shown.split("..."))
    return re.fullmatch(pattern, got, re.DOTALL) is not None


def _instrumented(block: Block, checks: _Checks) -> ast.Module:
    """The block's code, each ``# ->`` expression wrapped in a call of the checker."""
    tree = ast.parse(block.code, filename=block.path)
    ast.increment_lineno(tree, block.line - 1)
    pending = set(checks.expected)
    for index, statement in enumerate(tree.body):
        end = statement.end_lineno or statement.lineno
        if end in pending and isinstance(statement, ast.Expr):
            last_on_line = all((later.lineno != end) for later in tree.body[index + 1:])
            if last_on_line:
                pending.discard(end)
                call = ast.Call(ast.Name("__check__", ast.Load()),
                                [statement.value, ast.Constant(end)], [])
                tree.body[index] = ast.copy_location(ast.Expr(call), statement)
    if pending:
        raise AssertionError(f"{block.path}: '# ->' on line(s) {sorted(pending)} does not end "
                             f"an expression statement")
    return ast.fix_missing_locations(tree)


def run(block: Block) -> str:
    """Run ``block`` (its :data:`GIVEN` set-up first) in the current directory; raise
    ``AssertionError`` naming what differs from the page. Returns what it printed."""
    checks = _Checks(expected_values(block.code, block.line))
    code = compile(_instrumented(block, checks), block.path, "exec")
    if block.continued and block.continued not in _namespaces:
        raise AssertionError(f"{block}: continues {block.continued}, which did not run")
    namespace = dict(_namespaces.get(block.continued or "", {"__name__": "__main__"}))
    namespace["__check__"] = checks
    printed = io.StringIO()
    if block.given:
        exec(compile(GIVEN[block.env or "", block.given], f"<given {block.given}>", "exec"),
             namespace)
    with contextlib.redirect_stdout(printed):
        exec(code, namespace)
    _namespaces[str(block)] = namespace
    problems = list(checks.failures)
    if block.output is not None and not _same_output(printed.getvalue(), block):
        problems.append(f"it printed:\n{printed.getvalue()}\nthe page shows:\n{block.output}")
    if problems:
        raise AssertionError(f"{block}: " + "\n".join(problems))
    return printed.getvalue()


def _same_output(printed: str, block: Block) -> bool:
    got = [line.rstrip() for line in printed.rstrip().splitlines()]
    shown = [line.rstrip() for line in (block.output or "").rstrip().splitlines()]
    if block.any_order:
        got, shown = sorted(got), sorted(shown)
    return matches("\n".join(got), "\n".join(shown))


def marker_problems() -> list[str]:
    """``path:line: problem`` for every block whose marker is missing or wrong."""
    return [f"{block}: {block.problem}" for block in read_blocks() if block.problem]


__all__ = ["ENVS", "GIVEN", "Block", "blocks_for", "doc_files", "expected_values",
           "marker_problems", "matches", "read_blocks", "run"]
