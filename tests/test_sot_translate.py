"""framehook's own SOT translator, from its user API: translate, stats, explain, reset,
GraphBreakError, register_backend; guards and the per-code cache; composition with other
hooks; bad input; threads. The differential corpus is tests/test_sot_corpus.py."""

import contextlib
import functools
import io
import logging
import os
import re
import subprocess
import sys
import textwrap
import threading
import traceback
import types

import numpy as np
import pytest

import framehook
import framehook.sot as sot
from sot_runtime import RunTime

FREE_THREADED = "t" in getattr(sys, "abiflags", "")


@pytest.fixture(autouse=True)
def fresh_translator():
    sot.reset()
    yield
    sot.reset()


class _Opaque(functools.partial):
    """A callable whose call the translator breaks on: a subclass of a C type with C's
    `__call__` (a partial itself is called through)."""


def two_ops(x, y):
    return x * 2.0 + y


def test_translate_runs_one_graph_and_hits_the_cache():
    fast = sot.translate(two_ops)
    x, y = np.arange(3.0), np.ones(3)
    np.testing.assert_array_equal(fast(x, y), two_ops(x, y))
    np.testing.assert_array_equal(fast(x, y), two_ops(x, y))
    st = sot.stats(fast)
    assert (st.translations, st.graphs, st.ops_captured, st.cache_hits) == (1, 1, 2, 1)
    assert st.graph_breaks == [] and st.fallbacks == []


def test_decorator_forms_and_methods():
    @sot.translate
    def plain(x):
        return x + 1

    @sot.translate(backend="numpy", cache_size=2)
    def configured(x):
        return x - 1

    class Model:
        scale = 3.0

        @sot.translate
        def forward(self, x):
            return x * self.scale

    x = np.ones(2)
    np.testing.assert_array_equal(plain(x), x + 1)
    np.testing.assert_array_equal(configured(x), x - 1)
    np.testing.assert_array_equal(Model().forward(x), x * 3.0)
    assert plain.__name__ == "plain" and plain.__wrapped__.__name__ == "plain"
    assert sot.stats(Model.forward).graphs == 1
    assert sot.stats(Model().forward).ops_captured == 1


def test_guards_recompile_on_shape_dtype_and_python_values():
    def f(x, k):
        return x * k

    fast = sot.translate(f)
    fast(np.ones(3), 2)
    fast(np.ones(3), 2)
    fast(np.ones(4), 2)  # shape
    fast(np.ones(4, dtype=np.float32), 2)  # dtype
    fast(np.ones(4, dtype=np.float32), 3)  # the Python value
    st = sot.stats(fast)
    assert st.translations == 4
    assert st.recompilations == 3
    assert st.guard_failures == 3
    assert st.cache_hits == 1


def test_cache_size_limit_runs_the_original_past_it():
    def f(x, k):
        return x + k

    fast = sot.translate(f, cache_size=2)
    for k in range(5):
        np.testing.assert_array_equal(fast(np.zeros(2), k), np.zeros(2) + k)
    st = sot.stats(fast)
    assert st.translations == 2
    # Past the limit the answer is right and nothing more is compiled.
    np.testing.assert_array_equal(fast(np.zeros(2), 7), np.full(2, 7.0))
    assert sot.stats(fast).translations == 2


def test_full_graph_raises_at_a_break_and_the_original_does_not_run():
    calls = []

    def f(x):
        calls.append(1)
        print("side effect")
        return x

    fast = sot.translate(f, full_graph=True)
    with pytest.raises(sot.GraphBreakError, match="print"):
        fast(np.ones(2))
    assert calls == []


def test_graph_break_resumes_and_counts():
    def f(x):
        y = x + 1
        print("between")
        return y * 2

    fast = sot.translate(f)
    np.testing.assert_array_equal(fast(np.ones(2)), f(np.ones(2)))
    st = sot.stats(fast)
    assert (st.graphs, st.ops_captured, st.translations) == (2, 2, 2)
    [brk] = st.graph_breaks
    assert "print" in brk.reason and brk.lineno == f.__code__.co_firstlineno + 2
    assert brk.filename == f.__code__.co_filename


def test_a_value_dropped_after_a_break_is_freed_when_dropped():
    """The frame that waits on a resume function holds none of its locals, nor the values
    it handed on: what the rest of the function drops is freed then, as in one frame
    (also a value live at the break, dropped after it, through two resume functions); a
    value never read after the break lives until the store over it (which breaks where
    the dropped object's death is watched: a weak reference's callback), and what it
    never stores again lives to the end."""
    import weakref

    class Held:
        pass

    def drop_after_break(box, freed):
        obj = box.pop()
        probe = weakref.ref(obj, lambda _: freed.append(True))
        print("a break")
        obj = None  # neither live at the break nor ever read again
        return (freed == [True], probe() is None)

    def drop_what_was_live_at_breaks(box, freed):
        obj = box.pop()
        probe = weakref.ref(obj, lambda _: freed.append(True))
        print("a break", obj)  # obj is live here, and at the next break
        print("another break", obj)
        obj = None
        return (freed == [True], probe() is None)

    def hold_until_stored_over(box, freed):
        obj = box.pop()
        probe = weakref.ref(obj, lambda _: freed.append(True))
        print("a break")  # obj is never read again, but the frame holds it until the store
        held = probe() is not None and freed == []
        obj = None
        return (held and freed == [True], probe() is None)

    def keep_to_the_end(box, freed):
        obj = box.pop()
        probe = weakref.ref(obj, lambda _: freed.append(True))
        print("a break")
        return (freed == [], probe() is not None)  # obj is never stored again: kept

    for function in (drop_after_break, drop_what_was_live_at_breaks, hold_until_stored_over, keep_to_the_end):
        fast = sot.translate(function)
        for _ in range(2):
            freed = []
            assert fast([Held()], freed) == (True, True)
        st = sot.stats(fast)
        assert any("print" in b.reason for b in st.graph_breaks)
        assert st.fallbacks == [] and st.cache_hits >= 1


def test_a_frame_started_under_a_trace_function_runs_its_own_code():
    """A debugger or line tracer sees the original's lines: under sys.settrace the frame
    runs its own code, and the translation serves the calls made without a tracer."""

    def f(x):
        y = x + 1
        return y * 2

    fast = sot.translate(f)
    np.testing.assert_array_equal(fast(np.ones(2)), f(np.ones(2)))
    lines = []

    def tracer(frame, event, arg):
        if event == "line" and frame.f_code is f.__code__:
            lines.append(frame.f_lineno - f.__code__.co_firstlineno)
        return tracer

    sys.settrace(tracer)
    try:
        traced = fast(np.ones(2))
    finally:
        sys.settrace(None)
    assert lines == [1, 2]
    np.testing.assert_array_equal(traced, f(np.ones(2)))
    np.testing.assert_array_equal(fast(np.ones(2)), f(np.ones(2)))
    st = sot.stats(fast)
    assert (st.translations, st.graphs, st.ops_captured, st.cache_hits) == (1, 1, 2, 1)


def test_branch_on_a_tensor_value_translates_the_branch_taken():
    def f(x):
        if x.sum() > 0:
            return x + 1
        return x - 1

    fast = sot.translate(f)
    for sign in (1, -1, 1):
        np.testing.assert_array_equal(fast(sign * np.ones(2)), f(sign * np.ones(2)))
    st = sot.stats(fast)
    assert st.graph_breaks[0].reason.startswith("data-dependent")
    assert st.graphs == 3  # before the branch, then each branch once


def test_a_break_in_a_while_loop_runs_the_loop_in_a_bridge():
    """In its body or in its first test (3.10+ put that before the loop), a break runs the
    `while` loop from there as the original does; what precedes and follows are graphs."""

    def printing(x):
        x = x + 1
        i = 0
        while i < 3:
            x = x + i
            print(i, end="")
            i += 1
        return x * 2

    def on_a_value(x):
        x = x + 1
        while (x < 3).any():
            x = x + 1
        return x * 2

    for f, reason in ((printing, "print"), (on_a_value, "data-dependent")):
        sot.reset()
        fast = sot.translate(f)
        for _ in range(2):
            np.testing.assert_array_equal(fast(np.ones(2)), f(np.ones(2)))
        st = sot.stats(fast)
        assert st.graphs == 2 and st.fallbacks == [] and st.own_frame == "translated", st
        [brk] = st.graph_breaks
        assert reason in brk.reason, st


def _numbers(n):
    yield from range(n)


def _loop_over_a_generator(x, items):
    x = x + 1
    for i in items:
        x = x + i
        if i == 1:
            break
    else:
        x = x - 10
    return x * 2


def _return_from_the_loop(x, items):
    x = x + 1
    for i in items:
        if i == 1:
            return x * 3
        x = x + i
    return x * 2


def _print_in_a_loop(x):
    x = x + 1
    for i in [1, 2, 3]:
        x = x + i
        print("item", i, end=";")
    return x * 2


def test_a_break_in_a_for_loop_runs_the_loop_in_a_bridge_and_translates_what_follows(capsys):
    """The loop runs as the original does (its `break`, `else` and `return` included); the
    code before it and after it are graphs, with one break."""
    for function, items in ((_loop_over_a_generator, 3), (_loop_over_a_generator, 1), (_return_from_the_loop, 3),
                            (_return_from_the_loop, 1)):
        sot.reset()
        fast = sot.translate(function)
        for _ in range(2):
            np.testing.assert_array_equal(fast(np.ones(2), _numbers(items)), function(np.ones(2), _numbers(items)))
        st = sot.stats(fast)
        # Either way out (a `return` in the loop is a way out too) is a graph of its own.
        assert st.graphs == 2 and st.fallbacks == [], (function, items, st)
        assert [b.reason for b in st.graph_breaks] == ["iteration over generator"], st
    # Any C iterator from the frame is iterated so (`iter()` of it is itself).
    for make in (lambda: iter(range(3)), lambda: map(int, "012")):
        sot.reset()
        fast = sot.translate(_loop_over_a_generator)
        for _ in range(2):
            np.testing.assert_array_equal(fast(np.ones(2), make()), _loop_over_a_generator(np.ones(2), make()))
        st = sot.stats(fast)
        assert st.graphs == 2 and [b.reason for b in st.graph_breaks] == [
            f"iteration over {type(make()).__name__}"
        ], st
    sot.reset()
    fast = sot.translate(_print_in_a_loop)
    np.testing.assert_array_equal(fast(np.ones(2)), _print_in_a_loop(np.ones(2)))
    assert capsys.readouterr().out == "item 1;item 2;item 3;" * 2
    np.testing.assert_array_equal(fast(np.ones(2)), _print_in_a_loop(np.ones(2)))
    st = sot.stats(fast)
    # The first iteration's addition is in the graph before the break.
    assert (st.graphs, st.ops_captured, st.fallbacks) == (2, 3, []), st
    assert len(st.graph_breaks) == 1 and "print" in st.graph_breaks[0].reason


def _assigned_in_the_loop(x, items):
    x = x + 1
    for i in items:
        y = x + i
    return y * 2


def _deleted_in_the_loop(x, items):
    z = 1
    for i in items:
        x = x + z
        del z
        z = i
    return x + z


def _handled_in_the_loop(x, items):
    for i in items:
        try:
            x = x + i
            if i == 1:
                raise ValueError(i)
        except ValueError as error:
            x = x - len(str(error))
    try:
        return x + error.args[0]
    except NameError:
        return x


def _raised_out_of_the_loop(x, items):
    try:
        for i in items:
            with contextlib.suppress(ZeroDivisionError):
                x = x + i // (i - 1)
            if i == 2:
                raise KeyError(i)
    except KeyError as error:
        x = x * 100 + error.args[0]
    return x + 1


def _nested_loops(x, items):
    k = 2

    def scale(v):
        return v * k

    for j in [1, 2]:
        x = x + j
        for i in items:
            x = scale(x) + i
    return x + sum([v * 2 for v in _numbers(3)])


def test_a_loops_bridge_hands_on_variables_it_binds_deletes_or_handles():
    """What the loop assigns first is read after it; a `del` in it, an exception handled
    in it or raised out of it, a `with` in it, nested loops and a closure: all as the
    original runs them, and an unbound variable raises as it does there. (3.9/3.10 say
    which handler an instruction raises to only as it runs: a loop with a `try` or `with`
    in it runs in the resume function of a break before it.)"""
    bridged = ["iteration over generator"]
    why = "the loop sets up a `try` or `with` block (3.9/3.10)"
    before_the_loop = [
        f"it makes the iterator of a loop that runs eagerly ({why}): iteration over generator",
        f"graph break in a loop, the frame runs eagerly ({why}): iteration over generator",
    ]
    blocks = before_the_loop if sys.version_info < (3, 11) else bridged
    cases = [
        (_assigned_in_the_loop, 3, bridged),
        (_deleted_in_the_loop, 3, bridged),
        (_handled_in_the_loop, 3, blocks),
        (_handled_in_the_loop, 1, blocks),
        (_raised_out_of_the_loop, 4, blocks),
        (_raised_out_of_the_loop, 2, blocks),
        (_nested_loops, 3, bridged),
    ]
    for function, items, reasons in cases:
        sot.reset()
        fast = sot.translate(function)
        for _ in range(2):
            np.testing.assert_array_equal(fast(np.ones(2), _numbers(items)), function(np.ones(2), _numbers(items)))
        st = sot.stats(fast)
        assert st.fallbacks == [] and st.own_frame == "translated", (function, st)
        assert {b.reason for b in st.graph_breaks} == set(reasons), (function, st)
    fast = sot.translate(_assigned_in_the_loop)
    with pytest.raises(UnboundLocalError):
        fast(np.ones(2), _numbers(0))


def _reads_its_locals(x, items):
    x = x + 1
    for i in items:
        x = x + i
    return x * len(locals())


def test_a_loop_that_cannot_run_in_a_bridge_runs_in_the_resume_function_of_a_break_before_it():
    fast = sot.translate(_reads_its_locals)
    np.testing.assert_array_equal(fast(np.ones(2), _numbers(3)), _reads_its_locals(np.ones(2), _numbers(3)))
    st = sot.stats(fast)
    assert (st.graphs, st.ops_captured) == (1, 1), st
    # The break before the loop, then the resume function's, which runs eagerly from there.
    assert [b.reason for b in st.graph_breaks] == [
        "it makes the iterator of a loop that runs eagerly (the code reads its frame's variables): "
        "iteration over generator",
        "graph break in a loop, the frame runs eagerly (the code reads its frame's variables): "
        "iteration over generator",
    ]


def test_functions_with_try_with_and_comprehensions_are_translated():
    class Scale:
        def __enter__(self):
            return 3.0

        def __exit__(self, *exc):
            return False

    def f(x, items):
        try:
            k = int("7")
        except ValueError:
            k = 0
        with Scale() as s:
            y = x * s + k
        return [y * v for v in items], {v: v * 2 for v in items}

    fast = sot.translate(f, full_graph=True)
    got, want = fast(np.ones(2), [1, 2]), f(np.ones(2), [1, 2])
    for a, b in zip(got[0], want[0]):
        np.testing.assert_array_equal(a, b)
    assert got[1] == want[1]
    st = sot.stats(fast)
    assert st.translations == 1 and st.ops_captured == 4 and st.graph_breaks == []


def test_side_effects_replayed_in_order():
    class Box:
        pass

    def f(x, log, box, d):
        log.append("first")
        box.value = x * 2
        d["k"] = len(log)
        log.append("second")
        return x

    fast = sot.translate(f, full_graph=True)
    log, box, d = [], Box(), {}
    fast(np.ones(2), log, box, d)
    assert log == ["first", "second"] and d == {"k": 1}
    np.testing.assert_array_equal(box.value, np.full(2, 2.0))
    assert sot.stats(fast).ops_captured == 1


def test_an_exception_shows_the_users_line():
    def f(x, y):
        z = x + 1
        return z @ y  # shapes do not match

    fast = sot.translate(f)
    with pytest.raises(ValueError) as eager:
        f(np.ones(2), np.ones(3))
    with pytest.raises(ValueError) as translated:
        fast(np.ones(2), np.ones(3))
    assert str(translated.value) == str(eager.value)
    lines = [frame.lineno for frame in traceback.extract_tb(translated.tb) if frame.filename == __file__]
    assert f.__code__.co_firstlineno + 2 in lines
    # x + 1 is captured; the raising matmul is run by the generated code itself.
    st = sot.stats(fast)
    assert (st.graphs, st.ops_captured, st.graph_breaks, st.fallbacks) == (1, 1, [], [])


def test_translation_composes_with_other_hooks():
    seen = []

    def observer(frame):
        seen.append(frame.f_code.co_name)

    def f(x):
        return x + 1

    with framehook.frame_hook(observer):
        fast = sot.translate(f)
        np.testing.assert_array_equal(fast(np.ones(2)), np.full(2, 2.0))
    assert "f" in seen
    assert sot.stats(fast).graphs == 1


def test_a_translation_imports_no_module_the_program_has_not():
    # CPython 3.15's test_dataclasses: `make_dataclass` must leave `typing` unimported, and
    # the translator imported it (and contextlib) to find the library functions it traces.
    unimported = ("typing", "contextlib")
    saved = {name: sys.modules.pop(name) for name in unimported if name in sys.modules}
    try:
        fast = sot.translate(two_ops)
        x = np.arange(3.0)
        np.testing.assert_array_equal(fast(x, x), x * 2.0 + x)
        left = [name for name in unimported if name in sys.modules]
    finally:
        sys.modules.update(saved)
    assert left == []
    stats = sot.stats(fast)
    assert stats.translations == 1 and stats.graphs == 1 and stats.graph_breaks == []


_CLASS_LIFETIME = """
import gc, weakref
import numpy as np
import framehook.sot as sot

def make_object():
    class Local:
        k = 2.0

    return Local()

def scaled(x, obj):
    return x * obj.k

fast = sot.translate(scaled, full_graph=True)
obj = make_object()
assert (fast(np.ones(2), obj) == 2.0).all() and (fast(np.ones(2), obj) == 2.0).all()
stats = sot.stats(fast)
assert (stats.translations, stats.cache_hits, stats.graphs) == (1, 1, 1), stats
cls = weakref.ref(type(obj))
del obj
gc.collect()
# The translation stays cached; the class it guards on is the program's to free.
assert cls() is None, "the class outlived its last instance"
assert sot.stats(fast).translations == 1
"""


