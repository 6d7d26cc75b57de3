"""Differential program fuzzer of framehook's SOT translator: generated functions run
eagerly and translated must compute the same.

    python -m framehook_dev.sot_fuzz --only 3.12 --cases 20000 --seed 1
    python -m framehook_dev.sot_fuzz --minutes 30 --report fuzz.json      # every interpreter
    python -m framehook_dev.sot_fuzz --python /path/to/venv/bin/python --cases 5000
    FRAMEHOOK_BUILD_DIR=~/fuzz-build python -m framehook_dev.sot_fuzz --release --minutes 60

Each case (``framehook_dev.sot_fuzz_gen``: a function ``f(a, b, c)`` of random statement
templates over random argument values, deterministic from ``"<seed>:<index>"``) runs
eagerly, then translated by ``sot.translate(f, backend="numpy")`` twice (the call that
translates, then the cached path), each time on a ``copy.deepcopy`` of the same
arguments; then eagerly and translated on other arguments, mostly of the same kinds (the
guards of the first translation must take them only where its code computes the same).
The result or the raised exception (type and ``str``), the arguments afterwards and what
was printed must be the same (``same``: NaN equals NaN, -0.0 differs from 0.0,
arrays by dtype, shape and values, numpy scalars by type, objects by type and fields,
memory addresses in messages ignored). A translated run still going after
``CASE_TIMEOUT`` seconds when the eager one was not is a divergence too.

A divergent case is shrunk (fragments dropped, fragments and arguments made simpler while
it diverges the same way) and reported once per cause (its templates and kind of
divergence), with its source, arguments and both outcomes.

Cases run in child processes (``--child``), many per process; the parent runs them in
chunks of at most ``CHUNK_CASES`` cases, so a crash or a hang loses one chunk and names the
case it was in. ``sot.reset()`` every ``RESET_EVERY`` cases keeps memory flat. The
interpreters are the matrix's venvs (``--only``), or any python with framehook, numpy and
this package importable (``--python``). ``--release`` first installs an optimised build of
this checkout in the matrix's venvs (a few times the cases per second of the tests' debug
build); with ``FRAMEHOOK_BUILD_DIR`` set, those venvs are apart from the tests'. Exit status
1 when a case diverged.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import io
import json
import math
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import types
import warnings
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Callable, NamedTuple, Optional

from . import sot_fuzz_gen as gen

RESET_EVERY = 200
CASE_TIMEOUT = 10.0  # seconds a translated run may take (eager runs take well under one)
CHUNK_CASES = 20_000
SHRINK_STEPS = 250  # runs of a candidate case per divergence
SHRINKS_PER_CAUSE = 2  # a cause seen this often is counted, no longer shrunk
ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


# ------------------------------------------------------------- comparing


def _text(value: str) -> str:
    return ADDRESS.sub(" at 0x…", value)


# CPython 3.15 words one error two ways for the same operation, by its own state: a
# sequence repeated a count too large (`b'xy' *= -2**63 - 1`, `n *= 'ab'`) reads the count
# with `PyLong_AsSsize_t` where the call site's BINARY_OP is specialized and with
# `PyNumber_AsSsize_t` where it is not, so an eager run's message depends on how warm its
# call site is, which no translation can know. Compared as one, as an exception or as the
# text a handler kept (`str(error)`).
_SAME_WORDING = {
    "Python int too large to convert to C ssize_t": "cannot fit 'int' into an index-sized integer",
}


def _worded(text: str) -> str:
    return _SAME_WORDING.get(text, text)


def _error_text(error: BaseException) -> str:
    text = _text(str(error))
    return _worded(text) if isinstance(error, OverflowError) else text


def _type_key(value: Any) -> tuple[str, str]:
    # Classes defined inside a generated function are new objects on each call: by name.
    kind = type(value)
    return kind.__module__, kind.__qualname__


def _same_float(a: float, b: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)


def _fields(value: Any) -> Optional[dict[str, Any]]:
    found: dict[str, Any] = {}
    for kind in type(value).__mro__:
        for name in getattr(kind, "__slots__", ()):
            if isinstance(name, str) and hasattr(value, name) and name not in found:
                found[name] = getattr(value, name)
    state = getattr(value, "__dict__", None)
    if isinstance(state, dict):
        found.update(state)
    return found if found or state is not None else None


BUILTIN_BASES = (bool, int, float, complex, str, bytes, list, tuple, dict, set, frozenset)


def same(a: Any, b: Any) -> bool:
    """Whether ``a`` and ``b`` are the same value as a user of the results sees it."""
    return _same(a, b, 0, {})


def _same(a: Any, b: Any, depth: int, seen: dict[tuple[int, int], tuple[Any, Any]]) -> bool:
    """``same``; ``seen``: the pairs compared already, kept alive so that their ids stay
    theirs (a pair met again in a cycle or a shared part is taken as the same: had it
    differed, the comparison would have stopped)."""
    import numpy as np

    if a is b:
        return True
    if (id(a), id(b)) in seen:
        return True
    seen[(id(a), id(b))] = (a, b)
    if _type_key(a) != _type_key(b):
        return False
    if depth > 30:
        return True  # a cycle or a deep nest: the levels above matched
    if isinstance(a, np.ndarray):
        if a.dtype != b.dtype or a.shape != b.shape:
            return False
        if a.dtype.kind == "O":  # Python objects: compared as such (NaN equals NaN)
            return _same(a.tolist(), b.tolist(), depth + 1, seen)
        try:
            equal = bool(np.array_equal(a, b, equal_nan=True))
        except TypeError:  # dtypes without NaN
            equal = bool(np.array_equal(a, b))
        if equal and a.dtype.kind == "f":
            equal = bool(np.array_equal(np.signbit(a), np.signbit(b)))
        return equal
    if isinstance(a, np.generic):
        return _same(a.item(), b.item(), depth + 1, seen)
    if isinstance(a, BaseException):
        if isinstance(a, OverflowError):
            return _error_text(a) == _error_text(b)
        return _same(a.args, b.args, depth + 1, seen) and _text(str(a)) == _text(str(b))
    base = next((kind for kind in type(a).__mro__ if kind in BUILTIN_BASES), None)
    if base is not None and type(a) is not base and not _same(_fields(a), _fields(b), depth + 1, seen):
        return False  # a subclass: its fields, then its builtin content
    if base is float:
        return _same_float(float.__float__(a), float.__float__(b))
    if base is complex:
        return _same_float(a.real, b.real) and _same_float(a.imag, b.imag)
    if base is str:
        return _worded(str.__str__(a)) == _worded(str.__str__(b))
    if base in (bool, int, bytes):
        return base.__eq__(a, b) is True
    if base in (list, tuple):
        items_a, items_b = base.__getitem__(a, slice(None)), base.__getitem__(b, slice(None))
        return len(items_a) == len(items_b) and all(_same(x, y, depth + 1, seen) for x, y in zip(items_a, items_b))
    if base is dict:
        keys_a, keys_b = list(dict.keys(a)), list(dict.keys(b))
        return _same(keys_a, keys_b, depth + 1, seen) and all(
            _same(dict.__getitem__(a, x), dict.__getitem__(b, y), depth + 1, seen) for x, y in zip(keys_a, keys_b))
    if base in (set, frozenset):
        if len(a) != len(b):
            return False
        try:
            return base.__eq__(a, b) is True or sorted(map(repr, a)) == sorted(map(repr, b))
        except Exception:
            return False
    if isinstance(a, (range, slice)):
        return a == b
    fields_a, fields_b = _fields(a), _fields(b)
    if fields_a is not None:
        return fields_b is not None and _same(fields_a, fields_b, depth + 1, seen)
    return True  # functions, methods, iterators, modules: their type is all that is compared


def describe(value: Any, limit: int = 300) -> str:
    try:
        text = repr(value)
    except Exception as error:  # a value whose repr raises: say so
        text = f"<{type(value).__name__}, repr raised {type(error).__name__}>"
    text = _text(text)
    return text if len(text) <= limit else text[:limit] + "…"


# ------------------------------------------------------------- running


class CaseTimeout(BaseException):
    """Raised in a run that takes longer than ``CASE_TIMEOUT`` (a BaseException, so that the
    generated code's ``except Exception`` does not take it)."""


def _on_alarm(signum: int, frame: Any) -> None:
    raise CaseTimeout


class Outcome(NamedTuple):
    kind: str  # "return", "raise" or "timeout"
    value: Any  # the result, or the exception
    args: tuple  # the arguments afterwards
    stdout: str
    numpy_errors: dict  # numpy's floating-point error handling afterwards (np.geterr())
    warned: tuple = ()  # the warnings shown: (category, message, file, line) each

    def summary(self) -> str:
        if self.kind == "raise":
            head = f"raised {type(self.value).__name__}: {describe(str(self.value))}"
        elif self.kind == "timeout":
            head = f"still running after {CASE_TIMEOUT:.0f} s"
        else:
            head = f"returned {describe(self.value)}"
        errors = "" if self.numpy_errors == NUMPY_ERRORS else f"; numpy error handling left at {self.numpy_errors}"
        shown = f"; warned: {describe(self.warned)}" if self.warned else ""
        return f"{head}; arguments after: {describe(self.args)}; stdout: {self.stdout!r}{errors}{shown}"


NUMPY_ERRORS = {"divide": "warn", "over": "warn", "under": "ignore", "invalid": "warn"}  # numpy's default


def run_once(function: Any, args: tuple) -> Outcome:
    """Runs ``function(*args)`` from numpy's default error handling: a run that leaves
    another (a ``with np.errstate`` entered and never left) neither diverges the next
    cases' eager runs nor goes unnoticed."""
    import numpy as np

    np.seterr(**NUMPY_ERRORS)
    out = io.StringIO()
    signal.setitimer(signal.ITIMER_REAL, CASE_TIMEOUT)
    shown: list = []
    try:
        # Every warning shown ("always": none hidden by an earlier run's record of it).
        with contextlib.redirect_stdout(out), warnings.catch_warnings(record=True) as shown:
            warnings.simplefilter("always")
            value = function(*args)
        kind = "return"
    except CaseTimeout:
        kind, value = "timeout", None
    except KeyboardInterrupt:
        raise
    except BaseException as error:  # noqa: BLE001 (a Rust panic is a BaseException: a divergence)
        kind, value = "raise", error
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    warned = tuple((w.category.__name__, str(w.message), w.filename, w.lineno) for w in shown)
    return Outcome(kind, value, args, out.getvalue(), np.geterr(), warned)


def reached_the_recursion_limit(outcome: Outcome) -> bool:
    """Whether the run (or the repr of what it left: a container holding itself through a
    class's own `__repr__`) reached the recursion limit. Where it is reached depends on
    the frames below, which a translation changes (resume functions, inlined calls): what
    such runs differ in is not a divergence."""
    return isinstance(outcome.value, RecursionError) or "RecursionError" in outcome.summary()


def differences(eager: Outcome, translated: Outcome) -> list[str]:
    """What differs: of "outcome", "value", "exception", "arguments", "stdout", "numpy error
    handling", "warnings"."""
    found = []
    if eager.kind != translated.kind:
        found.append("outcome")
    elif eager.kind == "raise":
        if _type_key(eager.value) != _type_key(translated.value) or \
                _error_text(eager.value) != _error_text(translated.value):
            found.append("exception")
    elif eager.kind == "return" and not same(eager.value, translated.value):
        found.append("value")
    if not same(eager.args, translated.args):
        found.append("arguments")
    if eager.stdout != translated.stdout:
        found.append("stdout")
    if eager.numpy_errors != translated.numpy_errors:
        found.append("numpy error handling")
    if eager.warned != translated.warned:
        found.append("warnings")
    if found and reached_the_recursion_limit(eager):
        return []  # not comparable (looked at only where something differs: a repr costs)
    return found


class Runner:
    """Runs cases in this process: the helpers' namespace, and the translator's counters."""

    def __init__(self) -> None:
        import framehook.sot as sot

        self.sot = sot
        module = types.ModuleType("sot_fuzz_helpers")
        exec(compile(gen.HELPERS, gen.HELPERS_FILENAME, "exec"), module.__dict__)
        self.helpers = module.__dict__
        self.counts: Counter = Counter()
        self.since_reset = 0

    def function(self, case: gen.Case) -> Any:
        namespace = dict(self.helpers)
        namespace["__name__"] = "sot_fuzz_case"
        exec(compile(case.source(), f"<sot_fuzz {case.seed}>", "exec"), namespace)
        return namespace["f"]

    def arguments(self, case: gen.Case, later: bool = False) -> tuple:
        values: list[Any] = []
        for value in case.later if later else case.args:
            if value.expr.startswith(gen.ALIAS):
                values.append(values[gen.PARAMS.index(value.expr[len(gen.ALIAS):])])
            else:
                values.append(eval(value.expr, self.helpers))
        return tuple(values)

    def run(self, case: gen.Case, count: bool = False) -> Optional[tuple[str, Outcome, Outcome, list[str]]]:
        """None when the translated runs match the eager one; else (which run, eager outcome,
        translated outcome, what differs). A case whose eager run does not finish or which
        fails to build is skipped (counted)."""
        try:
            function = self.function(case)
            args = self.arguments(case)
            later = self.arguments(case, later=True) if case.later else None
        except Exception:
            self.counts["skipped: arguments or source"] += count
            return None
        eager = run_once(function, copy.deepcopy(args))
        if eager.kind == "timeout":
            self.counts["skipped: eager timeout"] += count
            return None
        fast = self.sot.translate(function, backend="numpy", cost_model=False)
        found = None
        for which in ("translating call", "cached call"):
            translated = run_once(fast, copy.deepcopy(args))
            diff = differences(eager, translated)
            if diff:
                found = (which, eager, translated, diff)
                break
        if found is None and later is not None:
            # Other arguments: the first translation's guards take them or send them on.
            eager_later = run_once(function, copy.deepcopy(later))
            if eager_later.kind != "timeout":
                translated = run_once(fast, copy.deepcopy(later))
                diff = differences(eager_later, translated)
                if diff:
                    found = ("later call", eager_later, translated, diff)
        if count:
            self.count(fast, eager)
        self.since_reset += 1
        if self.since_reset >= RESET_EVERY:
            self.sot.reset()
            self.since_reset = 0
        return found

    def count(self, fast: Any, eager: Outcome) -> None:
        stats = self.sot.stats(fast)
        self.counts["cases"] += 1
        self.counts["eager raised"] += eager.kind == "raise"
        self.counts["own frame translated"] += stats.own_frame == "translated"
        self.counts["with graphs"] += stats.graphs > 0
        self.counts["graphs"] += stats.graphs
        self.counts["ops captured"] += stats.ops_captured
        self.counts["with breaks"] += bool(stats.graph_breaks)
        self.counts["with fallbacks"] += bool(stats.fallbacks)
        self.counts["cache hits"] += stats.cache_hits


def signature(which: str, eager: Outcome, translated: Outcome, diff: list[str]) -> str:
    """How a case diverges, the same for a case and its shrunk forms."""
    def kind(outcome: Outcome) -> str:
        return type(outcome.value).__name__ if outcome.kind == "raise" else outcome.kind
    return f"{which}: {'+'.join(diff)} (eager {kind(eager)}, translated {kind(translated)})"


def shrink(runner: Runner, case: gen.Case, wanted: str, steps: int = SHRINK_STEPS) -> gen.Case:
    """The smallest form of ``case`` found that diverges as ``wanted`` says."""
    budget = [steps]

    def still(candidate: gen.Case) -> bool:
        if budget[0] <= 0:
            return False
        budget[0] -= 1
        found = runner.run(candidate)
        return found is not None and signature(*found) == wanted

    changed = True
    while changed and budget[0] > 0:
        changed = False
        for i in range(len(case.body) - 1, -1, -1):  # later fragments first: they depend on earlier ones
            candidate = case.with_body(case.body[:i] + case.body[i + 1:])
            if still(candidate):
                case, changed = candidate, True
        for i, fragment in enumerate(case.body):
            for simpler in fragment.simpler:
                candidate = case.with_body(case.body[:i] + (simpler,) + case.body[i + 1:])
                if still(candidate):
                    case, changed = candidate, True
                    break
        source = case.source()
        for i, value in enumerate(case.args):
            name = gen.PARAMS[i]
            unused = not re.search(rf"\b{name}\b", source.split("\n", 1)[1])
            options = ("None",) if unused else ("None", "0", "1", "[]", "'ab'", "[1, 2]", *value.simpler)
            for simpler in options:
                if simpler == value.expr:
                    break  # as simple as it gets
                candidate = case.with_arg(i, gen.Value(simpler, value.kind))
                if unused or still(candidate):
                    case, changed = candidate, changed or not unused
                    break
    return case


def reproducer(case: gen.Case) -> str:
    later = gen.arguments_source(case.later) if case.later else "()"
    return f"{case.source()}\nargs = {gen.arguments_source(case.args)}\nlater = {later}\n"


QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"|\b\d+\b")


