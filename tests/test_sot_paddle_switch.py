"""``framehook.sot.paddle.install(translator="framehook")``: ``paddle.jit.to_static``'s SOT mode
translated by framehook's own translator (the paddle backend), with the real paddlepaddle
3.3.1 wheel.

tests/test_sot_paddle.py installs Paddle's translator in the pytest process when it is
imported, and a process keeps the translator it installed first: every scenario here runs in
a child process of its own, with Paddle's SOT environment flags under the test's control.
Each checks results against eager execution and that framehook's translator did the work
(its counters) while Paddle's translated nothing (its executor cache's count stays 0)."""

import json
import os
import subprocess
import sys
import tempfile
import textwrap

import pytest

pytest.importorskip("paddle", reason="paddlepaddle 3.3.1 wheels are installed on 3.10 and 3.13 in the matrix")

import framehook.sot.paddle  # noqa: E402

FLAGS = ("MIN_GRAPH_SIZE", "STRICT_MODE", "SOT_LOG_LEVEL", "COST_MODEL")

# The start of every child: what symbolic_translate returns is recorded (to read framehook's
# counters of it), and a small network.
PRELUDE = '''
import functools, json, os, sys, weakref
import numpy as np
import framehook.sot
import framehook.sot.paddle as fp

def install_and_record():
    """translator="framehook" installed; the list of what symbolic_translate returns."""
    fp.install(translator="framehook")
    import paddle.jit.sot
    made = []
    installed = paddle.jit.sot.symbolic_translate

    @functools.wraps(installed)
    def recording(fn, **kwargs):
        made.append(installed(fn, **kwargs))
        return made[-1]

    paddle.jit.sot.symbolic_translate = recording
    return made

def count_program_runs():
    """A list that grows by one at each run of a static program (a graph's, or Paddle's)."""
    from paddle.jit.dy2static.pir_partial_program import PartialProgramLayer
    runs = []
    sot_call = PartialProgramLayer.sot_call

    def counted(self, *args, **kwargs):
        runs.append(1)
        return sot_call(self, *args, **kwargs)

    PartialProgramLayer.sot_call = counted
    return runs

def paddles_translations():
    from paddle.jit.sot.opcode_translator.executor.executor_cache import OpcodeExecutorCache
    return OpcodeExecutorCache().translate_count

def net(dropout=0.0):
    import paddle
    class Net(paddle.nn.Layer):
        def __init__(self):
            super().__init__()
            self.hidden = paddle.nn.Linear(4, 8)
            self.drop = paddle.nn.Dropout(dropout)
            self.out = paddle.nn.Linear(8, 2)

        def forward(self, x):
            return self.out(self.drop(paddle.nn.functional.relu(self.hidden(x))))
    return Net()

def twins(dropout=0.0):
    """Two networks with the same parameters: eager, and the other through to_static."""
    import paddle
    paddle.seed(0)
    eager, static = net(dropout), net(dropout)
    static.set_state_dict(eager.state_dict())
    return eager, paddle.jit.to_static(static)

def close(a, b):
    return bool(np.allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6))

def counters(fast):
    stats = framehook.sot.stats(fast)
    return {"translations": stats.translations, "graphs": stats.graphs, "ops": stats.ops_captured,
            "cache_hits": stats.cache_hits, "breaks": len(stats.graph_breaks)}
'''


