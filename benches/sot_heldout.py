"""SOT's translator beside eager Python on held-out workloads, one pyperf run.

Held out: model-like numpy code from public repositories, written by nobody here and for no
kernel of ours (issue 43), measured as it comes. The files are named, pinned at a commit
and checksummed in tools/framehook_dev/heldout_manifest.json and read from
``$FRAMEHOOK_CACHE/heldout`` (``~/.cache/framehook/heldout``; ``--heldout-dir``), never from
the repository: where one is missing or its SHA-256 differs, this prints a SKIPPED line and
exits 0. Driven by framehook_dev.sot_heldout_bench, which runs it with a release build.

    python benches/sot_heldout.py --name 3.12 --json out.json [pyperf options, e.g. --fast]

The files are run unchanged. Those whose top level only defines things are imported
(``importlib``, under a module name of ours). min-char-rnn's top level is a script (it
reads ``sys.argv``, opens ``input.txt`` and ``output.txt`` and trains forever), so only its
imports and function definitions run: the file's own bytes are parsed with ``ast``, every
other top-level statement is left out, and the rest is compiled under the file's name
(line numbers and code are the file's). The inputs, weights and state (the module globals
min-char-rnn's ``lossFun`` reads, as its top level would set them) are made here, seeded.

The workloads (each a call of the file's own function, except ``kalman_track``, whose loop
is the file's ``example()`` loop written here without its plot):

- ``gpt2_forward``: picoGPT's ``gpt2(inputs, **params, n_head=4)``, two transformer blocks
  of width 32, 8 tokens, a vocabulary of 64 (float32 weights, as GPT-2's);
- ``char_rnn_loss``: min-char-rnn's ``lossFun(inputs, targets, hprev)``, 25 time steps
  (the gist's ``seq_length``), hidden size 32, vocabulary 16;
- ``nielsen_sgd_step``: network.py's ``Network.update_mini_batch`` on a [8, 16, 16, 4]
  network, a mini-batch of 10 (the book's size), eta 3.0;
- ``nielsen_feedforward``: the same network's ``feedforward(x)`` on one 8x1 input;
- ``kalman_track``: kalman-filter.py's ``KalmanFilter.predict()`` and ``update(z)`` over a
  window of 10 measurements, with its example's matrices.

Every benchmark runs in its own pyperf worker processes: ``WORKLOAD/eager`` (the call
plainly), ``WORKLOAD/translated`` (through ``sot.translate``, after the first calls),
``WORKLOAD/generated`` (SOT's generated code called as a plain function, no hook, no guards;
only where the translation is whole), ``WORKLOAD/first_call`` (``sot.reset()``, then the
first call of a new translation). After the pyperf run, a cross-check in the parent: eager
and translated timed alternately, 41 batches of at least 2 ms each, the minimum per call of
each (what a loaded machine's pauses leave out). With ``--instructions``, also each workload's instructions
per call, eager and translated, counted by callgrind (valgrind): the difference between 5
and 25 calls after 5 warm-up calls, exact and repeatable where a shared machine's timings are
not. Before timing, each workload is checked, not required:
three calls translated against three eager ones on an identically seeded copy, results and
the state the calls change compared bit for bit; ``sot.stats`` counters, breaks and
fallbacks with their reasons, and ``sot.explain``'s text. Every workload is timed and
reported, translated whole or not; exits 1 after the report if any result differed.
"""

from __future__ import annotations

import argparse
import ast
import collections
import functools
import hashlib
import importlib.util
import json
import os
import platform
import struct
import sys
import sysconfig
import types
import warnings
from pathlib import Path
from typing import Any, Callable, NamedTuple

import numpy as np
import pyperf

import framehook
import framehook.sot as sot

