"""framehook's own SOT translator, from its user API: translate, stats, reset,
register_backend and the hooks a backend may define, trace_modules, own_frame; composition
with other hooks, a tracer and threads. Its behaviour by topic is in the other
tests/test_sot_*.py files (guards, graph breaks, side effects, exceptions, containers,
objects, calls, explain); the differential corpus is tests/test_sot_corpus.py."""

import gc
import sys
import sysconfig
import textwrap
import threading
import traceback
import weakref

import numpy as np
import pytest

import framehook
import framehook.sot as sot
from sot_helpers import FREE_THREADED, _Opaque, two_ops

pytestmark = pytest.mark.usefixtures("fresh_sot")


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


def test_reset_forgets_translations_and_counters():
    fast = sot.translate(two_ops)
    fast(np.ones(2), np.ones(2))
    sot.reset()
    assert sot.stats(fast).translations == 0
    fast(np.ones(2), np.ones(2))
    assert sot.stats(fast).translations == 1 and sot.stats(fast).cache_hits == 0


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


# A C callable the translator breaks on.
_opaque_int = _Opaque(int)


def test_is_op_is_asked_once_per_session_and_keeps_no_function_alive():
    """A function called in a translation and in its resume function is asked about once
    (the session keeps the answer), and the session holds it weakly: a closure it kept the
    answer for, with what its cells hold, is freed when the program drops it."""
    from framehook.sot._numpy_backend import NumpyBackend

    asked = []

    class Asking(NumpyBackend):
        def is_op(self, function):
            asked.append(function)
            return super().is_op(function)

    class Payload:
        pass

    def scaling(payload):
        def scale(x):
            return x * 2.0 if payload else x

        return scale

    def f(x, scale):
        y = scale(x + 1.0)
        _opaque_int()  # a break: what follows is a resume function, translated on its own
        return scale(y) - 1.0

    payload = Payload()
    kept = weakref.ref(payload)
    scale = scaling(payload)
    fast = sot.translate(f, backend=Asking())
    x = np.arange(3.0)
    np.testing.assert_array_equal(fast(x, scale), f(x, scale))
    st = sot.stats(fast)
    assert st.translations == 2 and len(st.graph_breaks) == 1 and st.graphs == 2, st
    assert sum(function is scale for function in asked) == 1
    asked.clear()
    del scale, payload
    gc.collect()
    assert kept() is None


def _doubled(x):
    return x * 2.0


def test_op_function_modules_leave_other_modules_functions_unasked():
    """A backend's ``op_function_modules`` answers for a Python or builtin function of
    another module (not an operation, ``is_op`` unasked); numpy's functions are still
    asked, and what is translated is the same with or without it."""
    from framehook.sot._numpy_backend import NumpyBackend

    asked = []

    class AskingAll(NumpyBackend):
        """An ``is_op`` of its own: every function asked about (what ``is_op`` says of a
        function of another module may differ from numpy's)."""

        def is_op(self, function):
            asked.append(function)
            return super().is_op(function)

    class Asking(AskingAll):
        op_function_modules = ("numpy",)

    def f(x):
        return np.sum(np.asarray(_doubled(x)) + 1.0)

    x = np.arange(3.0)
    counters = []
    for backend in (Asking(), AskingAll()):
        asked.clear()
        fast = sot.translate(f, backend=backend)
        assert fast(x) == f(x)
        st = sot.stats(fast)
        counters.append((st.translations, st.graphs, st.ops_captured, len(st.graph_breaks)))
        assert any(function is np.asarray for function in asked)
        assert any(function is _doubled for function in asked) == (type(backend) is AskingAll)
    assert counters[0] == counters[1] and counters[0][:2] == (1, 1) and counters[0][3] == 0, counters
    assert counters[0][2] >= 3, counters


def _opaque_doubling(x):
    _opaque_int()  # simulated, a break
    return x * 2.0


_FLOAT32 = np.dtype(np.float32)


