"""Paddle's SOT (paddle.jit.sot, the real paddlepaddle 3.3.1 wheel) on framehook.

``framehook.sot.paddle.install()`` swaps framehook's five eval-frame functions
into ``paddle.base.core`` before ``paddle.jit.sot`` is imported, so Paddle's
pure-Python translator runs as the "sot" frame hook. Each test runs a function
through ``symbolic_translate`` or ``paddle.jit.to_static`` and compares the
outputs (and gradients, where there are any) with eager execution, and checks
how many times SOT translated (``OpcodeExecutorCache().translate_count``).
"""

import collections
import io
import os
import sys
import threading
import types
from contextlib import redirect_stdout

import pytest

paddle = pytest.importorskip("paddle", reason="paddlepaddle 3.3.1 wheels are installed on 3.10 and 3.13 in the matrix")

import numpy as np  # noqa: E402  (comes with paddle)

import framehook  # noqa: E402
import framehook.sot  # noqa: E402
import framehook.sot.paddle  # noqa: E402

framehook.sot.paddle.install()  # before paddle.jit.sot is imported
assert framehook.sot.paddle.installed()

from paddle.jit.sot import psdb, symbolic_translate  # noqa: E402
from paddle.jit.sot.opcode_translator.executor.executor_cache import OpcodeExecutorCache  # noqa: E402
from paddle.jit.sot.utils import strict_mode_guard  # noqa: E402

# Functions with an exception table (3.11+: try/except/finally/with) never
# reach SOT, as with Paddle's own eval frame: its code generator drops them.
EXCEPTION_TABLES = sys.version_info >= (3, 11)

CustomCode = collections.namedtuple("CustomCode", ["code", "disable_eval_frame"])


@pytest.fixture(autouse=True, scope="module")
def ci_flags():
    """As Paddle's CI runs test/sot: every graph is compiled however small, and a fallback
    to dygraph is an error instead of a silent slow path. Read at call time
    (paddle.utils.environments); put back after this module, for the tests after it in the
    process (the docs' examples, which inherit the environment)."""
    flags = {"MIN_GRAPH_SIZE": "0", "STRICT_MODE": "1", "SOT_LOG_LEVEL": "0"}
    saved = {name: os.environ.get(name) for name in flags}
    os.environ.update(flags)
    yield
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


def test_installed():
    # Translation counts below are Paddle 3.3.1's (tests/requirements-paddle.txt).
    assert paddle.__version__ == "3.3.1"
    assert framehook.sot.paddle.installed()
    core = paddle.base.core
    assert core.set_eval_frame is framehook.sot.set_eval_frame
    assert core.eval_frame_skip_file_prefix is framehook.sot.eval_frame_skip_file_prefix
    assert core.eval_frame_no_skip_codes is framehook.sot.eval_frame_no_skip_codes
    assert core.sot_setup_codes_with_graph is framehook.sot.sot_setup_codes_with_graph
    assert core.sot_set_with_graph is framehook.sot.sot_set_with_graph
    assert paddle.framework.core is core
    framehook.sot.paddle.install()  # idempotent
    assert framehook.sot.paddle.installed()
    # Too late to install anew once paddle.jit.sot is imported.
    assert "paddle.jit.sot" in sys.modules
    native = core.sot_set_with_graph
    core.sot_set_with_graph = lambda code: None
    try:
        assert not framehook.sot.paddle.installed()
        with pytest.raises(RuntimeError, match="before paddle.jit.sot is imported"):
            framehook.sot.paddle.install()
    finally:
        core.sot_set_with_graph = native
    assert framehook.sot.paddle.installed()


@pytest.fixture
def sot_cache():
    """SOT's translation cache, empty at the start of the test."""
    cache = OpcodeExecutorCache()
    cache.clear()
    yield cache
    cache.clear()


def assert_nest_match(actual, expected):
    """Same structure and types; tensors and arrays allclose, the rest equal."""
    assert type(actual) is type(expected), (type(actual), type(expected))
    if isinstance(actual, (tuple, list)):
        assert len(actual) == len(expected)
        for a, e in zip(actual, expected):
            assert_nest_match(a, e)
    elif isinstance(actual, dict):
        assert list(actual) == list(expected)
        for key in actual:
            assert_nest_match(actual[key], expected[key])
    elif isinstance(actual, (paddle.Tensor, np.ndarray)):
        np.testing.assert_allclose(np.asarray(actual), np.asarray(expected), rtol=1e-6, atol=1e-6)
    else:
        assert actual == expected


