"""framehook's own translator with the paddle backend (``sot.translate(fn, backend="paddle")``)
on the real paddlepaddle wheel: graphs become static programs run by Paddle's
``run_program``, gradients flow through them, guards on dtype/shape/stop_gradient and on a
layer's identity and ``training``, PyLayer captured with the user's backward. Every test
asserts what was translated (translations, graphs, operations, breaks) besides results."""

from __future__ import annotations

import re

import pytest

paddle = pytest.importorskip("paddle", reason="paddlepaddle 3.3.1 wheels are installed on 3.10 and 3.13 in the matrix")

import numpy as np  # noqa: E402  (comes with paddle)

import framehook.sot as sot  # noqa: E402


@pytest.fixture(autouse=True)
def _fresh():
    sot.reset()
    yield
    sot.reset()


def translate(fn, **kw):
    return sot.translate(fn, backend="paddle", full_graph=True, **kw)


def whole(fast, graphs=1, ops=None):
    """The translation made ``graphs`` graphs (of ``ops`` operations) and no break."""
    stats = sot.stats(fast)
    assert stats.graph_breaks == [] and stats.fallbacks == [], sot.explain(fast)
    assert stats.graphs == graphs, stats
    if ops is not None:
        assert stats.ops_captured == ops, stats
    return stats


def close(a, b, rtol=1e-6):
    np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=rtol, atol=1e-7)


def test_a_graph_of_api_calls_and_operators_runs_as_a_static_program():
    def f(x, y):
        return paddle.nn.functional.relu(paddle.matmul(x, y)) * 2.0 + 1

    x, y = paddle.randn([3, 4]), paddle.randn([4, 5])
    fast = translate(f)
    for _ in range(3):
        close(fast(x, y), f(x, y))
    stats = whole(fast, ops=4)
    assert stats.translations == 1 and stats.cache_hits == 2


def test_gradients_flow_through_the_program_as_through_eager_code():
    def loss_of(x, w, b):
        return paddle.tanh(x @ w + b).pow(2).mean()

    x = paddle.randn([4, 3])
    grads = []
    for function in (loss_of, translate(loss_of)):
        w = paddle.to_tensor(np.linspace(-1, 1, 6, dtype="float32").reshape(3, 2), stop_gradient=False)
        b = paddle.zeros([2])
        b.stop_gradient = False
        loss = function(x, w, b)
        loss.backward()
        grads.append((float(loss), w.grad.numpy(), b.grad.numpy()))
    (eager_loss, eager_w, eager_b), (loss, w_grad, b_grad) = grads
    assert loss == pytest.approx(eager_loss, rel=1e-6)
    np.testing.assert_allclose(w_grad, eager_w, rtol=1e-5)
    np.testing.assert_allclose(b_grad, eager_b, rtol=1e-5)


def test_dtype_shape_and_stop_gradient_are_guarded():
    def f(x):
        return x * 3 - 1

    fast = translate(f)
    cases = [paddle.ones([2, 3]), paddle.ones([2, 3], dtype="float64"), paddle.ones([4]), paddle.ones([2, 3])]
    cases[-1].stop_gradient = False
    for x in cases:
        out = fast(x)
        close(out, f(x))
        assert out.dtype == x.dtype and out.shape == x.shape and out.stop_gradient == x.stop_gradient
    stats = whole(fast, graphs=4)
    assert stats.translations == 4 and stats.guard_failures == 3
    fast(cases[1])
    assert sot.stats(fast).cache_hits == 1


def test_numbers_changing_between_calls_are_fed_to_one_program():
    def step(p, m, lr, beta):
        m2 = m * beta + p * (1 - beta)
        return p - lr * m2, m2

    fast = translate(step)
    p, m = paddle.randn([5]), paddle.zeros([5])
    for count in range(1, 12):
        lr, beta = 0.1 / count, 0.9 - 0.01 * count
        got, expected = fast(p, m, lr, beta), step(p, m, lr, beta)
        for a, b in zip(got, expected):
            close(a, b, rtol=1e-5)
    stats = whole(fast, graphs=sot.stats(fast).translations)
    # The numbers became graph inputs after they changed once: no translation per value.
    assert stats.translations <= 3 and stats.cache_hits >= 8


