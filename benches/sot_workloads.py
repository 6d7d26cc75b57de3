"""SOT's translator beside eager Python on Python-heavy array workloads, one pyperf run.

Driven by framehook_dev.sot_workloads_bench, which runs it on every interpreter with a
release build; the workloads are benches/sot_models.py's (a model forward looping over its
blocks, an Adam step, an attention block: numpy arrays of 8x16 and so).

    python benches/sot_workloads.py --name 3.13 --json out.json [pyperf options, e.g. --fast]

Every benchmark runs in its own pyperf worker processes:

- ``WORKLOAD/eager``: the workload's function called plainly;
- ``WORKLOAD/translated``: the same through ``sot.translate`` (after the first calls: hits of
  the cache, i.e. guards, generated code, graph);
- ``WORKLOAD/generated``: SOT's generated code for it called as a plain function (no hook, no
  guards), read off the frame by a hook chained after SOT's: what the graph and the code
  around it cost alone;
- ``WORKLOAD/first_call``: ``sot.reset()``, then the first call of a new translation: symbolic
  execution, graph compilation and code generation included;
- ``two_ops/eager``, ``two_ops/translated``: benches/sot.py's function of two array
  operations, for the bar on the hot call's cost over eager.

Before any timing, the translations are checked: each workload's results through
``sot.translate`` equal eager ones over three calls (``np.allclose``, same structure), with
at least one graph, captured operations and no fallback; otherwise this exits non-zero with
``sot.explain``'s account. Where paddle is importable, a child process then times Paddle's SOT
(``paddle.jit.sot.symbolic_translate`` on framehook) on its first call of the same workloads
written with paddle tensors. ``--json`` gets every figure, the checks' counters, each
workload's ``sot.explain`` text, and the targets met or missed.
"""

from __future__ import annotations

import functools
import json
import os
import platform
import statistics
import subprocess
import sys
import sysconfig
import time
from typing import Any, Callable

import numpy as np
import pyperf

import framehook.sot as sot

# Run as a script (pyperf's workers too): its directory is sys.path[0].
import numpy_functional
import sot_models
from sot import generated_code_of, two_ops

WORKLOADS = ["mlp", "adam", "attention", "dense"]
SPEEDUP_BAR = 1.5
# The dense layers' graph is matrix products and elementwise operations alone: what its
# execution costs beside numpy's one call per operation is the whole gain (issue 43).
SPEEDUP_BARS = {"dense": 2.0}
HOT_OVER_EAGER_BAR_US = 2.0
PADDLE_REPEATS = 5


def numpy_workload(name: str) -> sot_models.Workload:
    """A fresh instance (its own model, optimizer state) of the numpy workload ``name``."""
    return sot_models.workloads(np.asarray, numpy_functional)[name]


def same_results(actual: Any, expected: Any) -> bool:
    """Same nesting of tuples, lists and dicts; arrays allclose; anything else equal."""
    if type(actual) is not type(expected):
        return False
    if isinstance(actual, (tuple, list)):
        return len(actual) == len(expected) and all(map(same_results, actual, expected))
    if isinstance(actual, dict):
        return list(actual) == list(expected) and all(same_results(actual[k], expected[k]) for k in actual)
    if isinstance(actual, np.ndarray):
        return actual.shape == expected.shape and bool(np.allclose(actual, expected))
    return bool(actual == expected)


def check_translation(name: str) -> dict:
    """Fails loudly unless SOT really translates workload ``name``: results equal to eager
    over three calls, graphs with operations, no fallback. Returns its counters and explain."""
    eager, translated = numpy_workload(name), numpy_workload(name)
    sot.reset()
    fast = sot.translate(translated.function, cost_model=False)
    for call in range(3):
        expected = eager.function(*eager.args)
        if not same_results(fast(*translated.args), expected):
            raise SystemExit(f"{name}: call {call + 1} through sot.translate differs from eager\n"
                             + sot.explain(eager.function, *numpy_workload(name).args))
    stats = sot.stats(fast)
    explained = sot.explain(translated.function, *numpy_workload(name).args)
    if stats.graphs < 1 or stats.ops_captured < 1 or stats.fallbacks:
        raise SystemExit(f"{name}: not translated (graphs={stats.graphs}, ops={stats.ops_captured}, "
                         f"fallbacks={stats.fallbacks})\n{explained}")
    guards = sum(int(line.split("(")[1].split(")")[0]) for line in explained.splitlines()
                 if line.strip().startswith("guards ("))
    return {"translations": stats.translations, "cache_hits": stats.cache_hits,
            "guard_failures": stats.guard_failures, "recompilations": stats.recompilations,
            "graphs": stats.graphs, "ops_captured": stats.ops_captured, "guards": guards,
            "graph_breaks": [list(b) for b in stats.graph_breaks], "explain": explained}


# ------------------------------------------------------------------ the calls timed


