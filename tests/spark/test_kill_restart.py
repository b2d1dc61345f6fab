"""Fault test: a streaming ``sliding_aggregate`` query whose process is killed with SIGKILL
inside a micro-batch, then restarted from its checkpoint, commits exactly the rows of an
uninterrupted run: nothing lost, nothing repeated.

The killed query runs in a child process (``python -m tests.spark.test_kill_restart``: its
own driver JVM and Python workers, in their own process group). Input: JSON-lines files, one
per micro-batch, then an end-of-input marker file (pitfall 11 of ``docs/spark.md``); output:
a Parquet file sink, whose ``_spark_metadata`` log makes a batch's files visible only once
the batch is committed. Two Python UDF filters that keep every row are the kill points: one
on the input rows (before the shuffle into the stateful operator), one on the output rows;
armed, a gate creates a marker file at its first row past a threshold and sleeps, and the
test then kills the whole process group. The first child is killed in the map stage of the
second micro-batch (offsets logged, the stateful operator has not run in it); a second
child restarts from the checkpoint and is killed while the stateful operator emits the
windows of a later micro-batch (its state-store version may or may not be written by then;
the sink has not committed the batch); a third restarts and finishes. The committed rows
must equal those of an uninterrupted run of the same query (in this process's session) and
a brute-force computation of the windows.
"""

from __future__ import annotations

import contextlib
import datetime
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from spark_adapter import sliding, sliding_aggregate
from tests.spark.streaming import _write_file

#: Event times start here (far from 0: Spark's watermark starts at 0, pitfall 4).
BASE_MS = 1_700_000_000_000
FILES = 4
SPAN_MS = 20_000  # each file's events lie in [BASE + i * SPAN, BASE + (i + 1) * SPAN)
EVENTS_PER_FILE = 40
KEYS = ("a", "b", "c")
RANGE_MS, SLIDE_MS = 10_000, 5_000
#: Watermark delay: one file's span, so no event is late (a file's events are shuffled, but
#: all later than the watermark after the previous file).
DELAY = "20 seconds"
#: The end-of-input marker's time: beyond every window (its row is filtered out after
#: ``withWatermark``, by a filter on the event-time column).
END_MS = BASE_MS + (FILES + 2) * SPAN_MS
#: Kill points (:class:`Gates`). The first run hangs at the first input row of file 1, in
#: the map stage of its micro-batch (before the stateful operator runs in that batch).
HANG_SEQ = EVENTS_PER_FILE
#: The second run hangs at the first output window starting here, while the stateful
#: operator is producing the output of a later micro-batch (released by its watermark),
#: after earlier batches committed windows.
HANG_AT = BASE_MS + SPAN_MS
SCHEMA = "k string, ts timestamp, seq long, v long, x double"
AGGREGATIONS = {"n": {"fn": "count"}, "s": {"fn": "sum", "field": "v"},
                "top": {"fn": "max", "field": "x"}, "vs": {"fn": "collect", "field": "v"}}
#: Upper bounds (s): a child reaching the hang point (JVM start ~10-20 s on 2 busy cores
#: plus a few micro-batches), a child finishing the rest.
REACH_TIMEOUT = 150
FINISH_TIMEOUT = 180
HANG_SECONDS = 600


# ----------------------------------------------------------------------------- the query
def _iso(ms: int) -> str:
    stamp = datetime.datetime.fromtimestamp(ms / 1000, tz=datetime.timezone.utc)
    return stamp.isoformat(timespec="milliseconds")


def events() -> list[dict[str, Any]]:
    """Every input row (without the end marker): file ``i``'s events in time
    ``[BASE + i * SPAN, BASE + (i + 1) * SPAN)``, shuffled inside the file."""
    rng = random.Random(16)
    out: list[dict[str, Any]] = []
    for i in range(FILES):
        rows = [{"k": rng.choice(KEYS), "t": BASE_MS + i * SPAN_MS + rng.randrange(SPAN_MS),
                 "v": rng.randrange(-50, 100), "x": rng.uniform(-1, 1)}
                for _ in range(EVENTS_PER_FILE)]
        out += [dict(r, seq=i * EVENTS_PER_FILE + j, file=i) for j, r in enumerate(rows)]
    return out


def write_inputs(directory: Path) -> None:
    """One JSON-lines file per micro-batch, then the end marker's file."""
    rows = events()
    for i in range(FILES):
        _write_file(str(directory), i, [
            {"k": r["k"], "ts": _iso(r["t"]), "seq": r["seq"], "v": r["v"], "x": r["x"]}
            for r in rows if r["file"] == i])
    _write_file(str(directory), FILES, [{"k": "end", "ts": _iso(END_MS), "seq": -1}])


