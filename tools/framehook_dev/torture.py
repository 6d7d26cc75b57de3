"""Identity-hook torture: CPython's own regression tests with and without frame hooks.

For each interpreter (``--python``, a python with framehook and this package installed) and each test
module of that interpreter's own ``Lib/test``, the module runs three times, each in its
own process, through CPython's regression-test driver (``test.libregrtest``, as
``python -m test -v MODULE``):

* ``none``: no hooks;
* ``identity``: one hook, ``cache=True``, returning for every hookable frame a fresh,
  equivalent copy of its code with one extra local variable (so that the frame layout
  differs and framehook's replacement path runs for every frame);
* ``chain``: three hooks: identity (``cache=True``), one that declines every frame, and
  identity again (``cache=False``) on top of the first's result;
* ``reassemble`` (``--modes reassemble``, not run by default): every hookable frame's code
  replaced by ``framehook.bytecode.reassemble(code)``, decoded to the canonical
  instruction set and assembled again (the bytecode layer's canonical round trip);
* ``sot`` (``--modes sot``, not run by default; its module list is ``SOT_MODULES``): every
  test method runs translated by framehook's SOT (numpy backend, ``full_graph=False``), with
  the test package and unittest translated like user code, so that functions without array
  operations are rewritten too (empty graphs): symbolic execution, guards, code generation
  and resume functions on all of Python. Per module the report adds the translator's
  coverage (``sot_coverage``): test methods run, translated (the method's own frame ran as
  generated code), translated with no break and no fallback anywhere in its call, and the
  ten most frequent break and fallback reasons. Divergences are analysed one by one:
  ``SOT_INHERENT`` names those that cannot be otherwise, with why.

The hooks and the child are ``framehook_dev.torture_hooks`` (the transform, its limits and a
self-check are described there): the child installs the hooks before the test driver is
imported and records every test's outcome to a JSON-lines file, so a crash or a timeout
still leaves the outcomes so far and names the test that was running. After a crash or a
timeout (``--test-timeout`` per test, regrtest's own, and ``--timeout`` per process) the
module continues in a new process without that test (``--restarts``), so one hang does not
hide the rest of the module.

Per module and hooked mode, the outcome class of every test (passed: pass or expected
failure; failed: failure, error, unexpected success, crash, timeout; skipped; absent) is
compared with the unhooked run, as is the driver's overall result line (``SUCCESS``,
``FAILURE``, ``ENV CHANGED``...). A module whose tests differ is re-run, unhooked and
hooked (``--confirm``, default once): differences that do not repeat are reported as
``flaky``, the rest as ``divergent``. Per module and interpreter the verdict is ``same``,
``divergent`` (with the tests), ``flaky`` or ``n/a`` (the module does not exist there).

The report (``--report``, JSON) holds every run: exit status, duration, the outcome of
each test and the first lines of every error, the hooks' counters (frames seen, code
objects transformed, declined and why); logs go to ``--logs``. The command prints a table
(module x interpreter) and every divergence with its errors, and exits 1 when a module
diverges, 2 when an interpreter cannot run the hooked modes, 0 otherwise.
``--resume`` keeps the modules already in the report and runs only the rest.

Usage::

    python -m framehook_dev.torture --python /tmp/venv-3.12/bin/python
    python -m framehook_dev.torture --python PY39 --python PY311 --modules test_scope,test_with --timeout 600
    python -m framehook_dev.torture --interpreters all --jobs 2   # the matrix's venvs (make test builds them)

Standard library only, Python 3.9+. Runs one test process at a time.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import datetime
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from .process_group import kill_group, run_in_own_group
from .provision import CACHE

MODES = ("none", "identity", "chain", "reassemble", "sot")
HOOKED = ("identity", "chain")
# Run for a module that diverges, to tell where each divergence comes from (see explain()).
EXPLAINING = ("floor", "copy")
CAUSES = {
    "pep523": "also without hooks under a bare pass-through PEP 523 function (inherent to PEP 523)",
    "replacement": "also under an equal copy of the code (a code object other than the function's own runs)",
    "sot-inherent": "under SOT, a divergence analysed as inherent to translation (SOT_INHERENT says why)",
    "unexplained": "only under the transform (extra local, or SOT): a framehook bug, or a test that compares "
                   "code objects",
}

# The first list (generators, coroutines, exceptions, frames, tracing, ...), then more modules
# that drive frames, tracing, profiling and code objects hard. Modules an interpreter lacks
# (test_exception_group before 3.11, test_monitoring before 3.12, ...) are reported as n/a.
DEFAULT_MODULES = [
    "test_generators", "test_coroutines", "test_asyncgen", "test_exceptions", "test_exception_group",
    "test_with", "test_contextlib", "test_contextlib_async", "test_scope", "test_funcattrs",
    "test_frame", "test_traceback", "test_sys_settrace", "test_sys_setprofile", "test_monitoring",
    "test_inspect", "test_grammar", "test_class", "test_descr", "test_super",
    "test_keywordonlyarg", "test_positional_only_arg", "test_unpack_ex", "test_listcomps", "test_genexps",
    "test_itertools", "test_functools", "test_dataclasses", "test_enum", "test_typing",
    "test_pdb", "test_threading", "test_weakref", "test_gc",
    "test_asyncio.test_tasks", "test_asyncio.test_futures", "test_asyncio.test_locks",
    "test_asyncio.test_queues", "test_asyncio.test_pep492", "test_asyncio.test_taskgroups",
    "test_asyncio.test_runners",
    # more of the same kind
    "test_sys", "test_call", "test_extcall", "test_yield_from", "test_raise", "test_named_expressions",
    "test_patma", "test_context", "test_decorators", "test_unpack", "test_types", "test_dis",
    "test_code", "test_compile", "test_collections", "test_abc", "test_property", "test_bdb",
    "test_trace", "test_profile", "test_cprofile", "test_doctest", "test_threading_local",
    "test_iter", "test_richcmp", "test_copy", "test_operator", "test_builtin",
]

# The sot mode's modules: those of Dynamo's CPython-tests port and more.
SOT_MODULES = [
    "test_grammar", "test_scope", "test_generators", "test_exceptions", "test_with", "test_contextlib",
    "test_listcomps", "test_genexps", "test_int", "test_float", "test_list", "test_dict", "test_set",
    "test_tuple", "test_string", "test_unpack", "test_unpack_ex", "test_patma", "test_augassign",
    "test_compare", "test_richcmp", "test_range", "test_slice", "test_builtin", "test_itertools",
    "test_functools", "test_class", "test_super", "test_keywordonlyarg", "test_positional_only_arg",
    "test_named_expressions", "test_dataclasses", "test_enum", "test_raise",
]
# Tests whose outcome under SOT differs for a reason no translator could avoid, by test id
# (a prefix matches its subtests), each with why. Anything else that diverges is a bug.
_TIMES_ITS_TRANSLATION = (
    "the test times a region of its own code on its first call and skips itself when the region "
    "runs fast: the region includes the translation of the code after the break that starts it, "
    "so it is slow enough to measure and the test runs (and passes) instead of skipping")
_RESUME_NESTING = (
    "the test lowers the recursion limit to a few frames above its own depth "
    "(support.infinite_recursion): translated, what follows each graph break runs in a resume "
    "function that the generated code calls, one frame deeper per break (a recursive function "
    "that breaks at its recursive call takes two frames a level), so the limit is reached earlier")
_LAZY_NORMALIZATION = (
    "3.9/3.10 normalize an exception that C code set as a class and an argument only when a "
    "handler takes it; where making the instance fails, its constructor's error replaces it with "
    "that error's traceback, dropping the entries made before. Translated, the call in the try "
    "block is bridged (a resume function makes it, one frame more), so the exception is "
    "normalized when it leaves that frame and the catching function's entry is kept: tb_frame is "
    "that function's frame, not __init__'s")
_ANY_EVAL_FUNCTION = (
    "the test asserts sys.getrefcount(x) == 1 for an argument (3.15): under any PEP 523 function "
    "CPython calls through its generic path, whose argument array holds a reference of its own "
    "(the torture's floor mode, a bare pass-through eval function and no hook, diverges alike); "
    "translated, the call of the resume function holds one more")
_INJECTED_MEMORY_ERRORS = (
    "the test makes every allocation fail from a context manager's __enter__ on "
    "(_testcapi.set_nomemory) and expects the MemoryError from the block's first statement: "
    "translated, __enter__ is a graph break, and the generated code's own next allocation (the "
    "values it hands on to the resume function) fails first, outside the block's handlers")
SOT_INHERENT: dict[str, str] = {
    **{f"test.test_int.{case}.test_denial_of_service_prevented_{way}": _TIMES_ITS_TRANSLATION
       for case in ("IntStrDigitLimitsTests", "IntSubclassStrDigitLimitsTests")
       for way in ("str_to_int", "int_to_str")},
    "test.test_exceptions.ExceptionTests.testSettingException": _LAZY_NORMALIZATION,
    "test.test_richcmp.MiscTest.test_recursion": _RESUME_NESTING,
    "test.test_functools.TestLRUPy.test_lru_recursion": _RESUME_NESTING,
    "test.test_list.ListTest.test_list_overwrite_local": _ANY_EVAL_FUNCTION,
    "test.test_dict.DictTest.test_copy_empty_no_memory": _INJECTED_MEMORY_ERRORS,
}
SOT_REASONS_SHOWN = 10
# The driver's overall result, compared as one more "test".
MODULE_RESULT = "<module result>"

PASSED = {"pass", "xfail"}
SKIPPED = {"skip"}


def log(message: str) -> None:
    print(message, flush=True)


def outcome_class(outcome: str | None) -> str:
    if outcome is None:
        return "absent"
    if outcome in PASSED:
        return "passed"
    if outcome in SKIPPED:
        return "skipped"
    return "failed"


PROBE = r"""
import json, sys, sysconfig, importlib.util
info = {'version': '%d.%d' % sys.version_info[:2], 'full': sys.version.split()[0],
        'ft': bool(sysconfig.get_config_var('Py_GIL_DISABLED')), 'debug': hasattr(sys, 'gettotalrefcount'),
        'executable': sys.executable}
