"""SOT on calls and functions: calls inlined (operator, functools.reduce, lru_cache,
recursion), functions made or changed while translating, closures, generators, and frames
read through locals() or sys._getframe."""

import re
import sys
import types

import numpy as np
import pytest

import framehook.sot as sot
from sot_helpers import _Opaque

pytestmark = pytest.mark.usefixtures("fresh_sot")


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


def test_a_call_functools_cache_already_answered_gives_the_object_it_holds():
    import functools
    import os

    ran = []

    @functools.cache
    def settings():
        ran.append("settings")
        with open(os.devnull) as f:  # a body the translator cannot run: the hit never runs it
            f.read()
        return {"scale": 2.0}  # mutable: the caller gets the cached dict itself

    @functools.cache
    def names(kind):
        ran.append(kind)
        with open(os.devnull) as f:
            f.read()
        return ("a", "b") if kind == "pair" else ("c",)

    def f(x):
        held = settings()
        total = x * held["scale"]
        for name in names("pair"):
            total = total + len(name)
        return total, held

    x = np.ones(2)
    want = f(x)  # the eager call fills both caches
    ran.clear()
    fast = sot.translate(f, full_graph=True)
    for _ in range(2):
        got = fast(x)
        np.testing.assert_array_equal(got[0], want[0])
        assert got[1] is settings()
    assert ran == []
    stats = sot.stats(fast)
    assert (stats.translations, stats.cache_hits, stats.graphs, stats.graph_breaks) == (1, 1, 1, []), stats

    # Emptied, the cache no longer answers: the call runs the function, as eager's does.
    settings.cache_clear()
    fast = sot.translate(f)
    got = fast(x)
    assert ran == ["settings"] and got[1] is settings()
    reasons = [b.reason for b in sot.stats(fast).graph_breaks]
    assert "unsupported call: builtin open()" in reasons, reasons


def _offset_scale(v, *, k=2.0):
    return v * k + OFFSET


OFFSET = 1.0


def _calls_offset_scale(x, scale):
    return scale(x) - 1


def test_an_inlined_callee_replaced_part_by_part_is_called_as_it_now_is():
    """The guards on an inlined function's code, globals and defaults (read straight from
    the function) fail for each part changed, in place or by another function object."""
    def scale(v, bias=0.0):
        return v * 2.0 + bias

    def no_defaults(v):
        return v * 3.0

    x = np.ones(2)
    other_globals = types.FunctionType(_offset_scale.__code__, {"OFFSET": 10.0})
    other_globals.__kwdefaults__ = {"k": 2.0}
    calls = [
        (scale, lambda: None),
        (scale, lambda: setattr(scale, "__defaults__", (5.0,))),
        (scale, lambda: setattr(scale, "__code__", (lambda v, bias=0.0: v - bias).__code__)),
        (scale, lambda: setattr(scale, "__defaults__", None)),  # now its call raises, as eagerly
        (scale, lambda: setattr(scale, "__code__", no_defaults.__code__)),
        (_offset_scale, lambda: setattr(_offset_scale, "__kwdefaults__", {"k": 4.0})),
        (other_globals, lambda: None),  # the same code, other globals
        # (an int: a float that changed would be computed with, not guarded, from now on)
        (other_globals, lambda: setattr(other_globals, "__kwdefaults__", {"k": 5})),
    ]
    fast = sot.translate(_calls_offset_scale)
    previous = (0, 0)
    try:
        for number, (function, change) in enumerate(calls, start=1):
            change()
            counts = []
            for _ in range(2):
                try:
                    expected = _calls_offset_scale(x, function)
                except TypeError as error:
                    with pytest.raises(TypeError, match=re.escape(str(error))):
                        fast(x, function)
                else:
                    np.testing.assert_array_equal(fast(x, function), expected)
                stats = sot.stats(fast)
                counts.append((stats.translations, stats.cache_hits))
            # Each change translates anew (a guard that read a stale part would have hit the
            # previous translation instead); the second call is the cache's.
            assert counts[0][0] > previous[0], (number, counts)
            assert counts[1][0] == counts[0][0] and counts[1][1] > counts[0][1], (number, counts)
            previous = counts[1]
    finally:
        _offset_scale.__kwdefaults__ = {"k": 2.0}
    assert sot.stats(fast).fallbacks == []


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

    scale.tag = "made"  # stored on the function the translation made, made so again
    return scale, scale(x)


def _make_scale_with_new_kwdefaults(x):
    def scale(v, *, k=2.0):
        return v * k

    scale.__kwdefaults__ = {"k": 3.0}
    return scale(x)


def test_a_function_made_while_translating_is_one_object_with_all_make_function_gave_it():
    # The generated code makes the function once (the attribute stored and the rest of the
    # frame see one object), with its annotations, keyword-only defaults, qualified name and
    # the attribute stored in it; replacing its keyword-only defaults breaks.
    fast = sot.translate(_make_tagged_scale)
    for _ in range(2):
        made, result = fast(np.ones(2))
        expected, eager_result = _make_tagged_scale(np.ones(2))
        assert made.tag == "made"
        for attribute in ("__annotations__", "__kwdefaults__", "__defaults__", "__qualname__", "__name__"):
            assert getattr(made, attribute) == getattr(expected, attribute), attribute
        np.testing.assert_array_equal(result, eager_result)
    st = sot.stats(fast)
    assert (st.translations, st.graphs, st.graph_breaks, st.fallbacks) == (1, 1, [], []), st
    assert st.ops_captured == 2

    fast = sot.translate(_make_scale_with_new_kwdefaults)
    np.testing.assert_array_equal(fast(np.ones(2)), np.full(2, 3.0))
    st = sot.stats(fast)
    assert [b.reason for b in st.graph_breaks] == ["assignment to the function attribute __kwdefaults__"]
    assert st.graphs >= 1 and st.ops_captured >= 1


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


