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

import sys
from collections.abc import Sequence
from typing import Any, Optional

from . import bench, matrix

REPO = matrix.REPO
SCRIPT = REPO / "benches" / "bytecode.py"
TABLE_START = "<!-- bytecode-table-start -->"
TABLE_END = "<!-- bytecode-table-end -->"


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


def print_targets(reports: dict[str, dict[str, Any]]) -> None:
    print()
    for report in reports.values():
        for check in report["targets"]:
            print(f"{'met ' if check['met'] else 'MISS'}  {check['interpreter']:6} {check['target']:75} "
                  f"{check['value']}")


def main(argv: Optional[Sequence[str]] = None) -> int:
    return bench.script_bench_main(argv, description=__doc__.splitlines()[0], script=SCRIPT, prefix="bytecode",
                                   markers=(TABLE_START, TABLE_END), tables=markdown_tables,
                                   after_report=print_targets)


if __name__ == "__main__":
    sys.exit(main())