def assert_sot_matches_eager(fn, *args, **kwargs):
    """symbolic_translate(fn)'s result equals eager fn's; returns it."""
    translated = symbolic_translate(fn)(*args, **kwargs)
    assert_nest_match(translated, fn(*args, **kwargs))
    return translated


@pytest.fixture(params=["symbolic_translate", "to_static"])
def translate(request):
    """The two ways into SOT: paddle.jit.sot.symbolic_translate, and
    paddle.jit.to_static (full_graph=False, the default, runs SOT)."""
    if request.param == "symbolic_translate":
        return symbolic_translate
    return paddle.jit.to_static


def check(translate, fn, *args, **kwargs):
    """The translated fn's result equals eager fn's; returns it."""
    translated = translate(fn)(*args, **kwargs)
    assert_nest_match(translated, fn(*args, **kwargs))
    return translated


def tensor(values, stop_gradient=True):
    return paddle.to_tensor(np.asarray(values, dtype="float32"), stop_gradient=stop_gradient)


# ---------------------------------------------------------------- arithmetic


@psdb.check_no_breakgraph
def arithmetic(x, y):
    z = x * y + x / (y + 1.0)
    z = paddle.exp(-z) - z**2
    return z.sum(axis=0), paddle.matmul(x, y.T), (z > 0).astype("float32")


def test_tensor_arithmetic(translate, sot_cache):
    x = tensor([[1.0, -2.0, 3.0], [0.5, 0.25, -1.0]])
    y = tensor([[2.0, 1.0, 0.5], [-0.5, 3.0, 1.5]])
    check(translate, arithmetic, x, y)
    assert sot_cache.translate_count == 1
    assert [code.co_name for code in sot_cache.cache] == ["arithmetic"]
    # Same kinds of inputs: the guarded cache hits.
    check(translate, arithmetic, y, x)
    assert sot_cache.translate_count == 1
    # Another shape: translated anew.
    check(translate, arithmetic, tensor([[1.0, 2.0]]), tensor([[3.0, 4.0]]))
    assert sot_cache.translate_count == 2
    assert framehook.frame_hooks() == []


# --------------------------------------------------------------- graph breaks


def prints_midway(x, y):
    z = x + y
    print("midway", z)
    return z * y - x


def converts_to_numpy(x):
    y = x * 2 + 1
    total = float(np.sum(y.numpy()))  # leaves the graph: a concrete value
    return y - total, total


def branches_on_tensor(x):
    y = x + 1
    if y.sum() > 0:  # a tensor's truth value: a graph break
        return y * 2
    return y - 2


def test_graph_break_print(translate, sot_cache):
    x, y = tensor([1.0, 2.0]), tensor([3.0, -4.0])
    out = io.StringIO()
    with redirect_stdout(out):
        check(translate, prints_midway, x, y)
    printed = out.getvalue()
    assert printed.count("midway Tensor(shape=[2]") == 2 and printed.count("[ 4., -2.]") == 2
    # The function up to the break, and the resume function after it.
    assert sot_cache.translate_count == 2
    assert sorted(code.co_name for code in sot_cache.cache)[1] == "prints_midway"
    with redirect_stdout(io.StringIO()):
        check(translate, prints_midway, y, x)
    assert sot_cache.translate_count == 2


def test_graph_break_numpy(translate, sot_cache):
    x = tensor([1.0, 2.0, 3.0])
    check(translate, converts_to_numpy, x)
    assert sot_cache.translate_count == 3
    check(translate, converts_to_numpy, x)
    assert sot_cache.translate_count == 3
    # The float coming back from numpy is guarded by value: a new one, a new resume translation.
    check(translate, converts_to_numpy, tensor([4.0, 5.0, 6.0]))
    assert sot_cache.translate_count == 4