def test_a_guard_on_the_type_of_an_argument_keeps_no_class_alive():
    # In a process of its own: free-threaded 3.13 makes every class created after the
    # process's first thread started immortal (no translation needed), and this file's
    # other tests start threads.
    run = subprocess.run([sys.executable, "-c", _CLASS_LIFETIME], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr


def test_reset_forgets_translations_and_counters():
    fast = sot.translate(two_ops)
    fast(np.ones(2), np.ones(2))
    sot.reset()
    assert sot.stats(fast).translations == 0
    fast(np.ones(2), np.ones(2))
    assert sot.stats(fast).translations == 1 and sot.stats(fast).cache_hits == 0


def test_explain_names_graphs_guards_and_breaks():
    def f(x):
        y = np.tanh(x)
        print("hi")
        return y

    text = sot.explain(f, np.ones(2))
    assert "tanh" in text and "guards" in text and "graph break: print()" in text
    assert 'print("hi")' in text


def test_logging_reports_breaks(caplog):
    def f(x):
        print("x")
        return x

    def g(x, k):
        return x * k

    with caplog.at_level(logging.DEBUG, logger="framehook.sot"):
        sot.translate(f)(np.ones(1))
        fast = sot.translate(g)
        fast(np.ones(1), 2)
        fast(np.ones(1), 3)
    messages = [r.getMessage() for r in caplog.records if r.name == "framehook.sot"]
    assert any("graph break" in m and "print" in m for m in messages)
    # The qualified name where the code has one (3.11+), else the name.
    assert any(m.startswith("translated ") and m.split(":")[0].split(".")[-1] in ("g", "translated g")
               for m in messages)
    assert any("guard failure in" in m and "k == 2" in m for m in messages)


class _Tempered:
    """A model whose reads after a graph break reach a resume function."""

    def __init__(self):
        self.config = {"temperature": 2.0}

    def forward(self, x):
        y = np.tanh(x)
        print("between the graphs")
        return y / self.config["temperature"]

    def scaled(self, x):
        y = np.tanh(x)
        return y * (print("inside the expression") or self.config["temperature"])

    def gated(self, x):
        y = np.tanh(x)
        if (y > 0).all():
            return y * self.config["temperature"]
        return y

    def gated_by_name(self, x):
        positive = (np.tanh(x) > 0).all()
        if positive:
            return x * self.config["temperature"]
        return x


def guard_blocks(text):
    """Each translation's guard lines in ``sot.explain``'s text, in its order."""
    lines = text.splitlines()
    blocks = []
    for start, line in enumerate(lines):
        if line.startswith("  guards ("):
            count = int(line.split("(")[1].split(")")[0])
            blocks.append([g.strip() for g in lines[start + 1:start + 1 + count]])
    return blocks


def line_of(fn, text):
    """The line of ``fn``'s source that holds ``text``."""
    import inspect

    source, first = inspect.getsourcelines(fn)
    return first + next(i for i, line in enumerate(source) if text in line)


# What a resume function's guards read was handed to it in one list, its one argument
# (named as the original's first parameter where that is handed on): they were shown as
# items of that list (`self type is list`, `self[1].config['temperature'] == 2.0`).
PACKED = re.compile(r"^(self|__sot_\w+)\[|__sot_|^self type is list|^self len ==")


def test_explain_names_what_a_break_handed_on_as_the_user_wrote_it(capsys):
    model, x = _Tempered(), np.ones(2)
    fast = sot.translate(model.forward)
    np.testing.assert_array_equal(fast(x), np.tanh(x) / 2.0)
    st = sot.stats(fast)
    assert (st.translations, st.graphs, st.ops_captured, len(st.graph_breaks), st.fallbacks) == (2, 2, 2, 1, [])
    text = sot.explain(model.forward, x)
    assert "translations=2 graphs=2 ops=2 breaks=1 fallbacks=0" in text, text
    before, resumed = guard_blocks(text)
    # The variables handed on, by the names the user wrote.
    assert "self.config['temperature'] == 2.0" in resumed, text
    assert "self type is _Tempered" in resumed, text
    assert "y tensor ndarray dtype=dtype('float64') shape=(2,)" in resumed, text
    # The list itself, which the user never wrote, as such.
    assert "<values handed on> type is list" in resumed, text
    assert not [g for g in before + resumed if PACKED.search(g)], text
    assert capsys.readouterr().out.count("between the graphs") == 2


def test_explain_names_stack_values_a_break_handed_on():
    # A value on the stack at the break by the variable it was read from; the call's
    # result by its place and line; a branch's condition as the truth of the tensor tested.
    model, x = _Tempered(), np.ones(2)
    fast = sot.translate(model.scaled)
    np.testing.assert_array_equal(fast(x), np.tanh(x) * 2.0)
    st = sot.stats(fast)
    assert (st.translations, st.graphs, len(st.graph_breaks), st.fallbacks) == (2, 2, 1, [])
    _, resumed = guard_blocks(sot.explain(model.scaled, x))
    line = line_of(_Tempered.scaled, "print(")
    assert f"<stack 1 at line {line}> == None" in resumed, resumed
    assert "y tensor ndarray dtype=dtype('float64') shape=(2,)" in resumed, resumed
    assert "self.config['temperature'] == 2.0" in resumed, resumed
    assert not [g for g in resumed if PACKED.search(g)], resumed

    fast = sot.translate(model.gated)
    np.testing.assert_array_equal(fast(x), np.tanh(x) * 2.0)
    st = sot.stats(fast)
    assert (st.translations, st.graphs, len(st.graph_breaks), st.fallbacks) == (2, 2, 1, [])
    assert st.graph_breaks[0].reason == "data-dependent branch on a tensor's value"
    _, resumed = guard_blocks(sot.explain(model.gated, x))
    line = line_of(_Tempered.gated, "if (y > 0)")
    assert f"bool(<tensor at line {line}>) == True" in resumed, resumed
    assert "self.config['temperature'] == 2.0" in resumed, resumed
    assert not [g for g in resumed if PACKED.search(g)], resumed

    fast = sot.translate(model.gated_by_name)
    np.testing.assert_array_equal(fast(x), x * 2.0)
    st = sot.stats(fast)
    assert (st.translations, st.graphs, len(st.graph_breaks), st.fallbacks) == (2, 2, 1, [])
    _, resumed = guard_blocks(sot.explain(model.gated_by_name, x))
    assert "bool(positive) == True" in resumed, resumed
    assert not [g for g in resumed if PACKED.search(g)], resumed


def test_a_resume_functions_guard_failure_is_logged_by_the_users_names(caplog, capsys):
    model, x = _Tempered(), np.ones(2)
    fast = sot.translate(model.forward)
    with caplog.at_level(logging.DEBUG, logger="framehook.sot"):
        fast(x)
        model.config["temperature"] = 4.0
        np.testing.assert_array_equal(fast(x), np.tanh(x) / 4.0)
    st = sot.stats(fast)
    # The generated code before the break hits its cache; the resume function's guard fails.
    assert (st.translations, st.graphs, st.cache_hits, st.guard_failures, st.recompilations) == (3, 3, 1, 1, 1)
    assert len(st.graph_breaks) == 1 and st.fallbacks == []
    failures = [r.getMessage() for r in caplog.records if "guard failure" in r.getMessage()]
    assert len(failures) == 1, failures
    assert failures[0].endswith("no longer holds: self.config['temperature'] == 2.0"), failures


def test_bad_input_gets_clear_errors():
    with pytest.raises(ValueError, match="unknown SOT backend 'nope'"):
        sot.translate(two_ops, backend="nope")
    with pytest.raises(ValueError, match="cache_size"):
        sot.translate(two_ops, cache_size=0)
    with pytest.raises(TypeError, match="callable"):
        sot.translate(42)
    with pytest.raises(TypeError, match="sot.translate"):
        sot.stats(two_ops)
    with pytest.raises(TypeError, match="lacks"):
        sot.register_backend("half", object())
    with pytest.raises(TypeError, match="backend object int lacks tensor_types"):
        sot.translate(two_ops, backend=3)
    with pytest.raises(TypeError, match="module names"):
        sot.translate(two_ops, trace_modules="unittest")
    with pytest.raises(ValueError, match="no module named 'no_such_module_here'"):
        sot.translate(two_ops, trace_modules=["no_such_module_here"])


def test_register_backend_plugs_a_backend_in():
    from framehook.sot._numpy_backend import NumpyBackend

    compiled = []

    class Counting:
        """A backend of its own, with ``compile`` only."""

        def __init__(self):
            self.numpy = NumpyBackend()

        def __getattr__(self, name):
            if name == "compile_with_examples":
                raise AttributeError(name)
            return getattr(self.numpy, name)

        def compile(self, graph):
            compiled.append(graph)
            return self.numpy.compile(graph)

    class Specialising(NumpyBackend):
        def compile_with_examples(self, graph, examples):
            compiled.append((graph, examples))
            return super().compile_with_examples(graph, examples)

    sot.register_backend("counting", Counting())
    fast = sot.translate(two_ops, backend="counting")
    fast(np.ones(2), np.ones(2))
    inputs, nodes, outputs = compiled[0]
    assert inputs == 2 and len(nodes) == 2 and len(outputs) == 1
    # A backend with compile_with_examples is given the inputs' values while translating.
    sot.register_backend("specialising", Specialising())
    fast = sot.translate(two_ops, backend="specialising")
    fast(np.ones(2), np.full(2, 3.0))
    (inputs, nodes, outputs), examples = compiled[1]
    assert inputs == 2 and [e.tolist() for e in examples] == [[1.0, 1.0], [3.0, 3.0]]
    # Or the backend object itself, unregistered.
    fast = sot.translate(two_ops, backend=Counting())
    assert (fast(np.ones(2), np.ones(2)) == two_ops(np.ones(2), np.ones(2))).all()
    assert len(compiled) == 3 and sot.stats(fast).graphs == 1


def test_operator_functions_run_as_the_operations_they_name():
    import operator

    def f(x, d, items):
        a = operator.add(x, 1)
        b = operator.mul(a, operator.getitem(items, 1))
        operator.setitem(d, "k", 4)
        operator.setitem(d, "gone", 0)
        operator.delitem(d, "gone")
        if operator.contains(items, 2) and operator.not_(operator.is_(d, None)):
            b = operator.truediv(b, d["k"])
        return operator.neg(b), operator.lt(1, 2), operator.iadd([1], [2]), operator.truth(items)

    fast = sot.translate(f, full_graph=True)
    for _ in range(2):
        got, want = fast(np.ones(2), {}, [1, 2]), f(np.ones(2), {}, [1, 2])
        np.testing.assert_array_equal(got[0], want[0])
        assert got[1:] == want[1:]
    stats = sot.stats(fast)
    assert (stats.translations, stats.graphs, stats.ops_captured) == (1, 1, 4), stats


def test_functools_reduce_is_followed_through_its_calls():
    import functools
    import operator

    def f(x, weights):
        total = functools.reduce(lambda acc, w: acc + w * x, weights, 0)
        return total, functools.reduce(operator.mul, [x, x, 2.0])

    fast = sot.translate(f, full_graph=True)
    for _ in range(2):
        for got, want in zip(fast(np.ones(2), [1, 2, 3]), f(np.ones(2), [1, 2, 3])):
            np.testing.assert_array_equal(got, want)
    stats = sot.stats(fast)
    assert (stats.translations, stats.graphs, stats.ops_captured) == (1, 1, 8), stats
    with pytest.raises(TypeError) as eager:
        functools.reduce(operator.add, [])
    with pytest.raises(TypeError, match=re.escape(str(eager.value))):
        sot.translate(lambda items: functools.reduce(operator.add, items), full_graph=True)([])


def test_attributes_of_a_namedtuple_are_read_without_a_break():
    import collections

    Pair = collections.namedtuple("Pair", "a b")

    def f(x, pair):
        return x * pair.a + pair.b, pair.a

    fast = sot.translate(f, full_graph=True)
    for pair in (Pair(2.0, 3.0), Pair(5.0, 1.0)):
        got, want = fast(np.ones(2), pair), f(np.ones(2), pair)
        np.testing.assert_array_equal(got[0], want[0])
        assert got[1] == want[1]
    stats = sot.stats(fast)
    assert stats.graph_breaks == [] and stats.graphs == stats.translations >= 1, stats


def test_a_builtin_types_method_called_through_its_class_is_computed_as_the_bound_call():
    def f(x, text):
        parts = str.split("1,2,3", ",")
        return x * len(parts) + int.bit_length(7), str.upper(text)

    fast = sot.translate(f, full_graph=True)
    for text in ("ab", "ab", "cd"):
        got, want = fast(np.ones(2), text), f(np.ones(2), text)
        np.testing.assert_array_equal(got[0], want[0])
        assert got[1] == want[1]
    stats = sot.stats(fast)
    # The text is guarded by value: a new one is a new translation, never a stale result.
    assert (stats.translations, stats.graphs, stats.graph_breaks) == (2, 2, []), stats


def test_dict_popitem_and_fromkeys_make_dicts_in_the_translation():
    def popitem(x, y):
        z = {1: x, 2: y + 1, 3: y}
        last = z.popitem()
        return z, last

    def fromkeys(x, y):
        return dict.fromkeys([x, y], 1), dict.fromkeys((1, 2)), dict.fromkeys([x, x])

    for function, args, ops in ((popitem, (1, np.ones(2)), 1), (fromkeys, (1, 2), 0)):
        fast = sot.translate(function, full_graph=True)
        for _ in range(2):
            assert repr(fast(*args)) == repr(function(*args))
        stats = sot.stats(fast)
        assert (stats.translations, stats.ops_captured, stats.graph_breaks) == (1, ops, []), stats


def test_sequence_index_count_and_remove_match_by_identity_then_equality():
    def by_identity(x, t):
        z = (t, x, t)
        items = [t, x, t]
        items.remove(t)  # found first, by identity: t == x is never asked
        return z.index(t), (x, x, 2, 1).count(x), [x, 2, x].index(2), items, t * 2

    def from_the_frame(pair, x):
        return pair.count(x), pair.index(x), x in pair

    fast = sot.translate(by_identity, full_graph=True)
    t = np.ones(2)
    got, want = fast(1, t), by_identity(1, t)
    assert got[:3] == want[:3] == (0, 3, 1)
    assert got[3][0] == 1 and got[3][1] is t and len(got[3]) == len(want[3]) == 2
    stats = sot.stats(fast)
    assert (stats.translations, stats.ops_captured, stats.graph_breaks) == (1, 1, []), stats

    fast = sot.translate(from_the_frame, full_graph=True)
    for pair, x in (((1, 2), 2), ((1, 2), 2), ((3, 4), 4)):
        assert fast(pair, x) == from_the_frame(pair, x)
    stats = sot.stats(fast)
    # Computed while translating: the items read are guarded, a pair of other values translated anew.
    assert (stats.translations, stats.cache_hits, stats.graph_breaks) == (2, 1, []), stats

    # Not found: the interpreter's own ValueError.
    def missing(x, items):
        return items.index(x)

    for args in ((5, [1, 2]), (5, (1, 2))):
        with pytest.raises(ValueError) as translated:
            sot.translate(missing)(*args)
        with pytest.raises(ValueError) as eager:
            missing(*args)
        assert str(translated.value) == str(eager.value)


def test_sequence_search_comparing_tensors_breaks_on_the_data_dependent_truth():
    def count_tensor(x, items):
        return items.count(x) + 1

    fast = sot.translate(count_tensor)
    a, b = np.ones(1), np.zeros(1)
    assert fast(a, (a, b, a)) == count_tensor(a, (a, b, a)) == 3
    breaks = sot.stats(fast).graph_breaks
    assert [b.reason for b in breaks] == ["data-dependent branch on a tensor's value"], breaks
    with pytest.raises(sot.GraphBreakError, match="data-dependent"):
        sot.translate(count_tensor, full_graph=True)(a, (a, b))

    # The break is at the call: the frame's own list is the one changed, once.
    def remove_tensor(items, x):
        items.append(x + 1)
        items.remove(x)
        return len(items)

    fast = sot.translate(remove_tensor)
    items = [b, a]
    assert fast(items, a) == 2
    assert len(items) == 2 and items[0] is b and items[1][0] == 2.0
    assert [b.reason for b in sot.stats(fast).graph_breaks] == ["data-dependent branch on a tensor's value"]


def test_truth_of_objects_runs_their_python_bool_or_len_in_the_translation():
    import operator

    class Plain:
        pass

    class WithBool:
        def __init__(self):
            self.on = False

        def __bool__(self):
            return self.on

    class WithLen:
        def __init__(self, items):
            self.items = items

        def __len__(self):
            return len(self.items)

    class WrongBool:
        def __bool__(self):
            return 1

    def truths(x, obj):
        y = x + 1 if obj else x - 1
        return y, bool(obj), operator.truth(obj), not obj

    fast = sot.translate(truths, full_graph=True)
    x = np.ones(2)
    with_bool, with_len = WithBool(), WithLen([])
    for objects in ((Plain(), with_bool, with_len), (with_bool, with_len)):
        for obj in objects:
            got, want = fast(x, obj), truths(x, obj)
            np.testing.assert_array_equal(got[0], want[0])
            assert got[1:] == want[1:]
        with_bool.on, with_len.items = True, [1]  # the same objects answer otherwise now
    stats = sot.stats(fast)
    # One translation per class, and per answer of the state the methods read.
    assert stats.graph_breaks == [] and stats.ops_captured == 5 and stats.translations == 5, stats

    # CPython's message: 3.15 reworded it.
    with pytest.raises(TypeError, match=r"__bool__ should return bool|__bool__\(\) must return a bool"):
        sot.translate(truths)(x, WrongBool())
    with pytest.raises(sot.GraphBreakError, match="its __bool__ gave a value CPython would check"):
        sot.translate(truths, full_graph=True)(x, WrongBool())


def test_namedtuples_of_tensors_made_in_the_translation_act_as_tuples():
    import collections

    Pair = collections.namedtuple("Pair", "a b")

    def f(x):
        y = Pair(x + 1, x * 2)
        first, second = y
        total = y.a + y[1] + first + second + sum(len(y) * v for v in y)
        return Pair(total, y.b), y._fields, isinstance(y, tuple), y[-2:][0]

    fast = sot.translate(f, full_graph=True)
    x = np.arange(3.0)
    for _ in range(2):
        got, want = fast(x), f(x)
        assert type(got[0]) is Pair and got[1:3] == want[1:3]
        for g, w in zip(got[0] + (got[3],), want[0] + (want[3],)):
            np.testing.assert_array_equal(g, w)
    stats = sot.stats(fast)
    assert (stats.translations, stats.graph_breaks) == (1, []), stats
    assert stats.ops_captured >= 8, stats


def test_an_enum_members_name_and_value_are_read_with_the_member_pinned():
    import enum

    class Color(enum.Enum):
        RED = 1
        BLUE = "b"

    def f(x, color):
        return x * 2, color.name, color.value

    fast = sot.translate(f, full_graph=True)
    for color in (Color.RED, Color.RED, Color.BLUE):
        got, want = fast(np.ones(2), color), f(np.ones(2), color)
        np.testing.assert_array_equal(got[0], want[0])
        assert got[1:] == want[1:]
    stats = sot.stats(fast)
    assert (stats.translations, stats.cache_hits, stats.graph_breaks) == (2, 1, []), stats


def test_objects_the_backend_constructs_are_made_again_by_the_generated_code():
    from framehook.sot._numpy_backend import NumpyBackend

    class Scaler:
        made = 0

        def __init__(self, factor, offset=0.0):
            Scaler.made += 1
            self.factor, self.offset = factor, offset

        def __call__(self, x):
            return x * self.factor + self.offset

    class Constructing(NumpyBackend):
        constructed_types = (Scaler,)

        def construct(self, cls, args, kwargs):
            return cls(*args, **kwargs) if cls is Scaler else None

    sot.register_backend("numpy-constructing", Constructing())

    def f(x):
        scale = Scaler(2.0, offset=1.0)
        return scale(x), scale

    fast = sot.translate(f, backend="numpy-constructing", full_graph=True)
    x = np.arange(3.0)
    made = []
    for _ in range(2):
        (y, scale), (want, _) = fast(x), f(x)
        np.testing.assert_array_equal(y, want)
        assert type(scale) is Scaler and (scale.factor, scale.offset) == (2.0, 1.0)
        made.append(scale)
    assert made[0] is not made[1]  # a new one per call, as eager code makes
    # Once while translating, then once per call by the generated code (and once per eager call).
    assert Scaler.made == 1 + 2 + 2
    stats = sot.stats(fast)
    assert (stats.translations, stats.ops_captured, stats.graph_breaks) == (1, 2, []), stats


def test_lists_and_tuples_from_the_frame_concatenate_by_their_items():
    def f(xs, ys, pair):
        joined = sum((xs, ys), xs)  # xs + xs + ys
        return joined, pair + (ys[0],), [t * 2 for t in joined]

    fast = sot.translate(f, full_graph=True)
    a, b = np.ones(2), np.zeros(2)
    for xs, ys in (([a], [b]), ([a], [b]), ([a, b], [b])):
        got, want = fast(xs, ys, (1,)), f(xs, ys, (1,))
        assert [id(t) for t in got[0]] == [id(t) for t in want[0]]
        assert got[1][0] == 1 and got[1][1] is want[1][1]
        for g, w in zip(got[2], want[2]):
            np.testing.assert_array_equal(g, w)
    stats = sot.stats(fast)
    # A list's length is guarded, not its contents' identities.
    assert (stats.translations, stats.graph_breaks) == (2, []), stats


def test_other_attributes_of_a_tensor_argument_are_read_from_it():
    def f(x):
        y = x * 2
        if x.strides[0] > 8:  # the argument's own strides (its example is a contiguous copy)
            y = y + 1
        return y, x.strides, x.flags.c_contiguous

    fast = sot.translate(f, full_graph=True)
    column_major = np.ones((2, 3)).T
    for x in (column_major, column_major.copy(), column_major):
        got, want = fast(x), f(x)
        np.testing.assert_array_equal(got[0], want[0])
        assert got[1:] == want[1:]
    stats = sot.stats(fast)
    # The strides read are guarded: one translation per layout.
    assert (stats.translations, stats.cache_hits, stats.graph_breaks) == (2, 1, []), stats


def test_a_list_argument_passed_to_an_operation_is_passed_by_its_items():
    def f(xs, shape):
        xs.append(xs[0] + 1)  # the list as the translation holds it is the one passed
        return np.concatenate(xs) * 2, np.zeros(shape)

    fast = sot.translate(f, full_graph=True)
    for n in (2, 2, 3):
        xs, ys = [np.ones(n), np.zeros(3)], [np.ones(n), np.zeros(3)]
        got, want = fast(xs, [2, n]), f(ys, [2, n])
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)
        assert len(xs) == len(ys) == 3  # the caller's list is changed as eager code changes it
    stats = sot.stats(fast)
    # The shape list's numbers are guarded (constants of the graph), the tensors are inputs.
    assert (stats.translations, stats.cache_hits, stats.graph_breaks) == (2, 1, []), stats


