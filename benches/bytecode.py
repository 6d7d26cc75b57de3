"""Time framehook's bytecode layer beside the ``bytecode`` package, side by side in one process.

Driven by framehook_dev.bytecode_bench, which runs it on every interpreter with a release build.

    python benches/bytecode.py                       # the table on stdout
    python benches/bytecode.py --json out.json       # and every figure as JSON
    python benches/bytecode.py --repeats 41 --min-time 0.02 --name 3.12

Three functions: a small one (``small``), one of about 100 canonical instructions with
try/except, with, a comprehension and loops (``medium``), and a large real one
(``argparse.ArgumentParser._parse_known_args``). On each, side by side:

- framehook's phases, timed in Rust by ``framehook._native._bench_bytecode`` (a ``testing``
  build): ``decode`` (code object to canonical instructions), ``assemble`` (canonical
  instructions to a new code object: lowering, encoding, ``code.replace``) and
  ``reassemble`` (both);
- what a user calls from Python: ``framehook.bytecode.reassemble(code)`` and
  ``framehook.bytecode.decode(code)`` (which also builds an ``Instruction`` tuple per
  instruction);
- on 3.11+, the ``bytecode`` package: ``Bytecode.from_code(c).to_code()`` (the
  yardstick), its halves ``Bytecode.from_code(c)`` and ``.to_code()`` of a decoded one,
  and ``ConcreteBytecode.from_code(c).to_code()``.

Timing: plain ``time.perf_counter`` (the framehook phases: Rust's clock), not pyperf. The
claims are ratios of µs-ms operations, so every measurement runs in this one process,
interleaved: each repeat times one batch of every measurement in turn (a batch: enough
loops for ``--min-time`` seconds, calibrated once), so a load change on the machine
touches all of them alike. The figure per call is the minimum over the repeats (the
median is kept too). The garbage collector stays on, as a user has it.
"""

from __future__ import annotations

import argparse
import dis
import importlib
import json
import os
import platform
import statistics
import sys
import sysconfig
import time
from typing import Any, Callable, Optional

import framehook
from framehook import _native
from framehook import bytecode as fh_bytecode


def import_bytecode_package() -> Any:
    """The ``bytecode`` package (3.11+, tests/requirements.txt), or None. Run as a script,
    this file's folder is on sys.path, where ``import bytecode`` would find this file."""
    here = os.path.dirname(os.path.abspath(__file__))
    saved = sys.path[:]
    sys.path[:] = [entry for entry in sys.path if os.path.abspath(entry or os.curdir) != here]
    try:
        return importlib.import_module("bytecode")
    except ImportError:
        return None
    finally:
        sys.path[:] = saved


pypi_bytecode = import_bytecode_package()

# The targets: bytecode's round trip / framehook's assemble on 3.11+; framehook's
# assemble of a function of about 100 instructions; decode per 100 instructions.
RATIO_BAR = 20.0
ASSEMBLE_100_BAR_US = 50.0
DECODE_PER_100_BAR_US = 20.0


def small(a, b):
    total = a + b
    return total * 2


def medium(path, items):
    seen = {}
    try:
        with open(path) as handle:
            for line in handle:
                key, _, value = line.partition("=")
                seen[key] = value.strip()
    except OSError:
        return None
    squares = [x * x for x in items if x % 2]
    total = 0
    for square in squares:
        total += square
    return total, seen


def functions() -> dict[str, Any]:
    import argparse as module

    return {
        "small": small.__code__,
        "medium": medium.__code__,
        "argparse._parse_known_args": module.ArgumentParser._parse_known_args.__code__,
    }


def loop(call: Callable[[], object]) -> Callable[[int], float]:
    """A batch timer for ``call``: ``loops`` calls, seconds taken."""

    def batch(loops: int) -> float:
        started = time.perf_counter()
        for _ in range(loops):
            call()
        return time.perf_counter() - started

    return batch


def native(code: Any, phase: str) -> Callable[[int], float]:
    return lambda loops: _native._bench_bytecode(code, phase, loops)


