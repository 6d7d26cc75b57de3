"""Identity hooks for the torture runner (``framehook_dev.torture``), and its child process.

An *identity* transform returns, for a code object, a fresh code object that computes
the same thing but whose frame is laid out differently: it has one more local variable.
A hook returning it for every frame forces framehook's replacement path (a frame built
for the replacement, locals, cells and free variables carried over) on every hookable
frame, so CPython's own test suite exercises that path.

``with_extra_local(code)`` appends a local to ``co_varnames``. On 3.9 and 3.10 cells and
free variables live in their own arrays, so nothing else changes. From 3.11 they sit
after the locals in one array and every instruction addressing one (``LOAD_DEREF``,
``STORE_DEREF``, ``DELETE_DEREF``, ``MAKE_CELL``, ``LOAD_CLOSURE``,
``LOAD_FROM_DICT_OR_DEREF``, ``LOAD_CLASSDEREF``, and the ``*_FAST*`` family that 3.12+
uses for cell slots of inlined comprehensions and 3.13+ for ``LOAD_CLOSURE``) moves up
by one slot when its slot is ``>= co_nlocals``. ``COPY_FREE_VARS`` takes a count, not a
slot, and stays. Opcode sets come from :mod:`dis` (``haslocal``, ``hasfree``), never
from numbers.

Instruction sizes never change: an argument that would need one more ``EXTENDED_ARG``
prefix (a slot of exactly 255, 65535, ...) would shift jump targets, the exception table
and the line table, so such codes are *declined* (:class:`Declined`, reason
``"extended-arg"``), as are superinstructions (3.13+ ``LOAD_FAST_LOAD_FAST`` and
friends, two 4-bit slots) whose shifted slot would not fit in 4 bits (reason
``"superinstruction"``). A declining hook returns None for that code, which runs
unchanged; the runner reports how many codes were declined.

Command line (in the interpreter under test, framehook and this package installed)::

    python -m framehook_dev.torture_hooks selfcheck [--corpus N] [--hooks]
    python -m framehook_dev.torture_hooks child MODE EVENTS STATS -- REGRTEST-ARGS...

``selfcheck`` checks the transform: tricky functions (closures, class bodies,
comprehensions, generators, coroutines, async generators, try/except/finally, with,
``*args``/``**kwargs``, ``except*``, ``match``, functions with hundreds of locals) give the
same results with every code object transformed, and for every code object compiled from
the stdlib's top-level modules each instruction still names the same variable
(``dis`` argval). With ``--hooks`` the tricky functions also run under framehook with
the identity hooks. Exits 1 on a mismatch.

``child`` is what the runner starts per test module and mode: it installs the hooks of
MODE (``none``, ``identity``, ``chain``), records each test's outcome to EVENTS (one JSON
line per event, so a crash or a timeout still leaves the outcomes so far and the test
that was running), runs CPython's regression-test driver (``test.libregrtest``) with
REGRTEST-ARGS, and writes the hooks' counters to STATS when the process exits.
"""

from __future__ import annotations

import atexit
import collections
import dis
import json
import opcode
import os
import sys
import threading
import traceback
import types
import weakref
from collections.abc import Iterator
from typing import Any, Callable, Optional, cast

__all__ = [
    "Declined",
    "IdentityHook",
    "DecliningHook",
    "MODES",
    "install",
    "with_extra_local",
]

EXTRA_LOCAL = "__framehook_extra__"
SHIFTS_CELLS = sys.version_info >= (3, 11)

_EXTENDED_ARG = dis.opmap["EXTENDED_ARG"]
# Instructions whose argument is a slot in the locals-plus array: everything dis lists as
# addressing a local or a cell/free variable, less COPY_FREE_VARS (a count).
_SLOT_OPS = frozenset(op for op in set(dis.haslocal) | set(dis.hasfree)
                      if op < 256 and dis.opname[op] != "COPY_FREE_VARS")
