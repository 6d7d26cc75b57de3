"""Paddle's own dygraph_to_static models, a training step each, with ``paddle.jit.to_static`` on
framehook's translator and on Paddle's SOT, in one process.

Driven by framehook_dev.sot_paddle_models_bench, which runs it where paddlepaddle installs (3.10
and 3.13 in the matrix) with a release build of framehook.

    python benches/sot_paddle_models.py --tests ~/.cache/framehook/paddle-test-dy2st --json out.json

The models are Paddle's, imported from its ``test/dygraph_to_static`` files in ``--tests`` (never
committed here; without them this prints a SKIPPED line and exits 0): ``test_mnist.py``'s MNIST,
``test_resnet.py``'s ResNet (its smallest depth, 50, on 32x32 images, the test's batch of 2 and
its Momentum optimizer) and ``bert_dygraph_model.py``'s PretrainModelLayer (``bert_utils.py``'s
config with 2 layers and hidden size 64, two sequences of its fake data, Adam). A step is what
the test's training loop does: forward, loss, backward, optimizer step, clearing the gradients.

Three copies of each model, from one state dict: eager (``paddle.jit.enable_to_static(False)``),
``to_static`` with Paddle's SOT and ``to_static`` with framehook's translator, which
``framehook.sot.paddle.install(translator="framehook")`` puts behind ``to_static``'s SOT mode.
Paddle's translator runs beside it on framehook's eval-frame functions (which ``install()``
puts in Paddle's place either way): this script binds Paddle's own ``symbolic_translate``, the
one function ``to_static`` calls to translate, while the Paddle copy steps (see
``paddle_symbolic_translate``). Both run as users get them (Paddle's ``MIN_GRAPH_SIZE``
unset: Paddle's translator runs graphs under 10 operations eagerly, framehook's cost model
times each graph's program beside its operations called eagerly).

Measured per model:

- the first step of each translated copy: translation, static program build and the step
  (the median over ``--first-repeats`` new copies, each translated anew);
- the hot step: each repeat times a batch of steps of every copy in turn (eager, Paddle SOT,
  framehook); minimum and median over the repeats, of wall time and of the process's CPU time
  (which leaves out what other processes took on a shared machine); and how framehook's cost
  model runs each graph (its program, or its operations called eagerly);
- graph breaks: Paddle's counted as framehook_dev.paddle_sot_suite counts them (the reasons its
  info collector records with ``SOT_COLLECT_INFO=breakgraph_reason``, its splits at a
  data-dependent ``if``, its fallbacks, and a translated function with an exception table,
  which its eval frame never translates); framehook's are its graph breaks and fallbacks
  (``framehook.sot.stats``) over every translation the model's ``to_static`` made;
- correctness: the first ``--check-steps`` losses of each translated copy against eager's
  (same seed, same initial weights), and the parameters and buffers after those steps.

The targets: hot step no slower than Paddle SOT's, first step at most 0.5x Paddle SOT's, and no
more graph breaks than Paddle's translator, per model.

With ``--instructions``, the hot step is counted instead of timed, where wall time cannot tell
two copies a percent apart: the script runs itself under valgrind's callgrind with collection
off, and the worker turns it on, by callgrind's client requests, around ``--count-steps`` steps
of one copy at a time (copies in turn, each first in turn, ``--rounds`` rounds), after
``--warm-steps`` steps of each copy (the paddle backend's cost model is past its trials by
then). Collection is per thread: only the main thread's instructions count, not those of
Paddle's worker threads, which spin for as long as they are left to. Reported per model: the
instructions per step of each copy (minimum and median over the rounds) and framehook's
against Paddle SOT's.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import gc
import importlib.util
import inspect
import json
import math
import os
import platform
import statistics
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Callable, NamedTuple

# Paddle's translator records each graph break's reason (read at each break, counted below).
os.environ["SOT_COLLECT_INFO"] = "breakgraph_reason"

import framehook.sot.paddle  # noqa: E402

framehook.sot.paddle.install(translator="framehook")  # before paddle.jit.sot is imported

import numpy as np  # noqa: E402
import paddle  # noqa: E402
import paddle.jit.sot  # noqa: E402
from paddle.jit.dy2static.program_translator import StaticFunction  # noqa: E402
from paddle.jit.sot.opcode_translator.executor import executor_cache, opcode_executor  # noqa: E402
from paddle.jit.sot.utils import info_collector  # noqa: E402

import framehook.sot as sot  # noqa: E402

# Run as a script: its directory is sys.path[0], so its neighbours import.
from callgrind_client import Callgrind, run_worker  # noqa: E402
from framehook.sot._paddle_backend import _StaticGraph  # noqa: E402

MODES = ("eager", "paddle_sot", "framehook")
TRANSLATED = ("paddle_sot", "framehook")
SEED = 2020
HOT_RATIO_BAR = 1.0
FIRST_RATIO_BAR = 0.5
MODEL_FILES = {
    "mnist": ["test_mnist.py"],
    "resnet": ["test_resnet.py"],
    "bert": ["bert_dygraph_model.py", "bert_utils.py", "transformer_dygraph_model.py"],
}


def paddle_symbolic_translate() -> Callable[..., Any]:
    """Paddle's own ``symbolic_translate``, beside framehook's.

    ``install(translator="framehook")`` rebinds ``paddle.jit.sot.symbolic_translate`` (in the
    package and in ``paddle.jit.sot.translate``) before anything can keep Paddle's, so this loads
    ``paddle/jit/sot/translate.py`` a second time, as a module of the same package: the same
    function, using the same callback, caches and eval-frame functions as the original would.
    Bench-only: framehook offers no public way to reach Paddle's translator once its own is
    installed."""
    original = sys.modules["paddle.jit.sot.translate"]
    spec = importlib.util.spec_from_file_location("paddle.jit.sot._translate_for_bench", original.__file__)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.symbolic_translate


class Breaks:
    """Graph breaks of the model being measured, on both translators."""

    def __init__(self) -> None:
        self.clear()

    def clear(self) -> None:
        self.paddle_unrecorded: list[str] = []  # Paddle's breaks that record no reason, described here
        self.paddle_exception_tables: set[Any] = set()
        self.framehook_translations: list[Any] = []
        info_collector.InfoCollector().clear()

    def paddle(self) -> int:
        info = info_collector.InfoCollector().get_info_dict(info_collector.InfoType.E2E_INFO)
        return len(info.get("BreakGraphReasonInfo", [])) + len(self.paddle_unrecorded)

    def paddle_reasons(self) -> list[str]:
        info = info_collector.InfoCollector().get_info_dict(info_collector.InfoType.E2E_INFO)
        recorded = [str(getattr(item, "reason", item))[:200] for item in info.get("BreakGraphReasonInfo", [])]
        return recorded + self.paddle_unrecorded

    def framehook(self) -> tuple[int, int]:
        """framehook's graph breaks and fallbacks."""
        stats = [sot.stats(fast) for fast in self.framehook_translations]
        return sum(len(s.graph_breaks) for s in stats), sum(len(s.fallbacks) for s in stats)

    def framehook_reasons(self) -> list[str]:
        return [f"{record.reason[:200]} ({Path(record.filename).name}:{record.lineno})"
                for fast in self.framehook_translations
                for s in [sot.stats(fast)] for record in [*s.graph_breaks, *s.fallbacks]]


