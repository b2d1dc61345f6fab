"""The Beam ```python blocks of README.md and docs/*.md, run in the Beam environment
(tests/docs/blocks.py)."""

import pytest

from tests.docs import blocks

pytest.importorskip("apache_beam")


@pytest.mark.parametrize("block", blocks.blocks_for("beam"), ids=str)
def test_block(block: blocks.Block, tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    blocks.run(block)