def test_in_place_arithmetic_on_a_changing_number_leaves_one_program():
    from framehook.sot._paddle_backend import PaddleBackend

    made = []

    class Recording(PaddleBackend):
        def compile(self, graph):
            made.append(super().compile(graph))
            return made[-1]

    def step(p, state):
        state["step"] += 1  # `+=` on a number: no write into anything the program reads
        return p * (1.0 - 0.9 ** state["step"])

    sot.register_backend("paddle-made", Recording(cost_model=False))
    fast = sot.translate(step, backend="paddle-made", full_graph=True)
    p, mine, theirs = paddle.randn([4]), {"step": 0}, {"step": 0}
    for _ in range(6):
        close(fast(p, mine), step(p, theirs), rtol=1e-6)
        assert mine == theirs
    whole(fast, graphs=sot.stats(fast).translations)
    hot = made[-1]  # the graph with the step count an input (fed, not a constant)
    assert hot._plan.static and len(hot._programs) == 1 and hot._plan.fed, vars(hot._plan)


class Block(paddle.nn.Layer):
    def __init__(self):
        super().__init__()
        self.linear = paddle.nn.Linear(4, 4)
        self.dropout = paddle.nn.Dropout(0.5)

    def forward(self, x):
        return self.dropout(paddle.nn.functional.gelu(self.linear(x))) + x


def test_a_layer_is_translated_through_forward_and_guarded_on_training():
    paddle.seed(0)
    block = Block()
    fast = translate(block)
    x = paddle.randn([3, 4])
    block.eval()
    close(fast(x), block(x))
    stats = whole(fast, ops=4)
    block.train()
    out = fast(x)  # dropout now drops: another program
    assert float((out - x).abs().sum()) != pytest.approx(float((block.eval() or block)(x).sub(x).abs().sum()))
    block.eval()
    close(fast(x), block(x))
    stats = sot.stats(fast)
    assert stats.translations == 2 and stats.guard_failures >= 1, stats


class cus_tanh(paddle.autograd.PyLayer):
    @staticmethod
    def forward(ctx, x):
        y = paddle.tanh(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, dy):
        (y,) = ctx.saved_tensor()
        return dy * (1 - paddle.square(y))


class wrong_tanh(cus_tanh):
    """tanh whose backward is twice the true gradient."""

    @staticmethod
    def backward(ctx, dy):
        (y,) = ctx.saved_tensor()
        return 2 * dy * (1 - paddle.square(y))


class SimpleNet(paddle.nn.Layer):
    def __init__(self, activation):
        super().__init__()
        self.linear = paddle.nn.Linear(4, 8)
        self.activation = activation

    def forward(self, x):
        y = self.linear(x)
        return self.activation.apply(y).mean()


def train(net, step, steps=10):
    optimizer = paddle.optimizer.SGD(learning_rate=0.1, parameters=net.parameters())
    rng = np.random.default_rng(0)
    losses = []
    for _ in range(steps):
        loss = step(paddle.to_tensor(rng.standard_normal((2, 4)).astype("float32")))
        loss.backward()
        optimizer.step()
        optimizer.clear_grad()
        losses.append(float(loss))
    return losses, net.linear.weight.numpy()


@pytest.mark.parametrize("activation", [cus_tanh, wrong_tanh])
def test_pylayer_is_one_operation_whose_backward_is_the_users(activation):
    paddle.seed(3)
    eager_net = SimpleNet(activation)
    paddle.seed(3)
    net = SimpleNet(activation)
    eager_losses, eager_weight = train(eager_net, eager_net)
    fast = translate(net)
    losses, weight = train(net, fast)
    np.testing.assert_allclose(losses, eager_losses, rtol=0, atol=1e-5)
    np.testing.assert_allclose(weight, eager_weight, rtol=1e-5, atol=1e-6)
    stats = whole(fast, ops=3)  # Linear, the PyLayer, mean: one graph
    assert stats.translations == 1 and stats.cache_hits == 9
    assert "apply" in sot.explain(fast, paddle.randn([2, 4]))


def test_the_wrong_backward_trains_otherwise_than_the_right_one():
    weights = []
    for activation in (cus_tanh, wrong_tanh):
        paddle.seed(3)
        net = SimpleNet(activation)
        weights.append(train(net, translate(net))[1])
    assert not np.allclose(weights[0], weights[1])


def test_an_unknown_backend_is_named():
    with pytest.raises(ValueError, match="unknown SOT backend 'padle'.*paddle"):
        sot.translate(lambda x: x, backend="padle")


class two_grads(paddle.autograd.PyLayer):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, dy):
        return dy * 2, dy  # one input: one gradient expected


def test_a_pylayer_backward_with_too_many_gradients_raises_as_a_python_error():
    def f(x):
        return two_grads.apply(x).sum()

    x = paddle.ones([3])
    x.stop_gradient = False
    with pytest.raises(ValueError, match="PyLayer.backward"):
        f(x).backward()  # eager: when the backward runs
    fast = sot.translate(f, backend="paddle")
    # Translated: when the program (its backward block too) is built, naming the layer.
    with pytest.raises(ValueError, match=r"two_grads.backward returned 2 gradients; its forward takes 1 tensor input"):
        fast(x).backward()
    assert sot.stats(fast).graphs == 1


