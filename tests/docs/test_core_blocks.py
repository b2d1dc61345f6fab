"""The engine-free ```python blocks of README.md and docs/*.md, run in the core environment
(tests/docs/blocks.py)."""

import pytest

from tests.docs import blocks


@pytest.mark.parametrize("block", blocks.blocks_for("core"), ids=str)
def test_block(block: blocks.Block, tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    blocks.run(block)
