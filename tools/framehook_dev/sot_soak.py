"""Leak and race soak of framehook's SOT translator on every interpreter of the matrix.

    python -m framehook_dev.sot_soak                          # all eight interpreters
    python -m framehook_dev.sot_soak --only 3.14d --checks vectors
    python -m framehook_dev.sot_soak --only 3.13t --checks threads --seconds 60

Runs in the venvs ``make test`` builds, one child process per interpreter (this module
with ``--child``), as ``framehook_dev.stress`` does. Checks:

* ``numpy``: 1,000,000 translated calls (``--calls``) on numpy arrays, in rounds of 100
  (``CALLS_PER_ROUND``). Each round makes a closure, translates it with ``cache_size=4``,
  calls it with six inputs that differ in shape, dtype or a Python number (its first
  translation, recompilations after guard failures, then guard failures past the cache
  size, which run the original), and drops it; it calls long-lived translations too:
  ``affine`` (cache hits), ``with_break`` (a graph break at an opaque C call, the rest in
  a resume function), ``branchy`` (a data-dependent branch in a loop: both sides resume)
  and ``assumed`` (a data-dependent branch assumed: the other side runs the frame again). Every
  ``RESET_EVERY`` rounds ``sot.reset()`` makes the long-lived ones translate again. Every
  result is compared with the function's eager result.
* ``vectors``: the same rounds on ``sot_vectors.Vector``, a tensor type in pure Python
  with its own backend. Only here is ``sys.gettotalrefcount()`` exact (debug builds):
  numpy's release-built wheels move the total without leaking (see ``sot_vectors``).
* ``threads``: for 20 s (``--seconds``) 8 threads call translated functions (shared ones,
  their own, fresh closures; inputs of changing shapes, so that they recompile) and
  check every result while another thread calls ``sot.reset()`` in a loop.

The leak checks take three snapshots (``stress.snapshot``, after ``gc.collect()``): after
a warm-up (a twentieth of the rounds, and past the first reset), halfway through the rest
and at the end. "Flat" means: over each of the two halves, ``sys.gettotalrefcount()``
(``vectors``, debug builds), the references held on each watched object (the workload's
functions, codes, globals and backend, and framehook's ``SotTranslated`` and ``SotRef``
types), the number of GC-tracked objects and the blocks Python's allocator has handed
out (``sys.getallocatedblocks()``: objects GC does not track, strings, codes) move by at
most ``DRIFT_LIMIT`` (a leak of one per round would move them by about 4,700 per half at
the default 1,000,000 calls); RSS grows by at most 5 MB from the first snapshot to the
last. Bytes malloc has handed out are reported.

Goals (exit 1 when one is missed): the above; no wrong result, no exception, no crash,
no hang (``--timeout`` per child); each kind of event (cache hits, recompilations, guard
failures, graph breaks) happened; in ``threads``, every thread called and the resetter
reset. Prints a table per interpreter; ``--report`` writes JSON.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import threading
import time
import traceback
import types
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Callable, NamedTuple, Optional

from . import stress

LEAK_CHECKS = ("numpy", "vectors")
CHECKS = (*LEAK_CHECKS, "threads")
CALLS_PER_ROUND = 100
CLOSURE_CACHE_SIZE = 4
RESET_EVERY = 50
DRIFT_LIMIT = stress.DRIFT_LIMIT
RSS_LIMIT_MB = stress.RSS_LIMIT_MB
EVENTS = ("cache_hits", "recompilations", "guard_failures", "graph_breaks")


# ------------------------------------------------------------- the child


def load_workload() -> types.ModuleType:
    """``sot_workload`` compiled under a file name of its own. The translator never enters
    files under the interpreter's library directories (sysconfig's ``stdlib`` and
    ``platstdlib``), and in a venv those hold site-packages, where this package is
    installed: imported from there, the workload would run eagerly."""
    path = Path(__file__).with_name("sot_workload.py")
    module = types.ModuleType("sot_workload")
    exec(compile(path.read_text(), "framehook_dev/sot_workload.py", "exec"), module.__dict__)
    return module


WORKLOAD = load_workload()


class Kit(NamedTuple):
    """A tensor library as the workload uses it."""

    backend: str  # the SOT backend's name
    array: Callable[[Sequence[float], str], Any]  # (values, dtype) -> tensor
    total: Callable[[Any], Any]  # a backend operation giving a number
    same: Callable[[Any, Any], bool]  # whether two results are exactly equal
    exact_refcount: bool  # whether sys.gettotalrefcount() totals its objects


def numpy_kit() -> Kit:
    import numpy as np

    def same(a: Any, b: Any) -> bool:
        if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
            return type(a) is type(b) and a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b)
        return type(a) is type(b) and a == b

    return Kit("numpy", lambda values, dtype: np.array(values, dtype=dtype), np.sum, same, False)


def vectors_kit() -> Kit:
    import framehook.sot as sot

    from . import sot_vectors

    sot.register_backend("vectors", sot_vectors.VectorBackend())
    return Kit("vectors", sot_vectors.Vector, sot_vectors.total, sot_vectors.same, True)


def kit_named(name: str) -> Kit:
    return numpy_kit() if name == "numpy" else vectors_kit()


def variants(kit: Kit) -> list[tuple[Any, Any, int]]:
    """Inputs of ``scaled`` that each fail the guards of the ones before: shape, dtype, a number."""
    pair = lambda n, dtype: (kit.array(range(1, n + 1), dtype), kit.array(range(n, 0, -1), dtype))  # noqa: E731
    return [(*pair(2, "float64"), 1), (*pair(3, "float64"), 1), (*pair(2, "float32"), 1),
            (*pair(2, "float64"), 2), (*pair(2, "float64"), 3), (*pair(4, "int64"), 1)]


class Calls:
    """Translated calls checked against eager results, and the translator's counters (one
    thread's: threads merge theirs at the end)."""

    def __init__(self, kit: Kit) -> None:
        self.kit = kit
        self.calls = 0
        self.wrong = 0
        self.samples: list[str] = []
        self.events: Counter = Counter()

    def check(self, fast: Any, args: tuple, want: Any) -> None:
        got = fast(*args)
        self.calls += 1
        if not self.kit.same(got, want):
            self.wrong += 1
            if len(self.samples) < 10:
                self.samples.append(f"{fast.__name__}{args!r} = {got!r}, eagerly {want!r}")

    def count(self, fast: Any) -> None:
        """Adds ``fast``'s counters (before it goes, or before ``sot.reset()`` zeroes them)."""
        import framehook.sot as sot

        stats = sot.stats(fast)
        self.events.update(translations=stats.translations, cache_hits=stats.cache_hits,
                           guard_failures=stats.guard_failures, recompilations=stats.recompilations,
                           graphs=stats.graphs, graph_breaks=len(stats.graph_breaks),
                           fallbacks=len(stats.fallbacks))

    def merge(self, other: Calls) -> None:
        self.calls += other.calls
        self.wrong += other.wrong
        self.samples += other.samples[:10 - len(self.samples)]
        self.events.update(other.events)


