"""The numpy backend's lowering of graphs (framehook/sot/_numpy_backend.py): numpy's Python
wrappers and Python-number operands replaced by the ufunc calls numpy makes, for the types
seen while translating. Each test checks what was lowered and that the results are the
eager ones bit for bit (dtypes, shapes, NaN and infinity, broadcasting)."""

from __future__ import annotations

import operator
import re
import warnings

import numpy as np
import pytest

import framehook.sot as sot
from framehook import _native
from framehook.sot import _numpy_backend
from framehook.sot._numpy_backend import NumpyBackend, compile_graph

METHODS = np.ndarray.__dict__


@pytest.fixture(autouse=True)
def _reset():
    sot.reset()
    yield
    sot.reset()


class Recording(NumpyBackend):
    """The numpy backend, keeping each compiled graph function and its graph."""

    def __init__(self):
        self.compiled = []
        self.graphs = []

    def compile_with_examples(self, graph, examples):
        function = super().compile_with_examples(graph, examples)
        self.compiled.append(function)
        self.graphs.append(graph)
        return function


def translate(function):
    backend = Recording()
    sot.register_backend("numpy-recording", backend)
    return sot.translate(function, backend="numpy-recording", full_graph=True), backend


def identical(actual, expected):
    if isinstance(expected, tuple):
        return type(actual) is tuple and len(actual) == len(expected) and all(map(identical, actual, expected))
    return (
        type(actual) is type(expected)
        and np.asarray(actual).dtype == np.asarray(expected).dtype
        and np.shape(actual) == np.shape(expected)
        and np.array_equal(actual, expected, equal_nan=True)
        and np.array_equal(np.signbit(np.real(actual)), np.signbit(np.real(expected)))
    )


def call_lowered(fast, *args):
    """``fast(*args)`` once its graph is lowered: a graph runs its nodes as recorded at its
    first run and is lowered at its second, whose result is returned (the first's must be
    the same)."""
    first = fast(*args)
    lowered = fast(*args)
    assert identical(first, lowered)
    return lowered