# 3.13+ superinstructions carry two slots, four bits each.
_PAIR_OPS = frozenset(op for op in _SLOT_OPS if dis.opname[op].count("FAST") == 2)

_CACHES = getattr(opcode, "_inline_cache_entries", None)


def _cache_entries(op: int) -> int:
    if _CACHES is None:
        return 0
    if isinstance(_CACHES, (list, tuple)):  # 3.11, 3.12: by number
        return _CACHES[op]
    return _CACHES.get(dis.opname[op], 0)  # 3.13+: by name (a frozendict since 3.15)


class Declined(Exception):
    """The transform cannot produce an equivalent code object without moving instructions."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(reason, detail)
        self.reason = reason
        self.detail = detail


def _shift_cell_slots(code: types.CodeType) -> bytes:
    raw = bytearray(code.co_code)
    nlocals = code.co_nlocals
    prefix_start: Optional[int] = None
    ext = 0
    i = 0
    n = len(raw)
    while i < n:
        op, arg = raw[i], raw[i + 1]
        if op == _EXTENDED_ARG:
            if prefix_start is None:
                prefix_start = i
            ext = (ext | arg) << 8
            i += 2
            continue
        full = ext | arg
        start = i if prefix_start is None else prefix_start
        prefix_start, ext = None, 0
        if op in _PAIR_OPS:
            first, second = full >> 4, full & 15
            first += first >= nlocals
            second += second >= nlocals
            if first > 15 or second > 15:
                raise Declined("superinstruction", f"{dis.opname[op]} at offset {i}")
            raw[i + 1] = (first << 4) | second
        elif op in _SLOT_OPS and full >= nlocals:
            new = full + 1
            width = (i - start) // 2 + 1  # bytes available for the argument
            if new >= 1 << (8 * width):
                raise Declined("extended-arg", f"{dis.opname[op]} slot {full} at offset {i}")
            for k in range(width):
                raw[start + 2 * k + 1] = (new >> (8 * (width - 1 - k))) & 0xFF
        i += 2 * (1 + _cache_entries(op))
    return bytes(raw)


def with_extra_local(code: types.CodeType) -> types.CodeType:
    """An equivalent, fresh code object whose frame has one more local variable.

    Raises :class:`Declined` when that needs instructions to grow (see the module doc)."""
    taken = set(code.co_varnames) | set(code.co_cellvars) | set(code.co_freevars)
    name = EXTRA_LOCAL
    while name in taken:
        name += "_"
    co_code = _shift_cell_slots(code) if SHIFTS_CELLS else code.co_code
    new = code.replace(
        co_code=co_code,
        co_varnames=code.co_varnames + (name,),
        co_nlocals=code.co_nlocals + 1,
    )
    if new.co_cellvars != code.co_cellvars or new.co_freevars != code.co_freevars:
        raise Declined("layout", "cell/free variables changed when rebuilt")
    return new


# ------------------------------------------------------------------------- hooks


class _Counters:
    """What the hooks did, written to the STATS file when the child exits."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.hooks: dict[str, dict[str, Any]] = {}

    def hook(self, name: str) -> dict[str, Any]:
        return self.hooks.setdefault(name, {
            "calls": 0, "transformed": 0, "declined": collections.Counter(),
            "errors": collections.Counter(), "examples": [],
        })

    def as_json(self) -> dict[str, Any]:
        return {name: {k: (dict(v) if isinstance(v, collections.Counter) else v) for k, v in h.items()}
                for name, h in self.hooks.items()}


COUNTERS = _Counters()


def _where(code: types.CodeType) -> str:
    name = getattr(code, "co_qualname", code.co_name)
    return f"{name} ({code.co_filename}:{code.co_firstlineno})"


def reassembled(code: types.CodeType) -> types.CodeType:
    """``code`` through framehook's bytecode layer: decoded, raised to the canonical
    instruction set, lowered and assembled again (a fresh code object, with the stack size,
    exception table and line table computed anew)."""
    from framehook import bytecode

    return bytecode.reassemble(code, via_ir=True)


