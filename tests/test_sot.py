"""framehook.sot: Paddle's eval-frame contract, on the hook API, without Paddle."""

import collections
import itertools
import sys
import threading
import types

import pytest

import framehook
import framehook.sot as sot

CustomCode = collections.namedtuple("CustomCode", "code disable_eval_frame")
EXCEPTION_TABLES = sys.version_info >= (3, 11)


SOURCE = """
def add(a, b):
    return a + b


def mul(a, b):
    return a * b


def outer(x):
    return inner(x) + 1


def inner(x):
    return x * 10


def guarded(x):
    try:
        return x + 1
    except TypeError:
        return None
"""
_fresh = itertools.count()


@pytest.fixture
def fns():
    """The functions the tests hook, compiled afresh: SOT's code status and skip
    verdicts are per code object and outlive a test, as in Paddle."""
    namespace = {"__name__": "sot_test_functions"}
    exec(compile(SOURCE, f"<sot test functions {next(_fresh)}>", "exec"), namespace)
    return types.SimpleNamespace(**{name: value for name, value in namespace.items() if callable(value)})


@pytest.fixture(autouse=True)
def sot_off_afterwards():
    yield
    sot.set_eval_frame(None)
    sot.sot_pass_exception_tables(True)


class Callback:
    """A SOT callback recording the codes it sees; swaps codes by a table."""

    def __init__(self, swaps=None, disable=False):
        self.swaps = swaps or {}
        self.disable = disable
        self.seen = []

    def __call__(self, frame):
        self.seen.append(frame.f_code)
        return CustomCode(self.swaps.get(frame.f_code), self.disable)


def with_graph(*functions):
    sot.sot_setup_codes_with_graph(tuple(function.__code__ for function in functions))


def test_set_eval_frame_returns_the_old_callback_and_none_turns_it_off():
    first, second = Callback(), Callback()
    assert sot.set_eval_frame(first) is None
    assert [handle.name for handle in framehook.frame_hooks()] == ["sot"]
    assert sot.set_eval_frame(second) is first
    assert sot.set_eval_frame(None) is second
    assert framehook.frame_hooks() == []
    assert not framehook._native._is_installed()


def test_a_non_callable_is_ignored_like_paddle_does():
    callback = Callback()
    sot.set_eval_frame(callback)
    assert sot.set_eval_frame(42) is None
    assert sot.set_eval_frame(None) is callback


def test_callback_swaps_code_and_none_restores(fns):
    with_graph(fns.add, fns.mul)
    callback = Callback({fns.add.__code__: fns.mul.__code__})
    sot.set_eval_frame(callback)
    assert fns.add(3, 4) == 12
    sot.set_eval_frame(None)
    assert fns.add(3, 4) == 7
    assert fns.add.__code__ in callback.seen


def test_frame_shows_code_locals_globals_builtins(fns):
    seen = {}

    def callback(frame):
        if frame.f_code is fns.add.__code__:
            seen.update(code=frame.f_code, locals=dict(frame.f_locals),
                        globals=frame.f_globals, builtins=frame.f_builtins)
        return CustomCode(None, False)

    sot.set_eval_frame(callback)
    fns.add(1, 2)
    sot.set_eval_frame(None)
    assert seen["code"] is fns.add.__code__
    assert seen["locals"] == {"a": 1, "b": 2}
    assert seen["globals"] is fns.add.__globals__
    assert seen["builtins"]["len"] is len


def test_frame_unboxes_cells_and_stays_usable_after_the_callback():
    def closure_maker(x):
        y = x + 1

        def uses():
            return x + y

        return uses

    kept = []

    def callback(frame):
        if frame.f_code is closure_maker.__code__:
            kept.append(frame)
        return CustomCode(None, False)

    sot.set_eval_frame(callback)
    closure_maker(1)
    sot.set_eval_frame(None)
    (frame,) = kept
    # Owned copies: readable after the frame ran, argument cells unboxed at entry.
    assert frame.f_code is closure_maker.__code__
    assert frame.f_locals == {"x": 1}
    assert frame.f_globals is globals()


def test_the_callback_is_unset_while_it_runs(fns):
    inside = []

    def callback(frame):
        inside.append(sot.set_eval_frame(None))  # what a translator's own helpers see
        return CustomCode(None, False)

    sot.set_eval_frame(callback)
    fns.add(1, 1)
    assert sot.set_eval_frame(None) is callback  # restored after the callback
    assert inside and all(value is None for value in inside)