def data(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    values = rng.standard_normal(shape) * 3
    flat = values.reshape(-1)
    if flat.size > 3:
        flat[:3] = [np.nan, np.inf, -0.0]
    if np.dtype(dtype).kind == "c":
        values = values + 1j * rng.standard_normal(shape)
    return values.astype(dtype)


def called(function):
    """The objects a compiled graph's code refers to by name."""
    return [value for name, value in function.__globals__.items() if name.startswith("c")]


DTYPES = [np.float16, np.float32, np.float64, np.complex64, np.int32, np.int8]
SHAPES = [(5,), (3, 4), (2, 3, 4), (4, 1)]


def model(x, y):
    centered = x - x.mean(axis=-1, keepdims=True)
    spread = (centered * centered).mean(axis=(-1,), keepdims=True)
    total = x.sum(axis=0) + np.sum(y, 0, keepdims=False)
    peak = x.max(axis=-1, keepdims=True) - np.min(y, axis=-1, keepdims=True)
    scaled = 0.5 * x + 1e-5 - y / 3.0 + 2 * y
    clipped = np.maximum(x, 0.0) + np.minimum(1.5, y)
    return centered / (spread + 1.0), total, peak, scaled, clipped, -x, x ** 0.5


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
# numpy 2.5 deprecates an ``out`` passed to np.maximum by position: the lowering names it.
@pytest.mark.filterwarnings("error::DeprecationWarning")
def test_lowered_graph_gives_eager_results_bit_for_bit(dtype, shape):
    fast, backend = translate(model)
    with np.errstate(all="ignore"):
        for seed in range(3):
            x, y = data(shape, dtype, seed), data(shape, dtype, seed + 10)
            assert identical(fast(x, y), model(x, y))
    stats = sot.stats(fast)
    assert stats.translations == 1 and stats.cache_hits == 2 and stats.graphs == 1
    (graph,) = backend.compiled
    names = called(graph)
    # No Python wrapper of numpy's is left: the reductions are ufunc reduces.
    lowered = [METHODS["max"], np.min]
    if len(shape) > 1:  # of a 1-d array, sum(axis=0) is a numpy scalar: left to numpy
        lowered += [METHODS["sum"], np.sum]
    if np.dtype(dtype).kind in "fc" and np.dtype(dtype).itemsize >= 4:  # numpy's mean casts others
        lowered.append(METHODS["mean"])
    for wrapper in lowered:
        assert not any(value is wrapper for value in names)
    if METHODS["sum"] in lowered or METHODS["mean"] in lowered:
        assert any(getattr(value, "__self__", None) is np.add and value.__name__ == "reduce" for value in names)
    if np.dtype(dtype).kind in "fc":
        # Python numbers beside inexact arrays are 0-d arrays of their dtype.
        zero_d = [v for v in names if type(v) is np.ndarray and v.ndim == 0 and v.dtype == dtype]
        assert len(zero_d) >= 5
    else:
        # Beside integers a Python number is left as it is (a float promotes).
        assert not any(type(v) is np.ndarray and v.ndim == 0 and v.dtype == dtype for v in names)
    assert "operator" not in graph.__sot_source__


def test_mean_of_float16_and_integers_keeps_numpys_wrapper():
    def f(x):
        return x.mean(axis=-1, keepdims=True)

    for dtype in (np.float16, np.int16):
        sot.reset()
        fast, backend = translate(f)
        x = data((3, 4), dtype)
        assert identical(call_lowered(fast, x), f(x))
        assert any(v is METHODS["mean"] for v in called(backend.compiled[0]))


def test_python_numbers_that_would_overflow_the_dtype_are_not_converted():
    def f(x):
        return x * 1e300 + 70000

    fast, backend = translate(f)
    x = data((4,), np.float16)
    with np.errstate(all="ignore"):
        assert identical(fast(x), f(x))
    # 1e300 does not fit float16 (left as a Python float); 70000 neither.
    assert not any(type(v) is np.ndarray and v.ndim == 0 for v in called(backend.compiled[0]))


def test_broadcasting_and_reductions_over_several_axes():
    def f(x, y):
        return x.mean(axis=(0, 2), keepdims=True) * y + x.max(axis=1, keepdims=True)

    fast, _ = translate(f)
    x, y = data((2, 3, 4), np.float32), data((1, 3, 1), np.float32)
    assert identical(fast(x, y), f(x, y))
    assert identical(fast(x, y), f(x, y))


def test_random_draws_are_not_graph_operations():
    # The translator runs each operation once on examples while translating and the graph
    # runs it again on every call: a draw from numpy's global generator must be a real call
    # (a graph break), or translated calls would move the generator's state twice.
    def f(x):
        return x + np.random.random_sample(x.shape)

    fast = sot.translate(f, backend="numpy")
    np.random.seed(5)
    translated = [fast(np.zeros(3)), fast(np.zeros(3)), np.random.random_sample()]
    np.random.seed(5)
    eager = [f(np.zeros(3)), f(np.zeros(3)), np.random.random_sample()]
    assert all(map(identical, translated, eager))
    stats = sot.stats(fast)
    assert [b.reason for b in stats.graph_breaks] == ["unsupported call: RandomState.random_sample"]
    assert stats.graphs == 1 and stats.ops_captured == 1 and stats.cache_hits == 2


def test_constant_sequences_are_made_once():
    def f(x):
        return x.reshape([2, 6]).transpose([1, 0])[1:3, ::2]

    fast, backend = translate(f)
    x = data((3, 4), np.float32)
    assert identical(call_lowered(fast, x), f(x))
    source = backend.compiled[0].__sot_source__
    assert "_slice(" not in source and "[1" not in source and "[2" not in source
    assert operator.getitem not in called(backend.compiled[0])


def written_into(source):
    """The graph's ufunc calls that write their result into an operand (passed again last)."""
    calls = [re.fullmatch(r"v\d+ = c\d+\((.*), (v\d+)\)", line.strip()) for line in source.splitlines()]
    return [m.group(0) for m in calls if m and m.group(2) in m.group(1).split(", ")]


def fused_runs(source):
    """How many fused runs the graph calls."""
    return len(re.findall(r"^    _f\d+ = ", source, re.MULTILINE))


def same_layout(actual, expected):
    return all(identical(a, e) and a.strides == e.strides for a, e in zip(actual, expected))


def test_an_elementwise_result_goes_into_a_dead_array_the_graph_made():
    def f(x, bias):
        h = np.tanh(x)
        h = h + bias  # into h (the bias cannot order the axes)
        h = np.tanh(h)  # into h
        return h, h * 0.5  # h is returned: a new array for the product

    fast, backend = translate(f)
    x, bias = data((3, 4), np.float32), data((4,), np.float32)
    with np.errstate(all="ignore"):
        assert same_layout(fast(x, bias), f(x, bias))
        # An input of another layout: numpy gives its order to the arrays made from it.
        xf = np.asfortranarray(x)
        result = fast(xf, bias)
        assert same_layout(result, f(xf, bias)) and result[0].flags.f_contiguous
    assert not np.shares_memory(result[0], result[1]) and not np.shares_memory(result[0], xf)
    assert len(backend.compiled) == 1
    source = backend.compiled[0].__sot_source__
    assert len(written_into(source)) == 2, source


def test_an_array_another_value_views_is_not_written_into():
    def f(x):
        h = x * 2.0
        flat = h.reshape(-1)  # a view of h
        return flat, h + 1.0  # h read last here, but the view keeps it

    fast, backend = translate(f)
    x = data((3, 4), np.float64)
    with np.errstate(all="ignore"):
        assert identical(call_lowered(fast, x), f(x))
    assert written_into(backend.compiled[0].__sot_source__) == []


def test_arrays_made_from_inputs_of_unknown_layouts_are_not_written_into():
    # The inputs' layouts are not guarded: made from two of them, the arrays of one call may
    # have C order and F order, and numpy's result then takes C order (not the first's).
    def f(x, y):
        a = x * 2.0
        b = y * 3.0
        return a + b

    fast, backend = translate(f)
    x, y = data((3, 4), np.float64), data((3, 4), np.float64, 1)
    with np.errstate(all="ignore"):
        assert same_layout((fast(x, y),), (f(x, y),))
        xf = np.asfortranarray(x)
        assert same_layout((fast(xf, y),), (f(xf, y),))
    assert written_into(backend.compiled[0].__sot_source__) == []


def test_a_matrix_product_has_c_order_whatever_the_other_operands_layout():
    # numpy gives a 2-d matrix product C order, and C order wins where operands disagree:
    # the sum is written into the product beside an operand of any layout. (Integers: on
    # floats, the fused kernels compute the two.)
    def f(x, w, y):
        h = x @ w
        return h + y

    fast, backend = translate(f)
    x, w, y = (np.arange(-6, 6).reshape(3, 4), np.arange(20).reshape(4, 5) % 7, np.arange(15).reshape(3, 5) * 3)
    with np.errstate(all="ignore"):
        for args in [(x, w, y), (np.asfortranarray(x), np.asfortranarray(w), np.asfortranarray(y))]:
            assert same_layout((fast(*args),), (f(*args),))
    assert len(backend.compiled) == 1
    assert len(written_into(backend.compiled[0].__sot_source__)) == 1

    # With loop axes, numpy orders a product's axes as its operands': not C order then.
    sot.reset()
    fast, backend = translate(f)
    x = data((3, 2, 4, 5), np.float64).transpose(1, 0, 2, 3)
    w, y = data((5, 6), np.float64), data((2, 3, 4, 6), np.float64)
    with np.errstate(all="ignore"):
        assert same_layout((fast(x, w, y),), (f(x, w, y),))
        assert same_layout((fast(x.copy(), w, y),), (f(x.copy(), w, y),))
    assert written_into(backend.compiled[0].__sot_source__) == []


def test_in_place_operators_on_numbers_are_graph_arithmetic():
    def f(x, n):
        n += 1
        scale = 0.5 ** n
        return x * scale / (1.0 - scale)

    fast, backend = translate(f)
    x = data((3, 4), np.float32)
    with np.errstate(all="ignore"):
        for n in range(1, 5):  # from the second call on, n is a graph input
            assert identical(fast(x, n), f(x, n))
    source = backend.compiled[-1].__sot_source__
    assert not any(v is operator.iadd for v in called(backend.compiled[-1])), source
    assert " + " in source, source
    # What follows the number is known while compiling: the product and the quotient are
    # one fused run.
    assert fused_runs(source) == 1, source


def test_a_result_goes_into_an_array_no_later_node_reads_of_its_order():
    def of_x(x, y):
        a = np.tanh(x)
        total = a.sum(axis=0)  # a's last read
        return total, np.sin(x)  # into a: x orders both

    def of_y(x, y):
        a = np.tanh(x)
        total = a.sum(axis=0)
        return total, np.cos(y)  # not into a: y may order its axes otherwise

    x, y = data((3, 4), np.float64), data((3, 4), np.float64, 1)
    for f, reused in [(of_x, True), (of_y, False)]:
        sot.reset()
        fast, backend = translate(f)
        with np.errstate(all="ignore"):
            for args in [(x, y), (x, np.asfortranarray(y)), (np.asfortranarray(x), y)]:
                assert same_layout(fast(*args), f(*args))
        source = backend.compiled[0].__sot_source__
        tanh = re.search(r"(v\d+) = c\d+\(v0\)", source).group(1)
        assert bool(re.search(rf"v\d+ = c\d+\(v\d+, {tanh}\)", source)) == reused, source


# ---------------------------------------------------------------- first runs


def logs(x):
    scaled = x * 2.0
    return np.log(scaled) + 1.0, scaled  # np.log(0.0) warns here


LOG_LINE = logs.__code__.co_firstlineno + 2


def test_a_graph_runs_its_nodes_at_its_first_run_and_is_lowered_at_its_second():
    fast, backend = translate(logs)
    x = np.array([0.0, 1.0, 4.0])
    frames_seen = []

    for _ in range(3):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = fast(x)
        assert identical(result, logs(x))
        (graph,) = backend.compiled
        # The graph function is the same object throughout: its code changes at the second run.
        frames_seen.append((graph.__code__, "__sot_source__" in graph.__dict__))
        # Each run warns once, from the node's own line, as eagerly.
        assert [(w.category, w.filename, w.lineno) for w in caught] == [(RuntimeWarning, __file__, LOG_LINE)]
    first, lowered, again = frames_seen
    assert first[1] is False and lowered[1] is True and again == lowered and lowered[0] is not first[0]
    assert "c" in graph.__sot_source__ and graph.__code__.co_filename == __file__
    stats = sot.stats(fast)
    # The first run's frames (in this file, at its lines) are never translated.
    assert (stats.translations, stats.graphs, stats.ops_captured, stats.cache_hits) == (1, 1, 3, 2)
    assert stats.graph_breaks == []


def in_region(x):
    with np.errstate(divide="raise"):
        y = np.log(x)
    return y * 2.0


def test_a_first_run_that_raises_leaves_the_regions_it_entered():
    fast, backend = translate(in_region)
    x = np.array([1.0, 2.0])
    assert identical(fast(x), in_region(x))
    assert sot.stats(fast).graphs == 1 and sot.stats(fast).graph_breaks == []
    # The same graph compiled again, run first where it raises inside its region (a first
    # run is the translating call's, on its inputs: this one is made to fail).
    (graph,) = backend.graphs
    function = compile_graph(graph, (x,))
    before = np.geterr()
    for run in ("first", "lowered"):
        with pytest.raises(FloatingPointError, match="divide by zero encountered in log"):
            function(np.array([0.0, 1.0]))
        assert np.geterr() == before, run
    assert "__sot_source__" in function.__dict__
    assert identical(function(x), backend.compiled[0](x))


def doubled_logs(x):
    x *= 2.0  # into the input: a graph that raises after it cannot run the frame again
    return np.log(x) + 1.0


def test_a_graph_the_lowering_cannot_make_runs_as_recorded(monkeypatch):
    def failing(graph, examples):
        raise RuntimeError("a lowering rule failed")

    fast, backend = translate(doubled_logs)
    monkeypatch.setattr(_numpy_backend, "_lowered", failing)
    for _ in range(4):
        x, expected_x = np.array([1.0, 4.0]), np.array([1.0, 4.0])
        assert identical(fast(x), doubled_logs(expected_x)) and identical(x, expected_x)
    (graph,) = backend.compiled
    assert "__sot_source__" not in graph.__dict__  # still the first run's code
    stats = sot.stats(fast)
    assert (stats.translations, stats.graphs, stats.ops_captured, stats.cache_hits) == (1, 1, 3, 3)
    assert stats.fallbacks == [] and stats.graph_breaks == []


def test_only_a_code_object_is_marked_as_never_translated():
    with pytest.raises(TypeError, match="_sot_never_translated\\(\\) takes a code object, not int"):
        _native._sot_never_translated(42)


# ---------------------------------------------------------------- fused runs


class KernelCalls:
    """The fused-kernel calls since it was made: run, or given up (numpy's calls ran)."""

    def __init__(self):
        self.start = _native._sot_fused_calls()

    @property
    def ran(self):
        return _native._sot_fused_calls()[0] - self.start[0]

    @property
    def gave_up(self):
        return _native._sot_fused_calls()[1] - self.start[1]


def layer(x, bias, scale, k):
    """Elementwise code of every fused operation: numbers (constant, argument, int), a
    broadcast bias, a mean's division, powers numpy runs as other ufuncs."""
    centered = x - x.mean(axis=-1, keepdims=True)
    y = centered / ((centered * centered).mean(axis=-1, keepdims=True) + 1e-5) ** 0.5
    y = -(y * scale + bias) * k
    z = np.abs(y) ** 2 + np.sqrt(np.square(y) + 1.0) - (y + 3.0) ** -1
    return y, np.positive(z) * 0.5, np.reciprocal(z + 2) - np.subtract(z, 1.5)


@pytest.mark.parametrize("shape", [(7,), (3, 8), (2, 3, 4)], ids=str)
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=lambda d: np.dtype(d).name)
def test_fused_runs_give_eager_results_bit_for_bit(dtype, shape):
    fast, backend = translate(layer)
    rng = np.random.default_rng(1)
    for call in range(4):
        x = (rng.standard_normal(shape) * 4).astype(dtype)
        bias = rng.standard_normal(shape[-1:]).astype(dtype)
        # A Python float and int that change on every call (graph inputs from the second).
        scale, k = float(rng.uniform(0.5, 2)), call + 2
        expected = layer(x, bias, scale, k)
        assert same_layout(fast(x, bias, scale, k), expected)
    # Every elementwise operation is in one of two runs, cut by the second mean's sum (in
    # each graph lowered: the first call's, for its constants, ran once and was not).
    graphs = backend.compiled
    lowered = [graph for graph in graphs if "__sot_source__" in graph.__dict__]
    assert lowered == graphs[1:] and len(graphs) == 2
    assert [fused_runs(graph.__sot_source__) for graph in lowered] == [2]
    calls = KernelCalls()
    x = (rng.standard_normal(shape) * 4).astype(dtype)
    assert same_layout(fast(x, bias, 1.25, 9), layer(x, bias, 1.25, 9))
    assert (calls.ran, calls.gave_up) == (2, 0)


