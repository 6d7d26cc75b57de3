"""scikit-learn's 1-row inference through SOT's translator beside eager, one process.

Driven by framehook_dev.sot_sklearn_bench, which runs it with a release build in a venv with
scikit-learn as the suites' manifest pins it:

    python benches/sot_sklearn.py --name 3.12 --json out.json [--batches 41 --batch-ms 2]

The estimators and pipelines are framehook_dev.sot_sklearn's (fitted on fixed seeded data);
each of ``predict``, ``predict_proba`` and ``transform`` it has is called on one row, with
scikit-learn traced (``trace_modules=("sklearn",)``), three ways:

- ``eager``: the bound method, plainly;
- ``translated``: ``sot.translate(..., cost_model=False)``: the translation's own speed;
- ``judged``: ``sot.translate(...)`` as users get it, its cost model on: after its trials,
  it runs whichever of the translation and the original was faster. Timed against eager in
  a second round, after the translated function is gone: alone, as a user has it.

Per call: the first call's time (after ``sot.reset()``: the translation of every function
the call reaches, scikit-learn's included; the median of ``FIRST_CALLS`` such first calls, a
single one moving by several milliseconds with what else the machine runs), the process's
first call (``PROCESS_FIRSTS`` fresh processes each, after all calls are measured: the call
made eagerly once, then translated: its first call also reads every code it reaches for the
first time, as a user's first translation does; the median), the three hot
times (timed alternately, batch by batch, each the minimum per call over the batches: what
a loaded machine's pauses leave out), whether the results equal eager's bit for bit (three
calls each, and each first call), and the translation's counters: translations, graphs,
operations, guards, breaks (with the most frequent reasons) and what the cost model chose.

With ``--instructions``, the calls are counted instead of timed, where timings on a shared
machine cannot tell a few percent apart: this script runs itself under callgrind
(benches/callgrind_client.py), and counts, per estimator and method, the first translated
call after ``sot.reset()`` (the translation of everything it reaches) and the instructions
per call of eager and translated calls (``COUNTED_CALLS`` each, after ``SETTLE_CALLS``).
"""

from __future__ import annotations

import argparse
import collections
import gc
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import Any, Callable

# The estimators and the exact comparison are the scikit-learn tool's (one definition).
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))

# Run as a script: its directory is sys.path[0], so its neighbours import.
from callgrind_client import Callgrind, run_worker  # noqa: E402
from framehook_dev.sot_sklearn import estimators, same  # noqa: E402

METHODS = ("predict", "predict_proba", "transform")
TRACE = ("sklearn",)
# Calls before timing: past the first (translation), any recompilation and the cost
# model's trials (2 warm calls, 5 timed each way).
SETTLE_CALLS = 20
CHECK_CALLS = 3
# First calls timed per estimator and method, each after ``sot.reset()`` (their median).
FIRST_CALLS = 5
# Fresh processes per estimator and method whose first translated call is timed.
PROCESS_FIRSTS = 3
COUNTED_CALLS = 20


def loops_for(call: Callable[[], Any], batch_s: float) -> int:
    loops = 1
    while True:
        start = time.perf_counter()
        for _ in range(loops):
            call()
        if time.perf_counter() - start >= batch_s:
            return loops
        loops *= 2


def interleaved_minimum(calls: dict[str, Callable[[], Any]], batches: int, batch_s: float) -> dict[str, float]:
    """µs per call of each, timed alternately batch by batch, the minimum over the batches."""
    loops = loops_for(calls["eager"], batch_s)
    best = dict.fromkeys(calls, math.inf)
    for _ in range(batches):
        for kind, call in calls.items():
            start = time.perf_counter()
            for _ in range(loops):
                call()
            best[kind] = min(best[kind], (time.perf_counter() - start) / loops * 1e6)
    return best


def first_line(text: str) -> str:
    return next((line for line in str(text).splitlines() if line.strip()), "")[:160]