def test_a_subclass_with_its_own_is_op_and_is_constant_operand_is_asked():
    """numpy's backend answers ``is_op`` for other modules' functions, and
    ``is_constant_operand``, without asking in Python, but not for a subclass that has its
    own: its ``is_op`` makes this module's function an operation (called by the graph, where
    numpy's backend simulates it and breaks inside it), and its ``is_constant_operand`` is
    asked about the dtype operand."""
    from framehook.sot._numpy_backend import NumpyBackend

    constants_asked = []

    class OwnAnswers(NumpyBackend):
        def is_op(self, function):
            return function is _opaque_doubling or super().is_op(function)

        def is_constant_operand(self, value):
            constants_asked.append(value)
            return super().is_constant_operand(value)

    def f(x):
        return _opaque_doubling(x).astype(_FLOAT32) + 1.0

    x = np.arange(3.0)
    counters = []
    for backend in (NumpyBackend(), OwnAnswers()):
        fast = sot.translate(f, backend=backend)
        np.testing.assert_array_equal(fast(x), f(x))
        np.testing.assert_array_equal(fast(x), f(x))
        st = sot.stats(fast)
        counters.append((len(st.graph_breaks), st.graphs))
    # numpy's: a break inside the function (it is simulated); the subclass's: no break,
    # the function one of the graph's operations.
    assert counters[0][0] >= 1 and counters[1][0] == 0 and counters[1][1] >= 1, counters
    assert any(value is _FLOAT32 for value in constants_asked), constants_asked


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


_LONG_TEXT = "line\n" * 2000  # past the instructions one call may simulate, traced or not


def _indented_long_text(x):
    y = x + 1
    text = textwrap.indent(_LONG_TEXT, "  ")  # past a library call's budget: a break
    return y * len(text)


def test_a_library_skipped_by_one_tracing_session_is_translated_by_a_later_one_that_traces_it():
    """A library's frame that a tracing session runs as it is (its file traced by no
    session) is remembered as skipped for its code; a session made later that traces the
    file is asked about its frames again, and translates them as it would alone."""

    def traced_by(modules):
        fast = sot.translate(_indented_long_text, trace_modules=modules)
        for _ in range(3):
            np.testing.assert_array_equal(fast(np.ones(2)), _indented_long_text(np.ones(2)))
        stats = sot.stats(fast)
        return fast, (stats.translations, stats.cache_hits, [b.reason for b in stats.graph_breaks])

    # textwrap.indent runs at a break: its frames skipped. The function is kept, and with it
    # SOT's hook in the chain: nothing but the new session's making asks the frames again.
    skipping_fast, skipping = traced_by(["unittest"])
    assert skipping[2] and "unsupported call: indent" in skipping[2][0], skipping
    tracing = traced_by(["textwrap"])[1]
    del skipping_fast
    sot.reset()
    # textwrap's own frames (its generator's, at least) translated, as they are afresh.
    assert tracing == traced_by(["textwrap"])[1] and tracing[0] > skipping[0], (tracing, skipping)


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
    gc.collect()
    for options, shared in (({}, True), ({"cache_size": 4}, False)):  # other options: not shared
        fast = sot.translate(second, trace_modules=traced, **options)
        for _ in range(2):
            np.testing.assert_array_equal(fast(x), second(x))
        stats = sot.stats(fast)
        if sys.version_info >= (3, 11):
            # The break inside scaled goes on there (nested resume): second, second's resume
            # function and scaled's resume function, which first's generated code held: gone
            # with it, made again (a free-threaded build keeps a code object it was given for
            # good, and what its constants hold: the one first's break made is shared); one
            # break, second's, at the crc32 call.
            kept = shared and sysconfig.get_config_var("Py_GIL_DISABLED")
            assert stats.translations == (2 if kept else 3), (options, stats)
            assert stats.cache_hits == (4 if kept else 3), (options, stats)
            assert [b.reason for b in stats.graph_breaks] == ["unsupported call: crc32"], stats
            continue
        # second, its resume function, and (unless shared) scaled and its resume function
        assert stats.translations == (2 if shared else 4), (options, stats)
        assert stats.cache_hits == (6 if shared else 4) and stats.guard_failures == 0
        # second's own break (at the call), and scaled's (taken from the shared translation)
        assert [b.reason for b in stats.graph_breaks] == ["unsupported call: crc32"] * 2, stats
    sot.reset()  # the shared translations go too
    fast = sot.translate(second, trace_modules=traced)
    np.testing.assert_array_equal(fast(x), second(x))
    assert sot.stats(fast).translations == (3 if sys.version_info >= (3, 11) else 4)  # nothing shared
    # explain() translates with the function's traced modules: the library's translation,
    # shared, is explained too.
    assert "scaled: translated" in sot.explain(fast, x)


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
