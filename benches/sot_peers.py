"""SOT's translator beside its peers, jax.jit and numba.njit, on the workloads of
benches/sot_models.py: one pyperf run on one interpreter.

Driven by framehook_dev.sot_peers_bench, which builds framehook in release mode into a venv
of its own with the peers of benches/requirements-peers.txt.

    python benches/sot_peers.py --name 3.12 --json out.json [pyperf options, e.g. --fast]

Every benchmark runs in its own pyperf worker processes (jax and numba are imported only
by the workers that time them):

- ``WORKLOAD/eager``: the numpy workload called plainly;
- ``WORKLOAD/framehook``, ``WORKLOAD/framehook_first_call``: through ``sot.translate``, hot
  (cache hits) and the first call after ``sot.reset()``, as benches/sot_workloads.py times them;
- ``WORKLOAD/jax_dispatch``, ``WORKLOAD/jax_ready``: the same workload code on jax arrays
  (``F`` is benches/numpy_functional.py with ``np`` bound to ``jax.numpy``) under
  ``jax.jit``, hot: the time until the call returns (the device then idle again: each call
  waits for the one before outside the timed part) and the time until its result is ready
  (``block_until_ready``);
- ``WORKLOAD/jax_synchronous``: the latter with jax's CPU client computing on the calling
  thread (``jax_cpu_enable_async_dispatch`` off; on by default): no hand-off to another
  thread, which a loaded machine makes dear;
- ``WORKLOAD/jax_first_call``: a new ``jax.jit`` of a fresh function object, its first call
  until the result is ready: tracing, lowering and XLA's compilation included;
- ``dense/numba``, ``dense/numba_first_call``: the dense loop written as a ``numba.njit``
  function over tuples of weight arrays, hot and its first call (a fresh dispatcher).

The jitted function takes every jax array the workload reads (weights, inputs, optimizer
state) as one list argument, sets them into the workload's objects while jax traces the
unchanged workload code, and returns the result with the arrays the code replaced (adam's
parameters and state), which the caller passes to the next call: jax.jit needs a pure
function of arrays, the workloads read and write objects. ``DIFFERENCES`` says what else
differs per workload and peer, and why numba does not apply where it does not.

Before timing, every peer's results are checked against eager numpy over three calls
(the same nesting, shapes and dtypes; ``np.allclose`` at float32 tolerances; the largest
difference is reported), and framehook's translation as benches/sot_workloads.py checks it
(eager's results, graphs, no fallback).
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import platform
import sys
import types
from typing import Any, Callable, Optional

# The CPU build of jaxlib is the one measured; this also keeps jax from probing for others.
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import numpy as np
import pyperf

# Run as a script (pyperf's workers too): its directory is sys.path[0].
import numpy_functional
import sot_models
from sot_workloads import check_translation, eager_call, numpy_workload, timed, timed_first_calls, translated_call

WORKLOADS = ["mlp", "adam", "attention", "dense"]
NUMBA_WORKLOADS = {"dense"}
CHECKED_CALLS = 3
# Float32 results of the same arithmetic in another order (XLA fuses and reassociates;
# its tanh and exp are its own approximations).
FLOAT32_TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
# framehook's first call "in milliseconds" (issue 43), at the bar the issue sets for
# scikit-learn's first calls.
FIRST_CALL_BAR_MS = 20.0

# How every workload runs under jax.jit; DIFFERENCES adds what a workload changes beside that.
JAX_METHOD = ("the workload code unchanged on jax arrays (F: benches/numpy_functional.py with np bound to "
              "jax.numpy), its arrays (weights, inputs, state) passed in as one list and set into its objects "
              "while jax traces")
DIFFERENCES = {
    "mlp": {"jax": None,
            "numba": "not applicable: the forward is method calls on Module instances (hook dicts, a config object), "
                     "returning tuples and a dict of a tuple and a list; numba's nopython mode compiles none of that, "
                     "and object mode would run it as Python"},
    "adam": {"jax": "the step mutates its state dicts and parameter list in place, so the jitted "
                    "function returns the arrays it replaced and the caller passes them to the next step; each "
                    "parameter's step count is an int32 array (a Python int would be a constant: a new compilation "
                    "every step), so beta ** step and the bias corrections are float32 in the graph where eager "
                    "computes them in Python floats; the state is made by one step run op by op before jitting",
             "numba": "not applicable: the step reads parameter groups and per-parameter state from dicts of "
                      "mixed value types (floats, a tuple, a bool, a list, an int, arrays) and writes into them; "
                      "numba's typed dicts hold one value type"},
    "attention": {"jax": None,
                  "numba": "not applicable: Module instances and a config object, as mlp; the heads are made by "
                           "reshape with a list argument, which numba does not accept either (tuples only)"},
    "dense": {"jax": None,
              "numba": "dense_stack_numba: the same loop (x @ w + b, np.maximum(h, np.float32(0.0)), x + h) over "
                       "tuples of the layers' weights and biases instead of Dense objects and F.relu; the zero is a "
                       "float32 as numba would promote h to float64 with a Python float, where numpy keeps float32"},
}


# ------------------------------------------------------------------ results against eager


def leaves(value: Any) -> list[Any]:
    """The arrays and scalars of a result made of tuples, lists and dicts, in order."""
    if isinstance(value, (tuple, list)):
        return [leaf for item in value for leaf in leaves(item)]
    if isinstance(value, dict):
        return [leaf for key in sorted(value) for leaf in leaves(value[key])]
    return [value]


def shape_of(value: Any) -> Any:
    """A result's nesting (container types, dict keys, array shapes and dtypes), for
    comparing peers' results."""
    if isinstance(value, (tuple, list)):
        return (type(value).__name__, [shape_of(item) for item in value])
    if isinstance(value, dict):
        return ("dict", sorted(value), [shape_of(value[key]) for key in sorted(value)])
    array = np.asarray(value)
    return ("array", array.shape, array.dtype.str)