def _shape_of(error: BaseException) -> str:
    """An exception's type and message, names and numbers after the first left out: the
    same bug on other names."""
    first = [True]

    def blank(match: re.Match) -> str:
        keep, first[0] = first[0] and match.group().startswith(("'", '"')), False
        return match.group() if keep else "…"

    return f"{type(error).__name__}: {QUOTED.sub(blank, str(error))}"


def cause(runner: Runner, case: gen.Case, eager: Outcome, translated: Outcome, diff: list[str]) -> str:
    """What makes divergences the same bug, roughly: where translated raised what eager did
    not, that exception; where eager raised and translated did not, eager's exception;
    otherwise the templates left after shrinking and the types of the arguments they use."""
    if "numpy error handling" in diff:  # one cause whatever the case raised
        return "numpy error handling left changed"
    if translated.kind == "raise" and ("exception" in diff or "outcome" in diff):
        return f"translated raised {_shape_of(translated.value)}"
    if eager.kind == "raise" and "outcome" in diff:
        return f"eager raised {_shape_of(eager.value)}, translated did not ({translated.kind})"
    body = case.source().split("\n", 1)[1]
    kinds = sorted({type(value).__name__ for name, value in zip(gen.PARAMS, runner.arguments(case))
                    if re.search(rf"\b{name}\b", body)})
    templates = sorted({re.sub(r"^(caught|try):", "", t) for t in case.templates()})
    return f"{'+'.join(diff)}: {' + '.join(templates)} | {','.join(kinds)}"


