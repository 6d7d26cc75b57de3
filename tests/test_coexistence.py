"""coverage.py and pdb on functions that a frame hook replaced.

The sample module (coexistence_sample.py) runs without hooks and under an identity hook
that replaces every function of the module by a fresh equivalent code object with one
more local (framehook_dev.torture_hooks's transform), so each of its frames takes framehook's
replacement path. A coverage report or a debugging session must read the same; the one
difference by nature, frame.f_code being the replacement, is pinned down by its own test.

Run as a script, this file is the child process that measures the sample under coverage
(``COVERAGE_CORE=CORE python test_coexistence.py lines|branches plain|hooked``), so that each
measurement has a fresh interpreter and imports the sample while measured."""

import importlib
import importlib.util
import inspect
import io
import json
import os
import pdb
import re
import subprocess
import sys
from pathlib import Path

import coverage
import pytest

import framehook
from conftest import HOOKS_GENERATORS
from framehook_dev import torture_hooks

SAMPLE = Path(__file__).resolve().with_name("coexistence_sample.py")
# coverage's core names (COVERAGE_CORE) and the tracer class each one runs.
CORE_TRACERS = {"sysmon": "SysMonitor", "ctrace": "CTracer"}


class SampleIdentityHook:
    """Replaces each code object of the sample module by its identity transform, recording what it replaced."""

    def __init__(self):
        self.identity = torture_hooks.IdentityHook("coexistence")
        self.replaced = set()

    def __call__(self, frame):
        code = frame.f_code
        if os.path.basename(code.co_filename) != SAMPLE.name:
            return None
        replacement = self.identity.transform(code)
        if replacement is not None:
            self.replaced.add((code.co_name, code.co_firstlineno))
        return replacement

    def install(self):
        return framehook.add_frame_hook(self, name="coexistence-identity", cache=True)


def expected_replacements():
    """Every code object of the sample that runs, as (name, first line); generator frames are hooked from 3.11."""
    module = compile(SAMPLE.read_text(), str(SAMPLE), "exec")
    return {(code.co_name, code.co_firstlineno) for code in torture_hooks._walk(module)
            if code.co_name != "unused"
            and (HOOKS_GENERATORS or not code.co_flags & (inspect.CO_GENERATOR | inspect.CO_COROUTINE))}


def never_run_lines():
    return {number for number, line in enumerate(SAMPLE.read_text().splitlines(), 1) if line.endswith("# never runs")}


# ------------------------------------------------------------------------- coverage.py


def measure_in_child(core, branch, hooked):
    """Runs the sample under coverage in a fresh interpreter; returns what coverage measured."""
    done = subprocess.run(
        [sys.executable, __file__, "branches" if branch else "lines", "hooked" if hooked else "plain"],
        capture_output=True, text=True, timeout=120, env={**os.environ, "COVERAGE_CORE": core},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout.splitlines()[-1])
    report["stderr"] = done.stderr
    return report


def child_measure(branch, hooked):
    cov = coverage.Coverage(data_file=None, branch=branch, include=[str(SAMPLE)], config_file=False)
    hook = SampleIdentityHook()
    handle = hook.install() if hooked else None
    cov.start()
    sample = importlib.import_module(SAMPLE.stem)
    result = sample.run()
    cov.stop()
    if handle is not None:
        framehook.remove_frame_hook(handle)
    data = cov.get_data()
    filename = sample.__file__
    return {
        "core": dict(cov.sys_info())["core"],
        "result": repr(result),
        "lines": sorted(data.lines(filename) or ()),
        "missing": sorted(cov.analysis2(filename)[3]),
        "arcs": sorted(data.arcs(filename) or ()) if branch else None,
        "replaced": sorted(hook.replaced),
        "declined": dict(hook.identity.stats["declined"]),
    }


def skip_without_core(core):
    if core == "sysmon" and not hasattr(sys, "monitoring"):
        pytest.skip("coverage's sysmon core needs sys.monitoring (3.12+)")
    if core == "ctrace" and importlib.util.find_spec("coverage.tracer") is None:
        pytest.skip(f"coverage {coverage.__version__} has no C tracer for this interpreter (no binary wheel)")


def measure_plain_and_hooked(core):
    """Both measurements, with branches unless the core cannot measure them here."""
    plain = measure_in_child(core, branch=True, hooked=False)
    if re.search(r"Can't use core=sysmon: sys.monitoring can't measure branches", plain["stderr"]):
        plain = measure_in_child(core, branch=False, hooked=False)  # before 3.14
    return plain, measure_in_child(core, branch=plain["arcs"] is not None, hooked=True)


@pytest.mark.parametrize("core", sorted(CORE_TRACERS))
def test_coverage_reports_the_same_under_identity_hooks(core):
    skip_without_core(core)
    plain, hooked = measure_plain_and_hooked(core)
    assert (plain["core"], hooked["core"]) == (CORE_TRACERS[core],) * 2, plain["stderr"] + hooked["stderr"]

    assert sorted(map(tuple, hooked["replaced"])) == sorted(expected_replacements()) and hooked["declined"] == {}
    assert plain["replaced"] == []
    assert hooked["result"] == plain["result"]
    assert plain["missing"] == sorted(never_run_lines())
    assert hooked["lines"] == plain["lines"]
    assert hooked["missing"] == plain["missing"]
    assert hooked["arcs"] == plain["arcs"]
    if plain["arcs"] is not None:
        assert plain["arcs"] and not {end for _, end in plain["arcs"]} & never_run_lines()


# ------------------------------------------------------------------------------- pdb

def line_of(text):
    """The number of the sample's one line that reads `text` (less its indentation)."""
    (number,) = [n for n, line in enumerate(SAMPLE.read_text().splitlines(), 1) if line.strip() == text]
    return number