@pytest.mark.parametrize(
    ("function", "x", "message"),
    [
        (lambda x: x * 1e30 * 1e30, 10.0, "overflow encountered in multiply"),
        (lambda x: (x - 1.0) / (x - x), 2.0, "divide by zero encountered in divide"),
        (lambda x: np.sqrt(x - 5.0) + 1.0, 2.0, "invalid value encountered in sqrt"),
    ],
    ids=["overflow", "divide", "invalid"],
)
def test_what_numpy_warns_of_is_warned_of_by_numpy(function, x, message):
    # The kernel gives up where the hardware raised a flag numpy reports; numpy's calls then
    # warn, or raise under np.errstate, as eagerly.
    fast, backend = translate(function)
    x = np.full((2, 3), x, np.float32)
    with pytest.warns(RuntimeWarning, match=message):
        expected = function(x)
    with pytest.warns(RuntimeWarning, match=message):
        assert same_layout((call_lowered(fast, x),), (expected,))
    calls = KernelCalls()
    with np.errstate(all="raise"), pytest.raises(FloatingPointError, match=message):
        fast(x)
    assert calls.gave_up == 1 and calls.ran == 0
    # Quiet NaN and infinity pass through the arithmetic without a flag, as in numpy.
    quiet = np.array([[np.nan, np.inf, -np.inf], [0.0, -0.0, np.nan]], np.float32)
    if message.startswith("overflow"):
        with np.errstate(all="raise"):
            assert same_layout((fast(quiet),), (function(quiet),))
        assert calls.ran == 1