def measure(sot: Any, name: str, estimator: Any, method: str, row: Any, args: argparse.Namespace) -> dict[str, Any]:
    bound = getattr(estimator, method)
    record: dict[str, Any] = {"estimator": name, "method": method}
    eager = bound(row)
    differences = []

    def settled(fast: Any) -> Any:
        results = [fast(row) for _ in range(SETTLE_CALLS + CHECK_CALLS)]
        differences.extend(why for equal, why in (same(eager, result) for result in results) if not equal)
        return fast

    def translation_alone() -> tuple[dict[str, float], Any]:
        """The translation's first calls, each after ``sot.reset()`` (their median), then the
        last one's hot calls beside eager's; the function is gone when this returns."""
        firsts = []
        for _ in range(FIRST_CALLS):
            sot.reset()
            elapsed, first, translated = timed_first_call(sot, bound, row)
            differences.extend(why for equal, why in [same(eager, first)] if not equal)
            firsts.append(elapsed)
        record["first_ms"] = statistics.median(firsts)
        record["first_ms_range"] = [min(firsts), max(firsts)]
        settled(translated)
        times = interleaved_minimum({"eager": lambda: bound(row), "translated": lambda: translated(row)},
                                    args.batches, args.batch_ms / 1e3)
        return times, sot.stats(translated)

    times, stats = translation_alone()
    # The judged function alone, as a user has it: no other translated function keeps the
    # hook in the chain (a parked function's original calls then run at CPython's speed).
    gc.collect()
    judged = settled(sot.translate(bound, trace_modules=TRACE))
    judged_times = interleaved_minimum({"eager": lambda: bound(row), "judged": lambda: judged(row)},
                                       args.batches, args.batch_ms / 1e3)
    record["equal"] = not differences
    record["difference"] = differences[0] if differences else ""
    record.update(eager_us=round(min(times["eager"], judged_times["eager"]), 2),
                  translated_us=round(times["translated"], 2), judged_us=round(judged_times["judged"], 2),
                  translated_speedup=times["eager"] / times["translated"],
                  judged_speedup=judged_times["eager"] / judged_times["judged"])
    reasons = collections.Counter(first_line(b.reason) for b in stats.graph_breaks)
    record.update(translations=stats.translations, graphs=stats.graphs, ops=stats.ops_captured,
                  guards=stats.guards, breaks=len(stats.graph_breaks), fallbacks=len(stats.fallbacks),
                  own_frame=stats.own_frame, top_breaks=reasons.most_common(5),
                  cost_model=sot.stats(judged).cost_model)
    return record


def timed_first_call(sot: Any, bound: Callable[[Any], Any], row: Any) -> tuple[float, Any, Any]:
    """The first call of a new translation of ``bound``: its milliseconds, its result and the
    translated function."""
    translated = sot.translate(bound, trace_modules=TRACE, cost_model=False)
    # From a garbage collection, as the counts are: a full collection falling inside
    # the first call or not moved it by several milliseconds.
    gc.collect()
    start = time.perf_counter()
    first = translated(row)
    return (time.perf_counter() - start) * 1e3, first, translated


def process_first_call(sot: Any, label: str) -> dict[str, Any]:
    """``--process-first``: in this fresh process, the call ``label`` made eagerly once (its
    own first-call costs, scikit-learn's lazy imports and caches, are not the translator's),
    then the first call of its translation, timed and compared with eager's result."""
    fitted, inputs = estimators()
    row = inputs[:1]
    (bound,) = [getattr(estimator, method) for name, estimator, method in calls_of(fitted)
                if f"{name}.{method}" == label]
    eager = bound(row)
    elapsed, first, _ = timed_first_call(sot, bound, row)
    equal, why = same(eager, first)
    return {"ms": elapsed, "equal": equal, "difference": why}


def process_firsts(calls: list[dict[str, Any]]) -> None:
    """Each call's process first calls (``process_first_ms``: the median, and the range),
    round by round over the calls so that the machine's slower minutes fall on all alike."""
    times: dict[str, list[float]] = collections.defaultdict(list)
    for _ in range(PROCESS_FIRSTS):
        for record in calls:
            label = f"{record['estimator']}.{record['method']}"
            child = subprocess.run([sys.executable, os.path.abspath(__file__), "--process-first", label],
                                   check=True, text=True, stdout=subprocess.PIPE)
            outcome = json.loads(child.stdout.splitlines()[-1])
            times[label].append(outcome["ms"])
            if not outcome["equal"] and record["equal"]:
                record.update(equal=False, difference=f"process first call: {outcome['difference']}")
    for record in calls:
        firsts = times[f"{record['estimator']}.{record['method']}"]
        record["process_first_ms"] = statistics.median(firsts)
        record["process_first_ms_range"] = [min(firsts), max(firsts)]


def calls_of(fitted: list[tuple[str, Any]]) -> list[tuple[str, Any, str]]:
    """Each (estimator name, estimator, method) measured."""
    return [(name, estimator, method) for name, estimator in fitted for method in METHODS
            if hasattr(estimator, method)]