def test_a_non_tensor_where_a_tensor_is_required_raises_as_eager():
    def f(x):
        return paddle.matmul(x, "not a tensor")

    with pytest.raises(Exception) as eager_error:
        f(paddle.ones([2, 2]))
    with pytest.raises(type(eager_error.value)):
        sot.translate(f, backend="paddle")(paddle.ones([2, 2]))


def test_the_trained_simple_net_saved_loads_and_gives_the_same_outputs(tmp_path):
    from paddle.static import InputSpec

    paddle.seed(3)
    net = SimpleNet(cus_tanh)
    fast = translate(net)
    train(net, fast)
    path = str(tmp_path / "simple_net")
    sot.save(fast, path, input_spec=[InputSpec([-1, 4], "float32")])
    loaded = paddle.jit.load(path)
    for batch in (1, 2, 7):  # the batch dimension stays free
        x = paddle.randn([batch, 4])
        close(loaded(x), net(x), rtol=1e-5)
    assert sot.stats(fast).graphs == 1


def test_save_refuses_what_it_cannot_save(tmp_path):
    from paddle.static import InputSpec

    def with_break(x):
        y = x * 2
        print("", end="")  # a library call: a graph break
        return y + 1

    spec = [InputSpec([2], "float32")]
    path = str(tmp_path / "m")
    with pytest.raises(ValueError, match="does not translate to one graph"):
        sot.save(sot.translate(with_break, backend="paddle"), path, input_spec=spec)
    with pytest.raises(TypeError, match="InputSpec"):
        sot.save(translate(SimpleNet(cus_tanh)), path, input_spec=[paddle.ones([2])])
    with pytest.raises(ValueError, match="paddle backend, not 'numpy'"):
        sot.save(sot.translate(with_break), path, input_spec=spec)
    with pytest.raises(TypeError, match="sot.translate"):
        sot.save(with_break, path, input_spec=spec)


def test_a_graph_static_mode_cannot_build_runs_eagerly_and_says_why(caplog):
    def f(x, axis):
        return paddle.nn.functional.softmax(x * 2, axis=axis)  # eager reads the 1-element tensor as an int

    x, axis = paddle.to_tensor([[1.0, 2.0], [3.0, 4.0]]), paddle.to_tensor(1)
    fast = translate(f)
    with caplog.at_level("WARNING", logger="framehook.sot"):
        for _ in range(2):
            close(fast(x, axis), f(x, axis))
    assert [r.getMessage() for r in caplog.records if "runs eagerly" in r.getMessage()][:1], caplog.text
    whole(fast, ops=2)


def test_writes_into_tensors_are_seen_by_later_operations_and_by_the_caller():
    def f(x, y):
        x[0] = 1.0
        z = [y]
        y[1] = 5.0
        y.add_(x)
        return x[0] + x[1] + z[0][1] + y[0], x

    made = []
    fast = translate(f)
    for function in (f, fast, fast):
        x, y = paddle.to_tensor([7.0, 2.0]), paddle.to_tensor([3.0, 4.0])
        total, returned = function(x, y)
        assert returned is x
        made.append((total.numpy(), x.numpy(), y.numpy()))
    for eager, *translated in zip(*made):
        for value in translated:
            np.testing.assert_array_equal(value, eager)
    whole(fast)


class Stack(paddle.nn.Layer):
    def __init__(self):
        super().__init__()
        self.head = paddle.nn.Sequential(paddle.nn.Linear(4, 8), paddle.nn.ReLU(), paddle.nn.Linear(8, 4))
        self.blocks = paddle.nn.LayerList([paddle.nn.Linear(4, 4) for _ in range(3)])
        self.norm = paddle.nn.LayerNorm(4)

    def forward(self, x):
        x = self.head(x)
        for block in self.blocks:
            x = x + block(x)
        return self.norm(x).sum(axis=-1)


def test_container_layers_are_translated_through_their_sublayers():
    paddle.seed(1)
    net = Stack()
    fast = translate(net)
    x = paddle.randn([2, 4])
    for _ in range(2):
        close(fast(x), net(x), rtol=1e-5)
    whole(fast, ops=11)  # 3 + 3 * 2 + 1 + 1: one graph
    net.blocks.append(paddle.nn.Linear(4, 4))  # another sublayer: the guard on the table fails
    close(fast(x), net(x), rtol=1e-5)
    stats = sot.stats(fast)
    assert stats.translations == 2 and stats.guard_failures == 1, stats