try:
    info['torture'] = (importlib.util.find_spec('framehook') is not None
                       and importlib.util.find_spec('framehook_dev.torture_hooks') is not None)
except Exception as e:
    info['torture'] = False
avail = {}
for m in sys.argv[1:]:
    try:
        avail[m] = importlib.util.find_spec('test.' + m) is not None
    except Exception:
        avail[m] = False
info['modules'] = avail
print(json.dumps(info))
"""


def probe(python: str, modules: list[str]) -> dict:
    try:
        out = subprocess.run([python, "-c", PROBE, *modules], capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as e:
        return {"error": str(e)}
    if out.returncode != 0:
        return {"error": ((out.stderr or out.stdout).strip().splitlines() or ["failed"])[-1]}
    info = json.loads(out.stdout.strip().splitlines()[-1])
    info["label"] = info["version"] + ("t" if info["ft"] else "") + ("d" if info["debug"] else "")
    return info


TIMEOUT_LINE = re.compile(r"Timeout \(\d+:\d\d:\d\d\)!")
RESULT_LINE = re.compile(r"^(?:== )?(?:Tests )?[Rr]esult: ([A-Z][A-Z ,_]*[A-Z])")


def run_module(python: str, module: str, mode: str, args, log_path: Path) -> dict:
    """Run ``module`` in ``mode``; after a crash or a timeout, continue without the test that was running."""
    ignored: list[str] = []
    segments = []
    tests: dict[str, dict] = {}
    hooks = None
    for attempt in range(args.restarts + 1):
        path = log_path if attempt == 0 else log_path.with_name(f"{log_path.stem}.cont{attempt}.log")
        seg = run_segment(python, module, mode, args.timeout, args.test_timeout, path, ignored)
        segments.append({k: seg[k] for k in ("status", "returncode", "duration", "log", "log_tail", "running")})
        for test, entry in seg["tests"].items():
            tests.setdefault(test, entry)
        hooks = hooks or seg["hooks"]
        running = seg["running"]
        if running is None or running in ignored:
            break
        ignored.append(running)
    return {
        "mode": mode,
        "status": segments[-1]["status"] if len(segments) == 1 else
        f"{segments[-1]['status']} after {', '.join(s['status'] for s in segments[:-1])}",
        "result": segments[-1]["status"],
        "interrupted": [s["running"] for s in segments if s["running"]],
        "duration": round(sum(s["duration"] for s in segments), 2),
        "tests": dict(sorted(tests.items())),
        "hooks": hooks,
        "segments": segments,
    }


def run_segment(python: str, module: str, mode: str, timeout: float, test_timeout: float, log_path: Path,
                ignored: list[str]) -> dict:
    log_path.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f"torture-{module}-{mode}-"))
    events_path, stats_path = work / "events.jsonl", work / "stats.json"
    argv = [python, "-X", "faulthandler", "-m", "framehook_dev.torture_hooks", "child", mode, str(events_path),
            str(stats_path), "--", "-v", f"--timeout={int(test_timeout)}"]
    if ignored:
        (work / "ignore.txt").write_text("".join(t + "\n" for t in ignored))
        argv.append(f"--ignorefile={work / 'ignore.txt'}")
    argv.append(module)
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    rc, timed_out, duration, pgid = run_in_own_group(argv, cwd=work, env=env, log_path=log_path, timeout=timeout)
    kill_group(pgid)  # whatever the tests left behind in the process group

    tests: dict[str, dict] = {}
    translated: dict[str, dict] = {}
    running = None
    began = False
    if events_path.exists():
        for line in events_path.read_text(errors="replace").splitlines():
            try:
                event = json.loads(line)
            except ValueError:
                continue
            kind = event.get("event")
            if kind == "begin":
                began = True
            elif kind == "start":
                running = event["test"]
            elif kind == "sot":
                translated[event["test"]] = {k: v for k, v in event.items() if k not in ("event", "test")}
            elif kind == "end":
                test = event["test"]
                if test == running:
                    running = None
                entry = {"outcome": event.get("outcome")}
                for key in ("message", "traceback"):
                    if event.get(key) and event.get("outcome") not in PASSED:
                        entry[key] = event[key]
                previous = tests.get(test)
                # A test reported twice (an error in tearDown after a failure...): keep the worst.
                if previous is None or outcome_class(previous["outcome"]) != "failed":
                    tests[test] = entry
    for test, what in translated.items():
        if test in tests:
            tests[test]["sot"] = what
    log_lines = log_path.read_text(errors="replace").splitlines()
    per_test_timeout = any(TIMEOUT_LINE.search(line) for line in log_lines)
    if running is not None:
        why = "timeout" if timed_out or per_test_timeout else "crash"
        tests[running] = {"outcome": why, "message": f"{why} while this test ran (exit status {rc})",
                          "traceback": "\n".join(_fatal_lines(log_lines))}
    result_line = None
    for line in log_lines:
        m = RESULT_LINE.match(line.strip())
        if m:
            result_line = m.group(1)
    if timed_out or (per_test_timeout and result_line is None):
        status = "TIMEOUT"
    elif not began:
        status = f"NO RESULT (exit {rc})"
    elif result_line is None:
        status = f"CRASH (exit {rc})"
    else:
        status = result_line
    stats = None
    if stats_path.exists():
        with contextlib.suppress(ValueError):
            stats = json.loads(stats_path.read_text())
    shutil.rmtree(work, ignore_errors=True)
    return {
        "status": status,
        "returncode": rc,
        "duration": round(duration, 2),
        "tests": tests,
        "running": running,
        "hooks": stats.get("hooks") if stats else None,
        "log": str(log_path),
        "log_tail": log_lines[-15:] if status.startswith(("CRASH", "NO RESULT", "TIMEOUT")) else [],
    }


def _fatal_lines(lines: list[str]) -> list[str]:
    for i, line in enumerate(lines):
        m = TIMEOUT_LINE.search(line)
        if line.startswith("Fatal Python error") or m:
            return [line[m.start():] if m else line] + lines[i + 1:i + 25]
    return lines[-10:]


def differences(base: dict, hooked: dict) -> list[dict]:
    out = []
    if base["result"] != hooked["result"]:
        out.append({"test": MODULE_RESULT, "none": base["status"], "hooked": hooked["status"]})
    for test in sorted(set(base["tests"]) | set(hooked["tests"])):
        b = base["tests"].get(test, {})
        h = hooked["tests"].get(test, {})
        if outcome_class(b.get("outcome")) != outcome_class(h.get("outcome")):
            entry = {"test": test, "none": b.get("outcome") or "absent", "hooked": h.get("outcome") or "absent"}
            for side, t in (("none", b), ("hooked", h)):
                if t.get("message"):
                    entry[f"{side}_message"] = t["message"]
                if t.get("traceback"):
                    entry[f"{side}_traceback"] = t["traceback"]
            out.append(entry)
    return out


def counts(run: dict) -> dict:
    c = {"passed": 0, "failed": 0, "skipped": 0}
    for t in run["tests"].values():
        c[outcome_class(t["outcome"])] += 1
    return c


def hook_totals(run: dict) -> dict:
    total = {"calls": 0, "transformed": 0, "declined": 0, "errors": 0}
    for h in (run.get("hooks") or {}).values():
        total["calls"] += h.get("calls", 0)
        total["transformed"] += h.get("transformed", 0)
        total["declined"] += sum(h.get("declined", {}).values())
        total["errors"] += sum(h.get("errors", {}).values())
    return total


def judge(module_entry: dict, python: str, module: str, args, log_dir: Path) -> None:
    """Verdict per hooked mode, re-running to tell divergences from flakiness."""
    runs = module_entry["runs"]
    verdicts = {}
    for mode in args.modes:
        if mode == "none":
            continue
        diffs = differences(runs["none"][0], runs[mode][0])
        if not diffs:
            verdicts[mode] = {"verdict": "same", "tests": []}
            continue
        confirmed = {d["test"] for d in diffs}
        for attempt in range(1, args.confirm + 1):
            log(f"    {mode}: {len(confirmed)} difference(s); confirming (run {attempt + 1})")
            for m in ("none", mode):
                if len(runs[m]) <= attempt:
                    runs[m].append(run_module(python, module, m, args, log_dir / f"{module}.{m}.{attempt + 1}.log"))
            again = {d["test"] for d in differences(runs["none"][attempt], runs[mode][attempt])}
            confirmed &= again
        flaky = [d for d in diffs if d["test"] not in confirmed]
        real = [d for d in diffs if d["test"] in confirmed]
        verdicts[mode] = {"verdict": "divergent" if real else "flaky", "tests": real, "flaky": flaky}
    module_entry["verdicts"] = verdicts
    if "sot" in verdicts:
        explain_sot(verdicts["sot"])
    if any(v["tests"] for mode, v in verdicts.items() if mode != "sot"):
        explain(module_entry, python, module, args, log_dir)
    if "sot" in runs:
        module_entry["sot_coverage"] = sot_coverage(runs["sot"][0])


def sot_inherent_reason(test: str) -> str | None:
    for known, why in SOT_INHERENT.items():
        if test == known or test.startswith(known + " ") or test.startswith(known + "."):
            return why
    return None


def explain_sot(verdict: dict) -> None:
    """Tags each SOT divergence ``sot-inherent`` (with why) when ``SOT_INHERENT`` lists it."""
    tests = [d for d in verdict["tests"] if d["test"] != MODULE_RESULT]
    for d in tests:
        why = sot_inherent_reason(d["test"])
        d["cause"] = "sot-inherent" if why else "unexplained"
        if why:
            d["why"] = why
    explained = tests and all(d["cause"] != "unexplained" for d in tests)
    for d in verdict["tests"]:
        if d["test"] == MODULE_RESULT:
            d["cause"] = "sot-inherent" if explained else "unexplained"
            if explained:
                d["why"] = "the driver's result follows from the tests' divergences, each inherent"
    if verdict["tests"] and all(d["cause"] != "unexplained" for d in verdict["tests"]):
        verdict["verdict"] = "inherent"


def normalised_reason(reason: str) -> str:
    """A break reason without what differs per place (addresses, the numbers in names)."""
    return re.sub(r" at 0x[0-9a-f]+", "", reason)


def sot_coverage(run: dict) -> dict:
    """What the translator did over a module's test methods (see the sot mode)."""
    methods = [t["sot"] for t in run["tests"].values() if "sot" in t]
    reasons: collections.Counter = collections.Counter()
    for method in methods:
        reasons.update(normalised_reason(r) for r in method["breaks"] + method["fallbacks"])
    translated = [m for m in methods if m["own_frame"] == "translated"]
    return {
        "run": len(methods),
        "translated": len(translated),
        "clean": sum(1 for m in translated if not m["break_count"] and not m["fallback_count"]),
        "outcomes": dict(collections.Counter(m["own_frame"] or "not seen" for m in methods)),
        "graphs": sum(m["graphs"] for m in methods),
        "ops": sum(m["ops"] for m in methods),
        "reasons": reasons.most_common(SOT_REASONS_SHOWN),
    }