class IdentityHook:
    """``hook(frame)`` returning ``transform(frame.f_code)`` (``with_extra_local`` unless
    told otherwise), one copy per code object.

    The per-code cache is keyed by identity and holds the original only weakly, so that
    the hook keeps no code object alive that the program would have freed. Dead entries are
    dropped by the hook itself as the cache grows, never by a weakref callback: a callback
    is Python code run wherever the program frees a code object, which a debugger under
    test would see (test_bdb's stepping met its frames), where the hook's own calls run with
    tracing suspended."""

    def __init__(self, name: str, transform: Callable[[types.CodeType], types.CodeType] = with_extra_local) -> None:
        self.name = name
        self._transform = transform
        self.stats = COUNTERS.hook(name)
        self._cache: dict[int, tuple[Any, Optional[types.CodeType]]] = {}
        self._prune_at = 1024

    def _remember(self, code: types.CodeType, result: Optional[types.CodeType]) -> None:
        cache = self._cache
        if len(cache) >= self._prune_at:
            for key in [key for key, (ref, _) in cache.items() if ref() is None]:
                del cache[key]
            self._prune_at = max(1024, 2 * len(cache))
        cache[id(code)] = (weakref.ref(code), result)

    def transform(self, code: types.CodeType) -> Optional[types.CodeType]:
        entry = self._cache.get(id(code))
        if entry is not None and entry[0]() is code:
            return entry[1]
        stats = self.stats
        result: Optional[types.CodeType]
        try:
            result = self._transform(code)
        except Declined as why:
            result = None
            with COUNTERS.lock:
                stats["declined"][why.reason] += 1
                if len(stats["examples"]) < 20:
                    stats["examples"].append(f"declined {why.reason}: {_where(code)}: {why.detail}")
        except Exception as exc:  # a transform bug: keep the program's own behaviour
            result = None
            with COUNTERS.lock:
                stats["errors"][type(exc).__name__] += 1
                if len(stats["examples"]) < 20:
                    stats["examples"].append(f"error {type(exc).__name__}: {_where(code)}: {exc}")
        else:
            with COUNTERS.lock:
                stats["transformed"] += 1
        self._remember(code, result)
        return result

    def __call__(self, frame: Any) -> Optional[types.CodeType]:
        self.stats["calls"] += 1
        return self.transform(frame.f_code)


class DecliningHook:
    """A hook that looks at every frame and never replaces anything."""

    def __init__(self, name: str) -> None:
        self.stats = COUNTERS.hook(name)

    def __call__(self, frame: Any) -> None:
        self.stats["calls"] += 1
        _ = frame.f_code  # touch the frame as a real hook would
        return None


class CopyHook:
    """Replaces every code object with an equal copy (``code.replace()``): a distinct code
    object with the same layout. What diverges under it and not without hooks comes from
    running a code object other than the function's own (``f_code``/``gi_code`` identity)."""

    def __init__(self, name: str) -> None:
        self.stats = COUNTERS.hook(name)

    def __call__(self, frame: Any) -> types.CodeType:
        self.stats["calls"] += 1
        with COUNTERS.lock:
            self.stats["transformed"] += 1
        return cast(types.CodeType, frame.f_code.replace())


# The SOT mode translates each test method with the test package (its helpers and
# test.support) and unittest (the assertion methods) traced like user code, as Dynamo's
# CPython tests trace unittest.
SOT_TRACED = ("test", "unittest")
# Break and fallback reasons kept per test (their first lines).
SOT_REASONS_KEPT = 8