def test_graph_break_tensor_condition(translate, sot_cache):
    check(translate, branches_on_tensor, tensor([1.0, 2.0]))
    assert sot_cache.translate_count == 2
    check(translate, branches_on_tensor, tensor([-5.0, 2.0]))
    assert sot_cache.translate_count == 3
    check(translate, branches_on_tensor, tensor([3.0, 2.0]))
    check(translate, branches_on_tensor, tensor([-3.0, 2.0]))
    assert sot_cache.translate_count == 3


# ------------------------------------------------------ closures, nested code


def make_affine(weight, bias):
    def affine(x):
        return x * weight + bias

    return affine


@psdb.check_no_breakgraph
def nested_closures(x, y):
    scale = 3.0

    def inner(z):
        return z * scale + y

    def outer(z):
        nonlocal scale
        scale = scale + 1.0
        return inner(z) - x

    first = outer(x)
    return first, outer(first), scale


def test_closures_and_nested_functions(translate, sot_cache):
    x, y = tensor([1.0, -1.0]), tensor([0.5, 2.0])
    check(translate, nested_closures, x, y)
    assert sot_cache.translate_count == 1
    # A closure as the translated function: its free variables are in the frame.
    affine = make_affine(tensor([2.0, 3.0]), tensor([1.0, 1.0]))
    assert affine.__code__.co_freevars == ("bias", "weight")
    check(translate, affine, x)
    assert sot_cache.translate_count == 2
    check(translate, affine, y)
    assert sot_cache.translate_count == 2


# ----------------------------------------------------------------- generators


def scaled_terms(x, n):
    for i in range(n):
        yield x * (i + 1)


def uses_generators(x):
    total = x * 0
    for term in scaled_terms(x, 3):
        total = total + term
    squares = sum(t * t for t in (x, total))
    return total, squares


def consumes_generator(terms, x):
    return sum(terms) + x


def noisy_terms(x, n):
    for i in range(n):
        print("term", i)  # a graph break inside a generator: SOT gives up on the function
        yield x * (i + 1)


def uses_noisy_generator(x):
    total = x * 0
    for term in noisy_terms(x, 3):
        total = total + term
    return total


def test_generator_inside_function(translate, sot_cache):
    x = tensor([1.0, 2.0])
    check(translate, uses_generators, x)
    assert sot_cache.translate_count == 1  # simulated inline, no break
    check(translate, uses_generators, tensor([3.0, -1.0]))
    assert sot_cache.translate_count == 1


def test_generator_as_input(translate, sot_cache):
    x = tensor([1.0, 2.0])
    result = translate(consumes_generator)(scaled_terms(x, 3), x)
    assert_nest_match(result, consumes_generator(scaled_terms(x, 3), x))
    assert sot_cache.translate_count == 2  # a break at sum(terms), then the resume function


def test_generator_fallback_runs_eagerly(translate, sot_cache):
    """Not strict: SOT falls back to dygraph, and the generator runs under the hook."""
    x = tensor([1.0, 2.0])
    out = io.StringIO()
    with strict_mode_guard(False), redirect_stdout(out):
        for _ in range(3):
            check(translate, uses_noisy_generator, x)
    assert out.getvalue().count("term") == 18
    assert sot_cache.translate_count == 1


# --------------------------------------------------------------------- layers


def make_net():
    paddle.seed(2024)
    return paddle.nn.Sequential(
        paddle.nn.Linear(4, 8),
        paddle.nn.ReLU(),
        paddle.nn.Linear(8, 3),
    )


class MLP(paddle.nn.Layer):
    def __init__(self):
        super().__init__()
        self.body = make_net()
        self.head = paddle.nn.Linear(3, 2)

    def forward(self, x, scale=1.0):
        return self.head(paddle.tanh(self.body(x)) * scale)


def run_net(net, x):
    return net(x).mean(axis=-1)


def test_layers(translate, sot_cache):
    net = make_net()
    x = paddle.rand([5, 4])
    check(translate, run_net, net, x)
    assert sot_cache.translate_count == 1
    check(translate, run_net, net, paddle.rand([5, 4]))
    assert sot_cache.translate_count == 1
    model = MLP()
    check(translate, model.forward, x, scale=0.5)
    assert sot_cache.translate_count == 2