def fuzz(seed: int, cases: Optional[int] = None, seconds: Optional[float] = None, start: int = 0,
         progress: Optional[Path] = None, shrinks_per_cause: int = SHRINKS_PER_CAUSE,
         shrink_steps: int = SHRINK_STEPS) -> dict[str, Any]:
    """Runs cases ``start``, ``start + 1``, … of ``seed`` in this process until ``cases`` ran
    or ``seconds`` passed: the counters, and each cause of divergence with a shrunk case."""
    previous_handler = signal.signal(signal.SIGALRM, _on_alarm)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # numpy's RuntimeWarnings, once per place: not compared
            return _fuzz(seed, cases, seconds, start, progress, shrinks_per_cause, shrink_steps)
    finally:
        signal.signal(signal.SIGALRM, previous_handler)


def _fuzz(seed: int, cases: Optional[int], seconds: Optional[float], start: int, progress: Optional[Path],
          shrinks_per_cause: int, shrink_steps: int) -> dict[str, Any]:
    runner = Runner()
    causes: dict[str, dict[str, Any]] = {}
    raw_seen: Counter = Counter()
    began = time.monotonic()
    shrinking = 0.0  # seconds spent shrinking, apart from running the cases
    index = start
    progress_fd = os.open(progress, os.O_WRONLY | os.O_CREAT, 0o644) if progress else None
    while (cases is None or index < start + cases) and (seconds is None or time.monotonic() - began < seconds):
        if progress_fd is not None:
            os.pwrite(progress_fd, f"{index:<12}".encode(), 0)  # names the case a hang or crash was in
        case = gen.generate(f"{seed}:{index}")
        index += 1
        found = runner.run(case, count=True)
        if found is None:
            continue
        wanted = signature(*found)
        runner.counts["divergent"] += 1
        raw_key = f"{wanted} | {' + '.join(sorted(case.templates()))}"
        raw_seen[raw_key] += 1
        if raw_seen[raw_key] > shrinks_per_cause:
            continue
        shrink_began = time.monotonic()
        small = shrink(runner, case, wanted, shrink_steps)
        again = runner.run(small)
        which, eager, translated, diff = found if again is None else again
        key = cause(runner, small, eager, translated, diff)
        entry = causes.setdefault(key, {"cause": key, "count": 0, "seed": case.seed, "reproducer": reproducer(small),
                                        "run": which, "differs": diff, "eager": eager.summary(),
                                        "translated": translated.summary()})
        entry["count"] += 1
        shrinking += time.monotonic() - shrink_began
    if progress_fd is not None:
        os.close(progress_fd)
    elapsed = time.monotonic() - began
    ran = runner.counts["cases"]
    return {"python": sys.version.split()[0], "gil": _gil(), "seed": seed, "start": start, "cases": ran,
            "seconds": round(elapsed, 2), "shrinking_seconds": round(shrinking, 2),
            "cases_per_second": round(ran / (elapsed - shrinking), 1) if elapsed > shrinking else None,
            "counts": dict(runner.counts), "divergences": list(causes.values())}