breaks = Breaks()


def where(code: Any) -> str:
    return f"{code.co_name} ({Path(code.co_filename).name}:{code.co_firstlineno})"


def count_paddle_breaks() -> None:
    """Counts the breaks Paddle's translator records no reason for, as paddle_sot_suite's child
    does: a split at a data-dependent ``if`` and a fallback (the whole frame eager)."""
    split_at_if = opcode_executor.OpcodeExecutor._break_graph_when_if

    @functools.wraps(split_at_if)
    def counted_split_at_if(self: Any, *args: Any, **kwargs: Any) -> Any:
        breaks.paddle_unrecorded.append(f"a split at a data-dependent if in {where(self.vframe.code)}")
        return split_at_if(self, *args, **kwargs)

    opcode_executor.OpcodeExecutor._break_graph_when_if = counted_split_at_if
    translate_frame = executor_cache.start_translate

    @functools.wraps(translate_frame)
    def counted_translate_frame(frame: Any, **kwargs: Any) -> Any:
        custom_code, guard, guard_chain = translate_frame(frame, **kwargs)
        if custom_code.code is None and guard is not None:
            breaks.paddle_unrecorded.append(f"a fallback: {where(frame.f_code)} runs eagerly")
        return custom_code, guard, guard_chain

    executor_cache.start_translate = counted_translate_frame