def test_underflow_numpy_ignores_by_default_is_raised_where_asked():
    def f(x):
        return x * 1e-30 * 1e-30

    fast, backend = translate(f)
    x = np.full(4, 3.0, np.float32)
    assert same_layout((fast(x),), (f(x),))
    with np.errstate(under="raise"), pytest.raises(FloatingPointError, match="underflow encountered in multiply"):
        fast(x)


def test_operands_of_any_strides_and_c_order_by_strides():
    def f(x, y):
        return (x + y) * 2.0 - y

    fast, backend = translate(f)
    base = np.arange(96, dtype=np.float64).reshape(8, 12)
    x, y = base[:4, :6].copy(), base[4:, 6:].copy()
    assert same_layout((call_lowered(fast, x, y),), (f(x, y),))
    calls = KernelCalls()
    # Slices of a larger array (axes still in C order by their strides) run in the kernel;
    # an F-order operand (numpy gives the result its order) and reversed rows go to numpy.
    cases = [
        ((base[:4, :6], base[4:, 6:]), True),
        ((base[:4, ::2][:, :6], base[::2, :6][:4]), True),
        ((np.asfortranarray(x), y), False),
        ((base[3::-1, :6], y), False),
    ]
    for args, in_kernel in cases:
        before = calls.ran
        result = fast(*args)
        assert same_layout((result,), (f(*args),))
        assert (calls.ran > before) == in_kernel
    # A vector may step any way: it has one layout.
    v, w = base[0, ::-2], base[1, :6]
    call_lowered(fast, v, w)  # compiled for vectors, then lowered
    before = calls.ran
    assert same_layout((fast(v, w),), (f(v, w),))
    assert calls.ran == before + 1