@pytest.mark.parametrize("cost_model", [True, False])
def test_every_call_gives_eager_results_whichever_way_the_graph_runs(cost_model):
    from framehook.sot._paddle_backend import PaddleBackend

    def step(x, w, lr):
        loss = ((x @ w).tanh() * lr).sum()
        return loss, x * 2

    sot.register_backend(f"paddle-cost-{cost_model}", PaddleBackend(cost_model=cost_model))
    fast = sot.translate(step, backend=f"paddle-cost-{cost_model}", full_graph=True)
    x = paddle.randn([3, 4])
    for call in range(12):  # the first call, the cost model's trials, then its choice
        grads = []
        for function in (step, fast):
            w = paddle.to_tensor(np.linspace(-1, 1, 8, dtype="float32").reshape(4, 2), stop_gradient=False)
            loss, doubled = function(x, w, 0.1 * (call + 1))
            loss.backward()
            grads.append((loss.numpy(), doubled.numpy(), w.grad.numpy()))
        for eager, translated in zip(*grads):
            np.testing.assert_allclose(translated, eager, rtol=1e-5, atol=1e-6)
    stats = whole(fast, graphs=sot.stats(fast).translations)
    assert stats.translations <= 2 and stats.cache_hits >= 10, stats


def test_stop_gradient_set_on_a_tensor_the_graph_made_is_an_operation_of_the_graph():
    def f(x, w):
        y = x @ w
        y.stop_gradient = True  # no gradient reaches w through y
        return (y * w.sum()).sum()

    x = paddle.randn([2, 3])
    grads = []
    fast = translate(f)
    for function in (f, fast, fast):
        w = paddle.ones([3, 3])
        w.stop_gradient = False
        loss = function(x, w)
        loss.backward()
        grads.append((loss.numpy(), w.grad.numpy()))
    for got in grads[1:]:
        np.testing.assert_allclose(got[0], grads[0][0], rtol=1e-5)
        np.testing.assert_allclose(got[1], grads[0][1], rtol=1e-5)
    whole(fast, ops=5)  # matmul, setattr, sum, mul, sum


def test_the_builds_facts_are_read_while_translating():
    def f(x):
        on_gpu = paddle.is_compiled_with_cuda() or paddle.base.libpaddle.is_compiled_with_rocm()
        return x * 2 if on_gpu else x + 1

    x = paddle.ones([2])
    fast = translate(f)
    close(fast(x), f(x))
    close(fast(x), f(x))
    stats = whole(fast, ops=1)
    assert stats.translations == 1 and stats.cache_hits == 1


def test_a_dict_keyed_by_dtypes_is_read_with_the_dtype_as_key():
    def f(x, cast_map):
        out = paddle.cast(x, cast_map[x.dtype])
        return out, out.dtype

    cast_map = {paddle.float32: paddle.float64, paddle.int32: paddle.float32}
    fast = translate(f)
    for x in (paddle.ones([2]), paddle.ones([2], dtype="int32"), paddle.full([2], 3.0)):
        got, want = fast(x, cast_map), f(x, cast_map)
        close(got[0], want[0])
        assert got[1] == want[1]
    stats = whole(fast, graphs=2, ops=2)
    # One translation per dtype, the key it reads the map with.
    assert (stats.translations, stats.cache_hits) == (2, 1), stats


def test_layers_without_parameters_made_in_the_function_are_one_operation():
    def f(x):
        act = paddle.nn.Softmax(axis=-1)
        return act(x) + paddle.nn.ReLU()(x), act

    x = paddle.randn([2, 3])
    fast = translate(f)
    for _ in range(2):
        (got, act), (want, _) = fast(x), f(x)
        close(got, want)
        assert type(act) is paddle.nn.Softmax and act._axis == -1
    whole(fast, ops=3)

    # A layer that makes parameters is made by each call, as in eager code: not captured.
    def with_parameters(x):
        return paddle.nn.Linear(3, 3)(x)

    with pytest.raises(sot.GraphBreakError):
        translate(with_parameters)(x)


def test_distributed_placements_are_made_while_translating():
    import paddle.distributed as dist

    def f(x):
        mesh = dist.ProcessMesh([[0, 1], [2, 3]], dim_names=["x", "y"])
        placements = [dist.Shard(0), dist.Replicate(), dist.Partial()]
        return x + 1, mesh, placements

    fast = translate(f)
    got, want = fast(paddle.ones([2])), f(paddle.ones([2]))
    close(got[0], want[0])
    assert got[1] == want[1] and got[1].dim_names == ["x", "y"]
    assert [type(p) for p in got[2]] == [type(p) for p in want[2]] and got[2][0].get_dim() == 0
    whole(fast, ops=1)


