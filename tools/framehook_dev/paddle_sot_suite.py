"""Run PaddlePaddle's own ``test/sot`` suite on Paddle's eval frame and on framehook's, and compare.

Each test file runs in its own process, as Paddle's CI runs them (``test/sot/CMakeLists.txt``):
the environment gets ``SOT_LOG_LEVEL=0 COST_MODEL=False MIN_GRAPH_SIZE=0 STRICT_MODE=1
FLAGS_cudnn_deterministic=True`` and the working directory is the test directory, so that
``import test_case_base`` finds Paddle's harness. Three modes:

* ``native``: Paddle's own C eval frame (``python -m unittest -v test_x`` in effect);
* ``framehook``: the same, after ``framehook.sot.paddle.install()`` has swapped framehook's
  eval-frame functions into ``paddle.base.core`` (before ``paddle.jit.sot`` is imported);
* ``translator``: ``paddle.jit.to_static``'s SOT mode and Paddle's ``symbolic_translate`` are
  framehook's own translator with the paddle backend, installed by
  ``framehook.sot.paddle.install(translator="framehook")`` (one translation per function kept
  across the calls that translate it, as Paddle keeps its cache per code object), without
  ``STRICT_MODE``, which that refuses. Tests that inspect Paddle's
  translator (its cache, executor, cost model) are listed in ``NOT_APPLICABLE`` with the reason,
  and not compared. For each test that passes in both, the graph breaks are compared:
  framehook's records against Paddle's. Paddle's are the reasons it collects
  (``SOT_COLLECT_INFO=breakgraph_reason``, one per ``BreakGraphError``) plus the two ways out of
  a graph that record none, counted by wrapping them: a split at a data-dependent ``if`` in the
  frame it translates (``OpcodeExecutor._break_graph_when_if``), a fallback (the whole frame
  eager), and on 3.11+ a function with an exception table, which Paddle's eval frame never
  translates (a fallback and such a function count as one break, as framehook counts a frame it
  runs eagerly). More is a difference.

The child runs ``unittest`` with verbosity 2 and a result class that also appends one JSON
line per test event to a file, so outcomes are known per test case even when Paddle's C++
logging interleaves with unittest's output, and even when the process crashes or times out
(the test then running is reported as ``crash`` or ``timeout``). A file that exceeds
``--timeout`` seconds is killed with its process group.

The report (JSON, ``--report``) has, per interpreter, mode and file: the exit status, the
duration, every test's outcome with the first line of its error, and the tail of the log
(full logs go to ``--logs``); and per interpreter, mode and file the tests whose outcome
differs from native's (in translator mode, also those with more graph breaks). A test
passes when its outcome is ``pass`` or ``xfail``; the command exits 1 when, for some
interpreter and mode, a test differs from native,
2 when a requested mode cannot run at all (e.g. framehook is not installed in that
interpreter), and 0 otherwise.

The test files are Paddle's, not ours, and are never committed: they live in
``$FRAMEHOOK_CACHE/paddle-test-sot`` (``~/.cache/framehook/paddle-test-sot``) next to a
``MANIFEST.json`` naming, per file, the Paddle repository path and commit it was taken from
(``paddle_sot_manifest.json`` in this package is a copy of it).
When the directory holds no test files the command says so and exits 0 (``--require-tests``
makes that exit 2), so it can sit in CI where the files cannot be fetched.

Usage::

    python -m framehook_dev.paddle_sot_suite --python /tmp/pd-venv-3.10/bin/python
    python -m framehook_dev.paddle_sot_suite --python PY310 --python PY313 --mode native -k test_0

Standard library only, Python 3.9+.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import datetime
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from .process_group import run_in_own_group
from .provision import CACHE

MODES = ("native", "framehook", "translator")


@dataclass(frozen=True)
class Suite:
    """One of Paddle's test suites, as its CI runs it."""

    name: str
    tests: Path  # where its files are (outside the repository)
    harness: str  # the file every test imports: without it there is no suite
    env: dict[str, str]  # its CI's environment
    # Test files (or tests, by id without the mode suffix) that test Paddle's own translator
    # rather than compare translated results with eager ones: not compared in translator mode,
    # each with the reason (a test elsewhere whose source names Paddle's internals is likewise,
    # by the child's INTERNALS).
    not_applicable: dict[str, str] = field(default_factory=dict)
    # Tests not run, by a substring of their ids, each with the reason (variants that do not
    # use SOT, tests that kill the process natively): counted apart in the report.
    deselect: dict[str, str] = field(default_factory=dict)
    # Links the suite's files expect beside its directory: name -> its target in the directory.
    links: dict[str, str] = field(default_factory=dict)