MANIFEST = Path(__file__).resolve().parent.parent / "tools" / "framehook_dev" / "heldout_manifest.json"
HELDOUT_DIR = Path(os.environ.get("FRAMEHOOK_CACHE") or Path.home() / ".cache" / "framehook") / "heldout"
# The workload target of benches/sot_workloads.py, against which these are reported.
SPEEDUP_BAR = 1.5
CHECK_CALLS = 3
# Instructions per call: the difference between FEW and MORE calls after WARMUP_CALLS (the
# first calls: translation, recompilations).
WARMUP_CALLS, FEW_CALLS, MORE_CALLS = 5, 5, 25
# The interleaved cross-check: batches of each kind in turn, each at least this long.
# Short batches: on a loaded machine some of them run without being preempted.
INTERLEAVED_BATCHES, INTERLEAVED_BATCH_S = 41, 0.002


# ------------------------------------------------------------------ the files


def manifest() -> dict:
    return json.loads(MANIFEST.read_text())


def missing_or_changed(directory: Path) -> list[str]:
    """Why the held-out files cannot be used as the manifest pins them (empty: they can)."""
    problems = []
    for entry in manifest()["files"]:
        path = directory / entry["file"]
        where = f"{entry['repo']}@{entry['commit'][:12]}:{entry['path']}"
        if not path.is_file():
            problems.append(f"{path} is missing (fetch {where})")
        elif hashlib.sha256(path.read_bytes()).hexdigest() != entry["sha256"]:
            problems.append(f"{path} differs from {where} (SHA-256 is not the manifest's {entry['sha256'][:16]}...)")
    return problems


def import_file(path: Path, name: str) -> types.ModuleType:
    """``path`` imported unchanged as module ``name``."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    with warnings.catch_warnings():
        # network.py's docstrings hold "\p" (a SyntaxWarning since 3.12): not ours to fix.
        warnings.simplefilter("ignore", SyntaxWarning)
        spec.loader.exec_module(module)
    return module


def definitions_of(path: Path, name: str) -> types.ModuleType:
    """Module ``name`` with only the imports and the function and class definitions of
    ``path`` run: for a file whose top level is a script. Compiled from the file's own
    bytes under its own name, so its code objects and line numbers are the file's."""
    tree = ast.parse(path.read_bytes(), filename=str(path))
    kept = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.ClassDef)
    tree.body = [node for node in tree.body if isinstance(node, kept)]
    module = types.ModuleType(name)
    module.__file__ = str(path)
    sys.modules[name] = module
    exec(compile(tree, str(path), "exec"), module.__dict__)
    return module


@functools.cache
def modules(directory: Path) -> dict[str, types.ModuleType]:
    """Each held-out file's module, by its file name in the manifest."""
    loaded = {}
    for entry in manifest()["files"]:
        path = directory / entry["file"]
        name = "heldout_" + path.stem
        loaded[entry["file"]] = import_file(path, name) if entry["load"] == "import" else definitions_of(path, name)
    set_up_char_rnn(loaded["min_char_rnn.py"])
    return loaded


# ------------------------------------------------------------------ the workloads


class Workload(NamedTuple):
    source: str  # the manifest's file
    description: str
    function: Callable[..., Any]  # what is translated
    args: tuple
    kwargs: dict
    state: Callable[[], Any]  # what the calls change besides their result


def no_state() -> None:
    return None


GPT2_WIDTH, GPT2_HEADS, GPT2_BLOCKS, GPT2_VOCAB, GPT2_CONTEXT = 32, 4, 2, 64, 16