def test_a_backends_meta_methods_are_computed_from_the_guarded_meta_attributes():
    from framehook.sot._numpy_backend import NumpyBackend

    class WithMetaMethods(NumpyBackend):
        # An array's length is its shape's first number.
        meta_methods = ("__len__",)
        conversions = tuple(name for name in NumpyBackend.conversions if name != "__len__")

    sot.register_backend("numpy-meta-methods", WithMetaMethods())

    def f(x):
        return x * 2 if x.__len__() > 2 else x * 3

    fast = sot.translate(f, backend="numpy-meta-methods", full_graph=True)
    for n in (3, 3, 2):
        np.testing.assert_array_equal(fast(np.ones(n)), f(np.ones(n)))
    stats = sot.stats(fast)
    # The shape's guard tells the lengths apart: no op for the method, no break.
    assert (stats.translations, stats.ops_captured, stats.graph_breaks) == (2, 2, []), stats


def test_an_lru_cached_function_is_inlined_where_its_call_changes_nothing_outside_it():
    import functools

    seen = []

    @functools.lru_cache
    def width(n):
        return n * 2

    @functools.lru_cache
    def noted(n):
        seen.append(n)  # a cache hit would not append: the call runs as it is
        return n

    def pure(x, n):
        return x * width(n) + width(3)

    def noting(x, n):
        return x * noted(n)

    x = np.ones(2)
    fast = sot.translate(pure, full_graph=True)
    for n in (1, 1, 2):
        np.testing.assert_array_equal(fast(x, n), pure(x, n))
    stats = sot.stats(fast)
    assert (stats.translations, stats.cache_hits, stats.graph_breaks) == (2, 1, []), stats

    fast = sot.translate(noting)
    for n in (1, 1, 2):
        np.testing.assert_array_equal(fast(x, n), noting(x, n))
    assert seen == [1, 2]  # as eager calls alone would leave it: each n noted once
    reasons = [b.reason for b in sot.stats(fast).graph_breaks]
    assert reasons and all("lru_cache'd function" in r for r in reasons), reasons

    # An argument the cache cannot hash: the call raises as eager code's does.
    def unhashable(x):
        return x * width([1])

    with pytest.raises(TypeError, match="unhashable type: 'list'"):
        sot.translate(unhashable)(x)
    with pytest.raises(sot.GraphBreakError, match="an argument it cannot hash"):
        sot.translate(unhashable, full_graph=True)(x)


_MODE = ["fast"]


def current_mode():
    return _MODE[0]


def test_a_backends_guarded_function_is_read_while_translating_and_called_by_the_guards():
    from framehook.sot._numpy_backend import NumpyBackend

    class Guarding(NumpyBackend):
        guarded_functions = (current_mode,)

    sot.register_backend("numpy-guarding", Guarding())

    def f(x):
        y = x * 2 if current_mode() == "fast" else x * 3
        return y, current_mode()

    fast = sot.translate(f, backend="numpy-guarding", full_graph=True)
    x = np.ones(2)
    try:
        for mode in ("fast", "fast", "slow", "fast"):
            _MODE[0] = mode
            got, want = fast(x), f(x)
            np.testing.assert_array_equal(got[0], want[0])
            assert got[1] == want[1] == mode
    finally:
        _MODE[0] = "fast"
    stats = sot.stats(fast)
    # One graph per mode the branch saw: the guards called current_mode() again, and failed
    # once, when it changed.
    assert (stats.graphs, stats.guard_failures, stats.graph_breaks) == (2, 1, []), stats


def test_int_enum_members_and_str_subclasses_compare_as_their_values_do():
    import enum

    class Direction(enum.IntEnum):
        UP = 1
        DOWN = 2

    class Name(str):
        pass

    def f(x, a, b, name):
        y = x * 2 if a == b else x * 3
        return (y + 1 if a != 1 else y), name == "k", a < b

    fast = sot.translate(f, full_graph=True)
    name = Name("k")
    for a, b in ((Direction.UP, Direction.UP), (Direction.UP, Direction.DOWN), (Direction.UP, Direction.UP)):
        got, want = fast(np.ones(2), a, b, name), f(np.ones(2), a, b, name)
        np.testing.assert_array_equal(got[0], want[0])
        assert got[1:] == want[1:]
    stats = sot.stats(fast)
    assert (stats.translations, stats.cache_hits, stats.graph_breaks) == (2, 1, []), stats


def test_a_namedtuple_of_known_values_is_made_in_the_translation():
    import collections

    Pair = collections.namedtuple("Pair", "a b")
    Quartet = collections.namedtuple("Quartet", "a b c d", defaults=(3, 4))

    def f(x, k):
        p = Pair(k, 2)
        q = Quartet(1, k)
        return x * p.a + q.d, p, q._fields, p[1]

    fast = sot.translate(f, full_graph=True)
    for k in (1, 1, 5):
        got, want = fast(np.ones(2), k), f(np.ones(2), k)
        np.testing.assert_array_equal(got[0], want[0])
        assert got[1:] == want[1:] and type(got[1]) is Pair
    stats = sot.stats(fast)
    assert (stats.translations, stats.cache_hits, stats.graph_breaks) == (2, 1, []), stats


def test_iteration_runs_a_python_iter_and_reads_ordered_dicts_in_their_order():
    import collections

    class Bag:
        def __init__(self, table):
            self.table = table

        def __iter__(self):
            return iter(self.table.values())

    def total(x, bag):
        for scale in bag:
            x = x * scale
        return x, list(bag.table)

    class Made:
        def __init__(self):
            self.items = [1, 2]

        def __iter__(self):
            return iter(self.items)

    def made_here(x):
        for item in Made():  # an object the translation makes, iterated through its __iter__
            x = x + item
        return x

    fast = sot.translate(made_here, full_graph=True)
    np.testing.assert_array_equal(fast(np.ones(2)), made_here(np.ones(2)))
    assert sot.stats(fast).ops_captured == 2

    fast = sot.translate(total, full_graph=True)
    table = collections.OrderedDict(a=2.0, b=3.0, c=5.0)
    table.move_to_end("a")  # its own order, not the underlying dict's
    bag, x = Bag(table), np.ones(2)
    for _ in range(2):
        got, want = fast(x, bag), total(x, bag)
        np.testing.assert_array_equal(got[0], want[0])
        assert got[1] == want[1] == ["b", "c", "a"]
    stats = sot.stats(fast)
    assert (stats.translations, stats.graphs, stats.ops_captured) == (1, 1, 3), stats
    table.move_to_end("b")  # the same keys in another order: the guard fails
    assert fast(x, bag)[1] == ["c", "a", "b"]
    assert sot.stats(fast).guard_failures == 1


def test_an_error_of_a_graph_reaches_the_caller_of_a_translated_function_used_once():
    """The translated function is freed as the error unwinds (the callable of the call that
    raised); freeing it must leave the error pending (it was lost: a SystemError)."""
    from framehook.sot._numpy_backend import NumpyBackend

    class Failing(NumpyBackend):
        def compile_with_examples(self, graph, examples):
            def run(*inputs):
                raise ValueError("the graph failed")

            return run

        def writes_operands(self, graph, examples):
            return True  # else the frame runs again untranslated where the graph raises

    sot.register_backend("failing", Failing())
    for _ in range(2):
        with pytest.raises(ValueError, match="the graph failed"):
            sot.translate(two_ops, backend="failing")(np.ones(2), np.ones(2))


@pytest.mark.parametrize(
    ("container", "mutate"),
    [
        ([1, 2], lambda c: c.append(3)),
        ({"a": 1}, lambda c: c.update(b=2)),
        ({1, 2}, lambda c: c.add(3)),
    ],
    ids=["list", "dict", "set"],
)
def test_a_container_mutated_between_calls_is_not_stale(container, mutate):
    def f(x, c):
        return x + len(c), 3 in c, str(c) if type(c) is not set else None

    fast = sot.translate(f, full_graph=True)
    x = np.ones(2)
    for _ in range(2):
        got, want = fast(x, container), f(x, container)
        np.testing.assert_array_equal(got[0], want[0])
        assert got[1:] == want[1:]
        mutate(container)
    st = sot.stats(fast)
    # The same object with new contents: its contents guard fails, it is translated again.
    assert (st.translations, st.guard_failures) == (2, 1)


def test_a_container_holding_objects_used_as_a_value_breaks():
    def f(x, items):
        return x * 2, str(items)

    fast = sot.translate(f)
    items = [np.ones(1)]
    for _ in range(2):
        got, want = fast(np.ones(2), items), f(np.ones(2), items)
        np.testing.assert_array_equal(got[0], want[0])
        assert got[1] == want[1]
        items.append(np.zeros(1))
    reasons = [b.reason for b in sot.stats(fast).graph_breaks]
    assert reasons and "holding objects" in reasons[0]


def test_a_callee_whose_kwdefaults_is_a_dict_subclass_breaks_and_hits_the_cache():
    class Defaults(dict):
        pass

    def scale(x, *, k=2.0):
        return x * k

    scale.__kwdefaults__ = Defaults(k=3.0)

    def f(x):
        return scale(x + 1) - 1

    fast = sot.translate(f)
    for _ in range(3):
        np.testing.assert_array_equal(fast(np.ones(2)), f(np.ones(2)))
    st = sot.stats(fast)
    assert [b.reason for b in st.graph_breaks] == ["a function whose __kwdefaults__ is a dict subclass"]
    assert st.cache_hits >= 2 and st.recompilations == 0


def _make_tagged_scale(x):
    def scale(v: "np.ndarray", bias=0.0, *, k: float = 2.0) -> "np.ndarray":
        return v * k + bias

    scale.tag = "made"  # an attribute stored on a function the translation made: a break
    return scale, scale(x)


def _make_scale_with_new_kwdefaults(x):
    def scale(v, *, k=2.0):
        return v * k

    scale.__kwdefaults__ = {"k": 3.0}
    return scale(x)


def test_a_function_made_while_translating_is_one_object_with_all_make_function_gave_it():
    # Up to its break the generated code makes the function once (the attribute store and
    # the rest of the frame see one object), with its annotations, keyword-only defaults
    # and qualified name.
    fast = sot.translate(_make_tagged_scale)
    for _ in range(2):
        made, result = fast(np.ones(2))
        expected, eager_result = _make_tagged_scale(np.ones(2))
        assert made.tag == "made"
        for attribute in ("__annotations__", "__kwdefaults__", "__defaults__", "__qualname__", "__name__"):
            assert getattr(made, attribute) == getattr(expected, attribute), attribute
        np.testing.assert_array_equal(result, eager_result)
    st = sot.stats(fast)
    assert [b.reason for b in st.graph_breaks] == ["attribute assignment on a value made by the translated code"]
    assert st.graphs >= 1 and st.ops_captured >= 2 and st.fallbacks == []

    fast = sot.translate(_make_scale_with_new_kwdefaults)
    np.testing.assert_array_equal(fast(np.ones(2)), np.full(2, 3.0))
    st = sot.stats(fast)
    assert [b.reason for b in st.graph_breaks] == ["attribute assignment on a value made by the translated code"]
    assert st.graphs >= 1 and st.ops_captured >= 1


def _variables_after_a_break(x):
    a = [x, x]
    sep = os.getcwd()  # a function written in C: a break

    b = (sep, len(a))
    return sorted(vars()), sorted(locals()), b


def test_a_resume_function_shows_only_the_originals_variables():
    fast = sot.translate(_variables_after_a_break)
    assert fast(3) == _variables_after_a_break(3)
    # The resume function runs its own code from the call on (vars() reads its frame).
    st = sot.stats(fast)
    assert [b.reason for b in st.graph_breaks] == ["unsupported call: getcwd"]
    assert [f.reason for f in st.fallbacks] == ["vars() reads the frame that calls it"]


class _Counter:
    def __init__(self):
        self.count = 0

    def __repr__(self):
        return f"Counter({self.count})"

    def __len__(self):
        return self.count


def _describe_counter(x, counter):
    return x * len(counter), repr(counter), str(counter), f"{counter}", f"{counter!r:>12}"


def test_builtins_read_an_objects_state_as_each_call_holds_it():
    # One object each call, its state changed between calls: its Python __repr__ and
    # __len__ run in the translation (inlined), not once while translating.
    fast = sot.translate(_describe_counter)
    counter = _Counter()
    for count in range(1, 4):
        counter.count = count
        got, want = fast(np.ones(2), counter), _describe_counter(np.ones(2), counter)
        np.testing.assert_array_equal(got[0], want[0])
        assert got[1:] == want[1:] == ((f"Counter({count})",) * 3 + (f"{'Counter(' + str(count) + ')':>12}",))
    st = sot.stats(fast)
    assert st.graph_breaks == [] and st.fallbacks == [] and st.graphs == st.translations
    assert st.translations <= 3  # a guard on the count (the same count hits the cache)
    assert fast(np.ones(2), counter)[1] == "Counter(3)" and sot.stats(fast).cache_hits >= 1


class _Logged:
    def __init__(self):
        self.log = []

    def __radd__(self, other):
        self.log.append("__radd__")
        return other + 1

    def __neg__(self):
        self.log.append("__neg__")
        return -1

    def __contains__(self, item):
        self.log.append("__contains__")
        return True


def _operators_of(x, o):
    return x + (1 + o), -o, 2 in o


def test_operators_on_an_object_run_its_methods_on_every_call():
    fast = sot.translate(_operators_of)
    eager_object, translated_object = _Logged(), _Logged()
    for _ in range(3):
        got, want = fast(np.ones(2), translated_object), _operators_of(np.ones(2), eager_object)
        np.testing.assert_array_equal(got[0], want[0])
        assert got[1:] == want[1:]
    assert translated_object.log == eager_object.log
    st = sot.stats(fast)
    assert st.graph_breaks and all("may answer otherwise on a later call" in b.reason for b in st.graph_breaks)
    assert st.graphs >= 1 and st.fallbacks == []


def _any_with_a_walrus(x, numbers):
    found = any((last := n) == 1 for n in numbers)
    return x + last, found


def test_any_and_all_stop_at_the_first_deciding_item():
    fast = sot.translate(_any_with_a_walrus)
    for _ in range(2):
        got, want = fast(np.ones(2), [1, 2, 3]), _any_with_a_walrus(np.ones(2), [1, 2, 3])
        np.testing.assert_array_equal(got[0], want[0])
        assert got[1] == want[1] is True
    st = sot.stats(fast)
    assert st.graph_breaks == [] and st.fallbacks == [] and st.graphs == 1 and st.cache_hits == 1


def _sums(x, numbers):
    return x + sum(numbers), sum([0.1] * 10), sum([x, x], 1.0)


def test_sum_is_cpythons_sum_of_values_and_adds_tensors_in_the_graph():
    # 3.12's sum() of floats compensates rounding: 1.0 here, where adding one by one gives
    # 0.9999999999999999.
    fast = sot.translate(_sums)
    got, want = fast(np.ones(2), [0.1] * 10), _sums(np.ones(2), [0.1] * 10)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
    assert got[1] == want[1] and type(got[1]) is float
    st = sot.stats(fast)
    assert st.graph_breaks == [] and st.graphs == 1 and st.ops_captured >= 3


class _Frozen:
    def __setattr__(self, name, value):
        raise AttributeError(f"frozen: {name}")


def _store_on_a_frozen_object(x):
    y = x + 1
    made = _Frozen()
    try:
        made.value = 1
    except AttributeError as error:
        return y, str(error), hasattr(made, "value")
    return x, "stored", hasattr(made, "value")


def test_an_object_made_while_translating_stores_through_its_classs_setattr():
    fast = sot.translate(_store_on_a_frozen_object)
    got, want = fast(np.ones(2)), _store_on_a_frozen_object(np.ones(2))
    np.testing.assert_array_equal(got[0], want[0])
    assert got[1:] == want[1:] == ("frozen: value", False)
    st = sot.stats(fast)
    # The class's __setattr__ runs inlined: it raises where STORE_ATTR calls it.
    assert st.graph_breaks == [] and st.fallbacks == []
    assert st.graphs == 1 and st.ops_captured == 1


class _Plain:
    pass


def _exceptions_initialised_again(x):
    plain = ValueError("plain")
    keyed = ImportError("keyed", name="module", path="file")
    before = (plain.args, keyed.name, keyed.path)
    plain.__init__()
    keyed.__init__()
    return x + 1, before, (plain.args, keyed.args, keyed.name, keyed.path)


def test_an_exception_made_while_translating_keeps_its_keywords_and_its_own_methods():
    # `plain.__init__` binds to the exception the generated code makes (not the one made
    # while translating); ImportError's keywords are not lost to `type(e)(*e.args)`.
    fast = sot.translate(_exceptions_initialised_again)
    got, want = fast(np.ones(2)), _exceptions_initialised_again(np.ones(2))
    np.testing.assert_array_equal(got[0], want[0])
    assert got[1:] == want[1:] == ((("plain",), "module", "file"), ((), (), None, None))
    assert sot.stats(fast).graphs >= 1


def _make_a_class(x):
    made = type("Made", (), {})
    return x + 1, made.__module__


def test_a_class_made_by_type_takes_the_functions_module_not_its_callers():
    fast = sot.translate(_make_a_class)
    caller_globals = {"fast": fast, "x": np.ones(2), "__name__": "a_caller_elsewhere"}
    got = eval("fast(x)", caller_globals)
    np.testing.assert_array_equal(got[0], np.full(2, 2.0))
    assert got[1] == _make_a_class(np.ones(2))[1] == __name__
    assert [b.reason for b in sot.stats(fast).graph_breaks] == [
        "type() making a class (it reads the calling frame's globals)"
    ]