FRAMEHOOK_TRANSLATE = paddle.jit.sot.symbolic_translate
PADDLE_TRANSLATE = paddle_symbolic_translate()


@functools.wraps(FRAMEHOOK_TRANSLATE)
def framehook_translate(fn: Any, **kwargs: Any) -> Any:
    fast = FRAMEHOOK_TRANSLATE(fn, **kwargs)
    # A bound method's translation is its function's, bound: counted once.
    translation = getattr(fast, "__func__", fast)
    if all(translation is not known for known in breaks.framehook_translations):
        breaks.framehook_translations.append(translation)
    return fast


def paddle_translate(fn: Any, **kwargs: Any) -> Any:
    # Paddle's eval frame never hands its translator a frame with an exception table (3.11+):
    # that function runs eagerly, counted once as a break, as paddle_sot_suite counts it.
    code = getattr(getattr(fn, "__func__", fn), "__code__", None)
    if getattr(code, "co_exceptiontable", b"") and code not in breaks.paddle_exception_tables:
        breaks.paddle_exception_tables.add(code)
        breaks.paddle_unrecorded.append(f"{where(code)} has an exception table: never translated")
    return PADDLE_TRANSLATE(fn, **kwargs)


@contextlib.contextmanager
def translating(mode: str) -> Iterator[None]:
    """Runs to_static's SOT mode on ``mode``'s translator (eager: to_static off). to_static
    looks ``paddle.jit.sot.symbolic_translate`` up at every call, so binding it here chooses
    the translator of the calls inside."""
    paddle.jit.enable_to_static(mode != "eager")
    paddle.jit.sot.symbolic_translate = paddle_translate if mode == "paddle_sot" else framehook_translate
    try:
        yield
    finally:
        paddle.jit.sot.symbolic_translate = FRAMEHOOK_TRANSLATE
        paddle.jit.enable_to_static(True)


class Model(NamedTuple):
    make: Callable[[], Any]  # a new layer (its forward translated by to_static where asked)
    to_static: Callable[[Any], Any]
    optimizer: Callable[[Any], Any]
    batches: list[Any]
    step: Callable[[Any, Any, Any], Any]  # (layer, optimizer, batch) -> the loss
    config: str


def mnist_model(batch_size: int) -> Model:
    import test_mnist

    rng = np.random.RandomState(SEED)
    batches = [(paddle.to_tensor(rng.rand(batch_size, 1, 28, 28).astype("float32")),
                paddle.to_tensor(rng.randint(0, 10, (batch_size, 1)).astype("int64"))) for _ in range(4)]

    def step(layer: Any, optimizer: Any, batch: Any) -> Any:
        img, label = batch
        _prediction, _acc, avg_loss = layer(img, label=label)
        avg_loss.backward()
        optimizer.minimize(avg_loss)
        layer.clear_gradients()
        return avg_loss

    return Model(make=test_mnist.MNIST, to_static=paddle.jit.to_static,
                 optimizer=lambda parameters: paddle.optimizer.Adam(learning_rate=0.001, parameters=parameters),
                 batches=batches, step=step, config=f"batch {batch_size}, Adam")


