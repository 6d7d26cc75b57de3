"""The torture runner's identity transform, and the runner on one small CPython test module.

The full torture (``python -m framehook_dev.torture`` over ~70 modules) has its own command;
this is its fast part."""

import dis
import importlib.util
import json
import subprocess
import sys
import types

import pytest

import framehook
from framehook_dev import torture_hooks


def outer(a, *args, **kw):
    b = a + 1

    def middle(c):
        def inner():
            return a, b, c, args, sorted(kw)
        return inner()

    return [middle(i) for i in range(2)]


def slot_names(code):
    return [(i.opname, i.argval) for i in dis.get_instructions(code)
            if i.opcode in set(dis.haslocal) | set(dis.hasfree)]


def test_extra_local_keeps_every_instruction_on_its_variable():
    for code in torture_hooks._walk(outer.__code__):
        new = torture_hooks.with_extra_local(code)
        assert new is not code
        assert new.co_varnames == code.co_varnames + (torture_hooks.EXTRA_LOCAL,)
        assert new.co_cellvars == code.co_cellvars and new.co_freevars == code.co_freevars
        assert len(new.co_code) == len(code.co_code)
        assert slot_names(new) == slot_names(code)
        if sys.version_info >= (3, 11) and (code.co_cellvars or code.co_freevars):
            assert new.co_code != code.co_code  # cell slots moved up


def test_extra_local_code_runs_the_same():
    new = types.FunctionType(torture_hooks.with_extra_local(outer.__code__), outer.__globals__, "outer")
    assert new(1, 2, x=3) == outer(1, 2, x=3)


@pytest.mark.skipif(sys.version_info < (3, 11), reason="cells are addressed by slot from 3.11")
def test_declines_when_an_argument_would_need_another_extended_arg():
    source = torture_hooks._many_locals_source(254)  # the cell sits in slot 255
    namespace = {}
    exec(source, namespace)
    with pytest.raises(torture_hooks.Declined) as why:
        torture_hooks.with_extra_local(namespace["many_254"].__code__)
    assert why.value.reason == "extended-arg"
    exec(torture_hooks._many_locals_source(300), namespace)  # slots past 255 already carry a prefix
    assert torture_hooks.with_extra_local(namespace["many_300"].__code__) is not None


def test_identity_hooks_run_programs_unchanged():
    for mode in ("identity", "chain"):
        handles = torture_hooks.install(mode)
        try:
            assert outer(1, 2, x=3) == [(1, 2, 0, (2,), ["x"]), (1, 2, 1, (2,), ["x"])]
        finally:
            for handle in handles:
                framehook.remove_frame_hook(handle)
    assert torture_hooks.COUNTERS.hooks["identity"]["transformed"] > 0


def test_selfcheck():
    done = subprocess.run(
        [sys.executable, "-m", "framehook_dev.torture_hooks", "selfcheck", "--corpus", "15", "--hooks"],
        capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "selfcheck: ok" in done.stdout


@pytest.mark.skipif(importlib.util.find_spec("test.test_sys_setprofile") is None,
                    reason="this interpreter has no Lib/test (CPython's test suite)")
def test_runner_on_two_modules(tmp_path):
    """test_scope exercises cells and free variables; test_sys_setprofile fails if a
    profiler sees the hooks' own frames."""
    report = tmp_path / "report.json"
    done = subprocess.run(
        [sys.executable, "-m", "framehook_dev.torture", "--python", sys.executable,
         "--modules", "test_scope,test_sys_setprofile", "--report", str(report), "--logs", str(tmp_path / "logs")],
        capture_output=True, text=True, timeout=900,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    data = json.loads(report.read_text())
    (modules,) = [py["modules"] for py in data["pythons"].values()]
    for module in ("test_scope", "test_sys_setprofile"):
        verdicts = {mode: v["verdict"] for mode, v in modules[module]["verdicts"].items()}
        assert verdicts == {"identity": "same", "chain": "same"}, module
    entry = modules["test_scope"]
    runs = entry["runs"]
    assert runs["none"][0]["tests"] and runs["none"][0]["hooks"] == {}
    assert runs["identity"][0]["hooks"]["identity"]["transformed"] > 0
    assert set(runs["chain"][0]["hooks"]) == {"identity-1", "decline", "identity-2"}


@pytest.mark.skipif(importlib.util.find_spec("test.test_augassign") is None,
                    reason="this interpreter has no Lib/test (CPython's test suite)")
def test_sot_mode_translates_test_methods_with_the_same_outcomes(tmp_path):
    """The sot mode on a module that passes as without hooks: each test method runs
    translated (the report counts what the translator did), with the same outcomes."""
    report = tmp_path / "report.json"
    done = subprocess.run(
        [sys.executable, "-m", "framehook_dev.torture", "--python", sys.executable, "--modes", "sot",
         "--modules", "test_augassign", "--report", str(report), "--logs", str(tmp_path / "logs")],
        capture_output=True, text=True, timeout=900,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (modules,) = [py["modules"] for py in json.loads(report.read_text())["pythons"].values()]
    for module in ("test_augassign",):
        assert modules[module]["verdicts"]["sot"]["verdict"] == "same", module
        coverage = modules[module]["sot_coverage"]
        assert coverage["run"] > 0 and coverage["translated"] >= 0.9 * coverage["run"], (module, coverage)
        assert coverage["clean"] > 0, (module, coverage)
    assert "SOT coverage" in done.stdout