def test_layer_to_static_forward_and_gradients(sot_cache):
    eager, static = MLP(), MLP()
    static.set_state_dict(eager.state_dict())
    static = paddle.jit.to_static(static)
    for _step in range(2):
        x = paddle.rand([6, 4])
        eager_out, static_out = eager(x), static(x)
        assert_nest_match(static_out, eager_out)
        eager_out.sum().backward()
        static_out.sum().backward()
        for (name, p_eager), (_, p_static) in zip(eager.named_parameters(), static.named_parameters()):
            assert p_static.grad is not None, name
            np.testing.assert_allclose(p_static.grad.numpy(), p_eager.grad.numpy(), rtol=1e-5, atol=1e-6)
    assert sot_cache.translate_count == 1


# -------------------------------------------------------------------- PyLayer


class CubeWithCustomGrad(paddle.autograd.PyLayer):
    """x**3 forward; a deliberately different backward (2x + 1 instead of 3x**2),
    so that a gradient computed by autograd instead of it would show."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensor()
        return grad * (2 * x + 1)


def uses_pylayer(x, w):
    y = CubeWithCustomGrad.apply(x * w)
    return (y + x).sum()


def test_pylayer_forward_and_backward(translate, sot_cache):
    results = []
    for run in (translate(uses_pylayer), uses_pylayer):
        x = tensor([0.5, -1.0, 2.0], stop_gradient=False)
        w = tensor([1.5, 2.0, -0.5], stop_gradient=False)
        out = run(x, w)
        out.backward()
        results.append((out.numpy(), x.grad.numpy(), w.grad.numpy()))
    (sot_out, sot_dx, sot_dw), (eager_out, eager_dx, eager_dw) = results
    np.testing.assert_allclose(sot_out, eager_out, rtol=1e-6)
    np.testing.assert_allclose(sot_dx, eager_dx, rtol=1e-6)
    np.testing.assert_allclose(sot_dw, eager_dw, rtol=1e-6)
    # The custom backward ran: d/dx = w * (2xw + 1) + 1, not 3(xw)^2 w + 1.
    x, w = np.array([0.5, -1.0, 2.0]), np.array([1.5, 2.0, -0.5])
    np.testing.assert_allclose(sot_dx, w * (2 * x * w + 1) + 1, rtol=1e-6)
    # apply is a break; forward, called back from C++, is a frame of its own.
    assert sot_cache.translate_count == 3
    assert {code.co_name for code in sot_cache.cache} >= {"uses_pylayer", "forward"}


# ------------------------------------------------- containers, keyword inputs


@psdb.check_no_breakgraph
def takes_containers(xs, table, pair, *, scale=1.0, shift=0.0):
    a, b = pair
    out = xs[0] + xs[1] * table["w"] - table.get("b", 0.0)
    return {"out": out * scale + shift, "parts": [a * scale, b], "sum": (a + b, len(xs))}


def test_containers_and_keyword_arguments(translate, sot_cache):
    xs = [tensor([1.0, 2.0]), tensor([3.0, 4.0])]
    table = {"w": tensor([0.5, 0.5]), "b": tensor([1.0, -1.0])}
    pair = (tensor([2.0, 2.0]), tensor([-1.0, 0.0]))
    result = check(translate, takes_containers, xs, table, pair, scale=2.0, shift=tensor([0.1, 0.2]))
    assert list(result) == ["out", "parts", "sum"]
    assert sot_cache.translate_count == 1
    # Other keyword values and a missing key: new guards, a new translation.
    check(translate, takes_containers, xs, {"w": tensor([1.0, 1.0])}, pair)
    assert sot_cache.translate_count == 2
    check(translate, takes_containers, xs, table, pair, scale=2.0, shift=tensor([5.0, 6.0]))
    assert sot_cache.translate_count == 2


# ------------------------------------------- control flow on Python values


@psdb.check_no_breakgraph
def python_control_flow(x, n, mode):
    for i in range(n):
        if i % 2 == 0:
            x = x + i
        else:
            x = x * 2
    if mode == "double":
        return x * 2
    elif mode == "negate":
        return -x
    return x


def test_python_control_flow(translate, sot_cache):
    x = tensor([1.0, 2.0])
    calls = [(3, "double"), (3, "double"), (4, "double"), (3, "negate"), (4, "double"), (2, "other"), (2, "other")]
    counts = []
    for n, mode in calls:
        check(translate, python_control_flow, x, n, mode)
        counts.append(sot_cache.translate_count)
    # Python values are guarded: a repeated call hits the cache, new values
    # translate anew. (4, "double") is translated twice: Paddle 3.3.1 does not
    # keep the translation made when n first changed (with its own eval frame too).
    assert counts == [1, 1, 2, 3, 4, 5, 5]


# ------------------------------------------------------------------ recursion


def power(x, n):
    if n == 0:
        return paddle.ones_like(x)
    return x * power(x, n - 1)


def fib_sum(x, n):
    if n < 2:
        return x * n
    return fib_sum(x, n - 1) + fib_sum(x, n - 2)


def test_recursion(translate, sot_cache):
    x = tensor([1.5, -2.0])
    check(translate, power, x, 4)
    check(translate, fib_sum, x, 6)
    assert sot_cache.translate_count == 2  # the recursive calls are inlined
    check(translate, power, tensor([3.0, 0.5]), 4)
    assert sot_cache.translate_count == 2


# -------------------------------------------------------------- try / except


def guarded_divide(x, d):
    try:
        if d == 0:
            raise ZeroDivisionError("d is zero")
        y = x / d
    except ZeroDivisionError:
        y = x * 0
    return y + 1


def test_try_except(translate, sot_cache):
    x = tensor([2.0, 4.0])
    observed = []

    def observer(event, code, original):
        if original is guarded_divide.__code__:
            observed.append((event, code))

    framehook.add_frame_hook(None, observer=observer, name="watch")
    check(translate, guarded_divide, x, 2)
    check(translate, guarded_divide, x, 0)
    calls = [code for event, code in observed if event == "call"]
    assert len(calls) == 4  # two translated calls, two eager ones
    if EXCEPTION_TABLES:
        # Passed through untranslated: SOT never saw it, the original code ran.
        assert sot_cache.translate_count == 0
        assert all(code is guarded_divide.__code__ for code in calls)
    else:
        # 3.10: SOT simulates the handler blocks; d is guarded by value.
        assert sot_cache.translate_count == 2
        assert calls[0] is not guarded_divide.__code__ and calls[2] is not guarded_divide.__code__
        assert calls[1] is guarded_divide.__code__ and calls[3] is guarded_divide.__code__


# ------------------------------------------------------ the raw contract


def add(a, b):
    return a + b


def mul(a, b):
    return a * b


def test_raw_eval_frame_contract():
    """Paddle's own test_eval_frame, through framehook: a callback returning
    CustomCode(code, disable_eval_frame) swaps add's code for mul's."""
    core = paddle.base.core
    replaced = CustomCode(mul.__code__, True)
    seen = []

    def callback(frame):
        seen.append(frame.f_code.co_name)
        if frame.f_code.co_name == "add":
            return replaced
        return CustomCode(code=frame.f_code, disable_eval_frame=True)

    assert core.set_eval_frame(callback) is None
    try:
        hooks = framehook.frame_hooks()
        assert add(2, 3) == 6
        assert add(4, 5) == 20
    finally:
        assert core.set_eval_frame(None) is callback
    assert add(2, 3) == 5
    assert len(hooks) == 1 and hooks[0].name == "sot"
    assert seen == ["add", "add"]
    assert framehook.frame_hooks() == []
    assert not framehook._native._is_installed()
    # Anything but None or a callable is ignored.
    assert core.set_eval_frame(42) is None
    assert add(1, 1) == 2
    assert framehook.frame_hooks() == []


def test_raw_frame_contents():
    """The callback's frame: f_code, f_globals, f_builtins, and f_locals with
    arguments, and cell and free variables unboxed."""
    set_eval_frame = framehook.sot.set_eval_frame
    seen = {}

    def callback(frame):
        if frame.f_code.co_name in ("outer_fn", "inner_fn"):
            seen[frame.f_code.co_name] = (frame.f_code, dict(frame.f_locals), frame.f_globals, frame.f_builtins)
        return CustomCode(None, False)

    def outer_fn(a, b=2):
        c = a + b

        def inner_fn(d):
            return c + d

        return inner_fn(a)

    assert set_eval_frame(callback) is None
    try:
        assert outer_fn(1) == 4
    finally:
        set_eval_frame(None)
    code, f_locals, f_globals, f_builtins = seen["outer_fn"]
    assert code is outer_fn.__code__
    assert f_locals["a"] == 1 and f_locals["b"] == 2
    assert f_globals is globals()
    assert f_builtins["len"] is len
    code, f_locals, _, _ = seen["inner_fn"]
    assert f_locals == {"d": 1, "c": 3}


def test_raw_disable_eval_frame_subtree():
    """disable_eval_frame=True: the frame's callees run without the callback."""
    core = paddle.base.core
    seen = []

    def callback(frame):
        seen.append(frame.f_code.co_name)
        return CustomCode(None, frame.f_code.co_name == "quiet")

    def leaf():
        return 1

    def quiet():
        return leaf() + 1

    def loud():
        return leaf() + 2

    def driver():
        return quiet() + loud()

    core.set_eval_frame(callback)
    try:
        assert driver() == 5
    finally:
        core.set_eval_frame(None)
    assert seen == ["driver", "quiet", "loud", "leaf"]


