"""Time scikit-learn's 1-row inference through SOT's translator beside eager (issue 43).

    python -m framehook_dev.sot_sklearn_bench                 # 3.12 and 3.13
    python -m framehook_dev.sot_sklearn_bench --only 3.12     # one
    python -m framehook_dev.sot_sklearn_bench --report-only   # the table from the saved results
    python -m framehook_dev.sot_sklearn_bench --only 3.12 --instructions  # counted by callgrind

For each interpreter: a venv of its own (``--venvs``; never framehook_dev.matrix's) with
scikit-learn and its dependencies as the suites' manifest pins them for that Python
(suites_manifest.json, "sklearn"), numpy and framehook's optimised build (``make wheel``'s:
a release build with profile-guided optimisation, trained on the fuzzer's programs, the SOT
corpus and the model workloads, never on scikit-learn; ``--no-pgo``: a plain release build,
to compare), in a cargo target directory of its own, then one run of benches/sot_sklearn.py there,
which writes benches/results/sot-sklearn-<name>.json. Ends with the table per estimator and
method over every interpreter with results, printed and written between its markers in
docs/performance.md. With ``--instructions`` the calls are counted by callgrind instead
(valgrind installed on first need): results ``sot-sklearn-instructions-<name>.json`` and a
table of their own.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Optional

from . import bench, matrix, provision, sot_suites

SCRIPT = matrix.REPO / "benches" / "sot_sklearn.py"
INTERPRETERS = ("3.12", "3.13")
VENVS = matrix.BUILD_DIR / "sklearn-bench-venvs"
TABLE_START = "<!-- sot-sklearn-table-start -->"
TABLE_END = "<!-- sot-sklearn-table-end -->"
INSTRUCTIONS_START = "<!-- sot-sklearn-instructions-start -->"
INSTRUCTIONS_END = "<!-- sot-sklearn-instructions-end -->"


def add_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--batches", type=int, default=41, help="timed batches of each way (default 41)")
    parser.add_argument("--batch-ms", type=float, default=2.0, help="milliseconds per batch, at least (default 2)")
    parser.add_argument("--venvs", type=Path, default=VENVS,
                        help=f"where each interpreter's venv is made, as VENVS/<interpreter> (default {VENVS})")
    parser.add_argument("--no-pgo", action="store_true",
                        help="a plain release build, without profile-guided optimisation (to compare)")
    parser.add_argument("--instructions", action="store_true",
                        help="count instructions per call with callgrind instead of timing (minutes per interpreter)")


def script_options(args: argparse.Namespace, name: str) -> list[str]:
    build = ["--build", "release" if args.no_pgo else "release+pgo"]
    if args.instructions:
        return ["--instructions", *build]
    return ["--batches", str(args.batches), "--batch-ms", str(args.batch_ms), *build]


def prepared(name: str, args: argparse.Namespace) -> matrix.Target:
    """The interpreter's venv with the pinned scikit-learn, numpy, maturin and framehook's
    optimised build (unless --no-build; --no-pgo: a plain release build)."""
    target = bench.own_venv(name, args.venvs, "sklearn-bench")
    _, sklearn = sot_suites.load_manifest()
    pins = sot_suites.sklearn_requirements(target, sklearn)
    if not pins:
        raise RuntimeError(f"the suites' manifest pins no scikit-learn for {name}")
    wanted = ["--only-binary", ":all:", "numpy", "maturin>=1.7,<2", *pins]
    bench.ensure_installed(target, wanted, "\n".join(wanted).encode(), "framehook-sklearn-bench.sha256",
                           " ".join(pins))
    if not args.no_build:
        matrix.build_and_install(target, release=True, testing=False, profile_guided=not args.no_pgo)
    if args.instructions:
        provision.ensure_valgrind(target.in_sid)
    return target


def ratio(value: float) -> str:
    return f"{value:.2f}x"


def first_call_cell(call: dict[str, Any], key: str = "first_ms") -> str:
    """A first call's median milliseconds, and the range of those timed."""
    if key not in call:
        return "–"
    low, high = call.get(f"{key}_range", (call[key], call[key]))
    return f"{call[key]:.1f} ({low:.1f}–{high:.1f})"


