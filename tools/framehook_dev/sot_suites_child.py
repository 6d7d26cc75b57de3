"""The child process of ``framehook_dev.sot_suites``: one package's pytest suite, eagerly or
with every test function translated by SOT, recording each test to an events file.

    python -m framehook_dev.sot_suites_child --mode sot --trace boltons --events E.jsonl \\
        [--skip DONE.txt] [--timeout 60] -- PYTEST-ARGS...

In ``sot`` mode a pytest plugin calls each test function as
``sot.translate(fn, trace_modules=TRACE)(**fixture_values)`` (fixtures stay eager), and
unittest-style test methods, which pytest runs through ``unittest.TestCase.run``, are
translated where ``TestCase._callTestMethod`` calls them (as ``torture --modes sot`` does).
In ``eager`` mode the same plugin records the same events without translating.

Events are JSON lines, written and flushed as they happen so that a crash or a hang still
leaves every outcome so far and the test then running: ``{"event": "start", "test": ID}`` and
``{"event": "result", "test": ID, "outcome": ..., "error": ..., "seconds": ..., "sot": {...}}``.
A test running past ``--timeout`` seconds makes ``faulthandler`` dump the stacks and exit
the process; the parent records that test as ``timeout`` and starts the child again with the
tests done so far listed in ``--skip``.

Standard library and pytest only; runs on 3.9+.
"""

from __future__ import annotations

import argparse
import collections
import faulthandler
import inspect
import json
import sys
import time
from typing import IO, Any, Optional

# Reasons kept per test (the first line of each, in the order first seen, with counts).
REASONS_KEPT = 20
REASON_CHARS = 200


def first_line(text: str, limit: int = 300) -> str:
    lines = [line for line in str(text).splitlines() if line.strip()]
    return (lines[0] if lines else "")[:limit]


def reason_counts(records: list[Any]) -> dict[str, int]:
    """The first line of each record's reason, counted (the most frequent REASONS_KEPT)."""
    counts = collections.Counter(first_line(record.reason, REASON_CHARS) for record in records)
    return dict(counts.most_common(REASONS_KEPT))


class Translator:
    """What sot mode adds: each test callable translated, its stats kept for the test's event."""

    def __init__(self, trace: tuple[str, ...]) -> None:
        from framehook import sot

        self.sot = sot
        self.trace = trace
        self.stats: dict[str, dict[str, Any]] = {}
        self.current: Optional[str] = None

    def call(self, function: Any, *args: Any, **kwargs: Any) -> Any:
        fast = self.sot.translate(function, trace_modules=self.trace, cost_model=False)
        started = time.perf_counter()
        try:
            return fast(*args, **kwargs)
        finally:
            seconds = time.perf_counter() - started
            if self.current is not None:
                self.stats[self.current] = self.summary(fast, seconds)

    def summary(self, fast: Any, seconds: float) -> dict[str, Any]:
        stats = self.sot.stats(fast)
        return {"own_frame": stats.own_frame, "translations": stats.translations,
                "cache_hits": stats.cache_hits, "graphs": stats.graphs, "ops": stats.ops_captured,
                "breaks": len(stats.graph_breaks), "break_reasons": reason_counts(stats.graph_breaks),
                "fallbacks": len(stats.fallbacks), "fallback_reasons": reason_counts(stats.fallbacks),
                "call_seconds": round(seconds, 6)}

    def patch_unittest(self) -> None:
        """Test methods of unittest.TestCase classes, which pytest runs through
        TestCase.run: translated where unittest calls them."""
        import unittest.case

        original = unittest.case.TestCase._callTestMethod
        translator = self

        def _callTestMethod(case: Any, method: Any) -> Any:
            # Async test cases override this method; a plain one's method is a function.
            if inspect.iscoroutinefunction(method):
                return original(case, method)
            return original(case, lambda: translator.call(method))

        unittest.case.TestCase._callTestMethod = _callTestMethod  # type: ignore[method-assign]