class Rounds:
    """The workload of the leak checks, ``CALLS_PER_ROUND`` translated calls per round."""

    def __init__(self, kit: Kit) -> None:
        import framehook.sot as sot

        self.kit = kit
        self.calls = Calls(kit)
        x, y = kit.array([1.0, 2.0, 3.0], "float64"), kit.array([0.5, -1.0, 2.0], "float64")
        # (translated function, arguments, eager result, calls per round)
        self.steady = [(sot.translate(function, backend=kit.backend, cost_model=False), args, function(*args), repeat)
                       for function, args, repeat in [(WORKLOAD.affine, (x, y), 18),
                                                      (WORKLOAD.with_break, (x, y), 10),
                                                      (WORKLOAD.branchy, (x, kit.total), 6),
                                                      (WORKLOAD.branchy, (x * -1.0, kit.total), 6),
                                                      (WORKLOAD.assumed, (x, kit.total), 6),
                                                      (WORKLOAD.assumed, (x * -1.0, kit.total), 6)]]
        self.variants = variants(kit)
        self.done = 0

    def run(self, rounds: int) -> None:
        import framehook.sot as sot

        for _ in range(rounds):
            scaled = WORKLOAD.make_scaled(self.done % 3 + 1)
            fast = sot.translate(scaled, backend=self.kit.backend, cache_size=CLOSURE_CACHE_SIZE, cost_model=False)
            expected = [scaled(*args) for args in self.variants]
            for _ in range(8):
                for args, want in zip(self.variants, expected):
                    self.calls.check(fast, args, want)
            self.calls.count(fast)
            del fast, scaled
            for fast, args, want, repeat in self.steady:
                for _ in range(repeat):
                    self.calls.check(fast, args, want)
            self.done += 1
            if self.done % RESET_EVERY == 0:
                self.count_steady()
                sot.reset()

    def count_steady(self) -> None:
        counted = set()
        for fast, *_ in self.steady:  # each function's translations once (two calls share one)
            if fast.__wrapped__ not in counted:
                counted.add(fast.__wrapped__)
                self.calls.count(fast)

    def watched(self) -> dict[str, Any]:
        """The objects every round passes through, whose references must not pile up."""
        import framehook._native as native

        functions = {name: getattr(WORKLOAD, name)
                     for name in ("affine", "with_break", "branchy", "assumed", "make_scaled")}
        watched = {**functions, **{f"{name}.__code__": f.__code__ for name, f in functions.items()},
                   "scaled.__code__": WORKLOAD.make_scaled(0).__code__, "workload globals": WORKLOAD.__dict__,
                   "backend operation": self.kit.total, "SotTranslated type": native.SotTranslated,
                   "SotRef type": native.SotRef}
        watched.update({f"{fast.__name__} translation": fast for fast, *_ in self.steady})
        return watched


