"""Leak and thread stress of framehook on every interpreter of the matrix.

    python -m framehook_dev.stress                          # all eight interpreters
    python -m framehook_dev.stress --only 3.12,3.14d --seconds 5

Runs in the venvs ``make test`` builds (``FRAMEHOOK_BUILD_DIR`` honoured; 3.14 and
3.14d inside the sid root), one child process per interpreter (this module with
``--child``), three checks each:

* ``calls``: 1,000,000 calls (``--calls``) of functions whose code a hook replaces
  (a fresh equivalent copy with one more local, ``framehook_dev.torture_hooks.with_extra_local``):
  a plain function, one with a cell, a closure and a generator function, under a
  ``cache=True`` hook and a ``cache=False`` one. Every call must run the replacement and
  return the right value.
* ``cycles``: 100,000 (``--cycles``) ``add_frame_hook``/``remove_frame_hook`` cycles,
  alternately with and without an observer and with ``cache`` on and off, a hooked
  call in between so each registration runs.
* ``threads``: 8 threads call hooked functions (replaced or declined, through closures
  and generators too) and check every result while 2 threads add, remove, enable and
  disable hooks, for 20 s (``--seconds``). Free-threaded 3.13t runs them in parallel.

The leak checks measure between two snapshots taken after a warm-up (one twentieth of
the work, so that one-time caches are excluded), each after ``gc.collect()``:
``sys.gettotalrefcount()`` drift (debug builds), the references held on the objects
every operation passes through (hook, observer, original and replacement code, the
``Frame`` and ``HookHandle`` types), GC-tracked objects, bytes malloc has handed out
(glibc's ``mallinfo2``, which sees Rust's allocations), and RSS (``VmRSS``).

Goals (exit 1 when one is missed): refcount drift, held references and GC objects
within ``DRIFT_LIMIT`` (one leaked reference or object per operation would exceed it
a hundredfold: the checks make 10^5 to 10^6 operations; what remains is the
interpreter's own bounded caching: free lists, specialisation, interned names); RSS
growth within 5 MB; no wrong result, no exception, no crash, no hang (``--timeout`` per
child). Prints a table per interpreter; ``--report`` writes JSON.
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import sys
import threading
import time
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Callable, NamedTuple, Optional

CHECKS = ("calls", "cycles", "threads")
DRIFT_LIMIT = 1000
RSS_LIMIT_MB = 5.0


# ------------------------------------------------------------- the child: workloads


def plain(x):
    return x * 2 + 1, sys._getframe().f_code


def with_cell(x):
    y = x + 1

    def inner():
        return y * 3

    return inner(), sys._getframe().f_code


def _make_closure(k):
    def closure(x):
        return x + k, sys._getframe().f_code

    return closure


closure = _make_closure(7)


def counting(n):
    yield sys._getframe().f_code
    yield from range(n)


def _run_generator(x):
    steps = counting(x % 50)
    code = next(steps)
    return sum(steps), code


def declined(x):
    return x - 3, sys._getframe().f_code


class Workload(NamedTuple):
    function: Callable[..., Any]  # whose code is hooked
    call: Callable[[int], tuple[int, Any]]  # -> (value, the code that ran)
    expected: Callable[[int], int]
    replaced: bool


WORKLOADS = (
    Workload(plain, plain, lambda x: x * 2 + 1, True),
    Workload(with_cell, with_cell, lambda x: (x + 1) * 3, True),
    Workload(closure, closure, lambda x: x + 7, True),
    Workload(counting, _run_generator, lambda x: (x % 50) * (x % 50 - 1) // 2, True),
    Workload(declined, declined, lambda x: x - 3, False),
)
# Generator frames are passed through unhooked before 3.11.
HOOKS_GENERATORS = sys.version_info >= (3, 11)


class Replacer:
    """A hook replacing each workload's code by one fresh equivalent copy."""

    def __init__(self) -> None:
        from .torture_hooks import with_extra_local

        self.replacements = {w.function.__code__: with_extra_local(w.function.__code__)
                             for w in WORKLOADS if w.replaced}

    def __call__(self, frame: Any) -> Any:
        return self.replacements.get(frame.f_code)

    def expected_code(self, workload: Workload) -> Any:
        """The code a call of `workload` runs while this hook alone is registered."""
        code = workload.function.__code__
        if workload.call is _run_generator and not HOOKS_GENERATORS:
            return code
        return self.replacements.get(code, code)


