"""Time SOT's translator beside eager on held-out workloads (numpy code from public repositories).

    python -m framehook_dev.sot_heldout_bench                      # 3.9-3.13 (pyenv's interpreters)
    python -m framehook_dev.sot_heldout_bench --only 3.12 --fast   # a quick, rough run on one
    python -m framehook_dev.sot_heldout_bench --report-only        # the table from the saved results
    python -m framehook_dev.sot_heldout_bench --only 3.12 --instructions  # callgrind counts too

The workloads' files are other projects' and never committed: heldout_manifest.json (in this
package) pins each to a repository, path, commit and SHA-256, and they are read from
``$FRAMEHOOK_CACHE/heldout`` (``--heldout-dir``). Where one is missing or differs, this says
which, prints a SKIPPED line and exits 0, before building anything.

For each interpreter: a venv of its own under ``$FRAMEHOOK_CACHE/heldout-venvs/<name>`` (numpy,
pyperf as benches/requirements.txt pins it, maturin), never the matrix's venvs, which other
runs rebuild; a release build of framehook in a target directory of its own
(``$FRAMEHOOK_CACHE/heldout-target/<name>``); then one pyperf run of benches/sot_heldout.py
there, which writes benches/results/sot-heldout-<name>.json (``--instructions``: with each
workload's instructions per call counted by callgrind, valgrind installed on first need). Ends
with the table over every interpreter with results, printed and written between its markers
in docs/performance.md.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Optional

from . import bench, matrix, provision

REPO = matrix.REPO
SCRIPT = REPO / "benches" / "sot_heldout.py"
MANIFEST = Path(__file__).resolve().parent / "heldout_manifest.json"
RESULTS = REPO / "benches" / "results"
PAGE = REPO / "docs" / "performance.md"
TABLE_START = "<!-- sot-heldout-table-start -->"
TABLE_END = "<!-- sot-heldout-table-end -->"
# The interpreters pyenv provides on the host: no sid root, no free-threaded build to make.
INTERPRETERS = ["3.9", "3.10", "3.11", "3.12", "3.13"]
# Ten processes as framehook_dev.sot_workloads_bench: the ratios are judged per workload.
PYPERF = ["--processes", "10", "--values", "3", "--warmups", "1", "--min-time", "0.03"]
VENV_REQUIREMENTS = ["--only-binary", "numpy", "numpy", "maturin>=1.7,<2",
                     "-r", str(REPO / "benches" / "requirements.txt")]


def log(message: str) -> None:
    print(f"[sot-heldout] {message}", file=sys.stderr, flush=True)


def heldout_dir() -> Path:
    return provision.CACHE / "heldout"


def missing_or_changed(directory: Path) -> list[str]:
    """Why the manifest's files cannot be used from ``directory`` (empty: they can)."""
    problems = []
    for entry in json.loads(MANIFEST.read_text())["files"]:
        path = directory / entry["file"]
        where = f"git -C <clone of {entry['repo']}> show {entry['commit']}:{entry['path']} > {path}"
        if not path.is_file():
            problems.append(f"{entry['file']} is missing ({where})")
        elif hashlib.sha256(path.read_bytes()).hexdigest() != entry["sha256"]:
            problems.append(f"{entry['file']} differs from the manifest's SHA-256 ({where})")
    return problems


def venv_of(name: str) -> Path:
    return provision.CACHE / "heldout-venvs" / name


def ensure_venv(name: str) -> Path:
    """The interpreter's own venv with numpy, pyperf and maturin; its python."""
    venv = venv_of(name)
    python = venv / "bin" / "python"
    wanted = hashlib.sha256("\n".join(VENV_REQUIREMENTS).encode()
                            + (REPO / "benches" / "requirements.txt").read_bytes()).hexdigest()
    stamp = venv / "framehook-heldout-requirements.sha256"
    if stamp.exists() and stamp.read_text().strip() == wanted:
        return python
    log(f"{name}: creating {venv}")
    base = provision.pyenv_python(name)
    for argv in ([str(base), "-m", "venv", "--clear", str(venv)],
                 [str(python), "-m", "pip", "install", "--quiet", "--upgrade", "pip"],
                 [str(python), "-m", "pip", "install", "--quiet", *VENV_REQUIREMENTS]):
        done = subprocess.run(argv, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} failed:\n{done.stdout[-3000:]}")
    stamp.write_text(wanted + "\n")
    return python