def _counted(log, n):
    for i in range(n):
        log.append(i)
        yield i


def _pull_generators_lazily(x):
    log = []
    pairs = list(zip(_counted(log, 5), [10, 20]))  # pulls a third item, then stops
    first = next(iter(enumerate(_counted(log, 3), 1)))  # pulls one
    evens = list(filter(lambda v: v % 2 == 0, _counted(log, 4)))
    products = list(map(lambda a, b: a * b, [1, 2, 3], _counted(log, 2)))
    return x + len(log), pairs, first, evens, products, log


def test_zip_enumerate_map_and_filter_pull_their_iterators_as_cpython_does():
    fast = sot.translate(_pull_generators_lazily)
    for _ in range(2):
        got, want = fast(np.ones(2)), _pull_generators_lazily(np.ones(2))
        np.testing.assert_array_equal(got[0], want[0])
        assert got[1:] == want[1:]
        assert got[-1] == [0, 1, 2, 0, 0, 1, 2, 3, 0, 1]
    st = sot.stats(fast)
    assert st.graph_breaks == [] and st.fallbacks == [] and st.graphs == 1 and st.cache_hits == 1


def _describe_plainly(x, o):
    return x + 1, repr(o)  # object's repr: folded, the object pinned by identity


def test_an_object_pinned_by_identity_is_not_kept_alive_by_the_guard():
    import gc
    import weakref

    fast = sot.translate(_describe_plainly)
    pinned = _Plain()
    probe = weakref.ref(pinned)
    for _ in range(2):
        assert fast(np.ones(2), pinned)[1] == repr(pinned)
    assert sot.stats(fast).cache_hits == 1 and sot.stats(fast).graph_breaks == []
    del pinned
    gc.collect()
    assert probe() is None
    # Another object (maybe at the same address) fails the guard and is translated for.
    other = _Plain()
    assert fast(np.ones(2), other)[1] == repr(other)
    assert sot.stats(fast).guard_failures == 1


def _bases_counted(x, cls):
    return x + len(cls.__mro__[1:-1])  # the MRO as a value: a tuple of classes


@pytest.mark.skipif(FREE_THREADED and sys.version_info[:2] == (3, 13),
                    reason="free-threaded 3.13 never frees a class once a thread has run (its deferred "
                           "reference counts are made immortal, as functions', gh-117696), translated or not")
def test_a_tuple_of_classes_read_as_a_value_is_not_kept_alive_by_the_guard():
    # Found on attrs (`test_no_references_to_original`): the guard pinned a class's
    # `__mro__` tuple strongly, so a class replaced by a decorator stayed a subclass.
    import gc
    import weakref

    fast = sot.translate(_bases_counted)

    class Base:
        pass

    class Derived(Base):
        pass

    probe = weakref.ref(Derived)
    for _ in range(2):
        np.testing.assert_array_equal(fast(np.ones(2), Derived), np.ones(2) + 1)
    assert sot.stats(fast).cache_hits == 1 and sot.stats(fast).graphs == 1
    del Derived
    gc.collect()
    assert probe() is None and Base.__subclasses__() == []

    class Other(Base):
        pass

    np.testing.assert_array_equal(fast(np.ones(2), Other), np.ones(2) + 1)
    assert sot.stats(fast).guard_failures == 1


def _first_of_a_huge_range(x):
    positions = iter(range(3, sys.maxsize, 2))
    first, second = next(positions), next(positions)
    pairs = list(zip(range(sys.maxsize), "ab"))
    return x + first + second, pairs


def test_a_range_is_iterated_lazily_however_long():
    fast = sot.translate(_first_of_a_huge_range)
    for _ in range(2):
        got, want = fast(np.ones(2)), _first_of_a_huge_range(np.ones(2))
        np.testing.assert_array_equal(got[0], want[0])
        assert got[1] == want[1] == [(0, "a"), (1, "b")]
    st = sot.stats(fast)
    assert st.graph_breaks == [] and st.graphs == 1 and st.cache_hits == 1


def _iterator_used_twice_across_a_break(x, items):
    it = iter(items)
    numbers = iter(range(10, 20, 2))
    numbers.__setstate__(2)  # a break; the iterator is the one read after it
    alias = it
    print(end="")  # a break
    next(alias)
    return x + 1, list(it), list(numbers), type(numbers).__name__


def test_an_iterator_held_in_two_places_across_a_break_is_one_iterator():
    fast = sot.translate(_iterator_used_twice_across_a_break)
    for _ in range(2):
        got, want = fast(np.ones(2), [1, 2, 3]), _iterator_used_twice_across_a_break(np.ones(2), [1, 2, 3])
        np.testing.assert_array_equal(got[0], want[0])
        assert got[1:] == want[1:] == ([2, 3], [14, 16, 18], "range_iterator")
    st = sot.stats(fast)
    assert st.graphs >= 1 and any("print" in b.reason for b in st.graph_breaks)


def _empty_frozensets(x):
    made = [frozenset(), frozenset([]), frozenset(()), frozenset("")]
    return x + 1, [f is made[0] for f in made]


def test_frozensets_made_while_translating_are_the_builtins():
    # Before 3.10 the empty frozenset is a singleton: one id, as without hooks.
    fast = sot.translate(_empty_frozensets)
    got, want = fast(np.ones(2)), _empty_frozensets(np.ones(2))
    np.testing.assert_array_equal(got[0], want[0])
    assert got[1] == want[1]
    assert sot.stats(fast).graphs == 1


def _who_called(_):
    return sys._getframe(1).f_code.co_name


class _Callees:
    who_called = staticmethod(_who_called)


def _break_inside_the_arguments(x):
    y = x + 1
    # A method-style call (LOAD_METHOD leaves its NULL slot) set up when the break comes.
    return y, _Callees().who_called(print(end=""))


def test_a_call_resumed_after_a_break_in_its_arguments_has_the_functions_frame_as_caller():
    # The call's NULL slot, handed to the resume function, is stood for on 3.9/3.10 by a
    # native callable: no frame of its own comes between caller and callee.
    fast = sot.translate(_break_inside_the_arguments)
    got = fast(np.ones(2))
    np.testing.assert_array_equal(got[0], np.full(2, 2.0))
    assert got[1] == "_break_inside_the_arguments"
    st = sot.stats(fast)
    assert st.graphs >= 1 and any("print" in b.reason for b in st.graph_breaks)


def _dropped_before_a_call_that_collects(x):
    import gc
    import weakref

    held = _Plain()
    probe = weakref.ref(held)
    container = {held, 1}
    held.cycle = iter(container)  # a cycle through an iterator the translation made
    del held, container
    gc.collect()  # a break: the generated code runs the call with the frame as it is here
    return x + 1, probe() is None


def test_a_call_run_at_a_break_finds_what_the_frame_dropped_gone():
    fast = sot.translate(_dropped_before_a_call_that_collects)
    for _ in range(2):
        got = fast(np.ones(2))
        np.testing.assert_array_equal(got[0], np.full(2, 2.0))
        assert got[1] is True
    st = sot.stats(fast)
    assert any("collect" in b.reason for b in st.graph_breaks) and st.graphs >= 1


def _sum_over(x, numbers):
    total = 0
    for n in numbers:
        total += n
    return x + total


def test_a_range_from_the_frame_is_guarded_by_its_value():
    fast = sot.translate(_sum_over)
    for numbers in (range(4), range(4), range(2, 10, 3), range(4)):
        np.testing.assert_array_equal(fast(np.ones(2), numbers), _sum_over(np.ones(2), numbers))
    st = sot.stats(fast)
    assert st.graph_breaks == [] and st.cache_hits == 2 and st.translations == 2


class _SetsThroughSuper:
    def __setattr__(self, name, value):
        if name == "frozen":
            raise AttributeError(name)
        super().__setattr__(name, value)  # object.__setattr__, bound to self


def _store_through_super(x, target):
    target.tag = "set"
    return x + 1, target.tag


def test_super_gives_objects_c_methods_bound():
    fast = sot.translate(_store_through_super)
    for _ in range(2):
        target = _SetsThroughSuper()
        got = fast(np.ones(2), target)
        np.testing.assert_array_equal(got[0], np.full(2, 2.0))
        assert got[1] == "set" and target.__dict__ == {"tag": "set"}
    assert sot.stats(fast).graphs >= 1


class _Base:
    def scaled(self, x):
        return x * 2


class _SuperAfterABreak(_Base):
    def scaled(self, x):
        y = x + 1
        print(end="")  # a graph break: the rest runs in a resume function
        parent = super()  # zero-argument: reads the frame's first local and __class__
        return parent.scaled(y), super().scaled(y) + 1


def test_super_reads_plain_class_attributes_and_a_super_object_passed_in():
    class A:
        a = 1

        def scaled(self, x):
            return x * 3

    class B(A):
        a = 111

        def scaled(self, x):
            return x * 5

    class C(B):
        def values(self, x):
            return super().a + x, super(B, self).a + x

    def through(spr, x):
        return spr.scaled(x) + 1

    x = np.ones(2)
    fast = sot.translate(C().values, full_graph=True)
    for got, want in zip(fast(x), C().values(x)):
        np.testing.assert_array_equal(got, want)
    fast = sot.translate(through, full_graph=True)
    c = C()
    for spr in (super(B, c), super(C, c), super(B, c)):
        np.testing.assert_array_equal(fast(spr, x), through(spr, x))
    stats = sot.stats(fast)
    # The super object's class is guarded: one translation per class it starts after.
    assert (stats.translations, stats.cache_hits, stats.graph_breaks) == (2, 1, []), stats


def test_zero_argument_super_in_a_resume_function_finds_the_first_argument():
    obj = _SuperAfterABreak()
    fast = sot.translate(obj.scaled)
    for _ in range(2):
        got = fast(np.ones(2))
        for have, want in zip(got, obj.scaled(np.ones(2))):
            np.testing.assert_array_equal(have, want)
    st = sot.stats(fast)
    assert st.graphs >= 1
    assert [b.reason for b in st.graph_breaks] and all("print" in b.reason for b in st.graph_breaks)


class _InitOnly:
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)


def _object_init_messages(x):
    messages = []
    for make in (_Plain, _InitOnly):
        try:
            make().__init__(42)
            messages.append(None)
        except TypeError as error:
            messages.append(str(error))
    # Without arguments, object.__init__ does nothing.
    return x * 2.0, messages, _InitOnly().__init__()


def test_object_init_of_a_made_object_raises_cpythons_errors_for_arguments():
    fast = sot.translate(_object_init_messages)
    x = np.ones(2)
    expected = _object_init_messages(x)
    assert expected[1] == [
        "_Plain.__init__() takes exactly one argument (the instance to initialize)",
        "object.__init__() takes exactly one argument (the instance to initialize)",
    ]
    for _ in range(2):
        got = fast(x)
        np.testing.assert_array_equal(got[0], expected[0])
        assert got[1:] == expected[1:]
    st = sot.stats(fast)
    assert st.graphs == 1 and st.ops_captured == 1 and st.graph_breaks == [] and st.fallbacks == []


def _listed_through_a_module(x):
    import itertools

    y = x + 1
    # LOAD_METHOD of a module's function leaves a NULL slot (3.9/3.10: a substitute), which
    # the resume function after the break in the arguments receives.
    return y, list(itertools.compress(print(end="") or "ABCDEF", [1, 0, 1, 0, 1, 1]))


def test_a_null_slot_handed_over_a_break_is_read_as_the_null_it_stands_for():
    fast = sot.translate(_listed_through_a_module)
    for _ in range(2):
        got = fast(np.ones(2))
        np.testing.assert_array_equal(got[0], np.full(2, 2.0))
        assert got[1] == list("ACEF")
    st = sot.stats(fast)
    assert st.graphs >= 1 and all("_sot_call_with" not in b.reason for b in st.graph_breaks)


def _call_after_new_defaults(x, scale):
    scale.__kwdefaults__ = {"k": 3.0}
    return scale(x)


def test_a_function_whose_defaults_the_frame_replaces_is_called_with_the_new_ones():
    def scale(v, *, k=2.0):
        return v * k

    fast = sot.translate(_call_after_new_defaults)
    np.testing.assert_array_equal(fast(np.ones(2), scale), np.full(2, 3.0))
    assert scale.__kwdefaults__ == {"k": 3.0}
    st = sot.stats(fast)
    assert [b.reason for b in st.graph_breaks] == ["assignment to __kwdefaults__ of a function"]
    assert st.graphs >= 1


def test_a_list_holding_itself_used_as_a_value_breaks():
    def f(x, items):
        return x + 1, str(items)

    items = [1]
    items.append(items)
    fast = sot.translate(f)
    got, want = fast(np.ones(2), items), f(np.ones(2), items)
    np.testing.assert_array_equal(got[0], want[0])
    assert got[1] == want[1] == "[1, [...]]"
    assert "holding objects" in sot.stats(fast).graph_breaks[0].reason


def test_recursion_and_deep_inlining_stay_correct():
    def fact(n):
        return 1 if n <= 1 else n * fact(n - 1)

    def f(x):
        return x * fact(30)

    fast = sot.translate(f)
    np.testing.assert_array_equal(fast(np.ones(2)), f(np.ones(2)))
    st = sot.stats(fast)
    # fact(30) is deeper than inlining goes: the call breaks the graph and runs as a call.
    # fact's own frames are translated too; the numbers they pass on change at every level,
    # so each recompiled resume function computes them in a graph of arithmetic only: f's
    # graph holds the one array op, and there is one graph per recompilation beside it.
    assert st.ops_captured == 1
    assert st.recompilations > 0 and st.graphs == 1 + st.recompilations
    assert st.graph_breaks and all("inlining too deep" in b.reason for b in st.graph_breaks)


@pytest.mark.skipif(not FREE_THREADED, reason="the free-threaded build runs threads in parallel")
def test_threads_translate_and_call_the_same_function():
    fast = sot.translate(two_ops)
    errors = []

    def worker(seed):
        rng = np.random.default_rng(seed)
        try:
            for _ in range(200):
                x, y = rng.random(3), rng.random(3)
                np.testing.assert_allclose(fast(x, y), two_ops(x, y))
        except Exception as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert sot.stats(fast).graphs >= 1


_CONFIG_LOCAL = threading.local()


def _scaled_by_the_threads_config(x):
    # scikit-learn reads its configuration from a thread-local (sklearn/_config.py).
    if not hasattr(_CONFIG_LOCAL, "config"):
        return x, "unset"
    return x * _CONFIG_LOCAL.config["scale"], _CONFIG_LOCAL.config


def test_a_thread_local_is_read_in_the_thread_that_calls():
    _CONFIG_LOCAL.config = {"scale": 2}
    fast = sot.translate(_scaled_by_the_threads_config, full_graph=True)
    x = np.ones(2)
    np.testing.assert_array_equal(fast(x)[0], x * 2)
    results, configs = {}, {"unset": None, "same": {"scale": 2}, "other": {"scale": 5}}

    def worker(name):
        if configs[name] is not None:
            _CONFIG_LOCAL.config = configs[name]
        results[name] = fast(x)

    for name in configs:
        thread = threading.Thread(target=worker, args=(name,))
        thread.start()
        thread.join()
    # Each thread computes with its own value: none, an equal one (the guards pass; the
    # object returned is that thread's), another one (the guards fail).
    assert results["unset"][1] == "unset"
    np.testing.assert_array_equal(results["unset"][0], x)
    assert results["same"][1] is configs["same"]
    np.testing.assert_array_equal(results["same"][0], x * 2)
    assert results["other"][1] is configs["other"]
    np.testing.assert_array_equal(results["other"][0], x * 5)
    assert fast(x)[1] is _CONFIG_LOCAL.config
    st = sot.stats(fast)
    assert st.graph_breaks == [] and st.guard_failures >= 2, st


def test_a_default_mutated_by_one_call_is_seen_by_the_next():
    class Counter:
        def bump(self, seen=[]):  # noqa: B006 - the shared default is the test
            seen.append(len(seen))
            return len(seen)

    def f(x, counter):
        return x * counter.bump()

    fast = sot.translate(f, full_graph=True)
    counter = Counter()
    for expected in (1.0, 2.0, 3.0):
        np.testing.assert_array_equal(fast(np.ones(2), counter), np.full(2, expected))
    np.testing.assert_array_equal(f(np.ones(2), counter), np.full(2, 4.0))
    assert Counter.bump.__defaults__[0] == [0, 1, 2, 3]
    assert sot.stats(fast).graph_breaks == []


def _copied_if_needed(x):
    y = np.array(x, copy=np._CopyMode.IF_NEEDED)
    return y + 1, y is x


def test_an_enum_member_passed_to_an_operation_is_guarded_with_its_value():
    # numpy reads the member's `.value` when called: one rebound must not reuse a graph
    # whose result the translation took for its operand (no copy made, here).
    fast = sot.translate(_copied_if_needed, full_graph=True)
    x = np.ones(2)
    assert fast(x)[1] is True
    member = np._CopyMode.IF_NEEDED
    saved = member._value_
    try:
        member._value_ = np._CopyMode.ALWAYS.value
        assert _copied_if_needed(x)[1] is False
        assert fast(x)[1] is False
    finally:
        member._value_ = saved
    assert fast(x)[1] is True
    st = sot.stats(fast)
    assert st.graph_breaks == [] and st.guard_failures >= 1, st


def test_generators_interleave_with_their_consumer():
    def produce(log, x):
        for i in range(3):
            log.append(("produced", i))
            yield x * i

    def consume(x, log):
        total = x * 0
        for value in produce(log, x):
            log.append("consumed")
            total = total + value
            if len(log) >= 4:  # stops the generator half-way
                break
        return total

    eager_log, translated_log = [], []
    want = consume(np.ones(2), eager_log)
    fast = sot.translate(consume, full_graph=True)
    np.testing.assert_array_equal(fast(np.ones(2), translated_log), want)
    assert translated_log == eager_log == [("produced", 0), "consumed", ("produced", 1), "consumed"]
    # x * 0 in consume, x * 0 and x * 1 in the generator, two additions: no step beyond the break.
    assert sot.stats(fast).ops_captured == 5


def assert_translated_with_breaks(fast):
    st = sot.stats(fast)
    assert st.own_frame == "translated" and st.translations >= 2 and st.graph_breaks, st
    assert st.fallbacks == []


def test_own_frame_says_how_the_function_itself_ran():
    def loops(items):
        i = 0
        while i < len(items):
            print(items[i], end="")  # a break in a loop of a frame read by locals(): eager
            i += 1
        return len(locals())

    fast = sot.translate(two_ops)
    assert sot.stats(fast).own_frame == ""
    fast(np.ones(2), np.ones(2))
    assert sot.stats(fast).own_frame == "translated"
    import json

    library = sot.translate(json.dumps)  # the standard library is not translated
    assert library([1]) == "[1]" and sot.stats(library).own_frame == "skipped"
    eager = sot.translate(loops)
    assert eager("ab") == 2 and sot.stats(eager).own_frame == "eager"
    assert "runs eagerly (the code reads its frame's variables)" in sot.stats(eager).graph_breaks[0].reason


