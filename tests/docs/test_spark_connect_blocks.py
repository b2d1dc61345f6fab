"""The Spark Connect ```python blocks of README.md and docs/*.md, run in the Spark environment
(tests/docs/blocks.py), in a pytest process of their own: once a Connect session started,
PySpark makes every later session of the process a Connect one (`make test-spark-connect`)."""

import pytest

from tests.docs import blocks

pytest.importorskip("pyspark")


@pytest.mark.parametrize("block", blocks.blocks_for("spark-connect"), ids=str)
def test_block(block: blocks.Block, tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    blocks.run(block)
