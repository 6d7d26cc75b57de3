"""Time framehook's bytecode layer beside the ``bytecode`` package on every interpreter of the matrix.

    python -m framehook_dev.bytecode_bench                    # all eight interpreters
    python -m framehook_dev.bytecode_bench --only 3.12,3.14d  # a few
    python -m framehook_dev.bytecode_bench --report-only      # the tables from the saved results

For each interpreter: the venv of framehook_dev.matrix with a release build of framehook
(with the ``testing`` feature, which has ``framehook._native._bench_bytecode``) and the
bench requirements, as framehook_dev.bench prepares them (FRAMEHOOK_BUILD_DIR honoured),
then one run of benches/bytecode.py there, which writes benches/results/bytecode-<name>.json.
Ends with the tables over every interpreter with results (the figures and each target,
met or missed), printed and written between their markers in docs/performance.md.
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
SCRIPT = REPO / "benches" / "bytecode.py"
RESULTS = REPO / "benches" / "results"
PAGE = REPO / "docs" / "performance.md"
TABLE_START = "<!-- bytecode-table-start -->"
TABLE_END = "<!-- bytecode-table-end -->"


def log(message: str) -> None:
    print(f"[bytecode-bench] {message}", file=sys.stderr, flush=True)


def result_path(name: str) -> Path:
    return RESULTS / f"bytecode-{name}.json"


def measure(name: str, args: argparse.Namespace) -> None:
    target = bench.prepared(name, args)
    out = result_path(name)
    out.unlink(missing_ok=True)
    argv = [target.venv_python, str(SCRIPT), "--name", name, "--repeats", str(args.repeats),
            "--min-time", str(args.min_time), "--json", str(out)]
    log(f"{name}: {SCRIPT.relative_to(REPO)} (load average {os.getloadavg()[0]:.2f})")
    done = target.run(argv, extra_env={"PYTHONHASHSEED": "0"})
    if done.returncode != 0 or not out.exists():
        raise RuntimeError(f"benches/bytecode.py failed (exit {done.returncode})")


def us(value: Optional[float]) -> str:
    if value is None:
        return "-"
    return f"{value:.0f}" if value >= 100 else f"{value:.1f}"


def markdown_tables(reports: dict[str, dict[str, Any]]) -> str:
    lines = ["µs per call (minimum over the repeats); instrs: canonical instructions "
             "(`len(framehook.bytecode.decode(code))`); fh decode, assemble, reassemble: the phases timed in Rust; "
             "`fh.reassemble()`, `fh.decode()`: `framehook.bytecode`'s functions called from Python; ratios: "
             "`bytecode`'s round trip `Bytecode.from_code(c).to_code()` over framehook's assemble and reassemble "
             "phases.", "",
             "| interpreter | function | instrs | fh decode | fh assemble | fh reassemble | "
             "`fh.reassemble()` | `fh.decode()` | `bytecode` round trip | ratio to assemble | ratio to reassemble | "
             "decode µs per 100 instrs |",
             "| --- | --- |" + " ---: |" * 10]
    for name, report in reports.items():
        for function, result in report["functions"].items():
            timing = {key: row["min_us"] for key, row in result["timings"].items()}
            count = result["sizes"]["canonical_instructions"]
            ratio = result["ratios"]
            cells = [name, f"`{function}`", str(count), us(timing["fh_decode"]), us(timing["fh_assemble"]),
                     us(timing["fh_reassemble"]), us(timing["fh_py_reassemble"]), us(timing["fh_py_decode"]),
                     us(timing.get("bc_roundtrip")),
                     f"{ratio['bc_roundtrip/fh_assemble']:.0f}x" if "bc_roundtrip/fh_assemble" in ratio else "-",
                     f"{ratio['bc_roundtrip/fh_reassemble']:.0f}x" if "bc_roundtrip/fh_reassemble" in ratio else "-",
                     f"{timing['fh_decode'] * 100 / count:.1f}"]
            lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "Each target per interpreter, met or missed, with the figures for `small` / `medium` / "
              "`argparse._parse_known_args` (assemble: at most 50 µs for `medium` and any function of up to "
              "100 instructions, 50 µs per 100 beyond):", "",
              "| interpreter | ≥ 20x `bytecode`'s round trip | assemble ≤ 50 µs (beyond 100 instrs: per 100) | "
              "decode ≤ 20 µs per 100 instrs | conditions |", "| --- | --- | --- | --- | --- |"]
    for name, report in reports.items():
        cells = [name]
        for kind, unit in (("ratio", "x"), ("assemble", " µs"), ("decode", " µs")):
            checks = [check for check in report["targets"] if check["kind"] == kind]
            if not checks:
                cells.append("- (no `bytecode` before 3.11)")
                continue
            missed = [f"`{check['function']}`" for check in checks if not check["met"]]
            verdict = "met" if not missed else f"**missed** ({', '.join(missed)})"
            cells.append(f"{verdict}: " + " / ".join(f"{check['value']:.{0 if kind == 'ratio' else 1}f}"
                                                        for check in checks) + unit)
        kind = ("debug build" if report["implementation"]["debug"] else
                "free-threaded" if report["implementation"]["gil"] == "off" else "release")
        cells.append(f"{report['python']} {kind}; load {report['loadavg'][0]:.1f}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def write_report(reports: dict[str, dict[str, Any]]) -> None:
    tables = markdown_tables(reports)
    text = PAGE.read_text()
    if TABLE_START in text and TABLE_END in text:
        head, rest = text.split(TABLE_START, 1)
        PAGE.write_text(head + TABLE_START + "\n" + tables + "\n" + TABLE_END + rest.split(TABLE_END, 1)[1])
    print(tables)
    print()
    for report in reports.values():
        for check in report["targets"]:
            print(f"{'met ' if check['met'] else 'MISS'}  {check['interpreter']:6} {check['target']:75} "
                  f"{check['value']}")


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
