"""framehook's translator with the paddle backend beside Paddle's own SOT, in one process.

Driven by framehook_dev.sot_paddle_bench, which runs it where paddlepaddle installs (3.10 and
3.13 in the matrix) with a release build of framehook.

    python benches/sot_paddle.py --json out.json

Paddle's SOT (``paddle.jit.sot.symbolic_translate``) runs on framehook's eval-frame functions
(``framehook.sot.paddle.install()``, which costs less per frame than Paddle's own C layer, so
Paddle's figures here are if anything better than with its own), framehook's translator as
``sot.translate(fn, backend="paddle")``; both run the same functions on the same tensors.
Measured, interleaved (each repeat times one batch of every call in turn; the figure is the
minimum over the repeats):

- ``two_ops``: ``x * 2.0 + y`` on 3-element tensors: eager, Paddle's SOT and framehook's, on a
  cache hit (the hot call); framehook's both as users get it (its cost model keeps, per
  graph, the faster of the static program and its operations called eagerly) and with every
  graph run as its static program (``PaddleBackend(cost_model=False)``);
- the workloads of benches/sot_models.py (an MLP forward over a list of blocks, an AdamW step,
  an attention block) written with paddle tensors and ``paddle.nn.functional``: eager, Paddle's
  SOT and framehook's, hot;
- first calls: a new function each time (its own code and constant, so that no cache of either
  translator holds its program), translation and static program build included; for the
  workloads, after emptying each translator's caches.

Before timing, each translated result is checked against eager and framehook's translations
are checked to be one graph per workload with no break or fallback; otherwise this exits
non-zero. The targets: hot call at most 0.5x Paddle SOT's, first call at most 0.25x, every
workload's hot call no slower than Paddle SOT's.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from typing import Any, Callable

import framehook.sot.paddle

framehook.sot.paddle.install()  # before paddle.jit.sot is imported

import numpy as np  # noqa: E402
import paddle  # noqa: E402
from paddle.jit.sot import symbolic_translate  # noqa: E402
from paddle.jit.sot.opcode_translator.executor.executor_cache import OpcodeExecutorCache  # noqa: E402

import framehook.sot as sot  # noqa: E402
from framehook.sot._paddle_backend import PaddleBackend  # noqa: E402

# Every graph as its static program, the cost model off: what the programs alone cost.
sot.register_backend("paddle-static", PaddleBackend(cost_model=False))

# Run as a script: its directory is sys.path[0].
import sot_models  # noqa: E402
from sot import batch, calibrate, two_ops  # noqa: E402
from sot_workloads import as_numpy  # noqa: E402

WORKLOADS = ["mlp", "adam", "attention"]
HOT_RATIO_BAR = 0.5
FIRST_RATIO_BAR = 0.25


def fresh_two_ops(k: int) -> Callable[..., Any]:
    """``two_ops`` as a new function with a constant of its own (no translation cache of
    either translator can hold it)."""
    namespace: dict[str, Any] = {}
    exec(compile(f"def two_ops_{k}(x, y):\n    return x * {k + 2}.0 + y\n", f"<two_ops_{k}>", "exec"), namespace)
    return namespace[f"two_ops_{k}"]


def check_same(name: str, got: Any, expected: Any) -> None:
    got, expected = as_numpy(got), as_numpy(expected)
    if isinstance(expected, dict):
        assert got.keys() == expected.keys(), name
        for key in expected:
            check_same(f"{name}[{key!r}]", got[key], expected[key])
    elif isinstance(expected, (tuple, list)):
        assert type(got) is type(expected) and len(got) == len(expected), name
        for index, (g, e) in enumerate(zip(got, expected)):
            check_same(f"{name}[{index}]", g, e)
    else:
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6, err_msg=name)


def workload(name: str) -> sot_models.Workload:
    return sot_models.workloads(paddle.to_tensor, paddle.nn.functional)[name]


def timed_call(function: Callable[..., Any], *args: Any) -> float:
    """Milliseconds of one call ``function(*args)``."""
    start = time.perf_counter()
    function(*args)
    return (time.perf_counter() - start) * 1e3


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--first-repeats", type=int, default=5)
    parser.add_argument("--min-time", type=float, default=0.02)
    parser.add_argument("--name", default=platform.python_version())
    parser.add_argument("--json")
    args = parser.parse_args()

    x, y = paddle.arange(3, dtype="float32"), paddle.ones([3])
    paddle_cache = OpcodeExecutorCache()
    calls: dict[str, Callable[[], Any]] = {}
    checks: dict[str, Any] = {}
    cases = {"two_ops": (two_ops, (x, y))}
    for name in WORKLOADS:
        made = workload(name)
        cases[name] = (made.function, made.args)
    for name, (function, _) in cases.items():
        ours = sot.translate(function, backend="paddle")
        static = sot.translate(function, backend="paddle-static")
        theirs = symbolic_translate(function)
        # Each translator's own state (Adam's step count) must not leak into the other's.
        eager_case, ours_case, static_case, theirs_case = (cases[name][1],) * 4
        if name != "two_ops":
            eager_case, ours_case, static_case, theirs_case = (workload(name).args for _ in range(4))
        for _ in range(9):  # past the cost model's trials
            expected = function(*eager_case)
            check_same(f"{name}/framehook", ours(*ours_case), expected)
            check_same(f"{name}/framehook_static", static(*static_case), expected)
            check_same(f"{name}/paddle", theirs(*theirs_case), expected)
        stats = sot.stats(ours)
        checks[name] = {"translations": stats.translations, "graphs": stats.graphs, "ops": stats.ops_captured,
                        "breaks": len(stats.graph_breaks), "fallbacks": len(stats.fallbacks)}
        if stats.graphs < 1 or stats.graph_breaks or stats.fallbacks:
            print(sot.explain(ours, *ours_case))
            raise SystemExit(f"{name}: framehook's translation is not whole: {checks[name]}")
        calls[f"{name}/eager"] = (lambda f=function, a=eager_case: f(*a))
        calls[f"{name}/paddle_sot"] = (lambda f=theirs, a=theirs_case: f(*a))
        calls[f"{name}/framehook"] = (lambda f=ours, a=ours_case: f(*a))
        calls[f"{name}/framehook_static"] = (lambda f=static, a=static_case: f(*a))

    loops = {name: calibrate(call, args.min_time) for name, call in calls.items()}
    samples: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(args.repeats):
        for name, call in calls.items():
            samples[name].append(batch(call, loops[name]) * 1e6)
    best = {name: min(values) for name, values in samples.items()}

    firsts: dict[str, list[float]] = {}
    for repeat in range(args.first_repeats):
        theirs = symbolic_translate(fresh_two_ops(2 * repeat))
        firsts.setdefault("two_ops/paddle_sot", []).append(timed_call(theirs, x, y))
        ours = sot.translate(fresh_two_ops(2 * repeat + 1), backend="paddle")
        firsts.setdefault("two_ops/framehook", []).append(timed_call(ours, x, y))
        for name in WORKLOADS:
            made = workload(name)
            paddle_cache.clear()
            firsts.setdefault(f"{name}/paddle_sot", []).append(timed_call(symbolic_translate(made.function),
                                                                           *made.args))
            made = workload(name)
            sot.reset()
            firsts.setdefault(f"{name}/framehook", []).append(
                timed_call(sot.translate(made.function, backend="paddle"), *made.args))
    first_ms = {name: statistics.median(values) for name, values in firsts.items()}

    targets = []
    for name in cases:
        hot_ratio = best[f"{name}/framehook"] / best[f"{name}/paddle_sot"]
        first_ratio = first_ms[f"{name}/framehook"] / first_ms[f"{name}/paddle_sot"]
        if name == "two_ops":
            targets.append({"target": f"two_ops: hot call at most {HOT_RATIO_BAR}x Paddle SOT's",
                            "value": hot_ratio, "met": hot_ratio <= HOT_RATIO_BAR})
            targets.append({"target": f"two_ops: first call at most {FIRST_RATIO_BAR}x Paddle SOT's",
                            "value": first_ratio, "met": first_ratio <= FIRST_RATIO_BAR})
        else:
            targets.append({"target": f"{name}: hot call no slower than Paddle SOT's", "value": hot_ratio,
                            "met": hot_ratio <= 1.0})
    report = {
        "name": args.name,
        "python": platform.python_version(),
        "paddle": paddle.__version__,
        "loadavg": os.getloadavg(),
        "hot_us": best,
        "median_us": {name: statistics.median(values) for name, values in samples.items()},
        "first_call_ms": first_ms,
        "first_call_ms_all": firsts,
        "translations": checks,
        "targets": targets,
    }
    for name in cases:
        print(f"{name:10} hot µs: eager {best[name + '/eager']:9.2f}  paddle SOT {best[name + '/paddle_sot']:9.2f}  "
              f"framehook {best[name + '/framehook']:9.2f} (programs only "
              f"{best[name + '/framehook_static']:9.2f})   first ms: paddle SOT "
              f"{first_ms[name + '/paddle_sot']:8.2f}  framehook {first_ms[name + '/framehook']:8.2f}")
    for check in targets:
        print(f"{'met ' if check['met'] else 'MISS'} {check['target']}: {check['value']:.3f}")
    if args.json:
        with open(args.json, "w") as out:
            json.dump(report, out, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
