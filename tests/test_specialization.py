"""CPython 3.15+ keeps specializing under framehook's eval function, and hooks still see every frame.

3.15 lets an eval function ask the interpreter to keep making its frame-pushing
specializations (``CALL_PY_EXACT_ARGS``, ``FOR_ITER_GEN``, ...), which the default loop
then deoptimises while any eval function is set; each ``_PyInterpreterState_SetEvalFrameFunc``
drops the request. framehook asks after installing its function, and puts back what the
function it replaced had when it goes.
"""

import dis
import textwrap

import pytest

import framehook
from framehook import _native

pytestmark = pytest.mark.skipif(
    _native._eval_specializing() is None,
    reason="CPython before 3.15 has no 'allow specialization' setting for eval functions",
)

CALLS = 2000


def fresh_caller():
    """A caller and callee whose code objects have never run (so never specialized)."""
    namespace = {}
    exec(textwrap.dedent("""
        def callee(x):
            return x + 1

        def caller(n):
            total = 0
            for i in range(n):
                total += callee(i)
            return total
    """), namespace)
    return namespace["caller"], namespace["callee"]


def specialized_calls(function):
    return [i.opname for i in dis.get_instructions(function, adaptive=True) if i.opname.startswith("CALL_PY")]


def run_counting_callee_frames(specializing):
    caller, callee = fresh_caller()
    seen = []

    def hook(frame):
        if frame.f_code is callee.__code__:
            seen.append(frame.f_locals["x"])

    handle = framehook.add_frame_hook(hook)
    try:
        assert _native._eval_specializing() is True
        if not specializing:
            assert _native._set_eval_specializing(False)
            assert _native._eval_specializing() is False
        assert caller(CALLS) == sum(range(1, CALLS + 1))
    finally:
        framehook.remove_frame_hook(handle)
    return seen, specialized_calls(caller)


def test_calls_specialize_under_framehook_and_every_frame_still_reaches_the_hooks():
    seen, specialized = run_counting_callee_frames(specializing=True)
    assert seen == list(range(CALLS))
    assert specialized, "the loop's call to a Python function was not specialized"


def test_without_the_request_calls_stay_generic():
    seen, specialized = run_counting_callee_frames(specializing=False)
    assert seen == list(range(CALLS))
    assert specialized == []


def test_the_setting_is_restored_with_the_function_framehook_replaced():
    for foreign_specializing in (False, True):
        assert _native._foreign_install(foreign_specializing)
        try:
            assert _native._eval_specializing() is foreign_specializing
            handle = framehook.add_frame_hook(lambda frame: None)
            # Over another evaluator, the loop specializes only if that one asked for it.
            assert _native._eval_functions()[0] == _native._eval_functions()[1]
            assert _native._eval_specializing() is foreign_specializing
            framehook.remove_frame_hook(handle)
            assert _native._eval_functions()[0] == _native._foreign_address()
            assert _native._eval_specializing() is foreign_specializing
        finally:
            assert _native._foreign_uninstall()
    # CPython's default evaluator always specializes.
    assert _native._eval_specializing() is True
    handle = framehook.add_frame_hook(lambda frame: None)
    try:
        assert _native._eval_specializing() is True
    finally:
        framehook.remove_frame_hook(handle)
    assert _native._eval_specializing() is True


def test_framehook_asks_again_when_it_next_installs():
    handle = framehook.add_frame_hook(lambda frame: None)
    try:
        assert _native._foreign_install(False)
        assert _native._eval_specializing() is False
        # A tool unaware of the setting puts framehook's function back without the request:
        # framehook cannot tell, and asks again when its hook set next empties and refills.
        assert _native._foreign_uninstall()
        assert _native._is_installed()
        assert _native._eval_specializing() is False
    finally:
        framehook.remove_frame_hook(handle)
    assert not _native._is_installed() and _native._eval_specializing() is True
    handle = framehook.add_frame_hook(lambda frame: None)
    try:
        assert _native._eval_specializing() is True
    finally:
        framehook.remove_frame_hook(handle)