def gpt2_forward(loaded: dict) -> Workload:
    rng = np.random.default_rng(0)

    def normal(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) * 0.02).astype(np.float32)

    def linear(fan_in: int, fan_out: int) -> dict:
        return {"w": normal(fan_in, fan_out), "b": normal(fan_out)}

    def norm() -> dict:
        return {"g": np.ones(GPT2_WIDTH, np.float32), "b": np.zeros(GPT2_WIDTH, np.float32)}

    width = GPT2_WIDTH
    # The parameter tree of picoGPT's utils.load_gpt2_params_from_tf_ckpt, at a small size.
    params = {
        "wte": normal(GPT2_VOCAB, width), "wpe": normal(GPT2_CONTEXT, width), "ln_f": norm(),
        "blocks": [{"mlp": {"c_fc": linear(width, 4 * width), "c_proj": linear(4 * width, width)},
                    "attn": {"c_attn": linear(width, 3 * width), "c_proj": linear(width, width)},
                    "ln_1": norm(), "ln_2": norm()} for _ in range(GPT2_BLOCKS)],
    }
    inputs = [int(token) for token in rng.integers(0, GPT2_VOCAB, 8)]  # as encoder.encode gives them
    return Workload("picogpt_gpt2.py", f"GPT-2 forward, {GPT2_BLOCKS} blocks of width {width}, {GPT2_HEADS} heads, "
                    f"{len(inputs)} tokens", loaded["picogpt_gpt2.py"].gpt2, (inputs,),
                    dict(params, n_head=GPT2_HEADS), no_state)


RNN_HIDDEN, RNN_VOCAB, RNN_STEPS = 32, 16, 25


def set_up_char_rnn(module: types.ModuleType) -> None:
    """The module globals min-char-rnn's top level makes and lossFun reads (the vocabulary's
    size and the model's parameters, initialised as the file does), seeded."""
    rng = np.random.default_rng(1)
    module.vocab_size = RNN_VOCAB
    module.Wxh = rng.standard_normal((RNN_HIDDEN, RNN_VOCAB)) * 0.01
    module.Whh = rng.standard_normal((RNN_HIDDEN, RNN_HIDDEN)) * 0.01
    module.Why = rng.standard_normal((RNN_VOCAB, RNN_HIDDEN)) * 0.01
    module.bh = np.zeros((RNN_HIDDEN, 1))
    module.by = np.zeros((RNN_VOCAB, 1))


def char_rnn_loss(loaded: dict) -> Workload:
    rng = np.random.default_rng(2)
    text = [int(ix) for ix in rng.integers(0, RNN_VOCAB, RNN_STEPS + 1)]
    inputs, targets = text[:-1], text[1:]
    hprev = np.tanh(rng.standard_normal((RNN_HIDDEN, 1)))  # a hidden state carried from a previous chunk
    return Workload("min_char_rnn.py", f"RNN loss and gradients, {RNN_STEPS} steps, hidden {RNN_HIDDEN}, "
                    f"vocabulary {RNN_VOCAB}", loaded["min_char_rnn.py"].lossFun, (inputs, targets, hprev), {},
                    no_state)


NETWORK_SIZES, MINI_BATCH, ETA = [8, 16, 16, 4], 10, 3.0


def nielsen_network(loaded: dict) -> Any:
    np.random.seed(3)  # Network.__init__ draws from numpy's global generator
    return loaded["nielsen_network.py"].Network(list(NETWORK_SIZES))


def nielsen_sgd_step(loaded: dict) -> Workload:
    net = nielsen_network(loaded)
    rng = np.random.default_rng(4)
    outputs = NETWORK_SIZES[-1]
    # (x, y) pairs as the book's mnist_loader gives them: a column of inputs, a one-hot column.
    batch = [(rng.standard_normal((NETWORK_SIZES[0], 1)), np.eye(outputs)[:, [i % outputs]])
             for i in range(MINI_BATCH)]
    return Workload("nielsen_network.py", f"SGD step (backprop per example), sizes {NETWORK_SIZES}, "
                    f"mini-batch {MINI_BATCH}", type(net).update_mini_batch, (net, batch, ETA), {},
                    lambda: (net.weights, net.biases))


def nielsen_feedforward(loaded: dict) -> Workload:
    net = nielsen_network(loaded)
    x = np.random.default_rng(5).standard_normal((NETWORK_SIZES[0], 1))
    return Workload("nielsen_network.py", f"feedforward, sizes {NETWORK_SIZES}, one input",
                    type(net).feedforward, (net, x), {}, no_state)


KALMAN_WINDOW = 10