def test_disable_eval_frame_true_unhooks_the_subtree_only(fns):
    with_graph(fns.outer, fns.inner)
    seen = []

    def deciding(frame):
        seen.append(frame.f_code)
        return CustomCode(None, frame.f_code is fns.outer.__code__)

    sot.set_eval_frame(deciding)
    assert fns.outer(2) == 21
    assert fns.inner.__code__ not in seen  # called inside outer's subtree
    assert fns.inner(2) == 20  # after outer returned, the callback is back
    assert fns.inner.__code__ in seen
    assert sot.set_eval_frame(None) is deciding


def test_disable_eval_frame_restores_even_when_the_frame_raises():
    def boom():
        raise KeyError("x")

    sot.set_eval_frame(lambda frame: CustomCode(None, frame.f_code is boom.__code__))
    with pytest.raises(KeyError):
        boom()
    assert sot.set_eval_frame(None) is not None


def inner_seen_per_outer_call(fns, calls):
    """Calls outer() `calls` times; for each, whether the callback saw inner's frame."""
    seen = []

    def callback(frame):
        seen.append(frame.f_code)
        return CustomCode(None, False)

    sot.set_eval_frame(callback)
    results = []
    for _ in range(calls):
        del seen[:]
        assert fns.outer(1) == 11
        results.append(fns.inner.__code__ in seen)
    sot.set_eval_frame(None)
    return results


def test_a_code_left_unchanged_ten_times_then_runs_with_its_subtree_unhooked(fns):
    # Paddle 3.3.1's rule: after 10 unchanged calls without a graph the code is given up.
    assert inner_seen_per_outer_call(fns, 12) == [True] * 10 + [False] * 2


def test_a_code_marked_with_graph_is_never_given_up(fns):
    sot.set_eval_frame(Callback())
    fns.outer(1)  # met once: now known to SOT
    sot.set_eval_frame(None)
    sot.sot_set_with_graph(fns.outer.__code__)
    assert inner_seen_per_outer_call(fns, 12) == [True] * 12


def test_replacement_codes_are_never_given_up(fns):
    callback = Callback({fns.add.__code__: fns.mul.__code__})
    sot.set_eval_frame(callback)
    results = [fns.add(3, 4) for _ in range(12)]
    sot.set_eval_frame(None)
    assert results == [12] * 12


def test_set_eval_frame_while_the_callback_is_set_aside_keeps_sot_hooked(fns):
    # Paddle's no_eval_frame helpers: save, set None, restore, inside the callback.
    seen = []

    def callback(frame):
        seen.append(frame.f_code)
        sot.set_eval_frame(sot.set_eval_frame(None))
        return CustomCode(None, False)

    with_graph(fns.add)
    sot.set_eval_frame(callback)
    fns.add(1, 1)
    fns.add(2, 2)
    assert [handle.name for handle in framehook.frame_hooks()] == ["sot"]
    sot.set_eval_frame(None)
    assert seen.count(fns.add.__code__) == 2


@pytest.mark.parametrize("has_graph", [False, True])
def test_skip_prefix_keeps_frames_from_the_callback_until_the_rules_change(fns, has_graph):
    # A skipped code with a graph is declined without asking SOT, until a rule changes.
    callback = Callback()
    if has_graph:
        with_graph(fns.add)
    sot.eval_frame_skip_file_prefix((fns.add.__code__.co_filename,))
    sot.set_eval_frame(callback)
    for _ in range(3):
        fns.add(1, 2)
    assert fns.add.__code__ not in callback.seen
    sot.eval_frame_no_skip_codes((fns.add.__code__,))
    fns.add(1, 2)
    sot.set_eval_frame(None)
    assert callback.seen.count(fns.add.__code__) == 1


def test_frozen_module_is_judged_by_its_file():
    namespace = {"__file__": "/virtual/site/thing.py", "__name__": "thing"}
    exec(compile("def frozen():\n    return 5\n", "<frozen thing>", "exec"), namespace)
    callback = Callback()
    sot.eval_frame_skip_file_prefix(("/virtual/site/",))
    sot.set_eval_frame(callback)
    assert namespace["frozen"]() == 5
    sot.set_eval_frame(None)
    assert namespace["frozen"].__code__ not in callback.seen