def _returns(value):
    yield 1
    return value


def _end_of(value, x):
    generator = _returns(value)
    next(generator)
    try:
        next(generator)
    except StopIteration as end:
        return x + 1, end.value
    return x, None


def test_a_generator_that_returned_an_object_ends_as_eagerly():
    # Its StopIteration carries that object, which the translation does not make: the
    # call runs as it is (a generator returning a number is simulated to its end).
    for value, breaks in (([1, 2], True), (3, False)):
        sot.reset()
        fast = sot.translate(_end_of)
        x = np.arange(2.0)
        for _ in range(2):
            got, want = fast(value, x), _end_of(value, x)
            np.testing.assert_array_equal(got[0], want[0])
            assert got[1] == want[1] == value
        assert bool(sot.stats(fast).graph_breaks) == breaks, sot.stats(fast)


def _next_of_exhausted(x):
    numbers = iter([x])
    next(numbers)
    return next(numbers)


def test_an_exhausted_iterator_s_stop_iteration_reaches_the_caller():
    fast = sot.translate(_next_of_exhausted)
    for _ in range(2):
        with pytest.raises(StopIteration) as raised:
            fast(np.arange(2.0))
        assert raised.value.args == ()


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


class _Tagged:
    def tag(self, y):
        return y + 1.0


_Tagged.tag.label = "first"


def wraps_a_bound_method(x, obj):
    import functools

    method = obj.tag

    @functools.wraps(method)
    def wrapper(y):
        return method(y)

    return wrapper(x), wrapper.__name__, wrapper.label


def test_wrapping_a_bound_method_reads_its_function_s_dict_as_it_is_on_each_call():
    """`functools.wraps` of a bound method copies its function's `__dict__` (read through
    the method, as its C lookup forwards it, from the function held): an entry changed
    later is what the next call copies."""
    x, obj = np.arange(2.0), _Tagged()
    fast = sot.translate(wraps_a_bound_method, full_graph=True)
    assert repr(fast(x, obj)) == repr(wraps_a_bound_method(x, obj))
    assert (sot.stats(fast).translations, sot.stats(fast).graph_breaks) == (1, [])
    _Tagged.tag.label = "second"
    try:
        got = fast(x, obj)
        assert got[2] == "second"
        assert repr(got) == repr(wraps_a_bound_method(x, obj))
        assert sot.stats(fast).translations == 1
    finally:
        _Tagged.tag.label = "first"


class _HashedKey(tuple):
    """cachetools' `_HashedTuple`: a tuple subclass whose hash is Python code (a break)."""

    __hashvalue = None

    def __hash__(self, hash=tuple.__hash__):
        value = self.__hashvalue
        if value is None:
            self.__hashvalue = value = hash(self)
        return value


def _hashed_key(*args):
    return _HashedKey(args)


def _memoized(func, cache, key):
    def wrapper(*args):
        k = key(*args)
        try:
            return cache[k]
        except KeyError:
            pass
        v = func(*args)
        cache[k] = v
        return v

    wrapper.cache_clear = lambda: cache.clear()
    return wrapper


def _memoizing(cache, key=_hashed_key):
    def decorator(func):
        return _memoized(func, cache, key)

    return decorator


def _memoizes_then_clears(x):
    cache = {}
    wrapper = _memoizing(cache)(abs)
    first = wrapper(-2)
    size = len(cache)
    wrapper.cache_clear()
    return x + first, size, len(cache), wrapper


def test_a_closure_made_by_the_generated_code_at_its_break_closes_over_the_cells():
    """cachetools' `cached` (a crash found on its suite): `_memoized`'s frame, translated on
    its own, breaks where the lambda over its cell `cache` is made (the lambda cannot be
    handed on), so its generated code makes the lambda with `MAKE_FUNCTION` from the
    closure tuple on the stack, which must hold the frame's cells themselves: a tuple of
    their contents crashed the interpreter when the lambda ran."""
    x = np.arange(3.0)
    fast = sot.translate(_memoizes_then_clears)
    want = _memoizes_then_clears(x)
    got = fast(x)
    assert repr(got[:3]) == repr(want[:3])
    assert all(type(cell) is types.CellType for cell in got[3].cache_clear.__closure__)
    reasons = [b.reason for b in sot.stats(fast).graph_breaks]
    assert any("cannot rebuild" in reason for reason in reasons), reasons
    assert repr(fast(x)[:3]) == repr(_memoizes_then_clears(x)[:3])


def _closure_maker():
    flag = False

    def make_checker():
        return lambda: not flag

    def set_flag(value):
        nonlocal flag
        flag = value

    return make_checker, set_flag


def _keeps_a_checker(x, make_checker):
    return x + 1, make_checker()


def test_a_function_made_over_another_function_s_cell_shares_that_cell():
    """jinja2's `test_caching` (found on its suite): a loader's `get_source`, a function the
    translation did not make, makes `lambda: not changed` over its own free variable; the
    lambda the generated code makes must close over that cell itself, not a new cell
    holding its value then, or a later store through the other function is not seen."""
    make_checker, set_flag = _closure_maker()
    fast = sot.translate(_keeps_a_checker)
    x = np.arange(3.0)
    y, checker = fast(x, make_checker)
    np.testing.assert_array_equal(y, x + 1)
    st = sot.stats(fast)
    assert (st.translations, st.graphs, st.graph_breaks) == (1, 1, []), st
    assert checker.__closure__[0] is make_checker.__closure__[0]
    assert checker() is True
    set_flag(True)
    assert checker() is False