def explain(module_entry: dict, python: str, module: str, args, log_dir: Path) -> None:
    """Tags each divergent test with its cause (CAUSES): the same test diverging without
    hooks under a bare PEP 523 function (``floor``), or under an equal copy of every code
    object (``copy``). A module whose divergences are all explained is ``inherent``."""
    runs = module_entry["runs"]
    for mode in EXPLAINING:
        if mode not in runs:
            runs[mode] = [run_module(python, module, mode, args, log_dir / f"{module}.{mode}.log")]
    # A test counts as diverging in an explaining mode if it differs from any unhooked run.
    also = {mode: set.union(*({d["test"] for d in differences(base, runs[mode][0])} for base in runs["none"]))
            for mode in EXPLAINING}
    for verdict in module_entry["verdicts"].values():
        for d in verdict["tests"]:
            d["cause"] = ("pep523" if d["test"] in also["floor"] else
                          "replacement" if d["test"] in also["copy"] else "unexplained")
        if verdict["tests"] and all(d["cause"] != "unexplained" for d in verdict["tests"]):
            verdict["verdict"] = "inherent"
    log(f"  {module}: explained: " + ", ".join(
        f"{mode} {sorted(collections.Counter(d['cause'] for d in v['tests']).items())}"
        for mode, v in module_entry["verdicts"].items() if v["tests"]))


