"""Spark Connect: the server's Python workers import swag from a zip the session ships with
``spark.addArtifacts(zip, pyfile=True)``. A local Connect server (``local_session(
connect=True)``) whose workers cannot import swag otherwise: run it with a Python that has
the Spark pins (``requirements/spark.txt``) but not swag, from any directory::

    python3 -m venv /tmp/v && /tmp/v/bin/pip install -r requirements/spark.txt
    /tmp/v/bin/python scripts/connect_artifacts.py

It checks that a query fails without the zip (``No module named ...``) and gives the
brute-force rows with it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EVENTS = [("JFK", 0, 3.0), ("JFK", 60_000, 5.0), ("JFK", 150_000, 1.0)]
RANGE, SLIDE = 120_000, 60_000


def expected() -> list[tuple[int, float]]:
    """(window start, max) of every non-empty window."""
    out = []
    for start in range(-RANGE, 4 * RANGE, SLIDE):
        inside = [v for _, t, v in EVENTS if start <= t < start + RANGE]
        if inside:
            out.append((start, max(inside)))
    return out


def main() -> int:
    os.chdir(tempfile.mkdtemp())  # the workers' working directory holds no swag either
    sys.path.insert(0, ROOT)  # the client imports swag from the checkout; the workers cannot
    from spark_adapter import local_session, sliding, sliding_aggregate

    spark = local_session(connect=True)
    df = spark.createDataFrame(EVENTS, "origin string, t long, delay double")

    def rows() -> list[tuple[int, float]]:
        out = sliding_aggregate(df, key="origin", time="t", window=sliding(RANGE, SLIDE),
                                aggregations={"worst": {"fn": "max", "field": "delay"}})
        return sorted((r.window_start, r.worst) for r in out.collect())

    try:
        rows()
        print("the workers import swag without the zip: run this with a Python that does "
              "not have swag installed", file=sys.stderr)
        return 2
    except Exception as exc:
        if "No module named" not in str(exc):
            raise
        print("without the zip: the workers fail with 'No module named ...'")
    archive = os.path.join(tempfile.mkdtemp(), "swag.zip")
    subprocess.run(["zip", "-qr", archive, "swag_core", "adapters", "spark_adapter",
                    "-i", "*.py"], cwd=ROOT, check=True)
    spark.addArtifacts(archive, pyfile=True)
    got = rows()
    print(f"with the zip: {got}")
    return 0 if got == expected() else 1


if __name__ == "__main__":
    sys.exit(main())