def track(kalman_filter: Any, observation: np.ndarray, measurements: np.ndarray) -> list:
    """kalman-filter.py's example() loop without its plot: the filter's predicted position
    before each measurement, the filter updated with it."""
    predicted = []
    for z in measurements:
        predicted.append(np.dot(observation, kalman_filter.predict())[0])
        kalman_filter.update(z)
    return predicted


def kalman_track(loaded: dict) -> Workload:
    # The matrices of the file's example(): position, velocity and acceleration at 60 Hz.
    dt = 1.0 / 60
    transition = np.array([[1, dt, 0], [0, 1, dt], [0, 0, 1]])
    observation = np.array([1, 0, 0]).reshape(1, 3)
    process_noise = np.array([[0.05, 0.05, 0.0], [0.05, 0.05, 0.0], [0.0, 0.0, 0.0]])
    measurement_noise = np.array([0.5]).reshape(1, 1)
    kalman_filter = loaded["zziz_kalman_filter.py"].KalmanFilter(F=transition, H=observation, Q=process_noise,
                                                                  R=measurement_noise)
    x = np.linspace(-10, 10, KALMAN_WINDOW)
    measurements = -(x**2 + 2 * x - 2) + np.random.default_rng(6).normal(0, 2, KALMAN_WINDOW)
    return Workload("zziz_kalman_filter.py", f"Kalman filter predict and update over {KALMAN_WINDOW} measurements "
                    "(3 states)", track, (kalman_filter, observation, measurements), {},
                    lambda: (kalman_filter.x, kalman_filter.P))


WORKLOADS: dict[str, Callable[[dict], Workload]] = {
    "gpt2_forward": gpt2_forward,
    "char_rnn_loss": char_rnn_loss,
    "nielsen_sgd_step": nielsen_sgd_step,
    "nielsen_feedforward": nielsen_feedforward,
    "kalman_track": kalman_track,
}


# ------------------------------------------------------------------ the checks


def same_bits(actual: Any, expected: Any) -> bool:
    """Same types and nesting; arrays and numbers equal bit for bit (dtype, shape, bytes)."""
    if type(actual) is not type(expected):
        return False
    if isinstance(actual, (tuple, list)):
        return len(actual) == len(expected) and all(map(same_bits, actual, expected))
    if isinstance(actual, dict):
        return list(actual) == list(expected) and all(same_bits(actual[k], expected[k]) for k in actual)
    if isinstance(actual, (np.ndarray, np.generic)):
        return (actual.dtype == expected.dtype and np.shape(actual) == np.shape(expected)
                and np.asarray(actual).tobytes() == np.asarray(expected).tobytes())
    if isinstance(actual, float):
        return struct.pack("<d", actual) == struct.pack("<d", expected)
    return bool(actual == expected)


def short_place(filename: str, lineno: int) -> str:
    return f"{os.path.basename(filename)}:{lineno}"


def check(name: str, directory: Path) -> dict:
    """Translated calls against eager ones on identically seeded copies; what SOT made of them."""
    loaded = modules(directory)
    eager, translated = WORKLOADS[name](loaded), WORKLOADS[name](loaded)
    sot.reset()
    fast = sot.translate(translated.function, cost_model=False)
    differing_calls = []
    for call in range(1, CHECK_CALLS + 1):
        expected = eager.function(*eager.args, **eager.kwargs)
        actual = fast(*translated.args, **translated.kwargs)
        if not (same_bits(actual, expected) and same_bits(translated.state(), eager.state())):
            differing_calls.append(call)
    stats = sot.stats(fast)
    fresh = WORKLOADS[name](loaded)
    explained = sot.explain(fresh.function, *fresh.args, **fresh.kwargs)
    guards = sum(int(line.split("(")[1].split(")")[0]) for line in explained.splitlines()
                 if line.strip().startswith("guards ("))
    breaks = [{"reason": b.reason, "where": short_place(b.filename, b.lineno)} for b in stats.graph_breaks]
    fallbacks = [{"reason": f.reason, "where": short_place(f.filename, f.lineno)} for f in stats.fallbacks]
    return {"exact": not differing_calls, "differing_calls": differing_calls,
            "translations": stats.translations, "cache_hits": stats.cache_hits,
            "guard_failures": stats.guard_failures, "recompilations": stats.recompilations,
            "graphs": stats.graphs, "ops_captured": stats.ops_captured, "guards": guards,
            "graph_breaks": breaks, "fallbacks": fallbacks,
            "top_reasons": collections.Counter(entry["reason"] for entry in breaks + fallbacks).most_common(5),
            "whole": not breaks and not fallbacks and stats.graphs > 0, "explain": explained}