def measurements(code: Any) -> dict[str, Callable[[int], float]]:
    """Every measurement on ``code`` that works on this interpreter: name -> batch timer."""
    timers = {
        "fh_decode": native(code, "decode"),
        "fh_assemble": native(code, "assemble"),
        "fh_reassemble": native(code, "reassemble"),
        "fh_py_reassemble": loop(lambda: fh_bytecode.reassemble(code)),
        "fh_py_decode": loop(lambda: fh_bytecode.decode(code)),
    }
    if pypi_bytecode is not None:
        decoded = pypi_bytecode.Bytecode.from_code(code)
        timers.update(
            bc_roundtrip=loop(lambda: pypi_bytecode.Bytecode.from_code(code).to_code()),
            bc_from_code=loop(lambda: pypi_bytecode.Bytecode.from_code(code)),
            bc_to_code=loop(lambda: decoded.to_code()),
            bc_concrete_roundtrip=loop(lambda: pypi_bytecode.ConcreteBytecode.from_code(code).to_code()),
        )
    working = {}
    for name, timer in timers.items():
        try:
            timer(1)
        except Exception as error:  # reported, not timed: the table shows the gap
            print(f"{code.co_name}: {name} fails: {type(error).__name__}: {error}", file=sys.stderr)
            continue
        working[name] = timer
    return working


def calibrate(timer: Callable[[int], float], min_time: float) -> int:
    """Loops per batch so that a batch takes at least ``min_time`` seconds."""
    loops = 1
    while True:
        taken = min(timer(loops) for _ in range(3))
        if taken >= min_time or loops >= 1 << 24:
            return loops
        loops = max(loops * 2, int(loops * min_time * 1.2 / max(taken, 1e-9)))


def measure(code: Any, repeats: int, min_time: float) -> dict[str, dict[str, Any]]:
    timers = measurements(code)
    loops = {name: calibrate(timer, min_time) for name, timer in timers.items()}
    per_call: dict[str, list[float]] = {name: [] for name in timers}
    for _ in range(repeats):
        for name, timer in timers.items():
            per_call[name].append(timer(loops[name]) / loops[name])
    return {name: {"min_us": min(values) * 1e6, "median_us": statistics.median(values) * 1e6,
                   "loops": loops[name], "repeats": repeats} for name, values in per_call.items()}


def check(code: Any) -> None:
    """What is timed works: the raw round trip gives the same bytes back, the canonical one
    a code object of the same function."""
    assert fh_bytecode.reassemble(code, via_ir=False).co_code == code.co_code
    again = fh_bytecode.reassemble(code)
    assert isinstance(again, type(code)) and again.co_name == code.co_name


def sizes(code: Any) -> dict[str, int]:
    return {
        "canonical_instructions": len(fh_bytecode.decode(code)),
        "raw_instructions": len(fh_bytecode.decode(code, canonical=False)),
        "dis_instructions": sum(1 for i in dis.get_instructions(code) if i.opname != "CACHE"),
        "code_bytes": len(code.co_code),
    }


def ratios(timings: dict[str, dict[str, Any]]) -> dict[str, float]:
    """bytecode's time over framehook's (minimums)."""
    figure = {name: row["min_us"] for name, row in timings.items()}
    pairs = {
        "bc_roundtrip/fh_assemble": ("bc_roundtrip", "fh_assemble"),
        "bc_roundtrip/fh_reassemble": ("bc_roundtrip", "fh_reassemble"),
        "bc_roundtrip/fh_py_reassemble": ("bc_roundtrip", "fh_py_reassemble"),
        "bc_to_code/fh_assemble": ("bc_to_code", "fh_assemble"),
        "bc_from_code/fh_decode": ("bc_from_code", "fh_decode"),
        "bc_concrete_roundtrip/fh_reassemble": ("bc_concrete_roundtrip", "fh_reassemble"),
    }
    return {label: figure[a] / figure[b] for label, (a, b) in pairs.items() if a in figure and b in figure}