def decline(frame: Any) -> None:
    _ = frame.f_code  # reads the frame, returns None: the code runs unchanged


def observe(event: str, code: Any, original_code: Any) -> None:
    pass


# ------------------------------------------------------------- the child: measuring


def _rss_kb() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS in /proc/self/status")


def _malloc_in_use() -> Optional[Callable[[], int]]:
    """glibc's count of bytes malloc has handed out (small chunks + mmapped), or None."""
    import ctypes

    class MallInfo2(ctypes.Structure):
        _fields_ = [(name, ctypes.c_size_t) for name in (
            "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
            "fordblks", "keepcost")]

    try:
        mallinfo2 = ctypes.CDLL(None).mallinfo2
    except (AttributeError, OSError):
        return None
    mallinfo2.restype = MallInfo2

    def in_use() -> int:
        info = mallinfo2()
        return info.uordblks + info.hblkhd

    return in_use


MALLOC_IN_USE = _malloc_in_use()


def snapshot(watched: Sequence[Any]) -> dict[str, Any]:  # int, or None where unavailable
    for _ in range(3):
        gc.collect()
    objects = len(gc.get_objects())
    return {
        "total_refs": sys.gettotalrefcount() if hasattr(sys, "gettotalrefcount") else None,
        "held_refs": sum(sys.getrefcount(obj) for obj in watched),
        "gc_objects": objects,
        "malloc_bytes": MALLOC_IN_USE() if MALLOC_IN_USE else None,
        "rss_kb": _rss_kb(),
    }