def check_leaks(kit_name: str, calls: int) -> dict[str, Any]:
    """``calls`` translated calls in rounds; the growth of each figure over two halves."""
    kit = kit_named(kit_name)
    # As in any threaded program (free-threaded 3.13 frees top-level functions differently
    # before a second thread has run: stress.measured).
    thread = threading.Thread(target=lambda: None)
    thread.start()
    thread.join()
    workload = Rounds(kit)
    rounds = max(RESET_EVERY + 3, calls // CALLS_PER_ROUND)
    # The warm-up takes in a reset too: translating again after one makes some one-time objects.
    warmup = min(rounds - 2, max(rounds // 20, RESET_EVERY + 1))
    half = (rounds - warmup) // 2
    watched = workload.watched()
    names, objects = list(watched), list(watched.values())

    def snapshot() -> dict[str, Any]:
        taken = stress.snapshot([])
        taken["held"] = [sys.getrefcount(obj) for obj in objects]
        taken["allocated_blocks"] = sys.getallocatedblocks()  # Python objects GC does not track
        if not kit.exact_refcount:
            taken["total_refs"] = None
        return taken

    started = time.monotonic()
    errors: list[str] = []
    shots = []
    try:
        for count in (warmup, half, half):
            workload.run(count)
            shots.append(snapshot())
    except Exception:  # reported as a missed goal, with the figures so far
        errors.append(traceback.format_exc(limit=6))
    workload.count_steady()

    def growth(key: str, before: dict[str, Any], after: dict[str, Any]) -> Optional[int]:
        return None if before[key] is None else after[key] - before[key]

    halves = list(zip(shots, shots[1:]))
    result: dict[str, Any] = {
        "kit": kit_name,
        "calls": workload.calls.calls,
        "rounds": workload.done,
        "measured_rounds": 2 * half,
        "seconds": round(time.monotonic() - started, 1),
        "wrong": workload.calls.wrong,
        "wrong_samples": workload.calls.samples,
        "errors": errors,
        "events": dict(workload.calls.events),
    }
    for key in ("total_refs", "gc_objects", "allocated_blocks", "malloc_bytes"):
        result[key] = [growth(key, before, after) for before, after in halves]
    result["held_refs"] = {name: [after["held"][i] - before["held"][i] for before, after in halves]
                           for i, name in enumerate(names)}
    result["rss_mb"] = round((shots[-1]["rss_kb"] - shots[0]["rss_kb"]) / 1024, 2) if len(shots) == 3 else None
    result["rss_kb_after_warmup"] = shots[0]["rss_kb"] if shots else None
    result["rss_kb_at_end"] = shots[-1]["rss_kb"] if shots else None
    return result


def check_threads(seconds: float, callers: int = 8, hang_after: float = 120.0) -> dict[str, Any]:
    """Callers check every result while a resetter calls ``sot.reset()`` in a loop."""
    import framehook.sot as sot

    kit = numpy_kit()
    shapes = variants(kit)
    shared = {function: sot.translate(function, cache_size=CLOSURE_CACHE_SIZE, cost_model=False)
              for function in (WORKLOAD.affine, WORKLOAD.with_break)}
    expected = {(function, i): function(x, y) for function in shared for i, (x, y, _) in enumerate(shapes)}
    signs = [(kit.array([1.0, 2.0], "float64"), kit.total), (kit.array([-1.0, -2.0], "float64"), kit.total)]
    shared_branchy = sot.translate(WORKLOAD.branchy, cost_model=False)
    branchy_expected = [WORKLOAD.branchy(*args) for args in signs]
    stop = threading.Event()
    lock = threading.Lock()
    totals: dict[str, Any] = {"calls": Calls(kit), "resets": 0, "exceptions": 0, "errors": []}

    def record_error() -> None:
        with lock:
            totals["exceptions"] += 1
            if len(totals["errors"]) < 10:
                totals["errors"].append(traceback.format_exc(limit=6))

    def caller(index: int) -> None:
        """Rounds of: each shared function or this thread's own translation of it, on inputs
        of a random shape; the shared data-dependent branch; a fresh closure, translated.
        An exception is recorded and the next round goes on."""
        rng = random.Random(index)
        calls = Calls(kit)
        own = {function: sot.translate(function, cache_size=CLOSURE_CACHE_SIZE, cost_model=False)
               for function in shared}
        rounds = 0
        while not (stop.is_set() and rounds):
            rounds += 1
            try:
                for function in shared:
                    i = rng.randrange(len(shapes))
                    x, y, _ = shapes[i]
                    calls.check(rng.choice((shared[function], own[function])), (x, y), expected[function, i])
                sign = rng.randrange(2)
                calls.check(shared_branchy, signs[sign], branchy_expected[sign])
                scaled = WORKLOAD.make_scaled(rng.randrange(1, 4))
                fast = sot.translate(scaled, cache_size=CLOSURE_CACHE_SIZE, cost_model=False)
                for args in rng.sample(shapes, 3):
                    calls.check(fast, args, scaled(*args))
            except Exception:
                record_error()
        with lock:
            totals["calls"].merge(calls)

    def resetter() -> None:
        resets = 0
        try:
            while not (stop.is_set() and resets):
                sot.reset()
                resets += 1
                time.sleep(0.0005)  # lets translations finish now and then, so that cache hits happen
        except BaseException:
            record_error()
        finally:
            with lock:
                totals["resets"] += resets

    switch_interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # GIL builds: switch threads often, for more interleavings
    threads = [threading.Thread(target=caller, args=(i,), daemon=True) for i in range(callers)]
    threads.append(threading.Thread(target=resetter, daemon=True))
    began = time.monotonic()
    try:
        for thread in threads:
            thread.start()
        time.sleep(seconds)
        stop.set()
        for thread in threads:
            thread.join(hang_after)
    finally:
        sys.setswitchinterval(switch_interval)
    hung = sum(thread.is_alive() for thread in threads)
    if hung:
        totals["errors"].append(f"{hung} thread(s) still running {hang_after:.0f} s after the stop")
    calls = totals["calls"]
    return {
        "calls": calls.calls,
        "resets": totals["resets"],
        "wrong": calls.wrong,
        "wrong_samples": calls.samples,
        "exceptions": totals["exceptions"],
        "errors": totals["errors"],
        "seconds": round(time.monotonic() - began, 1),
        "gil": "off" if getattr(sys, "_is_gil_enabled", lambda: True)() is False else "on",
    }


def child(args: argparse.Namespace) -> int:
    results: dict[str, Any] = {"python": sys.version.split()[0], "debug": hasattr(sys, "gettotalrefcount")}
    for name in args.checks.split(","):
        results[name] = check_threads(args.seconds) if name == "threads" else check_leaks(name, args.calls)
    print(json.dumps(results), flush=True)
    return 0


# ------------------------------------------------------------- the parent


def misses(check: str, result: dict[str, Any], drift_limit: int = DRIFT_LIMIT) -> list[str]:
    """The goals ``result`` misses."""
    missed = []
    if result["wrong"]:
        missed.append(f"{result['wrong']} wrong results")
    if result["errors"]:
        missed.append(f"{result.get('exceptions', len(result['errors']))} exceptions")
    if check == "threads":
        if not result["calls"] or not result["resets"]:
            missed.append("no calls or no resets")
        return missed
    missed += [f"no {event}" for event in EVENTS if not result["events"].get(event)]
    for key in ("total_refs", "gc_objects", "allocated_blocks"):
        beyond = [d for d in result[key] if d is not None and abs(d) > drift_limit]
        if beyond:
            missed.append(f"{key} moved {result[key]} over the halves (limit {drift_limit})")
    for name, drifts in result["held_refs"].items():
        if any(abs(d) > drift_limit for d in drifts):
            missed.append(f"references to {name} moved {drifts} over the halves")
    if result["rss_mb"] is None or result["rss_mb"] > RSS_LIMIT_MB:
        missed.append(f"RSS grew {result['rss_mb']} MB")
    return missed


def run_interpreter(name: str, args: argparse.Namespace) -> dict[str, Any]:
    entry = stress.run_child(name, "framehook_dev.sot_soak",
                             ["--checks", args.checks, "--calls", str(args.calls), "--seconds", str(args.seconds)],
                             args.timeout)
    if "error" in entry:
        entry["missed"] = [entry["error"].splitlines()[0]]
    else:
        entry["missed"] = [f"{check}: {miss}" for check in args.checks.split(",")
                           for miss in misses(check, entry[check])]
    return entry


def table(entries: list[dict[str, Any]]) -> str:
    headers = ["python", "check", "calls", "rounds/resets", "refcount drift", "gc objects", "blocks",
               "held refs (max)", "malloc KB", "RSS MB", "wrong", "errors", "verdict"]
    rows = []
    for entry in entries:
        if "error" in entry:
            rows.append([entry["interpreter"], "-", *["-"] * 10, "FAIL: " + entry["missed"][0]])
            continue
        for check in CHECKS:
            if check not in entry:
                continue
            r = entry[check]
            halves = lambda key, r=r: "-" if not r.get(key) or r[key][0] is None else " / ".join(map(str, r[key]))  # noqa: E731
            held = "-" if "held_refs" not in r else str(max(abs(d) for ds in r["held_refs"].values() for d in ds))
            malloc = "-" if not r.get("malloc_bytes") or r["malloc_bytes"][0] is None else \
                " / ".join(str(round(b / 1024)) for b in r["malloc_bytes"])
            missed = misses(check, r)
            rows.append([entry["interpreter"], check, str(r["calls"]), str(r.get("rounds", r.get("resets"))),
                         halves("total_refs"), halves("gc_objects"), halves("allocated_blocks"), held, malloc,
                         str(r.get("rss_mb", "-")),
                         str(r["wrong"]), str(len(r["errors"])), "ok" if not missed else "FAIL: " + "; ".join(missed)])
    widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(headers)]
    line = lambda cells: "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()  # noqa: E731
    return "\n".join([line(headers), line(["-" * w for w in widths]), *map(line, rows)])


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser, args = stress.soak_arguments(__doc__.splitlines()[0], CHECKS, 1800.0, lambda parser: None, argv)
    if args.child:
        return child(args)
    from . import matrix

    names = matrix.chosen_interpreters(parser, args.only)
    entries = []
    for name in names:
        entries.append(run_interpreter(name, args))
        if args.report:  # after each interpreter, so that a long run leaves what it measured
            args.report.write_text(json.dumps(entries, indent=1) + "\n")
    print(table(entries))
    for entry in entries:
        for check in CHECKS:
            found = entry.get(check, {})
            for detail in found.get("errors", [])[:3] + found.get("wrong_samples", [])[:3]:
                print(f"\n{entry['interpreter']} {check}:\n{detail}")
        if "error" in entry:
            print(f"\n{entry['interpreter']}: {entry['error']}")
    failed = [entry["interpreter"] for entry in entries if entry["missed"]]
    print(f"\n{len(entries) - len(failed)} interpreters met every goal"
          + (f"; missed on {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