class Recorder:
    """The pytest plugin: outcomes per test, translation of test functions in sot mode, and
    the per-test watchdog."""

    def __init__(self, events: IO[str], translator: Optional[Translator], skip: set[str],
                 timeout: float) -> None:
        self.events = events
        self.translator = translator
        self.skip = skip
        self.timeout = timeout
        self.reports: dict[str, list[Any]] = {}
        self.watchdog = open(f"{events.name}.watchdog", "w")  # noqa: SIM115 - open for the process's life
        self.errors: dict[str, str] = {}

    def emit(self, **fields: Any) -> None:
        self.events.write(json.dumps(fields) + "\n")
        self.events.flush()

    # Hooks (pytest finds them by name).
    def pytest_configure(self, config: Any) -> None:
        """Hypothesis's per-example deadline off, in both modes (over the profile the suite's
        conftest loaded): a translation's first call takes longer, and time is not what the
        suites compare."""
        try:
            from hypothesis import settings
        except ImportError:
            return
        settings.register_profile("framehook-sot-suites", settings(deadline=None))
        settings.load_profile("framehook-sot-suites")

    def pytest_collection_modifyitems(self, items: list[Any]) -> None:
        if self.skip:
            items[:] = [item for item in items if item.nodeid not in self.skip]

    def pytest_runtest_logstart(self, nodeid: str) -> None:
        self.emit(event="start", test=nodeid)
        if self.translator is not None:
            self.translator.current = nodeid
        if self.timeout:
            # To a file of its own: pytest captures the test's stderr.
            faulthandler.dump_traceback_later(self.timeout, exit=True, file=self.watchdog)

    def pytest_pyfunc_call(self, pyfuncitem: Any) -> Optional[bool]:
        """Calls the test function translated (sot mode), with the fixture values pytest
        computed eagerly; coroutine tests are left to their plugins."""
        function = pyfuncitem.obj
        if self.translator is None or inspect.iscoroutinefunction(function) \
                or inspect.isasyncgenfunction(function):
            return None
        names = pyfuncitem._fixtureinfo.argnames
        arguments = {name: pyfuncitem.funcargs[name] for name in names}
        self.translator.call(function, **arguments)
        return True

    def pytest_runtest_makereport(self, item: Any, call: Any) -> None:
        if call.excinfo is not None and item.nodeid not in self.errors:
            excinfo = call.excinfo
            self.errors[item.nodeid] = f"{excinfo.typename}: {first_line(excinfo.value)}"

    def pytest_runtest_logreport(self, report: Any) -> None:
        self.reports.setdefault(report.nodeid, []).append(report)

    def pytest_runtest_logfinish(self, nodeid: str) -> None:
        if self.timeout:
            faulthandler.cancel_dump_traceback_later()
        reports = self.reports.pop(nodeid, [])
        fields: dict[str, Any] = {"event": "result", "test": nodeid, "outcome": outcome_of(reports),
                                  "seconds": round(sum(r.duration for r in reports), 6)}
        error = self.errors.pop(nodeid, None)
        if error and fields["outcome"] in ("failed", "error"):
            fields["error"] = error
        if self.translator is not None:
            fields["sot"] = self.translator.stats.pop(nodeid, None)
            self.translator.current = None
        self.emit(**fields)


def outcome_of(reports: list[Any]) -> str:
    """One outcome from a test's setup, call and teardown reports: passed, failed, error
    (setup or teardown failed), skipped, xfail or xpass."""
    outcome = "passed"
    for report in reports:
        xfail = hasattr(report, "wasxfail")
        if report.when == "call":
            if xfail:
                outcome = "xfail" if report.skipped else "xpass" if report.passed else "failed"
            elif report.failed:
                outcome = "failed"
            elif report.skipped:
                outcome = "skipped"
        elif report.failed:
            return "error"
        elif report.skipped:
            return "xfail" if xfail else "skipped"
    return outcome


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=("eager", "sot"), required=True)
    parser.add_argument("--trace", default="", help="comma-separated modules to trace (sot mode)")
    parser.add_argument("--events", required=True, help="JSON-lines file, appended to")
    parser.add_argument("--skip", help="file of test ids already run (one a line): not run again")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per test before the watchdog fires")
    parser.add_argument("pytest_args", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    pytest_args = args.pytest_args[1:] if args.pytest_args[:1] == ["--"] else args.pytest_args
    skip: set[str] = set()
    if args.skip:
        with open(args.skip, encoding="utf-8") as lines:
            skip = {line.rstrip("\n") for line in lines if line.strip()}
    faulthandler.enable()
    import pytest

    translator = None
    if args.mode == "sot":
        translator = Translator(tuple(name for name in args.trace.split(",") if name))
        translator.patch_unittest()
    with open(args.events, "a", encoding="utf-8") as events:
        recorder = Recorder(events, translator, skip, args.timeout)
        status = pytest.main(["-p", "no:cacheprovider", "-q", "--no-header", "-p", "no:randomly", *pytest_args],
                             plugins=[recorder])
        recorder.emit(event="exit", status=int(status))
    return 0


if __name__ == "__main__":
    sys.exit(main())