def _gil() -> str:
    return "off" if getattr(sys, "_is_gil_enabled", lambda: True)() is False else "on"


# ------------------------------------------------------------- the parent


class Interpreter(NamedTuple):
    name: str
    # The host argv that runs this python with the given arguments (inside the sid root
    # for the interpreters that live there).
    command: Callable[[list[str]], list[str]]
    env: dict[str, str]
    # Where a child's progress file goes: a directory the child sees at the same path.
    shared_dir: Optional[str]


def interpreters(parser: argparse.ArgumentParser, args: argparse.Namespace) -> list[Interpreter]:
    tools = str(Path(__file__).resolve().parent.parent)
    env = {"PYTHONHASHSEED": "0"}  # the same set order in every child: reproducers reproduce
    if args.python:
        path = os.environ.get("PYTHONPATH")
        env = dict(env, PYTHONPATH=tools + (os.pathsep + path if path else ""))
        return [Interpreter(python, lambda argv, python=python: [python, *argv], env, None)
                for python in args.python]
    from . import matrix

    chosen = []
    for name in matrix.chosen_interpreters(parser, args.only):
        target = matrix.resolve(name)
        if args.release:
            matrix.ensure_venv(target)
            matrix.build_and_install(target, release=True, testing=False)
        matrix.install_dev_package(target)  # this checkout's tools, in that venv
        shared = matrix.BUILD_DIR / "tmp"
        shared.mkdir(parents=True, exist_ok=True)
        chosen.append(Interpreter(
            name, lambda argv, target=target: target.command([target.venv_python, *argv], extra_env=env), env,
            str(shared)))
    return chosen