def test_numpy_numbers_are_constants_of_the_program():
    def f(x, k):
        blocks = int(np.ceil(x.shape[0] / 7))  # a numpy ufunc of numbers, computed now
        return x * blocks + k, blocks

    x = paddle.ones([15])
    fast = translate(f)
    for k in (np.int64(2), np.int64(2), np.float32(0.5)):
        got, want = fast(x, k), f(x, k)
        close(got[0], want[0])
        assert got[1] == want[1] == 3 and type(got[1]) is int
    # A numpy scalar from the frame is guarded by type and value: one translation per value.
    stats = whole(fast, graphs=2, ops=4)
    assert (stats.translations, stats.cache_hits) == (2, 1), stats


def _branching(x, y):
    if x.sum() < 5:  # control flow on a tensor: Paddle's AST conversion makes it a cond
        return x + y
    return x - y


def test_a_function_marked_for_paddles_ast_conversion_is_one_operation(caplog):
    from paddle.jit.sot.utils import try_ast_func

    from framehook.sot._paddle_backend import PaddleBackend

    try_ast_func(_branching)  # Paddle's conversion reads module-level functions' source

    def f(x, y):
        return _branching(x * 2, y) + 1

    sot.register_backend("paddle-programs", PaddleBackend(cost_model=False))
    fast = sot.translate(f, backend="paddle-programs", full_graph=True)
    with caplog.at_level("WARNING", logger="framehook.sot"):
        for x in (paddle.ones([2]), paddle.full([2], 3.0)):  # either branch, one program
            close(fast(x, paddle.ones([2])), f(x, paddle.ones([2])))
    assert not caplog.records, caplog.text  # built as a static program, not run eagerly
    stats = whole(fast, ops=3)
    assert stats.translations == 1, stats
    # Translated itself: the one operation is the function, called with the frame's arguments.
    whole_function = sot.translate(_branching, backend="paddle-programs", full_graph=True)
    with caplog.at_level("WARNING", logger="framehook.sot"):
        for x in (paddle.ones([2]), paddle.full([2], 3.0)):
            close(whole_function(x, y=paddle.ones([2])), _branching(x, paddle.ones([2])))
    assert not caplog.records, caplog.text
    stats = whole(whole_function, ops=1)
    assert stats.translations == 1, stats


def test_a_tensor_arguments_name_place_and_persistable_are_its_own():
    def f(a):
        return a + 1, a.name, str(a.place), a.persistable

    fast = translate(f)
    for a in (paddle.ones([2]), paddle.zeros([2])):  # two tensors, two names: one translation
        got, want = fast(a), f(a)
        close(got[0], want[0])
        assert got[1:] == want[1:] and got[1] == a.name
    stats = whole(fast, ops=1)
    assert (stats.translations, stats.cache_hits) == (1, 1), stats


def _tanh_mean_of(layer):
    def f(x):
        return paddle.tanh(layer(x)).mean()

    return f


def test_programs_and_tensors_go_with_the_translation_that_made_them():
    """A soak of cache churn: more shapes than the cache holds, programs built and run each
    time; when the translated function goes, its programs, its layer and the caller's
    tensors go with it (nothing the backend made keeps them)."""
    import gc
    import weakref

    from framehook.sot._paddle_backend import PaddleBackend

    made = []

    class Recording(PaddleBackend):
        def compile(self, graph):
            compiled = super().compile(graph)
            made.append(weakref.ref(compiled))
            return compiled

    sot.register_backend("paddle-recording", Recording(cost_model=False))
    layer = paddle.nn.Linear(4, 4)
    f = _tanh_mean_of(layer)
    fast = sot.translate(f, backend="paddle-recording", cache_size=4)
    inputs = [paddle.randn([n, 4]) for n in range(1, 11)]
    for _ in range(3):
        for x in inputs:
            close(fast(x), f(x), rtol=1e-5)
    stats = sot.stats(fast)
    assert stats.graphs >= 4 and stats.graph_breaks == [], stats
    gone = [weakref.ref(obj) for obj in (fast, layer, *inputs)]
    del fast, f, layer, inputs, x
    gc.collect()
    assert [ref() for ref in gone] == [None] * len(gone)
    assert [ref for ref in made if ref() is not None] == []


def test_the_current_device_and_grad_mode_are_read_and_guarded():
    def f(x):
        y = x + 1 if "cpu" in paddle.get_device() else x + 2
        return y * 2 if paddle.is_grad_enabled() else y

    fast = translate(f)
    x = paddle.ones([2])
    close(fast(x), f(x))
    close(fast(x), f(x))
    with paddle.no_grad():
        close(fast(x), f(x))
    stats = whole(fast, graphs=2, ops=3)
    assert (stats.translations, stats.cache_hits) == (2, 1), stats