SOT = Suite(
    name="sot",
    tests=CACHE / "paddle-test-sot",
    harness="test_case_base.py",
    # test/sot/CMakeLists.txt: py_test_modules(... ENVS SOT_LOG_LEVEL=0 COST_MODEL=False
    # MIN_GRAPH_SIZE=0 STRICT_MODE=True FLAGS_cudnn_deterministic=True); run_all.sh uses STRICT_MODE=1.
    env={"SOT_LOG_LEVEL": "0", "COST_MODEL": "False", "MIN_GRAPH_SIZE": "0", "STRICT_MODE": "1",
         "FLAGS_cudnn_deterministic": "True"},
    not_applicable={
        "test_envs": "tests Paddle's SOT environment variables",
        "test_info_collect": "tests Paddle's info collector",
        "test_psdb": "tests Paddle's SOT debugger (psdb)",
        "test_step_profiler": "tests Paddle's step profiler",
        "test_guard_tree": "tests Paddle's native guard tree",
        "test_guard_fastpath_strategy": "tests Paddle's guard fast path",
        "test_faster_guard": "tests Paddle's faster guards",
        "test_instruction_translator_cache": "tests Paddle's executor cache",
        "test_min_graph_size": "tests Paddle's MIN_GRAPH_SIZE cost model",
        "test_sir_rollback": "tests Paddle's SIR rollback",
        "test_execution_base": "tests Paddle's execution base helpers",
        "test_model_switch_training": "reads Paddle's compile cache (CompileSIRCache) and its partial programs",
        "test_sot_export": "tests Paddle's SIR export (SOT_EXPORT writes SIR_N.py)",
    },
)
DYGRAPH_TO_STATIC = Suite(
    name="dygraph_to_static",
    tests=CACHE / "paddle-test-dy2st",
    harness="dygraph_to_static_utils.py",
    # test/dygraph_to_static/CMakeLists.txt: SOT_ENVS SOT_LOG_LEVEL=0 COST_MODEL=False MIN_GRAPH_SIZE=0
    # STRICT_MODE=False.
    env={"SOT_LOG_LEVEL": "0", "COST_MODEL": "False", "MIN_GRAPH_SIZE": "0", "STRICT_MODE": "False"},
    not_applicable={
        "test_to_tensor.TestToTensorReturnVal.test_to_tensor_err_log": "expects the message of Paddle's static "
        "to_tensor, which its translator builds the call with; framehook's translator runs the call eagerly at a "
        "graph break, which raises eager's TypeError (its own message)",
    },
    # Dy2StTestBase makes a variant of each test per translator and IR (`test_x__sot_pir`).
    deselect={
        "__ast_": "a variant of Paddle's AST translator, which says nothing of SOT",
        "__sot_pt": "a variant of SOT under the old IR, which Paddle 3.3.1 refuses in every mode "
        "('SOT is only supported when running in PIR mode')",
        "test_in_static_mode_mkldnn": "aborts the process natively on Paddle 3.3.1 (oneDNN's pool2d_grad raises "
        "dnnl::error)",
    },
    # The harness loads Path(__file__).parent.parent / "legacy_test/utils.py".
    links={"legacy_test": "legacy_test"},
)
SUITES = {suite.name: suite for suite in (SOT, DYGRAPH_TO_STATIC)}

# Paddle's SOT records each graph break's reason (counted per test, beside framehook's).
COLLECT_ENV = {"SOT_COLLECT_INFO": "breakgraph_reason"}

# framehook's translator has no strict mode (framehook.sot.paddle.install refuses STRICT_MODE=1;
# strict mode makes a Paddle fallback an error): the translator runs without it. MIN_GRAPH_SIZE=0
# applies (every graph runs as its static program).
TRANSLATOR_ENV = {"STRICT_MODE": "0"}
# What framehook.sot.paddle.installed() says in each mode that installs.
INSTALLED = {"framehook": "paddle", "translator": "framehook"}

# Outcomes a test can have; the first group counts as passing.
PASSING = ("pass", "xfail")
SEVERITY = ["pass", "xfail", "skip", "upass", "fail", "error", "crash", "timeout", "missing"]