class SotMethods:
    """Runs every test method translated by SOT (numpy backend, ``full_graph=False``) and
    reports per test what the translator did: ``own_frame`` (whether the method's own frame
    ran as generated code), translations, graphs, operations, breaks and fallbacks."""

    name = "sot.translate"

    def __init__(self, report: Callable[..., None]) -> None:
        import unittest.case

        from framehook import sot

        self.sot = sot
        self.report = report
        self.case = unittest.case.TestCase
        self.original = self.case._callTestMethod
        methods = self

        def _callTestMethod(case: Any, method: Any) -> Any:
            return methods.call(case, method)

        self.case._callTestMethod = _callTestMethod  # type: ignore[method-assign]

    def call(self, case: Any, method: Any) -> Any:
        fast = self.sot.translate(method, trace_modules=SOT_TRACED, cost_model=False)
        try:
            return self.original(case, fast)
        finally:
            stats = self.sot.stats(fast)

            def reasons(records: list[Any]) -> list[str]:
                return [r.reason.splitlines()[0][:300] for r in records[:SOT_REASONS_KEPT]]

            self.report(event="sot", test=case.id(), own_frame=stats.own_frame,
                        translations=stats.translations, graphs=stats.graphs, ops=stats.ops_captured,
                        breaks=reasons(stats.graph_breaks), fallbacks=reasons(stats.fallbacks),
                        break_count=len(stats.graph_breaks), fallback_count=len(stats.fallbacks))


MODES = ("none", "identity", "chain", "reassemble", "floor", "copy", "sot")


def install(mode: str, report: Optional[Callable[..., None]] = None) -> list[Any]:
    """Register the hooks of ``mode``; returns their handles.

    ``identity``: one identity hook, ``cache=True``. ``chain``: an identity hook
    (``cache=True``), a declining hook, and a second identity hook (``cache=False``) that
    transforms what the first returned, so such frames carry two extra locals.
    ``reassemble``: every code object replaced by ``reassembled(code)``, through the
    bytecode layer's canonical instructions (``cache=True``).

    Two modes explain divergences: ``floor``, no hooks but a bare pass-through PEP 523
    function of another tool (what diverges there is inherent to PEP 523 itself), and
    ``copy``, an equal copy of every code object (``cache=True``)."""
    if mode == "none":
        return []
    import framehook

    if mode == "floor":
        from framehook import _native

        _native._foreign_install()
        return []
    if mode == "sot":
        if report is None:
            raise ValueError("the sot mode reports each test method: give report=")
        return [SotMethods(report)]
    if mode == "copy":
        return [framehook.add_frame_hook(CopyHook("copy"), name="torture-copy", cache=True)]

    if mode == "identity":
        return [framehook.add_frame_hook(IdentityHook("identity"), name="torture-identity", cache=True)]
    if mode == "reassemble":
        hook = IdentityHook("reassemble", reassembled)
        return [framehook.add_frame_hook(hook, name="torture-reassemble", cache=True)]
    if mode == "chain":
        return [
            framehook.add_frame_hook(IdentityHook("identity-1"), name="torture-identity-1", cache=True),
            framehook.add_frame_hook(DecliningHook("decline"), name="torture-decline"),
            framehook.add_frame_hook(IdentityHook("identity-2"), name="torture-identity-2"),
        ]
    raise ValueError(f"unknown mode {mode!r} (expected one of {', '.join(MODES)})")


# ------------------------------------------------------------------- child process


def _error_text(err: Any) -> tuple[str, str]:
    """(the exception's own lines, the traceback's last lines) of an exc_info triple."""
    try:
        only = "".join(traceback.format_exception_only(err[0], err[1])).strip()
        full = "".join(traceback.format_exception(*err)).rstrip().splitlines()
    except Exception as exc:  # pragma: no cover - a broken exception
        return f"<unformattable {err[0]!r}: {exc!r}>", ""
    return "\n".join(only.splitlines()[:8])[:2000], "\n".join(full[-40:])[:6000]


