"""Restart: a streaming job with RocksDB state and retained checkpoints, killed mid-stream
(its whole process group, JVM included, with SIGKILL), then restored from its last
checkpoint, commits exactly the rows of an uninterrupted run: nothing lost, nothing
duplicated (the FileSink commits files on checkpoints; only committed files are read). In
both Python execution modes (each restores its own checkpoint: the modes keep state in
different Java types, ``flink_adapter.state``)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conformance.oracle import expected
from tests.conformance.runner import compare
from tests.flink import restart_job as job
from tests.flink.conftest import MODES
from tests.flink.rows import driver_row

ROOT = Path(__file__).resolve().parents[2]


def _start(mode: str, out: Path, ckpt: Path, restore: Path | None = None
           ) -> subprocess.Popen[bytes]:
    args = [sys.executable, "-m", "tests.flink.restart_job", mode, str(out), str(ckpt)]
    if restore is not None:
        args.append(str(restore))
    # A fresh job: none of this process's gateway settings (PYFLINK_GATEWAY_DISABLED, set
    # once this process has run a job, would make the child refuse to start its own JVM).
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYFLINK_")}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.Popen(args, cwd=ROOT, env=env, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _checkpoints(ckpt: Path) -> list[Path]:
    done = [p.parent for p in ckpt.glob("*/chk-*/_metadata")]
    return sorted(done, key=lambda p: int(p.name.split("-")[1]))


def _committed(out: Path) -> list[dict]:
    rows = []
    for path in out.rglob("*"):
        if path.is_file() and not any(part.startswith(".") for part in path.relative_to(
                out).parts):
            rows += [json.loads(line) for line in path.read_text().splitlines() if line]
    return rows


@pytest.mark.parametrize("mode", MODES)
def test_killed_and_restored_from_checkpoint_gives_exact_rows(tmp_path: Path, mode: str
                                                              ) -> None:
    out, ckpt = tmp_path / "out", tmp_path / "ckpt"
    first = _start(mode, out, ckpt)
    deadline = time.monotonic() + 240
    try:
        while len(_checkpoints(ckpt)) < 3:  # well into the input
            assert first.poll() is None, first.stderr.read().decode()[-3000:]  # type: ignore[union-attr]
            assert time.monotonic() < deadline, "no checkpoint within 240 s"
            time.sleep(0.2)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(first.pid, signal.SIGKILL)
        first.wait()
    before = _committed(out)
    restore = _checkpoints(ckpt)[-1]
    second = _start(mode, out, ckpt, restore)
    _, err = second.communicate(timeout=300)
    assert second.returncode == 0, err.decode()[-3000:]

    rows = _committed(out)
    events = [job.event(n) for n in range(job.N)]
    scenario = {"query": {"windows": [job.WINDOW], "aggregations": job.AGGREGATIONS},
                "steps": [{"events": [[k, t, {"k": k, "t": t, "v": v}] for k, t, v in events]},
                          {"watermark": "end"}]}
    exp = expected(scenario)
    assert len(before) < len(exp["rows"]), "the first run was not stopped mid-stream"
    got = [driver_row(r, key="k", time="t", fields=[], aggregations=list(job.AGGREGATIONS))
           for r in rows]
    diff = compare(exp, {"rows": got, "late": {}})
    assert diff is None, diff
