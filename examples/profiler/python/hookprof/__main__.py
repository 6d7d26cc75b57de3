"""python -m hookprof [-s SORT] [-l LIMIT] [--collapsed FILE] [--flamegraph FILE.svg] (script.py | -m module) [args...]

Runs the script (or module) as `python script.py args...` would, profiled,
then prints the table and writes the files asked for. The script's exit
status is hookprof's."""

from __future__ import annotations

import argparse
import builtins
import importlib.machinery
import io
import os
import runpy
import sys
import types
from typing import Optional

from hookprof import SORT_KEYS, Profiler


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m hookprof",
        description="Profile a Python script or module with framehook observers.",
    )
    parser.add_argument("-s", "--sort", default="cumulative", choices=list(SORT_KEYS),
                        help="sort the table by this column (default: cumulative)")
    parser.add_argument("-l", "--limit", type=int, default=None, help="print at most this many rows")
    parser.add_argument("--collapsed", metavar="FILE", help="write collapsed stacks (a;b;c microseconds)")
    parser.add_argument("--flamegraph", metavar="FILE.svg", help="write an SVG flame graph")
    parser.add_argument("-m", dest="module", action="store_true",
                        help="run a library module as a script (like python -m)")
    # Everything from the script (or module) on is the program's own command line.
    parser.add_argument("target", nargs=argparse.REMAINDER, help="script.py [args...], or module [args...] with -m")
    options = parser.parse_args(argv)
    if not options.target:
        parser.error("a script, or -m and a module, is required")
    if not options.module and not os.path.isfile(options.target[0]):
        parser.error(f"can't open file {options.target[0]!r}")
    return options


def run(options: argparse.Namespace, profiler: Profiler) -> None:
    """Runs the target as the interpreter would have run it as __main__."""
    target, *args = options.target
    sys.argv = [target, *args]
    if options.module:
        sys.path[0] = os.getcwd()
        with profiler:
            runpy.run_module(target, run_name="__main__", alter_sys=True)  # sets argv[0] to its file
        return
    # What `python script.py` does, without runpy's frames around the script's.
    sys.path[0] = os.path.dirname(os.path.realpath(target))
    with io.open_code(target) as source:
        code = compile(source.read(), target, "exec")
    main = types.ModuleType("__main__")
    main.__dict__.update(__file__=target, __builtins__=builtins, __cached__=None,
                         __loader__=importlib.machinery.SourceFileLoader("__main__", target))
    sys.modules["__main__"] = main
    with profiler:
        exec(code, main.__dict__)


def report(options: argparse.Namespace, profiler: Profiler) -> None:
    sys.stdout.flush()
    profiler.print_stats(sort=options.sort, limit=options.limit)
    if options.collapsed:
        profiler.write_collapsed(options.collapsed)
        print(f"hookprof: collapsed stacks written to {options.collapsed}")
    if options.flamegraph:
        try:
            profiler.write_flamegraph(options.flamegraph, title=" ".join(options.target))
        except ValueError as error:  # nothing recorded
            print(f"hookprof: {error}", file=sys.stderr)
        else:
            print(f"hookprof: flame graph written to {options.flamegraph}")


def main(argv: Optional[list[str]] = None) -> None:
    options = parse(sys.argv[1:] if argv is None else argv)
    profiler = Profiler()
    try:
        run(options, profiler)
    finally:
        # Also when the program exits (SystemExit) or fails: its exit status,
        # or its traceback, follows the report.
        report(options, profiler)


if __name__ == "__main__":
    main()