def resnet_model(batch_size: int, image_size: int) -> Model:
    import test_resnet

    rng = np.random.RandomState(SEED)
    batches = [(paddle.to_tensor(rng.randn(batch_size, 3, image_size, image_size).astype("float32")),
                paddle.to_tensor(rng.randint(0, 102, (batch_size, 1)).astype("int64"))) for _ in range(4)]

    def step(layer: Any, optimizer: Any, batch: Any) -> Any:
        img, label = batch
        pred = layer(img)
        loss = paddle.nn.functional.cross_entropy(input=pred, label=label)
        avg_loss = paddle.mean(x=loss)
        avg_loss.backward()
        optimizer.minimize(avg_loss)
        layer.clear_gradients()
        return avg_loss

    return Model(make=lambda: test_resnet.ResNet(layers=50), to_static=paddle.jit.to_static,
                 optimizer=lambda parameters: test_resnet.optimizer_setting(parameter_list=parameters),
                 batches=batches, step=step,
                 config=f"depth 50, batch {batch_size}, {image_size}x{image_size}, Momentum")


def bert_model(sequences: int, hidden: int, layers: int) -> Model:
    import bert_dygraph_model
    import bert_utils

    config = dict(bert_utils.get_bert_config(), hidden_size=hidden, num_hidden_layers=layers)
    reader = bert_utils.get_feed_data_reader(config)
    # The fake data repeats one sample; a batch of `sequences` of it (the reader counts tokens).
    sample_tokens = len(next(iter(reader.build_fake_data()))[0])
    reader.batch_size = sequences * sample_tokens
    data = next(iter(reader.data_generator()()))
    batches = [tuple(paddle.to_tensor(array) for array in data)]

    def step(layer: Any, optimizer: Any, batch: Any) -> Any:
        src_ids, pos_ids, sent_ids, input_mask, mask_label, mask_pos, labels = batch
        _next_sent_acc, _mask_lm_loss, total_loss = layer(
            src_ids=src_ids, position_ids=pos_ids, sentence_ids=sent_ids, input_mask=input_mask,
            mask_label=mask_label, mask_pos=mask_pos, labels=labels)
        total_loss.backward()
        optimizer.minimize(total_loss)
        layer.clear_gradients()
        return total_loss

    def make() -> Any:
        return bert_dygraph_model.PretrainModelLayer(config=config, weight_sharing=False, use_fp16=False)

    def to_static(layer: Any) -> Any:
        # Paddle's file decorates PretrainModelLayer.forward with to_static (versions differ).
        decorated = isinstance(inspect.getattr_static(type(layer), "forward"), StaticFunction)
        return layer if decorated else paddle.jit.to_static(layer)

    return Model(make=make, to_static=to_static,
                 optimizer=lambda parameters: paddle.optimizer.Adam(parameters=parameters),
                 batches=batches, step=step,
                 config=f"{layers} layers, hidden {hidden}, {sequences} sequences of {sample_tokens} tokens, Adam")


def copies(model: Model, modes: tuple[str, ...] = MODES) -> dict[str, tuple[Any, Any]]:
    """Per mode, a layer with the same initial state (and to_static where it translates) and
    its optimizer."""
    def make() -> Any:
        # Each copy names its parameters afresh, as each of the tests' runs does (inside
        # base.dygraph.guard()): BERT's are named explicitly, and dygraph refuses a name twice.
        with paddle.utils.unique_name.guard():
            return model.make()

    paddle.seed(SEED)
    state = {name: value.numpy().copy() for name, value in make().state_dict().items()}
    made = {}
    for mode in modes:
        layer = make()
        layer.set_state_dict({name: paddle.to_tensor(value) for name, value in state.items()})
        if mode != "eager":
            layer = model.to_static(layer)
        made[mode] = (layer, model.optimizer(layer.parameters()))
    return made


def state_of(layer: Any) -> dict[str, np.ndarray]:
    return {name: value.numpy() for name, value in layer.state_dict().items()}