class _Recorder:
    """Appends one JSON line per test event; patched into unittest.TestResult."""

    def __init__(self, path: str) -> None:
        self.sink = open(path, "a", buffering=1, encoding="utf-8")
        self.lock = threading.Lock()
        self.current: dict[int, dict[str, Any]] = {}

    def emit(self, **fields: Any) -> None:
        line = json.dumps(fields)
        with self.lock:
            self.sink.write(line + "\n")
            self.sink.flush()

    def patch(self, result_class_name: str) -> None:
        import unittest.result

        base = unittest.result.TestResult
        recorder = self

        def ours(result: Any) -> bool:
            return type(result).__name__ == result_class_name

        def test_id(test: Any) -> str:
            try:
                return str(test.id())
            except Exception:
                return str(test)

        def wrap(name: str, outcome: Optional[str], has_err: bool) -> None:
            original = getattr(base, name)

            def method(self: Any, test: Any, *args: Any) -> Any:
                if ours(self):
                    try:
                        recorder.outcome(self, test_id(test), outcome, args[0] if has_err else None,
                                         args[0] if name == "addSkip" else None)
                    except Exception:
                        pass
                return original(self, test, *args)

            method.__name__ = name
            setattr(base, name, method)

        wrap("addSuccess", "pass", False)
        wrap("addFailure", "fail", True)
        wrap("addError", "error", True)
        wrap("addSkip", "skip", False)
        wrap("addExpectedFailure", "xfail", True)
        wrap("addUnexpectedSuccess", "upass", False)

        start, stop, sub = base.startTest, base.stopTest, base.addSubTest

        def startTest(self: Any, test: Any) -> Any:
            if ours(self):
                tid = test_id(test)
                recorder.current[id(self)] = {"test": tid, "outcome": None}
                recorder.emit(event="start", test=tid)
            return start(self, test)

        def stopTest(self: Any, test: Any) -> Any:
            if ours(self):
                state = recorder.current.pop(id(self), None)
                if state is not None and state["outcome"] is None:
                    # Only subtests failed (unittest then adds no outcome for the test).
                    outcome = "fail" if state.get("subtests_failed") else "unknown"
                    recorder.emit(event="end", test=state["test"], outcome=outcome,
                                  message=state.get("first_subtest_message", ""))
            return stop(self, test)

        def addSubTest(self: Any, test: Any, subtest: Any, err: Any) -> Any:
            if ours(self) and err is not None:
                failed = issubclass(err[0], test.failureException)
                message, tb = _error_text(err)
                recorder.emit(event="end", test=test_id(subtest), outcome="fail" if failed else "error",
                              message=message, traceback=tb)
                state = recorder.current.get(id(self))
                if state is not None:
                    state["subtests_failed"] = True
                    state.setdefault("first_subtest_message", f"{test_id(subtest)}: {message}")
            return sub(self, test, subtest, err)

        # setattr: patching methods of a class is what this does on purpose.
        for name, method in (("startTest", startTest), ("stopTest", stopTest), ("addSubTest", addSubTest)):
            setattr(base, name, method)

    def outcome(self, result: Any, tid: str, outcome: Optional[str], err: Any, reason: Any) -> None:
        state = self.current.get(id(result))
        if state is not None and state["test"] == tid:
            state["outcome"] = outcome
        fields: dict[str, Any] = {"event": "end", "test": tid, "outcome": outcome}
        if err is not None and outcome != "xfail":
            fields["message"], fields["traceback"] = _error_text(err)
        if reason is not None:
            fields["message"] = str(reason)[:500]
        self.emit(**fields)


def _run_regrtest(args: list[str]) -> Any:
    sys.argv = [sys.argv[0]] + args
    from test.libregrtest.main import main  # type: ignore  # CPython's own, typed nowhere

    return main()