CALL = line_of("result = accumulate(doubled)")  # in scale
AFTER_CALL = line_of("label = classify(result)")
ACCUMULATE, FIRST, LOOP = line_of("def accumulate(values):"), line_of("total = 0"), line_of("for value in values:")
AFTER_LOOP, RETURN = line_of("while total > 100:"), line_of("return total")

PROMPT = "(pdb-prompt)\n"
# Commands, each with text its answer must contain.
PDB_SESSION = [
    (f"break {SAMPLE}:{CALL}", f"at {SAMPLE}:{CALL}"),
    ("continue", f"> {SAMPLE}({CALL})scale()\n-> result = accumulate(doubled)"),
    ("p doubled", "[7, 21]"),
    ("step", f"--Call--\n> {SAMPLE}({ACCUMULATE})accumulate()\n-> def accumulate(values):"),
    ("step", f"> {SAMPLE}({FIRST})accumulate()\n-> total = 0"),
    ("args", "values = [7, 21]"),
    ("where", f"  {SAMPLE}({CALL})scale()\n-> result = accumulate(doubled)\n"
              f"> {SAMPLE}({FIRST})accumulate()\n-> total = 0"),
    ("up", f"> {SAMPLE}({CALL})scale()"),
    ("p doubled, factor", "([7, 21], 7)"),
    ("down", f"> {SAMPLE}({FIRST})accumulate()"),
    (f"until {AFTER_LOOP}", f"> {SAMPLE}({AFTER_LOOP})accumulate()\n-> while total > 100:"),
    ("p value, total", "(21, 28)"),
    ("!total = 1000", ""),
    ("p sorted(locals().items())", "[('total', 1000), ('value', 21), ('values', [7, 21])]"),
    ("return", f"--Return--\n> {SAMPLE}({RETURN})accumulate()->62\n-> return total"),
    ("step", f"> {SAMPLE}({AFTER_CALL})scale()\n-> label = classify(result)"),
    ("p result", "62"),
    ("p sorted(locals())", "['doubled', 'factor', 'result', 'values']"),
    ("continue", ""),
]


def pdb_backends():
    """The ways pdb can trace: settrace everywhere, sys.monitoring where pdb offers it (3.14+)."""
    if "backend" in inspect.signature(pdb.Pdb).parameters:
        return ["settrace", "monitoring"]
    return ["settrace"]


def debug_scale(backend, hooked):
    """Runs sample.scale([1, 3], 7) under pdb driven by PDB_SESSION; returns (result, answers, hook)."""
    sample = importlib.import_module(SAMPLE.stem)
    commands = io.StringIO("".join(command + "\n" for command, _ in PDB_SESSION))
    out = io.StringIO()
    options = {} if backend == "settrace" else {"backend": backend}
    debugger = pdb.Pdb(stdin=commands, stdout=out, nosigint=True, readrc=False, **options)
    debugger.prompt = PROMPT
    hook = SampleIdentityHook()
    handle = hook.install() if hooked else None
    try:
        result = debugger.runcall(sample.scale, [1, 3], 7)
    finally:
        if handle is not None:
            framehook.remove_frame_hook(handle)
        debugger.clear_all_breaks()
    # Breakpoint numbers count up across sessions. The first part is where runcall stopped.
    answers = re.sub(r"Breakpoint \d+", "Breakpoint N", out.getvalue()).split(PROMPT)[1:]
    return result, answers, hook


@pytest.mark.parametrize("backend", pdb_backends())
def test_pdb_steps_through_replaced_functions(backend):
    plain_result, plain, _ = debug_scale(backend, hooked=False)
    hooked_result, hooked, hook = debug_scale(backend, hooked=True)
    # And scale's list comprehension where it has a code object of its own (before 3.12).
    assert {"scale", "accumulate", "classify"} <= {name for name, _ in hook.replaced}
    assert len(hooked) == len(PDB_SESSION)
    for (command, expected), answer in zip(PDB_SESSION, hooked):
        assert expected in answer, f"pdb's answer to {command!r}"
    assert hooked == plain
    # `!total = 1000` reached the replaced frame: 1000 halves down to 62.
    assert hooked_result == plain_result == ("positive", 62)


def trace_accumulate(hooked):
    """(event, line, code) of every trace event in sample.accumulate([7, 21])."""
    sample = importlib.import_module(SAMPLE.stem)
    events = []

    def tracer(frame, event, arg):
        if frame.f_code.co_name == "accumulate":
            events.append((event, frame.f_lineno, frame.f_code))
        return tracer

    handle = SampleIdentityHook().install() if hooked else None
    sys.settrace(tracer)
    try:
        sample.accumulate([7, 21])
    finally:
        sys.settrace(None)
        if handle is not None:
            framehook.remove_frame_hook(handle)
    return events


def test_tracers_see_the_replacement_at_the_original_lines():
    """What pdb and coverage rely on, and the one difference: frame.f_code is the replacement."""
    plain, hooked = trace_accumulate(hooked=False), trace_accumulate(hooked=True)
    assert [event[:2] for event in hooked] == [event[:2] for event in plain]
    assert [event[:2] for event in plain][:3] == [("call", ACCUMULATE), ("line", FIRST), ("line", LOOP)]
    original = importlib.import_module(SAMPLE.stem).accumulate.__code__
    assert {event[2] for event in plain} == {original}
    (replacement,) = {event[2] for event in hooked}
    assert replacement is not original
    assert replacement.co_varnames == original.co_varnames + (torture_hooks.EXTRA_LOCAL,)


if __name__ == "__main__":
    measured, mode = sys.argv[1:]
    print(json.dumps(child_measure(measured == "branches", mode == "hooked")))
