"""Time framehook's translator with the paddle backend beside Paddle's own SOT, where paddle installs.

    python -m framehook_dev.sot_paddle_bench                 # 3.10 and 3.13 (paddlepaddle's wheels)
    python -m framehook_dev.sot_paddle_bench --report-only   # the table from the saved results

For each interpreter: the venv of framehook_dev.matrix (which has the paddlepaddle wheel on
3.10 and 3.13) with a release build of framehook, then one run of benches/sot_paddle.py there,
which writes benches/results/sot-paddle-<name>.json. Ends with the table over the
interpreters with results, printed and written between its markers in docs/performance.md.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any, Optional

from . import bench, matrix

SCRIPT = matrix.REPO / "benches" / "sot_paddle.py"
TABLE_START = "<!-- sot-paddle-table-start -->"
TABLE_END = "<!-- sot-paddle-table-end -->"
# The interpreters the matrix installs paddlepaddle on, as --only takes them.
PADDLE_INTERPRETERS = ",".join(sorted(matrix.PADDLE_INTERPRETERS))


def markdown_table(reports: dict[str, dict[str, Any]]) -> str:
    lines = ["Release builds of framehook, `paddlepaddle` CPU wheel; hot calls in µs (minimum over the repeats, "
             "interleaved in one process), first calls in ms (median; translation and static program build "
             "included). Paddle's SOT runs on framehook's eval-frame functions. framehook as users get it "
             "(its cost model keeps, per graph, the faster of the static program and its operations called "
             "eagerly), and with every graph run as its static program (\"programs only\"). Targets: hot call "
             "≤ 0.5x and "
             "first call ≤ 0.25x Paddle SOT's on `two_ops`, every workload's hot call no slower than Paddle "
             "SOT's.", "",
             "| interpreter | case | eager | Paddle SOT hot | framehook hot | ratio | framehook, programs only | "
             "ratio | Paddle SOT first | framehook first | ratio |",
             "| --- | --- |" + " ---: |" * 9]
    for name, report in reports.items():
        hot, first = report["hot_us"], report["first_call_ms"]
        for case in report["translations"]:
            theirs, ours, static = (hot[f"{case}/{who}"] for who in ("paddle_sot", "framehook", "framehook_static"))
            first_theirs, first_ours = first[f"{case}/paddle_sot"], first[f"{case}/framehook"]
            lines.append(f"| {name} | {case} | {hot[f'{case}/eager']:.1f} | {theirs:.1f} | {ours:.1f} | "
                         f"{ours / theirs:.2f} | {static:.1f} | {static / theirs:.2f} | {first_theirs:.1f} | "
                         f"{first_ours:.1f} | {first_ours / first_theirs:.2f} |")
    lines.append("")
    for name, report in reports.items():
        missed = [f"{check['target']} ({check['value']:.2f})" for check in report["targets"] if not check["met"]]
        lines.append(f"- {name} (Python {report['python']}, paddle {report['paddle']}, load "
                     f"{report['loadavg'][0]:.1f}): " + ("every target met" if not missed else
                                                         "**missed**: " + "; ".join(missed)))
    return "\n".join(lines)


def main(argv: Optional[Sequence[str]] = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    if "--only" not in arguments:
        arguments = ["--only", PADDLE_INTERPRETERS, *arguments]
    return bench.script_bench_main(arguments, description=__doc__.splitlines()[0], script=SCRIPT,
                                   prefix="sot-paddle", markers=(TABLE_START, TABLE_END), tables=markdown_table,
                                   add_options=add_options, script_options=script_options)


def add_options(parser: Any) -> None:
    parser.add_argument("--repeats", type=int, default=15, help="batches of each hot call (default 15)")
    parser.add_argument("--first-repeats", type=int, default=5, help="first calls of each case (default 5)")


def script_options(args: Any, name: str) -> list[str]:
    return ["--repeats", str(args.repeats), "--first-repeats", str(args.first_repeats)]


if __name__ == "__main__":
    sys.exit(main())
