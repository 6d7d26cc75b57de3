"""Measure framehook's overhead per frame on every interpreter of the matrix.

    python -m framehook_dev.bench                     # all eight interpreters (and Paddle on 3.10, 3.13)
    python -m framehook_dev.bench --only 3.12 --fast  # a quick check on one or a few
    python -m framehook_dev.bench --report-only       # summary, charts and results table from saved results

For each interpreter: the venv of framehook_dev.matrix and a release build in its target
directory (FRAMEHOOK_BUILD_DIR honoured; with the test build's cargo feature, which has the
floor's bare eval function), pyperf from benches/requirements.txt, the frames each workload
runs per iteration (counted by a pass-through eval function), then one pyperf run of
benches/overhead.py over every workload and configuration. Writes
benches/results/pyperf-<name>.json (raw), <name>.json (summary), <name>.png
(chart, matplotlib from benches/requirements-plot.txt in a venv of its own),
summary.json (all interpreters and the targets) and the results table, between
its markers in README.md or a page of docs/.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Callable, Optional

from . import matrix, provision

REPO = matrix.REPO
BENCHES = REPO / "benches"
RESULTS = BENCHES / "results"
# Where the results table may sit (between TABLE_START and TABLE_END).
TABLE_PAGES = [REPO / "README.md", REPO / "docs"]
CORE_CONFIGS = list("abcdefghi")
PADDLE_CONFIGS = ["paddle", "paddle-callback", "paddle-skip", "sot-callback", "sot-skip"]
LABELS = {
    "a": "not imported",
    "b": "floor",
    "c": "imported",
    "d": "native decliner",
    "e": "Python decliner, cached",
    "f": "Python decliner, uncached",
    "g": "3 decliners, cached",
    "h": "identity replacement",
    "i": "hookprof",
    "j": "Python decliner, cached, specialization not kept",
}
# 3.15+ only: (e) with the interpreter not asked to keep specializing under the eval function.
SPECIALIZATION_CONFIGS = ["j"]
# Counted in an isolated sub-interpreter (own GIL; 3.12+), each over the floor there (sub-b).
SUB_CONFIGS = {"sub-b": "floor, in an isolated sub-interpreter",
               "sub-e": "Python decliner, cached, in an isolated sub-interpreter"}
# pyperf settings: processes, values and warmups per process, minimum seconds per value.
# The whole suite on all eight interpreters takes about 45 minutes, builds included.
FULL = ["--processes", "5", "--values", "3", "--warmups", "1", "--min-time", "0.03"]
DEBUG = ["--processes", "3", "--values", "3", "--warmups", "1", "--min-time", "0.03"]
FAST = ["--processes", "2", "--values", "2", "--warmups", "1", "--min-time", "0.02"]
TABLE_START = "<!-- bench-table-start -->"
TABLE_END = "<!-- bench-table-end -->"


def log(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


def ensure_requirements(target: matrix.Target, requirements: Path, stamp_name: str) -> None:
    """Installs ``requirements`` into the target's venv, unless the stamp file ``stamp_name``
    there says this content of the file is installed already."""
    ensure_installed(target, ["-r", str(requirements)], requirements.read_bytes(), stamp_name,
                     f"-r {requirements.relative_to(REPO)}")


def ensure_installed(target: matrix.Target, pip_arguments: list[str], content: bytes, stamp_name: str,
                     label: str) -> None:
    """``pip install *pip_arguments`` in the target's venv, unless the stamp file ``stamp_name``
    there says what was installed had this ``content`` (the requirements, as their text)."""
    wanted = hashlib.sha256(content).hexdigest()
    stamp = matrix.host_path(target, target.venv / stamp_name)
    if stamp.exists() and stamp.read_text().strip() == wanted:
        return
    log(f"{target.name}: pip install {label}")
    done = target.run([target.venv_python, "-m", "pip", "install", "--quiet", *pip_arguments], capture=True)
    if done.returncode != 0:
        raise RuntimeError(f"pip install {label} failed:\n{done.stdout[-3000:]}")
    stamp.write_text(wanted + "\n")


def own_venv(name: str, venvs: Path, prefix: str, python: Optional[Path] = None) -> matrix.Target:
    """A benchmark's own venv for ``python`` (default: pyenv's interpreter ``name``),
    ``venvs/name`` (never framehook_dev.matrix's, which the test runs own), made where
    missing; its builds go to a cargo target directory of their own (``<prefix>-<name>``)."""
    target = matrix.Target(f"{prefix}-{name}", str(python or provision.pyenv_python(name)), venvs / name)
    if not Path(target.venv_python).exists():
        log(f"{name}: creating venv {target.venv}")
        for argv in ([target.python, "-m", "venv", str(target.venv)],
                     [target.venv_python, "-m", "pip", "install", "--quiet", "--upgrade", "pip"]):
            done = target.run(argv, capture=True)
            if done.returncode != 0:
                raise RuntimeError(f"{' '.join(argv)} failed:\n{done.stdout[-3000:]}")
    return target


def ensure_pyperf(target: matrix.Target) -> None:
    ensure_requirements(target, BENCHES / "requirements.txt", "framehook-bench-requirements.sha256")


def plot_python() -> Path:
    """A venv with matplotlib, made once (cached like the matrix venvs)."""
    requirements = BENCHES / "requirements-plot.txt"
    venv = matrix.BUILD_DIR / "venvs" / "bench-plot"
    python = venv / "bin" / "python"
    wanted = hashlib.sha256(requirements.read_bytes()).hexdigest()
    stamp = venv / "framehook-bench-requirements.sha256"
    if stamp.exists() and stamp.read_text().strip() == wanted:
        return python
    log(f"creating {venv} for the charts")
    base = provision.pyenv_python("3.12")
    subprocess.run([str(base), "-m", "venv", "--clear", str(venv)], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "-r", str(requirements)], check=True)
    stamp.write_text(wanted + "\n")
    return python


def frames_per_iteration(target: matrix.Target) -> dict[str, float]:
    done = target.run([target.venv_python, str(BENCHES / "overhead.py"), "--count-frames"], capture=True)
    if done.returncode != 0:
        raise RuntimeError(f"counting frames failed:\n{done.stdout[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def has_paddle(target: matrix.Target) -> bool:
    probe = "import importlib.util as u; print(u.find_spec('paddle') is not None)"
    done = target.run([target.venv_python, "-c", probe], capture=True)
    return done.returncode == 0 and done.stdout.strip().splitlines()[-1] == "True"


def run_pyperf(target: matrix.Target, configs: list[str], workloads: Optional[str], options: list[str]) -> Path:
    raw = RESULTS / f"pyperf-{target.name}.json"
    raw.unlink(missing_ok=True)
    argv = [target.venv_python, str(BENCHES / "overhead.py"), *options, "--configs", ",".join(configs),
            "-o", str(raw)]
    if workloads:
        argv += ["--workloads", workloads]
    log(f"{target.name}: pyperf over {','.join(configs)}")
    done = target.run(argv, extra_env={"PYTHONHASHSEED": "0"})
    if done.returncode != 0 or not raw.exists():
        raise RuntimeError(f"the pyperf run failed (exit {done.returncode})")
    return raw


def read_pyperf(path: Path) -> dict[str, list[float]]:
    """Benchmark name -> its values (seconds per iteration), warmups and calibration left out."""
    suite = json.loads(path.read_text())
    values: dict[str, list[float]] = {}
    for benchmark in suite["benchmarks"]:
        name = benchmark.get("metadata", {}).get("name") or benchmark["runs"][0]["metadata"]["name"]
        values[name] = [value for run in benchmark["runs"] for value in run.get("values", [])]
    return values


def summarise(name: str, version: str, frames: dict[str, float], values: dict[str, list[float]]) -> dict:
    """Per workload and configuration: median, std dev, ns per frame added over (a), ratio to (b)."""
    workloads: dict[str, dict] = {}
    for workload, count in frames.items():
        medians = {config: statistics.median(values[f"{workload}/{config}"])
                   for config in CORE_CONFIGS + PADDLE_CONFIGS if f"{workload}/{config}" in values}
        rows = {}
        for config, median in medians.items():
            samples = values[f"{workload}/{config}"]
            stdev_pct = 100 * statistics.stdev(samples) / median if len(samples) > 1 else 0.0
            row = {"median_s": median, "stdev_pct": stdev_pct}
            if config in CORE_CONFIGS:
                row["added_ns_per_call"] = (median - medians["a"]) / count * 1e9
                row["ratio_to_floor"] = median / medians["b"]
            else:
                row["added_ns_per_call"] = (median - medians["paddle"]) / count * 1e9
            rows[config] = row
        workloads[workload] = {"frames_per_iteration": count, "configs": rows}
    configs = {}
    for config in CORE_CONFIGS:
        rows = [w["configs"][config] for w in workloads.values() if config in w["configs"]]
        if rows:
            configs[config] = {
                "label": LABELS[config],
                "added_ns_per_call": statistics.mean(row["added_ns_per_call"] for row in rows),
                "ratio_to_floor": math.exp(statistics.mean(math.log(row["ratio_to_floor"]) for row in rows)),
                "stdev_pct": statistics.mean(row["stdev_pct"] for row in rows),
            }
    paddle = {}
    for kind in ("callback", "skip"):
        ours = [w["configs"][f"sot-{kind}"]["added_ns_per_call"] for w in workloads.values()
                if f"sot-{kind}" in w["configs"]]
        theirs = [w["configs"][f"paddle-{kind}"]["added_ns_per_call"] for w in workloads.values()
                  if f"paddle-{kind}" in w["configs"]]
        if ours and theirs:
            paddle[kind] = {"framehook_sot_ns": statistics.mean(ours), "paddle_ns": statistics.mean(theirs),
                            "ratio": statistics.mean(ours) / statistics.mean(theirs)}
    return {"interpreter": name, "version": version, "workloads": workloads, "configs": configs, "paddle": paddle}


def probe_version(target: matrix.Target) -> str:
    result = matrix.Result(target.name)
    matrix.probe(target, result)
    return result.version.split()[0]


def prepared(name: str, args: argparse.Namespace) -> matrix.Target:
    """The interpreter's venv with a release build of framehook (unless --no-build) and pyperf."""
    target = matrix.resolve(name)
    matrix.ensure_venv(target)
    if not args.no_build:
        matrix.build_and_install(target, release=True)
    ensure_pyperf(target)
    return target


def measure(name: str, args: argparse.Namespace) -> dict:
    target = prepared(name, args)
    frames = frames_per_iteration(target)
    if args.workloads:
        frames = {workload: frames[workload] for workload in args.workloads.split(",")}
    configs = CORE_CONFIGS + (PADDLE_CONFIGS if not args.no_paddle and has_paddle(target) else [])
    options = FAST if args.fast else DEBUG if name.endswith("d") else FULL
    started = time.monotonic()
    raw = run_pyperf(target, configs, args.workloads, options)
    summary = summarise(name, probe_version(target), frames, read_pyperf(raw))
    summary.update(pyperf_options=options, seconds=round(time.monotonic() - started), loadavg=os.getloadavg())
    (RESULTS / f"{name}.json").write_text(json.dumps(summary, indent=1) + "\n")
    return summary


# --------------------------------------------------------------------- report

# framehook's overhead targets, judged per interpreter: with no hooks, importing framehook
# costs at most 1% ((c) / (a) <= 1.01); declining hooks stay near the PEP 523 floor ((d) and
# (e) within 5% of (b), three hooks (g) within 10%); an identity replacement (h) adds at most
# 40 ns per call over the floor (60 on 3.9 and 3.10, which build a shadow frame object);
# framehook.sot's eval functions add at most 0.8 (callback declining) and 0.2 (files skipped)
# of what Paddle's own add; and 3.14's ratios stay within 3% of 3.13's.


def target(interpreter: str, what: str, value: float, bar: float) -> dict:
    """One overhead target on one interpreter: the measured value, the bar, met or not."""
    return {"interpreter": interpreter, "target": what, "value": round(value, 4), "bar": round(bar, 4),
            "met": value <= bar}


def bar_for_h(name: str) -> int:
    return 60 if name in ("3.9", "3.10") else 40


def against_313(ratio_of: Callable[[str, str], Optional[float]]) -> list[dict]:
    """3.14's ratios within 3% of 3.13's; (c) runs no framehook code, so its ratio is to (a)."""
    checks = []
    for config in "cdefghi":
        old, new = ratio_of("3.13", config), ratio_of("3.14", config)
        if old and new:
            base = "a" if config == "c" else "b"
            checks.append(target("3.14", f"({config}) ratio to ({base}) <= 1.03 x 3.13's", new / old, 1.03))
    return checks


def targets_of(summaries: dict[str, dict]) -> list[dict]:
    """Each overhead target per interpreter, timed."""
    checks = []
    for name, summary in summaries.items():
        configs = summary["configs"]
        if not all(config in configs for config in CORE_CONFIGS):
            continue
        floor = {w: d["configs"]["b"]["median_s"] for w, d in summary["workloads"].items()}
        ratio_c_a = math.exp(statistics.mean(math.log(d["configs"]["c"]["median_s"] / d["configs"]["a"]["median_s"])
                                             for d in summary["workloads"].values()))
        checks.append(target(name, "(c) / (a) <= 1.01", ratio_c_a, 1.01))
        for config, bar in (("d", 1.05), ("e", 1.05), ("g", 1.10)):
            checks.append(target(name, f"({config}) / (b) <= {bar}", configs[config]["ratio_to_floor"], bar))
        over_floor = statistics.mean((d["configs"]["h"]["median_s"] - floor[w]) / d["frames_per_iteration"] * 1e9
                                     for w, d in summary["workloads"].items())
        checks.append(target(name, f"(h) - (b) <= {bar_for_h(name)} ns per call", over_floor, bar_for_h(name)))
        for kind, bar in (("callback", 0.8), ("skip", 0.2)):
            if kind in summary["paddle"]:
                checks.append(target(name, f"sot {kind}: added cost / Paddle's <= {bar}",
                                     summary["paddle"][kind]["ratio"], bar))

    def timed_ratio(name, config):
        configs = summaries[name]["configs"]
        if config not in configs:
            return None
        return configs[config]["ratio_to_floor"] / (configs["a"]["ratio_to_floor"] if config == "c" else 1.0)

    if "3.13" in summaries and "3.14" in summaries:
        checks += against_313(timed_ratio)
    return checks


def instruction_counts() -> dict[str, dict[str, float]]:
    """Instructions per call of each configuration, per interpreter counted (bench.py --instructions)."""
    return {name: json.loads((RESULTS / f"instructions-{name}.json").read_text())["instructions_per_call"]
            for name in matrix.INTERPRETERS if (RESULTS / f"instructions-{name}.json").exists()}


def instruction_targets_of(counts: dict[str, dict[str, float]], summaries: dict[str, dict]) -> list[dict]:
    """The overhead targets judged on instruction counts: exact, where the timings'
    noise is larger than the bars. (h)'s bar is in ns: its instructions over the
    floor, at the floor's measured time per instruction on fib (when timed)."""
    checks = []
    for name, count in counts.items():
        for config, base, bar in (("c", "a", 1.01), ("d", "b", 1.05), ("e", "b", 1.05), ("g", "b", 1.10),
                                  ("sub-e", "sub-b", 1.10)):
            if config in count and base in count:
                checks.append(target(name, f"({config}) / ({base}) <= {bar}", count[config] / count[base], bar))
        if "j" in count:
            # 3.15+: a cached decliner against no hook at all, the interpreter asked to keep
            # specializing under framehook's eval function (e) and not (j).
            for config in ("e", "j"):
                checks.append(target(name, f"({config}) / (a) <= 1.03", count[config] / count["a"], 1.03))
        fib = summaries.get(name, {}).get("workloads", {}).get("fib")
        if fib and "h" in count and "b" in count:
            floor_ns = fib["configs"]["b"]["median_s"] / fib["frames_per_iteration"] * 1e9
            added_ns = (count["h"] - count["b"]) * floor_ns / count["b"]
            checks.append(target(name, f"(h) - (b) <= {bar_for_h(name)} ns per call (instructions x ns each)",
                                 added_ns, bar_for_h(name)))
            # Paddle's own cost stays timed: under callgrind its background threads count too.
            for kind, bar in (("callback", 0.8), ("skip", 0.2)):
                paddle = summaries[name].get("paddle", {}).get(kind)
                if paddle and f"sot-{kind}" in count:
                    ours_ns = (count[f"sot-{kind}"] - count["a"]) * floor_ns / count["b"]
                    checks.append(target(name, f"sot {kind}: added cost (instructions x ns each) / Paddle's <= {bar}",
                                         ours_ns / paddle["paddle_ns"], bar))

    def counted_ratio(name, config):
        base = "a" if config == "c" else "b"
        return counts[name][config] / counts[name][base] if config in counts[name] else None

    if "3.13" in counts and "3.14" in counts:
        checks += against_313(counted_ratio)
    return checks


def markdown_table(summaries: dict[str, dict]) -> str:
    names = [name for name in matrix.INTERPRETERS if name in summaries]
    lines = ["ns added per call over (a), and in parentheses the time as a ratio to the floor (b); "
             "mean over the five workloads (ratios: geometric mean).", "",
             "| config | " + " | ".join(names) + " |", "| --- |" + " --- |" * len(names)]
    for config in CORE_CONFIGS:
        cells = []
        for name in names:
            row = summaries[name]["configs"].get(config)
            cells.append("-" if row is None else f"{row['added_ns_per_call']:.1f} ({row['ratio_to_floor']:.3f})")
        lines.append(f"| ({config}) {LABELS[config]} | " + " | ".join(cells) + " |")
    noise = [f"{name} {statistics.mean(r['stdev_pct'] for r in summaries[name]['configs'].values()):.1f}%"
             for name in names]
    lines += ["", "Std dev of the values, mean over configurations: " + ", ".join(noise) + "."]
    paddle = [(name, summaries[name]["paddle"]) for name in names if summaries[name]["paddle"]]
    if paddle:
        lines += ["", "Beside Paddle 3.3.1's own eval frame (ns added per call over paddle imported; "
                  "workload codes marked as having a graph):", "",
                  "| interpreter | callback declines: Paddle | framehook.sot | ratio | "
                  "files skipped: Paddle | framehook.sot | ratio |", "| --- |" + " --- |" * 6]
        for name, rows in paddle:
            cells = [f"{rows[k][field]:.1f}" if field != "ratio" else f"{rows[k][field]:.2f}"
                     for k in ("callback", "skip") for field in ("paddle_ns", "framehook_sot_ns", "ratio")]
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def table_pages() -> list[Path]:
    """The markdown pages holding the results table's markers."""
    pages = [page for place in TABLE_PAGES
             for page in ([place] if place.suffix == ".md" else sorted(place.rglob("*.md")))]
    return [page for page in pages if page.is_file() and TABLE_START in page.read_text()
            and TABLE_END in page.read_text()]


def write_report(summaries: dict[str, dict], charts: bool) -> None:
    checks = targets_of(summaries)
    instruction_checks = instruction_targets_of(instruction_counts(), summaries)
    (RESULTS / "summary.json").write_text(json.dumps({"interpreters": summaries, "targets": checks,
                                                      "targets_in_instructions": instruction_checks},
                                                     indent=1) + "\n")
    table = markdown_table(summaries) + instructions_table()
    for page in table_pages():
        text = page.read_text()
        head, rest = text.split(TABLE_START, 1)
        page.write_text(head + TABLE_START + "\n" + table + "\n" + TABLE_END + rest.split(TABLE_END, 1)[1])
    print(table)
    print()
    for title, judged in (("timed", checks), ("in instructions", instruction_checks)):
        print(f"targets, {title}:")
        for check in judged:
            verdict = "met " if check["met"] else "MISS"
            print(f"{verdict}  {check['interpreter']:6} {check['target']:45} {check['value']}")
    if charts:
        python = plot_python()
        subprocess.run([str(python), str(BENCHES / "plot.py"), *(str(RESULTS / f"{n}.json") for n in summaries)],
                       check=True)


def count_instructions(name: str, args: argparse.Namespace) -> None:
    """Instructions per call under callgrind (exact, unlike the timings), fib workload."""
    provision.ensure_valgrind(matrix.resolve(name).in_sid)
    target = prepared(name, args)
    # Every configuration of the timing run, SOT's two, and where there are
    # sub-interpreters with their own GIL, the floor and a cached decliner in one.
    configs = ["a", "b", "c", "d", "e", "f", "g", "h", "i", "sot-callback", "sot-skip"]
    major, minor = (int(part) for part in re.match(r"(\d+)\.(\d+)", name).groups())
    if (major, minor) >= (3, 12):
        configs += list(SUB_CONFIGS)
    if (major, minor) >= (3, 15):
        configs += SPECIALIZATION_CONFIGS
    out = RESULTS / f"instructions-{name}.json"
    log(f"{name}: callgrind over {','.join(configs)}")
    done = target.run([target.venv_python, str(BENCHES / "instructions.py"), "--configs", ",".join(configs),
                       "--json", str(out)])
    if done.returncode != 0:
        raise RuntimeError(f"counting instructions failed (exit {done.returncode})")


def instructions_table() -> str:
    counts = instruction_counts()
    if not counts:
        return ""
    names = list(counts)
    lines = ["", "Instructions per call (callgrind, fib workload; exact and repeatable): added over the floor (b), "
             "and in parentheses the ratio to the floor:", "",
             "| config | " + " | ".join(names) + " |", "| --- |" + " --- |" * len(names)]
    for config in CORE_CONFIGS + SPECIALIZATION_CONFIGS + ["sot-callback", "sot-skip"]:
        if not any(config in counts[n] for n in names):
            continue
        cells = [f"{counts[n][config] - counts[n]['b']:+.0f} ({counts[n][config] / counts[n]['b']:.3f})"
                 if config in counts[n] else "-" for n in names]
        label = LABELS.get(config, "framehook.sot, " + ("callback declining" if config == "sot-callback"
                                                          else "files skipped"))
        lines.append(f"| ({config}) {label} | " + " | ".join(cells) + " |")
    for config, label in SUB_CONFIGS.items():
        if not any(config in counts[n] for n in names):
            continue
        cells = [f"{counts[n][config] - counts[n]['sub-b']:+.0f} ({counts[n][config] / counts[n]['sub-b']:.3f})"
                 if config in counts[n] else "-" for n in names]
        lines.append(f"| ({config}) {label}, over (sub-b) | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def add_batch_options(parser: argparse.ArgumentParser) -> None:
    """The options of a script that times interleaved batches itself (benches/sot.py, bytecode.py)."""
    parser.add_argument("--repeats", type=int, default=41, help="batches of each measurement (default 41)")
    parser.add_argument("--min-time", type=float, default=0.01, help="seconds per batch, at least (default 0.01)")


def batch_options(args: argparse.Namespace, name: str) -> list[str]:
    return ["--repeats", str(args.repeats), "--min-time", str(args.min_time)]


def script_bench_main(argv: Optional[Sequence[str]], *, description: str, script: Path, prefix: str,
                      markers: tuple[str, str], tables: Callable[[dict[str, dict]], str],
                      after_report: Optional[Callable[[dict[str, dict]], None]] = None,
                      add_options: Callable[[argparse.ArgumentParser], None] = add_batch_options,
                      script_options: Callable[[argparse.Namespace, str], list[str]] = batch_options,
                      prepare: Callable[[str, argparse.Namespace], matrix.Target] = prepared,
                      interpreters: Sequence[str] = tuple(matrix.INTERPRETERS)) -> int:
    """The driver of a benchmark script (benches/<script>.py, run once per interpreter with a
    release build, writing benches/results/<prefix>-<name>.json): measures the interpreters
    asked for (of ``interpreters``; all of them without ``--only``), each in the venv
    ``prepare(interpreter, args)`` makes ready, then writes ``tables(reports)`` of every
    interpreter with results between ``markers`` in docs/performance.md and prints it (then
    ``after_report(reports)``). ``add_options`` adds the driver's options for the script, which
    ``script_options(args, interpreter)`` turns into the script's own."""
    def result_path(name: str) -> Path:
        return RESULTS / f"{prefix}-{name}.json"

    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--only", help="comma-separated interpreters, e.g. 3.12 or 3.13t,3.14d")
    add_options(parser)
    parser.add_argument("--no-build", action="store_true", help="use the framehook already installed in the venvs")
    parser.add_argument("--report-only", action="store_true", help="report from benches/results, measure nothing")
    args = parser.parse_args(argv)
    names = matrix.chosen_interpreters(parser, args.only, interpreters)
    RESULTS.mkdir(parents=True, exist_ok=True)
    failed = []
    for name in [] if args.report_only else names:
        try:
            target = prepare(name, args)
            out = result_path(name)
            out.unlink(missing_ok=True)
            log(f"{name}: {script.relative_to(matrix.REPO)} (load average {os.getloadavg()[0]:.2f})")
            done = target.run([target.venv_python, str(script), "--name", name, *script_options(args, name),
                               "--json", str(out)], extra_env={"PYTHONHASHSEED": "0"})
            if done.returncode != 0 or not out.exists():
                raise RuntimeError(f"{script.name} failed (exit {done.returncode})")
        except (provision.ProvisionError, RuntimeError, OSError) as error:
            failed.append(name)
            log(f"{name}: ERROR: {error}")
    reports = {name: json.loads(result_path(name).read_text())
               for name in interpreters if result_path(name).exists()}
    if reports:
        text = tables(reports)
        page = matrix.REPO / "docs" / "performance.md"
        start, end = markers
        content = page.read_text()
        if start in content and end in content:
            head, rest = content.split(start, 1)
            page.write_text(head + start + "\n" + text + "\n" + end + rest.split(end, 1)[1])
        print(text)
        if after_report:
            after_report(reports)
    return 1 if failed else 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="comma-separated interpreters, e.g. 3.12 or 3.13t,3.14d")
    parser.add_argument("--fast", action="store_true", help="a quick, rough run (fewer processes and values)")
    parser.add_argument("--workloads", help="comma-separated workloads (default: all)")
    parser.add_argument("--no-build", action="store_true", help="use the framehook already installed in the venvs")
    parser.add_argument("--no-paddle", action="store_true", help="leave out the comparison with Paddle")
    parser.add_argument("--no-charts", action="store_true", help="no PNG charts (no matplotlib venv)")
    parser.add_argument("--report-only", action="store_true", help="report from benches/results, measure nothing")
    parser.add_argument("--instructions", action="store_true",
                        help="count instructions per call with callgrind instead of timing (needs valgrind)")
    args = parser.parse_args(argv)
    names = matrix.chosen_interpreters(parser, args.only)
    RESULTS.mkdir(parents=True, exist_ok=True)
    failed = []
    if not args.report_only:
        for name in names:
            try:
                count_instructions(name, args) if args.instructions else measure(name, args)
            except (provision.ProvisionError, RuntimeError, OSError) as error:
                failed.append(name)
                log(f"{name}: ERROR: {error}")
    # The report covers every interpreter with results, measured now or before.
    summaries = {name: json.loads((RESULTS / f"{name}.json").read_text())
                 for name in matrix.INTERPRETERS if (RESULTS / f"{name}.json").exists()}
    write_report(summaries, charts=not args.no_charts)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