def test_methods_the_meta_attributes_answer_are_computed_while_translating():
    def f(x):
        if x.dim() == 2 and x.is_floating_point() and x.is_tensor():
            return x * x.element_size()
        return x

    fast = translate(f)
    for x in (paddle.ones([2, 3]), paddle.ones([2, 3], dtype="float64"), paddle.ones([2, 3], dtype="int32")):
        close(fast(x), f(x))
    # One translation per dtype, which the guards tell apart; the int32 one returns x as it
    # is (no graph). The methods are no operations.
    stats = whole(fast, graphs=2, ops=2)
    assert stats.translations == 3, stats


def test_an_lru_cached_function_of_tensors_is_part_of_the_graph():
    import functools

    @functools.lru_cache
    def plus_one(x):
        return x + 1

    def f(x):
        return plus_one(x) * 2 + plus_one(1)

    fast = translate(f)
    for x in (paddle.ones([2]), paddle.full([2], 3.0)):
        close(fast(x), f(x))
    whole(fast, ops=3)  # x + 1, * 2, + 2 (plus_one(1) computed while translating)


@pytest.mark.parametrize("cost_model", [True, False])
def test_numpy_arrays_are_graph_inputs_guarded_on_dtype_and_shape(cost_model, caplog):
    from framehook.sot._paddle_backend import PaddleBackend

    def f(x, a, b):
        c = np.multiply(a, b)  # numpy's own, in Python on every call
        return x * c + a, c  # the arrays meet a tensor: fed to the program

    sot.register_backend(f"paddle-arrays-{cost_model}", PaddleBackend(cost_model=cost_model))
    fast = sot.translate(f, backend=f"paddle-arrays-{cost_model}", full_graph=True)
    rng = np.random.default_rng(0)
    with caplog.at_level("WARNING", logger="framehook.sot"):
        for _ in range(6):  # new contents each call: read, not pinned
            x, a, b = paddle.randn([3]), rng.random(3), rng.random(3).astype(np.float32)
            for got, want in zip(fast(x, a, b), f(x, a, b)):
                assert type(got) is type(want) and str(got.dtype) == str(want.dtype), (got, want)
                np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)
    assert not caplog.records, caplog.text  # a program was built (or the cost model chose)
    stats = whole(fast, ops=3)
    assert (stats.translations, stats.cache_hits) == (1, 5), stats
    for other_a, other_b in ((a.astype(np.float32), b), (rng.random(1), b[:1])):  # another dtype, shape
        for got, want in zip(fast(x, other_a, other_b), f(x, other_a, other_b)):
            assert str(got.dtype) == str(want.dtype) and got.shape == want.shape, (got, want)
    stats = whole(fast, graphs=3, ops=9)
    assert stats.translations == 3 and stats.guard_failures == 2, stats


def test_writes_into_numpy_arrays_reach_the_callers_array():
    def f(a, x):
        a[0] = 7.0  # numpy's, in Python
        a += 1
        a[1] = x.sum()  # a tensor written into an array: the graph runs eagerly, as written
        return paddle.to_tensor(a) * x

    def g(a, b, x):
        y = x * b  # reads b before the ufunc below writes into it
        np.add(1.0, a, b)  # a ufunc's output argument past its inputs
        return y, paddle.to_tensor(b) + x

    fast, fast_g = translate(f), translate(g)
    for _ in range(3):
        x, a, b = paddle.randn([3]), np.random.rand(3), np.random.rand(3)
        mine, my_b = a.copy(), b.copy()
        close(fast(mine, x), f(a, x))
        np.testing.assert_allclose(mine, a)
        for got, want in zip(fast_g(mine, my_b, x), g(a, b, x)):
            close(got, want)
        np.testing.assert_allclose(my_b, b)
    assert sot.stats(fast).translations == 1
    whole(fast, ops=6)  # setitem, +=, sum, setitem, to_tensor, *
    whole(fast_g, ops=4)


def test_a_numpy_ufunc_of_a_tensor_breaks_and_raises_as_eager():
    def f(a, x):
        return np.add(a, x)  # numpy would read the tensor as an array: Paddle's refuses

    with pytest.raises(TypeError) as eager:
        f(np.ones(2, dtype=np.float32), paddle.ones([2]))
    fast = sot.translate(f, backend="paddle")
    with pytest.raises(TypeError, match=re.escape(str(eager.value))):
        fast(np.ones(2, dtype=np.float32), paddle.ones([2]))
    assert [b.reason for b in sot.stats(fast).graph_breaks] == [
        "tensor to python: add() of a tensor (it reads the tensor as an array: data-dependent)"]