def test_numbers_the_dtype_cannot_hold_exactly_go_to_numpy():
    def f(x, k):
        return (x + k) * 3.0

    fast, backend = translate(f)
    x = np.linspace(-1, 1, 6, dtype=np.float32)
    for k in (1, 2, 3):  # from the second call on, k is a graph input: lowered at the third
        assert same_layout((fast(x, k),), (f(x, k),))
    calls = KernelCalls()
    for k in (5, 2**24, 2**24 + 1, 2**40):
        assert same_layout((fast(x, k),), (f(x, k),))
    # Ints past 2**24 are not exactly float32 values: numpy converts them.
    assert (calls.ran, calls.gave_up) == (2, 2)


def test_what_is_not_fused():
    def f(x, h, i):
        a = np.tanh(x) * 2.0 + 1.0  # tanh: numpy's own approximation, left to numpy
        b = np.exp(a)  # one operation between two calls: nothing to fuse
        return b, h * 2.0 + 1.0, i * 2 + 1  # float16 and integers: not fused

    fast, backend = translate(f)
    x = np.linspace(-1, 1, 6)
    args = (x, x.astype(np.float16), np.arange(6))
    assert identical(call_lowered(fast, *args), f(*args))
    source = backend.compiled[0].__sot_source__
    assert fused_runs(source) == 1, source  # tanh(x) * 2.0 + 1.0's two operations


