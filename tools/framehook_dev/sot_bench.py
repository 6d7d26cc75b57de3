"""Time SOT's translator (numpy backend) beside eager Python on every interpreter of the matrix.

    python -m framehook_dev.sot_bench                    # all eight interpreters
    python -m framehook_dev.sot_bench --only 3.13,3.14   # a few
    python -m framehook_dev.sot_bench --report-only      # the table from the saved results

For each interpreter: the venv of framehook_dev.matrix with a release build of framehook and
the bench requirements, as framehook_dev.bench prepares them, then one run of benches/sot.py
there, which writes benches/results/sot-<name>.json. Ends with the table over every
interpreter with results (the figures and each target, met or missed), printed and written
between its markers in docs/performance.md.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Optional

from . import bench, matrix, provision

REPO = matrix.REPO
SCRIPT = REPO / "benches" / "sot.py"
RESULTS = REPO / "benches" / "results"
PAGE = REPO / "docs" / "performance.md"
TABLE_START = "<!-- sot-table-start -->"
TABLE_END = "<!-- sot-table-end -->"


def log(message: str) -> None:
    print(f"[sot-bench] {message}", file=sys.stderr, flush=True)


def result_path(name: str) -> Path:
    return RESULTS / f"sot-{name}.json"


def measure(name: str, args: argparse.Namespace) -> None:
    target = bench.prepared(name, args)
    out = result_path(name)
    out.unlink(missing_ok=True)
    argv = [target.venv_python, str(SCRIPT), "--name", name, "--repeats", str(args.repeats),
            "--min-time", str(args.min_time), "--json", str(out)]
    log(f"{name}: {SCRIPT.relative_to(REPO)} (load average {os.getloadavg()[0]:.2f})")
    done = target.run(argv, extra_env={"PYTHONHASHSEED": "0"})
    if done.returncode != 0 or not out.exists():
        raise RuntimeError(f"benches/sot.py failed (exit {done.returncode})")


def markdown_table(reports: dict[str, dict[str, Any]]) -> str:
    lines = ["Release builds, numpy backend; µs per call unless marked (minimum over the repeats, "
             "interleaved in one process). `two_ops(x, y)` is `x * 2.0 + y` on 3-element arrays; the guard "
             "cost is a hit of `four(x, y, a, b)` (two arrays, two scalars) less a hit of a guard-less "
             "function, each less its generated code called plainly. Targets: first call ≤ 2 ms, guards "
             "≤ 0.5 µs, hot call ≤ 2 µs over eager.", "",
             "| interpreter | first call (ms) | eager | translated (hot) | over eager | generated code alone | "
             "4 guards | targets | conditions |",
             "| --- |" + " ---: |" * 6 + " --- | --- |"]
    for name, report in reports.items():
        figures = report["figures"]
        missed = [check["target"] for check in report["targets"] if not check["met"]]
        kind = ("debug build" if report["implementation"]["debug"] else
                "free-threaded" if report["implementation"]["gil"] == "off" else "release")
        cells = [name, f"{figures['first_call_ms']:.2f}", f"{figures['eager_us']:.2f}", f"{figures['hot_us']:.2f}",
                 f"+{figures['hot_over_eager_us']:.2f}", f"{figures['generated_us']:.2f}",
                 f"{figures['guards4_us']:.2f}", "all met" if not missed else "**missed**: " + "; ".join(missed),
                 f"{report['python']} {kind}, numpy {report['numpy']}; load {report['loadavg'][0]:.1f}"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def write_report(reports: dict[str, dict[str, Any]]) -> None:
    table = markdown_table(reports)
    text = PAGE.read_text()
    if TABLE_START in text and TABLE_END in text:
        head, rest = text.split(TABLE_START, 1)
        PAGE.write_text(head + TABLE_START + "\n" + table + "\n" + TABLE_END + rest.split(TABLE_END, 1)[1])
    print(table)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="comma-separated interpreters, e.g. 3.12 or 3.13t,3.14d")
    parser.add_argument("--repeats", type=int, default=41, help="batches of each measurement (default 41)")
    parser.add_argument("--min-time", type=float, default=0.01, help="seconds per batch, at least (default 0.01)")
    parser.add_argument("--no-build", action="store_true", help="use the framehook already installed in the venvs")
    parser.add_argument("--report-only", action="store_true", help="report from benches/results, measure nothing")
    args = parser.parse_args(argv)
    names = matrix.INTERPRETERS if not args.only else args.only.split(",")
    unknown = [n for n in names if n not in matrix.INTERPRETERS]
    if unknown:
        parser.error(f"unknown interpreter(s) {unknown}; choose from {matrix.INTERPRETERS}")
    RESULTS.mkdir(parents=True, exist_ok=True)
    failed = []
    if not args.report_only:
        for name in names:
            try:
                measure(name, args)
            except (provision.ProvisionError, RuntimeError, OSError) as error:
                failed.append(name)
                log(f"{name}: ERROR: {error}")
    reports = {name: json.loads(result_path(name).read_text())
               for name in matrix.INTERPRETERS if result_path(name).exists()}
    if reports:
        write_report(reports)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