# ------------------------------------------------------------------ the calls timed


def eager_call(name: str, directory: Path) -> Callable[[], Any]:
    workload = WORKLOADS[name](modules(directory))
    return lambda: workload.function(*workload.args, **workload.kwargs)


def translated_call(name: str, directory: Path) -> Callable[[], Any]:
    workload = WORKLOADS[name](modules(directory))
    fast = sot.translate(workload.function, cost_model=False)
    return lambda: fast(*workload.args, **workload.kwargs)


def generated_call(name: str, directory: Path) -> Callable[[], Any]:
    """SOT's generated code for the call, run as a plain function (read off the frame by a
    hook chained after SOT's), past the first calls' recompilations."""
    workload = WORKLOADS[name](modules(directory))
    fast = sot.translate(workload.function, cost_model=False)
    for _ in range(CHECK_CALLS):
        fast(*workload.args, **workload.kwargs)
    original = workload.function.__code__
    seen = []

    def after(frame: Any) -> None:
        if frame.original_code is original and frame.f_code is not original:
            seen.append(frame.f_code)

    with framehook.frame_hook(after):
        fast(*workload.args, **workload.kwargs)
    if not seen:
        raise RuntimeError(f"{name}: SOT did not replace {workload.function.__qualname__}")
    generated = types.FunctionType(seen[0], workload.function.__globals__, workload.function.__name__,
                                   workload.function.__defaults__)
    # The translation owns the graphs the generated code calls: it lives as long as the call.
    return lambda: (fast, generated(*workload.args, **workload.kwargs))[1]


def timed(make_call: Callable[[], Callable[[], Any]]) -> Callable[[int], float]:
    """pyperf's time function for the call ``make_call`` returns, made in the worker."""
    made: list = []

    def run(loops: int) -> float:
        if not made:
            made.append(make_call())
        call = made[0]
        start = pyperf.perf_counter()
        for _ in range(loops):
            call()
        return pyperf.perf_counter() - start

    return run


def timed_first_calls(name: str, directory: Path) -> Callable[[int], float]:
    """pyperf's time function for first calls: each loop forgets every translation and
    times the first call of a new one."""
    made: list = []

    def run(loops: int) -> float:
        if not made:
            made.append(WORKLOADS[name](modules(directory)))
        workload = made[0]
        total = 0.0
        for _ in range(loops):
            sot.reset()
            fast = sot.translate(workload.function, cost_model=False)
            start = pyperf.perf_counter()
            fast(*workload.args, **workload.kwargs)
            total += pyperf.perf_counter() - start
        return total

    return run


def interleaved_minimum(name: str, directory: Path) -> dict[str, float]:
    """Eager and translated µs per call, timed alternately in this process, batch by batch,
    each the minimum over the batches: a cross-check of pyperf's medians, whose eager and
    translated processes meet a shared machine's load at different moments."""
    calls = {"eager": eager_call(name, directory), "translated": translated_call(name, directory)}
    for call in calls.values():
        for _ in range(CHECK_CALLS):  # past the first calls (translation, recompilations)
            call()
    loops = 1
    while True:
        start = pyperf.perf_counter()
        for _ in range(loops):
            calls["eager"]()
        if pyperf.perf_counter() - start >= INTERLEAVED_BATCH_S:
            break
        loops *= 2
    best = dict.fromkeys(calls, float("inf"))
    for _ in range(INTERLEAVED_BATCHES):
        for kind, call in calls.items():
            start = pyperf.perf_counter()
            for _ in range(loops):
                call()
            best[kind] = min(best[kind], (pyperf.perf_counter() - start) / loops * 1e6)
    return {"eager_us": best["eager"], "translated_us": best["translated"],
            "speedup": best["eager"] / best["translated"], "batches": INTERLEAVED_BATCHES, "loops": loops}