def child(code, **flags):
    """Runs PRELUDE + ``code`` in a new interpreter whose Paddle SOT flags are only ``flags``;
    its last line of output, as JSON."""
    env = {name: value for name, value in os.environ.items() if name not in FLAGS}
    env.update(flags)
    with tempfile.TemporaryDirectory() as directory:
        # A file, not -c: Paddle's AST path (jit.save, full_graph=True) reads the functions' source.
        script = os.path.join(directory, "child.py")
        with open(script, "w") as file:
            file.write(PRELUDE + textwrap.dedent(code))
        done = subprocess.run([sys.executable, script], capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_install_framehook_puts_its_translator_behind_to_static():
    out = child("""
        import paddle.base.core as core
        fp.install(translator="framehook")
        fp.install(translator="framehook")  # idempotent
        import paddle.jit.sot, paddle.jit.sot.translate
        names = ["set_eval_frame", "eval_frame_skip_file_prefix", "eval_frame_no_skip_codes",
                 "sot_setup_codes_with_graph", "sot_set_with_graph"]
        refused = []
        for switch in (fp.install, lambda: fp.install(translator="paddle")):
            try:
                switch()
            except RuntimeError as error:
                refused.append(str(error))
        print(json.dumps({
            "installed": fp.installed(),
            "eval_frame": all(getattr(core, n) is getattr(framehook.sot, n) for n in names),
            "one_function": paddle.jit.sot.symbolic_translate is paddle.jit.sot.translate.symbolic_translate,
            "module": paddle.jit.sot.symbolic_translate.__module__,
            "refused": refused,
        }))
    """)
    assert out["installed"] == "framehook"
    assert out["eval_frame"]  # one PEP 523 owner: framehook's eval-frame functions too
    assert out["one_function"] and out["module"] == "framehook.sot.paddle"
    # Switching to Paddle's translator (install() and translator="paddle") is refused.
    assert len(out["refused"]) == 2
    assert all("the 'framehook' translator is installed already" in message for message in out["refused"])


def test_to_static_function_and_layer_match_eager():
    out = child("""
        made = install_and_record()
        import paddle

        def affine(x, y):
            return paddle.tanh(x) * y + 1.0

        static_affine = paddle.jit.to_static(affine)
        x, y = paddle.randn([3, 4]), paddle.randn([3, 4])
        same = [close(static_affine(x, y), affine(x, y)) for _ in range(3)]
        function_translations = list(made)
        eager, static = twins()
        same += [close(static(x), eager(x)) for x in (paddle.randn([5, 4]), paddle.randn([5, 4]))]
        layer_translations = made[3:]
        # symbolic_translate itself, of a bound method (a new object at each lookup): its
        # function's one translation, bound.
        x = paddle.randn([5, 4])
        bound = [paddle.jit.sot.symbolic_translate(eager.forward) for _ in range(2)]
        same += [close(method(x), eager(x)) for method in bound]
        print(json.dumps({
            "same": same,
            "function": counters(function_translations[0]),
            "one_translation_per_to_static": len({id(t) for t in function_translations}),
            "layer": counters(layer_translations[-1]),
            "layer_translations": len({id(t) for t in layer_translations}),
            "bound": counters(bound[0]) if bound[0].__func__ is bound[1].__func__ else None,
            "paddle": paddles_translations(),
        }))
    """)
    assert all(out["same"]), out["same"]
    # Three calls of one to_static: one translation, translated once, then cache hits.
    assert out["one_translation_per_to_static"] == 1
    assert out["function"] == {"translations": 1, "graphs": 1, "ops": 3, "cache_hits": 2, "breaks": 0}
    assert out["layer_translations"] == 1
    assert out["layer"]["translations"] == 1 and out["layer"]["graphs"] == 1 and out["layer"]["cache_hits"] == 1
    assert out["bound"] is not None and out["bound"]["translations"] == 1 and out["bound"]["cache_hits"] == 1
    assert out["paddle"] == 0


def test_training_step_gradients_match_eager():
    out = child("""
        made = install_and_record()
        import paddle
        eager, static = twins()
        same = []
        for _step in range(2):
            x = paddle.randn([6, 4])
            eager_loss, static_loss = eager(x).square().mean(), static(x).square().mean()
            eager_loss.backward()
            static_loss.backward()
            same.append(close(static_loss, eager_loss))
            same += [close(p_static.grad, p_eager.grad)
                     for p_eager, p_static in zip(eager.parameters(), static.parameters())]
            eager.clear_gradients()
            static.clear_gradients()
        print(json.dumps({"same": same, "counters": counters(made[-1]), "paddle": paddles_translations()}))
    """)
    assert out["same"] == [True] * 10, out["same"]
    assert out["counters"]["translations"] == 1 and out["counters"]["graphs"] == 1
    assert out["paddle"] == 0


def test_eval_mode_translates_apart_and_matches_eager():
    out = child("""
        made = install_and_record()
        import paddle
        eager, static = twins(dropout=0.5)
        static(paddle.randn([5, 4]))  # training: dropout active
        eager.eval()
        static.eval()
        x = paddle.randn([5, 4])
        same = [close(static(x), eager(x)) for _ in range(2)]
        print(json.dumps({"same": same, "translations": len({id(t) for t in made}),
                          "eval": counters(made[-1]), "paddle": paddles_translations()}))
    """)
    assert out["same"] == [True, True]  # eval: dropout is the identity, in both
    assert out["translations"] == 2  # one per training mode
    assert out["eval"]["translations"] == 1 and out["eval"]["graphs"] == 1 and out["eval"]["cache_hits"] == 1
    assert out["paddle"] == 0


def test_jit_save_and_load_after_sot_mode_calls(tmp_path):
    out = child(f"""
        made = install_and_record()
        import paddle
        eager, static = twins()
        static(paddle.randn([3, 4]))  # SOT mode: its inputs' specs are what jit.save saves with
        paddle.jit.save(static, {str(tmp_path / "net")!r})
        loaded = paddle.jit.load({str(tmp_path / "net")!r})
        x = paddle.randn([3, 4])
        print(json.dumps({{"same": close(loaded(x), eager(x)), "graphs": counters(made[0])["graphs"],
                          "paddle": paddles_translations()}}))
    """)
    assert out == {"same": True, "graphs": 1, "paddle": 0}


def test_min_graph_size_runs_smaller_graphs_eagerly_read_at_each_translation():
    # As Paddle reads it (its harness's min_graph_size_guard sets it between to_static calls):
    # a graph of fewer operations runs its operations eagerly, a larger one as its program.
    out = child("""
        made = install_and_record()
        import paddle
        runs = count_program_runs()

        def one_op(x):
            return x + 1.0

        def twelve_ops(x):
            for _ in range(12):
                x = x * 1.5
            return x

        x = paddle.ones([2])
        program_runs, same = {}, []
        for size in ("10", "0"):
            os.environ["MIN_GRAPH_SIZE"] = size
            for function in (one_op, twelve_ops):
                runs.clear()
                static = paddle.jit.to_static(function)
                same += [close(static(x), function(x)) for _ in range(3)]
                program_runs[f"{function.__name__}, MIN_GRAPH_SIZE={size}"] = len(runs)
        print(json.dumps({"same": same, "program_runs": program_runs,
                          "ops": sorted({counters(fast)["ops"] for fast in made}), "paddle": paddles_translations()}))
    """, MIN_GRAPH_SIZE="10")
    assert out["same"] == [True] * 12
    assert out["program_runs"] == {"one_op, MIN_GRAPH_SIZE=10": 0, "twelve_ops, MIN_GRAPH_SIZE=10": 3,
                                   "one_op, MIN_GRAPH_SIZE=0": 3, "twelve_ops, MIN_GRAPH_SIZE=0": 3}
    assert out["ops"] == [1, 12] and out["paddle"] == 0


def test_input_spec_not_to_static_and_ignore_module_work_as_with_paddles_translator(tmp_path):
    # input_spec: the layer still takes other batch sizes in SOT mode, and jit.save saves
    # with the spec. not_to_static and ignore_module act on Paddle's AST path only
    # (`unified(func, for_sot=False)`; its BUILTIN_LIKELY_MODULES), as with Paddle's SOT: the
    # functions they name are translated with the rest, with eager's results.
    out = child(f"""
        made = install_and_record()
        import paddle
        from paddle.static import InputSpec

        @paddle.jit.not_to_static
        def shifted(x):
            return x - 1

        paddle.jit.ignore_module([np])
        paddle.seed(0)
        eager, static = net(), net()
        static.set_state_dict(eager.state_dict())
        static = paddle.jit.to_static(static, input_spec=[InputSpec([None, 4], "float32", name="x")])
        same = []
        for batch in (3, 5):
            x = paddle.randn([batch, 4])
            same.append(close(static(x), eager(x)))
        affine = paddle.jit.to_static(lambda x: shifted(x) * 2)
        x = paddle.randn([2, 4])
        same.append(close(affine(x), shifted(x) * 2))
        paddle.jit.save(static, {str(tmp_path / "net")!r})
        loaded = paddle.jit.load({str(tmp_path / "net")!r})
        same.append(close(loaded(x), eager(x)))
        print(json.dumps({{"same": same, "translated": len(made),
                          "graphs": [counters(fast)["graphs"] for fast in made][-1:],
                          "paddle": paddles_translations()}}))
    """)
    assert out["same"] == [True] * 4
    assert out["translated"] >= 3 and out["graphs"] == [1] and out["paddle"] == 0


def test_enable_to_static_false_and_full_graph_bypass_the_translator():
    out = child("""
        made = install_and_record()
        import paddle

        def affine(x):
            return x * 2.0 + 1.0

        x = paddle.randn([3])
        static_affine = paddle.jit.to_static(affine)
        paddle.jit.enable_to_static(False)
        disabled = close(static_affine(x), affine(x))
        translated_when_disabled = len(made)
        paddle.jit.enable_to_static(True)
        ast = paddle.jit.to_static(affine, full_graph=True)
        print(json.dumps({"disabled": disabled, "translated_when_disabled": translated_when_disabled,
                          "ast": type(ast).__name__, "ast_same": close(ast(x), affine(x)),
                          "translated": len(made), "paddle": paddles_translations()}))
    """)
    assert out["disabled"] and out["translated_when_disabled"] == 0  # dygraph, no translation
    assert out["ast"] == "ASTStaticFunction" and out["ast_same"]
    assert out["translated"] == 0  # full_graph=True is Paddle's AST path, not SOT's
    assert out["paddle"] == 0


def test_translations_go_with_their_to_static():
    out = child("""
        import gc
        fp.install(translator="framehook")
        import paddle

        def used_once():
            def double(x):
                return x * 2.0
            layer = net()
            static_layer, static_double = paddle.jit.to_static(layer), paddle.jit.to_static(double)
            static_double(static_layer(paddle.randn([2, 4])))
            return weakref.ref(layer), weakref.ref(double)

        refs = used_once()
        gc.collect()
        print(json.dumps({"freed": [ref() is None for ref in refs]}))
    """)
    assert out["freed"] == [True, True]


def test_programs_are_built_with_the_build_strategy_which_goes_with_its_to_static():
    out = child("""
        import gc
        fp.install(translator="framehook")
        import paddle

        # The programs' own to_static calls (full_graph=True), as the backend makes them.
        built = []
        to_static = paddle.jit.to_static

        def recording(function=None, *args, **kwargs):
            if kwargs.get("full_graph"):
                built.append(kwargs)
            return to_static(function, *args, **kwargs)

        paddle.jit.to_static = recording

        def double(x):
            return x * 2.0

        def used_once(x):
            strategy = paddle.static.BuildStrategy()
            strategy.enable_inplace = False
            strategy.memory_optimize = True
            result = to_static(double, build_strategy=strategy)(x).numpy().tolist()
            return result, weakref.ref(strategy)

        results, strategies = zip(*(used_once(paddle.ones([2])) for _ in range(3)))
        gc.collect()
        print(json.dumps({"results": results, "freed": [ref() is None for ref in strategies],
                          "programs": [[type(b["build_strategy"]).__name__, b["build_strategy"].enable_inplace,
                                        b["build_strategy"].memory_optimize] for b in built],
                          "translations": len(double.__dict__.get("_framehook_sot_translations", {}))}))
    """)
    assert out["results"] == [[2.0, 2.0]] * 3
    # Each to_static's translation built its program with a copy of its strategy's settings...
    assert out["programs"] == [["BuildStrategy", False, True]] * 3
    # ... and went with it: the function keeps none of them.
    assert out["freed"] == [True] * 3 and out["translations"] == 0


def test_a_wrapper_made_with_functools_wraps_gets_its_own_translation():
    # `functools.wraps` copies the wrapped function's __dict__, where translations are kept.
    out = child("""
        fp.install(translator="framehook")
        import paddle

        def double(x):
            return x * 2.0

        strategy = paddle.static.BuildStrategy()
        x = paddle.ones([2])
        got = [paddle.jit.to_static(double, build_strategy=strategy)(x).numpy().tolist()]

        @functools.wraps(double)  # after double was translated: its table is copied
        def triple(x):
            return x * 3.0

        got.append(paddle.jit.to_static(triple, build_strategy=strategy)(x).numpy().tolist())
        print(json.dumps({"got": got}))
    """)
    assert out["got"] == [[2.0, 2.0], [3.0, 3.0]]


def test_install_framehook_refuses_after_paddle_jit_sot_was_imported():
    out = child("""
        import paddle.jit.sot
        try:
            fp.install(translator="framehook")
        except RuntimeError as error:
            print(json.dumps({"error": str(error), "installed": fp.installed()}))
    """)
    assert "must run before paddle.jit.sot is imported" in out["error"]
    assert out["installed"] is None


def test_install_framehook_refuses_after_paddles_translator_was_installed():
    out = child("""
        fp.install()
        try:
            fp.install(translator="framehook")
        except RuntimeError as error:
            print(json.dumps({"error": str(error), "installed": fp.installed()}))
    """)
    assert "the 'paddle' translator is installed already" in out["error"]
    assert out["installed"] == "paddle"


def test_unknown_translator_is_a_value_error():
    # Refused before anything is looked at: safe in this process, whatever it installed.
    with pytest.raises(ValueError, match="unknown translator 'jit'.*translator='paddle'.*translator='framehook'"):
        framehook.sot.paddle.install(translator="jit")


def test_environment_flags():
    out = child("""
        import paddle.base.core as core
        refused = {}
        for flag, value in [("STRICT_MODE", "1"), ("STRICT_MODE", "maybe"), ("SOT_LOG_LEVEL", "1")]:
            os.environ[flag] = value
            try:
                fp.install(translator="framehook")
            except RuntimeError as error:
                refused[f"{flag}={value}"] = str(error)
            del os.environ[flag]
        untouched = fp.installed() is None and "paddle.jit.sot" not in sys.modules
        # A paddle without SOT's native functions: today's message.
        native = core.sot_set_with_graph
        del core.sot_set_with_graph
        try:
            fp.install(translator="framehook")
        except RuntimeError as error:
            refused["no SOT"] = str(error)
        core.sot_set_with_graph = native
        # Accepted: Paddle's CI settings (STRICT_MODE off, no logs, COST_MODEL read nowhere) and
        # MIN_GRAPH_SIZE=0, which runs every graph as its static program, however small.
        for flag, value in [("STRICT_MODE", "False"), ("SOT_LOG_LEVEL", "0"), ("COST_MODEL", "False"),
                            ("MIN_GRAPH_SIZE", "0")]:
            os.environ[flag] = value
        made = install_and_record()
        import paddle
        runs = count_program_runs()

        def add_one(x):
            return x + 1.0

        static = paddle.jit.to_static(add_one)
        x = paddle.ones([2])
        same = [close(static(x), add_one(x)) for _ in range(10)]
        print(json.dumps({"refused": refused, "untouched": untouched, "same": same, "program_runs": len(runs),
                          "counters": counters(made[0]), "paddle": paddles_translations()}))
    """)
    refused = out["refused"]
    assert set(refused) == {"STRICT_MODE=1", "STRICT_MODE=maybe", "SOT_LOG_LEVEL=1", "no SOT"}
    for setting, message in refused.items():
        if setting != "no SOT":
            flag, value = setting.split("=")
            assert f"{flag}={value!r}" in message and f"unset {flag}" in message, message
    assert "lets graph breaks through" in refused["STRICT_MODE=1"]
    assert "not a truth value" in refused["STRICT_MODE=maybe"]
    assert "'framehook.sot' logger" in refused["SOT_LOG_LEVEL=1"]
    assert "not a SOT-capable build" in refused["no SOT"]
    assert out["untouched"]  # a refusal leaves nothing half-installed
    assert out["same"] == [True] * 10
    # MIN_GRAPH_SIZE=0: the one-operation graph ran as its program on every call (framehook's
    # cost model, without it, would time it against the eager operation and may keep that).
    assert out["program_runs"] == 10
    assert out["counters"]["graphs"] == 1 and out["counters"]["ops"] == 1
    assert out["paddle"] == 0
