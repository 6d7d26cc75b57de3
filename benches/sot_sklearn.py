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
the call reaches, scikit-learn's included), the three hot times (timed alternately, batch by
batch, each the minimum per call over the batches: what a loaded machine's pauses leave
out), whether the results equal eager's bit for bit (three calls each), and the
translation's counters: translations, graphs, operations, guards, breaks (with the most
frequent reasons) and what the cost model chose.
"""

from __future__ import annotations

import argparse
import collections
import gc
import json
import math
import platform
import sys
import time
import warnings
from pathlib import Path
from typing import Any, Callable

# The estimators and the exact comparison are the scikit-learn tool's (one definition).
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))

from framehook_dev.sot_sklearn import estimators, same  # noqa: E402

METHODS = ("predict", "predict_proba", "transform")
TRACE = ("sklearn",)
# Calls before timing: past the first (translation), any recompilation and the cost
# model's trials (2 warm calls, 5 timed each way).
SETTLE_CALLS = 20
CHECK_CALLS = 3


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
        """The translation's first call after ``sot.reset()``, then its hot calls beside eager's;
        the function is gone when this returns."""
        sot.reset()
        translated = sot.translate(bound, trace_modules=TRACE, cost_model=False)
        start = time.perf_counter()
        first = translated(row)
        record["first_ms"] = (time.perf_counter() - start) * 1e3
        differences.extend(why for equal, why in [same(eager, first)] if not equal)
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


def geometric_mean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else math.nan


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--name", default=platform.python_version())
    parser.add_argument("--json", required=True)
    parser.add_argument("--batches", type=int, default=41)
    parser.add_argument("--batch-ms", type=float, default=2.0)
    args = parser.parse_args()
    import numpy as np
    import sklearn

    from framehook import sot

    fitted, inputs = estimators()
    row = inputs[:1]
    calls = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # what eager warns, the translation warns alike
        for name, estimator in fitted:
            for method in METHODS:
                if hasattr(estimator, method):
                    calls.append(measure(sot, name, estimator, method, row, args))
                    last = calls[-1]
                    print(f"{name}.{method}: {last['translated_speedup']:.2f}x translated, "
                          f"{last['judged_speedup']:.2f}x judged, first {last['first_ms']:.1f} ms, "
                          f"{last['breaks']} breaks, {'equal' if last['equal'] else last['difference']}",
                          flush=True)
    report = {
        "name": args.name, "python": platform.python_version(), "sklearn": sklearn.__version__,
        "numpy": np.__version__, "batches": args.batches, "batch_ms": args.batch_ms, "calls": calls,
        "translated_geomean": geometric_mean([c["translated_speedup"] for c in calls]),
        "judged_geomean": geometric_mean([c["judged_speedup"] for c in calls]),
    }
    Path(args.json).write_text(json.dumps(report, indent=1) + "\n")
    return 0 if all(c["equal"] for c in calls) else 1


if __name__ == "__main__":
    sys.exit(main())
