"""SOT's translator (numpy backend) beside eager Python, side by side in one process.

Driven by framehook_dev.sot_bench, which runs it on every interpreter with a release build.

    python benches/sot.py                    # the table on stdout
    python benches/sot.py --json out.json    # and every figure as JSON

Measured, interleaved (each repeat times one batch of every measurement in turn; the figure
is the minimum over the repeats):

- ``eager``: ``two_ops(x, y)`` (two array operations) called plainly;
- ``hot``: the same through ``sot.translate`` (a cache hit: guards, generated code, graph);
- ``generated``: SOT's generated code for it, called as a plain function (no hook): the
  translated call minus what deciding to run it costs;
- ``guards4`` / ``guards0``: a hit of ``four(x, y, a, b)`` (two arrays, two scalars: four
  guards) and of ``none()`` (no guard), each less its generated code called plainly. Their
  difference is the cost of the four guards;
- ``first``: the first call of a new ``sot.translate(two_ops)`` after ``sot.reset()``:
  translation (symbolic execution, graph compilation by the backend, code generation)
  included. Measured after the others, as a reset retires their translations.

The generated code is read off the frame by a Python hook chained after SOT's (hooks compose:
a later hook sees the code an earlier one returned), so nothing here reaches into framehook.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import sysconfig
import time
import types

import numpy as np

import framehook
import framehook.sot as sot


def two_ops(x, y):
    return x * 2.0 + y


def four(x, y, a, b):
    return x * a + y * b


def none():
    return 1


def generated_code_of(fast, original, args):
    """The code SOT runs for ``original`` (seen by a hook after SOT's)."""
    seen = []

    def after(frame):
        if frame.original_code is original.__code__ and frame.f_code is not original.__code__:
            seen.append(frame.f_code)

    with framehook.frame_hook(after):
        fast(*args)
    if not seen:
        raise RuntimeError(f"SOT did not replace {original.__name__}")
    return types.FunctionType(seen[0], original.__globals__, original.__name__)


def batch(call, loops):
    start = time.perf_counter()
    for _ in range(loops):
        call()
    return (time.perf_counter() - start) / loops


def calibrate(call, min_time):
    loops = 1
    while batch(call, loops) * loops < min_time:
        loops *= 2
    return loops


def first_call():
    """One first call of a new translation: the translation is timed with the call."""
    sot.reset()
    fast = sot.translate(two_ops)
    x, y = np.arange(3.0), np.ones(3)
    start = time.perf_counter()
    fast(x, y)
    elapsed = time.perf_counter() - start
    stats = sot.stats(fast)
    assert stats.translations == 1 and stats.graphs == 1, stats
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=41)
    parser.add_argument("--min-time", type=float, default=0.01)
    parser.add_argument("--name", default=platform.python_version())
    parser.add_argument("--json")
    args = parser.parse_args()

    x, y = np.arange(3.0), np.ones(3)
    fast_two = sot.translate(two_ops, cost_model=False)
    fast_four = sot.translate(four, cost_model=False)
    fast_none = sot.translate(none, cost_model=False)
    four_args = (x, y, 2.0, 3)
    gen_two = generated_code_of(fast_two, two_ops, (x, y))
    gen_four = generated_code_of(fast_four, four, four_args)
    gen_none = generated_code_of(fast_none, none, ())
    np.testing.assert_array_equal(fast_two(x, y), two_ops(x, y))
    np.testing.assert_array_equal(gen_two(x, y), two_ops(x, y))
    assert sot.stats(fast_four).graphs == 1 and sot.stats(fast_none).translations == 1

    calls = {
        "eager": lambda: two_ops(x, y),
        "hot": lambda: fast_two(x, y),
        "generated": lambda: gen_two(x, y),
        "four_hot": lambda: fast_four(*four_args),
        "four_generated": lambda: gen_four(*four_args),
        "none_hot": lambda: fast_none(),
        "none_generated": lambda: gen_none(),
    }
    loops = {name: calibrate(call, args.min_time) for name, call in calls.items()}
    samples = {name: [] for name in calls}
    for _ in range(args.repeats):
        for name, call in calls.items():
            samples[name].append(batch(call, loops[name]) * 1e6)
    # Last: each first call starts with sot.reset(), which retires the translations above.
    firsts = [first_call() * 1e3 for _ in range(args.repeats)]
    best = {name: min(values) for name, values in samples.items()}
    median = {name: statistics.median(values) for name, values in samples.items()}
    hit_cost_four = best["four_hot"] - best["four_generated"]
    hit_cost_none = best["none_hot"] - best["none_generated"]
    figures = {
        "first_call_ms": min(firsts),
        "first_call_median_ms": statistics.median(firsts),
        "eager_us": best["eager"],
        "hot_us": best["hot"],
        "hot_over_eager_us": best["hot"] - best["eager"],
        "generated_us": best["generated"],
        "guards4_us": hit_cost_four - hit_cost_none,
        "hit_cost_four_guards_us": hit_cost_four,
        "hit_cost_no_guard_us": hit_cost_none,
    }
    report = {
        "name": args.name,
        "python": platform.python_version(),
        "implementation": {
            "gil": "off" if sysconfig.get_config_var("Py_GIL_DISABLED") else "on",
            "debug": hasattr(sys, "gettotalrefcount"),
        },
        "numpy": np.__version__,
        "loadavg": os.getloadavg(),
        "figures": figures,
        "min_us": best,
        "median_us": median,
        "targets": [
            {"target": "first call, translation included, at most 2 ms", "value": figures["first_call_ms"],
             "met": figures["first_call_ms"] <= 2.0},
            {"target": "guards of two arrays and two scalars on a hit, at most 0.5 µs",
             "value": figures["guards4_us"], "met": figures["guards4_us"] <= 0.5},
            {"target": "hot call at most 2 µs slower than eager", "value": figures["hot_over_eager_us"],
             "met": figures["hot_over_eager_us"] <= 2.0},
        ],
    }
    for key, value in figures.items():
        print(f"{key:28} {value:9.3f}")
    for check in report["targets"]:
        print(f"{'met ' if check['met'] else 'MISS'} {check['target']}: {check['value']:.3f}")
    if args.json:
        with open(args.json, "w") as out:
            json.dump(report, out, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