def test_trace_modules_translates_library_code_like_the_users():
    import unittest

    def compare(case, a, b):
        case.assertEqual(a, b)
        return a + b

    case = unittest.TestCase()
    plain, traced = sot.translate(compare), sot.translate(compare, trace_modules=["unittest"])
    assert plain(case, 1, 1) == traced(case, 1, 1) == 2
    # Without trace_modules the library's function is inlined too, within the budget of a
    # library call (assertEqual's few hundred instructions fit); with it, as the user's.
    assert sot.stats(plain).graph_breaks == [] and sot.stats(plain).translations == 1
    assert sot.stats(traced).graph_breaks == [] and sot.stats(traced).translations == 1
    for fast in (plain, traced):
        with pytest.raises(AssertionError, match="1 != 2"):
            fast(case, 1, 2)


_LONG_TEXT = "line\n" * 400


def _indented_long_text(x):
    y = x + 1
    text = textwrap.indent(_LONG_TEXT, "  ")  # past a library call's budget: a break
    return y * len(text)


def test_a_library_call_that_breaks_leaves_no_guards():
    """The whole call is the break, run as it is: what its inlining read (the function's
    code and globals, its defaults) guards nothing, so a later call with another function
    there still takes the translation."""
    fast = sot.translate(_indented_long_text)
    x = np.arange(3.0)
    np.testing.assert_array_equal(fast(x), _indented_long_text(x))
    st = sot.stats(fast)
    assert [b.reason for b in st.graph_breaks] == [
        "unsupported call: indent (a library function: more than 1000 instructions simulated)"]
    text = sot.explain(_indented_long_text, x)
    first = text.split("translated (")[1]
    assert "G[textwrap] is" in first and ".indent" not in first and "__defaults__" not in first
    np.testing.assert_array_equal(fast(x), _indented_long_text(x))
    assert sot.stats(fast).guard_failures == 0


def _scaled_by_entry(x, table):
    return x * table.get("scale", 1.0)


def test_dict_get_guards_only_the_key_it_reads():
    """`table.get(key)` of a dict the frame holds guards that key's presence and value, not
    the dict's other keys: a dict with other keys takes the same translation; one without
    the key, or with another value there, does not, and computes what the original does."""
    fast = sot.translate(_scaled_by_entry)
    x = np.arange(3.0)
    for table in ({"scale": 2.0, "a": 1}, {"scale": 2.0, "b": 1, "c": 2}, {"b": 0, "scale": 2.0}):
        np.testing.assert_array_equal(fast(x, table), _scaled_by_entry(x, table))
    st = sot.stats(fast)
    assert (st.translations, st.cache_hits, st.graph_breaks) == (1, 2, [])
    for table in ({"a": 1}, {"scale": 3.0}):
        np.testing.assert_array_equal(fast(x, table), _scaled_by_entry(x, table))
    assert sot.stats(fast).translations == 3


SHARED_LIBRARY = """
import zlib

def scaled(x):
    y = x * 2.0
    zlib.crc32(b"")  # an opaque call: a graph break, the rest runs in a resume function
    return y + 1.0
"""


def test_functions_tracing_a_module_share_its_translations(tmp_path, monkeypatch):
    """The translations of a traced module's code are shared by the functions translated with
    the same backend and options, and outlive them (a suite's tests, each translated, all
    call one library): each function's stats still list the breaks its calls ran."""
    (tmp_path / "framehook_shared_library.py").write_text(SHARED_LIBRARY)
    monkeypatch.syspath_prepend(str(tmp_path))
    import framehook_shared_library as library

    def first(x):
        return library.scaled(x) - 1.0

    def second(x):
        return library.scaled(x) * 3.0

    x = np.arange(3.0)
    traced = ["framehook_shared_library"]
    one = sot.translate(first, trace_modules=traced)
    np.testing.assert_array_equal(one(x), first(x))
    library_breaks = [b for b in sot.stats(one).graph_breaks if b.reason == "unsupported call: crc32"]
    assert sot.stats(one).translations >= 3 and library_breaks  # first, scaled and its resume function
    del one
    for options, shared in (({}, True), ({"cache_size": 4}, False)):  # other options: not shared
        fast = sot.translate(second, trace_modules=traced, **options)
        for _ in range(2):
            np.testing.assert_array_equal(fast(x), second(x))
        stats = sot.stats(fast)
        # second, its resume function, and (unless shared) scaled and its resume function
        assert stats.translations == (2 if shared else 4), (options, stats)
        assert stats.cache_hits == (6 if shared else 4) and stats.guard_failures == 0
        # second's own break (at the call), and scaled's (taken from the shared translation)
        assert [b.reason for b in stats.graph_breaks] == ["unsupported call: crc32"] * 2, stats
    sot.reset()  # the shared translations go too
    fast = sot.translate(second, trace_modules=traced)
    np.testing.assert_array_equal(fast(x), second(x))
    assert sot.stats(fast).translations == 4
    # explain() translates with the function's traced modules: the library's translation,
    # shared, is explained too.
    assert "scaled: translated" in sot.explain(fast, x)


def _breaking_scale(x, k):
    import zlib

    y = x * k
    zlib.crc32(b"")  # an opaque call: a graph break
    return y


def test_translations_breaks_and_guard_failures_are_logged_at_debug_level(caplog):
    fast = sot.translate(_breaking_scale)
    fast(np.ones(2), 2)  # the logger at its default level: nothing described
    assert [r for r in caplog.records if r.name == "framehook.sot"] == []
    with caplog.at_level(logging.DEBUG, logger="framehook.sot"):
        fast(np.ones(2), 3.5)  # another type: the guard on k fails
    messages = [r.getMessage() for r in caplog.records if r.name == "framehook.sot"]
    assert any(m.startswith("guard failure in _breaking_scale: no longer holds: k") for m in messages), messages
    assert any(m.startswith("translated _breaking_scale:") for m in messages), messages
    assert any(m.startswith("graph break in _breaking_scale:") for m in messages), messages


def test_a_made_dict_handed_to_a_call_at_a_break_is_the_one_the_frame_keeps():
    def run():
        namespace = {}
        exec("x = 41 + 1", namespace)  # a break: exec runs in the generated code
        return namespace["x"], sorted(k for k in namespace if k != "__builtins__")

    fast = sot.translate(run)
    assert fast() == run() == (42, ["x"])
    assert_translated_with_breaks(fast)


def test_a_builtin_method_is_bound_to_each_calls_object():
    import re

    def search(text, pattern):
        compiled = re.compile(pattern)  # a break: a library function
        return "match" if compiled.search(text) else "no match"

    fast = sot.translate(search)
    for text, pattern in [("abc", "b"), ("abc", "x"), ("xyz", "x"), ("xyz", "b")]:
        assert fast(text, pattern) == search(text, pattern), (text, pattern)
    assert_translated_with_breaks(fast)


def test_attributes_of_immutable_arguments_follow_each_calls_value():
    class Text(str):
        pass

    def decode(raw):
        return Text(raw.decode())  # a break: making a str subclass

    fast = sot.translate(decode)
    assert [fast(b"100"), fast(b"AAA")] == ["100", "AAA"]
    assert_translated_with_breaks(fast)


def test_a_frame_dict_emptied_by_the_translation_is_empty_to_it():
    def handle(kwargs):
        msg = kwargs.pop("msg", None)
        if kwargs:
            raise TypeError(f"{next(iter(kwargs))!r} is an invalid keyword argument")
        return msg

    fast = sot.translate(handle)
    assert fast({"msg": "hi"}) == "hi"
    with pytest.raises(TypeError, match="'other' is an invalid"):
        fast({"msg": "hi", "other": 1})
    assert sot.stats(fast).own_frame == "translated"


def test_a_method_call_through_getattr_resumes_with_the_right_stack():
    class Dynamic:
        def __getattribute__(self, name):
            return lambda: name.upper()

    def call(obj):
        return obj.shout() + "!"  # the attribute comes from __getattribute__: a break

    fast = sot.translate(call)
    assert fast(Dynamic()) == call(Dynamic()) == "SHOUT!"
    assert_translated_with_breaks(fast)


def test_nonlocal_stores_of_an_inlined_closure_reach_its_cell():
    def counter(start):
        class Counter:
            def inc(self):
                nonlocal start
                start += 1
                return start
        return Counter()

    def run(c):
        return c.inc(), c.inc(), c.inc()

    fast = sot.translate(run)
    c = counter(0)
    assert fast(c) == (1, 2, 3) and c.inc() == 4
    assert sot.stats(fast).own_frame == "translated" and sot.stats(fast).graph_breaks == []


def test_locals_and_frames_are_read_in_the_functions_own_frame():
    def reads_locals(x):
        def inner():
            return x
        y = x + 1
        return sorted(locals())

    def reads_frame():
        return sys._getframe().f_code.co_name

    for function in (reads_locals, reads_frame):
        fast = sot.translate(function)
        args = (1,) if function is reads_locals else ()
        assert fast(*args) == function(*args)
        assert sot.stats(fast).own_frame == "fallback"


def test_values_nested_or_holding_themselves_never_exhaust_the_stack():
    def holds_itself():
        items = list([0, 1])
        items.append(items)
        return str(items)

    def nested(depth):
        value = list([])
        for _ in range(depth):
            value = list([value])
        try:
            repr(value)
        except RecursionError:
            return "too deep"
        return "printed"

    fast = sot.translate(holds_itself)
    assert fast() == holds_itself() == "[0, 1, [...]]"
    assert_translated_with_breaks(fast)
    deep = sot.translate(nested)
    assert deep(5000) == nested(5000)
    assert deep(3) == nested(3) == "printed"


def test_empty_tuples_out_of_a_graph_and_made_by_generated_code():
    # BUILD_TUPLE 0 makes the immortal () that 3.14 pushes as a mortal reference
    # (a debug build aborted): generated code loads it as a constant instead.
    def shapes(a):
        return np.shape(a), tuple(list([])), a * 2

    fast = sot.translate(shapes)
    for value in (np.float64(3.0), np.ones(()), np.ones(2)):
        got, want = fast(value), shapes(value)
        assert got[:2] == want[:2] and np.array_equal(got[2], want[2])
    st = sot.stats(fast)
    assert st.own_frame == "translated" and st.fallbacks == []


def test_values_sent_into_a_generator_are_what_its_yields_evaluate_to():
    def accumulate(scale):
        total = 0.0
        while True:
            got = yield total
            total = total + got * scale

    def f(x):
        acc = accumulate(2.0)
        first = next(acc)
        a = acc.send(x)
        b = acc.send(x + 1)
        return first, a, b

    fast = sot.translate(f, full_graph=True)
    x = np.arange(3.0)
    for _ in range(2):
        for got, want in zip(fast(x), f(x)):
            np.testing.assert_array_equal(got, want)
    stats = sot.stats(fast)
    assert (stats.translations, stats.graph_breaks) == (1, []), stats

    def just_started(x):
        return accumulate(1.0).send(x)

    with pytest.raises(TypeError, match="can't send non-None value to a just-started generator"):
        sot.translate(just_started)(1.0)


def test_a_generator_made_before_a_break_is_made_by_the_real_code():
    # Generated code cannot make a half-run generator again: translating again breaks where
    # it is made, so that it is a real object.
    def name_of_a_generator(n):
        squares = (i * i for i in range(n))
        first = next(squares)
        return squares.__name__, first, list(squares)

    fast = sot.translate(name_of_a_generator)
    assert fast(4) == name_of_a_generator(4)
    assert fast(4) == name_of_a_generator(4)
    assert_translated_with_breaks(fast)
    reasons = [b.reason for b in sot.stats(fast).graph_breaks]
    assert any("cannot rebuild" in r for r in reasons), reasons


def test_a_bound_method_of_a_list_made_before_a_break_is_bound_to_that_list():
    def appends(items):
        made = list(items)
        add = made.append
        add(print("", end=""))  # a break while the bound method is live
        return made

    fast = sot.translate(appends)
    assert fast((1, 2)) == appends((1, 2)) == [1, 2, None]
    assert fast((1, 2)) == [1, 2, None]
    reasons = [b.reason for b in sot.stats(fast).graph_breaks]
    assert reasons[0] == "print() is a side effect the graph cannot hold (print)", reasons
    assert not any("cannot rebuild" in r for r in reasons), reasons


