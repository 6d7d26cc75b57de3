"""Third-party test suites, and scikit-learn's inference paths, through SOT: every test's
outcome translated against its outcome eagerly.

    python -m framehook_dev.sot_suites                        # 3.12, every package and sklearn
    python -m framehook_dev.sot_suites --only 3.12,3.14 --packages boltons,pyparsing
    python -m framehook_dev.sot_suites --slice                # the slice tests/test_sot_suites.py runs

The packages are pinned in ``suites_manifest.json`` (this package): name, version, sha256 of
the sdist, the test paths, the modules to trace, pinned extra test dependencies, and tests
deselected (broken eagerly too, or needing the network). For each interpreter (the matrix's
venv, with framehook built and installed as ``make test`` builds it unless ``--no-build``;
``--release`` for timings), each package's suite runs twice in child processes
(``framehook_dev.sot_suites_child``): eagerly, and with every test function called as
``sot.translate(fn, trace_modules=TRACE)(**fixtures)``. A test that runs past ``--timeout``
seconds is reported as ``timeout`` and the suite goes on in a new child without it. Then the
scikit-learn inference paths (``framehook_dev.sot_sklearn``) run on the same interpreter.

Nothing is written into the repository: sdists are downloaded (``pip download --no-deps
--no-binary :all:``) into ``$FRAMEHOOK_CACHE/suites/sdists`` and checked against the
manifest's sha256; unpacked trees and the installed packages (``pip install --target``,
one directory per interpreter, put first on ``PYTHONPATH`` in the children) live under the
build dir's ``suites/`` (the cache unless ``FRAMEHOOK_BUILD_DIR``; the sid root sees it).

The report (``--report``, JSON) has per interpreter and package every test's outcome both
ways, the first error line, and per translated test own_frame, translations, graphs,
operations, breaks with their first reasons, fallbacks and seconds; ``--markdown`` writes
the tables (per package: tests, same and divergent outcomes, the share of tests whose own
frame ran translated, breaks per translated test, the top 5 break reasons, wall time
translated against eager) and the divergent tests. Exits 1 when a test's outcome diverges.
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from . import checkout, matrix, provision
from .process_group import run_in_own_group

MANIFEST = Path(__file__).with_name("suites_manifest.json")
DOWNLOADS = provision.CACHE / "suites" / "sdists"
# Unpacked trees and per-interpreter installs: under the build dir, which the sid root binds
# (the matrix tells its tests where, as FRAMEHOOK_SUITES_DIR).
WORK = Path(os.environ.get("FRAMEHOOK_SUITES_DIR") or matrix.BUILD_DIR / "suites")
DEFAULT_REPORT = provision.CACHE / "suites" / "report.json"
DEFAULT_MARKDOWN = provision.CACHE / "suites" / "report.md"
DEFAULT_INTERPRETERS = "3.12"
# A suite's child is started again after a hang or crash, skipping the tests done; this many times at most.
MAX_RESTARTS = 25
# A whole child run (all of a suite's tests) is killed after this long.
CHILD_LIMIT_S = 3600.0
PASSING = {"passed", "xfail", "skipped"}


def log(message: str) -> None:
    print(f"[sot_suites] {message}", file=sys.stderr, flush=True)


@dataclass
class Package:
    name: str
    version: str
    sha256: str
    tests: list[str]
    trace: list[str]
    deps: list[str] = field(default_factory=list)
    deselect: dict[str, str] = field(default_factory=dict)
    slice: list[str] = field(default_factory=list)
    # Tests of the slice that give another outcome translated today (the translator's gaps,
    # each with what is known of why): the slice test lets them differ and says so.
    known_divergent: dict[str, str] = field(default_factory=dict)
    build_env: dict[str, str] = field(default_factory=dict)
    runner: str = "pytest"

    @property
    def tree(self) -> Path:
        """The unpacked sdist, where its tests run."""
        return WORK / "src" / f"{self.name}-{self.version}"


def load_manifest(path: Path = MANIFEST) -> tuple[list[Package], dict[str, Any]]:
    data = json.loads(path.read_text())
    return [Package(**entry) for entry in data["packages"]], data["sklearn"]


# --- fetching and installing -------------------------------------------------------------

def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as data:
        for block in iter(lambda: data.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _normalized(name: str) -> str:
    return name.lower().replace("-", "_").replace(".", "_")


def find_sdist(package: Package) -> Optional[Path]:
    """The downloaded sdist, whichever spelling of the name it has (``more_itertools-``,
    ``python-dateutil-``: sdists name themselves as their build backend does)."""
    suffix = f"-{package.version}.tar.gz"
    for path in DOWNLOADS.glob(f"*{suffix}"):
        if _normalized(path.name[: -len(suffix)]) == _normalized(package.name):
            return path
    return None


def fetch(package: Package) -> Path:
    """The package's sdist, downloaded once (pip, from the configured index) and checked
    against the manifest's sha256; then unpacked (once) into its tree."""
    sdist = find_sdist(package)
    if sdist is None or sha256_of(sdist) != package.sha256:
        if sdist is not None:
            log(f"{sdist.name}: sha256 differs from the manifest's; downloading again")
            sdist.unlink()
        DOWNLOADS.mkdir(parents=True, exist_ok=True)
        log(f"downloading {package.name}=={package.version} (sdist)")
        done = subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary",
                               ":all:", "--dest", str(DOWNLOADS), f"{package.name}=={package.version}"],
                              text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        sdist = find_sdist(package)
        if done.returncode != 0 or sdist is None:
            raise RuntimeError(f"pip download {package.name}=={package.version} failed:\n{done.stdout[-3000:]}")
        actual = sha256_of(sdist)
        if actual != package.sha256:
            sdist.unlink()
            raise RuntimeError(f"{package.name}=={package.version}: sdist sha256 {actual}, manifest says "
                               f"{package.sha256}")
    stamp = package.tree / ".framehook-sdist.sha256"
    if stamp.exists() and stamp.read_text().strip() == package.sha256:
        return package.tree
    package.tree.parent.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(package.tree, ignore_errors=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".{package.name}-", dir=package.tree.parent))
    with tarfile.open(sdist) as archive:
        members = [m for m in archive.getmembers() if m.isfile() or m.isdir()]
        archive.extractall(scratch, members=members)  # noqa: S202 - a checked, pinned sdist
    (top,) = list(scratch.iterdir())
    os.replace(top, package.tree)
    shutil.rmtree(scratch)
    stamp.write_text(package.sha256 + "\n")
    return package.tree


