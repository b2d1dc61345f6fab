"""The doc-block harness (tests/docs/blocks.py): every block declares how it runs, and a
block whose shown output is wrong fails."""

from pathlib import Path

import pytest

from tests.docs import blocks


def test_every_block_declares_how_it_runs() -> None:
    assert blocks.read_blocks(), "no ```python block found"
    assert blocks.marker_problems() == []


def page(tmp_path: Path, text: str) -> list[blocks.Block]:
    """The blocks of a page holding ``text``."""
    path = tmp_path / "page.md"
    path.write_text(text)
    return blocks.read_blocks([path])


def test_markers_are_read(tmp_path: Path) -> None:
    found = page(tmp_path, "<!-- run: beam, any order -->\n```python\nx = 1\n```\n\n"
                           "<!-- no-run: a listing -->\n```python\ny\n```\n"
                           "text\n```python\nz\n```\n"
                           "<!-- no-run: -->\n```python\nz\n```\n"
                           "<!-- run: cobol -->\n```python\nz\n```\n"
                           "<!-- run: core -->\n```py\nz\n```\n```bash\nls\n```\n")
    assert [(b.env, b.any_order, b.reason, bool(b.problem)) for b in found] == [
        ("beam", True, "", False), (None, False, "a listing", False),
        (None, False, "", True), (None, False, "", True), (None, False, "", True),
        (None, False, "", True)]
    assert found[0].line == 3


def test_expected_values_join_continuations() -> None:
    code = "x = 1\nx + 1  # -> 2\n[x,\n x]  # -> [1,\n#    1]\n# not this\nx\n# -> 1\n"
    assert blocks.expected_values(code, first_line=10) == {11: "2", 13: "[1, 1]", 16: "1"}


def test_a_wrong_value_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    [good, wrong] = page(tmp_path, "<!-- run: core -->\n```python\nsorted({3, 1})  # -> [1, ...]"
                                   "\n```\n<!-- run: core -->\n```python\n1 + 1  # -> 3\n```\n")
    blocks.run(good)
    with pytest.raises(AssertionError, match="got 2, the page shows 3"):
        blocks.run(wrong)


def test_a_check_on_a_statement_is_refused(tmp_path: Path) -> None:
    [block] = page(tmp_path, "<!-- run: core -->\n```python\nx = 1  # -> 1\n```\n")
    with pytest.raises(AssertionError, match="does not end an expression"):
        blocks.run(block)


def test_printed_output_is_checked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    text = ("<!-- run: core{} -->\n```python\nprint('b'); print('a')\n```\n\n```\na\nb\n```\n")
    [ordered] = page(tmp_path, text.format(""))
    [any_order] = page(tmp_path, text.format(", any order"))
    assert ordered.output == "a\nb"
    with pytest.raises(AssertionError, match="it printed"):
        blocks.run(ordered)
    assert blocks.run(any_order) == "b\na\n"


def test_ellipsis_matches_anything() -> None:
    assert blocks.matches("Row(a=1, b=2)\nRow(a=3)", "Row(a=1, ...)\n...")
    assert not blocks.matches("Row(a=1)", "Row(a=2...)")
    assert blocks.matches("[1,\n 2]", "[1, 2]", collapse=True)


def test_a_continued_block_sees_the_block_above(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    first, second, third = page(tmp_path, "<!-- run: core -->\n```python\nx = 41\n```\n"
                                          "<!-- run: core, continued -->\n```python\n"
                                          "x + 1  # -> 42\n```\n"
                                          "<!-- run: core -->\n```python\nx\n```\n")
    assert second.continued == str(first) and third.continued is None
    blocks.run(first)
    blocks.run(second)
    with pytest.raises(NameError):
        blocks.run(third)