# Runs in the child: argv = [mode, module, events_file, config (JSON: "deselect", the substrings
# of the ids of tests not run, with the reasons)].
CHILD = r"""
import functools, json, statistics, sys, time, traceback, unittest
mode, module, events_path, config = sys.argv[1:5]
config = json.loads(config)
sink = open(events_path, "a", buffering=1)
def emit(**fields):
    sink.write(json.dumps(fields) + "\n")
    sink.flush()
installed = None
def use_symbolic_translate(function):
    # Before the test module (and test_case_base) import it.
    import paddle.jit.sot
    paddle.jit.sot.symbolic_translate = function
    paddle.jit.sot.translate.symbolic_translate = function
# translator mode: the translations the current test called, each with the number of graph
# breaks it had recorded before the test.
made = {}
if mode == "framehook":
    import framehook.sot.paddle
    framehook.sot.paddle.install()
    installed = framehook.sot.paddle.installed()
elif mode == "translator":
    import framehook.sot as fsot
    import framehook.sot.paddle
    framehook.sot.paddle.install(translator="framehook")
    installed = framehook.sot.paddle.installed()
    import paddle.jit.sot
    translate_function = paddle.jit.sot.symbolic_translate
    @functools.wraps(translate_function)
    def symbolic_translate(fn, **kwargs):
        fast = translate_function(fn, **kwargs)
        # A bound method's translation is its function's, bound: counted once.
        made.setdefault(getattr(fast, "__func__", fast), len(fsot.stats(fast).graph_breaks))
        return fast
    use_symbolic_translate(symbolic_translate)
unrecorded_breaks = [0]  # native modes: Paddle's breaks that record no reason
if mode != "translator":
    # Paddle records a reason only where it raises BreakGraphError. Three more ways out of a
    # graph record none, counted here: a data-dependent `if` in the frame being translated splits
    # it (_break_graph_when_if); a fallback runs the whole frame eagerly (start_translate gives no
    # code but a guard, where strict mode is off); a function Paddle never translates (below).
    # A fallback and such a function count as one break, as framehook counts a frame it runs
    # eagerly.
    from paddle.jit.sot.opcode_translator.executor import executor_cache, opcode_executor
    split_at_if = opcode_executor.OpcodeExecutor._break_graph_when_if
    def counted_split_at_if(self, *args, **kwargs):
        unrecorded_breaks[0] += 1
        return split_at_if(self, *args, **kwargs)
    opcode_executor.OpcodeExecutor._break_graph_when_if = counted_split_at_if
    translate_frame = executor_cache.start_translate
    def counted_translate_frame(frame, **kwargs):
        custom_code, guard, guard_chain = translate_frame(frame, **kwargs)
        if custom_code.code is None and guard is not None:
            unrecorded_breaks[0] += 1
        return custom_code, guard, guard_chain
    executor_cache.start_translate = counted_translate_frame
    # Paddle's eval frame never hands its translator a frame with an exception table (3.11+: a
    # try or with block, an inlined comprehension): the function runs eagerly, without a graph.
    # Counted once per function a test translates.
    skipped_codes = set()
    import paddle.jit.sot
    translate_function = paddle.jit.sot.symbolic_translate
    def counted_symbolic_translate(fn, **kwargs):
        code = getattr(getattr(fn, "__func__", fn), "__code__", None)
        if getattr(code, "co_exceptiontable", b"") and code not in skipped_codes:
            skipped_codes.add(code)
            unrecorded_breaks[0] += 1
        return translate_function(fn, **kwargs)
    use_symbolic_translate(counted_symbolic_translate)
# Every mode: the calls of what symbolic_translate gives (to_static calls it at each call of a
# translated function, then calls its result), timed per function: a function's first call
# translates it and builds its programs, the later ones are hot. Calls made within a timed
# call are part of it.
calls = {}
depth = [0]
import paddle.jit.sot
observed_translate = paddle.jit.sot.symbolic_translate
@functools.wraps(observed_translate)  # installed() follows __wrapped__
def timed_symbolic_translate(fn, **kwargs):
    fast = observed_translate(fn, **kwargs)
    key = getattr(getattr(fn, "__func__", fn), "__code__", fn)
    def timed(*args, **kwargs):
        if depth[0]:
            return fast(*args, **kwargs)
        depth[0] += 1
        start = time.perf_counter()
        try:
            return fast(*args, **kwargs)
        finally:
            calls.setdefault(key, []).append(time.perf_counter() - start)
            depth[0] -= 1
    return timed
use_symbolic_translate(timed_symbolic_translate)
def timings():
    # The current test's: its translated functions' first calls, summed, and their later
    # calls' medians, summed (ms); the number of calls.
    if not calls:
        return {}
    first = sum(durations[0] for durations in calls.values())
    hot = [statistics.median(durations[1:]) for durations in calls.values() if len(durations) > 1]
    return {"calls": sum(map(len, calls.values())), "first_ms": round(first * 1e3, 3),
            "hot_ms": round(sum(hot) * 1e3, 3) if hot else None}
emit(event="begin", mode=mode, python=sys.version, installed=installed)
def break_reasons():
    # framehook's graph break reasons in the current test (translator mode), a few.
    if mode != "translator":
        return []
    return [b.reason[:160] for fast, before in made.items() for b in fsot.stats(fast).graph_breaks[before:]][:4]
def breaks():
    # Graph breaks of the current test: framehook's records, or Paddle's (the reasons it
    # collects, SOT_COLLECT_INFO, and the breaks it records no reason for).
    if mode == "translator":
        return sum(len(fsot.stats(fast).graph_breaks) - before for fast, before in made.items())
    collector = sys.modules.get("paddle.jit.sot.utils.info_collector")
    if collector is None:
        return unrecorded_breaks[0]
    info = collector.InfoCollector().get_info_dict(collector.InfoType.E2E_INFO)
    return len(info.get("BreakGraphReasonInfo", [])) + unrecorded_breaks[0]
# What a test reads of Paddle's translator itself, by the names in its source.
INTERNALS = {
    "translate_count": "counts translations in Paddle's executor cache",
    "OpcodeExecutorCache": "reads Paddle's executor cache",
    "GuardTree": "runs Paddle's native guard tree",
    "InfoCollector": "reads Paddle's info collector",
    "StepInfoManager": "reads Paddle's step profiler",
    "psdb": "uses Paddle's SOT debugger (psdb)",
    "FallbackError": "expects Paddle's FallbackError",
    "InnerError": "expects Paddle's InnerError",
}
def internals_read(test):
    if mode != "translator":
        return None
    import inspect
    try:
        source = inspect.getsource(getattr(test, test._testMethodName))
    except (OSError, TypeError, AttributeError):
        return None
    found = [why for name, why in INTERNALS.items() if name in source]
    return "; ".join(found) or None
def clear_breaks():
    made.clear()
    calls.clear()
    unrecorded_breaks[0] = 0
    if mode != "translator":
        skipped_codes.clear()
    collector = sys.modules.get("paddle.jit.sot.utils.info_collector")
    if collector is not None:
        collector.InfoCollector().clear()
def first_line(err):
    text = "".join(traceback.format_exception_only(err[0], err[1])).strip()
    for line in text.splitlines():
        if line.strip():
            return line.strip()[:400]
    return err[0].__name__
class Recording(unittest.TextTestResult):
    def startTest(self, test):
        clear_breaks()
        emit(event="start", test=test.id(), not_applicable=internals_read(test))
        super().startTest(test)
    def addSuccess(self, test):
        super().addSuccess(test)
        emit(event="pass", test=test.id(), breaks=breaks(), break_reasons=break_reasons(), **timings())
    def addFailure(self, test, err):
        super().addFailure(test, err)
        emit(event="fail", test=test.id(), message=first_line(err))
    def addError(self, test, err):
        super().addError(test, err)
        emit(event="error", test=test.id(), message=first_line(err))
    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        emit(event="skip", test=test.id(), message=str(reason)[:400])
    def addExpectedFailure(self, test, err):
        super().addExpectedFailure(test, err)
        emit(event="xfail", test=test.id())
    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test)
        emit(event="upass", test=test.id())
    def addSubTest(self, test, subtest, err):
        super().addSubTest(test, subtest, err)
        if err is not None:
            failed = issubclass(err[0], test.failureException)
            emit(event="fail" if failed else "error", test=test.id(), message=f"{subtest.id()}: {first_line(err)}")
def without_deselected(suite):
    kept = unittest.TestSuite()
    for test in suite:
        if isinstance(test, unittest.TestSuite):
            kept.addTest(without_deselected(test))
            continue
        why = next((why for part, why in config["deselect"].items() if part in test.id()), None)
        if why is None:
            kept.addTest(test)
        else:
            emit(event="deselected", test=test.id(), message=why)
    return kept
class Loader(unittest.TestLoader):
    def loadTestsFromNames(self, names, module=None):
        return without_deselected(super().loadTestsFromNames(names, module))
runner = unittest.TextTestRunner(resultclass=Recording, verbosity=2)
program = unittest.main(module=None, argv=["python -m unittest", "-v", module], testRunner=runner,
                        testLoader=Loader(), exit=False)
if mode != "native":
    installed = framehook.sot.paddle.installed()
ok = program.result.wasSuccessful()
emit(event="end", ok=ok, installed=installed)
sys.exit(0 if ok else 1)
"""


