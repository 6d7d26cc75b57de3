"""A call profiler in plain Python, on framehook's observers.

    python examples/python_profiler.py [script.py args...]

Counts calls and measures inclusive and exclusive time per function, with a
stack per thread. A function whose code another hook replaced is marked with
the replacement's name. Without a script it profiles a small built-in workload.
"""

from __future__ import annotations

import collections
import os
import sys
import threading
import time
import types
from typing import NamedTuple, Optional

import framehook


class Row(NamedTuple):
    calls: int
    inclusive: float
    exclusive: float
    replaced_by: Optional[types.CodeType]


class _ThreadState(threading.local):
    def __init__(self, all_stats: list[dict]) -> None:  # runs once in each thread
        self.stack: list[list] = []  # [code, start time, time spent in callees]
        self.active: collections.Counter = collections.Counter()  # code -> frames on the stack
        self.stats: dict[types.CodeType, list] = {}  # original code -> Row fields
        all_stats.append(self.stats)


class Profiler:
    def __init__(self) -> None:
        self._all_stats: list[dict] = []
        self._thread = _ThreadState(self._all_stats)
        self._originals: dict[types.CodeType, types.CodeType] = {}  # replacement -> original

    def run(self, function, *args, **kwargs):
        """Returns function(*args, **kwargs), profiling every frame it starts."""
        # Not a `with` block: a context manager's __exit__ would be profiled too.
        handle = framehook.add_frame_hook(None, observer=self._observe, name="python-profiler")
        try:
            return function(*args, **kwargs)
        finally:
            framehook.remove_frame_hook(handle)

    def _observe(self, event: str, code: types.CodeType, original: Optional[types.CodeType]) -> None:
        now = time.perf_counter()
        thread = self._thread
        if original is not None and original is not code:
            self._originals[code] = original  # resumed generators report only the replacement
        if event in ("call", "resume"):
            thread.stack.append([code, now, 0.0])
            thread.active[code] += 1
            if event == "call":
                self._row(code)[0] += 1
            return
        if not thread.stack or thread.stack[-1][0] is not code:
            return  # an exit whose start this observer missed: nothing to match it with
        _, start, callees = thread.stack.pop()
        thread.active[code] -= 1
        elapsed = now - start
        row = self._row(code)
        row[2] += elapsed - callees
        if not thread.active[code]:  # outermost frame of a recursion: count its time once
            row[1] += elapsed
        if thread.stack:
            thread.stack[-1][2] += elapsed

    def _row(self, code: types.CodeType) -> list:
        original = self._originals.get(code, code)
        row = self._thread.stats.setdefault(original, [0, 0.0, 0.0, None])
        if original is not code:
            row[3] = code
        return row

    def stats(self) -> dict[types.CodeType, Row]:
        """Every thread's rows, summed, keyed by the functions' original code."""
        merged: dict[types.CodeType, Row] = {}
        for stats in list(self._all_stats):
            for code, (calls, inclusive, exclusive, replaced_by) in list(stats.items()):
                old = merged.get(code, Row(0, 0.0, 0.0, None))
                merged[code] = Row(
                    old.calls + calls,
                    old.inclusive + inclusive,
                    old.exclusive + exclusive,
                    old.replaced_by or replaced_by,
                )
        return merged

    def print_stats(self, limit: Optional[int] = None, file=None) -> None:
        """A table of the functions, most exclusive time first; `limit` rows at most."""
        rows = sorted(self.stats().items(), key=lambda item: -item[1].exclusive)
        print(f"{'calls':>7} {'incl s':>10} {'excl s':>10}  function", file=file)
        for code, row in rows[:limit]:
            where = f"{code.co_name} ({os.path.basename(code.co_filename)}:{code.co_firstlineno})"
            marker = f" [replaced by {row.replaced_by.co_name}]" if row.replaced_by else ""
            print(f"{row.calls:>7} {row.inclusive:>10.6f} {row.exclusive:>10.6f}  {where}{marker}", file=file)
        if limit is not None and len(rows) > limit:
            print(f"({len(rows) - limit} more functions)", file=file)


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def squares(n):
    for i in range(n):
        yield i * i


def slow_sum(values):
    total = 0
    for value in values:
        total += value
    return total


def fast_sum(values):
    return sum(values)


def workload():
    threads = [threading.Thread(target=fib, args=(12,)) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return fib(15), slow_sum(squares(1000))


def speed_up(frame):
    return fast_sum.__code__ if frame.original_code is slow_sum.__code__ else None


def run_script(profiler: Profiler, path: str) -> None:
    with open(path, "rb") as source:
        code = compile(source.read(), path, "exec")
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    # exec is a builtin, so the table starts at the script's own <module> frame.
    profiler.run(exec, code, {"__name__": "__main__", "__file__": path, "__builtins__": __builtins__})


def main(argv: list[str]) -> None:
    profiler = Profiler()
    try:
        if argv:
            sys.argv = argv
            run_script(profiler, argv[0])
        else:
            # Another tool's hook, so that the table shows a replaced function.
            with framehook.frame_hook(speed_up, cache=True, name="speed-up"):
                print("workload:", profiler.run(workload))
    finally:
        profiler.print_stats(limit=15)


if __name__ == "__main__":
    main(sys.argv[1:])
