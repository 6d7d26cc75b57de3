"""Uncached native hooks are called by the eval function itself (no Rust in
between) while every enabled hook is one: the same behaviour as through the
general path, for declining, replacing, failing, composing and disabled hooks."""

import logging
import sys
import types

import native_hook_example as example
import pytest

import framehook
from framehook import _native

RAISE, LOG = 0, 1


# Hook calls are read with builtins only: a Python helper's own frame would be counted.


def source(x):
    return x + 1


def target(x):
    return x * 10


def test_uncached_native_hook_is_asked_about_every_frame():
    _native._capi_add(b"decliner")
    before = _native._capi_counts()[0]
    for i in range(10):
        assert source(i) == i + 1
    assert _native._capi_counts()[0] - before >= 10


def test_uncached_native_replacement_runs_every_time_it_is_given():
    handle = example.redirect(source, target, cache=False)
    before = example.hook_calls()
    assert [source(i) for i in range(5)] == [0, 10, 20, 30, 40]
    assert example.hook_calls() - before >= 5
    framehook.remove_frame_hook(handle)
    assert source(4) == 5


@pytest.mark.parametrize("decliner_first", [True, False])
def test_native_hooks_compose_in_registration_order(decliner_first):
    # The eval function calls the hooks until one answers; framehook's Rust
    # code asks the rest: both orders ask both hooks and run the replacement.
    if decliner_first:
        _native._capi_add(b"decliner")
        example.redirect(source, target, cache=False)
    else:
        example.redirect(source, target, cache=False)
        _native._capi_add(b"decliner")
    declined, redirected = _native._capi_counts()[0], example.hook_calls()
    assert source(3) == 30
    assert _native._capi_counts()[0] > declined and example.hook_calls() > redirected


def test_failing_native_hook_raises_at_the_call_site():
    _native._capi_add(b"failing", fail_for=source.__code__, on_error=RAISE)
    with pytest.raises(RuntimeError, match="native test hook failed"):
        source(1)


def test_failing_native_hook_with_log_runs_the_original(caplog):
    _native._capi_add(b"failing", fail_for=source.__code__, on_error=LOG)
    with caplog.at_level(logging.ERROR, logger="framehook"):
        assert source(1) == 2
    assert any("failing" in record.getMessage() for record in caplog.records)


def test_a_failure_after_a_replacement_is_seen_by_the_later_hooks_order():
    # A native hook answers, then a failing one is asked (by Rust): "raise" wins.
    example.redirect(source, target, cache=False)
    _native._capi_add(b"failing", fail_for=source.__code__, on_error=RAISE)
    with pytest.raises(RuntimeError, match="native test hook failed"):
        source(1)


def test_native_hook_returning_a_non_code_object_is_a_type_error():
    example.redirect(source, types.SimpleNamespace(__code__=42), name="bad-return", cache=False)
    with pytest.raises(TypeError, match='"bad-return" must return a code object or None, not int'):
        source(1)


def test_disabled_blocks_and_disabled_hooks_are_not_asked():
    handle = _native._capi_add(b"decliner")
    before = _native._capi_counts()[0]
    with framehook.disabled():
        source(1)
    assert _native._capi_counts()[0] == before
    _native._capi_set_enabled(handle, False)
    source(1)
    assert _native._capi_counts()[0] == before
    _native._capi_set_enabled(handle, True)
    source(1)
    assert _native._capi_counts()[0] > before


def test_adding_a_python_hook_takes_native_hooks_off_the_eval_functions_own_path():
    _native._capi_add(b"decliner")
    seen = []
    framehook.add_frame_hook(lambda frame: seen.append(frame.original_code))
    before = _native._capi_counts()[0]
    source(1)
    assert source.__code__ in seen and _native._capi_counts()[0] > before


def helper():
    return "helper"


def test_tracing_goes_on_after_native_hooks_ran():
    # The eval function suspends tracing around native hooks as around any hook,
    # and must resume it: the frames after are traced as usual.
    example.redirect(source, target, cache=False)
    traced = []

    def tracer(frame, event, arg):
        if event == "call":
            traced.append(frame.f_code.co_name)

    sys.settrace(tracer)
    try:
        assert source(2) == 20
        helper()
    finally:
        sys.settrace(None)
    assert "helper" in traced