def cell(entry: dict | None) -> str:
    if entry is None:
        return "-"
    if not entry.get("available", True):
        return "n/a"
    verdicts = entry.get("verdicts")
    if verdicts is None:
        return "?"
    coverage = entry.get("sot_coverage")
    kinds = {v["verdict"] for v in verdicts.values()}
    parts = [f"sot {coverage['translated']}/{coverage['run']}"] if coverage else []
    if kinds == {"same"}:
        return " ".join(["same", *parts])
    for mode, v in verdicts.items():
        if v["verdict"] != "same":
            if v["verdict"] == "flaky":
                parts.append(f"{mode}:flaky({len(v.get('flaky', []))})")
            else:
                causes = collections.Counter(d.get("cause", "unexplained") for d in v["tests"])
                parts.append(f"{mode}:{v['verdict']}(" + ",".join(f"{c}={n}" for c, n in sorted(causes.items())) + ")")
    return " ".join(parts)


def print_table(report: dict, modules: list[str]) -> None:
    labels = list(report["pythons"])
    rows = [["module"] + labels]
    for module in modules:
        rows.append([module] + [cell(report["pythons"][lab]["modules"].get(module)) for lab in labels])
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for n, row in enumerate(rows):
        log("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip())
        if n == 0:
            log("  ".join("-" * w for w in widths))


def print_details(report: dict, modules: list[str], lines: int) -> None:
    for label, py in report["pythons"].items():
        totals = {"calls": 0, "transformed": 0, "declined": 0, "errors": 0}
        slow = []
        for module in modules:
            entry = py["modules"].get(module)
            if not entry or not entry.get("available", True) or "runs" not in entry:
                continue
            for mode in MODES[1:]:
                for run in entry["runs"].get(mode, [])[:1]:
                    for k, v in hook_totals(run).items():
                        totals[k] += v
            base = entry["runs"]["none"][0]["duration"]
            hooked = max(entry["runs"][m][0]["duration"] for m in entry["runs"])
            slow.append((hooked / max(base, 0.01), module, base, hooked))
            for mode, v in entry.get("verdicts", {}).items():
                for kind in ("tests", "flaky"):
                    for d in v.get(kind, []):
                        tag = f"DIVERGENT ({d.get('cause', 'unexplained')})" if kind == "tests" else "flaky"
                        log(f"\n[{label}] {module} {mode} {tag}: {d['test']}: none={d['none']} {mode}={d['hooked']}")
                        if d.get("why"):
                            log(f"  why: {d['why']}")
                        for side in ("hooked", "none"):
                            body = (d.get(f"{side}_message") or "").strip().splitlines()[:lines]
                            if d.get(side) in ("crash", "timeout") or not body:
                                body += (d.get(f"{side}_traceback") or "").strip().splitlines()[:lines]
                            if body:
                                log(f"  {side if side == 'none' else mode}:")
                                for line in body:
                                    log("    " + line)
        log(f"\n[{label}] hooks over all modules (first runs): {totals['calls']} hook calls, "
            f"{totals['transformed']} code objects transformed, {totals['declined']} declined, "
            f"{totals['errors']} transform errors")
        slow.sort(reverse=True)
        if slow:
            log(f"[{label}] slowest under hooks: " + ", ".join(
                f"{m} {b:.0f}s->{h:.0f}s" for _, m, b, h in slow[:5]))


def coverage_totals(py: dict, modules: list[str]) -> dict:
    """The SOT coverage of one interpreter, summed over its modules."""
    total = {"modules": 0, "run": 0, "translated": 0, "clean": 0, "same": 0}
    reasons: collections.Counter = collections.Counter()
    for module in modules:
        entry = py["modules"].get(module) or {}
        coverage = entry.get("sot_coverage")
        if not coverage:
            continue
        total["modules"] += 1
        total["same"] += entry["verdicts"]["sot"]["verdict"] in ("same", "inherent")
        for key in ("run", "translated", "clean"):
            total[key] += coverage[key]
        reasons.update(dict(coverage["reasons"]))
    total["reasons"] = reasons.most_common(SOT_REASONS_SHOWN)
    return total


def percent(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "-"


def coverage_markdown(report: dict, modules: list[str]) -> str:
    """The SOT coverage tables: per interpreter, then per module and interpreter, then the
    most frequent reasons per interpreter."""
    labels = [label for label, py in report["pythons"].items()
              if any((e or {}).get("sot_coverage") for e in py["modules"].values())]
    lines = ["| interpreter | modules as without hooks (or inherent) | test methods run | translated | "
             "translated, no break or fallback |", "| --- | ---: | ---: | ---: | ---: |"]
    for label in labels:
        t = coverage_totals(report["pythons"][label], modules)
        lines.append(f"| {label} ({report['pythons'][label].get('version', '?')}) | {t['same']}/{t['modules']} | "
                     f"{t['run']} | {t['translated']} ({percent(t['translated'], t['run'])}) | "
                     f"{t['clean']} ({percent(t['clean'], t['run'])}) |")
    lines += ["", "Per module: translated / run (translated with no break or fallback); `n/a`: not in "
              "that interpreter's test suite; a verdict other than `same` is given with the cell.", "",
              "| module | " + " | ".join(labels) + " |", "| --- |" + " ---: |" * len(labels)]
    for module in modules:
        cells = []
        for label in labels:
            entry = report["pythons"][label]["modules"].get(module)
            coverage = (entry or {}).get("sot_coverage")
            if entry is not None and not entry.get("available", True):
                cells.append("n/a")
            elif not coverage:
                cells.append("-")
            else:
                verdict = entry["verdicts"]["sot"]["verdict"]
                cells.append(f"{coverage['translated']}/{coverage['run']} ({coverage['clean']})"
                             + ("" if verdict == "same" else f" {verdict}"))
        lines.append(f"| {module} | " + " | ".join(cells) + " |")
    for label in labels:
        t = coverage_totals(report["pythons"][label], modules)
        lines += ["", f"Most frequent break and fallback reasons on {label} (occurrences over all test methods):",
                  ""] + [f"{n:>6}  {reason}" for reason, n in t["reasons"]]
    return "\n".join(lines)


def save(report: dict, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(report, indent=1))
    tmp.replace(path)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--python", action="append", default=[],
                    help="an interpreter with framehook installed (repeatable)")
    ap.add_argument("--interpreters", help="matrix interpreters whose venvs `make test` built, "
                    "comma-separated or 'all' (e.g. 3.9,3.14d); 3.14 and 3.14d run in the sid root")
    ap.add_argument("--jobs", type=int, default=1, help="with --interpreters: interpreters tortured at "
                    "once, each in its own process (default 1)")
    ap.add_argument("--modules", help="comma-separated test modules (default: the built-in list of "
                    f"{len(DEFAULT_MODULES)}; with --modes sot alone, the {len(SOT_MODULES)} of SOT_MODULES)")
    ap.add_argument("--coverage-markdown", type=Path, help="with the sot mode: write the coverage tables "
                    "(markdown) to this file")
    ap.add_argument("--exclude", default="", help="comma-separated modules to leave out")
    ap.add_argument("--modes", default=",".join(HOOKED), help="hooked modes to compare with 'none' "
                    "(default: identity,chain)")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds per module and mode (default 1800)")
    ap.add_argument("--test-timeout", type=float, default=300,
                    help="seconds per test, regrtest's --timeout (default 300)")
    ap.add_argument("--restarts", type=int, default=5, help="after a crash or a timeout, continue the "
                    "module without the test that was running, up to this many times (default 5)")
    ap.add_argument("--confirm", type=int, default=1, help="re-runs of a module that differs (default 1)")
    ap.add_argument("--report", type=Path, default=CACHE / "torture-report.json")
    ap.add_argument("--logs", type=Path, default=CACHE / "torture-logs")
    ap.add_argument("--resume", action="store_true", help="keep modules already in --report")
    ap.add_argument("--lines", type=int, default=12, help="lines of each error to print (default 12)")
    ap.add_argument("--list", action="store_true", help="print the module list and exit")
    args = ap.parse_args(argv)

    sot_only = [m for m in args.modes.split(",") if m and m != "none"] == ["sot"]
    modules = [m for m in (args.modules.split(",") if args.modules else
                           SOT_MODULES if sot_only else DEFAULT_MODULES) if m]
    exclude = {m for m in args.exclude.split(",") if m}
    modules = [m for m in modules if m not in exclude]
    if args.list:
        print("\n".join(modules))
        return 0
    if bool(args.python) == bool(args.interpreters):
        ap.error("give either --python or --interpreters")
    args.modes = ["none"] + [m for m in args.modes.split(",") if m and m != "none"]
    for m in args.modes:
        if m not in MODES:
            ap.error(f"unknown mode {m!r}")

    if args.interpreters:
        return torture_matrix(args, modules, argv if argv is not None else sys.argv[1:])

    report = {"pythons": {}}
    if args.resume and args.report.exists():
        report = json.loads(args.report.read_text())
    report.update(started=report.get("started") or datetime.datetime.now().isoformat(timespec="seconds"),
                  argv=sys.argv[1:], modules=modules, modes=args.modes)
    unusable = False
    for python in args.python:
        info = probe(python, modules)
        if "error" in info:
            log(f"torture: {python}: {info['error']}")
            unusable = True
            continue
        if not info["torture"]:
            log(f"torture: {python} ({info['label']}): framehook or framehook_dev.torture_hooks is not importable "
                f"(pip install . tools)")
            unusable = True
            continue
        label = info["label"]
        py = report["pythons"].setdefault(label, {"modules": {}})
        py.update(executable=python, version=info["full"])
        log_dir = args.logs / label
        log(f"torture: {label} ({info['full']}, {python}): {len(modules)} modules, modes {', '.join(args.modes)}")
        for module in modules:
            entry = py["modules"].get(module)
            if args.resume and entry and (not entry.get("available", True) or (
                    "verdicts" in entry and set(entry["runs"]) == set(args.modes))):
                log(f"  {module}: {cell(entry)} (from the report)")
                continue
            if not info["modules"].get(module):
                py["modules"][module] = {"available": False}
                log(f"  {module}: n/a")
                save(report, args.report)
                continue
            entry = {"available": True, "runs": {}}
            for mode in args.modes:
                run = run_module(python, module, mode, args, log_dir / f"{module}.{mode}.log")
                entry["runs"][mode] = [run]
                c = counts(run)
                extra = ""
                if mode == "sot":
                    coverage = sot_coverage(run)
                    extra = f", SOT translated {coverage['translated']}/{coverage['run']} methods"
                elif mode != "none":
                    t = hook_totals(run)
                    extra = f", {t['transformed']} codes transformed, {t['declined']} declined"
                    if t["errors"]:
                        extra += f", {t['errors']} TRANSFORM ERRORS"
                log(f"  {module} [{mode}] {run['status']} in {run['duration']:.0f}s: {c['passed']} passed, "
                    f"{c['failed']} failed, {c['skipped']} skipped{extra}")
            judge(entry, python, module, args, log_dir)
            py["modules"][module] = entry
            log(f"  {module}: {cell(entry)}")
            save(report, args.report)
    report["finished"] = datetime.datetime.now().isoformat(timespec="seconds")
    save(report, args.report)
    return conclude(report, modules, args, unusable)


def conclude(report: dict, modules: list[str], args, unusable: bool) -> int:
    log("")
    print_table(report, modules)
    print_details(report, modules, args.lines)
    if any((e or {}).get("sot_coverage") for py in report["pythons"].values() for e in py["modules"].values()):
        table = coverage_markdown(report, modules)
        log("\nSOT coverage\n\n" + table)
        if args.coverage_markdown:
            args.coverage_markdown.write_text(table + "\n")
    log("\ncauses: " + "; ".join(f"{cause}: {text}" for cause, text in CAUSES.items()))
    log(f"\nreport: {args.report}\nlogs: {args.logs}")
    divergent = any(v["verdict"] == "divergent"
                    for py in report["pythons"].values() for e in py["modules"].values()
                    for v in e.get("verdicts", {}).values())
    if unusable:
        return 2
    return 1 if divergent else 0


def torture_matrix(args, modules: list[str], argv: list[str]) -> int:
    """Each interpreter's torture in its own child (inside the sid root for 3.14/3.14d),
    ``--jobs`` at a time, each writing a partial report; then one merged report and table."""
    import concurrent.futures

    from . import matrix

    names = matrix.INTERPRETERS if args.interpreters == "all" else args.interpreters.split(",")
    unknown = [n for n in names if n not in matrix.INTERPRETERS]
    if unknown:
        raise SystemExit(f"unknown interpreter(s) {', '.join(unknown)}; known: {', '.join(matrix.INTERPRETERS)}")
    # Partial reports and logs under the build dir, which is bound into the sid root.
    parts = matrix.BUILD_DIR / "torture-parts"
    passed_on = strip_options(argv, {"--interpreters", "--jobs", "--report", "--logs", "--python",
                                     "--coverage-markdown"})
    previous = json.loads(args.report.read_text()) if args.resume and args.report.exists() else {"pythons": {}}

    def torture_one(name: str) -> tuple[str, int, Path]:
        target = matrix.resolve(name)
        part = parts / f"{name}.json"
        part.parent.mkdir(parents=True, exist_ok=True)
        if args.resume and not part.exists() and name in previous.get("parts", {}):
            part.write_text(json.dumps({"pythons": previous["parts"][name]}))
        try:
            matrix.install_dev_package(target)
        except (RuntimeError, OSError) as error:
            log(f"torture: {name}: {error}")
            return name, 2, part
        command = [target.venv_python, "-m", "framehook_dev.torture",
                   "--python", target.venv_python, "--report", str(part), "--logs", str(parts / f"{name}-logs"),
                   *passed_on]
        out = parts / f"{name}.out"
        log(f"torture: {name}: started (output: {out})")
        with open(out, "w") as sink:
            done = target.run(command, output=sink)
        log(f"torture: {name}: finished, exit {done.returncode}")
        return name, done.returncode, part

    args.logs = parts
    report = {"pythons": {}, "parts": {}, "started": datetime.datetime.now().isoformat(timespec="seconds"),
              "argv": argv, "modules": modules, "modes": args.modes}
    unusable = False
    matrix.dev_wheel()  # built once, before the threads install it
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        results = list(pool.map(torture_one, names))
    for name, returncode, part in results:
        if returncode == 2 or not part.exists():
            unusable = True
            continue
        pythons = json.loads(part.read_text())["pythons"]
        report["parts"][name] = pythons
        report["pythons"].update(pythons)
    report["finished"] = datetime.datetime.now().isoformat(timespec="seconds")
    save(report, args.report)
    return conclude(report, modules, args, unusable)


def strip_options(argv: list[str], options: set[str]) -> list[str]:
    """``argv`` without the given options and their values (``--opt value`` or ``--opt=value``)."""
    kept, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg in options:
            skip = True
        elif arg.split("=", 1)[0] not in options:
            kept.append(arg)
    return kept


if __name__ == "__main__":
    sys.exit(main())