def build_and_install(name: str, python: Path) -> None:
    """A release build of framehook (pyproject.toml's features: the build users get) in
    this driver's own target directory, installed into the venv."""
    target_dir = provision.CACHE / "heldout-target" / name
    wheels = target_dir / "wheels"
    shutil.rmtree(wheels, ignore_errors=True)
    log(f"{name}: building framehook, release (target dir {target_dir})")
    build = subprocess.run(
        [str(python.parent / "maturin"), "build", "--release", "--interpreter", str(python),
         "--manifest-path", str(REPO / "Cargo.toml"), "--out", str(wheels)],
        cwd=REPO, env=dict(os.environ, CARGO_TARGET_DIR=str(target_dir)), text=True,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    built = sorted(wheels.glob("framehook-*.whl"))
    if build.returncode != 0 or len(built) != 1:
        raise RuntimeError(f"maturin build failed (wheels: {built}):\n{build.stdout[-6000:]}")
    install = subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--force-reinstall", "--no-deps",
                              str(built[0])], text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if install.returncode != 0:
        raise RuntimeError(f"installing {built[0].name} failed:\n{install.stdout[-3000:]}")


def measure(name: str, args: argparse.Namespace) -> None:
    python = ensure_venv(name)
    if not args.no_build:
        build_and_install(name, python)
    if args.instructions:
        provision.ensure_valgrind(False)
    out = RESULTS / f"sot-heldout-{name}.json"
    out.unlink(missing_ok=True)
    log(f"{name}: {SCRIPT.relative_to(REPO)} (load average {os.getloadavg()[0]:.2f})")
    done = subprocess.run([str(python), str(SCRIPT), "--name", name, "--heldout-dir", str(args.heldout_dir),
                           *(bench.FAST if args.fast else PYPERF), *(["--instructions"] if args.instructions else []),
                           "--json", str(out)],
                          cwd=REPO, env=dict(os.environ, PYTHONHASHSEED="0"))
    if not out.exists():
        raise RuntimeError(f"{SCRIPT.name} failed (exit {done.returncode})")
    if done.returncode != 0:
        log(f"{name}: a translated result differed from eager (see the table)")


# ------------------------------------------------------------------ the report