def build_label(report: dict[str, Any]) -> str:
    return {"release+pgo": "release build with profile-guided optimisation (`make wheel`)",
            "release": "plain release build"}[report.get("build", "release")]


def markdown_tables(reports: dict[str, dict[str, Any]]) -> str:
    lines = []
    for name, report in reports.items():
        lines += [
            f"**{name}** (Python {report['python']}, scikit-learn {report['sklearn']}, numpy {report['numpy']}; "
            f"framehook {build_label(report)}; "
            f"minimum µs per call over {report['batches']} alternating batches of {report['batch_ms']:g} ms; "
            f"first call: the median of {report.get('first_calls', 1)}, each after `sot.reset()`, and their range"
            + (f"; process's first call: the median of {report['process_firsts']} fresh processes, "
               "each making the call eagerly once and then translated, and their range" if report.get("process_firsts")
               else "") + "):",
            "",
            "| estimator | method | eager µs | translated µs | speed-up | judged µs | judged speed-up | cost model "
            "| first call ms | process's first call ms | breaks | guards | graphs/ops | exact |",
            "|---|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---|",
        ]
        for call in report["calls"]:
            lines.append(
                f"| {call['estimator']} | {call['method']} | {call['eager_us']:.1f} | {call['translated_us']:.1f} "
                f"| {ratio(call['translated_speedup'])} | {call['judged_us']:.1f} | {ratio(call['judged_speedup'])} "
                f"| {call['cost_model']} | {first_call_cell(call)} | {first_call_cell(call, 'process_first_ms')} "
                f"| {call['breaks']} | {call['guards']} "
                f"| {call['graphs']}/{call['ops']} | {'yes' if call['equal'] else 'NO'} |")
        lines += ["", f"Geometric mean of the speed-ups: translated {ratio(report['translated_geomean'])}, "
                      f"judged {ratio(report['judged_geomean'])}.", ""]
    return "\n".join(lines).rstrip("\n")


def instructions_tables(reports: dict[str, dict[str, Any]]) -> str:
    lines = []
    for name, report in reports.items():
        lines += [
            f"**{name}** (Python {report['python']}, scikit-learn {report['sklearn']}, numpy {report['numpy']}; "
            f"framehook {build_label(report)}; million instructions per call, counted by callgrind over "
            f"{report['counted_calls']} calls after "
            f"{report['settle_calls']}; first call: after `sot.reset()`, translation included):",
            "",
            "| estimator | method | eager | translated | eager / translated | first call | breaks | guards |",
            "|---|---|---:|---:|---:|---:|---:|---:|",
        ]
        for call in report["calls"]:
            lines.append(
                f"| {call['estimator']} | {call['method']} | {call['eager_instructions'] / 1e6:.3f} "
                f"| {call['translated_instructions'] / 1e6:.3f} | {ratio(call['translated_ratio'])} "
                f"| {call['first_instructions'] / 1e6:.1f} | {call['breaks']} | {call['guards']} |")
        lines += ["", f"Geometric mean, eager / translated: {ratio(report['translated_geomean'])}.", ""]
    return "\n".join(lines).rstrip("\n")


def main(argv: Optional[Sequence[str]] = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    counting = "--instructions" in arguments
    return bench.script_bench_main(arguments, description=__doc__.splitlines()[0], script=SCRIPT,
                                   prefix="sot-sklearn-instructions" if counting else "sot-sklearn",
                                   markers=(INSTRUCTIONS_START, INSTRUCTIONS_END) if counting
                                   else (TABLE_START, TABLE_END),
                                   tables=instructions_tables if counting else markdown_tables,
                                   add_options=add_options, script_options=script_options,
                                   prepare=prepared, interpreters=INTERPRETERS)


if __name__ == "__main__":
    sys.exit(main())