def run_chunk(interpreter: Interpreter, seed: int, start: int, cases: Optional[int], seconds: Optional[float],
              timeout: float) -> dict[str, Any]:
    with tempfile.NamedTemporaryFile("w+", suffix=".progress", dir=interpreter.shared_dir) as progress:
        arguments = ["-m", "framehook_dev.sot_fuzz", "--child", "--seed", str(seed), "--start", str(start),
                     "--progress", progress.name]
        arguments += ["--cases", str(cases)] if cases is not None else ["--seconds", str(seconds)]
        try:
            done = subprocess.run(interpreter.command(arguments), env=dict(os.environ, **interpreter.env),
                                  text=True, capture_output=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return {"error": f"hang: no result within {timeout:.0f} s, in case {seed}:{_progress(progress.name)}",
                    "case": f"{seed}:{_progress(progress.name)}"}
        lines = done.stdout.strip().splitlines()
        try:
            return json.loads(lines[-1])
        except (IndexError, ValueError):
            how = f"signal {-done.returncode}" if done.returncode < 0 else f"exit {done.returncode}"
            where = _progress(progress.name)
            return {"error": f"crash ({how}) in case {seed}:{where}: {done.stderr.strip()[-2000:]}",
                    "case": f"{seed}:{where}"}


def _progress(path: str) -> str:
    try:
        return Path(path).read_text().strip() or "?"
    except OSError:
        return "?"


def run_interpreter(interpreter: Interpreter, args: argparse.Namespace) -> dict[str, Any]:
    """Chunks of cases in child processes until ``--cases`` ran or ``--minutes`` passed."""
    print(f"[sot_fuzz] {interpreter.name}: seed {args.seed}", file=sys.stderr, flush=True)
    began = time.monotonic()
    deadline = began + args.minutes * 60 if args.minutes else None
    entry: dict[str, Any] = {"interpreter": interpreter.name, "seed": args.seed, "cases": 0, "counts": Counter(),
                             "divergences": {}, "errors": []}
    start = 0
    while True:
        if deadline is None:
            remaining = args.cases - start
            if remaining <= 0:
                break
            result = run_chunk(interpreter, args.seed, start, min(remaining, CHUNK_CASES), None, args.timeout)
        else:
            left = deadline - time.monotonic()
            if left <= 1:
                break
            result = run_chunk(interpreter, args.seed, start, None, min(left, 300.0), max(args.timeout, left + 120))
        if "error" in result:
            entry["errors"].append(result["error"])
            start = int(result["case"].split(":")[1]) + 1 if result["case"][-1].isdigit() else start + CHUNK_CASES
            continue
        entry["python"], entry["gil"] = result["python"], result["gil"]
        start += result["cases"]
        entry["cases"] += result["cases"]
        entry["shrinking_seconds"] = round(entry.get("shrinking_seconds", 0.0) + result["shrinking_seconds"], 2)
        entry["counts"].update(result["counts"])
        for divergence in result["divergences"]:
            known = entry["divergences"].setdefault(divergence["cause"], divergence)
            if known is not divergence:
                known["count"] += divergence["count"]
        print(f"[sot_fuzz] {interpreter.name}: {entry['cases']} cases, "
              f"{len(entry['divergences'])} causes of divergence", file=sys.stderr, flush=True)
    entry["seconds"] = round(time.monotonic() - began, 1)
    running = entry["seconds"] - entry.get("shrinking_seconds", 0.0)  # child starts included
    entry["cases_per_second"] = round(entry["cases"] / running, 1) if running > 0 else None
    entry["counts"] = dict(entry["counts"])
    entry["divergences"] = list(entry["divergences"].values())
    return entry


def render(entries: list[dict[str, Any]]) -> str:
    lines = []
    for entry in entries:
        counts = entry["counts"]
        lines.append(f"{entry['interpreter']}: {entry['cases']} cases in {entry['seconds']} s "
                     f"({entry['cases_per_second']}/s, shrinking apart); "
                     f"own frame translated {counts.get('own frame translated', 0)}, "
                     f"with graphs {counts.get('with graphs', 0)}, with breaks {counts.get('with breaks', 0)}; "
                     f"{counts.get('divergent', 0)} divergent cases, {len(entry['divergences'])} causes, "
                     f"{len(entry['errors'])} crashes or hangs")
        for divergence in entry["divergences"]:
            lines += ["", f"  {divergence['cause']}  ({divergence['count']}x, e.g. case {divergence['seed']})",
                      *("    " + line for line in divergence["reproducer"].splitlines()),
                      f"    eager:      {divergence['eager']}", f"    translated: {divergence['translated']}"]
        lines += [f"  {error}" for error in entry["errors"]]
        lines.append("")
    return "\n".join(lines)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    budget = parser.add_mutually_exclusive_group()
    budget.add_argument("--cases", type=int, help="cases per interpreter (default 10,000)")
    budget.add_argument("--minutes", type=float, help="minutes per interpreter")
    parser.add_argument("--only", help="comma-separated interpreters of the matrix, e.g. 3.12,3.13t")
    parser.add_argument("--python", action="append", help="a python with framehook and numpy (repeatable)")
    parser.add_argument("--release", action="store_true",
                        help="build and install an optimised framehook in the matrix's venvs first")
    parser.add_argument("--report", type=Path, help="write the results as JSON here")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds per child process")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--start", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--seconds", type=float, help=argparse.SUPPRESS)
    parser.add_argument("--progress", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        result = fuzz(args.seed, args.cases, args.seconds, args.start, args.progress)
        print(json.dumps(result), flush=True)
        return 0
    if args.cases is None and args.minutes is None:
        args.cases = 10_000
    if args.python and (args.only or args.release):
        parser.error("--python excludes --only and --release")
    entries = []
    for interpreter in interpreters(parser, args):
        entries.append(run_interpreter(interpreter, args))
        if args.report:  # after each interpreter, so that a long run leaves what it found
            args.report.write_text(json.dumps({"seed": args.seed, "budget": {"cases": args.cases,
                                                                            "minutes": args.minutes},
                                               "interpreters": entries}, indent=1) + "\n")
    print(render(entries))
    total = sum(entry["cases"] for entry in entries)
    bad = sum(len(entry["divergences"]) + len(entry["errors"]) for entry in entries)
    print(f"{total} cases, seed {args.seed}: {bad} causes of divergence, crashes or hangs")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
