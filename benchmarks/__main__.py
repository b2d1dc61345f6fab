"""Run benchmark suites and render docs/benchmarks.md.

    python -m benchmarks                 # every suite available in this environment
    python -m benchmarks core_rounds     # one suite
    python -m benchmarks --quick         # smaller sizes, for a smoke run
    python -m benchmarks --report-only   # re-render docs from stored results
"""

from __future__ import annotations

import argparse
import importlib

from benchmarks import report

SUITES = ["core_rounds", "core_bulk", "driver", "driver_over", "kvs_layout"]


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks")
    parser.add_argument("suites", nargs="*", default=SUITES, help=f"any of {SUITES}")
    parser.add_argument("--quick", action="store_true", help="small sizes (smoke run)")
    parser.add_argument("--report-only", action="store_true")
    args = parser.parse_args()
    if not args.report_only:
        for name in args.suites:
            try:
                module = importlib.import_module(f"benchmarks.{name}")
            except ModuleNotFoundError as err:
                print(f"skipping {name}: {err}")
                continue
            print(f"== {name}", flush=True)
            module.run(quick=args.quick)
    path = report.render()
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