def _gate(marker: str | None, at: int) -> Any:
    """A filter UDF keeping every row. With ``marker``: at the first value ``>= at``, create
    ``marker`` and sleep (the test kills the process then). Every run has the same gates
    (armed or not), so that every run has the same plan."""
    def keep(x):  # no type hints: PySpark would try to read a pandas UDF from them
        if marker is not None and x is not None and x >= at and not os.path.exists(marker):
            with open(marker, "x", encoding="utf-8") as f:
                f.write(str(os.getpid()))
            time.sleep(HANG_SECONDS)
        return True
    return F.udf(keep, "boolean").asNondeterministic()


def results(spark: SparkSession, base: Path, gates: tuple[str | None, str | None] = (None, None)
            ) -> DataFrame:
    """The streaming query's output: sliding windows over the input files of ``base/in``.
    ``gates``: the marker files of the input gate (at ``seq`` :data:`HANG_SEQ`) and the
    output gate (at window start :data:`HANG_AT`), ``None`` for a gate that lets all pass."""
    src = (spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1)
           .json(str(base / "in")).withWatermark("ts", DELAY)
           .where(F.unix_millis(F.col("ts")) < END_MS)
           .where(_gate(gates[0], HANG_SEQ)(F.col("seq"))))
    out = sliding_aggregate(src, key="k", time="ts",
                            window=sliding(RANGE_MS, SLIDE_MS), aggregations=AGGREGATIONS,
                            order_by="seq")
    return out.where(_gate(gates[1], HANG_AT)(F.unix_millis(F.col("window_start"))))


def run(spark: SparkSession, base: Path,
        gates: tuple[str | None, str | None] = (None, None)) -> None:
    """Run the query on ``base`` until every input file is processed (file sink
    ``base/out``, checkpoint ``base/ckpt``)."""
    query = (results(spark, base, gates).writeStream.format("parquet")
             .option("path", str(base / "out"))
             .option("checkpointLocation", str(base / "ckpt"))
             .outputMode("append").start())
    try:
        query.processAllAvailable()
    finally:
        query.stop()


def committed(spark: SparkSession, base: Path) -> list[tuple[Any, ...]]:
    """The rows of the committed micro-batches (Spark reads a file sink's directory through
    its ``_spark_metadata`` log), sorted."""
    out = base / "out"
    if not (out / "_spark_metadata").is_dir():
        return []
    df = spark.read.parquet(str(out))
    if not df.columns:
        return []
    rows = df.select("k", F.unix_millis("window_start"), F.unix_millis("window_end"),
                     *AGGREGATIONS).collect()
    return sorted(tuple(tuple(x) if isinstance(x, list) else x for x in r) for r in rows)


def brute_force() -> list[tuple[Any, ...]]:
    """Every window holding an event, by definition: ``(k, start, end, n, s, top)``."""
    rows = events()
    firsts = {r["t"] - r["t"] % SLIDE_MS - RANGE_MS + SLIDE_MS for r in rows}
    out = []
    for k in KEYS:
        mine = [r for r in rows if r["k"] == k]
        for start in sorted({s + j * SLIDE_MS for s in firsts for j in range(RANGE_MS //
                                                                             SLIDE_MS)}):
            inside = [r for r in mine if start <= r["t"] < start + RANGE_MS]
            if inside:
                out.append((k, start, start + RANGE_MS, len(inside),
                            sum(r["v"] for r in inside), max(r["x"] for r in inside)))
    return sorted(out)


# ----------------------------------------------------------------------------- the child
def _child(base: Path, gates: tuple[str | None, str | None]) -> None:
    """Run the query in this process's own session (same settings as the test session)."""
    from spark_adapter import local_session
    from tests.spark.conftest import SHUFFLE_PARTITIONS, TEST_CONF, worker_python

    conf = dict(TEST_CONF, **{"spark.local.dir": str(base / "local")})
    spark = local_session("swag-kill-restart", cores=2, shuffle_partitions=SHUFFLE_PARTITIONS,
                          driver_memory="1g", conf=conf)
    # the checkpoint writes whose atomicity the kills test: local_session's, for a local master
    manager = spark.conf.get("spark.sql.streaming.checkpointFileManagerClass")
    assert manager.endswith("FileSystemBasedCheckpointFileManager"), manager
    (base / "py").mkdir(exist_ok=True)
    spark.sparkContext.pythonExec = worker_python(base / "py")
    try:
        run(spark, base, gates)
    finally:
        spark.stop()