def compare(actual: Any, expected: Any) -> tuple[bool, float]:
    """Whether ``actual`` (a peer's result) has eager's nesting and values within
    FLOAT32_TOLERANCE, and the largest absolute difference."""
    if shape_of(actual) != shape_of(expected):
        return False, float("inf")
    pairs = [(np.asarray(a, dtype=np.float64), np.asarray(e, dtype=np.float64))
             for a, e in zip(leaves(actual), leaves(expected))]
    close = all(np.allclose(a, e, **FLOAT32_TOLERANCE) for a, e in pairs)
    return close, max((float(np.max(np.abs(a - e))) for a, e in pairs if a.size), default=0.0)


def check_against_eager(name: str, peer: str, calls: list[Callable[[], Any]], steps_before: int = 0) -> dict:
    """Runs eager numpy (after ``steps_before`` calls) and the peer's ``calls`` side by side,
    one call each per step; fails loudly where a result differs."""
    eager = eager_call(name)
    for _ in range(steps_before):
        eager()
    largest = 0.0
    for index, call in enumerate(calls):
        expected = eager()
        close, difference = compare(call(), expected)
        if not close:
            raise SystemExit(f"{name}: {peer}'s call {index + 1} differs from eager (largest difference "
                             f"{difference:g}, tolerance {FLOAT32_TOLERANCE})")
        largest = max(largest, difference)
    return {"calls": len(calls), "matches_eager": True, "largest_difference": largest}


# ------------------------------------------------------------------ jax.jit


@functools.cache
def jax_functional() -> types.ModuleType:
    """benches/numpy_functional.py loaded anew with ``np`` bound to ``jax.numpy``: the same
    functions on jax arrays."""
    import jax.numpy as jnp

    spec = importlib.util.spec_from_file_location("jax_functional", numpy_functional.__file__)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.np = jnp
    return module


def array_slots(root: Any) -> list[tuple[Any, Any]]:
    """Where ``root`` holds jax arrays, as (container, key) pairs: items of lists and dicts,
    attributes (in ``vars``) of the workloads' own objects, followed depth first."""
    import jax

    slots: list[tuple[Any, Any]] = []
    seen: set[int] = set()

    def walk(value: Any) -> None:
        if isinstance(value, list):
            container, items = value, list(enumerate(value))
        elif isinstance(value, dict):
            container, items = value, list(value.items())
        elif type(value).__module__ == sot_models.__name__:
            container = vars(value)
            items = list(container.items())
        else:
            return
        if id(container) in seen:
            return
        seen.add(id(container))
        for key, item in items:
            if isinstance(item, jax.Array):
                slots.append((container, key))
            else:
                walk(item)

    walk(root)
    return slots