# ------------------------------------------------------------------ instructions


def count_worker(name: str, kind: str, calls: int, directory: Path) -> None:
    """Under callgrind: the warm-up calls, then ``calls`` more of workload ``name``."""
    call = (eager_call if kind == "eager" else translated_call)(name, directory)
    for _ in range(WARMUP_CALLS + calls):
        call()


def instructions_per_call(name: str, directory: Path) -> dict[str, float]:
    """Eager and translated instructions per call, counted by callgrind over FEW and MORE
    calls after the same warm-up (exact and repeatable where a shared machine's timings
    are not); one BLAS thread, as a pool's idle threads spin for varying counts."""
    from instructions import callgrind_instructions  # benches/instructions.py

    def count(kind: str, calls: int) -> int:
        argv = [os.path.abspath(__file__), "--count-worker", name, kind, str(calls), str(directory)]
        return callgrind_instructions(argv, env=("OPENBLAS_NUM_THREADS=1", "OMP_NUM_THREADS=1"))

    per_call = {kind: (count(kind, MORE_CALLS) - count(kind, FEW_CALLS)) / (MORE_CALLS - FEW_CALLS)
                for kind in ("eager", "translated")}
    per_call["ratio"] = per_call["translated"] / per_call["eager"]
    return per_call


# ------------------------------------------------------------------ the run


def heldout_dir_from_argv() -> Path:
    if "--heldout-dir" in sys.argv:
        return Path(sys.argv[sys.argv.index("--heldout-dir") + 1])
    return HELDOUT_DIR


def add_cmdline_args(cmd: list[str], args: Any) -> None:
    cmd.extend(["--workloads", args.workloads, "--heldout-dir", args.heldout_dir, "--generated", args.generated])