def count_in_worker(sot: Any, library: Path, out: Path) -> None:
    """``--instructions``' worker, under callgrind: each call's first translated call, then
    eager and translated calls, counted; what is not counted (breaks, guards) to ``out``."""
    callgrind = Callgrind(library)
    fitted, inputs = estimators()
    row = inputs[:1]
    counters = {}
    for name, estimator, method in calls_of(fitted):
        bound = getattr(estimator, method)
        label = f"{name}.{method}"
        sot.reset()
        translated = sot.translate(bound, trace_modules=TRACE, cost_model=False)
        # Each count starts from a collection: a full one falling inside a count or not
        # (where the calls before left the collector's counters) moved counts by up to 44%.
        gc.collect()
        with callgrind.counting(f"{label}/first"):
            translated(row)
        for way, call in (("eager", bound), ("translated", translated)):
            for _ in range(SETTLE_CALLS):
                call(row)
            gc.collect()
            with callgrind.counting(f"{label}/{way}"):
                for _ in range(COUNTED_CALLS):
                    call(row)
        stats = sot.stats(translated)
        counters[label] = {"estimator": name, "method": method, "breaks": len(stats.graph_breaks),
                           "guards": stats.guards}
    out.write_text(json.dumps(counters))


def count_instructions(args: argparse.Namespace) -> dict[str, Any]:
    """``--instructions``: this script's worker under callgrind; instructions per call."""
    counts, counters = run_worker([sys.executable, os.path.abspath(__file__), "--name", args.name, "--json", args.json])
    calls = []
    for label, counter in counters.items():
        eager, translated = counts[f"{label}/eager"] / COUNTED_CALLS, counts[f"{label}/translated"] / COUNTED_CALLS
        calls.append(dict(counter, eager_instructions=eager, translated_instructions=translated,
                          first_instructions=counts[f"{label}/first"], translated_ratio=eager / translated))
        print(f"{label}: eager {eager / 1e6:.3f} M, translated {translated / 1e6:.3f} M per call "
              f"({eager / translated:.2f}x), first call {counts[f'{label}/first'] / 1e6:.1f} M", flush=True)
    return {"calls": calls, "counted_calls": COUNTED_CALLS, "settle_calls": SETTLE_CALLS,
            "translated_geomean": geometric_mean([c["translated_ratio"] for c in calls])}


def geometric_mean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else math.nan


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--name", default=platform.python_version())
    parser.add_argument("--json")
    parser.add_argument("--batches", type=int, default=41)
    parser.add_argument("--batch-ms", type=float, default=2.0)
    parser.add_argument("--instructions", action="store_true",
                        help="count instructions per call under callgrind instead of timing (needs valgrind)")
    parser.add_argument("--build", choices=("release", "release+pgo"), default="release",
                        help="the framehook build installed, for the report (default release)")
    parser.add_argument("--process-first", metavar="CALL", help=argparse.SUPPRESS)  # a child of process_firsts
    parser.add_argument("--worker", type=Path, help=argparse.SUPPRESS)  # the callgrind client library
    parser.add_argument("--worker-out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if not (args.json or args.process_first):
        parser.error("--json is required")
    import numpy as np
    import sklearn

    from framehook import sot

    header = {"name": args.name, "python": platform.python_version(), "sklearn": sklearn.__version__,
              "numpy": np.__version__, "build": args.build}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # what eager warns, the translation warns alike
        if args.process_first:
            print(json.dumps(process_first_call(sot, args.process_first)))
            return 0
        if args.worker:
            count_in_worker(sot, args.worker, args.worker_out)
            return 0
        if args.instructions:
            Path(args.json).write_text(json.dumps(dict(header, **count_instructions(args)), indent=1) + "\n")
            return 0
        fitted, inputs = estimators()
        row = inputs[:1]
        calls = []
        for name, estimator, method in calls_of(fitted):
            calls.append(measure(sot, name, estimator, method, row, args))
            last = calls[-1]
            print(f"{name}.{method}: {last['translated_speedup']:.2f}x translated, "
                  f"{last['judged_speedup']:.2f}x judged, first {last['first_ms']:.1f} ms, "
                  f"{last['breaks']} breaks, {'equal' if last['equal'] else last['difference']}", flush=True)
    process_firsts(calls)
    report = dict(header, batches=args.batches, batch_ms=args.batch_ms, first_calls=FIRST_CALLS,
                  process_firsts=PROCESS_FIRSTS, calls=calls,
                  translated_geomean=geometric_mean([c["translated_speedup"] for c in calls]),
                  judged_geomean=geometric_mean([c["judged_speedup"] for c in calls]))
    Path(args.json).write_text(json.dumps(report, indent=1) + "\n")
    return 0 if all(c["equal"] for c in calls) else 1


if __name__ == "__main__":
    sys.exit(main())