class JaxWorkload:
    """A workload made with jax arrays, called as a pure function of the arrays it reads."""

    def __init__(self, name: str):
        import jax
        import jax.numpy as jnp

        self.jax = jax
        workload = sot_models.workloads(jnp.asarray, jax_functional())[name]
        if name == "adam":
            make_adam_state(workload)
        self.function = workload.function
        self.arguments = list(workload.args)
        self.slots = array_slots(self.arguments)
        self.arrays = [container[key] for container, key in self.slots]
        self.jitted = self.new_jit()

    def pure_function(self) -> Callable[[list], tuple[Any, dict[int, Any]]]:
        """A new function object (so a new jax.jit of it traces and compiles anew): sets
        ``arrays`` into the workload's objects, runs the workload, and returns its result
        with the arrays it replaced, by slot; the objects keep their own arrays."""
        function, arguments, slots = self.function, self.arguments, self.slots

        def pure(arrays: list) -> tuple[Any, dict[int, Any]]:
            kept = [container[key] for container, key in slots]
            for (container, key), array in zip(slots, arrays):
                container[key] = array
            try:
                result = function(*arguments)
                replaced = {index: container[key] for index, (container, key) in enumerate(slots)
                            if container[key] is not arrays[index]}
            finally:
                for (container, key), array in zip(slots, kept):
                    container[key] = array
            return result, replaced

        return pure

    def new_jit(self) -> Callable[[list], tuple[Any, dict[int, Any]]]:
        return self.jax.jit(self.pure_function())

    def call(self, jitted: Callable[[list], tuple[Any, dict[int, Any]]]) -> Any:
        """Calls ``jitted`` on the arrays, keeps the ones it replaced for the next call,
        returns the workload's result (not waited for)."""
        result, replaced = jitted(self.arrays)
        for index, array in replaced.items():
            self.arrays[index] = array
        return result

    def hot_call(self) -> Any:
        return self.call(self.jitted)


def make_adam_state(workload: sot_models.Workload) -> None:
    """One step of the optimizer run op by op, making its state; then each step count an
    int32 array, so that the jitted step traces it as an input rather than a constant."""
    import jax.numpy as jnp

    optimizer, grads = workload.args
    optimizer.step(grads)
    for state in optimizer.state:
        state["step"] = jnp.asarray(state["step"], dtype=jnp.int32)


def jax_checks(name: str) -> dict:
    workload = JaxWorkload(name)
    # adam's first step ran op by op (make_adam_state): eager takes that step first too.
    steps_before = 1 if name == "adam" else 0
    calls = [functools.partial(np_wait, workload.hot_call)] * CHECKED_CALLS
    return check_against_eager(name, "jax.jit", calls, steps_before)


def np_wait(call: Callable[[], Any]) -> Any:
    """``call``'s result with its jax arrays as numpy arrays (waited for)."""
    import jax

    return jax.tree.map(np.asarray, call())


def timed_jax_dispatch(name: str) -> Callable[[int], float]:
    """pyperf's time function for the jitted call's return: each call's result is waited for
    after the clock is read, so every call starts with the device idle."""
    made: list[JaxWorkload] = []

    def run(loops: int) -> float:
        if not made:
            made.append(JaxWorkload(name))
        workload, block = made[0], made[0].jax.block_until_ready
        block(workload.hot_call())  # compiled before timing
        total = 0.0
        for _ in range(loops):
            start = pyperf.perf_counter()
            result = workload.hot_call()
            total += pyperf.perf_counter() - start
            block(result)
        return total

    return run


def jax_ready_call(name: str) -> Callable[[], Any]:
    workload = JaxWorkload(name)
    block = workload.jax.block_until_ready
    block(workload.hot_call())  # compiled before timing
    return lambda: block(workload.hot_call())


def jax_synchronous_ready_call(name: str) -> Callable[[], Any]:
    """jax_ready_call with jax's CPU client running each computation on the calling thread
    (``jax_cpu_enable_async_dispatch`` off, set before this worker's client is made): what
    jax's hot call costs without handing the computation to another thread."""
    import jax

    jax.config.update("jax_cpu_enable_async_dispatch", False)
    return jax_ready_call(name)