def log(message: str) -> None:
    print(message, flush=True)


def pass_class(outcome: str) -> str:
    if outcome in PASSING:
        return "pass"
    if outcome == "skip":
        return "skip"
    return "fail"


def worst(a: str | None, b: str) -> str:
    if a is None:
        return b
    return a if SEVERITY.index(a) >= SEVERITY.index(b) else b


def load_manifest(tests_dir: Path) -> dict | None:
    path = tests_dir / "MANIFEST.json"
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as e:
        log(f"paddle_sot_suite: warning: cannot read {path}: {e}")
        return None


def check_manifest(tests_dir: Path, manifest: dict | None) -> dict[str, dict]:
    """File name -> manifest entry; warns about files that differ from what the manifest recorded."""
    if manifest is None:
        return {}
    entries = {entry["file"]: entry for entry in manifest.get("files", [])}
    for name, entry in entries.items():
        path = tests_dir / name
        if not path.is_file():
            log(f"paddle_sot_suite: warning: {name} is in MANIFEST.json but not in {tests_dir}")
        elif entry.get("sha256") and hashlib.sha256(path.read_bytes()).hexdigest() != entry["sha256"]:
            log(
                f"paddle_sot_suite: warning: {name} differs from the version MANIFEST.json records "
                f"({entry.get('commit')})"
            )
    return entries


def probe(python: str) -> dict:
    """The interpreter's version label and what it can import."""
    code = (
        "import json, sys, sysconfig\n"
        "info = {'version': '%d.%d' % sys.version_info[:2], 'full': sys.version.split()[0],\n"
        "        'ft': bool(sysconfig.get_config_var('Py_GIL_DISABLED')), 'debug': hasattr(sys, 'gettotalrefcount')}\n"
        "try:\n"
        "    import importlib.metadata as md\n"
        "    info['paddle'] = md.version('paddlepaddle')\n"
        "except Exception:\n"
        "    info['paddle'] = None\n"
        "try:\n"
        "    import importlib.util\n"
        "    info['framehook'] = importlib.util.find_spec('framehook') is not None and \\\n"
        "        importlib.util.find_spec('framehook.sot.paddle') is not None\n"
        "except Exception:\n"
        "    info['framehook'] = False\n"
        "print(json.dumps(info))\n"
    )
    try:
        out = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as e:
        return {"error": str(e)}
    if out.returncode != 0:
        return {"error": (out.stderr or out.stdout).strip().splitlines()[-1:] or ["failed"]}
    info = json.loads(out.stdout.strip().splitlines()[-1])
    info["label"] = info["version"] + ("t" if info["ft"] else "") + ("d" if info["debug"] else "")
    return info


def run_file(
    suite: Suite, python: str, mode: str, tests_dir: Path, test_file: str, timeout: float, log_path: Path,
    extra_env: dict
) -> dict:
    module = test_file[:-3]
    env = dict(os.environ)
    env.update(suite.env)
    env.update(COLLECT_ENV)
    if mode == "translator":
        env.update(TRANSLATOR_ENV)
    env.update(extra_env)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    fd, events_name = tempfile.mkstemp(prefix=f"{module}.{mode}.", suffix=".jsonl")
    os.close(fd)
    events_path = Path(events_name)
    rc, timed_out, duration, _ = run_in_own_group(
        [python, "-c", CHILD, mode, module, str(events_path), json.dumps({"deselect": suite.deselect})],
        cwd=tests_dir,
        env=env,
        log_path=log_path,
        timeout=timeout,
    )
    events = []
    for line in events_path.read_text(errors="replace").splitlines():
        try:
            events.append(json.loads(line))
        except ValueError:
            pass
    events_path.unlink()

    tests: dict[str, dict] = {}
    pending: set[str] = set()
    deselected: dict[str, int] = {}
    begin = end = None
    for event in events:
        kind = event.get("event")
        if kind == "begin":
            begin = event
        elif kind == "deselected":
            deselected[event["message"]] = deselected.get(event["message"], 0) + 1
        elif kind == "end":
            end = event
        elif kind == "start":
            pending.add(event["test"])
            entry = tests.setdefault(event["test"], {"outcome": None})
            if event.get("not_applicable"):
                entry["not_applicable"] = event["not_applicable"]
        else:
            test = event["test"]
            pending.discard(test)
            entry = tests.setdefault(test, {"outcome": None})
            outcome = worst(entry["outcome"], kind)
            if outcome != entry["outcome"]:
                entry["outcome"] = outcome
                if event.get("message"):
                    entry["message"] = event["message"]
            for field in ("breaks", "calls", "first_ms", "hot_ms"):
                if field in event:
                    entry[field] = event[field]
            if event.get("break_reasons"):
                entry["break_reasons"] = event["break_reasons"]
    log_lines = log_path.read_text(errors="replace").splitlines()
    unfinished = "timeout" if timed_out else "crash"
    why = f"{unfinished} while this test ran (exit status {rc})"
    native_stack = _native_stack(log_lines)
    if native_stack and not timed_out:
        why += "; native stack: " + " <- ".join(native_stack)
    for test in pending:
        tests[test]["outcome"] = unfinished
        tests[test]["message"] = why

    if timed_out:
        status = "timeout"
    elif begin is None:
        status = "no-result"
    elif end is None:
        status = "crash"
    elif rc == 0:
        status = "passed"
    else:
        status = "failed"
    result = {
        "status": status,
        "returncode": rc,
        "duration": round(duration, 2),
        "tests": dict(sorted(tests.items())),
        "deselected": deselected,
        "log": str(log_path),
        "log_tail": [line for line in log_lines if not _is_glog(line)][-30:],
    }
    if mode != "native" and begin is not None:
        wanted = INSTALLED[mode]
        result["framehook_installed"] = (begin.get("installed") == wanted
                                         and (end is None or end.get("installed") == wanted))
    return result


