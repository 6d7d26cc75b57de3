"""Time SOT's translator beside jax.jit and numba.njit on the Python-heavy workloads.

    python -m framehook_dev.sot_peers_bench                     # 3.12 and 3.13
    python -m framehook_dev.sot_peers_bench --only 3.12 --fast  # a quick, rough run on one
    python -m framehook_dev.sot_peers_bench --report-only       # the tables from the saved results

For each interpreter: a venv of its own (``--venvs``; never framehook_dev.matrix's, which
the test runs own), made with the pyenv interpreter, with the pinned peers of
benches/requirements-peers.txt (jax's CPU build, numba, pyperf) and a release build of
framehook (the build users get, in a cargo target directory of its own), then one pyperf run
of benches/sot_peers.py there: per workload of benches/sot_models.py, eager numpy,
framehook's translated call (hot and first), the same code under ``jax.jit`` (hot to
dispatch, hot until ready, first call compile included) and, where it applies,
``numba.njit``; each peer's results checked against eager first. Writes
benches/results/sot-peers-<name>.json; ends with the tables over every interpreter with
results, printed and written between their markers in docs/performance.md.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Optional

from . import bench, matrix

SCRIPT = matrix.REPO / "benches" / "sot_peers.py"
REQUIREMENTS = matrix.REPO / "benches" / "requirements-peers.txt"
# jax's wheels start at 3.11 and numba's end at 3.14: the interpreters both install on whose
# pyenv builds the machines have.
INTERPRETERS = ("3.12", "3.13")
VENVS = matrix.BUILD_DIR / "peers-venvs"
TABLE_START = "<!-- sot-peers-table-start -->"
TABLE_END = "<!-- sot-peers-table-end -->"
# pyperf's processes, values and warmups per process, minimum seconds per value: fewer
# processes than sot_workloads_bench, as every worker of a peer imports it (a second or so
# for jax) and each first call of numba compiles for about a second.
PYPERF = ["--processes", "6", "--values", "3", "--warmups", "1", "--min-time", "0.03"]


def add_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--fast", action="store_true", help="a quick, rough run (fewer pyperf processes and values)")
    parser.add_argument("--venvs", type=Path, default=VENVS,
                        help=f"where each interpreter's venv is made, as VENVS/<interpreter> (default {VENVS})")


def pyperf_options(args: argparse.Namespace, name: str) -> list[str]:
    return bench.FAST if args.fast else PYPERF


def prepared(name: str, args: argparse.Namespace) -> matrix.Target:
    """The interpreter's peers venv with the pinned peers and a release build of framehook
    (unless --no-build), built in a target directory of its own (``peers-<name>``)."""
    target = bench.own_venv(name, args.venvs, "peers")
    bench.ensure_requirements(target, REQUIREMENTS, "framehook-peers-requirements.sha256")
    if not args.no_build:
        matrix.build_and_install(target, release=True, testing=False)
    return target


def cell(value: Optional[float], digits: int = 1) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def times(value: Optional[float]) -> str:
    """A peer's time over framehook's, as ``2.31x`` (above 1: framehook is faster)."""
    return "n/a" if value is None else f"{value:.2f}x"


def aim_cell(row: dict[str, Any]) -> str:
    missed = [what for what, met in (("hot call not under jax.jit's (ready)", row["aim"]["faster_than_jax_ready"]),
                                     ("first call over the bar", row["aim"]["first_call_in_milliseconds"])) if not met]
    return "met" if not missed else "**missed**: " + "; ".join(missed)


def differences(reports: dict[str, dict[str, Any]]) -> list[str]:
    """How the peers run the workloads: jax's way for all, then one line per workload and
    peer that changes more."""
    lines = [f"- jax.jit, every workload: {next(iter(reports.values()))['jax_method']}."]
    noted = set()
    for report in reports.values():
        for workload, row in report["workloads"].items():
            for peer, label in (("jax", "jax.jit"), ("numba", "numba.njit")):
                note = row["differences"][peer]
                if note and (workload, peer) not in noted:
                    noted.add((workload, peer))
                    lines.append(f"- {label}, {workload}: {note}.")
    return lines


def markdown_tables(reports: dict[str, dict[str, Any]]) -> str:
    first_report = next(iter(reports.values()))
    bar_ms = first_report["first_call_bar_ms"]
    lines = ["Release build of framehook (numpy backend) beside jax.jit on jax's CPU build and numba.njit, "
             "one pyperf run per interpreter (medians). Hot calls in µs: *jax dispatch* is the time until the "
             "jitted call returns, *jax ready* until its result is ready (`block_until_ready`), *jax sync* the "
             "same with jax's CPU client computing on the calling thread (`jax_cpu_enable_async_dispatch` off; "
             "on by default). Ratios are the "
             "peer's time over framehook's translator's (above 1: framehook faster). Each peer's results were "
             f"checked against eager numpy first (`np.allclose`, rtol {first_report['tolerance']['rtol']:g}, "
             f"atol {first_report['tolerance']['atol']:g}).", "",
             "| interpreter | workload | eager | framehook | jax dispatch | jax ready | jax sync | numba | "
             "eager / framehook | jax ready / framehook | jax sync / framehook | numba / framehook |",
             "| --- | --- |" + " ---: |" * 10]
    for name, report in reports.items():
        for workload, row in report["workloads"].items():
            ratios = row["ratios"]
            cells = [name, workload, cell(row["eager_us"]), cell(row["framehook_us"]), cell(row["jax_dispatch_us"]),
                     cell(row["jax_ready_us"]), cell(row.get("jax_synchronous_us")), cell(row["numba_us"]),
                     times(ratios["eager"]), times(ratios["jax_ready"]), times(ratios.get("jax_synchronous")),
                     times(ratios["numba"])]
            lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "First calls in ms: framehook's after `sot.reset()` (translation and graph compilation), a new "
              "`jax.jit` of a fresh function object until its result is ready (tracing, lowering, XLA's "
              "compilation), a new `numba.njit` dispatcher of a fresh function object (compilation); each process's "
              "one-time set-up is in pyperf's warm-up, not here. The aim (issue 43): framehook's hot call faster "
              f"than jax.jit's until ready, and its first call in milliseconds (at most {bar_ms:g} ms).", "",
              "| interpreter | workload | framehook | jax.jit | numba | jax / framehook | numba / framehook | aim |",
              "| --- | --- |" + " ---: |" * 5 + " --- |"]
    for name, report in reports.items():
        for workload, row in report["workloads"].items():
            ratios = row["ratios"]
            cells = [name, workload, cell(row["framehook_first_call_ms"], 2), cell(row["jax_first_call_ms"]),
                     cell(row["numba_first_call_ms"]), times(ratios["jax_first_call"]),
                     times(ratios["numba_first_call"]), aim_cell(row)]
            lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "What the peers run differently:", "", *differences(reports), "", "Conditions:", ""]
    for name, report in reports.items():
        versions = report["versions"]
        spread = sorted(report["stdev_pct"].values())
        lines.append(f"- {name}: CPython {versions['python']}, numpy {versions['numpy']}, jax and jaxlib "
                     f"{versions['jaxlib']}, numba {versions['numba']} (llvmlite {versions['llvmlite']}), "
                     f"pyperf {versions['pyperf']}; {report['cpus']} CPUs, load average "
                     f"{report['loadavg_before'][0]:.1f} before the run, {report['loadavg_after'][0]:.1f} after; "
                     f"std dev of a benchmark's values {statistics.median(spread):.0f}% of their mean (median "
                     f"over the benchmarks), up to {spread[-1]:.0f}%.")
    return "\n".join(lines)


def main(argv: Optional[Sequence[str]] = None) -> int:
    return bench.script_bench_main(argv, description=__doc__.splitlines()[0], script=SCRIPT, prefix="sot-peers",
                                   markers=(TABLE_START, TABLE_END), tables=markdown_tables,
                                   add_options=add_options, script_options=pyperf_options, prepare=prepared,
                                   interpreters=INTERPRETERS)


if __name__ == "__main__":
    sys.exit(main())