_KEPT_CODES = []


class CodeStatusProbe:
    """Calls a fresh copy of `probe` (which calls `leaf`) under a callback that
    answers `answer(k)` for the k-th call of the probe, and records for each
    call which code ran (M: the replacement, A: the original) and whether the
    callback saw `leaf` (L) or not (-)."""

    def __init__(self):
        def leaf():
            pass

        def probe(a, b):
            leaf()
            return a + b

        def replacement(a, b):
            leaf()
            return a * b

        # Fresh code objects for each probe: code status is kept per code
        # object (Paddle keys it by address, so they are kept alive too).
        probe.__code__ = probe.__code__.replace()
        self.probe = probe
        self.replacement = replacement.__code__.replace()
        _KEPT_CODES.extend((probe.__code__, self.replacement))

    def run(self, answer, calls=25):
        core = paddle.base.core
        seen = []
        probe_code = self.probe.__code__

        def callback(frame):
            seen.append(frame.f_code.co_name)
            if frame.f_code is probe_code:
                return answer(seen.count("probe"))
            return CustomCode(None, False)

        marks = []
        core.set_eval_frame(callback)
        try:
            for _ in range(calls):
                before = len(seen)
                result = self.probe(3, 4)
                marks.append(("M" if result == 12 else "A") + ("L" if "leaf" in seen[before:] else "-"))
        finally:
            core.set_eval_frame(None)
        return "".join(marks)


