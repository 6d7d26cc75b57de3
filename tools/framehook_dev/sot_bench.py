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

import sys
from collections.abc import Sequence
from typing import Any, Optional

from . import bench, matrix

REPO = matrix.REPO
SCRIPT = REPO / "benches" / "sot.py"
TABLE_START = "<!-- sot-table-start -->"
TABLE_END = "<!-- sot-table-end -->"


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


def main(argv: Optional[Sequence[str]] = None) -> int:
    return bench.script_bench_main(argv, description=__doc__.splitlines()[0], script=SCRIPT, prefix="sot",
                                   markers=(TABLE_START, TABLE_END), tables=markdown_table)


if __name__ == "__main__":
    sys.exit(main())
