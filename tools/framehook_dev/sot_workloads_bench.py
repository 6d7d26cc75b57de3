"""Time SOT's translator beside eager on Python-heavy array workloads, on every interpreter.

    python -m framehook_dev.sot_workloads_bench                    # all eight interpreters
    python -m framehook_dev.sot_workloads_bench --only 3.13 --fast # a quick, rough run on one
    python -m framehook_dev.sot_workloads_bench --report-only      # the tables from the saved results
    python -m framehook_dev.sot_workloads_bench --instructions --only 3.13,3.14,3.15  # callgrind counts

For each interpreter: the venv of framehook_dev.matrix with a release build of framehook and
pyperf, as framehook_dev.bench prepares them, then one pyperf run of
benches/sot_workloads.py there (the workloads of benches/sot_models.py eager, translated, as
generated code alone and on their first call; the 2-op hot call; Paddle's SOT first calls
where paddle is installed), which writes benches/results/sot-workloads-<name>.json. Ends
with the tables over every interpreter with results, and each target met or missed, printed
and written between their markers in docs/performance.md.

With ``--instructions``, the same venvs run benches/sot_instructions.py instead: instructions
per call of each workload eager and translated, counted by callgrind (valgrind installed on
first need), in benches/results/sot-instructions-<name>.json, for where timings on a shared
machine are too noisy to compare interpreters by a few percent; its table (and 3.14 beside
3.13 by these counts) goes between its own markers.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any, Optional

from . import bench, matrix, provision

SCRIPT = matrix.REPO / "benches" / "sot_workloads.py"
INSTRUCTIONS_SCRIPT = matrix.REPO / "benches" / "sot_instructions.py"
TABLE_START = "<!-- sot-workloads-table-start -->"
TABLE_END = "<!-- sot-workloads-table-end -->"
INSTRUCTIONS_START = "<!-- sot-instructions-table-start -->"
INSTRUCTIONS_END = "<!-- sot-instructions-table-end -->"
# pyperf's processes, values and warmups per process, minimum seconds per value: twice the
# processes of framehook_dev.bench, as the run is short (about two minutes per interpreter)
# and the ratios are judged per workload, not averaged over several.
PYPERF = ["--processes", "10", "--values", "3", "--warmups", "1", "--min-time", "0.03"]
# Each newer release's translated/eager ratio on each workload at most this times the
# release before's (the script judges the other targets, per interpreter).
AGAINST_PREVIOUS = 1.03
RELEASE_PAIRS = (("3.13", "3.14"), ("3.14", "3.15"))


def add_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--fast", action="store_true", help="a quick, rough run (fewer pyperf processes and values)")
    parser.add_argument("--instructions", action="store_true",
                        help="count instructions per call with callgrind instead of timing (needs valgrind)")


def pyperf_options(args: argparse.Namespace, name: str) -> list[str]:
    return bench.FAST if args.fast else PYPERF


def instruction_options(args: argparse.Namespace, name: str) -> list[str]:
    provision.ensure_valgrind(matrix.resolve(name).in_sid)
    return []


def build_kind(report: dict[str, Any]) -> str:
    implementation = report["implementation"]
    return ("debug build" if implementation["debug"] else
            "free-threaded" if implementation["gil"] == "off" else "release")


def against_previous(reports: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Per workload and pair of releases measured: the newer's translated/eager ratio within
    AGAINST_PREVIOUS of the older's (timed, or counted in instructions where the reports are
    sot_instructions.py's)."""
    checks = []
    for old_name, new_name in RELEASE_PAIRS:
        if old_name not in reports or new_name not in reports:
            continue
        old_report = reports[old_name]
        workloads = old_report.get("instructions_per_call") or old_report["workloads"]
        for workload in (name for name in workloads if name != "two_ops"):
            old, new = (translated_to_eager(reports[name], workload) for name in (old_name, new_name))
            if old is not None and new is not None:
                checks.append({"workload": workload, "old": old_name, "new": new_name, "ratio_old": old,
                               "ratio_new": new, "met": new <= AGAINST_PREVIOUS * old})
    return checks


def describe_checks(checks: list[dict[str, Any]], what: str) -> list[str]:
    """One paragraph per pair of releases."""
    lines = []
    for old_name, new_name in RELEASE_PAIRS:
        pair = [c for c in checks if (c["old"], c["new"]) == (old_name, new_name)]
        if pair:
            lines += ["", f"{new_name} beside {old_name}, {what} (target: {new_name}'s at most "
                      f"{AGAINST_PREVIOUS}x {old_name}'s): "
                      + "; ".join(f"{c['workload']} {c['ratio_new']:.3f} against {c['ratio_old']:.3f} "
                                  f"({'met' if c['met'] else '**missed**'})" for c in pair) + "."]
    return lines


def print_checks(checks: list[dict[str, Any]], what: str) -> None:
    for check in checks:
        print(f"{'met ' if check['met'] else 'MISS'}  {check['new']:6} {check['workload']}: {what} "
              f"{check['ratio_new']:.3f}, at most {AGAINST_PREVIOUS} x {check['old']}'s {check['ratio_old']:.3f}")