def main() -> int:
    if sys.argv[1:2] == ["--count-worker"]:
        name, kind, calls, directory_name = sys.argv[2:6]
        count_worker(name, kind, int(calls), Path(directory_name))
        return 0
    directory = heldout_dir_from_argv()
    problems = missing_or_changed(directory)
    if problems:
        print("SKIPPED: held-out workloads: " + "; ".join(problems) + f" (see {MANIFEST.name})")
        return 0
    runner = pyperf.Runner(add_cmdline_args=add_cmdline_args)
    runner.argparser.add_argument("--workloads", default=",".join(WORKLOADS))
    runner.argparser.add_argument("--heldout-dir", default=str(HELDOUT_DIR), help="where the held-out files are")
    runner.argparser.add_argument("--name", default=platform.python_version(), help="the interpreter's name")
    runner.argparser.add_argument("--json", help="write every figure and check here, as JSON")
    runner.argparser.add_argument("--instructions", action="store_true",
                                  help="also count instructions per call with callgrind (needs valgrind)")
    # Set by the parent for its workers: the workloads whose generated code is timed alone.
    runner.argparser.add_argument("--generated", default=None, help=argparse.SUPPRESS)
    args = runner.parse_args()
    names = args.workloads.split(",")
    unknown = sorted(set(names) - set(WORKLOADS))
    if unknown:
        raise SystemExit(f"unknown workloads {unknown} (known: {', '.join(WORKLOADS)})")
    # In the parent only: the checks (their resets would retire a worker's translations).
    checks = {} if args.worker else {name: check(name, directory) for name in names}

    medians: dict[str, float] = {}
    stdev_pct: dict[str, float] = {}

    def bench(benchmark_name: str, time_func: Callable[[int], float]) -> None:
        benchmark = runner.bench_time_func(benchmark_name, time_func)
        if benchmark is not None and not args.worker:
            medians[benchmark_name] = benchmark.median()
            values = benchmark.get_nvalue()
            stdev_pct[benchmark_name] = 100 * benchmark.stdev() / benchmark.mean() if values > 1 else 0.0

    # Generated code alone only where the translation is whole (its code calls no resume
    # function); pyperf's workers must register the parent's benchmarks in its order, so
    # the parent passes them the list.
    if not args.worker:
        args.generated = ",".join(name for name in names if checks[name]["whole"])
    generated_alone = set(filter(None, (args.generated or "").split(",")))
    for name in names:
        bench(f"{name}/eager", timed(functools.partial(eager_call, name, directory)))
        bench(f"{name}/translated", timed(functools.partial(translated_call, name, directory)))
        if name in generated_alone:
            bench(f"{name}/generated", timed(functools.partial(generated_call, name, directory)))
        bench(f"{name}/first_call", timed_first_calls(name, directory))
    if args.worker:
        return 0

    files = {entry["file"]: entry for entry in manifest()["files"]}
    figures = {}
    for name in names:
        workload = WORKLOADS[name](modules(directory))
        entry = files[workload.source]
        eager, translated = medians[f"{name}/eager"], medians[f"{name}/translated"]
        generated = medians.get(f"{name}/generated")
        figures[name] = {
            "description": workload.description,
            "source": {key: entry[key] for key in ("repo", "path", "commit", "sha256")},
            "eager_us": eager * 1e6, "translated_us": translated * 1e6, "speedup": eager / translated,
            "generated_us": None if generated is None else generated * 1e6,
            "first_call_ms": medians[f"{name}/first_call"] * 1e3,
            "target": SPEEDUP_BAR, "met": eager / translated >= SPEEDUP_BAR,
            "sot": checks[name],
            "interleaved": interleaved_minimum(name, directory),
            "instructions": instructions_per_call(name, directory) if args.instructions else None,
        }
    implementation = {"gil": "off" if sysconfig.get_config_var("Py_GIL_DISABLED") else "on",
                      "debug": hasattr(sys, "gettotalrefcount")}
    report = {"name": args.name, "python": platform.python_version(), "implementation": implementation,
              "numpy": np.__version__, "loadavg": os.getloadavg(), "workloads": figures, "stdev_pct": stdev_pct}
    for name, row in figures.items():
        sot_row = row["sot"]
        generated = "-" if row["generated_us"] is None else f"{row['generated_us']:.1f} µs"
        print(f"{name:20} eager {row['eager_us']:8.1f} µs  translated {row['translated_us']:8.1f} µs  "
              f"{row['speedup']:.2f}x ({'met' if row['met'] else 'missed'}: {SPEEDUP_BAR}x)  generated {generated}  "
              f"first call {row['first_call_ms']:.2f} ms  graphs {sot_row['graphs']} ops {sot_row['ops_captured']} "
              f"breaks {len(sot_row['graph_breaks'])} fallbacks {len(sot_row['fallbacks'])}  "
              f"{'exact' if sot_row['exact'] else 'DIFFERS from eager'}")
        interleaved = row["interleaved"]
        print(f"{'':22}interleaved minimum: eager {interleaved['eager_us']:.1f} µs, translated "
              f"{interleaved['translated_us']:.1f} µs ({interleaved['speedup']:.2f}x)")
        if row["instructions"]:
            counted = row["instructions"]
            print(f"{'':22}instructions per call: eager {counted['eager']:,.0f}, translated "
                  f"{counted['translated']:,.0f} (translated/eager {counted['ratio']:.3f})")
        for reason, count in sot_row["top_reasons"]:
            print(f"{'':22}{count} x {reason}")
    if args.json:
        with open(args.json, "w") as out:
            json.dump(report, out, indent=1)
    return 0 if all(row["sot"]["exact"] for row in figures.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
