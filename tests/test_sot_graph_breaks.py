"""SOT's graph breaks: ``full_graph``, the resume functions that run the rest of a function
and the values a break hands on to them (freed as in one frame), loops that run in a bridge,
and calls a break interrupts."""

import contextlib
import inspect
import os
import sys

import numpy as np
import pytest

import framehook.sot as sot
from sot_helpers import _Plain, assert_translated_with_breaks

pytestmark = pytest.mark.usefixtures("fresh_sot")


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


def test_branch_on_a_tensor_value_in_a_loop_translates_the_branch_taken():
    # In a loop, a branch on a value is not assumed: it breaks, and each branch taken is
    # the resume function's own translation.
    def f(x):
        for _ in range(1):
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


def test_a_method_call_through_getattr_resumes_with_the_right_stack():
    class Dynamic:
        def __getattribute__(self, name):
            return lambda: name.upper()

    def call(obj):
        return obj.shout() + "!"  # the attribute comes from __getattribute__: a break

    fast = sot.translate(call)
    assert fast(Dynamic()) == call(Dynamic()) == "SHOUT!"
    assert_translated_with_breaks(fast)


def test_a_generator_made_before_a_break_is_handed_on_suspended_where_it_was():
    # Generated code makes a half-run generator again: a generator of its code entered at the
    # `yield` it stopped at, with its variables and stack, run up to there.
    def name_of_a_generator(n):
        squares = (i * i for i in range(n))
        first = next(squares)
        return squares.__name__, first, list(squares)

    fast = sot.translate(name_of_a_generator)
    assert fast(4) == name_of_a_generator(4) == ("<genexpr>", 0, [1, 4, 9])
    assert fast(4) == name_of_a_generator(4)
    assert_translated_with_breaks(fast)
    reasons = [b.reason for b in sot.stats(fast).graph_breaks]
    assert reasons[0] == "attribute __name__ of an internal value", reasons
    assert not any("cannot rebuild" in r for r in reasons), reasons


def _two_steps(log):
    log.append("started")
    yield 1
    yield 2


def test_a_handed_on_generator_is_suspended_at_its_yield_as_the_original():
    def state_after_a_break():
        log = []
        steps = _two_steps(log)
        next(steps)
        print("", end="")  # a break while the generator is suspended
        suspended = (inspect.getgeneratorstate(steps), steps.gi_frame.f_lineno, steps.__name__,
                     steps.__qualname__, list(log))
        return suspended, list(steps), inspect.getgeneratorstate(steps), log

    fast = sot.translate(state_after_a_break)
    want = state_after_a_break()
    assert want[0][:2] == (inspect.GEN_SUSPENDED, _two_steps.__code__.co_firstlineno + 2)
    assert fast() == want
    assert fast() == want
    reasons = [b.reason for b in sot.stats(fast).graph_breaks]
    assert reasons[0] == "print() is a side effect the graph cannot hold (print)", reasons
    assert not any("cannot rebuild" in r for r in reasons), reasons


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


def test_a_frozenset_constant_keeps_its_identity_at_a_break():
    def f(holder):
        dup = holder.s.copy()
        print("between")
        return dup is holder.s, id(dup) == id(holder.s)

    class Holder:
        s = frozenset(["a longer string", "abc"])

    fast = sot.translate(f)
    assert fast(Holder) == f(Holder) == (True, True)


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