def _native_stack(lines: list[str]) -> list[str]:
    """The innermost frames of the C++ traceback Paddle prints on a fatal signal, if any."""
    for i, line in enumerate(lines):
        if line.strip() == "C++ Traceback (most recent call last):":
            frames = []
            for entry in lines[i + 2 :]:
                parts = entry.split(None, 1)
                if len(parts) != 2 or not parts[0].isdigit():
                    break
                frames.append(parts[1].strip())
            return frames[::-1][:4]
    return []


def _is_glog(line: str) -> bool:
    # Paddle's C++ logging: "I1121 06:28:08.862432  1887 file.cc:123] ..."
    return len(line) > 5 and line[0] in "IWEF" and line[1:5].isdigit() and line[5] == " "


def count(result: dict) -> tuple[int, int]:
    tests = result["tests"]
    passed = sum(1 for t in tests.values() if t["outcome"] in PASSING)
    return passed, len(tests)


def not_applicable(suite: Suite, mode: str, test: str, result: dict | None = None) -> str | None:
    """Why ``test`` says nothing of ``mode`` (it inspects Paddle's translator), or None: its
    file is listed in the suite's ``not_applicable``, or its source names Paddle's internals (the child's
    INTERNALS, recorded in ``result``)."""
    if mode != "translator":
        return None
    listed = next((why for key, why in suite.not_applicable.items()
                   if test == key or test.startswith((key + ".", key + "__"))), None)
    return listed or (result or {}).get("not_applicable")


def compare(suite: Suite, native: dict, other: dict, mode: str) -> list[dict]:
    """The tests whose passing differs between native and ``mode`` (those not applicable to
    it apart), and, for the translator, those with more graph breaks than native's."""
    differing = []
    for test in sorted(set(native["tests"]) | set(other["tests"])):
        n = native["tests"].get(test, {"outcome": "missing"})
        o = other["tests"].get(test, {"outcome": "missing"})
        if not_applicable(suite, mode, test, o):
            continue
        entry = {"test": test, "native": n["outcome"], mode: o["outcome"], "native_message": n.get("message"),
                 f"{mode}_message": o.get("message")}
        if mode == "translator" and pass_class(n["outcome"]) != "pass":
            continue  # the judge: what passes natively passes translated (more passing is no difference)
        if pass_class(n["outcome"]) != pass_class(o["outcome"]):
            differing.append(entry)
        elif mode == "translator" and o.get("breaks", 0) > n.get("breaks", 0):
            differing.append({**entry, "native_breaks": n.get("breaks", 0), "translator_breaks": o["breaks"],
                              "translator_break_reasons": o.get("break_reasons", [])})
    return differing


def cell(result: dict | None) -> str:
    if result is None:
        return "-"
    passed, total = count(result)
    skipped = sum(1 for t in result["tests"].values() if t["outcome"] == "skip")
    text = f"{passed}/{total - skipped}"
    if skipped:
        text += f" +{skipped} skip"
    if result["status"] in ("timeout", "crash", "no-result"):
        text += f" {result['status']}"
    return text


def costs(suite: Suite, native: dict, translated: dict) -> dict:
    """Over the tests of a file that pass both natively and translated (those applicable to the
    translator): their number, and per side the graph breaks, the translated functions' first
    calls (ms, summed: translation and program build included) and their later calls' medians
    (ms, summed)."""
    both = [(n, translated["tests"][test]) for test, n in native["tests"].items()
            if n["outcome"] in PASSING and translated["tests"].get(test, {}).get("outcome") in PASSING
            and not not_applicable(suite, "translator", test, translated["tests"][test])]
    result: dict = {"tests": len(both)}
    for side, index in (("native", 0), ("translator", 1)):
        entries = [pair[index] for pair in both]
        result[side] = {
            "breaks": sum(e.get("breaks", 0) for e in entries),
            "first_ms": round(sum(e.get("first_ms", 0) for e in entries), 1),
            "hot_ms": round(sum(e.get("hot_ms") or 0 for e in entries), 2),
        }
    return result


def print_costs(label: str, files: list[str], file_costs: dict[str, dict]) -> None:
    width = max([len("file")] + [len(f[:-3]) for f in files])
    log(f"\n== CPython {label}: over the tests passing natively and translated, per file: graph breaks, "
        "first calls and hot calls (ms) of the translated functions, Paddle's SOT / framehook's ==")
    log(f"{'file':<{width}}  tests  {'breaks':>11}  {'first calls (ms)':>21}  {'hot calls (ms)':>19}")
    totals = {"tests": 0, "native": [0, 0.0, 0.0], "translator": [0, 0.0, 0.0]}
    for f in files:
        c = file_costs.get(f)
        if not c or not c["tests"]:
            continue
        n, t = c["native"], c["translator"]
        totals["tests"] += c["tests"]
        for side in ("native", "translator"):
            for i, key in enumerate(("breaks", "first_ms", "hot_ms")):
                totals[side][i] += c[side][key]
        log(f"{f[:-3]:<{width}}  {c['tests']:>5}  {n['breaks']:>5}/{t['breaks']:<5}  "
            f"{n['first_ms']:>10.1f}/{t['first_ms']:<10.1f}  {n['hot_ms']:>9.2f}/{t['hot_ms']:<9.2f}")
    n, t = totals["native"], totals["translator"]
    log(f"{'total':<{width}}  {totals['tests']:>5}  {n[0]:>5}/{t[0]:<5}  {n[1]:>10.1f}/{t[1]:<10.1f}  "
        f"{n[2]:>9.2f}/{t[2]:<9.2f}")