def differences(got: dict[str, np.ndarray], expected: dict[str, np.ndarray]) -> list[str]:
    """The entries of two state dicts that differ by more than rounding (a static program may
    sum in another order: Paddle SOT's BERT weights differ from eager's by a few 1e-6 after
    three steps)."""
    return [name for name in expected
            if not np.allclose(got[name], expected[name], rtol=1e-5, atol=1e-5)]


def largest_difference(got: dict[str, np.ndarray], expected: dict[str, np.ndarray]) -> float:
    return max((float(np.abs(got[name] - expected[name]).max(initial=0.0)) for name in expected), default=0.0)


def profiled(path: Path | None, call: Callable[[], Any]) -> Any:
    if path is None:
        return call()
    import cProfile

    profile = cProfile.Profile()
    try:
        return profile.runcall(call)
    finally:
        profile.dump_stats(str(path))


def stepping(model: Model) -> tuple[dict[str, tuple[Any, Any]], Callable[[str, int], Any], set[int]]:
    """New copies of the model (its breaks counted from now), a function running copy
    ``mode``'s step on batch ``index``, and the graphs that existed before."""
    layers = copies(model)
    breaks.clear()
    graphs_before = {id(graph) for graph in framehook_graphs()}

    def run(mode: str, index: int) -> Any:
        layer, optimizer = layers[mode]
        with translating(mode):
            return model.step(layer, optimizer, model.batches[index % len(model.batches)])

    return layers, run, graphs_before


def measure(name: str, model: Model, args: argparse.Namespace) -> dict[str, Any]:
    layers, run, graphs_before = stepping(model)

    # The check: the same seed before each copy's steps (dropout), losses against eager's.
    losses: dict[str, list[float]] = {}
    first_ms: dict[str, list[float]] = {mode: [] for mode in MODES}
    states = {}
    for mode in MODES:
        paddle.seed(SEED)
        values = []
        for index in range(args.check_steps):
            profile = args.profile / f"{name}-{mode}.pstats" if args.profile and index == 0 else None
            start = time.perf_counter()
            loss = profiled(profile, functools.partial(run, mode, index))
            values.append(float(loss))
            if index == 0:
                first_ms[mode].append((time.perf_counter() - start) * 1e3)
        losses[mode] = values
        states[mode] = state_of(layers[mode][0])
    if not breaks.framehook_translations:
        raise SystemExit(f"{name}: to_static translated nothing: is the model's forward to_static's?")
    checks = {}
    for mode in TRANSLATED:
        same = bool(np.allclose(losses[mode], losses["eager"], rtol=1e-5, atol=1e-6))
        checks[mode] = {"same_losses": same, "state_differs": differences(states[mode], states["eager"]),
                        "largest_state_difference": largest_difference(states[mode], states["eager"])}
        if not same:
            print(f"{name}: {mode}'s losses differ from eager's: {losses[mode]} against {losses['eager']}")
        if checks[mode]["state_differs"]:
            print(f"{name}: {mode}'s state after {args.check_steps} steps differs from eager's in "
                  f"{', '.join(checks[mode]['state_differs'][:6])}")

    # Past the cost model's trials, then batches of steps per copy, interleaved.
    step_ms = {}
    for mode in MODES:
        for index in range(args.warm_steps):
            run(mode, index)
        start = time.perf_counter()
        run(mode, 0)
        step_ms[mode] = (time.perf_counter() - start) * 1e3
    steps = max(1, math.ceil(args.min_time * 1e3 / max(step_ms.values())))
    # Wall time, and the process's CPU time beside it: on a shared machine the second leaves
    # out the time another process held the CPU.
    samples: dict[str, list[float]] = {mode: [] for mode in MODES}
    cpu_samples: dict[str, list[float]] = {mode: [] for mode in MODES}
    for _ in range(args.repeats):
        for mode in MODES:
            start, cpu_start = time.perf_counter(), time.process_time()
            for index in range(steps):
                run(mode, index)
            samples[mode].append((time.perf_counter() - start) * 1e3 / steps)
            cpu_samples[mode].append((time.process_time() - cpu_start) * 1e3 / steps)

    graph_breaks, fallbacks = breaks.framehook()
    counted = {"paddle_sot": breaks.paddle(), "framehook": graph_breaks + fallbacks}
    reasons = {"paddle_sot": breaks.paddle_reasons()[:12], "framehook": breaks.framehook_reasons()[:12]}
    translations = len(breaks.framehook_translations)
    graphs = graphs_made(graphs_before)

    # More first steps, of new copies (each translated anew), the translators in turn.
    layers.clear()
    for repeat in range(args.first_repeats - 1):
        fresh = copies(model, TRANSLATED)
        for mode in TRANSLATED if repeat % 2 else TRANSLATED[::-1]:
            layer, optimizer = fresh[mode]
            start = time.perf_counter()
            with translating(mode):
                model.step(layer, optimizer, model.batches[0])
            first_ms[mode].append((time.perf_counter() - start) * 1e3)

    return {
        "config": model.config,
        "first_step_ms": {mode: statistics.median(values) for mode, values in first_ms.items()},
        "first_step_ms_all": first_ms,
        "hot_step_ms": {mode: min(values) for mode, values in samples.items()},
        "median_step_ms": {mode: statistics.median(values) for mode, values in samples.items()},
        "hot_step_cpu_ms": {mode: min(values) for mode, values in cpu_samples.items()},
        "median_step_cpu_ms": {mode: statistics.median(values) for mode, values in cpu_samples.items()},
        "framehook_graphs": graphs,
        "steps_per_repeat": steps,
        "losses": losses,
        "checks": checks,
        "breaks": counted,
        "framehook_graph_breaks": graph_breaks,
        "framehook_fallbacks": fallbacks,
        "framehook_translations": translations,
        "break_reasons": reasons,
    }