def site_dir(target: matrix.Target, kind: str) -> Path:
    """Where ``kind`` ("packages" or "sklearn") is installed for ``target`` (pip --target)."""
    return WORK / "site" / target.name / kind


def target_version(target: matrix.Target) -> tuple[int, int]:
    done = target.run([target.venv_python, "-c", "import sys; print(*sys.version_info[:2])"], capture=True)
    major, minor = done.stdout.split()[-2:]
    return int(major), int(minor)


def python_matches(version: tuple[int, int], specifier: str) -> bool:
    """Whether ``version`` satisfies a specifier of one clause such as ``>=3.11``."""
    operator = specifier.rstrip("0123456789.").strip()
    wanted = tuple(int(part) for part in specifier[len(operator):].strip().split("."))
    comparisons = {">=": version >= wanted, ">": version > wanted, "<": version < wanted, "<=": version <= wanted,
                   "==": version == wanted}
    return comparisons[operator]


def _pip_target(target: matrix.Target, site: Path, requirements: list[str], *, stamp_text: str,
                extra: list[str], env: Optional[dict[str, str]] = None) -> None:
    stamp = site / ".framehook-installed"
    if stamp.exists() and stamp.read_text() == stamp_text:
        return
    shutil.rmtree(site, ignore_errors=True)
    site.parent.mkdir(parents=True, exist_ok=True)
    log(f"{target.name}: installing {len(requirements)} distributions into {site}")
    argv = [target.venv_python, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(site), *extra,
            *requirements]
    done = target.run(argv, capture=True, extra_env=env)
    if done.returncode != 0:
        raise RuntimeError(f"installing into {site} failed:\n{done.stdout[-4000:]}")
    stamp.write_text(stamp_text)


