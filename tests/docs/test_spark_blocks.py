"""The Spark ```python blocks of README.md and docs/*.md, run in the Spark environment
(tests/docs/blocks.py), with one local session for them all."""

import pytest

from tests.docs import blocks

pytest.importorskip("pyspark")


@pytest.mark.parametrize("block", blocks.blocks_for("spark"), ids=str)
def test_block(block: blocks.Block, tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    blocks.run(block)