def count_steps(name: str, model: Model, args: argparse.Namespace, callgrind: Callgrind) -> dict[str, Any]:
    """The worker's part of ``--instructions``: warm steps of every copy, then rounds of
    counted steps, one copy at a time, each copy first in turn. Returns what is not counted:
    breaks and how framehook's graphs run."""
    _, run, graphs_before = stepping(model)

    for mode in MODES:
        paddle.seed(SEED)
        for index in range(args.warm_steps):
            run(mode, index)
    if not breaks.framehook_translations:
        raise SystemExit(f"{name}: to_static translated nothing: is the model's forward to_static's?")
    for round_ in range(args.rounds):
        for mode in MODES[round_ % len(MODES):] + MODES[:round_ % len(MODES)]:
            with callgrind.counting(f"{name}/{mode}/{round_}"):
                for index in range(args.count_steps):
                    run(mode, index)
    graph_breaks, fallbacks = breaks.framehook()
    return {"config": model.config, "breaks": {"paddle_sot": breaks.paddle(), "framehook": graph_breaks + fallbacks},
            "framehook_graphs": graphs_made(graphs_before)}


def count_instructions(names: list[str], args: argparse.Namespace) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """``--instructions``: this script's worker under callgrind; instructions per step per copy."""
    worker = [sys.executable, os.path.abspath(__file__), "--tests", str(args.tests), "--models", ",".join(names),
              "--warm-steps", str(args.warm_steps), "--rounds", str(args.rounds),
              "--count-steps", str(args.count_steps)]
    for option in ("mnist_batch", "resnet_batch", "resnet_image", "bert_sequences", "bert_hidden", "bert_layers"):
        worker += [f"--{option.replace('_', '-')}", str(getattr(args, option))]
    counts, worker_results = run_worker(worker)
    results, targets = {}, []
    for name in names:
        per_step = {mode: [counts[f"{name}/{mode}/{round_}"] / args.count_steps for round_ in range(args.rounds)]
                    for mode in MODES}
        low = {mode: min(values) for mode, values in per_step.items()}
        middle = {mode: statistics.median(values) for mode, values in per_step.items()}
        results[name] = dict(worker_results[name], instructions_per_step=per_step, min_instructions=low,
                             median_instructions=middle)
        ratio = middle["framehook"] / middle["paddle_sot"]
        targets.append({"target": f"{name}: hot step no more instructions than Paddle SOT's", "value": ratio,
                        "met": ratio <= HOT_RATIO_BAR})
        print(f"{name:7} Mi instructions per step (median): eager {middle['eager'] / 1e6:9.2f}  paddle SOT "
              f"{middle['paddle_sot'] / 1e6:9.2f}  framehook {middle['framehook'] / 1e6:9.2f}  ratio {ratio:.4f}",
              flush=True)
    return results, targets


