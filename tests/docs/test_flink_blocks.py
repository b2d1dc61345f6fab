"""The Flink ```python blocks of README.md and docs/*.md, run in the Flink environment
(tests/docs/blocks.py), with one JVM for them all."""

import pytest

from tests.docs import blocks

pytest.importorskip("pyflink")


@pytest.mark.parametrize("block", blocks.blocks_for("flink"), ids=str)
def test_block(block: blocks.Block, tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    blocks.run(block)