def install_packages(target: matrix.Target, packages: list[Package]) -> Path:
    """Every package of the manifest, ``packages`` (from its tree) with their test
    dependencies, in one directory for the interpreter; installed again when the list changes."""
    site = site_dir(target, "packages")
    trees = [str(fetch(package)) for package in packages]
    deps = sorted({dep for package in packages for dep in package.deps})
    env: dict[str, str] = {}
    for package in packages:
        env.update(package.build_env)
    stamp_text = json.dumps({"trees": [f"{p.name}=={p.version} {p.sha256}" for p in packages], "deps": deps,
                             "env": env}, indent=1)
    _pip_target(target, site, trees + deps, stamp_text=stamp_text, extra=[], env=env)
    return site


def prepare_for_tests(target: matrix.Target) -> None:
    """The packages for tests/test_sot_suites.py (the matrix calls this for each test venv);
    where they do not install, a note of why, which the test gives as its skip reason."""
    note = site_dir(target, "packages").with_suffix(".error")
    try:
        install_packages(target, load_manifest()[0])
        note.unlink(missing_ok=True)
    except (RuntimeError, OSError, subprocess.SubprocessError, tarfile.TarError) as error:
        note.parent.mkdir(parents=True, exist_ok=True)
        note.write_text(str(error))
        log(f"{target.name}: the third-party suites do not install here (tests/test_sot_suites.py skips): "
            f"{str(error).splitlines()[0]}")


def target_free_threaded(target: matrix.Target) -> bool:
    probe = "import sysconfig; print(bool(sysconfig.get_config_var('Py_GIL_DISABLED')))"
    done = target.run([target.venv_python, "-c", probe], capture=True)
    return done.stdout.split()[-1] == "True"


def sklearn_requirements(target: matrix.Target, sklearn: dict[str, Any]) -> list[str]:
    """The first pin whose Python specifier the target satisfies (and whose ``free_threaded``,
    where it says, is the target's: free-threaded wheels come out later)."""
    version, free_threaded = target_version(target), target_free_threaded(target)
    for pin in sklearn["pins"]:
        if python_matches(version, pin["python"]) and pin.get("free_threaded", free_threaded) == free_threaded:
            return list(pin["requirements"])
    return []


def install_sklearn(target: matrix.Target, sklearn: dict[str, Any]) -> Path:
    """scikit-learn and its dependencies but numpy (the venv's), binary wheels."""
    site = site_dir(target, "sklearn")
    requirements = sklearn_requirements(target, sklearn)
    if not requirements:
        raise RuntimeError(f"no scikit-learn pin for {target.name}")
    _pip_target(target, site, requirements, stamp_text="\n".join(requirements) + "\n",
                extra=["--only-binary", ":all:"])
    return site


# --- running -------------------------------------------------------------------------------

