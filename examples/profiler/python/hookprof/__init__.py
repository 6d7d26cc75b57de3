"""hookprof: a call profiler built on framehook's observers.

    with hookprof.Profiler() as profiler:
        work()
    profiler.print_stats(sort="tottime", limit=10)
    profiler.write_flamegraph("work.svg")

Recording is native: a framehook observer, registered through framehook's C
API capsule, counts calls and wall time (inclusive, exclusive) per code object
and per call path, on every thread. Codes that ran in place of another code
(a hook replaced them) are reported as replacements of it.
"""

from __future__ import annotations

import os
import sys
from collections import Counter
from types import CodeType
from typing import IO, Callable, NamedTuple, Optional, Union

from hookprof._native import Collector, flamegraph

__all__ = ["Profiler", "StatRow", "SORT_KEYS"]

PathLike = Union[str, "os.PathLike[str]"]


class StatRow(NamedTuple):
    """One code object's totals; times are wall-clock seconds."""

    ncalls: int
    tottime: float  # exclusive: in the code itself
    cumtime: float  # inclusive: with what it called, recursion counted once
    filename: str
    lineno: int
    name: str  # co_qualname where the interpreter has it (3.11+), else co_name
    replaced: Optional[str]  # the name of the code this one ran in place of, if a hook replaced it
    primitive_calls: int  # calls not made from within a running frame of the same code

    @property
    def label(self) -> str:
        if self.replaced is None:
            return self.name
        return f"{self.name} [replaces {self.replaced}]"


def _name(code: CodeType) -> str:
    name: str = getattr(code, "co_qualname", code.co_name)
    return name


def _row(code: CodeType, original: Optional[CodeType], calls: int, primitive_calls: int, tottime: float,
         cumtime: float) -> StatRow:
    replaced = None if original is None else _name(original)
    return StatRow(calls, tottime, cumtime, code.co_filename, code.co_firstlineno, _name(code), replaced,
                   primitive_calls)


SORT_KEYS: dict[str, Callable[[StatRow], object]] = {
    "cumulative": lambda row: -row.cumtime,
    "cumtime": lambda row: -row.cumtime,
    "tottime": lambda row: -row.tottime,
    "time": lambda row: -row.tottime,
    "ncalls": lambda row: -row.ncalls,
    "calls": lambda row: -row.ncalls,
    "name": lambda row: row.name,
    "filename": lambda row: (row.filename, row.lineno),
    "lineno": lambda row: (row.filename, row.lineno),
}


def _sorted(rows: list[StatRow], sort: str) -> list[StatRow]:
    try:
        key = SORT_KEYS[sort]
    except KeyError:
        raise ValueError(f"unknown sort key {sort!r}; one of {', '.join(SORT_KEYS)}") from None
    return sorted(rows, key=lambda row: (key(row), row.filename, row.lineno, row.name))


def _percall(total: float, calls: int) -> str:
    return f"{total / calls:8.3f}" if calls else " " * 8


class Profiler(Collector):
    """Records calls on every thread between start() and stop(), or inside `with`.

    Starting again adds to what was recorded. Frames still running at stop()
    count as having returned then; frames that began before start() are not
    recorded."""

    def stats(self) -> list[StatRow]:
        """One row per code object that ran, unsorted."""
        return [_row(*totals) for totals in self.totals()]

    def print_stats(self, sort: str = "cumulative", limit: Optional[int] = None,
                    file: Optional[IO[str]] = None) -> None:
        """A table like cProfile's, sorted by `sort` (a key of SORT_KEYS), `limit` rows at most."""
        out = sys.stdout if file is None else file
        rows = self.stats()
        calls = sum(row.ncalls for row in rows)
        primitive = sum(row.primitive_calls for row in rows)
        total = sum(row.tottime for row in rows)
        shown = _sorted(rows, sort)[:limit]
        counted = f"{calls} function calls" + (f" ({primitive} primitive calls)" if primitive != calls else "")
        print(f"         {counted} in {total:.3f} seconds\n", file=out)
        print(f"   Ordered by: {sort}" + (f", {len(shown)} of {len(rows)} rows" if len(shown) < len(rows) else ""),
              file=out)
        print("\n   ncalls  tottime  percall  cumtime  percall filename:lineno(function)", file=out)
        for row in shown:
            ncalls = str(row.ncalls) if row.primitive_calls == row.ncalls else f"{row.ncalls}/{row.primitive_calls}"
            print(f"{ncalls:>9} {row.tottime:8.3f} {_percall(row.tottime, row.ncalls)} "
                  f"{row.cumtime:8.3f} {_percall(row.cumtime, row.primitive_calls)} "
                  f"{row.filename}:{row.lineno}({row.label})", file=out)
        print(file=out)

    def collapsed(self) -> list[str]:
        """Collapsed stacks for flame graphs: "outer;inner;leaf N", N the exclusive
        microseconds spent on that path, sorted; paths under half a microsecond are left out."""
        labels: dict[int, str] = {}
        paths: list[str] = []
        micros: Counter[str] = Counter()
        for parent, code, original, nanos in self.call_tree():
            label = labels.get(id(code))
            if label is None:
                name = _name(code) if original is None else f"{_name(code)} [replaces {_name(original)}]"
                # ';' separates frames, and the count follows the last space.
                label = f"{name} ({code.co_filename}:{code.co_firstlineno})".replace(";", ",")
                labels[id(code)] = label
            path = label if parent is None else f"{paths[parent]};{label}"
            paths.append(path)
            micros[path] += nanos
        return sorted(f"{path} {round(ns / 1000)}" for path, ns in micros.items() if round(ns / 1000) > 0)

    def write_collapsed(self, path: PathLike) -> None:
        with open(path, "w", encoding="utf-8") as out:
            out.writelines(line + "\n" for line in self.collapsed())

    def write_flamegraph(self, path: PathLike, title: str = "hookprof") -> None:
        """An SVG flame graph (drawn by the inferno crate); ValueError if nothing was recorded."""
        svg = flamegraph(self.collapsed(), title)
        with open(path, "wb") as out:
            out.write(svg)