def child(argv: list[str]) -> int:
    if len(argv) < 3 or (len(argv) > 3 and argv[3] != "--"):
        print("usage: python -m framehook_dev.torture_hooks child MODE EVENTS STATS -- REGRTEST-ARGS...",
              file=sys.stderr)
        return 2
    mode, events, stats_path = argv[:3]
    regrtest_args = argv[4:]
    recorder = _Recorder(events)
    recorder.patch("RegressionTestResult")
    handles = install(mode, recorder.emit)

    def write_stats() -> None:
        try:
            import framehook

            registered = [h.name for h in framehook.frame_hooks()] if mode != "none" else []
        except Exception as exc:
            registered = [f"<{exc!r}>"]
        data = {"mode": mode, "hooks": COUNTERS.as_json(), "registered_at_exit": registered,
                "python": sys.version, "pid": os.getpid()}
        with open(stats_path, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=1)

    atexit.register(write_stats)
    recorder.emit(event="begin", mode=mode, hooks=[h.name for h in handles], python=sys.version)
    _run_regrtest(regrtest_args)  # exits
    return 0


# ------------------------------------------------------------------------ selfcheck

_TRICKY = r'''
import asyncio
import contextlib
import sys

def closures():
    x = 1
    def inner(y):
        nonlocal x
        x += y
        def innermost():
            return x * y
        return innermost()
    r = [inner(i) for i in range(4)]
    return r, x

def cell_args(a, b=2, *args, c, d=4, **kw):
    def g():
        return a, b, args, c, d, sorted(kw.items())
    a = a + 1
    return g()

def deleted_cell():
    v = 1
    def get():
        return v
    r1 = get()
    del v
    try:
        get()
    except NameError as e:
        r2 = type(e).__name__
    return r1, r2

def class_bodies():
    z = 10
    class K:
        y = z + 1
        zs = [z + i for i in range(2)]
        def m(self):
            return __class__.__name__, self.y, z
    class L(K):
        def m(self):
            return ("L",) + super().m()
    return K().m(), L().m(), K.zs, sorted(k for k in vars(K) if not k.startswith("__"))

def comprehensions(n):
    a = [i * i for i in range(n)]
    b = {i: [j for j in range(i)] for i in range(n)}
    c = {k for k in a if k % 2}
    d = list(x for x in range(n))
    e = [lambda: i for i in range(3)]
    f = [g() for g in e]
    h = [(lambda: n + i)() for i in range(3)]
    loc = [sorted(locals()) for q in range(1)]
    return a, b, sorted(c), d, f, h, loc, sorted(locals())

def generators():
    def g(n):
        t = 0
        for i in range(n):
            got = yield i
            t += got or 0
        return t
    it = g(4)
    out = [next(it)]
    try:
        while True:
            out.append(it.send(2))
    except StopIteration as e:
        out.append(e.value)
    def deleg():
        r = yield from g(2)
        yield r
    out.append(list(deleg()))
    k = 5
    def gg():
        yield k
        try:
            yield k + 1
        finally:
            out.append("closed")
    it2 = gg()
    out.append(next(it2)); out.append(next(it2)); it2.close()
    def thrower():
        try:
            yield 1
        except ValueError as e:
            yield "caught " + str(e)
    t = thrower(); next(t)
    out.append(t.throw(ValueError("boom")))
    return out

def coroutines():
    async def double(x):
        await asyncio.sleep(0)
        return x * 2
    async def agen(n):
        for i in range(n):
            await asyncio.sleep(0)
            yield i
    class ACM:
        async def __aenter__(self):
            return "entered"
        async def __aexit__(self, *exc):
            return False
    async def main():
        s = 0
        async for v in agen(4):
            s += await double(v)
        async with ACM() as e:
            pass
        r = [await double(i) for i in range(3)]
        q = [v async for v in agen(3)]
        t = await asyncio.gather(double(1), double(2))
        return s, e, r, q, t
    return asyncio.run(main())

def exceptions():
    log = []
    def f(x):
        try:
            try:
                if x == 0:
                    raise ValueError("zero")
                return 1 / (x - 1)
            except ValueError as e:
                log.append(("value", str(e)))
                raise KeyError(x) from e
            else:
                log.append("else")
            finally:
                log.append(("finally", x))
        except ZeroDivisionError:
            log.append("zde")
            return None
    for x in (0, 1, 2):
        try:
            log.append(f(x))
        except KeyError as e:
            log.append(("key", e.args, type(e.__cause__).__name__))
    @contextlib.contextmanager
    def cm(tag):
        log.append(("enter", tag))
        try:
            yield tag
        except RuntimeError:
            log.append(("swallowed", tag))
        finally:
            log.append(("exit", tag))
    with cm("a") as a, cm("b") as b:
        raise RuntimeError
    with cm("c"):
        log.append(a + b)
    return log

def star_args(*args, **kwargs):
    def inner(*a, **k):
        return a + args, sorted({**k, **kwargs}.items())
    return inner(1, 2, x=3)

def recursion(n):
    if n <= 1:
        return 1
    return n * recursion(n - 1)

def frames():
    f = sys._getframe()
    return f.f_code.co_name, sorted(f.f_locals), f.f_back is not None

def results():
    return [closures(), cell_args(1, c=3, e=5), cell_args(1, 2, 3, c=4), deleted_cell(),
            class_bodies(), comprehensions(4), generators(), coroutines(), exceptions(),
            star_args(0, y=1), recursion(10), frames()]
'''