def translated_to_eager(report: dict[str, Any], workload: str) -> Optional[float]:
    if "instructions_per_call" in report:
        counts = report["instructions_per_call"].get(workload)
        return None if counts is None else counts["translated"] / counts["eager"]
    row = report["workloads"].get(workload)
    return None if row is None else row["translated_us"] / row["eager_us"]


def verdict(report: dict[str, Any], workload: str) -> Optional[bool]:
    """Whether ``workload``'s target is met on this interpreter; None where it is not judged."""
    return next((check["met"] for check in report["targets"] if check["workload"] == workload), None)


def markdown_tables(reports: dict[str, dict[str, Any]]) -> str:
    lines = ["Release builds, numpy backend, pyperf (medians; µs per call unless marked). *Generated code "
             "alone*: SOT's code for the call run as a plain function, without the hook and the guards. "
             "*First call*: after `sot.reset()`, translation included. Target: translated at least "
             "1.5x faster than eager on each workload, 2x on dense (judged on the release builds of 3.9-3.15; "
             "in bold where missed).", "",
             "| interpreter | workload | eager | translated | speedup | generated code alone | guards | breaks | "
             "first call (ms) | Paddle's SOT first call (ms) |",
             "| --- | --- |" + " ---: |" * 8]
    for name, report in reports.items():
        for workload, row in report["workloads"].items():
            paddle = row["paddle_first_call_ms"]
            cells = [name, workload, f"{row['eager_us']:.1f}", f"{row['translated_us']:.1f}",
                     f"**{row['speedup']:.2f}x**" if verdict(report, workload) is False else f"{row['speedup']:.2f}x",
                     f"{row['generated_us']:.1f}", str(row["sot"]["guards"]), str(len(row["sot"]["graph_breaks"])),
                     f"{row['first_call_ms']:.2f}",
                     "-" if paddle is None else f"{paddle:.0f}"]
            lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "The 2-op hot call (`x * 2.0 + y` on 3-element arrays) over eager; target: at most 2 µs.", "",
              "| interpreter | eager | translated | over eager | target | conditions |",
              "| --- |" + " ---: |" * 3 + " --- | --- |"]
    for name, report in reports.items():
        two_ops = report["two_ops"]
        cells = [name, f"{two_ops['eager_us']:.2f}", f"{two_ops['translated_us']:.2f}",
                 f"+{two_ops['hot_over_eager_us']:.2f}", "met" if verdict(report, "two_ops") else "**missed**",
                 f"{report['python']} {build_kind(report)}, numpy {report['numpy']}; "
                 f"load {report['loadavg'][0]:.1f}"]
        lines.append("| " + " | ".join(cells) + " |")
    lines += describe_checks(against_previous(reports), "translated/eager")
    return "\n".join(lines)


def instruction_tables(reports: dict[str, dict[str, Any]]) -> str:
    lines = ["Release builds (3.14d, 3.15d: their debug builds), numpy backend: instructions per call counted by "
             "callgrind (`--instructions`; exact and repeatable, where the timings above vary by more than the 3% "
             "judged here), after the first calls.", "",
             "| interpreter | workload | eager | translated | translated/eager |", "| --- | --- |" + " ---: |" * 3]
    for name, report in reports.items():
        for workload, counts in report["instructions_per_call"].items():
            lines.append(f"| {name} | {workload} | {counts['eager']:,.0f} | {counts['translated']:,.0f} | "
                         f"{counts['ratio']:.3f} |")
    lines += describe_checks(against_previous(reports), "translated/eager in instructions")
    return "\n".join(lines)


def print_instruction_targets(reports: dict[str, dict[str, Any]]) -> None:
    print()
    print_checks(against_previous(reports), "translated/eager in instructions")


def print_targets(reports: dict[str, dict[str, Any]]) -> None:
    print()
    for name, report in reports.items():
        for check in report["targets"]:
            print(f"{'met ' if check['met'] else 'MISS'}  {name:6} {check['target']}: {check['value']}")
    print_checks(against_previous(reports), "translated/eager")


def main(argv: Optional[Sequence[str]] = None) -> int:
    description = __doc__.splitlines()[0]
    if "--instructions" in (sys.argv[1:] if argv is None else argv):
        return bench.script_bench_main(argv, description=description, script=INSTRUCTIONS_SCRIPT,
                                       prefix="sot-instructions", markers=(INSTRUCTIONS_START, INSTRUCTIONS_END),
                                       tables=instruction_tables, after_report=print_instruction_targets,
                                       add_options=add_options, script_options=instruction_options)
    return bench.script_bench_main(argv, description=description, script=SCRIPT, prefix="sot-workloads",
                                   markers=(TABLE_START, TABLE_END), tables=markdown_tables,
                                   after_report=print_targets, add_options=add_options,
                                   script_options=pyperf_options)


if __name__ == "__main__":
    sys.exit(main())