@pytest.mark.skipif(not EXCEPTION_TABLES, reason="exception tables exist on 3.11+ only")
def test_exception_table_functions_pass_through_unless_turned_off(fns):
    callback = Callback()
    sot.set_eval_frame(callback)
    assert fns.guarded(1) == 2
    assert fns.guarded.__code__ not in callback.seen
    assert sot.sot_pass_exception_tables(False) is True
    fns.guarded(1)
    sot.set_eval_frame(None)
    assert fns.guarded.__code__ in callback.seen


@pytest.mark.skipif(EXCEPTION_TABLES, reason="3.9/3.10 set up handlers with instructions")
def test_try_except_functions_reach_the_callback_before_311(fns):
    callback = Callback()
    sot.set_eval_frame(callback)
    fns.guarded(1)
    sot.set_eval_frame(None)
    assert fns.guarded.__code__ in callback.seen


def test_callback_errors_reach_the_caller_and_the_callback_survives(fns):
    def failing(frame):
        if frame.f_code is fns.add.__code__:
            raise ValueError("translator failed")
        return CustomCode(None, False)

    sot.set_eval_frame(failing)
    with pytest.raises(ValueError, match="translator failed"):
        fns.add(1, 2)
    assert sot.set_eval_frame(None) is failing


@pytest.mark.parametrize(
    "result, message",
    [
        (CustomCode("not code", False), "code must be a code object or None"),
        (CustomCode(None, 1), "disable_eval_frame must be True or False"),
        (object(), "has no attribute 'code'"),
    ],
)
def test_bad_callback_results_raise(fns, result, message):
    sot.set_eval_frame(lambda frame: result if frame.f_code is fns.add.__code__ else CustomCode(None, False))
    try:
        with pytest.raises((TypeError, AttributeError), match=message):
            fns.add(1, 2)
    finally:
        sot.set_eval_frame(None)


def test_incompatible_replacement_raises_type_error_naming_sot(fns):
    def one(a):
        return a

    with_graph(fns.add, one)
    sot.set_eval_frame(Callback({fns.add.__code__: one.__code__}))
    try:
        with pytest.raises(TypeError, match="sot"):
            fns.add(1, 2)
    finally:
        sot.set_eval_frame(None)


@pytest.mark.parametrize(
    "function, argument",
    [
        (sot.eval_frame_skip_file_prefix, ("ok", 3)),
        (sot.eval_frame_skip_file_prefix, ["not", "a tuple"]),
        (sot.eval_frame_no_skip_codes, (print,)),
        (sot.sot_setup_codes_with_graph, "code"),
        (sot.sot_set_with_graph, print),
    ],
)
def test_bad_arguments_raise_type_error(function, argument):
    with pytest.raises(TypeError):
        function(argument)


def test_composes_with_a_hook_before_it_and_an_observer(fns):
    order = []

    def before(frame):
        if frame.original_code is fns.add.__code__:
            order.append("hook")
        return None

    def observer(event, code, original):
        if original is fns.add.__code__ and event == "call":
            order.append(("ran", code.co_name))

    def callback(frame):
        if frame.f_code is fns.add.__code__:
            order.append("sot")
            return CustomCode(fns.mul.__code__, False)
        return CustomCode(None, False)

    with_graph(fns.add, fns.mul)
    framehook.add_frame_hook(before)
    framehook.add_frame_hook(None, observer=observer)
    sot.set_eval_frame(callback)
    assert [handle.name for handle in framehook.frame_hooks()][-1] == "sot"
    assert fns.add(3, 4) == 12
    sot.set_eval_frame(None)
    assert order == ["hook", "sot", ("ran", "mul")]


def test_a_hook_removed_by_someone_else_comes_back_with_the_next_callback(fns):
    sot.set_eval_frame(Callback())
    framehook.clear_frame_hooks()
    callback = Callback()
    sot.set_eval_frame(callback)
    fns.add(1, 2)
    sot.set_eval_frame(None)
    assert fns.add.__code__ in callback.seen


def test_callbacks_are_per_thread(fns):
    main_callback = Callback()
    sot.set_eval_frame(main_callback)
    other = {}

    def worker():
        other["callback"] = sot.set_eval_frame(None)
        other["result"] = fns.add(2, 2)

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join()
    assert other == {"callback": None, "result": 4}
    assert sot.set_eval_frame(None) is main_callback