def targets(name: str, results: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Each target judged on this interpreter, per function: ``ratio`` (bytecode's round trip
    over framehook's assemble, 3.11+), ``assemble`` (at most 50 µs up to 100 instructions,
    50 µs per 100 beyond; for ``medium``, 50 µs whatever its size on this version) and
    ``decode`` (at most 20 µs per 100 instructions, as a rate: on a small function the
    per-call costs dominate it)."""
    checks = []

    def judge(kind: str, function: str, what: str, value: float, bar: float, at_least: bool = False) -> None:
        checks.append({"interpreter": name, "kind": kind, "function": function, "target": f"{function}: {what}",
                       "value": round(value, 3), "bar": round(bar, 3),
                       "met": value >= bar if at_least else value <= bar})

    for function, result in results.items():
        count = result["sizes"]["canonical_instructions"]
        timing = {key: row["min_us"] for key, row in result["timings"].items()}
        if "bc_roundtrip/fh_assemble" in result["ratios"]:
            judge("ratio", function, f"bytecode round trip / framehook assemble >= {RATIO_BAR:g}",
                  result["ratios"]["bc_roundtrip/fh_assemble"], RATIO_BAR, at_least=True)
        bar = ASSEMBLE_100_BAR_US * (1.0 if function == "medium" else max(1.0, count / 100))
        judge("assemble", function, f"assemble of {count} instructions <= {bar:g} us", timing["fh_assemble"], bar)
        judge("decode", function, f"decode <= {DECODE_PER_100_BAR_US:g} us per 100 instructions ({count})",
              timing["fh_decode"] * 100 / count, DECODE_PER_100_BAR_US)
    return checks


COLUMNS = [
    ("fh_decode", "fh decode"),
    ("fh_assemble", "fh assemble"),
    ("fh_reassemble", "fh reassemble"),
    ("fh_py_reassemble", "fh.reassemble()"),
    ("fh_py_decode", "fh.decode()"),
    ("bc_from_code", "bc from_code"),
    ("bc_to_code", "bc to_code"),
    ("bc_roundtrip", "bc round trip"),
    ("bc_concrete_roundtrip", "bc concrete"),
]


def table(report: dict[str, Any]) -> str:
    lines = [f"{report['name']} ({report['python']}), bytecode {report['bytecode_version'] or '-'}: "
             f"min µs per call over {report['repeats']} repeats",
             "", "| function | instrs | " + " | ".join(label for _, label in COLUMNS)
             + " | bc round trip / fh assemble | / fh reassemble | decode µs per 100 |",
             "| --- | ---: |" + " ---: |" * (len(COLUMNS) + 3)]
    for function, result in report["functions"].items():
        timings = result["timings"]
        cells = [f"{timings[key]['min_us']:.1f}" if key in timings else "-" for key, _ in COLUMNS]
        ratio = result["ratios"]
        per_100 = timings["fh_decode"]["min_us"] * 100 / result["sizes"]["canonical_instructions"]
        cells += [f"{ratio['bc_roundtrip/fh_assemble']:.1f}x" if "bc_roundtrip/fh_assemble" in ratio else "-",
                  f"{ratio['bc_roundtrip/fh_reassemble']:.1f}x" if "bc_roundtrip/fh_reassemble" in ratio else "-",
                  f"{per_100:.1f}"]
        lines.append(f"| {function} | {result['sizes']['canonical_instructions']} | " + " | ".join(cells) + " |")
    lines.append("")
    for target in report["targets"]:
        lines.append(f"{'met ' if target['met'] else 'MISS'}  {target['target']}: {target['value']}")
    return "\n".join(lines)


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=41, help="batches of each measurement (default 41)")
    parser.add_argument("--min-time", type=float, default=0.01, help="seconds per batch, at least (default 0.01)")
    parser.add_argument("--name", help="the interpreter's name in the matrix (default: from sys.version_info)")
    parser.add_argument("--only", help="comma-separated functions (default: all)")
    parser.add_argument("--json", help="write every figure here")
    args = parser.parse_args(argv)
    if not hasattr(_native, "_bench_bytecode"):
        parser.error("framehook._native has no _bench_bytecode: build framehook with the cargo feature testing")
    name = args.name or "{}.{}".format(*sys.version_info[:2])
    codes = functions()
    if args.only:
        codes = {function: codes[function] for function in args.only.split(",")}
    started = time.monotonic()
    results = {}
    for function, code in codes.items():
        check(code)
        timings = measure(code, args.repeats, args.min_time)
        results[function] = {"sizes": sizes(code), "timings": timings, "ratios": ratios(timings)}
    report = {
        "name": name,
        "python": sys.version.split()[0],
        "implementation": {"gil": "off" if sysconfig.get_config_var("Py_GIL_DISABLED") else "on",
                           "debug": hasattr(sys, "gettotalrefcount"), "machine": platform.machine()},
        "framehook": getattr(framehook, "__version__", "?"),
        "bytecode_version": getattr(pypi_bytecode, "__version__", None),
        "method": "time.perf_counter / Rust Instant, batches interleaved, min over repeats",
        "repeats": args.repeats,
        "min_time_s": args.min_time,
        "seconds": round(time.monotonic() - started, 1),
        "loadavg": os.getloadavg(),
        "functions": results,
    }
    report["targets"] = targets(name, results)
    if args.json:
        with open(args.json, "w") as out:
            out.write(json.dumps(report, indent=1) + "\n")
    print(table(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