def markdown(report: dict) -> str:
    """Per interpreter, a table of the files: tests run (deselected apart), passed in each mode,
    skipped, and over the tests passing natively and translated, the graph breaks and the
    translated functions' first and hot calls of both translators; then the differing tests."""
    lines = []
    for label, runs in report["runs"].items():
        modes = [m for m in MODES if m in runs]
        costs = report["summary"][label].get("costs", {})
        lines += [f"#### CPython {label}", "",
                  "| file | tests | " + " | ".join(f"pass, {m}" for m in modes) + " | skipped | "
                  "breaks, Paddle / framehook | first calls ms, Paddle / framehook | "
                  "hot calls ms, Paddle / framehook |",
                  "| --- |" + " ---: |" * (len(modes) + 5)]
        totals = [0] * (len(modes) + 2)
        sums = {"native": [0, 0.0, 0.0], "translator": [0, 0.0, 0.0]}
        for f in sorted(runs[modes[0]]):
            first = runs[modes[0]][f]
            tests = len(first["tests"])
            skipped = sum(1 for t in first["tests"].values() if t["outcome"] == "skip")
            passed = [count(runs[m][f])[0] if f in runs[m] else 0 for m in modes]
            status = {r["status"] for m in modes if (r := runs[m].get(f)) and r["status"] in ("timeout", "crash")}
            row = [tests, *passed, skipped]
            totals = [a + b for a, b in zip(totals, row)]
            c = costs.get(f, {"tests": 0})
            if c["tests"]:
                for side in sums:
                    sums[side] = [sums[side][0] + c[side]["breaks"], sums[side][1] + c[side]["first_ms"],
                                  sums[side][2] + c[side]["hot_ms"]]
                extra = (f"{c['native']['breaks']} / {c['translator']['breaks']} | "
                         f"{c['native']['first_ms']:.0f} / {c['translator']['first_ms']:.0f} | "
                         f"{c['native']['hot_ms']:.1f} / {c['translator']['hot_ms']:.1f}")
            else:
                extra = "- | - | -"
            name = f[:-3] + (f" ({', '.join(sorted(status))})" if status else "")
            lines.append(f"| {name} | " + " | ".join(map(str, row)) + f" | {extra} |")
        n, t = sums["native"], sums["translator"]
        lines.append("| **total** | " + " | ".join(f"**{v}**" for v in totals)
                     + f" | **{n[0]} / {t[0]}** | **{n[1]:.0f} / {t[1]:.0f}** | **{n[2]:.1f} / {t[2]:.1f}** |")
        lines.append("")
        for mode, comparison in report["differing"][label].items():
            diffs = [d for ds in comparison.values() for d in ds]
            if not diffs:
                lines.append(f"- {mode}: every test passing natively passes"
                             + (", with no more graph breaks" if mode == "translator" else "") + ".")
                continue
            fewer_passing = [d for d in diffs if "native_breaks" not in d]
            more_breaks = [d for d in diffs if "native_breaks" in d]
            lines.append(f"- {mode}: {len(fewer_passing)} test(s) passing natively do not pass"
                         + (f"; {len(more_breaks)} pass with more graph breaks" if mode == "translator" else "")
                         + ".")
            for d in fewer_passing:
                lines.append(f"  - `{d['test']}`: {d[mode]}: {d.get(f'{mode}_message') or ''}")
        lines.append("")
    return "\n".join(lines)