def read_events(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    events = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            events.append(json.loads(line))
        except ValueError:  # a line cut short by the process's end
            continue
    return events


def pythonpath(site: Path, target: matrix.Target) -> str:
    return os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH") if not target.in_sid else None]))


def run_suite(target: matrix.Target, package: Package, mode: str, site: Path, logs: Path, *,
              timeout: float, tests: Optional[list[str]] = None) -> dict[str, Any]:
    """One package's suite in ``mode`` (eager or sot): every test's event, started again
    after a hang or a crash without the tests done. Returns the tests and the wall time."""
    logs.mkdir(parents=True, exist_ok=True)
    stem = f"{target.name}-{package.name}-{mode}"
    events_path = logs / f"{stem}.events.jsonl"
    skip_path = logs / f"{stem}.skip.txt"
    events_path.unlink(missing_ok=True)
    Path(f"{events_path}.watchdog").unlink(missing_ok=True)
    skip_path.write_text("")
    selection = tests if tests is not None else package.tests
    pytest_args = [*selection, *(arg for test in package.deselect for arg in ("--deselect", test))]
    results: dict[str, dict[str, Any]] = {}
    seconds = 0.0
    problems: list[str] = []
    for attempt in range(MAX_RESTARTS + 1):
        argv = [target.venv_python, "-X", "faulthandler", "-m", "framehook_dev.sot_suites_child", "--mode", mode,
                "--trace", ",".join(package.trace), "--events", str(events_path), "--skip", str(skip_path),
                "--timeout", str(timeout), "--", *pytest_args]
        env = {"PYTHONPATH": pythonpath(site, target), "PYTHONDONTWRITEBYTECODE": "1",
               "PYTHONHASHSEED": "0", "FRAMEHOOK_EXPECT_PYTHON": target.name}
        log_path = logs / f"{stem}.{attempt}.log"
        command = target.command(argv, cwd=package.tree, extra_env=env)
        finished = run_in_own_group(command, cwd=package.tree, env=dict(os.environ, **env), log_path=log_path,
                                    timeout=CHILD_LIMIT_S)
        seconds += finished.seconds
        events = read_events(events_path)
        started: list[str] = []
        for event in events:
            if event["event"] == "start":
                started.append(event["test"])
            elif event["event"] == "result":
                results[event["test"]] = event
        exits = [event["status"] for event in events if event["event"] == "exit"]
        unfinished = [test for test in started if test not in results]
        if exits and not unfinished:
            # pytest's interrupted (2), internal error (3), usage error (4: a test id not
            # found) and no tests collected (5; after a restart, all may be done) leave tests
            # of the selection unrun.
            if exits[-1] in (2, 3, 4) or (exits[-1] == 5 and attempt == 0):
                problems.append(f"pytest exited with status {exits[-1]}; log {logs / f'{stem}.{attempt}.log'}")
            break
        watchdog = Path(f"{events_path}.watchdog")
        text = log_path.read_text(errors="replace")
        if watchdog.exists():
            text += watchdog.read_text(errors="replace")
        if not unfinished:
            problems.append(f"child ended (status {finished.returncode}) outside any test; log {log_path}")
            break
        hung = unfinished[-1]
        outcome = "timeout" if "Timeout (" in text or finished.timed_out else "crash"
        results[hung] = {"event": "result", "test": hung, "outcome": outcome,
                         "error": f"{outcome} (status {finished.returncode}); log {log_path}",
                         "seconds": timeout if outcome == "timeout" else None}
        log(f"{target.name} {package.name} {mode}: {hung}: {outcome}; starting the suite again without it")
        # Every test done in any child so far, not only in this one.
        skip_path.write_text("".join(f"{test}\n" for test in results))
        events_path.unlink(missing_ok=True)
        watchdog.unlink(missing_ok=True)
    else:
        problems.append(f"gave up after {MAX_RESTARTS} restarts")
    return {"tests": results, "seconds": round(seconds, 3), "problems": problems}


def run_sklearn(target: matrix.Target, site: Path, logs: Path, sklearn: dict[str, Any]) -> dict[str, Any]:
    out = logs / f"{target.name}-sklearn.json"
    out.unlink(missing_ok=True)
    argv = [target.venv_python, "-X", "faulthandler", "-m", "framehook_dev.sot_sklearn", "--out", str(out),
            "--trace", ",".join(sklearn["trace"])]
    env = {"PYTHONPATH": pythonpath(site, target), "PYTHONHASHSEED": "0", "OMP_NUM_THREADS": "1",
           "OPENBLAS_NUM_THREADS": "1"}
    log_path = logs / f"{target.name}-sklearn.log"
    finished = run_in_own_group(target.command(argv, extra_env=env), cwd=checkout.find(),
                                env=dict(os.environ, **env), log_path=log_path, timeout=1800)
    if not out.exists():
        return {"error": f"status {finished.returncode}; log {log_path}", "calls": []}
    result = dict(json.loads(out.read_text()), seconds=round(finished.seconds, 3))
    if result.get("running"):  # the call then running crashed or hung
        estimator, rest = result["running"].rsplit(".", 1)
        method, rows = rest.split("[", 1)
        timed_out = finished.timed_out or "Timeout (" in log_path.read_text(errors="replace")
        result["calls"].append({"estimator": estimator, "method": method, "rows": int(rows.split()[0]),
                                "outcome": "timeout" if timed_out else "crash",
                                "detail": f"status {finished.returncode}; log {log_path}"})
    return result


# --- summaries ------------------------------------------------------------------------------

def compare(eager: dict[str, Any], translated: dict[str, Any]) -> dict[str, Any]:
    """Test by test, and the package's numbers for the table."""
    tests: dict[str, Any] = {}
    reasons: collections.Counter[str] = collections.Counter()
    divergent = same = own_translated = translated_calls = breaks = fallbacks = hangs = 0
    for test in sorted(set(eager["tests"]) | set(translated["tests"])):
        before = eager["tests"].get(test, {})
        after = translated["tests"].get(test, {})
        entry: dict[str, Any] = {"eager": before.get("outcome", "not run"), "sot": after.get("outcome", "not run"),
                                 "eager_seconds": before.get("seconds"), "sot_seconds": after.get("seconds")}
        for side, event in (("eager_error", before), ("sot_error", after)):
            if event.get("error"):
                entry[side] = event["error"]
        stats = after.get("sot")
        if stats:
            entry["stats"] = stats
            translated_calls += 1
            own_translated += stats["own_frame"] == "translated"
            breaks += stats["breaks"]
            fallbacks += stats["fallbacks"]
            reasons.update(stats["break_reasons"])
        hangs += entry["sot"] in ("timeout", "crash")
        if entry["eager"] == entry["sot"]:
            same += 1
        else:
            divergent += 1
        tests[test] = entry
    count = len(tests)
    return {
        "tests": tests,
        "summary": {
            "tests": count, "same": same, "divergent": divergent, "hangs_or_crashes": hangs,
            "translated_calls": translated_calls,
            "own_frame_translated": own_translated,
            "own_frame_share": round(own_translated / count, 4) if count else 0.0,
            "breaks": breaks, "fallbacks": fallbacks,
            "breaks_per_translated_test": round(breaks / translated_calls, 2) if translated_calls else 0.0,
            "top_breaks": reasons.most_common(5),
            "eager_seconds": eager["seconds"], "sot_seconds": translated["seconds"],
            "time_ratio": round(translated["seconds"] / eager["seconds"], 2) if eager["seconds"] else None,
            "problems": eager["problems"] + translated["problems"],
        },
    }


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown(report: dict[str, Any], compact: bool = False) -> str:
    lines = [f"Commit {report['commit']}, framehook build: {report['build']}; "
             f"{report['started']}.", ""]
    for name, interpreter in report["interpreters"].items():
        lines += [f"#### {name} ({interpreter.get('python', '?')})", ""]
        if interpreter.get("error"):
            lines += [f"Not run: {interpreter['error']}", ""]
            continue
        lines += ["| package | tests | same | divergent | of those, hang or crash | own frame translated | "
                  "breaks / translated test | eager s | translated s | ratio |",
                  "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
        totals = collections.Counter()
        for package, result in interpreter["packages"].items():
            if "summary" not in result:
                lines.append(f"| {package} | not run: {_cell(result.get('error', '?'))} | | | | | | | | |")
                continue
            s = dict(result["summary"])
            s["hangs_or_crashes"] = sum(entry["sot"] in ("timeout", "crash") for entry in result["tests"].values())
            totals.update({k: s.get(k, 0) for k in ("tests", "same", "divergent", "hangs_or_crashes",
                                                      "own_frame_translated",
                                              "translated_calls", "breaks")})
            totals["eager_seconds"] += s["eager_seconds"]
            totals["sot_seconds"] += s["sot_seconds"]
            lines.append(f"| {package} {result['version']} | {s['tests']} | {s['same']} | {s['divergent']} | "
                         f"{s.get('hangs_or_crashes', 0)} | "
                         f"{s['own_frame_share']:.0%} | {s['breaks_per_translated_test']:.1f} | "
                         f"{s['eager_seconds']:.1f} | {s['sot_seconds']:.1f} | {s['time_ratio']}× |")
        if totals["tests"]:
            ratio = totals["sot_seconds"] / totals["eager_seconds"] if totals["eager_seconds"] else 0
            per_test = totals["breaks"] / totals["translated_calls"] if totals["translated_calls"] else 0
            lines.append(f"| **all** | {totals['tests']} | {totals['same']} | {totals['divergent']} | "
                         f"{totals['hangs_or_crashes']} | "
                         f"{totals['own_frame_translated'] / totals['tests']:.0%} | {per_test:.1f} | "
                         f"{totals['eager_seconds']:.1f} | {totals['sot_seconds']:.1f} | {ratio:.2f}× |")
        lines += ["", "Top 5 break reasons per package (count over the suite):", ""]
        for package, result in interpreter["packages"].items():
            top = result.get("summary", {}).get("top_breaks", [])
            if top:
                lines.append(f"- **{package}**: " + "; ".join(f"`{_cell(r)[:120]}` ({n})" for r, n in top))
        sklearn = interpreter.get("sklearn")
        if sklearn:
            lines += ["", *(sklearn_summary_markdown(sklearn) if compact else sklearn_markdown(sklearn))]
        lines.append("")
    return "\n".join(lines) + "\n"


def sklearn_summary_markdown(sklearn: dict[str, Any]) -> list[str]:
    """One row per estimator (its calls: methods × 1 and 32 rows), for docs/reliability.md."""
    if sklearn.get("error"):
        return [f"scikit-learn: not run: {sklearn['error']}"]
    rows: dict[str, list[dict[str, Any]]] = collections.defaultdict(list)
    for call in sklearn["calls"]:
        rows[call["estimator"]].append(call)
    equal = sum(call["outcome"] == "equal" for call in sklearn["calls"])
    lines = [f"scikit-learn {sklearn.get('version', '?')} (numpy {sklearn.get('numpy', '?')}) inference, "
             f"`trace_modules=(\"sklearn\",)`, 1 and 32 rows, translated then cached: {equal} of "
             f"{len(sklearn['calls'])} calls equal eager exactly.", "",
             "| estimator | methods | calls equal eager | translated: outcome | own frame | graphs | ops | "
             "breaks per call |", "| --- | --- | ---: | --- | --- | ---: | ---: | ---: |"]
    for estimator, calls in rows.items():
        methods = ", ".join(dict.fromkeys(call["method"] for call in calls))
        equal = sum(call["outcome"] == "equal" for call in calls)
        details = collections.Counter(_cell(call.get("detail", ""))[:90] for call in calls
                                      if call["outcome"] != "equal")
        outcome = "; ".join(f"{detail} ({n})" for detail, n in details.most_common(2)) or "equal"
        own = "/".join(sorted({call.get("own_frame", "") or "-" for call in calls}))
        graphs = sum(call.get("graphs", 0) for call in calls)
        ops = sum(call.get("ops", 0) for call in calls)
        breaks = sum(call.get("breaks", 0) for call in calls) / len(calls)
        lines.append(f"| {estimator} | {methods} | {equal}/{len(calls)} | {outcome} | {own} | {graphs} | {ops} | "
                     f"{breaks:.0f} |")
    return lines


def sklearn_markdown(sklearn: dict[str, Any]) -> list[str]:
    if sklearn.get("error"):
        return [f"scikit-learn: not run: {sklearn['error']}"]
    calls = sklearn["calls"]
    equal = sum(call["outcome"] == "equal" for call in calls)
    lines = [f"scikit-learn {sklearn.get('version', '?')} inference, `trace_modules=(\"sklearn\",)`: "
             f"{equal} of {len(calls)} calls equal eager exactly (dtype, shape, values; translated, then cached).",
             "", "| estimator | method | rows | outcome | own frame | graphs | ops | breaks | translated / eager time "
             "| first break |", "| --- | --- | ---: | --- | --- | ---: | ---: | ---: | ---: | --- |"]
    for call in calls:
        first = call.get("top_breaks", [[""]])[0][0] if call.get("top_breaks") else ""
        outcome = call["outcome"] + (f": {_cell(call['detail'])[:100]}" if call.get("detail") else "")
        ratio = f"{call['time_ratio']}×" if call.get("time_ratio") is not None else "-"
        lines.append(f"| {call['estimator']} | {call['method']} | {call['rows']} | {outcome} | "
                     f"{call.get('own_frame', '')} | {call.get('graphs', 0)} | {call.get('ops', 0)} | "
                     f"{call.get('breaks', 0)} | {ratio} | {_cell(first)[:80]} |")
    return lines


def divergences(report: dict[str, Any]) -> list[dict[str, Any]]:
    found = []
    for name, interpreter in report["interpreters"].items():
        for package, result in interpreter.get("packages", {}).items():
            for test, entry in result.get("tests", {}).items():
                if entry["eager"] != entry["sot"]:
                    found.append({"interpreter": name, "package": package, "test": test, "eager": entry["eager"],
                                  "sot": entry["sot"], "error": entry.get("sot_error") or entry.get("eager_error", "")})
        for call in interpreter.get("sklearn", {}).get("calls", []):
            if call["outcome"] != "equal":
                found.append({"interpreter": name, "package": "scikit-learn",
                              "test": f"{call['estimator']}.{call['method']}[{call['rows']} rows]",
                              "eager": "value", "sot": call["outcome"], "error": call.get("detail", "")})
    return found


def divergences_markdown(found: list[dict[str, Any]], report: Optional[dict[str, Any]] = None) -> str:
    """The divergent tests: per interpreter and package their count and most frequent error
    lines, then every one (package, test id, eager outcome, translated outcome, error line)."""
    lines = ["# Divergent tests: third-party suites through SOT", ""]
    if report is not None:
        lines += [f"From `python -m framehook_dev.sot_suites` at commit {report['commit']} "
                  f"(framehook build: {report['build']}; {report['started']}); per-test timeout "
                  f"{report.get('timeout_s')} s. Each test runs eagerly and then translated with "
                  "`sot.translate(test, trace_modules=(<package>,))`; `timeout` and `crash` are "
                  "the translated run's.", ""]
    groups: dict[tuple[str, str], list[dict[str, Any]]] = collections.defaultdict(list)
    for entry in found:
        groups[(entry["interpreter"], entry["package"])].append(entry)
    lines += ["| interpreter | package | divergent | most frequent errors |", "| --- | --- | ---: | --- |"]
    for (name, package), entries in groups.items():
        errors = collections.Counter(_error_kind(e["error"] or f"{e['sot']}") for e in entries)
        top = "; ".join(f"`{_cell(error)[:90]}` ({n})" for error, n in errors.most_common(3))
        lines.append(f"| {name} | {package} | {len(entries)} | {top} |")
    lines += ["", "| interpreter | package | test | eager | translated | error |",
              "| --- | --- | --- | --- | --- | --- |"]
    lines += [f"| {d['interpreter']} | {d['package']} | `{_cell(d['test'])}` | {d['eager']} | {d['sot']} | "
              f"{_cell(d['error'] or '')[:200]} |" for d in found]
    return "\n".join(lines) + "\n"


def _error_kind(error: str) -> str:
    """An error line without what varies between tests (a log's path, an address)."""
    return error.split("; log ")[0].split(" at 0x")[0]


# --- the command ----------------------------------------------------------------------------

def git_commit() -> str:
    done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=checkout.find(), text=True,
                          capture_output=True)
    return done.stdout.strip() or "?"


def run_interpreter(name: str, packages: list[Package], sklearn: Optional[dict[str, Any]],
                    args: argparse.Namespace) -> dict[str, Any]:
    target = matrix.resolve(name)
    matrix.ensure_venv(target)
    if args.no_build:
        matrix.install_dev_package(target)  # the children are this package's modules
    else:
        matrix.build_and_install(target, release=args.release)
    done = target.run([target.venv_python, "-c", "import sys; print(sys.version.split()[0])"], capture=True)
    result: dict[str, Any] = {"python": done.stdout.strip().splitlines()[-1] if done.stdout.strip() else "?",
                              "packages": {}}
    logs = Path(args.logs) / name
    if packages:
        site = install_packages(target, load_manifest()[0])  # all of them: one directory serves every run
        for package in packages:
            tests = package.slice if args.slice else None
            if args.slice and not tests:
                continue
            log(f"{name}: {package.name} eagerly")
            eager = run_suite(target, package, "eager", site, logs, timeout=args.timeout, tests=tests)
            log(f"{name}: {package.name} translated")
            translated = run_suite(target, package, "sot", site, logs, timeout=args.timeout, tests=tests)
            compared = compare(eager, translated)
            summary = compared["summary"]
            log(f"{name}: {package.name}: {summary['tests']} tests, {summary['divergent']} divergent, "
                f"{summary['eager_seconds']:.1f}s eager, {summary['sot_seconds']:.1f}s translated")
            result["packages"][package.name] = dict(compared, version=package.version)
    if sklearn is not None:
        try:
            site = install_sklearn(target, sklearn)
            log(f"{name}: scikit-learn inference")
            result["sklearn"] = run_sklearn(target, site, logs, sklearn)
        except RuntimeError as error:
            result["sklearn"] = {"error": str(error).splitlines()[0], "calls": []}
    return result


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=DEFAULT_INTERPRETERS, help="comma-separated interpreters (default 3.12)")
    parser.add_argument("--packages", help="comma-separated package names from the manifest, and/or 'sklearn' "
                                           "(default: all)")
    parser.add_argument("--slice", action="store_true", help="only the manifest's slice of each suite (no sklearn)")
    parser.add_argument("--report", default=str(DEFAULT_REPORT), help="JSON report path")
    parser.add_argument("--markdown", default=str(DEFAULT_MARKDOWN), help="markdown tables path")
    parser.add_argument("--findings", help="also write the divergent tests as a markdown table here")
    parser.add_argument("--logs", default=str(WORK / "logs"), help="children's logs and events")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per test before it counts as a hang")
    parser.add_argument("--no-build", action="store_true", help="use the framehook installed in the venvs")
    parser.add_argument("--release", action="store_true", help="build framehook optimised (for timings)")
    parser.add_argument("--fetch-only", action="store_true", help="download and unpack the sdists, then stop")
    parser.add_argument("--render", metavar="REPORT", help="write --markdown (and --findings) from a saved report")
    parser.add_argument("--compact", action="store_true", help="with --render: scikit-learn one row per estimator")
    args = parser.parse_args(argv)
    if args.render:
        saved = json.loads(Path(args.render).read_text())
        Path(args.markdown).write_text(markdown(saved, compact=args.compact))
        if args.findings:
            Path(args.findings).write_text(divergences_markdown(divergences(saved), saved))
        return 0
    packages, sklearn = load_manifest()
    wanted = set(args.packages.split(",")) if args.packages else None
    if wanted:
        unknown = wanted - {p.name for p in packages} - {"sklearn"}
        if unknown:
            parser.error(f"unknown package(s) {sorted(unknown)}")
        packages = [p for p in packages if p.name in wanted]
    if args.fetch_only:
        for package in packages:
            fetch(package)
        return 0
    run_sklearn_too = not args.slice and (wanted is None or "sklearn" in wanted)
    names = matrix.chosen_interpreters(parser, args.only)
    build = "release" if args.release else "as installed" if args.no_build else "test (debug)"
    report: dict[str, Any] = {"commit": git_commit(), "build": build,
                              "started": time.strftime("%Y-%m-%d %H:%M"), "timeout_s": args.timeout,
                              "slice": args.slice, "interpreters": {}}
    for name in names:
        try:
            report["interpreters"][name] = run_interpreter(name, packages, sklearn if run_sklearn_too else None, args)
        except (provision.ProvisionError, RuntimeError, OSError) as error:
            log(f"{name}: ERROR: {error}")
            report["interpreters"][name] = {"error": str(error).splitlines()[0], "packages": {}}
        Path(args.report).parent.mkdir(parents=True, exist_ok=True)
        Path(args.report).write_text(json.dumps(report, indent=1) + "\n")
    Path(args.markdown).write_text(markdown(report))
    found = divergences(report)
    if args.findings:
        Path(args.findings).write_text(divergences_markdown(found, report))
    print(markdown(report))
    log(f"report {args.report}, tables {args.markdown}; {len(found)} divergent")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