def test_raw_code_status_with_graph():
    """A code the callback leaves alone keeps being offered while it is marked
    as having a graph (sot_set_with_graph, as SOT's compiled graphs do)."""
    probe = CodeStatusProbe()

    def answer(k):
        paddle.base.core.sot_set_with_graph(probe.probe.__code__)
        return CustomCode(None, False)

    assert probe.run(answer) == "AL" * 25


# Paddle 3.3.1's code status, measured with its own eval frame on 3.10 and
# 3.13: only frames the callback leaves alone (code None) are counted, whether
# disable_eval_frame is set or not; from the 11th such call on, a code never
# marked as having a graph runs with its whole call subtree unhooked (the
# callback is still asked about the frame itself). Replacement codes are never
# given up.


def test_raw_code_without_graph_runs_its_subtree_unhooked():
    probe = CodeStatusProbe()
    assert probe.run(lambda k: CustomCode(None, False)) == "AL" * 10 + "A-" * 15


def test_raw_replacement_code_is_never_given_up():
    probe = CodeStatusProbe()
    assert probe.run(lambda k: CustomCode(probe.replacement, False)) == "ML" * 25


def test_raw_code_status_counts_disabled_calls():
    probe = CodeStatusProbe()
    answer = lambda k: CustomCode(None, k <= 12)  # noqa: E731
    assert probe.run(answer) == "A-" * 25