def framehook_graphs() -> list[Any]:
    # Bench-only: the paddle backend's compiled graphs, found by their (private) class, to say
    # how framehook's cost model chose to run each one.
    return [value for value in gc.get_objects() if isinstance(value, _StaticGraph)]


def graphs_made(before: set[int]) -> list[dict[str, Any]]:
    """framehook's graphs made since ``before``: their operations and how they run."""
    return [{"operations": len(graph._nodes),
             "runs": "eagerly" if graph._eager or graph._static is False else
                     "as its program" if graph._static else "undecided"}
            for graph in framehook_graphs() if id(graph) not in before]


def warm_up() -> None:
    """A small layer through each translator first, so that neither model's first step pays
    for what the process does once (imports, the first static program)."""
    paddle.seed(SEED)
    for mode in TRANSLATED:
        layer = paddle.jit.to_static(paddle.nn.Linear(4, 4))
        optimizer = paddle.optimizer.SGD(learning_rate=0.1, parameters=layer.parameters())
        with translating(mode):
            for _ in range(3):
                loss = layer(paddle.ones([2, 4])).mean()
                loss.backward()
                optimizer.step()
                optimizer.clear_grad()


def targets_of(name: str, result: dict[str, Any]) -> list[dict[str, Any]]:
    hot, first, counted = result["hot_step_ms"], result["first_step_ms"], result["breaks"]
    hot_ratio = hot["framehook"] / hot["paddle_sot"]
    first_ratio = first["framehook"] / first["paddle_sot"]
    return [
        {"target": f"{name}: hot step no slower than Paddle SOT's", "value": hot_ratio,
         "met": hot_ratio <= HOT_RATIO_BAR},
        {"target": f"{name}: first step at most {FIRST_RATIO_BAR}x Paddle SOT's", "value": first_ratio,
         "met": first_ratio <= FIRST_RATIO_BAR},
        {"target": f"{name}: graph breaks no more than Paddle SOT's", "value": counted["framehook"],
         "met": counted["framehook"] <= counted["paddle_sot"]},
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=Path, default=Path(os.environ.get(
        "FRAMEHOOK_CACHE", Path.home() / ".cache" / "framehook")) / "paddle-test-dy2st",
                        help="Paddle's test/dygraph_to_static files")
    parser.add_argument("--models", default="mnist,resnet,bert")
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--min-time", type=float, default=0.3, help="seconds of steps per repeat and copy")
    parser.add_argument("--first-repeats", type=int, default=3, help="first steps of each translated copy")
    parser.add_argument("--check-steps", type=int, default=3)
    parser.add_argument("--warm-steps", type=int,
                        help="steps of each copy before the hot ones (default 6 after the checked steps; 10 with "
                             "--instructions, which checks none)")
    parser.add_argument("--instructions", action="store_true",
                        help="count the hot step's instructions under callgrind instead of timing (needs valgrind)")
    parser.add_argument("--rounds", type=int, default=3, help="--instructions: rounds of counted steps per copy")
    parser.add_argument("--count-steps", type=int, default=3, help="--instructions: steps per copy and round")
    parser.add_argument("--worker", type=Path, help=argparse.SUPPRESS)  # the callgrind client library
    parser.add_argument("--worker-out", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--mnist-batch", type=int, default=16)
    parser.add_argument("--resnet-batch", type=int, default=2)
    parser.add_argument("--resnet-image", type=int, default=32)
    parser.add_argument("--bert-sequences", type=int, default=2)
    parser.add_argument("--bert-hidden", type=int, default=64)
    parser.add_argument("--bert-layers", type=int, default=2)
    parser.add_argument("--profile", type=Path, help="a directory for cProfile stats of each first step")
    parser.add_argument("--name", default=platform.python_version())
    parser.add_argument("--json")
    args = parser.parse_args()

    names = args.models.split(",")
    missing = sorted({file for name in names for file in MODEL_FILES[name] if not (args.tests / file).is_file()})
    if missing:
        print(f"sot_paddle_models: SKIPPED: no {', '.join(missing)} in {args.tests} "
              "(Paddle's test/dygraph_to_static files, never committed)")
        return 0
    if args.warm_steps is None:
        args.warm_steps = 10 if args.instructions or args.worker else 6
    if args.worker:
        return count_in_worker(names, args)
    if args.instructions:
        started = time.monotonic()
        results, targets = count_instructions(names, args)
        write_report(args, results, targets, started)
        return 0
    sys.path.insert(0, str(args.tests))
    if args.profile:
        args.profile.mkdir(parents=True, exist_ok=True)
    count_paddle_breaks()
    warm_up()
    makers = models(args)
    results, targets = {}, []
    started = time.monotonic()
    for name in names:
        results[name] = result = measure(name, makers[name](), args)
        targets += targets_of(name, result)
        hot, first = result["hot_step_ms"], result["first_step_ms"]
        print(f"{name:7} hot ms: eager {hot['eager']:8.2f}  paddle SOT {hot['paddle_sot']:8.2f}  framehook "
              f"{hot['framehook']:8.2f}   first ms: paddle SOT {first['paddle_sot']:9.1f}  framehook "
              f"{first['framehook']:9.1f}   breaks: paddle SOT {result['breaks']['paddle_sot']}  framehook "
              f"{result['breaks']['framehook']}", flush=True)
    # Paddle's collector prints what it collected at exit: measured already.
    info_collector.InfoCollector().clear()
    write_report(args, results, targets, started)
    return 0


def count_in_worker(names: list[str], args: argparse.Namespace) -> int:
    """``--instructions``' worker, run under callgrind: counted steps of each model."""
    sys.path.insert(0, str(args.tests))
    callgrind = Callgrind(args.worker)
    count_paddle_breaks()
    warm_up()
    makers = models(args)
    results = {name: count_steps(name, makers[name](), args, callgrind) for name in names}
    info_collector.InfoCollector().clear()
    args.worker_out.write_text(json.dumps(results))
    return 0


def write_report(args: argparse.Namespace, results: dict[str, Any], targets: list[dict[str, Any]],
                 started: float) -> None:
    for check in targets:
        print(f"{'met ' if check['met'] else 'MISS'} {check['target']}: {check['value']:.4f}")
    report = {
        "name": args.name,
        "python": platform.python_version(),
        "paddle": paddle.__version__,
        "loadavg": os.getloadavg(),
        "seconds": round(time.monotonic() - started),
        "options": {key: value for key, value in vars(args).items()
                    if key not in ("json", "profile", "tests", "worker")},
        "models": results,
        "targets": targets,
    }
    if args.json:
        with open(args.json, "w") as out:
            json.dump(report, out, indent=1)


def models(args: argparse.Namespace) -> dict[str, Callable[[], Model]]:
    return {
        "mnist": lambda: mnist_model(args.mnist_batch),
        "resnet": lambda: resnet_model(args.resnet_batch, args.resnet_image),
        "bert": lambda: bert_model(args.bert_sequences, args.bert_hidden, args.bert_layers),
    }


if __name__ == "__main__":
    sys.exit(main())
