"""examples/native_hook: a native hook in Rust, registered through framehook's capsule."""

import gc
import sys

import native_hook_example as example
import pytest

import framehook


def source(x):
    return x + 1


def target(x):
    return x * 10


def two_arguments(x, y):
    return x + y


def made_at_runtime(text):
    """A function only the caller references."""
    namespace = {}
    exec(text, namespace)
    (function,) = (value for key, value in namespace.items() if key != "__builtins__")
    return function


def test_redirect_runs_the_target_code_until_removed():
    handle = example.redirect(source, target, name="to-target")
    assert source(4) == 40
    assert target(4) == 40
    framehook.remove_frame_hook(handle)
    assert source(4) == 5
    assert not handle.registered
    assert not framehook._native._is_installed()  # the last hook gone, PEP 523 slot restored
    with pytest.raises(ValueError, match="not a registered frame hook"):
        framehook.remove_frame_hook(handle)


def test_cache_asks_the_native_hook_once_per_code_object():
    example.redirect(source, target)
    asked = example.hook_calls()
    results = []
    gc.disable()  # a finalizer running Python code would start frames of its own
    try:
        for i in range(50):
            results.append((source(i), target(i)))
    finally:
        gc.enable()
    assert example.hook_calls() - asked == 2  # source's code and target's, once each
    assert results == [(10 * i, 10 * i) for i in range(50)]


def test_composes_with_python_hooks_in_registration_order():
    seen = {"before": [], "after": []}

    def watcher(label):
        def hook(frame):
            if frame.original_code is source.__code__:
                seen[label].append(frame.f_code)
            return None

        return hook

    framehook.add_frame_hook(watcher("before"), name="before")
    example.redirect(source, target, name="native")
    framehook.add_frame_hook(watcher("after"), name="after")
    assert source(2) == 20
    assert seen == {"before": [source.__code__], "after": [target.__code__]}
    assert [hook.name for hook in framehook.frame_hooks()] == ["before", "native", "after"]


def test_listed_as_a_native_hook():
    handle = example.redirect(source, target, name="listed")
    assert framehook.frame_hooks() == [handle]
    assert handle.native is True
    assert handle.hook is None and handle.observer is None and not handle.observes
    assert handle.name == "listed" and handle.cache and handle.on_error == "raise"
    assert "native" in repr(handle)


def test_disabling_in_place():
    handle = example.redirect(source, target)
    handle.enabled = False
    assert source(1) == 2
    handle.enabled = True
    assert source(1) == 10


def test_incompatible_replacement_raises_type_error_naming_the_hook():
    example.redirect(source, two_arguments, name="bad-redirect")
    with pytest.raises(TypeError, match="bad-redirect"):
        source(1)
    assert target(1) == 10  # other functions are not affected


def test_hook_and_what_it_holds_are_freed_after_removal():
    gc.collect()  # handles kept alive by earlier tests' tracebacks
    live = example.live_hooks()
    # Fresh functions, never called: no framehook cache refers to their code.
    fresh_source = made_at_runtime("def fresh_source(x):\n    return x - 1\n")
    fresh_target = made_at_runtime("def fresh_target(x):\n    return x - 2\n")
    codes = (fresh_source.__code__, fresh_target.__code__)
    before = [sys.getrefcount(code) for code in codes]
    handle = example.redirect(fresh_source, fresh_target)
    assert example.live_hooks() == live + 1
    framehook.remove_frame_hook(handle)
    del handle
    # Its references to the codes are released now, not queued until the
    # example's PyO3 next runs (as the live_hooks() call below makes it), so
    # this is checked first. On 3.13t the codes may be immortal: no telling.
    assert [sys.getrefcount(code) for code in codes] == before
    assert example.live_hooks() == live