def test_a_sliced_layer_list_is_iterated_as_the_layers_it_holds():
    class Net(paddle.nn.Layer):
        def __init__(self):
            super().__init__()
            self.layers = paddle.nn.LayerList([paddle.nn.Linear(5, 5) for _ in range(3)])

        def forward(self, x):
            out = self.layers[0](x)
            for layer in self.layers[1:]:  # a new LayerList, of the same layers
                out = layer(out)
            return out

    def f(net, x):
        return net(x)

    net, x = Net(), paddle.randn([2, 5])
    fast = translate(f)
    for _ in range(3):
        close(fast(net, x), f(net, x))
    stats = whole(fast, ops=3)
    assert (stats.translations, stats.cache_hits) == (1, 2), stats
    net.layers[2] = paddle.nn.Linear(5, 5)  # the layers are guarded, not the slice made of them
    close(fast(net, x), f(net, x))
    assert sot.stats(fast).translations == 2


def test_removing_a_tensor_from_a_list_compares_the_items_before_it_as_python_does():
    """``z.remove(y)`` compares each item before ``y`` with ``==``, as CPython does: ``1 == y``
    is a tensor whose truth is the data's, so the translation breaks there, and where it
    holds the 1 goes, not ``y``. (Paddle's translator takes a tensor to be unequal to all
    but itself and removes ``y``: with ``y == 1`` it returns ``[1, y]``, not eager's ``[y, y]``.)"""

    def remove_both(x, y):
        z = [x, x, y, y]
        z.remove(x)
        z.remove(y)
        return z

    fast = sot.translate(remove_both, backend="paddle")
    for value in (2, 1, 2):
        y = paddle.to_tensor(value)
        got, expected = fast(1, y), remove_both(1, y)
        assert [item if item is not y else "y" for item in got] == \
            [item if item is not y else "y" for item in expected] == ([1, "y"] if value == 2 else ["y", "y"])
    stats = sot.stats(fast)
    # The break is before `z.remove(y)`, which then runs as it is; nothing before it is a graph.
    assert (stats.translations, stats.graphs, stats.fallbacks) == (2, 0, []), stats
    assert [(b.reason, b.lineno) for b in stats.graph_breaks] == [
        ("data-dependent branch on a tensor's value", remove_both.__code__.co_firstlineno + 3)], stats