def eager_call(name: str) -> Callable[[], Any]:
    workload = numpy_workload(name)
    return lambda: workload.function(*workload.args)


def translated_call(name: str) -> Callable[[], Any]:
    workload = numpy_workload(name)
    fast = sot.translate(workload.function, cost_model=False)
    return lambda: fast(*workload.args)


def generated_call(name: str) -> Callable[[], Any]:
    workload = numpy_workload(name)
    workload.function(*workload.args)  # past what only a first call does (Adam's state made)
    # The translation owns the entry (and graph) the generated code calls: it lives as long
    # as the timed call.
    fast = sot.translate(workload.function, cost_model=False)
    # Past the recompilations of the first calls too (numbers seen to change become
    # dynamic): the code of the entry every later call hits.
    for _ in range(3):
        fast(*workload.args)
    generated = generated_code_of(fast, workload.function, workload.args)
    return lambda: (fast, generated(*workload.args))[1]


def two_ops_eager() -> Callable[[], Any]:
    x, y = np.arange(3.0), np.ones(3)
    return lambda: two_ops(x, y)


def two_ops_translated() -> Callable[[], Any]:
    x, y = np.arange(3.0), np.ones(3)
    fast = sot.translate(two_ops, cost_model=False)
    return lambda: fast(x, y)


def timed(make_call: Callable[[], Callable[[], Any]]) -> Callable[[int], float]:
    """pyperf's time function for the call ``make_call`` returns, made in the worker."""
    made = []

    def run(loops: int) -> float:
        if not made:
            made.append(make_call())
        call = made[0]
        start = pyperf.perf_counter()
        for _ in range(loops):
            call()
        return pyperf.perf_counter() - start

    return run


def timed_first_calls(name: str) -> Callable[[int], float]:
    """pyperf's time function for first calls: each loop forgets every translation and
    times the first call of a new one."""
    workload = numpy_workload(name)

    def run(loops: int) -> float:
        total = 0.0
        for _ in range(loops):
            sot.reset()
            fast = sot.translate(workload.function, cost_model=False)
            start = pyperf.perf_counter()
            fast(*workload.args)
            total += pyperf.perf_counter() - start
        return total

    return run


# ------------------------------------------------------------------ Paddle's SOT


def paddle_first_calls(names: list[str]) -> dict:
    """Paddle's SOT on framehook, first call of each workload written with paddle tensors
    (median of PADDLE_REPEATS, each after emptying its translation cache); this process
    imports paddle, so it runs apart from the pyperf run."""
    import framehook.sot.paddle

    framehook.sot.paddle.install()  # before paddle.jit.sot is imported
    import paddle
    from paddle.jit.sot import symbolic_translate
    from paddle.jit.sot.opcode_translator.executor.executor_cache import OpcodeExecutorCache

    def paddle_workload(name: str) -> sot_models.Workload:
        return sot_models.workloads(paddle.to_tensor, paddle.nn.functional)[name]

    cache = OpcodeExecutorCache()
    # Paddle's one-time set-up (imports, its executor) is not part of a translation.
    symbolic_translate(two_ops)(paddle.ones([3]), paddle.ones([3]))
    results: dict[str, Any] = {"paddle": paddle.__version__}
    for name in names:
        workload = paddle_workload(name)
        times = []
        for repeat in range(PADDLE_REPEATS):
            cache.clear()
            fast = symbolic_translate(workload.function)
            start = time.perf_counter()
            result = fast(*workload.args)
            times.append((time.perf_counter() - start) * 1e3)
            if repeat == 0:
                first_result = as_numpy(result)
                translations = cache.translate_count
        eager = paddle_workload(name)
        results[name] = {"first_call_ms": statistics.median(times), "first_call_ms_all": times,
                         "translations": translations,
                         "matches_eager": same_results(first_result, as_numpy(eager.function(*eager.args)))}
    return results


def as_numpy(value: Any) -> Any:
    """``value`` with its paddle tensors as numpy arrays, nesting kept."""
    if isinstance(value, (tuple, list)):
        return type(value)(as_numpy(v) for v in value)
    if isinstance(value, dict):
        return {key: as_numpy(v) for key, v in value.items()}
    return value.numpy() if hasattr(value, "numpy") else value