_TRICKY_311 = r'''
def groups():
    out = []
    try:
        raise ExceptionGroup("eg", [ValueError(1), TypeError(2), KeyError(3)])
    except* ValueError as e:
        out.append(("v", repr(e.exceptions)))
    except* (TypeError, KeyError) as e:
        z = len(e.exceptions)
        def g():
            return z
        out.append(("tk", g()))
    return out

def matching(x):
    match x:
        case [a, *rest] if a:
            def g():
                return a, rest
            return g()
        case {"k": v}:
            return ("dict", v)
        case _:
            return None

def results_311():
    return [groups(), matching([1, 2, 3]), matching({"k": 9}), matching(0)]
'''


def _many_locals_source(n: int) -> str:
    body = "".join(f"    a{i} = {i}\n" for i in range(n))
    return (f"def many_{n}():\n{body}    c = 7\n    def inner():\n        return c\n"
            f"    c += 1\n    return inner() + a0 + a{n - 1}\n")


def _deep_transform(code: types.CodeType, declined: list[str]) -> types.CodeType:
    consts = tuple(_deep_transform(c, declined) if isinstance(c, types.CodeType) else c
                   for c in code.co_consts)
    code = code.replace(co_consts=consts)
    try:
        return with_extra_local(code)
    except Declined as why:
        declined.append(f"{code.co_name}: {why.reason}")
        return code


def _run_source(source: str, entry: str, transform: bool, declined: list[str]) -> Any:
    code = compile(source, "<framehook-torture-selfcheck>", "exec")
    if transform:
        code = _deep_transform(code, declined)
    namespace: dict[str, Any] = {"__name__": "framehook_torture_selfcheck"}
    exec(code, namespace)
    return namespace[entry]()


def _argvals(code: types.CodeType) -> list[tuple[str, Any]]:
    return [(i.opname, i.argval if i.opcode in _SLOT_OPS else None) for i in dis.get_instructions(code)]


def _walk(code: types.CodeType) -> Iterator[types.CodeType]:
    yield code
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            yield from _walk(c)


def _corpus(limit: int) -> Iterator[tuple[str, types.CodeType]]:
    import sysconfig

    stdlib = sysconfig.get_paths()["stdlib"]
    names = sorted(n for n in os.listdir(stdlib) if n.endswith(".py"))
    for name in names[:limit]:
        path = os.path.join(stdlib, name)
        try:
            with open(path, "rb") as f:
                top = compile(f.read(), path, "exec")
        except (SyntaxError, ValueError, OSError):
            continue
        for code in _walk(top):
            yield path, code