def test_the_kernels_check_numpys_array_layout_and_their_arguments():
    sample = np.arange(24.0).reshape(4, 6)[::2, 1:]
    data_address = sample.__array_interface__["data"][0]
    check = _native._sot_fused_check_layout
    assert check(sample, data_address, list(sample.shape), list(sample.strides))
    assert not check(sample, data_address + 8, list(sample.shape), list(sample.strides))
    assert not check(sample, data_address, [2, 6], list(sample.strides))
    assert not check([1, 2], 0, [2, 1], [8, 8])
    subclassed = sample.view(type("Sub", (np.ndarray,), {}))  # only numpy.ndarray itself
    assert not check(subclassed, data_address, list(sample.shape), list(sample.strides))
    float32 = np.dtype(np.float32)
    with pytest.raises(ValueError, match="not a fused kernel program: .*ends early"):
        _native._sot_fused_kernel(b"\x04\x00\x00\x00", float32)
    # -x of 4 float32s: item size, one operand (an array of shape (4,)), no constants, one
    # instruction (negative of operand 0, shape (4,), the first result).
    words = [4, 1, 1, 1, 4, 0, 1, 4, 0, 0xFFFFFFFF, 1, 4, 1]
    program = np.array(words, "<u4")
    with pytest.raises(ValueError, match="operation code 99"):
        _native._sot_fused_kernel(np.array(words[:7] + [99] + words[8:], "<u4").tobytes(), float32)
    for wrong in (np.dtype(np.float64), np.dtype(">f4"), np.dtype(np.int32)):
        with pytest.raises(ValueError, match="must be a native float of 4 bytes"):
            _native._sot_fused_kernel(program.tobytes(), wrong)
    kernel = _native._sot_fused_kernel(program.tobytes(), float32)
    x = np.arange(4, dtype=np.float32)
    (negated,) = _native._sot_fused((kernel, np.empty, (((4,), float32),)), x)
    assert negated.tolist() == [-0.0, -1.0, -2.0, -3.0]
    # An operand of another type or dtype: None (numpy's calls run instead).
    assert _native._sot_fused((kernel, np.empty, (((4,), float32),)), x.astype(np.float64)) is None
    assert _native._sot_fused((kernel, np.empty, (((4,), float32),)), [0.0, 1.0, 2.0, 3.0]) is None
    # An allocator that hands back an array someone else holds, or a view: refused.
    for allocate in (lambda shape, dtype: x, lambda shape, dtype: np.empty(8, dtype)[::2]):
        with pytest.raises(ValueError, match="did not make a new C-order array"):
            _native._sot_fused((kernel, allocate, (((4,), float32),)), x)
    with pytest.raises(ValueError, match="expected tuple of length 3"):
        _native._sot_fused((None, None), np.zeros(4))