def falls_back_then_calls(x, late):
    total = x * 0
    for term in noisy_terms(x, 1):  # SOT gives up: CustomCode(None, False) from then on
        total = total + term
    if late:
        total = total + scaled(x)
    return total


def test_sot_function_given_up_runs_its_callees_untranslated(sot_cache):
    """Through SOT: a function that fell back to dygraph is given up on after
    10 calls, and Paddle runs what it calls untranslated from then on."""
    x = tensor([1.0, 2.0])
    with strict_mode_guard(False), redirect_stdout(io.StringIO()):
        for i in range(12):
            check(symbolic_translate, falls_back_then_calls, x, i >= 10)
    assert [code.co_name for code in sot_cache.cache] == ["falls_back_then_calls"]


def test_raw_skip_rules():
    """Frames of files under a skipped prefix are not handed to the callback,
    unless their code is registered as never skipped."""
    core = paddle.base.core
    prefix = "/framehook-test-skipped-prefix/"
    namespace = {}
    source = "def skipped(x):\n    return x + 1\n\ndef kept(x):\n    return x + 2\n"
    exec(compile(source, prefix + "mod.py", "exec"), namespace)
    skipped, kept = namespace["skipped"], namespace["kept"]
    core.eval_frame_skip_file_prefix((prefix,))
    core.eval_frame_no_skip_codes((kept.__code__,))
    seen = []

    def callback(frame):
        seen.append(frame.f_code.co_name)
        return CustomCode(None, False)

    core.set_eval_frame(callback)
    try:
        assert skipped(1) == 2 and kept(1) == 3 and add(1, 2) == 3
    finally:
        core.set_eval_frame(None)
    assert seen == ["kept", "add"]


def test_raw_callback_is_per_thread():
    core = paddle.base.core
    seen = []

    def callback(frame):
        seen.append(frame.f_code.co_name)
        return CustomCode(None, False)

    def in_thread():
        return add(1, 2)

    core.set_eval_frame(callback)
    try:
        worker = threading.Thread(target=in_thread)
        worker.start()
        worker.join()
        add(3, 4)
    finally:
        core.set_eval_frame(None)
    assert "in_thread" not in seen
    assert "add" in seen


# Paddle's eval frame keeps the callback in force after a disabled subtree or a
# callback that touched it.


def test_raw_set_eval_frame_inside_disabled_subtree():
    """Paddle's no_eval_frame and psdb pattern (old = set_eval_frame(None) ...
    set_eval_frame(old)) inside a disabled subtree, and set_eval_frame inside
    the callback, leave the callback in force after it."""
    core = paddle.base.core
    seen = []

    def callback(frame):
        seen.append(frame.f_code.co_name)
        if frame.f_code.co_name == "touches_in_callback":
            core.set_eval_frame(None)
        return CustomCode(None, frame.f_code.co_name == "disabled")

    def no_eval_frame_call():
        old = core.set_eval_frame(None)
        core.set_eval_frame(old)

    def disabled():
        no_eval_frame_call()

    def touches_in_callback():
        pass

    def after():
        pass

    def driver():
        disabled()
        after()
        touches_in_callback()
        after()

    core.set_eval_frame(callback)
    try:
        driver()
    finally:
        core.set_eval_frame(None)
    assert seen == ["driver", "disabled", "after", "touches_in_callback", "after"]


# --------------------------------------------------------------- composition


def unrelated_constant():
    return 1


def scaled(x):
    return x * 2.0 + 1.0


def rewrite_constants(code, old, new):
    return code.replace(co_consts=tuple(new if type(c) is type(old) and c == old else c for c in code.co_consts))