def markdown_tables(reports: dict[str, dict[str, Any]]) -> str:
    lines = ["Release builds, numpy backend, the translator as it was before any work on these workloads. "
             "*Eager*, *translated*: pyperf medians, µs per call. *Interleaved*: eager over translated timed "
             "alternately in one process (41 batches of 2 ms or more, the minimum of each), a cross-check of "
             "pyperf's medians, whose processes meet a shared machine's load at different moments. *Generated code "
             "alone*: SOT's code run as a plain function, without the hook and the guards (where the translation is "
             "whole). "
             "*First call*: after `sot.reset()`, translation included. *Instructions*: translated/eager in "
             "instructions per call, counted by callgrind (`--instructions`; exact and repeatable, where timings "
             "here are not). *Exact*: three translated calls gave eager's results and state bit for bit. Target "
             "(the project's workloads'): translated at least 1.5x faster than eager (pyperf); in bold where missed.",
             "", "| interpreter | workload | eager | translated | speed-up | interleaved | generated code alone "
             "| first call (ms) | instructions | graphs | ops | guards | breaks | fallbacks | exact |",
             "| --- | --- |" + " ---: |" * 12 + " --- |"]
    for name, report in reports.items():
        for workload, row in report["workloads"].items():
            checks = row["sot"]
            speedup = f"{row['speedup']:.2f}x"
            cells = [name, workload, f"{row['eager_us']:.1f}", f"{row['translated_us']:.1f}",
                     speedup if row["met"] else f"**{speedup}**", f"{row['interleaved']['speedup']:.2f}x",
                     "-" if row["generated_us"] is None else f"{row['generated_us']:.1f}",
                     f"{row['first_call_ms']:.1f}",
                     f"{row['instructions']['ratio']:.3f}" if row.get("instructions") else "-",
                     str(checks["graphs"]), str(checks["ops_captured"]), str(checks["guards"]),
                     str(len(checks["graph_breaks"])), str(len(checks["fallbacks"])),
                     "yes" if checks["exact"] else "**no**"]
            lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "Conditions: " + "; ".join(
        f"{name}: {report['python']}, numpy {report['numpy']}, load {report['loadavg'][0]:.1f}"
        for name, report in reports.items()) + "."]
    reasons = []
    for name, report in reports.items():
        for workload, row in report["workloads"].items():
            entries = ([("break", entry) for entry in row["sot"]["graph_breaks"]]
                       + [("fallback", entry) for entry in row["sot"]["fallbacks"]])
            if entries:
                reasons.append(f"- {name} {workload}: " + "; ".join(
                    f"{kind} at {entry['where']}: {entry['reason']}" for kind, entry in entries))
    if reasons:
        lines += ["", "Breaks and fallbacks, with their reasons (`sot.stats`):", "", *reasons]
    lines += ["", "Where each workload comes from (heldout_manifest.json: the files are fetched into a cache, "
              "checked by SHA-256, never committed):", ""]
    workloads_of: dict[tuple[str, str], list[str]] = {}
    for report in reports.values():
        for workload, row in report["workloads"].items():
            names = workloads_of.setdefault((row["source"]["repo"], row["source"]["path"]), [])
            if workload not in names:
                names.append(workload)
    for entry in json.loads(MANIFEST.read_text())["files"]:
        names = workloads_of.get((entry["repo"], entry["path"]))
        if names:
            lines.append(f"- {', '.join(names)}: `{entry['repo']}`, `{entry['path']}` at {entry['commit'][:12]} "
                         f"(licence: {entry['licence'].split(' (')[0]})")
    return "\n".join(lines)


def write_report(reports: dict[str, dict[str, Any]]) -> None:
    text = markdown_tables(reports)
    content = PAGE.read_text()
    if TABLE_START in content and TABLE_END in content:
        head, rest = content.split(TABLE_START, 1)
        PAGE.write_text(head + TABLE_START + "\n" + text + "\n" + TABLE_END + rest.split(TABLE_END, 1)[1])
    print(text)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="comma-separated interpreters, e.g. 3.12 or 3.10,3.13")
    parser.add_argument("--fast", action="store_true", help="a quick, rough run (fewer pyperf processes and values)")
    parser.add_argument("--instructions", action="store_true",
                        help="also count instructions per call with callgrind (minutes more per interpreter)")
    parser.add_argument("--no-build", action="store_true", help="use the framehook already installed in the venvs")
    parser.add_argument("--report-only", action="store_true", help="report from benches/results, measure nothing")
    parser.add_argument("--heldout-dir", type=Path, default=None,
                        help="where the held-out files are (default $FRAMEHOOK_CACHE/heldout)")
    args = parser.parse_args(argv)
    names = matrix.chosen_interpreters(parser, args.only, INTERPRETERS)
    args.heldout_dir = args.heldout_dir or heldout_dir()
    failed = []
    if not args.report_only:
        problems = missing_or_changed(args.heldout_dir)
        if problems:
            for problem in problems:
                log(problem)
            print(f"SKIPPED: held-out workloads: {len(problems)} file(s) of {MANIFEST.name} missing or changed "
                  f"in {args.heldout_dir}")
            return 0
        RESULTS.mkdir(parents=True, exist_ok=True)
        for name in names:
            try:
                measure(name, args)
            except (provision.ProvisionError, RuntimeError, OSError) as error:
                failed.append(name)
                log(f"{name}: ERROR: {error}")
    reports = {name: json.loads((RESULTS / f"sot-heldout-{name}.json").read_text())
               for name in INTERPRETERS if (RESULTS / f"sot-heldout-{name}.json").exists()}
    if reports:
        write_report(reports)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