def print_table(suite: Suite, label: str, files: list[str], runs: dict, comparisons: dict,
                show_failures: bool) -> None:
    modes = [m for m in MODES if m in runs]
    width = max([len("file")] + [len(f[:-3]) for f in files])
    header = f"{'file':<{width}}  " + "  ".join(f"{m:<18}" for m in modes)
    log(f"\n== CPython {label}: tests passed / tests run (skipped tests apart), per file ==")
    log(header + ("  differing" if comparisons else ""))
    log("-" * len(header))
    totals = {m: [0, 0, 0] for m in modes}
    for f in files:
        row = f"{f[:-3]:<{width}}  "
        for m in modes:
            r = runs[m].get(f)
            row += f"{cell(r):<18}  "
            if r is not None:
                p, t = count(r)
                totals[m][0] += p
                totals[m][1] += t
                totals[m][2] += sum(1 for x in r["tests"].values() if x["outcome"] == "skip")
        row += ", ".join(f"{mode}: {d['test'].split('.', 1)[-1]}" for mode, comparison in comparisons.items()
                         for d in comparison.get(f, []))
        log(row.rstrip())
    log("-" * len(header))
    log(
        (f"{'total':<{width}}  " + "  ".join(f"{f'{p}/{t - k} +{k} skip':<18}" for p, t, k in totals.values())).rstrip()
    )
    for mode, comparison in comparisons.items():
        diffs = [d for f in files for d in comparison.get(f, [])]
        if not diffs:
            log(f"\nnative and {mode} pass the same tests on {label}"
                + (", with no more graph breaks" if mode == "translator" else "") + ".")
            continue
        log(f"\n{len(diffs)} test(s) differ between native and {mode} on {label}:")
        for d in diffs:
            breaks = (f" (graph breaks: native {d['native_breaks']}, translator {d['translator_breaks']})"
                      if "native_breaks" in d else "")
            log(f"  {d['test']}: native {d['native']}, {mode} {d[mode]}{breaks}")
            for reason in d.get("translator_break_reasons", []):
                log(f"      break: {reason}")
            for side in ("native", mode):
                if d[side] not in PASSING and d.get(f"{side}_message"):
                    log(f"      {side}: {d[f'{side}_message']}")
    deselected: dict[str, int] = {}
    for r in runs[modes[0]].values():
        for why, n in r.get("deselected", {}).items():
            deselected[why] = deselected.get(why, 0) + n
    for why, n in sorted(deselected.items()):
        log(f"\n{n} test(s) not run on {label}: {why}")
    if "translator" in runs:
        skipped = sorted({(test, why) for r in runs["translator"].values() for test, t in r["tests"].items()
                          if (why := not_applicable(suite, "translator", test, t))})
        if skipped:
            log(f"\n{len(skipped)} test(s) not applicable to the translator on {label} (not compared):")
            for test, why in skipped:
                log(f"  {test}: {why}")
    if show_failures:
        for m in modes:
            failing = [
                (test, t)
                for f in files
                if runs[m].get(f)
                for test, t in runs[m][f]["tests"].items()
                if pass_class(t["outcome"]) == "fail"
            ]
            log(f"\n{len(failing)} test(s) not passing in {m} mode on {label}:")
            for test, t in failing:
                log(f"  {test}: {t['outcome']}: {t.get('message', '')}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--suite", choices=sorted(SUITES), default=SOT.name,
        help="Paddle's test/sot (default) or test/dygraph_to_static",
    )
    parser.add_argument(
        "--tests",
        type=Path,
        help=f"directory of the suite's files (default {SOT.tests}, {DYGRAPH_TO_STATIC.tests})",
    )
    parser.add_argument(
        "--python",
        action="append",
        default=[],
        metavar="PY",
        help="interpreter with paddlepaddle (and framehook) installed; repeatable",
    )
    parser.add_argument(
        "--mode", action="append", choices=MODES, help="native, framehook or translator; repeatable (default all three)"
    )
    parser.add_argument(
        "-k",
        "--only",
        action="append",
        default=[],
        metavar="SUBSTRING",
        help="run only files whose name contains this; repeatable",
    )
    parser.add_argument(
        "--exclude",
        action="append",
        default=[],
        metavar="SUBSTRING",
        help="skip files whose name contains this; repeatable",
    )
    parser.add_argument("--jobs", type=int, default=2, help="processes at once (default 2)")
    parser.add_argument("--timeout", type=float, default=300, help="seconds per file before it is killed (default 300)")
    parser.add_argument(
        "--report", type=Path, help=f"JSON report path (default {CACHE}/paddle-<suite>-report.json)"
    )
    parser.add_argument(
        "--logs", type=Path, help=f"directory for per-file logs (default {CACHE}/paddle-<suite>-logs)"
    )
    parser.add_argument(
        "--env", action="append", default=[], metavar="NAME=VALUE", help="extra environment for the test processes"
    )
    parser.add_argument(
        "--show-failures", action="store_true", help="also list every test that does not pass, per mode"
    )
    parser.add_argument(
        "--require-tests", action="store_true", help="exit 2 instead of 0 when the test directory is missing or empty"
    )
    parser.add_argument("--markdown", type=Path, help="also write the per-file tables as markdown to this file")
    parser.add_argument(
        "--add-to", type=Path, metavar="REPORT",
        help="a report of an earlier run whose results this run has none of (other files, other modes) join "
        "this run's",
    )
    args = parser.parse_args(argv)
    suite = SUITES[args.suite]
    modes = [m for m in MODES if m in (args.mode or MODES)]
    extra_env = dict(item.split("=", 1) for item in args.env)
    args.report = args.report or CACHE / f"paddle-{suite.name}-report.json"
    args.logs = args.logs or CACHE / f"paddle-{suite.name}-logs"

    tests_dir = (args.tests or suite.tests).expanduser()
    test_files = (
        sorted(p.name for p in tests_dir.glob("test_*.py") if p.name != suite.harness)
        if tests_dir.is_dir()
        else []
    )
    if not test_files or not (tests_dir / suite.harness).is_file():
        log(
            f"paddle_sot_suite: SKIPPED: no Paddle test/{suite.name} files in {tests_dir} "
            "(they are not part of this repository; docs/reliability.md, section \"Paddle's test/sot suite\", "
            "says how they were obtained)"
        )
        return 2 if args.require_tests else 0
    if not args.python:
        parser.error("give at least one --python (an interpreter with paddlepaddle installed)")
    manifest = load_manifest(tests_dir)
    entries = check_manifest(tests_dir, manifest)
    for name, target in suite.links.items():
        link = tests_dir.parent / name
        if not link.exists() and (tests_dir / target).exists():
            link.symlink_to(tests_dir / target)
    # Files the manifest says not to run (a test needing the network), each with the reason.
    not_run = {f: e.get("why_not_run", "") for f, e in entries.items() if e.get("run") is False}
    for f, why in sorted(not_run.items()):
        log(f"paddle_sot_suite: {f} not run: {why}")
    files = [
        f
        for f in test_files
        if (not args.only or any(s in f for s in args.only)) and not any(s in f for s in args.exclude)
        and f not in not_run
    ]
    if not files:
        log(f"paddle_sot_suite: no test file in {tests_dir} matches -k {args.only} / --exclude {args.exclude}")
        return 2
    # Longest first (by the manifest's native times, where it has them), so that two workers
    # finish together.
    files_by_cost = sorted(files, key=lambda f: (-entries.get(f, {}).get("native_310", {}).get("seconds", 0),
                                                 0 if "resnet" in f else 1, f))

    interpreters = []
    unavailable = []
    labels: set[str] = set()
    for python in args.python:
        info = probe(python)
        if "error" in info:
            log(f"paddle_sot_suite: {python}: cannot run: {info['error']}")
            unavailable.append({"python": python, "mode": "all", "reason": str(info["error"])})
            continue
        label = info["label"]
        while label in labels:
            label += "'"
        labels.add(label)
        if not info.get("paddle"):
            log(f"paddle_sot_suite: {python} ({label}): paddlepaddle is not installed; skipped")
            unavailable.append({"python": python, "mode": "all", "reason": "paddlepaddle not installed"})
            continue
        usable = [m for m in modes if m != "framehook" or info.get("framehook")]
        if "framehook" in modes and "framehook" not in usable:
            log(f"paddle_sot_suite: {python} ({label}): framehook.sot.paddle is not importable; framehook mode skipped")
            unavailable.append({"python": python, "mode": "framehook", "reason": "framehook.sot.paddle not importable"})
        interpreters.append((python, label, info, usable))

    jobs = [
        (python, label, mode, f) for f in files_by_cost for python, label, _, usable in interpreters for mode in usable
    ]
    log(
        f"paddle_sot_suite: {len(files)} file(s) from {tests_dir}, modes {', '.join(modes)}, "
        f"{len(interpreters)} interpreter(s), {len(jobs)} run(s), {args.jobs} at a time, timeout {args.timeout:g}s"
    )
    results: dict[str, dict[str, dict[str, dict]]] = {
        label: {m: {} for m in usable} for _, label, _, usable in interpreters
    }
    lock = threading.Lock()
    done = [0]

    def work(job):
        python, label, mode, f = job
        log_path = args.logs / label / mode / (f[:-3] + ".log")
        result = run_file(suite, python, mode, tests_dir, f, args.timeout, log_path, extra_env)
        with lock:
            results[label][mode][f] = result
            done[0] += 1
            log(
                f"[{done[0]}/{len(jobs)}] {label} {mode:<9} {f[:-3]}: {cell(result)} passed ({result['duration']:.1f}s)"
            )

    started = time.time()
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for future in concurrent.futures.as_completed([pool.submit(work, job) for job in jobs]):
            future.result()

    if args.add_to:
        # The earlier run's results where this one has none: its other files, its other modes.
        earlier = json.loads(args.add_to.read_text())["runs"]
        for _python, label, _info, usable in interpreters:
            for mode in MODES:
                for f, result in earlier.get(label, {}).get(mode, {}).items():
                    results[label].setdefault(mode, {}).setdefault(f, result)
                if mode in results[label] and mode not in usable:
                    usable.append(mode)
            usable.sort(key=MODES.index)
        files = sorted(set(files) | {f for runs in results.values() for by_file in runs.values() for f in by_file})

    exit_code = 0
    comparisons: dict[str, dict[str, list]] = {}
    summary: dict[str, dict] = {}
    for _python, label, _info, usable in interpreters:
        runs = results[label]
        comparison_by_mode: dict[str, dict[str, list]] = {}
        for mode in usable:
            if mode == "native" or "native" not in usable:
                continue
            comparison: dict[str, list] = {}
            for f in files:
                diff = compare(suite, runs["native"][f], runs[mode][f], mode)
                if diff:
                    comparison[f] = diff
            if comparison:
                exit_code = max(exit_code, 1)
            comparison_by_mode[mode] = comparison
        for mode in usable:
            not_installed = [f for f, r in runs[mode].items() if r.get("framehook_installed") is False]
            if not_installed:
                log(
                    f"paddle_sot_suite: warning: framehook's {INSTALLED[mode]!r} translator was not installed at "
                    f"the end of {', '.join(not_installed)} on {label}"
                )
        comparisons[label] = comparison_by_mode
        summary[label] = {
            m: {
                "passed": sum(count(r)[0] for r in runs[m].values()),
                "skipped": sum(1 for r in runs[m].values() for t in r["tests"].values() if t["outcome"] == "skip"),
                "tests": sum(count(r)[1] for r in runs[m].values()),
            }
            for m in usable
        }
        summary[label]["differing"] = {mode: sum(len(d) for d in comparison.values())
                                       for mode, comparison in comparison_by_mode.items()}
        print_table(suite, label, files, runs, comparison_by_mode, args.show_failures)
        if "native" in usable and "translator" in usable:
            file_costs = {f: costs(suite, runs["native"][f], runs["translator"][f]) for f in files}
            summary[label]["costs"] = file_costs
            print_costs(label, files, file_costs)
    if unavailable:
        exit_code = 2 if exit_code == 0 else exit_code

    report = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "duration": round(time.time() - started, 1),
        "tests_dir": str(tests_dir),
        "suite": suite.name,
        "environment": {**suite.env, **COLLECT_ENV, **extra_env},
        "timeout": args.timeout,
        "modes": modes,
        "manifest": {
            f: {"path": e.get("path"), "commit": e.get("commit")}
            for f, e in entries.items()
            if f in files or not f.startswith("test_")
        },
        "interpreters": {
            label: {"python": python, **info, "modes": usable} for python, label, info, usable in interpreters
        },
        "unavailable": unavailable,
        "not_run": not_run,
        "summary": summary,
        "differing": comparisons,
        "runs": results,
    }
    if args.markdown:
        args.markdown.write_text(markdown(report))
    args.report.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.report.with_suffix(args.report.suffix + ".tmp")
    tmp.write_text(json.dumps(report, indent=1) + "\n")
    os.replace(tmp, args.report)
    log(f"\nreport: {args.report}   logs: {args.logs}")
    return exit_code


if __name__ == "__main__":
    sys.exit(main())