def paddle_report(names: list[str]) -> dict | None:
    import importlib.util

    if importlib.util.find_spec("paddle") is None:
        return None
    env = dict(os.environ, SOT_LOG_LEVEL="0")
    done = subprocess.run([sys.executable, __file__, "--paddle-first-call", "--workloads", ",".join(names)],
                          capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise SystemExit(f"Paddle's SOT first calls failed:\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


# ------------------------------------------------------------------ the run


def targets(release: bool, figures: dict, two_ops_figures: dict) -> list[dict]:
    """The bars: each workload translated at least SPEEDUP_BAR times faster than
    eager (SPEEDUP_BARS where a workload has its own; judged on release builds), the 2-op
    hot call at most 2 µs over eager."""
    checks = []
    if release:
        for name, row in figures.items():
            bar = SPEEDUP_BARS.get(name, SPEEDUP_BAR)
            checks.append({"workload": name, "target": f"{name}: translated at least {bar}x faster than eager",
                           "value": round(row["speedup"], 3), "met": row["speedup"] >= bar})
    over = two_ops_figures["hot_over_eager_us"]
    checks.append({"workload": "two_ops", "target": f"2-op hot call at most {HOT_OVER_EAGER_BAR_US:g} µs over eager",
                   "value": round(over, 3), "met": over <= HOT_OVER_EAGER_BAR_US})
    return checks


def add_cmdline_args(cmd: list[str], args: Any) -> None:
    cmd.extend(["--workloads", args.workloads])


def main() -> int:
    if "--paddle-first-call" in sys.argv:
        print(json.dumps(paddle_first_calls(sys.argv[sys.argv.index("--workloads") + 1].split(","))))
        return 0
    runner = pyperf.Runner(add_cmdline_args=add_cmdline_args)
    runner.argparser.add_argument("--workloads", default=",".join(WORKLOADS))
    runner.argparser.add_argument("--name", default=platform.python_version(), help="the interpreter's name")
    runner.argparser.add_argument("--json", help="write every figure, check and target here, as JSON")
    args = runner.parse_args()
    names = args.workloads.split(",")
    # In the parent only: nothing is timed unless every translation is real.
    checks = {} if args.worker else {name: check_translation(name) for name in names}

    medians: dict[str, float] = {}
    stdev_pct: dict[str, float] = {}

    def bench(benchmark_name: str, time_func: Callable[[int], float]) -> None:
        benchmark = runner.bench_time_func(benchmark_name, time_func)
        if not args.worker:
            medians[benchmark_name] = benchmark.median()
            stdev_pct[benchmark_name] = 100 * benchmark.stdev() / benchmark.mean()

    for name in names:
        bench(f"{name}/eager", timed(functools.partial(eager_call, name)))
        bench(f"{name}/translated", timed(functools.partial(translated_call, name)))
        bench(f"{name}/generated", timed(functools.partial(generated_call, name)))
        bench(f"{name}/first_call", timed_first_calls(name))
    bench("two_ops/eager", timed(two_ops_eager))
    bench("two_ops/translated", timed(two_ops_translated))
    if args.worker:
        return 0

    paddle = paddle_report(names)
    figures = {}
    for name in names:
        eager, translated = medians[f"{name}/eager"], medians[f"{name}/translated"]
        figures[name] = {
            "description": numpy_workload(name).description,
            "eager_us": eager * 1e6, "translated_us": translated * 1e6,
            "generated_us": medians[f"{name}/generated"] * 1e6, "speedup": eager / translated,
            "first_call_ms": medians[f"{name}/first_call"] * 1e3,
            "paddle_first_call_ms": paddle[name]["first_call_ms"] if paddle else None,
            "sot": checks[name],
        }
    two_ops_figures = {"eager_us": medians["two_ops/eager"] * 1e6, "translated_us": medians["two_ops/translated"] * 1e6,
                       "hot_over_eager_us": (medians["two_ops/translated"] - medians["two_ops/eager"]) * 1e6}
    implementation = {"gil": "off" if sysconfig.get_config_var("Py_GIL_DISABLED") else "on",
                      "debug": hasattr(sys, "gettotalrefcount")}
    release = implementation["gil"] == "on" and not implementation["debug"]
    report = {
        "name": args.name, "python": platform.python_version(), "implementation": implementation,
        "numpy": np.__version__, "loadavg": os.getloadavg(), "workloads": figures, "two_ops": two_ops_figures,
        "paddle": paddle, "stdev_pct": stdev_pct, "targets": targets(release, figures, two_ops_figures),
    }
    for name, row in figures.items():
        paddle_ms = row["paddle_first_call_ms"]
        beside_paddle = "" if paddle_ms is None else f", Paddle's SOT {paddle_ms:.1f} ms"
        print(f"{name:10} eager {row['eager_us']:8.2f} µs  translated {row['translated_us']:8.2f} µs  "
              f"({row['speedup']:.2f}x; generated code alone {row['generated_us']:.2f} µs)  "
              f"first call {row['first_call_ms']:.2f} ms{beside_paddle}")
    print(f"two_ops    eager {two_ops_figures['eager_us']:8.2f} µs  "
          f"translated {two_ops_figures['translated_us']:8.2f} µs  (+{two_ops_figures['hot_over_eager_us']:.2f} µs)")
    for check in report["targets"]:
        print(f"{'met ' if check['met'] else 'MISS'} {check['target']}: {check['value']}")
    if args.json:
        with open(args.json, "w") as out:
            json.dump(report, out, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