@pytest.mark.parametrize("calls", [1, 3])
def test_batch_norm_running_statistics_in_training_match_eager(calls):
    # The layer runs on examples while translating; its running statistics are updated by
    # the graph's run alone, once per call, as eagerly.
    paddle.seed(0)
    eager, translated = paddle.nn.BatchNorm1D(3), paddle.nn.BatchNorm1D(3)
    translated.set_state_dict(eager.state_dict())
    fast = sot.translate(lambda bn, x: bn(x), backend="paddle")
    for _ in range(calls):
        x = paddle.randn([4, 3])
        np.testing.assert_allclose(fast(translated, x).numpy(), eager(x).numpy(), rtol=1e-5, atol=1e-6)
    assert (sot.stats(fast).translations, sot.stats(fast).graphs, sot.stats(fast).graph_breaks) == (1, 1, [])
    np.testing.assert_allclose(translated._mean.numpy(), eager._mean.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(translated._variance.numpy(), eager._variance.numpy(), rtol=1e-5, atol=1e-6)


class _Holder(paddle.nn.Layer):
    def __init__(self):
        super().__init__()
        self.attr = None
        self.linear = paddle.nn.Linear(3, 3)

    def forward(self, x):
        return self.linear(x) + self.attr


def test_a_tensor_stored_on_a_layer_is_replayed_through_its_setattr():
    # Paddle's Layer.__setattr__ files a tensor among the layer's buffers: the store runs it
    # after the graph, and the translation reads the value back meanwhile, without a break.
    def set_and_call(holder, x):
        holder.attr = x * 2
        return holder(x)

    paddle.seed(0)
    eager, translated = _Holder(), _Holder()
    translated.set_state_dict(eager.state_dict())
    fast = sot.translate(set_and_call, backend="paddle")
    for _ in range(2):
        x = paddle.randn([2, 3])
        np.testing.assert_allclose(fast(translated, x).numpy(), set_and_call(eager, x).numpy(), rtol=1e-6)
        np.testing.assert_allclose(translated.attr.numpy(), (x * 2).numpy())
        assert "attr" in translated._buffers and "attr" not in translated.__dict__
    stats = sot.stats(fast)
    assert (stats.translations, stats.graphs, stats.graph_breaks) == (1, 1, [])


def test_layer_stores_its_setattr_would_refuse_or_treat_apart_run_as_eagerly():
    def to_parameter_name(holder, x):
        holder.linear.weight = x  # a parameter's name takes only a Parameter: TypeError
        return x

    def then_read_the_table(holder, x):
        holder.attr = x
        return len(holder._buffers)  # the table the replayed store changes

    holder = _Holder()
    fast = sot.translate(to_parameter_name, backend="paddle")
    with pytest.raises(TypeError, match="assignment to parameter 'weight'"):
        fast(holder, paddle.ones([3, 3]))
    assert any("Layer.__setattr__" in b.reason for b in sot.stats(fast).graph_breaks), sot.stats(fast)
    fast = sot.translate(then_read_the_table, backend="paddle")
    assert fast(_Holder(), paddle.ones([2])) == then_read_the_table(_Holder(), paddle.ones([2])) == 1
    assert any("the table _buffers of a layer" in b.reason for b in sot.stats(fast).graph_breaks), sot.stats(fast)


def test_paddle_tensor_namespace_and_fill_constant_are_captured():
    # `paddle.tensor` is an object reading its attributes from the module (translated), and
    # `fill_constant`, public in `paddle.tensor.creation` only, an operation.
    def biased(x):
        bias = paddle.tensor.fill_constant([x.shape[-1]], dtype="float32", value=1)
        return x + bias

    x = paddle.randn([2, 3])
    fast = sot.translate(biased, backend="paddle")
    np.testing.assert_allclose(fast(x).numpy(), biased(x).numpy())
    stats = sot.stats(fast)
    assert (stats.graphs, stats.ops_captured, stats.graph_breaks) == (1, 2, []), stats


def test_a_numpy_scalars_truth_is_guarded_on_its_value():
    # A numpy bool handed on (a resume function's, after `tensor.numpy() < 0` broke) is a
    # value: its truth specializes the translation instead of breaking.
    def pick(flag, x):
        if flag:
            return x + 1
        return x - 1

    fast = sot.translate(pick, backend="paddle")
    x = paddle.ones([2])
    for flag in (np.True_, np.False_, np.True_, np.float32(0.0)):
        np.testing.assert_allclose(fast(flag, x).numpy(), pick(flag, x).numpy())
    stats = sot.stats(fast)
    assert (stats.translations, stats.graph_breaks) == (3, []), stats


def test_random_draws_match_eager():
    # The operations run on examples while translating draw from the generator too: its
    # state is put back, so the translated calls draw what the eager ones do.
    def noisy(x):
        return paddle.nn.functional.dropout(x, 0.5) + paddle.rand([8])

    x = paddle.ones([8])
    paddle.seed(1)
    eager = [noisy(x).numpy() for _ in range(3)]
    fast = sot.translate(noisy, backend="paddle")
    paddle.seed(1)
    for expected in eager:
        np.testing.assert_array_equal(fast(x).numpy(), expected)
    assert (sot.stats(fast).graphs, sot.stats(fast).graph_breaks) == (1, [])


def test_spectral_norm_vectors_match_eager():
    # SpectralNorm's power iteration writes its vectors (untrained parameters) on each call.
    paddle.seed(0)
    eager, translated = paddle.nn.SpectralNorm([3, 4], power_iters=2), paddle.nn.SpectralNorm([3, 4], power_iters=2)
    translated.set_state_dict(eager.state_dict())
    fast = sot.translate(lambda layer, w: layer(w), backend="paddle")
    for _ in range(2):
        w = paddle.randn([3, 4])
        np.testing.assert_allclose(fast(translated, w).numpy(), eager(w).numpy(), rtol=1e-5, atol=1e-6)
    assert sot.stats(fast).graphs == 1
    for name in ("weight_u", "weight_v"):
        np.testing.assert_allclose(getattr(translated, name).numpy(), getattr(eager, name).numpy(), rtol=1e-5,
                                   atol=1e-6)


@pytest.mark.parametrize("cost_model", [True, False])
def test_accuracy_in_forward_is_an_operation_of_the_graph(cost_model):
    # Paddle's dygraph_to_static models (MNIST, BERT) compute their accuracy in forward with
    # paddle.static.accuracy (paddle.metric.accuracy is the same computation): one graph.
    from framehook.sot._paddle_backend import PaddleBackend

    def forward(logits, label):
        probabilities = paddle.nn.functional.softmax(logits)
        top1 = paddle.static.accuracy(input=probabilities, label=label)
        top2 = paddle.metric.accuracy(input=probabilities, label=label, k=2)
        return top1, top2, paddle.nn.functional.cross_entropy(logits, label).mean()

    sot.register_backend(f"paddle-cost-{cost_model}", PaddleBackend(cost_model=cost_model))
    fast = sot.translate(forward, backend=f"paddle-cost-{cost_model}", full_graph=True)
    paddle.seed(0)
    for _ in range(8):  # past the cost model's trials: both ways
        logits, label = paddle.randn([16, 5]), paddle.randint(0, 5, [16, 1])
        for got, expected in zip(fast(logits, label), forward(logits, label)):
            close(got, expected)
    whole(fast, ops=5)