def timed_jax_first_calls(name: str) -> Callable[[int], float]:
    """pyperf's time function for the first call of a new jax.jit of a fresh function
    object, until its result is ready."""
    made: list[JaxWorkload] = []

    def run(loops: int) -> float:
        if not made:
            made.append(JaxWorkload(name))
        workload, block = made[0], made[0].jax.block_until_ready
        total = 0.0
        for _ in range(loops):
            jitted = workload.new_jit()
            start = pyperf.perf_counter()
            block(workload.call(jitted))
            total += pyperf.perf_counter() - start
        return total

    return run


# ------------------------------------------------------------------ numba.njit


def dense_stack_numba(weights, biases, x):
    """sot_models.dense_stack for numba: the layers as tuples of arrays, F.relu written out."""
    for index in range(len(weights)):
        h = x @ weights[index] + biases[index]
        # numba types 0.0 as float64 and promotes h with it (numpy keeps float32): the loop's
        # x would change type.
        h = np.maximum(h, np.float32(0.0))
        x = x + h
    return x


def numba_dense() -> tuple[Callable[[], Callable[..., Any]], tuple]:
    """A maker of new numba dispatchers of dense_stack_numba (each compiles on its first
    call), and the dense workload's arguments for it."""
    import numba

    layers, x, _ = numpy_workload("dense").args
    arguments = (tuple(layer.w for layer in layers), tuple(layer.b for layer in layers), x)

    def new_dispatcher() -> Callable[..., Any]:
        fresh = types.FunctionType(dense_stack_numba.__code__, dense_stack_numba.__globals__)
        return numba.njit(fresh)

    return new_dispatcher, arguments


def numba_checks() -> dict:
    new_dispatcher, arguments = numba_dense()
    compiled = new_dispatcher()
    return check_against_eager("dense", "numba.njit", [lambda: compiled(*arguments)] * CHECKED_CALLS)


def numba_call() -> Callable[[], Any]:
    new_dispatcher, arguments = numba_dense()
    compiled = new_dispatcher()
    compiled(*arguments)  # compiled before timing
    return lambda: compiled(*arguments)


def timed_numba_first_calls() -> Callable[[int], float]:
    made: list[tuple] = []

    def run(loops: int) -> float:
        if not made:
            made.append(numba_dense())
        new_dispatcher, arguments = made[0]
        total = 0.0
        for _ in range(loops):
            compiled = new_dispatcher()
            start = pyperf.perf_counter()
            compiled(*arguments)
            total += pyperf.perf_counter() - start
        return total

    return run


# ------------------------------------------------------------------ the run


def versions() -> dict[str, str]:
    import jax
    import jaxlib
    import llvmlite
    import numba

    return {"python": platform.python_version(), "numpy": np.__version__, "jax": jax.__version__,
            "jaxlib": jaxlib.__version__, "numba": numba.__version__, "llvmlite": llvmlite.__version__,
            "pyperf": pyperf.__version__}


def ratio(peer: Optional[float], ours: float) -> Optional[float]:
    return None if peer is None else peer / ours


def figures_of(name: str, medians: dict[str, float]) -> dict:
    """One workload's times (µs hot, ms first calls) and the peers' over framehook's."""
    def us(benchmark: str) -> Optional[float]:
        value = medians.get(f"{name}/{benchmark}")
        return None if value is None else value * 1e6

    def ms(benchmark: str) -> Optional[float]:
        value = us(benchmark)
        return None if value is None else value / 1e3

    row = {"description": numpy_workload(name).description, "eager_us": us("eager"),
           "framehook_us": us("framehook"), "framehook_first_call_ms": ms("framehook_first_call"),
           "jax_dispatch_us": us("jax_dispatch"), "jax_ready_us": us("jax_ready"),
           "jax_synchronous_us": us("jax_synchronous"),
           "jax_first_call_ms": ms("jax_first_call"), "numba_us": us("numba"),
           "numba_first_call_ms": ms("numba_first_call"), "differences": DIFFERENCES[name]}
    ours, ours_first = row["framehook_us"], row["framehook_first_call_ms"]
    row["ratios"] = {"eager": ratio(row["eager_us"], ours), "jax_dispatch": ratio(row["jax_dispatch_us"], ours),
                     "jax_ready": ratio(row["jax_ready_us"], ours),
                     "jax_synchronous": ratio(row["jax_synchronous_us"], ours), "numba": ratio(row["numba_us"], ours),
                     "jax_first_call": ratio(row["jax_first_call_ms"], ours_first),
                     "numba_first_call": ratio(row["numba_first_call_ms"], ours_first)}
    row["aim"] = {"faster_than_jax_ready": ours < row["jax_ready_us"],
                  "first_call_in_milliseconds": ours_first <= FIRST_CALL_BAR_MS}
    row["aim"]["met"] = all(row["aim"].values())
    return row