class Child:
    """A child process running :func:`_child` in its own process group, its output in a
    log file."""

    def __init__(self, base: Path, name: str, gates: tuple[Path | None, Path | None]
                 ) -> None:
        self.log = base / f"{name}.log"
        env = dict(os.environ)
        root = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (root, env.get("PYTHONPATH")) if p)
        args = [sys.executable, "-m", "tests.spark.test_kill_restart", str(base),
                *(str(g or "-") for g in gates)]
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, cwd=root, env=env,
                                         start_new_session=True)

    def tail(self, lines: int = 40) -> str:
        text = self.log.read_text(encoding="utf-8", errors="replace").splitlines()
        return "\n".join(text[-lines:])

    def group_alive(self) -> bool:
        try:
            os.killpg(self.proc.pid, 0)
        except ProcessLookupError:
            return False
        return True

    def kill(self) -> None:
        """SIGKILL the whole process group (driver JVM, Python workers) and wait until
        every member is gone."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=30)
        deadline = time.monotonic() + 30
        while self.group_alive():
            assert time.monotonic() < deadline, "the killed process group did not go away"
            time.sleep(0.2)

    def wait_for(self, path: Path, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not path.exists():
            if self.proc.poll() is not None:
                pytest.fail(f"the child exited ({self.proc.returncode}) before reaching the "
                            f"kill point:\n{self.tail()}")
            if time.monotonic() > deadline:
                pytest.fail(f"the child did not reach the kill point in {timeout} s:\n"
                            f"{self.tail()}")
            time.sleep(0.2)

    def finish(self, timeout: float) -> None:
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            pytest.fail(f"the restarted child did not finish in {timeout} s:\n{self.tail()}")
        assert code == 0, f"the restarted child failed ({code}):\n{self.tail()}"


def _batch_ids(directory: Path) -> set[int]:
    return {int(p.name) for p in directory.iterdir() if p.name.isdigit()} \
        if directory.is_dir() else set()


def _interrupted_batch(ckpt: Path) -> int:
    """The micro-batch the kill interrupted: its offsets are logged, its commit is not."""
    started, done = _batch_ids(ckpt / "offsets"), _batch_ids(ckpt / "commits")
    assert started and max(started) == max(done, default=-1) + 1, \
        f"not killed inside a micro-batch: offsets {sorted(started)}, commits {sorted(done)}"
    return max(started)


# ----------------------------------------------------------------------------- the test
def test_sigkill_inside_micro_batches_then_restart_gives_the_uninterrupted_rows(
        spark, tmp_path):
    """Killed twice (in the map stage of a micro-batch, then, after a restart, while the
    stateful operator emits a later batch's windows), restarted a second time: the
    committed rows are exactly the uninterrupted run's."""
    ref, killed = tmp_path / "ref", tmp_path / "killed"
    for base in (ref, killed):
        (base / "in").mkdir(parents=True)
        write_inputs(base / "in")
    ckpt, children = killed / "ckpt", []
    hang_in, hang_out = killed / "hang-input", killed / "hang-output"
    try:
        # the child's JVM starts while the uninterrupted run runs here
        children.append(Child(killed, "first", (hang_in, None)))
        run(spark, ref)
        want = committed(spark, ref)
        assert [r[:6] for r in want] == brute_force(), \
            "the uninterrupted run differs from the brute-force windows"

        children[-1].wait_for(hang_in, REACH_TIMEOUT)
        children[-1].kill()
        batch = _interrupted_batch(ckpt)
        # state-store version v is written by micro-batch v - 1: the stateful operator had
        # not run in the interrupted batch
        state = ckpt / "state" / "0" / "0"
        assert (state / f"{batch}.changelog").exists() and not (
            state / f"{batch + 1}.changelog").exists(), sorted(os.listdir(state))

        children.append(Child(killed, "second", (None, hang_out)))
        children[-1].wait_for(hang_out, REACH_TIMEOUT)
        children[-1].kill()
        assert _interrupted_batch(ckpt) > batch
        before = committed(spark, killed)
        assert set(before) <= set(want), \
            f"committed before the second kill, not in the uninterrupted run: " \
            f"{sorted(set(before) - set(want))[:3]}"
        assert 0 < len(before) < len(want), \
            f"{len(before)} of {len(want)} rows committed before the second kill (none: lost " \
            f"after the first restart, or the kill points moved)"

        children.append(Child(killed, "last", (None, None)))
        children[-1].finish(FINISH_TIMEOUT)
    finally:
        for child in children:
            if child.proc.poll() is None or child.group_alive():
                child.kill()
    got = committed(spark, killed)
    assert len(set(got)) == len(got), "duplicate rows after the restarts"
    missing = sorted(set(want) - set(got))
    extra = sorted(set(got) - set(want))
    assert got == want, f"{len(missing)} rows lost (e.g. {missing[:3]}), {len(extra)} wrong " \
                        f"(e.g. {extra[:3]})"


if __name__ == "__main__":
    _child(Path(sys.argv[1]), (None if sys.argv[2] == "-" else sys.argv[2],
                               None if sys.argv[3] == "-" else sys.argv[3]))