def stable_scores(x, mask):
    scores = x * 0.25 + mask
    return scores - scores.max(axis=-1, keepdims=True), np.min(scores, axis=2, keepdims=True) * 2.0


def test_a_row_maximum_joins_a_run_and_gives_up_where_numpys_order_could_show():
    fast, backend = translate(stable_scores)
    rng = np.random.default_rng(3)
    mask = np.triu(np.full((4, 4), -1e9, np.float32), 1)
    x = rng.standard_normal((2, 4, 4)).astype(np.float32)
    assert same_layout(call_lowered(fast, x, mask), stable_scores(x, mask))
    (graph,) = backend.compiled
    assert fused_runs(graph.__sot_source__) == 1, graph.__sot_source__
    calls = KernelCalls()
    for case in range(4):
        y = rng.standard_normal((2, 4, 4)).astype(np.float32)
        if case == 1:
            y[0, 1, 2] = np.nan  # numpy's maximum propagates it
        if case == 2:
            y[1, 3, :] = [0.0, -0.0, -1e10, -1e10]  # a row of scores whose maximum is zero
        with np.errstate(invalid="ignore"):
            assert same_layout(fast(y, mask), stable_scores(y, mask))
    assert (calls.ran, calls.gave_up) == (2, 2)


class Dense:
    def __init__(self, rng, features, dtype):
        self.w = (rng.standard_normal((features, features)) / features**0.5).astype(dtype)
        self.b = (rng.standard_normal(features) * 0.1).astype(dtype)


def dense_layers(layers, x):
    for layer in layers:
        h = x @ layer.w + layer.b
        h = np.maximum(h, 0)
        x = x + h
    return x


@pytest.mark.parametrize("shape", [(1, 8), (2, 8), (5, 33)], ids=str)
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=lambda d: np.dtype(d).name)
def test_dense_layers_run_in_one_kernel_with_numpys_products(dtype, shape):
    # Six matrix products, bias adds, ReLUs and residual adds: one kernel call, whose
    # products are numpy's own matmul loop (its BLAS's summation order: gemv for one row,
    # gemm for more), so the results are eager's bit for bit.
    rng = np.random.default_rng(7)
    layers = [Dense(rng, shape[1], dtype) for _ in range(6)]
    fast, backend = translate(dense_layers)
    x = rng.standard_normal(shape).astype(dtype)
    assert same_layout((call_lowered(fast, layers, x),), (dense_layers(layers, x),))
    (graph,) = backend.compiled
    assert fused_runs(graph.__sot_source__) == 1, graph.__sot_source__
    assert sot.stats(fast).ops_captured == 24
    calls = KernelCalls()
    for _ in range(3):
        x = rng.standard_normal(shape).astype(dtype)
        assert same_layout((fast(layers, x),), (dense_layers(layers, x),))
    assert (calls.ran, calls.gave_up) == (3, 0)