def add_cmdline_args(cmd: list[str], args: Any) -> None:
    cmd.extend(["--workloads", args.workloads])


def main() -> int:
    runner = pyperf.Runner(add_cmdline_args=add_cmdline_args)
    runner.argparser.add_argument("--workloads", default=",".join(WORKLOADS))
    runner.argparser.add_argument("--name", default=platform.python_version(), help="the interpreter's name")
    runner.argparser.add_argument("--json", help="write every figure and check here, as JSON")
    args = runner.parse_args()
    names = args.workloads.split(",")
    load_before = os.getloadavg()
    # In the parent only: nothing is timed unless every peer gives eager's results.
    checks = {} if args.worker else {
        name: {"framehook": check_translation(name), "jax": jax_checks(name),
               "numba": numba_checks() if name in NUMBA_WORKLOADS else None} for name in names}

    medians: dict[str, float] = {}
    stdev_pct: dict[str, float] = {}

    def bench(benchmark_name: str, time_func: Callable[[int], float]) -> None:
        benchmark = runner.bench_time_func(benchmark_name, time_func)
        if not args.worker:
            medians[benchmark_name] = benchmark.median()
            stdev_pct[benchmark_name] = 100 * benchmark.stdev() / benchmark.mean()

    for name in names:
        bench(f"{name}/eager", timed(functools.partial(eager_call, name)))
        bench(f"{name}/framehook", timed(functools.partial(translated_call, name)))
        bench(f"{name}/framehook_first_call", timed_first_calls(name))
        bench(f"{name}/jax_dispatch", timed_jax_dispatch(name))
        bench(f"{name}/jax_ready", timed(functools.partial(jax_ready_call, name)))
        bench(f"{name}/jax_synchronous", timed(functools.partial(jax_synchronous_ready_call, name)))
        bench(f"{name}/jax_first_call", timed_jax_first_calls(name))
        if name in NUMBA_WORKLOADS:
            bench(f"{name}/numba", timed(numba_call))
            bench(f"{name}/numba_first_call", timed_numba_first_calls())
    if args.worker:
        return 0

    figures = {name: figures_of(name, medians) for name in names}
    for name in names:
        figures[name]["checks"] = checks[name]
    report = {"name": args.name, "versions": versions(), "loadavg_before": load_before,
              "loadavg_after": os.getloadavg(), "cpus": os.cpu_count(), "machine": platform.machine(),
              "tolerance": FLOAT32_TOLERANCE, "jax_method": JAX_METHOD, "first_call_bar_ms": FIRST_CALL_BAR_MS,
              "workloads": figures, "stdev_pct": stdev_pct}
    for name, row in figures.items():
        numba = "" if row["numba_us"] is None else (f"  numba {row['numba_us']:.2f} µs "
                                                    f"(first {row['numba_first_call_ms']:.1f} ms)")
        print(f"{name:10} eager {row['eager_us']:7.2f} µs  framehook {row['framehook_us']:7.2f} µs "
              f"(first {row['framehook_first_call_ms']:.2f} ms)  jax.jit {row['jax_dispatch_us']:7.2f} µs to dispatch, "
              f"{row['jax_ready_us']:7.2f} µs ready (first {row['jax_first_call_ms']:.1f} ms){numba}  "
              f"aim {'met' if row['aim']['met'] else 'MISSED'}")
    if args.json:
        with open(args.json, "w") as out:
            json.dump(report, out, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
