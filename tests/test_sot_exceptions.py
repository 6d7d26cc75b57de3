"""Exceptions through SOT's translations: the user's line and traceback, chaining and
context as CPython makes them, and a graph that raises on a later call (the frame runs
again untranslated, unless the graph wrote an operand)."""

import logging
import sys
import traceback

import numpy as np
import pytest

import framehook.sot as sot
from sot_helpers import two_ops
from sot_runtime import RunTime

pytestmark = pytest.mark.usefixtures("fresh_sot")


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


class _Accumulating:
    def into(self, values, out=None):
        return values


def _callables_taking_out():
    array = np.ones(3)
    methods = [getattr(array, name) for name in ("cumsum", "sum", "clip", "ravel", "astype", "take")]
    methods += [np.ndarray.cumsum, np.ndarray.ravel]
    functions = [np.cumsum, np.any, np.unique, np.searchsorted, np.concatenate, np.dot, np.clip, np.linalg.norm]
    # A Python method asked bound, then unbound: each has its own index of `out`.
    return [*methods, *functions, _Accumulating().into, _Accumulating.into, str.join, "-".join]


def test_the_numpy_backend_finds_out_where_inspect_does():
    # Where a node takes `out` positionally decides whether a graph may write into an
    # operand (and so whether a raising graph's frame may run again): read from code and
    # text signatures without `inspect`, the index is the one `inspect.signature` gives.
    import inspect

    from framehook.sot import _numpy_backend

    def by_inspect(function):
        try:
            parameters = inspect.signature(function).parameters.values()
        except ValueError:  # no text signature (older numpy's methods)
            return _numpy_backend._NO_SIGNATURE
        positional = [p.name for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        return positional.index("out") if "out" in positional else None

    callables = _callables_taking_out()
    answers = [_numpy_backend._out_position(function) for function in callables]
    assert answers == [by_inspect(function) for function in callables]
    assert answers[-4:-2] == [1, 2]


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


@pytest.mark.parametrize("action", ["default", "always", "once", "module", "error"])
def test_an_operation_that_warns_warns_once_on_the_first_call_at_the_users_line(action):
    """The translation computes each operation on examples and the graph computes it again
    on the same call: only the graph's run may warn, where the function does (the example's
    warning came first, at the caller's line, an extra one under "default" and "always")."""
    import warnings

    def f(a, b):
        c = a + 1
        return c / b

    def warned(fn):
        with warnings.catch_warnings(record=True) as log, np.errstate(divide="warn"):
            warnings.simplefilter(action)
            try:
                fn(np.ones(3), np.array([1.0, 0.0, 2.0]))
            except RuntimeWarning as error:
                return [("raised", str(error))]
        return [(w.filename, w.lineno, str(w.message)) for w in log]

    fast = sot.translate(f, cost_model=False)
    eager = warned(f)
    assert eager
    assert warned(fast) == eager
    # Under "error" the division raises while translating: the generated code runs it itself.
    st = sot.stats(fast)
    assert (st.translations, st.graphs, st.ops_captured, st.graph_breaks) == (1, 1, 1 if action == "error" else 2, [])


def _caught_matmul(b, c):
    r = []
    try:
        r.append(b @ c)  # casting 1e300 to float32 warns, then matmul refuses a scalar
    except ValueError as error:
        r.append(("caught", str(error)))
    return r


def _divided_number(b, c):
    t = c
    t /= np.arange(3)  # a number seen to change: its arithmetic is the graph's
    return t


def _inverted_bool(b, c):
    return ~c  # 3.12+: a DeprecationWarning on every call


@pytest.mark.parametrize("f, calls", [
    (_caught_matmul, [(np.ones((2, 3), np.float32), 1e300)] * 3),
    (_divided_number, [(None, 0), (None, 2**63), (None, 2**62)]),
    (_inverted_bool, [(None, False), (None, True)]),
], ids=["raises-after-warning", "dynamic-number", "folded-operator"])
def test_warnings_of_calls_made_while_translating_are_the_functions(f, calls):
    """Found by the fuzzer once it compared warnings: an operation that warned and then
    raised (the handler caught it) lost its warning; a number's arithmetic and a folded
    operator computed while translating warned once more, at the caller's line."""
    import warnings

    def run(fn, args):
        with warnings.catch_warnings(record=True) as log:
            warnings.simplefilter("always")
            result = fn(*args)
        return repr(result), [(w.category.__name__, str(w.message), w.lineno) for w in log]

    fast = sot.translate(f, cost_model=False)
    for args in calls:
        assert run(fast, args) == run(f, args), args
    assert sot.stats(fast).translations >= 1


def _inverted_flag(x, flag):
    return x * 2.0, ~flag  # ~ of a bool warns (deprecated, 3.12+); of an int it does not


@pytest.mark.skipif(sys.version_info < (3, 12), reason="~ of a bool warns from Python 3.12")
def test_a_folded_operator_that_warns_warns_on_every_call():
    """Operators of numbers and strings are computed while translating without catching
    warnings (they cannot warn), but for ``~`` of a bool, which warns: its call is left to
    the generated code, and warns on every call as eagerly."""
    import warnings

    def warned(fn, flag):
        with warnings.catch_warnings(record=True) as log:
            warnings.simplefilter("always")
            result = fn(np.ones(2), flag)
        return result[1], [(w.category, w.lineno) for w in log]

    fast = sot.translate(_inverted_flag, cost_model=False)
    for _ in range(2):
        assert warned(fast, True) == warned(_inverted_flag, True)
        assert warned(fast, True)[1]
    assert warned(fast, 5) == warned(_inverted_flag, 5) == (-6, [])
    st = sot.stats(fast)
    assert [b.reason for b in st.graph_breaks] == ["operator invert warns"]
    assert st.graphs >= 1 and st.ops_captured >= 1