def selfcheck(argv: list[str]) -> int:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m framehook_dev.torture_hooks selfcheck")
    ap.add_argument("--corpus", type=int, default=10_000, metavar="N",
                    help="check every code object of the first N stdlib top-level modules (default: all)")
    ap.add_argument("--hooks", action="store_true", help="also run the tricky functions under framehook's hooks")
    ns = ap.parse_args(argv)
    failures: list[str] = []

    sources = [(_TRICKY, "results")]
    if sys.version_info >= (3, 11):
        sources.append((_TRICKY_311, "results_311"))
    expected_decline = {}
    for n in (20, 253, 254, 300):
        # Slot of the cell `c` is n + 1 (n locals, `inner`): 254 -> 255 fits, 255 -> 256 does not.
        sources.append((_many_locals_source(n), f"many_{n}"))
        expected_decline[f"many_{n}"] = SHIFTS_CELLS and n == 254
    for source, entry in sources:
        declined: list[str] = []
        want = _run_source(source, entry, False, [])
        got = _run_source(source, entry, True, declined)
        if got != want:
            failures.append(f"{entry}: transformed code gives {got!r}, original {want!r}")
        if entry in expected_decline:
            was = any(d.startswith(entry + ":") for d in declined)
            if was != expected_decline[entry]:
                failures.append(f"{entry}: declined={was}, expected {expected_decline[entry]} ({declined})")
        elif declined:
            failures.append(f"{entry}: unexpectedly declined {declined}")
        print(f"selfcheck {entry}: {'ok' if got == want else 'MISMATCH'}"
              f"{' (declined: ' + ', '.join(declined) + ')' if declined else ''}")

    checked = declined_n = 0
    reasons: collections.Counter = collections.Counter()
    for path, code in _corpus(ns.corpus):
        try:
            new = with_extra_local(code)
        except Declined as why:
            declined_n += 1
            reasons[why.reason] += 1
            continue
        checked += 1
        if _argvals(new) != _argvals(code):
            failures.append(f"corpus: {path}: {_where(code)}: instructions name other variables after the transform")
        if len(new.co_code) != len(code.co_code) or new.co_nlocals != code.co_nlocals + 1:
            failures.append(f"corpus: {path}: {_where(code)}: instructions moved or no local added")
    print(f"selfcheck corpus: {checked} code objects transformed and checked, {declined_n} declined {dict(reasons)}")

    if ns.hooks:
        import framehook

        for mode in ("identity", "chain", "reassemble"):
            for source, entry in sources:
                code = compile(source, "<framehook-torture-selfcheck>", "exec")
                want_ns: dict[str, Any] = {"__name__": "framehook_torture_selfcheck"}
                exec(code, want_ns)
                want = want_ns[entry]()
                handles = install(mode)
                try:
                    got_ns: dict[str, Any] = {"__name__": "framehook_torture_selfcheck"}
                    exec(code, got_ns)
                    got = got_ns[entry]()
                finally:
                    for h in handles:
                        framehook.remove_frame_hook(h)
                if got != want:
                    failures.append(f"hooks {mode}: {entry}: {got!r} != {want!r}")
                print(f"selfcheck hooks={mode} {entry}: {'ok' if got == want else 'MISMATCH'}")
        print(f"selfcheck hook counters: {json.dumps(COUNTERS.as_json())}")

    for f in failures[:50]:
        print("FAIL", f)
    if len(failures) > 50:
        print(f"... and {len(failures) - 50} more failures")
    print("selfcheck:", "FAILED" if failures else "ok")
    return 1 if failures else 0


def main(argv: Optional[list[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "child":
        return child(argv[1:])
    if argv and argv[0] == "selfcheck":
        return selfcheck(argv[1:])
    print(__doc__.split("Command line")[1].split("``selfcheck``")[0].strip(), file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