def measured(step: Callable[[int], int], total: int, watched: Sequence[Any]) -> dict[str, Any]:
    """Runs `step(n)` (which returns its wrong results) for `total` units: a twentieth
    as warm-up, the rest between two snapshots; returns the growth of each figure."""
    # As in any threaded program: free-threaded 3.13 frees functions of top-level code
    # only in the GC until a second thread has run, and never after (gh-117696).
    thread = threading.Thread(target=lambda: None)
    thread.start()
    thread.join()
    warmup = max(1, total // 20)
    wrong = step(warmup)
    before = snapshot(watched)
    wrong += step(total - warmup)
    after = snapshot(watched)
    growth = {key: None if before[key] is None else after[key] - before[key] for key in before}
    return {
        "operations": total,
        "measured": total - warmup,
        "wrong": wrong,
        "errors": [],
        "refcount_drift": growth["total_refs"],
        "held_refs": growth["held_refs"],
        "gc_objects": growth["gc_objects"],
        "malloc_bytes": growth["malloc_bytes"],
        "rss_mb": round((after["rss_kb"] - before["rss_kb"]) / 1024, 2),
    }


def _watched(hook: Replacer) -> list[Any]:
    import framehook

    codes = [code for pair in hook.replacements.items() for code in pair]
    return [hook, observe, framehook.Frame, framehook.HookHandle, plain.__globals__, *codes]


def check_calls(calls: int) -> dict[str, Any]:
    """`calls` calls of replaced functions, under a cache=True and a cache=False hook."""
    import framehook

    hook = Replacer()
    replaced = [w for w in WORKLOADS if w.replaced]
    rounds = len(replaced) * 2  # workloads x cache modes

    def step(n: int) -> int:
        wrong = 0
        for cache in (True, False):
            handle = framehook.add_frame_hook(hook, cache=cache, name="stress-calls")
            try:
                for workload in replaced:
                    want_code = hook.expected_code(workload)
                    for x in range(n):
                        value, code = workload.call(x)
                        wrong += value != workload.expected(x) or code is not want_code
            finally:
                framehook.remove_frame_hook(handle)
        return wrong

    return measured(lambda n: step(max(1, n // rounds)), calls, _watched(hook))


def check_cycles(cycles: int) -> dict[str, Any]:
    """`cycles` add/remove cycles, with and without observer, a hooked call in each."""
    import framehook

    hook = Replacer()
    want_code = hook.expected_code(WORKLOADS[0])

    def step(n: int) -> int:
        wrong = 0
        for x in range(n):
            handle = framehook.add_frame_hook(hook, cache=bool(x & 2), name="stress-cycles",
                                              observer=observe if x & 1 else None)
            value, code = plain(x)
            wrong += value != x * 2 + 1 or code is not want_code
            framehook.remove_frame_hook(handle)
        return wrong

    return measured(step, cycles, _watched(hook))


def check_threads(seconds: float, callers: int = 8, mutators: int = 2,
                  hang_after: float = 120.0) -> dict[str, Any]:
    """Callers check every result while mutators add, remove, enable and disable hooks.

    Runs for `seconds`, and until every caller has called each workload and every
    mutator has made a few operations, so that short runs still exercise everything."""
    import framehook

    hook = Replacer()
    valid = {id(w): {w.function.__code__, hook.expected_code(w)} for w in WORKLOADS}
    stop = threading.Event()
    lock = threading.Lock()
    totals: dict[str, Any] = {"calls": 0, "wrong": 0, "ops": 0, "errors": [], "samples": []}
    started = [threading.Event() for _ in range(callers + mutators)]

    def record_error() -> None:
        with lock:
            if len(totals["errors"]) < 10:
                totals["errors"].append(traceback.format_exc(limit=4))
            else:
                totals["errors"].append("...")

    def caller(index: int) -> None:
        rng = random.Random(index)
        calls = wrong = 0
        try:
            while not (stop.is_set() and calls):
                for workload in WORKLOADS:
                    x = rng.randrange(1000)
                    value, code = workload.call(x)
                    calls += 1
                    if value != workload.expected(x) or code not in valid[id(workload)]:
                        wrong += 1
                        with lock:
                            if len(totals["samples"]) < 10:
                                totals["samples"].append(f"{workload.function.__name__}({x}) = "
                                                         f"{value!r} from {code!r}")
                started[index].set()
        except BaseException:
            record_error()
        finally:
            started[index].set()
            with lock:
                totals["calls"] += calls
                totals["wrong"] += wrong

    def mutator(index: int) -> None:
        rng = random.Random(1000 + index)
        handles: list[Any] = []
        ops = 0
        try:
            while not (stop.is_set() and ops >= 10):
                choice = rng.random()
                if not handles or (choice < 0.4 and len(handles) < 4):
                    handles.append(framehook.add_frame_hook(
                        hook if rng.random() < 0.7 else decline, cache=rng.random() < 0.5,
                        observer=observe if rng.random() < 0.3 else None, name=f"mutator-{index}"))
                elif choice < 0.7:
                    framehook.remove_frame_hook(handles.pop(rng.randrange(len(handles))))
                else:
                    handle = rng.choice(handles)
                    handle.enabled = not handle.enabled
                ops += 1
                if ops >= 10:
                    started[callers + index].set()
        except BaseException:
            record_error()
        finally:
            started[callers + index].set()
            for handle in handles:
                framehook.remove_frame_hook(handle)
            with lock:
                totals["ops"] += ops

    switch_interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # GIL builds: switch threads often, for more interleavings
    threads = [threading.Thread(target=caller, args=(i,), daemon=True) for i in range(callers)]
    threads += [threading.Thread(target=mutator, args=(i,), daemon=True) for i in range(mutators)]
    began = time.monotonic()
    try:
        for thread in threads:
            thread.start()
        time.sleep(seconds)
        for event in started:
            event.wait(hang_after)
        stop.set()
        for thread in threads:
            thread.join(hang_after)
    finally:
        sys.setswitchinterval(switch_interval)
    hung = sum(thread.is_alive() for thread in threads)
    if hung:
        totals["errors"].append(f"{hung} thread(s) still running {hang_after:.0f} s after the stop")
    return {
        "operations": totals["calls"],
        "wrong": totals["wrong"],
        "errors": totals["errors"],
        "wrong_samples": totals["samples"],
        "mutator_ops": totals["ops"],
        "seconds": round(time.monotonic() - began, 1),
        "gil": "off" if getattr(sys, "_is_gil_enabled", lambda: True)() is False else "on",
    }


def child(args: argparse.Namespace) -> int:
    import framehook

    results: dict[str, Any] = {"python": sys.version.split()[0], "debug": hasattr(sys, "gettotalrefcount")}
    for name in args.checks.split(","):
        if name == "calls":
            results[name] = check_calls(args.calls)
        elif name == "cycles":
            results[name] = check_cycles(args.cycles)
        else:
            results[name] = check_threads(args.seconds)
        results[name]["hooks_left"] = len(framehook.frame_hooks())
    print(json.dumps(results), flush=True)
    return 0


# ------------------------------------------------------------- the parent


def misses(check: str, result: dict[str, Any]) -> list[str]:
    """The goals `result` misses."""
    missed = []
    if result["wrong"]:
        missed.append(f"{result['wrong']} wrong results")
    if result["errors"]:
        missed.append(f"{len(result['errors'])} exceptions")
    if result["hooks_left"]:
        missed.append(f"{result['hooks_left']} hooks left registered")
    if check == "threads":
        if not result["operations"] or not result["mutator_ops"]:
            missed.append("no calls or no mutations")
        return missed
    for key in ("refcount_drift", "held_refs", "gc_objects"):
        if result[key] is not None and abs(result[key]) > DRIFT_LIMIT:
            missed.append(f"{key} {result[key]} beyond {DRIFT_LIMIT}")
    if result["rss_mb"] > RSS_LIMIT_MB:
        missed.append(f"RSS grew {result['rss_mb']} MB")
    return missed


def run_child(name: str, module: str, child_args: Sequence[str], timeout: float) -> dict[str, Any]:
    """Runs ``python -m module --child *child_args`` in the venv of interpreter ``name``: the
    JSON object its last line prints, with ``interpreter`` and ``wall_seconds``, or an
    ``error`` (a crash, a hang past ``timeout`` seconds, a venv or interpreter missing)."""
    from . import matrix

    started = time.monotonic()
    entry: dict[str, Any] = {"interpreter": name}
    try:
        target = matrix.resolve(name)
        matrix.install_dev_package(target)
        argv = [target.venv_python, "-m", module, "--child", *child_args]
        print(f"[{module.rsplit('.', 1)[-1]}] {name}: {' '.join(child_args)} in {target.venv}",
              file=sys.stderr, flush=True)
        done = target.run(argv, capture=True, timeout=timeout)
    except matrix.subprocess.TimeoutExpired:
        entry["error"] = f"hang: no result within {timeout:.0f} s"
    except (matrix.provision.ProvisionError, RuntimeError, OSError) as error:
        entry["error"] = str(error)
    else:
        lines = done.stdout.strip().splitlines()
        try:
            entry.update(json.loads(lines[-1]))
        except (IndexError, ValueError):
            how = f"signal {-done.returncode}" if done.returncode < 0 else f"exit {done.returncode}"
            entry["error"] = f"crash ({how}): " + "\n".join(lines[-20:])
    entry["wall_seconds"] = round(time.monotonic() - started, 1)
    return entry


def run_interpreter(name: str, args: argparse.Namespace) -> dict[str, Any]:
    entry = run_child(name, "framehook_dev.stress",
                      ["--checks", args.checks, "--calls", str(args.calls), "--cycles", str(args.cycles),
                       "--seconds", str(args.seconds)], args.timeout)
    entry["missed"] = [] if "error" in entry else [
        f"{check}: {miss}" for check in args.checks.split(",") for miss in misses(check, entry[check])]
    if "error" in entry:
        entry["missed"] = [entry["error"].splitlines()[0]]
    return entry


def table(entries: list[dict[str, Any]]) -> str:
    headers = ["python", "check", "ops", "refcount drift", "held refs", "gc objects", "malloc KB",
               "RSS MB", "wrong", "errors", "mutator ops", "verdict"]
    rows = []
    for entry in entries:
        if "error" in entry:
            rows.append([entry["interpreter"], "-", *["-"] * 9, "FAIL: " + entry["missed"][0]])
            continue
        for check in CHECKS:
            if check not in entry:
                continue
            r = entry[check]
            cell = lambda key, r=r: "-" if r.get(key) is None else str(r[key])  # noqa: E731
            malloc = "-" if r.get("malloc_bytes") is None else str(round(r["malloc_bytes"] / 1024))
            missed = misses(check, r)
            rows.append([entry["interpreter"], check, str(r["operations"]), cell("refcount_drift"),
                         cell("held_refs"), cell("gc_objects"), malloc, cell("rss_mb"), str(r["wrong"]),
                         str(len(r["errors"])), cell("mutator_ops"),
                         "ok" if not missed else "FAIL: " + "; ".join(missed)])
    widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(headers)]
    line = lambda cells: "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()  # noqa: E731
    return "\n".join([line(headers), line(["-" * w for w in widths]), *map(line, rows)])


def soak_arguments(description: str, checks: Sequence[str], timeout: float,
                   add: Callable[[argparse.ArgumentParser], None],
                   argv: Optional[Sequence[str]]) -> tuple[argparse.ArgumentParser, argparse.Namespace]:
    """The command line this tool and sot_soak share (interpreters, checks, calls, threads'
    duration, timeout, report, the child's flag), with the tool's own options from ``add``."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--only", help="comma-separated interpreters, e.g. 3.12 or 3.13t,3.14d")
    parser.add_argument("--checks", default=",".join(checks), help=f"comma-separated, of {tuple(checks)}")
    parser.add_argument("--calls", type=int, default=1_000_000, help="calls per leak check")
    add(parser)
    parser.add_argument("--seconds", type=float, default=20.0, help="duration of the threads check")
    parser.add_argument("--timeout", type=float, default=timeout, help="per interpreter, seconds")
    parser.add_argument("--report", type=Path, help="write the results as JSON here")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    unknown = [c for c in args.checks.split(",") if c not in checks]
    if unknown:
        parser.error(f"unknown check(s) {unknown}; choose from {tuple(checks)}")
    return parser, args


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser, args = soak_arguments(
        __doc__.splitlines()[0], CHECKS, 1200.0,
        lambda parser: parser.add_argument("--cycles", type=int, default=100_000), argv)
    if args.child:
        return child(args)
    from . import matrix

    names = matrix.chosen_interpreters(parser, args.only)
    entries = [run_interpreter(name, args) for name in names]
    print(table(entries))
    for entry in entries:
        for check in CHECKS:
            found = entry.get(check, {})
            for detail in found.get("errors", [])[:3] + found.get("wrong_samples", [])[:3]:
                print(f"\n{entry['interpreter']} {check}:\n{detail}")
        if "error" in entry:
            print(f"\n{entry['interpreter']}: {entry['error']}")
    if args.report:
        args.report.write_text(json.dumps(entries, indent=1) + "\n")
    failed = [entry["interpreter"] for entry in entries if entry["missed"]]
    print(f"\n{len(entries) - len(failed)} interpreters met every goal"
          + (f"; missed on {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