def test_repeating_a_made_list_past_memory_raises_as_python_does():
    def repeat(items, times):
        return list(items) * times

    fast = sot.translate(repeat)
    with pytest.raises((MemoryError, OverflowError)) as eager:
        repeat([4, 5, 6, 7], sys.maxsize // 2)
    with pytest.raises(eager.type):
        fast([4, 5, 6, 7], sys.maxsize // 2)
    assert sot.stats(fast).graph_breaks and sot.stats(fast).fallbacks == []
    sot.reset()
    fast = sot.translate(repeat)
    assert fast((1, 2), 3) == [1, 2] * 3
    assert fast((1, 2), 2.0 == 2) == [1, 2]  # a bool counts
    with pytest.raises(TypeError):
        fast((1, 2), 2.0)
    assert sot.stats(fast).own_frame == "translated"


def test_not_equal_of_objects_the_translation_made_asks_eq_as_python_does():
    # object.__ne__ inverts __eq__ unless it declines; then the reflected __ne__ is asked.
    def compare(calls):
        class Left:
            def __eq__(self, other):
                calls.append("Left.__eq__")
                return NotImplemented

        class Right:
            def __ne__(self, other):
                calls.append("Right.__ne__")
                return NotImplemented

        class Equal:
            def __eq__(self, other):
                return True

        return Left() != Right(), Equal() != Equal(), calls

    fast = sot.translate(compare)
    assert fast([]) == compare([]) == (True, False, ["Left.__eq__", "Right.__ne__"])
    assert sot.stats(fast).own_frame == "translated" and sot.stats(fast).fallbacks == []


def test_a_closure_over_a_comprehension_variable_sees_its_own_cell():
    # 3.12+ inlines comprehensions: a variable a closure captures gets a new cell
    # mid-function (MAKE_CELL after RESUME), shadowing the enclosing x.
    x = ...

    def closures():
        return [lambda: x for x in (x, [1])[1]]  # noqa: B023 (the late binding is the point)

    fast = sot.translate(closures)
    assert [fn() for fn in fast()] == [fn() for fn in closures()] == [1]
    st = sot.stats(fast)
    if sys.version_info >= (3, 12):
        assert st.own_frame == "fallback" and "comprehension" in st.fallbacks[0].reason
    else:
        assert st.own_frame == "translated" and st.fallbacks == []


def test_numbers_changing_every_call_become_graph_arithmetic_with_division_and_power():
    """Per-item step counts in dicts, as optimizers keep them: the counts change on every
    call, with a float's power of a count and a division of numbers computed from them. One
    recompilation generalises every count seen to change (not one per count), and from then
    on each call is a cache hit."""

    def step(states, params, lr, beta):
        out = []
        for state, param in zip(states, params):
            state["step"] += 1
            correction = 1.0 - beta ** state["step"]
            out.append(param * (lr / correction))
        return out

    states = [{"step": 0} for _ in range(4)]
    params = [np.full(3, float(i)) for i in range(4)]
    eager_states = [{"step": 0} for _ in range(4)]
    fast = sot.translate(step)
    for _ in range(10):
        got, expected = fast(states, params, 0.1, 0.9), step(eager_states, params, 0.1, 0.9)
        for a, b in zip(got, expected):
            np.testing.assert_array_equal(a, b)
        assert states == eager_states and all(type(s["step"]) is int for s in states)
    st = sot.stats(fast)
    assert st.translations == 2 and st.recompilations == 1 and st.cache_hits == 8
    assert not st.graph_breaks and not st.fallbacks


def test_a_division_by_a_dynamic_number_that_becomes_zero_raises_zerodivisionerror():
    def f(x, n):
        return x * (1.0 / (n - 3))

    fast = sot.translate(f)
    x = np.ones(2)
    for n in (1, 2, 4):
        np.testing.assert_array_equal(fast(x, n), f(x, n))
    with pytest.raises(ZeroDivisionError):
        fast(x, 3)
    assert sot.stats(fast).cache_hits >= 1


def test_an_iterator_over_a_made_list_sees_the_list_change_and_stays_exhausted():
    def f():
        a = [1, 2, 3]
        exhausted, fresh = iter(a), iter(a)
        for _ in exhausted:
            next(fresh)
        a.append(9)
        return list(exhausted), list(fresh)

    fast = sot.translate(f)
    assert fast() == f() == ([], [9])
    st = sot.stats(fast)
    assert (st.translations, st.graph_breaks, st.fallbacks) == (1, [], [])


def test_a_list_iterator_live_at_a_break_is_over_the_live_list():
    def f():
        a = [1, 2, 3]
        it = iter(a)
        first = next(it)
        print("between")
        a.append(4)
        return first, list(it), type(it).__name__

    fast = sot.translate(f)
    assert fast() == f() == (1, [2, 3, 4], "list_iterator")
    assert "print" in sot.stats(fast).graph_breaks[0].reason


@pytest.mark.skipif(sys.version_info < (3, 10), reason="match statements are new in 3.10")
def test_a_mapping_pattern_reads_keys_with_get():
    """CPython's MATCH_KEYS reads each key with subject.get(key, <missing>): a mapping whose
    get() supplies a default matches a key it lacks."""

    class Lenient(dict):
        def get(self, key, default=None):
            return 0.5

    namespace = {}
    exec(
        "def f(x, cfg):\n"
        "    match cfg:\n"
        "        case {'scale': s}:\n"
        "            return x * s\n"
        "    return x\n",
        namespace,
    )
    f = namespace["f"]
    fast = sot.translate(f)
    np.testing.assert_array_equal(fast(np.ones(3), Lenient(shift=1.0)), np.full(3, 0.5))
    st = sot.stats(fast)
    # Where the VM cannot read the subclass's get (before 3.14), MATCH_KEYS runs natively.
    assert (st.graphs, st.ops_captured, st.fallbacks) == (1, 1, [])
    assert all("attribute get" in b.reason for b in st.graph_breaks)


def test_an_exhausted_list_iterator_live_at_a_break_stays_exhausted():
    def f():
        a = [1, 2]
        it = iter(a)
        consumed = list(it)
        print("between")
        a.append(3)
        return consumed, list(it), type(it).__name__

    fast = sot.translate(f)
    assert fast() == f() == ([1, 2], [], "list_iterator")
    assert "print" in sot.stats(fast).graph_breaks[0].reason


def test_a_list_iterator_from_the_frame_is_advanced_by_the_translation_and_left_there():
    def f(it, scale, x):
        total = x * 0.0
        for a, b in zip(it, scale):  # `it` runs out first: the zip stops there, as CPython's does
            total = total + x * a * b
        return total, next(it, "exhausted")

    def g(it, x):
        first = next(it)
        return x * first, it  # the caller's iterator, left one item on

    fast_f, fast_g = sot.translate(f), sot.translate(g)
    x = np.ones(2)
    for items in ([1.0, 2.0, 3.0], [1.0, 2.0, 3.0]):  # new iterators, each at the start
        mine, theirs = iter(items), iter(items)
        got, want = fast_f(mine, [1.0, 2.0, 3.0, 4.0], x), f(theirs, [1.0, 2.0, 3.0, 4.0], x)
        np.testing.assert_array_equal(got[0], want[0])
        assert got[1] == want[1] == "exhausted"
        # Exhausted, and let go of its list, as the original leaves it.
        assert mine.__reduce__() == theirs.__reduce__() and list(mine) == list(theirs) == []
        mine, theirs = iter(items), iter(items)
        (got, same), (want, _) = fast_g(mine, x), g(theirs, x)
        np.testing.assert_array_equal(got, want)
        assert same is mine and list(mine) == list(theirs) == items[1:]
    for fast in (fast_f, fast_g):
        st = sot.stats(fast)
        assert st.graph_breaks == [] and st.fallbacks == [], sot.explain(fast)
        assert (st.translations, st.cache_hits) == (1, 1), st
    advanced = iter([1.0, 2.0, 3.0])
    next(advanced)  # another position: another translation
    np.testing.assert_array_equal(fast_g(advanced, x)[0], x * 2.0)
    assert sot.stats(fast_g).translations == 2


def test_in_place_list_operators_keep_the_list():
    def f(frame_list):
        made = [1]
        alias = made
        made *= 3
        frame_list *= 2
        frame_list += [0]
        return made is alias, made, frame_list

    fast = sot.translate(f)
    given, expected_list = [5], [5]
    assert fast(given) == f(expected_list) and given == expected_list == [5, 5, 0]
    st = sot.stats(fast)
    assert (st.translations, st.graph_breaks, st.fallbacks) == (1, [], [])


def test_an_in_place_operator_on_a_dict_breaks_instead_of_changing_it_while_translating():
    def f(d):
        d |= {"b": 2}
        return d

    fast = sot.translate(f)
    given = {"a": 1}
    assert fast(given) is given and given == {"a": 1, "b": 2}
    assert "in-place operator" in sot.stats(fast).graph_breaks[0].reason


def test_sequence_constructors_reject_keywords_and_copy_only_what_is_mutable():
    def f(t, fs):
        try:
            list(sequence=[])
        except TypeError as e:
            raised = str(e)
        return raised, tuple(t) is t, frozenset(fs) is fs, list(t) is t, tuple((1, 2)) == (1, 2)

    fast = sot.translate(f)
    t, fs = (1, 2), frozenset("ab")
    assert fast(t, fs) == f(t, fs)
    assert fast(t, fs)[1:4] == (True, True, False)
    assert any("keyword" in b.reason for b in sot.stats(fast).graph_breaks)


def test_a_frozenset_constant_keeps_its_identity_at_a_break():
    def f(holder):
        dup = holder.s.copy()
        print("between")
        return dup is holder.s, id(dup) == id(holder.s)

    class Holder:
        s = frozenset(["a longer string", "abc"])

    fast = sot.translate(f)
    assert fast(Holder) == f(Holder) == (True, True)


def test_a_builtin_of_an_iterator_runs_in_python():
    class Stop(Exception):
        pass

    def raising():
        raise Stop
        yield 1

    def f(fs, it):
        try:
            fs.union(it)
        except Stop:
            return "raised"
        return "not raised"

    fast = sot.translate(f)
    assert fast(frozenset("ab"), raising()) == f(frozenset("ab"), raising()) == "raised"
    assert fast(frozenset("ab"), raising()) == "raised"


def test_set_elements_with_a_python_hash_are_not_hashed_while_translating():
    class Counted(int):
        calls = 0

        def __hash__(self):
            Counted.calls += 1
            return int.__hash__(self)

    def f(d):
        return len(set(d)), len(frozenset(d)), {1, 2} == {2, 1}

    d = dict.fromkeys(map(Counted, range(5)))
    fast = sot.translate(f)
    Counted.calls = 0
    assert fast(d) == f(d) == (5, 5, True)
    assert Counted.calls == 0
    assert any("__hash__" in b.reason for b in sot.stats(fast).graph_breaks)


def test_views_of_a_made_dict_are_live_views():
    def views():
        d = {"a": 1}
        keys, values, items = d.keys(), d.values(), d.items()
        d["b"] = 2  # the views see it
        total = 0
        for key, value in d.items():
            total += len(key) * value
        return (repr(keys), repr(values), repr(items), type(keys).__name__, len(items),
                "b" in keys, keys - {"a"}, keys | {"c"}, keys == {"a", "b"}, total)

    fast = sot.translate(views)
    assert fast() == views()
    st = sot.stats(fast)
    assert st.own_frame == "translated" and st.graph_breaks == [] and st.fallbacks == []


def test_a_made_dict_that_changes_size_while_iterated_raises_runtimeerror():
    def grow():
        d = {1: 1}
        try:
            for k in d:
                d[k + 1] = 1
        except RuntimeError as e:
            return str(e), d

    fast = sot.translate(grow)
    assert fast() == grow() == ("dictionary changed size during iteration", {1: 1, 2: 1})
    st = sot.stats(fast)
    assert st.own_frame == "translated" and st.graph_breaks == [] and st.fallbacks == []


def test_a_dict_whose_keys_change_at_the_same_size_while_iterated_runs_natively():
    def replace_keys(d):
        try:
            for _item in d.items():
                del d[0]
                d[0] = 0
        except RuntimeError as e:
            return str(e)

    fast = sot.translate(replace_keys)
    assert fast({0: 0}) == replace_keys({0: 0}) == "dictionary keys changed during iteration"
    reasons = [b.reason for b in sot.stats(fast).graph_breaks + sot.stats(fast).fallbacks]
    # The translation sees the keys change and breaks; the loop then runs as the original
    # (from a break before it: the translation's iterator cannot be made again).
    assert reasons[-1] == "iteration over dict_itemiterator", reasons


def test_dict_keys_with_python_hash_or_eq_are_hashed_natively_once():
    class Hashed:
        def __init__(self):
            self.hashes = 0

        def __hash__(self):
            self.hashes += 1
            return 42

        def __eq__(self, other):
            return self is other

    def setdefault(a, b):
        y = {a: 5}
        y.setdefault(b, [])
        return a.hashes, b.hashes

    fast = sot.translate(setdefault)
    assert fast(Hashed(), Hashed()) == setdefault(Hashed(), Hashed()) == (1, 1)
    reasons = [b.reason for b in sot.stats(fast).graph_breaks]
    assert any("Hashed key (its __hash__ or __eq__ runs Python code)" in r for r in reasons), reasons


def test_a_missing_attribute_of_a_made_container_raises_attributeerror():
    def probe():
        return hasattr({}, "__missing__"), hasattr([], "append"), hasattr(set(), "keys")

    fast = sot.translate(probe)
    assert fast() == probe() == (False, True, False)
    st = sot.stats(fast)
    assert st.own_frame == "translated" and st.graph_breaks == [] and st.fallbacks == []


class Bag:
    pass


def _bag(**attrs):
    bag = Bag()
    bag.__dict__.update(attrs)
    return bag


def _store_then_pop(o, x):
    o.b = 2
    o.__dict__.pop("z")
    return x + 1


def _pop_then_read(o, x):
    o.__dict__.pop("z")
    return x + 1, getattr(o, "z", "gone")


def _item_then_store(o, x):
    o.__dict__["z"] = 5
    o.c = o.z
    return x + 1


@pytest.mark.parametrize("function", [_store_then_pop, _pop_then_read, _item_then_store])
def test_attributes_and_the_dict_they_live_in_change_together(function):
    fast = sot.translate(function)
    for _ in range(2):
        eager_bag, bag = _bag(z=1), _bag(z=1)
        want, got = function(eager_bag, np.ones(2)), fast(bag, np.ones(2))
        assert bag.__dict__ == eager_bag.__dict__
        assert repr(got) == repr(want)
    st = sot.stats(fast)
    assert st.graphs >= 1 and st.fallbacks == []
    assert any("__dict__" in b.reason and "the translation changed" in b.reason for b in st.graph_breaks)


class _List(list):
    pass


class _Set(set):
    pass


def _grow_list(s, x):
    s.append(len(s))
    return x + len(s)


def _grow_set(s, x):
    s.add(len(s))
    return x + len(s)


def _describe_and_grow(s, x):
    text = str(s)
    s.append(0)
    return x + 1, text


def _mutator_break(base: type, method: str) -> str:
    # A Python subclass of list or set keeps the generic attribute lookup (whether its base
    # names its own __getattribute__, up to 3.13, or inherits object's): the lookup is
    # followed, the call of the C base's mutating method breaks.
    return f"unsupported call: {base.__name__}.{method}"


@pytest.mark.parametrize(("function", "make", "reason"), [
    (_grow_list, _List, _mutator_break(list, "append")),
    (_grow_set, _Set, _mutator_break(set, "add")),
    (_describe_and_grow, _List, "builtin str() of a _List object (its __repr__ is not simulated)"),
])
def test_a_container_subclass_from_the_frame_is_read_as_each_call_holds_it(function, make, reason):
    # The same object each call, grown by each: an identity guard would hold while its
    # length and contents change.
    fast = sot.translate(function)
    eager_held, held = make(), make()
    for _ in range(4):
        assert repr(fast(held, np.zeros(2))) == repr(function(eager_held, np.zeros(2)))
        assert held == eager_held
    st = sot.stats(fast)
    assert st.graphs >= 1 and st.fallbacks == []
    assert any(reason in b.reason for b in st.graph_breaks)


def test_dropping_an_object_with_del_from_a_dict_runs_natively():
    class Noisy(int):
        def __del__(self):
            log.append(int(self))

    def replace(d):
        d[0] = None
        log.append("after")

    log = []
    replace({0: Noisy(0)})
    assert log == [0, "after"]
    log.clear()
    fast = sot.translate(replace)
    fast({0: Noisy(0)})
    assert log == [0, "after"]
    reasons = [b.reason for b in sot.stats(fast).graph_breaks]
    assert any("it has __del__" in r for r in reasons), reasons


def reraise_chains(x):
    try:
        try:
            raise KeyError("a")
        except KeyError as a:
            try:
                raise ValueError("b")
            except ValueError:
                try:
                    raise TypeError("c")
                except TypeError:
                    raise a  # noqa: B904 (the chaining is what is tested)
    except KeyError as e:
        raised_again = e
    try:
        try:
            raise IndexError("c")
        except IndexError:
            raise
    except IndexError as e:
        bare = e
    c = raised_again.__context__
    return x + 1, raised_again.args, type(c), type(c.__context__), c.__context__.__context__, bare.__context__


def test_raising_a_handled_exception_again_chains_as_python_does():
    """`raise a` in the handler of `c`, raised in the handler of `b`, raised in `a`'s:
    `a.__context__` is `c`, whose context stays `b`, and the link from `b` back to `a` is
    cut; unwinding the handlers chains nothing more, nor does a bare `raise`."""
    fast = sot.translate(reraise_chains)
    x = np.arange(3.0)
    for _ in range(2):
        result, *chain = fast(x)
        np.testing.assert_array_equal(result, x + 1)
        assert chain == [("a",), TypeError, ValueError, None, None]
    st = sot.stats(fast)
    assert (st.translations, st.graphs, st.ops_captured, st.cache_hits) == (1, 1, 1, 1)
    assert st.graph_breaks == [] and st.fallbacks == []


def raise_with(x, obj):
    y = x + 1
    try:
        raise KeyError(obj)
    except KeyError as e:
        got = e.args[0]
    return y, got


def test_an_exception_made_with_an_object_from_the_frame_holds_each_calls_object():
    """The generated code makes the translation's exceptions again from constants: one
    made with an object from the frame is made at run time (a break), so that it holds
    this call's object, and the translation keeps none alive."""
    import weakref

    class Key:
        pass

    fast = sot.translate(raise_with)
    x = np.arange(3.0)
    for _ in range(3):
        key = Key()
        result, got = fast(x, key)
        np.testing.assert_array_equal(result, x + 1)
        assert got is key
        probe = weakref.ref(key)
        del key, got
        assert probe() is None
    st = sot.stats(fast)
    assert st.graph_breaks[0].reason == "an exception made with an object from the frame"
    assert st.graph_breaks[0].lineno == raise_with.__code__.co_firstlineno + 3
    assert st.graphs == 1 and st.cache_hits >= 2 and st.fallbacks == []


class Namespace:
    pass


def test_a_dict_changed_after_its_path_is_rebound_is_the_dict_the_frame_read():
    def update(a, x):
        d = a.inner.d
        a.inner = None  # replayed before the dict's new contents
        d["k"] = x * 2.0
        return x + 1.0

    def make():
        a = Namespace()
        a.inner = Namespace()
        a.inner.d = {"k": 0}
        return a

    x = np.ones(2)
    a = make()
    inner = a.inner
    fast = sot.translate(update)
    np.testing.assert_array_equal(fast(a, x), x + 1.0)
    assert a.inner is None and list(inner.d) == ["k"]
    np.testing.assert_array_equal(inner.d["k"], x * 2.0)
    st = sot.stats(fast)
    assert st.own_frame == "translated" and st.graphs == 1 and st.graph_breaks == [] and st.fallbacks == []


def guards_of(fn, *args):
    """The guard lines of ``fn``'s one translation, as ``sot.explain`` prints them."""
    text = sot.explain(fn, *args)
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("  guards ("))
    count = int(lines[start].split("(")[1].split(")")[0])
    guards = [line.strip() for line in lines[start + 1:start + 1 + count]]
    assert all(line.startswith("    ") for line in lines[start + 1:start + 1 + count]), text
    return guards


def functional_module(name, factor):
    module = types.ModuleType(name)
    exec(f"def scale(x):\n    return x * {factor}\n", module.__dict__)
    return module


def test_an_object_pinned_at_two_sources_has_its_children_guarded_once():
    def f(a, b, x):
        return a.F.scale(x) + b.F.scale(x)

    functional = functional_module("functional", 2.0)
    a, b, x = Namespace(), Namespace(), np.ones(2)
    a.F = b.F = functional
    guards = guards_of(f, a, b, x)
    # b.F is checked to be the module a.F is; what is read through it is a.F's.
    assert "b.F is <module 'functional'>" in guards, guards
    assert [g for g in guards if g.startswith("b.F.")] == [], guards
    # type, code, globals, defaults, keyword defaults
    assert sum(g.startswith("a.F.scale") for g in guards) == 5, guards
    # a and b: their type, and their class unchanged (a descriptor set on it would take F)
    assert sum(g.endswith("its class unchanged") for g in guards) == 2, guards
    assert len(guards) == 12, guards

    fast = sot.translate(f)
    np.testing.assert_array_equal(fast(a, b, x), x * 4.0)
    # Rebinding one path: its identity guard fails, the new translation reads the new module.
    b.F = functional_module("other", 3.0)
    np.testing.assert_array_equal(fast(a, b, x), x * 5.0)
    # Rebinding the function in the module both paths reach.
    b.F = functional
    functional.scale = functional_module("third", 10.0).scale
    np.testing.assert_array_equal(fast(a, b, x), x * 20.0)
    st = sot.stats(fast)
    assert (st.translations, st.recompilations) == (3, 2), st
    assert st.graph_breaks == [] and st.fallbacks == []


def test_a_type_guard_stays_beside_an_identity_guard_where_the_class_can_change():
    class A:
        kind = "a"

    class B:
        kind = "b"

    def f(o, x):
        if o is SENTINEL:
            return x * 2.0 if o.kind == "a" else x * 3.0
        return x

    global SENTINEL
    SENTINEL = A()
    x = np.ones(2)
    fast = sot.translate(f)
    np.testing.assert_array_equal(fast(SENTINEL, x), x * 2.0)
    SENTINEL.__class__ = B  # the same object: only its type guard fails
    np.testing.assert_array_equal(fast(SENTINEL, x), x * 3.0)
    assert sot.stats(fast).translations == 2
    assert any(g.startswith("o type is ") and g.endswith(".B") for g in guards_of(f, SENTINEL, x))

    # A builtin function's class cannot change: its identity guard says its type.
    def g(o, x):
        if o is len and type(o).__name__ == "builtin_function_or_method":
            return x * 2.0
        return x

    guards = guards_of(g, len, x)
    assert "o is <built-in function len>" in guards and not any(g.startswith("o type") for g in guards), guards


def test_a_dicts_type_and_length_guards_are_implied_by_its_keys_guard():
    def f(d, x):
        if not d:
            return x
        for key in d:
            x = x * d[key]
        return x

    guards = guards_of(f, {"a": 2.0, "b": 3.0}, np.ones(2))
    d_guards = [g for g in guards if g.startswith("d ")]
    assert d_guards == ["d keys == ('a', 'b')"], guards
    fast = sot.translate(f)
    x = np.ones(2)
    np.testing.assert_array_equal(fast({"a": 2.0, "b": 3.0}, x), x * 6.0)
    np.testing.assert_array_equal(fast({"b": 3.0, "a": 2.0}, x), x * 6.0)  # another key order
    np.testing.assert_array_equal(fast({"a": 2.0}, x), x * 2.0)
    assert (sot.stats(fast).translations, sot.stats(fast).cache_hits) == (3, 0)

    class Sub(dict):
        pass

    np.testing.assert_array_equal(fast(Sub(a=2.0), x), x * 2.0)  # the keys of an exact dict only
    assert sot.stats(fast).cache_hits == 0
    np.testing.assert_array_equal(fast({}, x), x)


def generated_code(fast, fn, *args):
    """The code SOT runs for ``fn(*args)`` (seen by a hook chained after SOT's)."""
    seen = []

    def after(frame):
        if frame.original_code is fn.__code__ and frame.f_code is not fn.__code__:
            seen.append(frame.f_code)

    with framehook.frame_hook(after):
        fast(*args)
    return seen[0]


def test_a_frame_dict_is_replayed_by_its_stores_where_its_keys_keep_their_order():
    def step(state, x):
        state["count"] += 1
        state["avg"] = state["avg"] * 0.5 + x
        state["new"] = x * 2.0
        return x

    def make():
        return {"count": 0, "avg": np.zeros(2), "kept": "same", "new_later": None}

    x = np.ones(2)
    eager, translated = make(), make()
    step(eager, x)
    fast = sot.translate(step)
    kept = translated["kept"]
    same_dict = translated
    fast(translated, x)
    assert translated is same_dict and translated["kept"] is kept
    assert list(translated) == list(eager) == ["count", "avg", "kept", "new_later", "new"]
    assert translated["count"] == 1 and translated["new_later"] is None
    np.testing.assert_array_equal(translated["avg"], eager["avg"])
    np.testing.assert_array_equal(translated["new"], eager["new"])
    del translated["new"]
    code = generated_code(fast, step, translated, x)
    assert dict.clear not in code.co_consts and dict.update not in code.co_consts  # no whole-dict replay
    assert sot.stats(fast).own_frame == "translated"


@pytest.mark.parametrize("change", ["delete", "move", "clear", "pop_all"])
def test_a_frame_dict_whose_keys_go_or_move_is_replayed_whole_in_order(change):
    def edit(d, x):
        if change == "delete":
            del d["a"]
            d["c"] = x
        elif change == "move":
            d["a"] = d.pop("a") + 1
        elif change == "clear":
            d.clear()
            d["b"] = x
            d["a"] = 5
        else:
            for key in list(d):
                d[key] = d.pop(key)  # every key goes and comes back: the same order
        return x * 2.0

    x = np.ones(2)
    eager, translated = {"a": 1, "b": 2}, {"a": 1, "b": 2}
    edit(eager, x)
    fast = sot.translate(edit)
    same_dict = translated
    np.testing.assert_array_equal(fast(translated, x), x * 2.0)
    assert translated is same_dict and repr(translated) == repr(eager)
    st = sot.stats(fast)
    assert st.own_frame == "translated" and st.graph_breaks == [] and st.fallbacks == [], st


def test_a_path_shared_by_the_graphs_inputs_is_read_once():
    import dis

    def f(m, x):
        y = x * m.inner.scale + m.inner.shift
        m.inner = None  # after the reads
        return y

    def make():
        m = Namespace()
        m.inner = Namespace()
        m.inner.scale, m.inner.shift = np.full(2, 3.0), np.ones(2)
        return m

    x = np.arange(2.0)
    fast = sot.translate(f)
    m = make()
    np.testing.assert_array_equal(fast(m, x), x * 3.0 + 1.0)
    assert m.inner is None
    code = generated_code(fast, f, make(), x)
    reads = [i for i in dis.get_instructions(code) if i.opname.startswith("LOAD_ATTR") and i.argval == "inner"]
    assert len(reads) == 1, list(dis.get_instructions(code))
    assert sot.stats(fast).own_frame == "translated" and sot.stats(fast).cache_hits == 1


class _LoudMeta(type):
    shown = 0

    def __repr__(cls):
        _LoudMeta.shown += 1
        return "loud"


class _LoudConfig(metaclass=_LoudMeta):
    scale = 2.0


def _scaled_by_a_pinned_class(x):
    return x * _LoudConfig.scale


def test_explain_describes_guarded_values_without_running_their_code():
    # A guard's description showed repr(): a __repr__ with side effects ran while
    # translating (a list appending to itself as it was shown never ended).
    fast = sot.translate(_scaled_by_a_pinned_class)
    fast(np.ones(2))
    text = sot.explain(fast, np.ones(2))
    assert _LoudMeta.shown == 0
    assert "G[_LoudConfig] is <class '_LoudConfig'>" in text, text


def _super_without_arguments():
    super()


def _super_after_deleting_self(self):
    del self
    super()


def _super_with_an_empty_cell():
    class Emptied:  # made on each call: deleting __class__ empties the class's cell for good
        def f(self):
            nonlocal __class__  # noqa: F821 - the compiler's implicit cell
            del __class__
            super()

    Emptied().f()


@pytest.mark.parametrize(("call", "message"), [
    (_super_without_arguments, r"super\(\): no arguments"),
    (lambda: _super_after_deleting_self(None), r"super\(\): arg\[0\] deleted"),
    (_super_with_an_empty_cell, r"super\(\): empty __class__ cell"),
], ids=["no arguments", "first deleted", "empty cell"])
def test_zero_argument_super_raises_cpythons_errors(call, message):
    # The generated code raising at super() held None where the original had deleted
    # the first argument: "__class__ cell not found" instead of "arg[0] deleted".
    def use():
        try:
            call()
        except RuntimeError as error:
            return str(error)
        return None

    fast = sot.translate(use)
    for _ in range(2):
        assert re.fullmatch(message, fast() or "") and fast() == use()
    assert sot.stats(fast).fallbacks == []


class _ClassAttributeNamedClass:
    __class__ = 413


def _class_of_a_made_object(x):
    return x * 2.0, _ClassAttributeNamedClass().__class__


def test_a_class_defining_its_own_class_attribute_answers_it():
    fast = sot.translate(_class_of_a_made_object)
    assert fast(np.ones(2))[1] == 413 == _class_of_a_made_object(np.ones(2))[1]
    assert sot.stats(fast).graph_breaks == []


def _raise_booh(self):
    raise AttributeError("booh")


class _InitIsAProperty:
    __init__ = property(_raise_booh)


def _make_one_whose_init_is_a_property(x):
    try:
        _InitIsAProperty()
    except AttributeError as error:
        return x * 2.0, str(error)
    return x * 2.0, "masked"


def test_a_class_whose_init_is_not_a_function_is_called_as_it_is():
    # Made as if its __init__ were object's, the object hid the property's error.
    fast = sot.translate(_make_one_whose_init_is_a_property)
    for _ in range(2):
        assert fast(np.ones(2))[1] == "booh" == _make_one_whose_init_is_a_property(np.ones(2))[1]


class _CountingDescriptor:
    def __init__(self):
        self.reads = 0

    def __get__(self, instance, owner=None):
        self.reads += 1
        return self.reads


class _WithACountingDescriptor:
    value = _CountingDescriptor()


def _read_a_descriptor_twice(x, o):
    return x * 2.0, o.value, o.value


def test_a_descriptor_written_in_python_runs_its_get_on_every_read():
    # Read while translating, its value was the first call's and __get__ ran once more
    # than eagerly (test_dataclasses' test_getting_field_calls_get, through a Mock).
    eager_object, translated_object = _WithACountingDescriptor(), _WithACountingDescriptor()
    _WithACountingDescriptor.__dict__["value"].reads = 0
    want = [_read_a_descriptor_twice(np.ones(2), eager_object)[1:] for _ in range(3)]
    _WithACountingDescriptor.__dict__["value"].reads = 0
    fast = sot.translate(_read_a_descriptor_twice)
    got = [fast(np.ones(2), translated_object)[1:] for _ in range(3)]
    assert got == want == [(1, 2), (3, 4), (5, 6)]
    # Its __get__ is inlined; its store on the descriptor (found through the class, a
    # constant without a source) is a break.
    st = sot.stats(fast)
    assert st.graphs >= 1 and st.fallbacks == []
    assert {b.reason for b in st.graph_breaks} == {"attribute assignment on an object without a source"}


def _reversed_while_the_dict_grows(x):
    d = dict.fromkeys(range(4))
    it = reversed(d)
    first = next(it)
    d[99] = None
    try:
        next(it)
    except RuntimeError as error:
        return x * 2.0, first, str(error)
    return x * 2.0, first, "no error"


def test_reversed_of_a_dict_sees_the_dict_change():
    # reversed() took a snapshot of the keys: a dict changed under it raised nothing.
    fast = sot.translate(_reversed_while_the_dict_grows)
    for _ in range(2):
        got, want = fast(np.ones(2))[1:], _reversed_while_the_dict_grows(np.ones(2))[1:]
        assert got == want == (3, "dictionary changed size during iteration")
    reasons = [b.reason for b in sot.stats(fast).graph_breaks]
    assert "reversed() of a dict or a dict view (its iterator watches the dict)" in reasons, reasons


def test_generated_code_calls_cpythons_builtins_while_they_are_patched():
    """What the generated code calls of its own (here `int()`, which drops the NULL slot of
    the call a break interrupts) is CPython's builtin even while `builtins.int` is patched,
    as `mock.patch('builtins.int')` does: calling the patch ran the translated function
    again, without end (test_builtin's test_envar_good_path_builtin)."""
    from unittest import mock

    calls = []

    def record(args):
        calls.append(args)
        return args

    class Recorder:
        def __init__(self):
            self.check = _Opaque(record)  # a C callable the translator does not call through

        def __call__(self, *args, **kwargs):
            return str(self.check(args, **kwargs))  # str's NULL slot waits below the break

    recorder = Recorder()
    fast = sot.translate(Recorder.__call__)
    with mock.patch("builtins.int", recorder):
        assert fast(recorder, 7) == "(7,)"
        assert fast(recorder, 8) == "(8,)"
    assert calls == [(7,), (8,)]
    st = sot.stats(fast)
    assert st.own_frame == "translated" and st.fallbacks == []
    assert [b.reason for b in st.graph_breaks] == ["unsupported call: _Opaque"]


def test_a_guard_never_runs_the_users_eq():
    """The keys guard of a dict compares keys by identity, and by `==` only where both are
    values: a key whose `__eq__` is the user's (here one that reads the dict, so that its
    translation guards the dict's keys) is never compared by a guard. The guard ran it, and
    its frame asked the hook, whose guard ran it again: C recursion until the stack
    overflowed. Each `__eq__` call is recorded, so one a guard made shows in the counts.
    (CPython's gh-140551 test clears the dict in `__eq__` instead: on 3.11 and 3.12 the
    insertion then reads past the end of a key's memory, taking it for a str, and the
    untranslated function's result varies from run to run.)"""

    def lookups_seen():
        calls = []

        class Key:
            def __hash__(self):
                return 1

            def __eq__(self, other):
                calls.append(len(list(d)))
                return False

        d = {}
        for _ in range(10):
            d[Key()] = None
        d.setdefault(Key(), None)
        return len(d), len(calls), sum(calls)

    fast = sot.translate(lookups_seen)
    for _ in range(3):
        assert fast() == lookups_seen() == (11, 55, 385)
    st = sot.stats(fast)
    assert st.own_frame == "translated" and st.fallbacks == [] and st.cache_hits >= 1
    assert any("Key key (its __hash__ or __eq__ runs Python code)" in b.reason for b in st.graph_breaks)
    eq_translations = sot.explain(lookups_seen).split("__eq__: translated")[1:]
    assert eq_translations and all("d keys == (" in text for text in eq_translations)


def test_a_missing_attribute_of_an_object_the_translation_made_goes_to_its_getattr():
    """CPython calls a class's `__getattr__` where the lookup fails. For an object the
    translation made, `__getattr__` is inlined (what it returns is the attribute), and an
    `AttributeError` it raises is raised by the original (a break), where CPython gives it
    the attribute's name and the object, which `Did you mean` reads (3.10+). The translation
    raised its own, without either (CPython's `AttributeErrorTests` under SOT)."""

    class Lazy:
        def __init__(self, scale):
            self.scale = scale

        def __getattr__(self, name):
            if name == "double":
                return self.scale * 2
            raise AttributeError()

    def use(x):
        lazy = Lazy(3.0)
        y = x * lazy.double
        try:
            lazy.missing  # noqa: B018 (the lookup is the test)
        except AttributeError as error:
            return y, getattr(error, "name", None), type(getattr(error, "obj", None)).__name__

    fast = sot.translate(use)
    for _ in range(2):
        got, want = fast(np.ones(2)), use(np.ones(2))
        np.testing.assert_array_equal(got[0], want[0])
        assert got[1:] == want[1:] == (("missing", "Lazy") if sys.version_info >= (3, 10) else (None, "NoneType"))
    st = sot.stats(fast)
    assert st.graphs >= 1 and st.fallbacks == [], st
    assert st.graph_breaks[0].reason == "AttributeError from the __getattr__ of a " \
        "test_a_missing_attribute_of_an_object_the_translation_made_goes_to_its_getattr.<locals>.Lazy object (missing)"


def test_a_list_iterator_is_one_only_while_its_argument_is_a_list():
    """`iter(x)` of a list from the frame is the translation's list iterator (read live,
    made again at a break): guarded on the list's type, so that a later call with an object
    whose `__iter__` returns itself does not get a list iterator made over that object
    (test_itertools' tee recipe: `_list_iterator` was called with a `_tee`)."""

    class Countdown:
        def __init__(self, n):
            self.n = n

        def __iter__(self):
            return self

        def __next__(self):
            self.n -= 1
            return self.n

    seen = []
    probe = _Opaque(seen.append)  # a C callable the translator does not call through

    def first_two(iterable):
        it = iter(iterable)
        probe(it)  # `it` is made again by the generated code past this break
        return next(it), next(it)

    fast = sot.translate(first_two)
    assert fast([5, 6, 7]) == first_two([5, 6, 7]) == (5, 6)
    assert fast(Countdown(3)) == first_two(Countdown(3)) == (2, 1)
    assert fast([8, 9]) == (8, 9)
    st = sot.stats(fast)
    assert st.own_frame == "translated" and st.fallbacks == []
    assert st.guard_failures >= 1 and st.cache_hits >= 1
    assert any("_Opaque" in b.reason for b in st.graph_breaks)


def test_an_exception_caught_and_returned_keeps_its_traceback():
    """An exception raised and caught in the translation that leaves the frame (returned
    here) has the traceback CPython gave it: the generated code raises it for real where
    the original does (a break), rather than making a copy without a traceback (test_with's
    testExceptionLocation read `extract_tb(e.__traceback__)[0]` of such a copy: IndexError).
    The class call is caught by the landing pad on every call: 3.13 specializes it from the
    second call on (CALL_ALLOC_AND_ENTER_INIT) and looks up the handler one code unit before
    it, which the pad's entry did not cover (the RuntimeError escaped)."""

    class Refuses:
        def __init__(self):
            raise RuntimeError("refused")

    def caught(x):
        y = x * 2
        try:
            Refuses()
        except RuntimeError as e:
            return y, e

    def frames(exception):
        return [(f.name, f.lineno) for f in traceback.extract_tb(exception.__traceback__)]

    fast = sot.translate(caught)
    x = np.arange(3.0)
    for _ in range(4):
        (y, got), (y_eager, eager) = fast(x), caught(x)
        np.testing.assert_array_equal(y, y_eager)
        assert frames(got) == frames(eager) and [f[0] for f in frames(got)] == ["caught", "__init__"]
    st = sot.stats(fast)
    assert st.own_frame == "translated" and st.fallbacks == [] and st.graphs == 1
    assert any("raised and caught in the translation" in b.reason for b in st.graph_breaks)


def test_an_error_raised_while_handling_is_chained_to_the_handled_exception():
    """An error an operation raises inside an `except` block (a missing key) has the handled
    exception as its `__context__`, as CPython's `PyErr_SetObject` chains it (3.14's
    test_keyerror_context)."""

    def keyerror_in_handler(x):
        y = x + 1
        first = second = None
        try:
            d = {}
            try:
                raise ValueError("bug")
            except ValueError as exc:
                first = exc
                d[1]
        except KeyError as exc:
            second = exc
        return y, type(first), type(second), second.__context__ is first, second.args

    fast = sot.translate(keyerror_in_handler)
    x = np.arange(3.0)
    for _ in range(2):
        y, *rest = fast(x)
        np.testing.assert_array_equal(y, x + 1)
        assert rest == [ValueError, KeyError, True, (1,)] == list(keyerror_in_handler(x)[1:])
    st = sot.stats(fast)
    assert (st.translations, st.graphs, st.ops_captured, st.cache_hits) == (1, 1, 1, 1)
    assert st.graph_breaks == [] and st.fallbacks == []


def test_a_store_through_a_data_descriptor_of_a_frame_object_runs_its_setter_there():
    """A store to an attribute that the object's class defines as a data descriptor runs its
    setter where the original does, so that what the setter changes besides is read right
    after it (`e.__cause__ = None` sets `__suppress_context__`: 3.14's
    testChainingDescriptors), and what it raises is raised there, under the handlers (a C
    type's member refuses a value of another type; replayed after the `try`, the error
    escaped it); a property's Python setter is inlined."""

    class Celsius:
        def __init__(self):
            self._kelvin = 273.15

        @property
        def degrees(self):
            return self._kelvin - 273.15

        @degrees.setter
        def degrees(self, value):
            self._kelvin = value + 273.15

    def stores(x, error, temperature):
        y = x * 2
        before = error.__suppress_context__
        error.__cause__ = None
        after = error.__suppress_context__
        temperature.degrees = 10.0
        try:
            error.__suppress_context__ = 1  # a C type's member checks its value: TypeError
        except TypeError:
            refused = True
        return y, before, after, refused, error.__suppress_context__, temperature._kelvin

    fast = sot.translate(stores)
    x = np.arange(3.0)
    for _ in range(2):
        y, *rest = fast(x, ValueError(), Celsius())
        np.testing.assert_array_equal(y, x * 2)
        assert rest == [False, True, True, True, 283.15] == list(stores(x, ValueError(), Celsius())[1:])
    st = sot.stats(fast)
    assert st.own_frame == "translated" and st.fallbacks == [] and st.cache_hits >= 1
    breaks = [b.reason for b in st.graph_breaks]
    # Stores into the exception's attributes break (its C members check what they are
    # given); reading them does not; the property's Python setter is inlined.
    assert breaks and all("assignment" in r for r in breaks), breaks
    assert not any("degrees" in r or "Celsius" in r for r in breaks), breaks


def test_logging_exception_in_a_handler_after_a_break_prints_the_traceback():
    """An exception the translation raises and catches that is needed after a break (here
    made current again for `logging.exception()`, which breaks) has its traceback, as
    without SOT (a copy made by the generated code had none: the log showed
    `KeyError: 'missing'` alone): the generated code raises its copy where the top frame
    raised it, and catches it there (3.11+)."""
    import io

    stream = io.StringIO()
    log = logging.getLogger("framehook.tests.sot_handler_log")
    log.addHandler(logging.StreamHandler(stream))
    log.propagate = False

    def lookup(x):
        y = x * 2
        try:
            {}["missing"]
        except KeyError:
            log.exception("lookup failed")
        return y + 1

    def logged(function):
        stream.seek(0)
        stream.truncate()
        np.testing.assert_array_equal(function(np.ones(2)), np.full(2, 3.0))
        return stream.getvalue()

    fast = sot.translate(lookup)
    try:
        for _ in range(2):
            text = logged(fast)
            assert text == logged(lookup)
            assert "Traceback (most recent call last)" in text and '{}["missing"]' in text
    finally:
        log.handlers.clear()
    st = sot.stats(fast)
    assert st.fallbacks == []
    if sys.version_info >= (3, 11):
        assert st.own_frame == "translated" and st.graphs >= 1
        assert not any("raised and caught in the translation" in b.reason for b in st.graph_breaks), st
        assert len(st.graph_breaks) == 1, st
    else:
        # 3.9/3.10 resume no frame inside a handler: the break there runs it eagerly.
        assert st.own_frame == "eager"
        [reason] = [b.reason for b in st.graph_breaks]
        assert reason.startswith("unsupported call: Logger.exception (a library function: ")
        assert reason.endswith(") (the frame runs eagerly: an exception is being handled)")


def test_an_exception_leaving_a_resume_function_has_the_originals_traceback():
    """An exception raised after a break leaves the resume function, then the generated code
    that called it: the generated code's own entry (its frame at the break) goes before it
    is raised on, so that `logging.exception()` and `traceback` show the function's frame
    once, at the line that raised, as without SOT. Through a loop's bridge and its exit too."""

    def check(value):
        if value.sum() > 10:
            raise ValueError(f"too big: {value.sum()}")
        return value

    def after_break(x):
        y = x + 1
        print("a break")
        return check(y * 10)

    def in_loop(x, n):
        for i in range(n):
            x = x + 1
            print(i)  # a break in the loop: its bridge runs it
        return check(x * 10)

    def raised_at(function, args):
        with pytest.raises(ValueError) as caught:
            function(*args)
        return [(frame.name, frame.lineno, frame.line) for frame in traceback.extract_tb(caught.value.__traceback__)]

    for function, args in ((after_break, (np.ones(2),)), (in_loop, (np.ones(2), 3))):
        fast = sot.translate(function)
        for _ in range(2):
            expected = raised_at(function, args)
            assert raised_at(fast, args) == expected
            assert [name for name, _, _ in expected[1:]] == [function.__name__, "check"], expected
        st = sot.stats(fast)
        assert st.own_frame == "translated" and st.fallbacks == [], st
        reasons = {b.reason for b in st.graph_breaks}
        assert "print() is a side effect the graph cannot hold (print)" in reasons, st
        assert reasons <= {"print() is a side effect the graph cannot hold (print)",  # check()'s test:
                           "tensor to python value (data-dependent)", "data-dependent branch on a tensor's value"}, st


def test_an_exception_a_callee_raised_keeps_its_traceback_after_a_break():
    """Raised in a function the translation inlines, an exception's traceback has that
    function's frame too, which generated code cannot give a copy: the original raises it
    for real (a break before the call), and `traceback.format_exc()` after a later break
    reads as without SOT."""
    import traceback

    def fetch(table):
        return table["missing"]

    def lookup(x):
        y = x * 2
        try:
            fetch({})
        except KeyError:
            text = traceback.format_exc()
        return y + 1, text

    fast = sot.translate(lookup)
    for _ in range(2):
        (got, text), (want, want_text) = fast(np.ones(2)), lookup(np.ones(2))
        np.testing.assert_array_equal(got, want)
        assert text == want_text and 'return table["missing"]' in text and "fetch({})" in text
    st = sot.stats(fast)
    assert st.fallbacks == [], st
    if sys.version_info >= (3, 11):
        assert st.own_frame == "translated", st
        assert any("raised and caught in the translation" in b.reason for b in st.graph_breaks), st
    else:
        # 3.9/3.10 resume no frame inside a handler: the break there runs it eagerly.
        assert st.own_frame == "eager", st


def test_a_list_the_generated_code_makes_has_cpythons_size():
    """A list the translation made and the generated code makes again (here held by a
    variable and handed to a call that breaks) has the allocation CPython's own list of
    that length has: made as `[None] * n` and filled, not extended from empty, which
    over-allocates (3.9's test_list test_preallocation: 152 != 136)."""

    def sizes():
        items = [0] * 10
        size = sys.getsizeof(items)  # a builtin the translation does not run: a break
        return size, sys.getsizeof(list(range(10))), items

    fast = sot.translate(sizes)
    for _ in range(2):
        assert fast() == sizes()
    st = sot.stats(fast)
    assert st.own_frame == "translated" and st.fallbacks == [] and st.cache_hits >= 1
    assert any("getsizeof" in b.reason for b in st.graph_breaks)


def test_a_frame_dict_is_changed_by_the_operations_that_changed_it():
    """A dict from the frame that the translation changed is given its changes as CPython's
    own operations give them: deletions, then stores (not cleared and refilled, which moves
    nothing but leaves another table behind: 3.9/3.10's test_dict
    test_splittable_setattr_after_pop saw an instance's split table where a pop leaves a
    combined one)."""
    try:
        from _testcapi import dict_hassplittable  # 3.9, 3.10
    except ImportError:
        dict_hassplittable = None

    class Plain:
        pass

    def change(d, obj):
        d.pop("b")
        d["z"] = 1
        del d["a"]
        obj.__dict__.pop("x")
        print(end="")  # a break: the changes are made before it
        split = dict_hassplittable(obj.__dict__) if dict_hassplittable else None
        return list(d.items()), split

    def fresh():
        obj = Plain()
        obj.x = 1
        return {"a": 1, "b": 2, "c": 3}, obj

    fast = sot.translate(change)
    for _ in range(2):
        assert fast(*fresh()) == change(*fresh()) == ([("c", 3), ("z", 1)], False if dict_hassplittable else None)
    st = sot.stats(fast)
    assert st.own_frame == "translated" and st.fallbacks == [] and st.cache_hits >= 1
    assert [b.reason for b in st.graph_breaks][0].startswith("print()")


def test_a_proxied_object_lives_until_the_frame_stores_over_it():
    """functools' test_weakref through SOT: a partial object behind a weak proxy, read
    after a break through the proxy, lives until the frame stores None over it, and is gone
    after (the generated code dropped it at the break, as nothing read it again: the proxy
    raised ReferenceError one line early)."""
    import functools
    import gc
    import weakref

    def proxied():
        f = functools.partial(int, base=16)
        p = weakref.proxy(f)
        same = f.func is p.func
        f = None
        gc.collect()
        try:
            func = p.func
        except ReferenceError:
            return same, "gone"
        return same, func

    fast = sot.translate(proxied)
    for _ in range(2):
        assert fast() == proxied() == (True, "gone")
    st = sot.stats(fast)
    assert st.own_frame == "translated" and st.fallbacks == [] and st.cache_hits >= 1
    assert any("a store over the frame's only reference" in b.reason for b in st.graph_breaks)


def test_a_guard_on_a_list_of_values_runs_no_eq_of_the_users():
    """A list from the frame used as a value is guarded by `==` with a copy of its values;
    a later call's list is compared only where it holds values too: one holding an object
    whose `__eq__` is the user's fails the guard without running that `__eq__` (the
    original never calls it)."""
    calls = []

    class Loud:
        def __eq__(self, other):
            calls.append(other)
            return NotImplemented

        __hash__ = object.__hash__

        def __repr__(self):
            return "Loud()"

    def describe(items):
        return str(items)

    fast = sot.translate(describe)
    assert fast([1, 2]) == "[1, 2]"
    assert fast([Loud(), 2]) == describe([Loud(), 2]) == "[Loud(), 2]"
    assert fast([1, 2]) == "[1, 2]"
    assert calls == []
    st = sot.stats(fast)
    assert st.own_frame == "translated" and st.guard_failures >= 1 and st.cache_hits >= 1


def test_an_equal_set_in_another_order_fails_the_guard():
    # 1 and 9 collide in a small table: equal sets, built in other orders, iterate in other
    # orders. The translation's order is guarded, not only the contents.
    def f(numbers):
        return [n for n in numbers]

    fast = sot.translate(f)
    for numbers in (frozenset([1, 9]), frozenset([9, 1]), {1, 9}, {9, 1}):
        assert fast(numbers) == f(numbers) == list(numbers)
    st = sot.stats(fast)
    assert st.graph_breaks == [] and st.fallbacks == [] and st.guard_failures >= 3, st


def _outcome(function, *args, **kwargs):
    """``(result or exception type and message, args afterwards)`` of one call."""
    try:
        result = ("returned", function(*args, **kwargs))
    except Exception as error:  # noqa: BLE001 - the outcome compared
        result = ("raised", type(error), str(error))
    return result


def test_an_operation_raising_in_the_graph_on_a_later_call_keeps_earlier_side_effects():
    # The graph runs before the side effects are replayed: where it raises (a singular
    # matrix, not singular while translating), the frame runs again untranslated, so the
    # log has what the function appended before inverting, and the error is numpy's.
    def f(matrix, log):
        log.append("start")
        inverse = np.linalg.inv(matrix)
        log.append("inverted")
        return inverse + 1

    fast = sot.translate(f)
    fast(np.eye(2), [])  # translated on an invertible matrix
    outcomes = []
    for function in (f, fast):
        log = []
        with pytest.raises(np.linalg.LinAlgError) as raised:
            function(np.zeros((2, 2)), log)
        outcomes.append(log)
        # The traceback shows the function once, at its own line, then numpy's.
        frames = [entry.name for entry in traceback.extract_tb(raised.value.__traceback__)]
        assert frames.count("f") == 1 and frames[frames.index("f") + 1] != "f", frames
        assert raised.value.__context__ is None
    assert outcomes[1] == outcomes[0] == ["start"]
    with RunTime() as run_time:
        log = []
        ran = run_time.measure(fast, lambda: fast(np.eye(2), log))
    assert log == ["start", "inverted"] and ran.graphs == 1 and ran.generated_frames == 1, ran.describe()
    assert sot.stats(fast).graph_breaks == []


def test_a_raising_graph_reruns_the_frame_with_every_kind_of_parameter():
    # Positional-only, keyword-only, *args and **kwargs, a parameter a closure captures (a
    # cell), and a free variable: the frame runs again with each as the call passed it.
    scale = 2.0

    def f(matrix, /, log, *rest, tag, **options):
        log.append((tag, rest, sorted(options)))
        keep = lambda: matrix  # noqa: E731 - makes `matrix` a cell
        return np.linalg.inv(keep()) * scale + len(rest)

    fast = sot.translate(f)
    fast(np.eye(2), [], 1, tag="t", x=1)
    for matrix in (np.zeros((2, 2)), np.eye(2) * 2):
        logs = [[], []]
        outcomes = [_outcome(function, matrix, log, 1, 2, tag="u", y=3, x=4) for function, log in zip((f, fast), logs)]
        assert logs[0] == logs[1] == [("u", (1, 2), ["x", "y"])]
        assert repr(outcomes[0]) == repr(outcomes[1]), outcomes
    assert sot.stats(fast).graph_breaks == []


def test_a_raising_graph_after_a_break_reruns_from_the_break():
    # The graph of the part after a break (its resume function's) raises: the part after
    # the break runs again untranslated, and the part before it ran once.
    def f(matrix, log):
        log.append("before")
        print("break")
        log.append("after")
        return np.linalg.inv(matrix) + 1

    fast = sot.translate(f)
    fast(np.eye(2), [])
    logs = [[], []]
    outcomes = [_outcome(function, np.zeros((2, 2)), log) for function, log in zip((f, fast), logs)]
    assert logs[0] == logs[1] == ["before", "after"]
    assert outcomes[0] == outcomes[1] and outcomes[0][1] is np.linalg.LinAlgError
    assert len(sot.stats(fast).graph_breaks) == 1


def test_a_graph_writing_an_operand_is_not_run_again():
    # `out=` writes into the caller's array before the inverse raises: running the frame
    # again would add twice. Such a graph is not rerun; it raises from the graph (the
    # known exception: what comes before it in the function is then not replayed).
    def f(total, matrix):
        np.add(total, 1, out=total)
        return np.linalg.inv(matrix)

    fast = sot.translate(f)
    fast(np.zeros(2), np.eye(2))
    total = np.zeros(2)
    with pytest.raises(np.linalg.LinAlgError):
        fast(total, np.zeros((2, 2)))
    assert total.tolist() == [1.0, 1.0]


@pytest.mark.parametrize("writes, expected", [
    ("total += 1", True), ("total[0] = 1", True), ("np.add(total, 1, out=total)", True),
    ("np.add(total, 1, total)", True), ("total.sort()", True), ("np.copyto(total, 2.0)", True),
    ("total + 1", False), ("np.exp(total)", False), ("np.linalg.inv(np.eye(2)) @ total", False),
    ("np.clip(total, 0, 1)", False), ("np.clip(total, 0, 1, total)", True), ("total.sum()", False),
    ("count + 1", False),
])
def test_the_numpy_backend_says_which_graphs_write_their_operands(writes, expected):
    from framehook.sot._numpy_backend import NumpyBackend

    seen = []

    class Watching(NumpyBackend):
        def writes_operands(self, graph, examples):
            seen.append(super().writes_operands(graph, examples))
            return seen[-1]

    sot.register_backend("watching", Watching())
    namespace = {"np": np}
    exec(f"def f(total, count):\n    {writes}\n    return total * 2", namespace)
    fast = sot.translate(namespace["f"], backend="watching")
    fast(np.zeros(2), 1.5)
    assert seen == [expected]


def test_translating_leaves_the_originals_constants_as_they_were():
    # Free-threaded 3.13+ interns the constants of a code object made from others, in
    # the tuples it is given: the original's tuples are not given, so a function made by
    # compile() keeps its constants' identity (found by the fuzzer on 3.13t).
    namespace: dict = {}
    exec(compile("def f(x):\n    pair = (1.5, 2.5)\n    print('a break')\n    return x * 2, pair\n",
                 "<compiled>", "exec"), namespace)
    f = namespace["f"]
    before = [id(item) for item in f.__code__.co_consts if isinstance(item, tuple) for item in item]
    fast = sot.translate(f)
    for _ in range(2):
        result, pair = fast(np.ones(2))
        assert pair is next(c for c in f.__code__.co_consts if isinstance(c, tuple))
    after = [id(item) for item in f.__code__.co_consts if isinstance(item, tuple) for item in item]
    assert after == before and len(before) == 2
    assert sot.stats(fast).translations == 2 and len(sot.stats(fast).graph_breaks) == 1


class _CountingHook:
    """Counts its __getattr__ calls: reading its own attributes must never run it."""

    def __init__(self, **fields):
        self.__dict__.update(fields)

    def __getattr__(self, name):
        _hook_calls.append(name)
        return f"hook {name}"


_hook_calls: list = []


def _reads_own_and_missing(x, record):
    return x + record.a, record.b


def test_guards_and_generated_code_read_an_objects_own_attributes_without_its_getattr():
    fast = sot.translate(_reads_own_and_missing)
    for record in (_CountingHook(a=1.0), _CountingHook(a=2.0, b="own"), _CountingHook(a=1.0)):
        _hook_calls.clear()
        want = _reads_own_and_missing(np.ones(2), record)
        eager_calls = list(_hook_calls)
        _hook_calls.clear()
        got = fast(np.ones(2), record)
        np.testing.assert_array_equal(got[0], want[0])
        assert got[1] == want[1]
        assert _hook_calls == eager_calls, "the translation ran __getattr__ where the program does not"
    st = sot.stats(fast)
    # The third object passes the first translation's guards.
    assert st.graph_breaks == [] and st.translations == 2 and st.cache_hits == 1


def _reads_a_class_namespace(x, cls):
    return x * cls.__dict__.get("scale", 1.0), "extra" in cls.__dict__


def test_a_class_namespace_read_is_guarded_by_what_the_class_defines():
    class Configured:
        scale = 2.0

    fast = sot.translate(_reads_a_class_namespace, full_graph=True)
    for change in (None, lambda: setattr(Configured, "extra", 1), lambda: setattr(Configured, "scale", 3.0)):
        if change:
            change()
        got, want = fast(np.ones(2), Configured), _reads_a_class_namespace(np.ones(2), Configured)
        np.testing.assert_array_equal(got[0], want[0])
        assert got[1] == want[1]
    st = sot.stats(fast)
    # A class gaining `extra`, then another `scale`: each fails the guards of the one before.
    assert st.translations == 3 and st.guard_failures == 2 and st.graph_breaks == []


def _label(x, function, owner):
    function.__module__ = "elsewhere"
    function.__qualname__ = owner + "." + function.__name__
    function.__doc__ = "made by a decorator"
    return x * 2, function.__qualname__


def test_a_functions_labels_are_stored_without_a_break():
    # attrs labels the methods it makes; the function itself is inlined as it was.
    def made(v):
        return v

    fast = sot.translate(_label, full_graph=True)
    got = fast(np.ones(2), made, "Owner")
    np.testing.assert_array_equal(got[0], np.full(2, 2.0))
    assert got[1] == "Owner.made"
    assert (made.__module__, made.__qualname__, made.__doc__) == ("elsewhere", "Owner.made", "made by a decorator")
    assert sot.stats(fast).graph_breaks == []
    with pytest.raises(TypeError, match="__qualname__ must be set to a string object"):
        sot.translate(_relabel)(made, 5)  # not a str: CPython's own error, where it stores


def _relabel(function, qualname):
    function.__qualname__ = qualname


class _FrozenHashError(TypeError):
    pass


class _FrozenMapping(dict):
    """boltons' FrozenDict: its hash cached in a slot, a failed hash's error cached too."""

    __slots__ = ("_hash",)

    def __hash__(self):
        try:
            found = self._hash
        except AttributeError:
            try:
                found = self._hash = hash(frozenset(self.items()))
            except Exception as error:
                found = self._hash = _FrozenHashError(error)
        if found.__class__ is _FrozenHashError:
            raise found
        return found


def _hash_errors(x, frozen):
    errors = []
    for _ in range(2):
        try:
            frozen.__hash__()
        except TypeError as error:
            errors.append(error)
    return x * 2, errors[0] is errors[1], type(errors[0]).__name__


def test_a_cached_hash_error_is_the_one_raised_again():
    # Found on boltons (test_frozendict): the second hash raises the error the first cached
    # in its slot, read back (the slot was unguarded when unset, and not stored).
    fast = sot.translate(_hash_errors)
    for _ in range(2):
        got, want = fast(np.ones(2), _FrozenMapping(a=[1])), _hash_errors(np.ones(2), _FrozenMapping(a=[1]))
        np.testing.assert_array_equal(got[0], want[0])
        assert got[1:] == want[1:] == (True, "_FrozenHashError")
    st = sot.stats(fast)
    assert st.own_frame == "translated" and st.fallbacks == []


def _appends_then_raises(x, items):
    items.append(x * 2)
    raise ValueError("after the append")


def test_generated_code_can_be_hashed_as_the_original_can():
    # Found on jinja2 on 3.9 (`tb.tb_frame.f_code in internal_code`): generated code held a
    # slice among its constants (unhashable before 3.12), so its code object could not be
    # hashed. Unhashable constants are boxed.
    fast = sot.translate(_appends_then_raises)
    items = [1]
    with pytest.raises(ValueError, match="after the append") as raised:
        fast(np.ones(2), items)
    codes = [frame.f_code for frame, _ in traceback.walk_tb(raised.value.__traceback__)]
    generated = [code for code in codes if code.co_name == "_appends_then_raises"]
    assert generated and generated[0] is not _appends_then_raises.__code__  # the frame ran generated code
    for code in codes:
        hash(code)
    assert len(items) == 2 and sot.stats(fast).graph_breaks == []


class _Counted:
    count = 0

    def current(self):
        return self.count


class _CountedMore(_Counted):
    pass


def _bump_and_read(x, counted):
    _Counted.count += 1
    return x, counted.count, _CountedMore.count, counted.current()


def test_a_class_attribute_stored_is_what_instances_and_subclasses_read():
    # An instance's or a subclass's lookup would take the class's old value: it breaks.
    _Counted.count = 0
    want = [_bump_and_read(np.ones(2), _Counted())[1:] for _ in range(3)]
    _Counted.count = 0
    fast = sot.translate(_bump_and_read)
    got = [fast(np.ones(2), _Counted())[1:] for _ in range(3)]
    assert got == want == [(1, 1, 1), (2, 2, 2), (3, 3, 3)]
    reasons = [b.reason for b in sot.stats(fast).graph_breaks]
    assert reasons and all("the translation set" in r for r in reasons), reasons


class _Emitter:
    """jinja2's code generator: writes to a StringIO it holds."""

    def __init__(self, stream):
        self.stream = stream

    def line(self, text):
        self.stream.write(text)
        self.stream.write("\n")


def _emit(x, emitter, parts):
    count = emitter.stream.write("start:")
    for part in parts:
        emitter.line(part)
    return x * count


def _emit_then_read(x, emitter):
    emitter.stream.write("a")
    return x + 1, emitter.stream.getvalue()


def test_writes_to_a_string_io_are_replayed_in_order():
    fast = sot.translate(_emit, full_graph=True)
    for parts in (["a", "b"], ["c"]):
        want_stream, got_stream = io.StringIO("old"), io.StringIO("old")
        want = _emit(np.ones(2), _Emitter(want_stream), parts)
        got = fast(np.ones(2), _Emitter(got_stream), parts)
        np.testing.assert_array_equal(got, want)
        assert got_stream.getvalue() == want_stream.getvalue()
    # Read after a write: a break, so that the read sees the write.
    fast = sot.translate(_emit_then_read)
    stream = io.StringIO()
    got = fast(np.ones(2), _Emitter(stream))
    assert got[1] == "a" == stream.getvalue()
    assert [b.reason for b in sot.stats(fast).graph_breaks][0] == "getvalue of a StringIO the translation wrote to"
    # A closed stream raises where the write is (not replayed).
    closed = io.StringIO()
    closed.close()
    with pytest.raises(ValueError, match="closed file"):
        sot.translate(_emit)(np.ones(2), _Emitter(closed), [])


_run_checks = True


def _checks_enabled():
    return _run_checks


def _disable_then_ask(x):
    module = sys.modules[__name__]
    module._run_checks = False
    return x + 1, _checks_enabled()


def test_a_module_attribute_stored_is_the_global_its_functions_read():
    # Found on attrs on 3.14 (`_config._run_validators = False`, then a validator check):
    # where a module's attribute store was replayed later, an inlined function of that
    # module read the global from its namespace as it was. It breaks.
    global _run_checks
    try:
        fast = sot.translate(_disable_then_ask)
        got = fast(np.ones(2))
        assert got[1] is False and _run_checks is False
        assert [b.reason for b in sot.stats(fast).graph_breaks][:1] == ["attribute assignment on a module"]
    finally:
        _run_checks = True


class _Tracked(type):
    @property
    def level(cls):
        return cls._level

    @level.setter
    def level(cls, value):
        cls._level = value * 10


class _Leveled(metaclass=_Tracked):
    _level = 0


def _set_level(x):
    _Leveled.level = 2
    return x + 1, _Leveled._level


def test_a_store_on_a_class_goes_through_its_metaclasss_property():
    fast = sot.translate(_set_level)
    got = fast(np.ones(2))
    assert got[1] == 20 == _Leveled._level
    reasons = [b.reason for b in sot.stats(fast).graph_breaks]
    assert reasons[:1] == ["assignment to the metaclass's data descriptor level"]