def scores(x, w, v):
    return np.minimum(x @ w.T, 1.0) @ v - x.sum(axis=-1, keepdims=True)


def test_products_take_operands_of_any_layout():
    # A product's result is in C order whatever its operands' layout: a transposed weight
    # (an F-order operand) and reversed rows run in the kernel, where an elementwise
    # operation's operands must step in C order.
    fast, backend = translate(scores)
    rng = np.random.default_rng(5)
    w, v = rng.standard_normal((6, 4)), rng.standard_normal((6, 3))
    x = rng.standard_normal((2, 4))
    assert same_layout((call_lowered(fast, x, w, v),), (scores(x, w, v),))
    (graph,) = backend.compiled
    assert fused_runs(graph.__sot_source__) == 1, graph.__sot_source__
    calls = KernelCalls()
    for w_now in (w, rng.standard_normal((6, 4)), np.asfortranarray(w), w[::-1]):
        x = rng.standard_normal((2, 4))
        assert same_layout((fast(x, w_now, v),), (scores(x, w_now, v),))
    assert (calls.ran, calls.gave_up) == (4, 0)


def relu_product(x, w):
    return np.maximum((x @ w) * -1.0, 0.0) * 2.0


def test_what_a_product_or_a_pick_could_change_goes_to_numpy():
    fast, backend = translate(relu_product)
    w = np.eye(3)
    x = np.array([[1.0, -2.0, 3.0]])
    assert same_layout((call_lowered(fast, x, w),), (relu_product(x, w),))
    calls = KernelCalls()
    # -0 beside 0 (0 * -1.0; numpy's scalar and vector loops pick differently), a NaN:
    # numpy's calls.
    for row in ([0.0, 1.0, 2.0], [np.nan, 1.0, 2.0], [-1.0, 1.0, -2.0]):
        x = np.array([row])
        assert same_layout((fast(x, w),), (relu_product(x, w),))
    assert (calls.ran, calls.gave_up) == (1, 2)
    # An overflow in the product: numpy's matmul warns of it, as eagerly.
    huge = np.full((1, 3), 1e200)
    with pytest.warns(RuntimeWarning, match="overflow encountered in matmul"):
        expected = relu_product(huge, np.full((3, 3), 1e200))
    with pytest.warns(RuntimeWarning, match="overflow encountered in matmul"):
        assert same_layout((fast(huge, np.full((3, 3), 1e200)),), (expected,))
    assert calls.gave_up == 3


def test_the_kernels_find_numpys_matmul_loops_only_in_numpys_matmul():
    check = _native._sot_fused_check_matmul
    float32, float64 = np.dtype(np.float32).num, np.dtype(np.float64).num
    assert check(np.matmul, float32, float64)
    assert not check(np.add, float32, float64)
    assert not check(len, float32, float64)


def dot_then_scale(x, w, b, order):
    y = np.dot(x, w)[order]
    return y * 2.0 + b


def test_numpys_functions_run_at_compile_time_so_what_follows_them_fuses():
    # np.dot (not a ufunc: no kernel computes it) and an index by a range run once on the
    # examples, so the types of their results are known and the arithmetic after them is one
    # kernel call.
    fast, backend = translate(dot_then_scale)
    rng = np.random.default_rng(2)
    x, w, b = rng.standard_normal((3, 4)), rng.standard_normal((4, 5)), rng.standard_normal(5)
    for _ in range(2):
        assert same_layout((fast(x, w, b, range(3)),), (dot_then_scale(x, w, b, range(3)),))
    (graph,) = backend.compiled
    assert fused_runs(graph.__sot_source__) == 1, graph.__sot_source__