def test_sot_with_another_hook_and_an_observer(sot_cache):
    """A hook registered before SOT counts frames and rewrites an unrelated
    function's constant; an observer watches. SOT joins the chain after them."""
    counts = collections.Counter()
    chains = []
    rewritten = rewrite_constants(unrelated_constant.__code__, 1, 41)

    def counting_rewriter(frame):
        name = frame.original_code.co_name
        counts[name] += 1
        if frame.original_code is prints_midway.__code__ or name.startswith("$resume_"):
            shown = "resume" if name.startswith("$resume_") else name
            chains.append((shown, [hook.name for hook in framehook.frame_hooks()]))
        if frame.original_code is unrelated_constant.__code__:
            return rewritten
        return None

    events = []

    def observer(event, code, original):
        if original is prints_midway.__code__ or original is unrelated_constant.__code__:
            events.append((event, code, original))

    framehook.add_frame_hook(counting_rewriter, name="counter")
    framehook.add_frame_hook(None, observer=observer, name="observer")
    x, y = tensor([1.0, 2.0]), tensor([3.0, 4.0])
    with redirect_stdout(io.StringIO()):
        translated = symbolic_translate(prints_midway)(x, y)
        assert unrelated_constant() == 41
        eager = prints_midway(x, y)
    assert_nest_match(translated, eager)
    assert sot_cache.translate_count == 2
    # The hook saw the translated call, the resume function SOT's code called,
    # and the eager call, with SOT in the chain after it while translating.
    assert chains == [
        ("prints_midway", ["counter", "observer", "sot"]),
        ("resume", ["counter", "observer", "sot"]),
        ("prints_midway", ["counter", "observer"]),
    ]
    assert counts["prints_midway"] == 2 and counts["unrelated_constant"] == 1
    # The observer saw SOT's code run for the translated call, the original for the eager one.
    calls = [(code, original) for event, code, original in events if event == "call"]
    assert len(calls) == 3
    assert calls[0][1] is prints_midway.__code__ and calls[0][0] is not prints_midway.__code__
    assert calls[1] == (rewritten, unrelated_constant.__code__)
    assert calls[2] == (prints_midway.__code__, prints_midway.__code__)
    # Only the two hooks the test added are left; SOT took itself out.
    assert [hook.name for hook in framehook.frame_hooks()] == ["counter", "observer"]


def test_sot_translates_what_an_earlier_hook_returned(sot_cache):
    """Hooks compose in order: SOT translates the code a hook before it returned."""
    tripled = rewrite_constants(scaled.__code__, 2.0, 3.0)

    def rewriter(frame):
        return tripled if frame.original_code is scaled.__code__ else None

    framehook.add_frame_hook(rewriter, name="rewriter", cache=True)
    x = tensor([1.0, 2.0])
    translated = symbolic_translate(scaled)(x)
    eager = scaled(x)  # the hook applies here too
    np.testing.assert_allclose(translated.numpy(), [4.0, 7.0])
    np.testing.assert_allclose(eager.numpy(), [4.0, 7.0])
    assert sot_cache.translate_count == 1
    symbolic_translate(scaled)(tensor([0.0, 1.0]))
    assert sot_cache.translate_count == 1
    framehook.clear_frame_hooks()
    np.testing.assert_allclose(symbolic_translate(scaled)(x).numpy(), [3.0, 5.0])
    assert sot_cache.translate_count == 2


def test_observer_sees_sot_frames(sot_cache):
    """An observer registered alone sees translated frames and their resume functions."""
    events = []

    def observer(event, code, original):
        events.append((event, code, original))

    framehook.add_frame_hook(None, observer=observer, name="watch")
    x, y = tensor([1.0, 2.0]), tensor([3.0, 4.0])
    with redirect_stdout(io.StringIO()):
        assert_sot_matches_eager(prints_midway, x, y)
    calls = [(code, original) for event, code, original in events if event == "call"]
    mine = [code for code, original in calls if original is prints_midway.__code__]
    # SOT's code for the translated call, then the original for the eager one.
    assert len(mine) == 2 and mine[0] is not prints_midway.__code__ and mine[1] is prints_midway.__code__
    # The resume function SOT's code called after the break ran translated too.
    resumes = [(code, original) for code, original in calls if original and original.co_name.startswith("$resume_")]
    assert len(resumes) == 1 and resumes[0][0] is not resumes[0][1]
    assert sot_cache.translate_count == 2


def test_set_eval_frame_is_a_builtin():
    """framehook's SOT functions are builtins: the generated code calls them
    while the hook is on, and they are never translated themselves."""
    assert isinstance(framehook.sot.set_eval_frame, types.BuiltinFunctionType)
