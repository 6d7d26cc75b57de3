"""framehook in sub-interpreters (3.12+): isolated ones with their own GIL and legacy ones.

Each sub-interpreter has its own hooks, logging and state; the main interpreter's hooks
never see a sub's frames nor the reverse; interpreters may hook in parallel and be
destroyed with hooks registered; ``framehook.interpreters`` manages a sub's hooks from
outside. The version's interpreters module is used through tests/subinterpreters.py.

Fast by default (5 to 25 seconds per interpreter, the debug build the slowest).
``FRAMEHOOK_FULL=1`` gives the parallel, create/destroy and leak tests 5 to 20 times the
rounds (about a minute); the matrix passes it to the host's interpreters but not into
the sid root of 3.14/3.14d, where pytest must be run directly with it.
"""

from __future__ import annotations

import gc
import importlib
import json
import logging
import os
import re
import subprocess
import sys
import textwrap
import threading
import time

import pytest

import framehook
import framehook.interpreters as fi
import subinterp_hooks
import subinterpreters as si
from subinterpreters import Interp

FULL = os.environ.get("FRAMEHOOK_FULL") == "1"
ROUNDS = 20000 if FULL else 1000  # add/remove rounds per interpreter, in parallel
CYCLES = 700 if FULL else 70  # interpreters created and destroyed, each with hooks (more than 64)

needs_subinterpreters = pytest.mark.skipif(not si.SUPPORTED, reason=si.REASON)
both_kinds = pytest.mark.parametrize("isolated", [True, False], ids=["isolated", "legacy"])


@pytest.fixture
def sub(request):
    """A sub-interpreter: isolated (own GIL) unless the test is parametrized with isolated=False."""
    callspec = getattr(request.node, "callspec", None)
    isolated = callspec.params.get("isolated", True) if callspec else True
    with Interp(isolated=isolated) as interp:
        yield interp


def in_main(code: str):
    """Runs `code` in the main interpreter the way Interp.run runs it in a sub: what it
    passes to report() comes back through JSON."""
    reported = []
    namespace = {"__name__": "__main__", "report": lambda value: reported.append(json.dumps(value))}
    exec(textwrap.dedent(code), namespace)
    return json.loads(reported[-1]) if reported else None


def same_everywhere(sub: Interp, code: str):
    """`code`'s report in the sub, checked equal to its report in the main interpreter."""
    there = sub.run(code)
    here = in_main(code)
    assert there == here, f"sub-interpreter: {there!r}\nmain interpreter: {here!r}"
    return there


class Records(logging.Handler):
    """Collects the records of the "framehook" logger."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


# ----------------------------------------------------------- the API in a sub-interpreter


@needs_subinterpreters
@both_kinds
def test_hooks_see_only_their_own_interpreters_frames(sub, isolated):
    main_seen = []

    def main_hook(frame):
        if frame.f_code.co_name.startswith("work_"):
            main_seen.append(frame.f_code.co_name)

    def work_main():
        return "main"

    with framehook.frame_hook(main_hook):
        sub.exec("""
            import framehook
            seen = []

            def hook(frame):
                if frame.f_code.co_name.startswith("work_"):
                    seen.append(frame.f_code.co_name)

            def work_sub():
                return "sub"

            handle = framehook.add_frame_hook(hook, name="sub-hook")
            assert work_sub() == "sub"
        """)
        assert work_main() == "main"
        result = sub.run("""
            work_sub()
            report({"seen": seen, "hooks": [h.name for h in framehook.frame_hooks()],
                    "installed": framehook._native._is_installed()})
        """)
        assert work_main() == "main"
    assert result == {"seen": ["work_sub", "work_sub"], "hooks": ["sub-hook"], "installed": True}
    assert main_seen == ["work_main", "work_main"]
    # The main interpreter's last hook went: its eval function only.
    assert not framehook._native._is_installed()
    assert sub.run("""
        work_sub()
        framehook.remove_frame_hook(handle)
        work_sub()
        report({"seen": seen, "installed": framehook._native._is_installed()})
    """) == {"seen": ["work_sub"] * 3, "installed": False}


@needs_subinterpreters
@both_kinds
def test_replacement_and_cache_as_in_main(sub, isolated):
    result = same_everywhere(sub, """
        import framehook
        asked = {"cached": 0, "uncached": 0}

        def work_a(x):
            return ["a", x]

        def work_b(x):
            return ["b", x]

        def asking(label):
            def hook(frame):
                if frame.original_code is work_a.__code__:
                    asked[label] += 1
                    return work_b.__code__
                return None
            return hook

        results = {}
        for label, cache in (("cached", True), ("uncached", False)):
            with framehook.frame_hook(asking(label), cache=cache, name=label):
                results[label] = [work_a(i) for i in range(4)]
        results["after"] = work_a(9)
        report({"asked": asked, "results": results})
    """)
    assert result == {
        "asked": {"cached": 1, "uncached": 4},
        "results": {"cached": [["b", i] for i in range(4)], "uncached": [["b", i] for i in range(4)],
                    "after": ["a", 9]},
    }


@needs_subinterpreters
@both_kinds
def test_on_error_log_and_raise_as_in_main(sub, isolated):
    result = same_everywhere(sub, """
        import logging
        import framehook

        records = []

        class Collect(logging.Handler):
            def emit(self, record):
                if record.exc_info:
                    records.append([record.name, record.levelname, record.exc_info[0].__name__,
                                    str(record.exc_info[1])])

        handler = Collect()
        logging.getLogger("framehook").addHandler(handler)
        ran = []

        def work_sub():
            ran.append(1)
            return "ran"

        def broken(frame):
            if frame.f_code.co_name == "work_sub":
                raise RuntimeError("hook failed")

        out = {}
        try:
            with framehook.frame_hook(broken, on_error="log"):
                out["log"] = work_sub()
            with framehook.frame_hook(broken):
                try:
                    work_sub()
                except RuntimeError as error:
                    out["raise"] = str(error)
        finally:
            logging.getLogger("framehook").removeHandler(handler)
        report({"out": out, "ran": len(ran), "records": records})
    """)
    assert result["out"] == {"log": "ran", "raise": "hook failed"}
    assert result["ran"] == 1  # with on_error="raise" the body did not run
    assert len(result["records"]) == 1
    name, level, kind, message = result["records"][0]
    assert name.startswith("framehook") and level == "ERROR"
    assert (kind, message) == ("RuntimeError", "hook failed")


@needs_subinterpreters
@both_kinds
def test_observer_events_as_in_main(sub, isolated):
    events = same_everywhere(sub, """
        import framehook
        events = []

        def observer(event, code, original_code):
            if code.co_name.startswith("work_"):
                events.append([event, code.co_name, original_code and original_code.co_name])

        def work_sub():
            return 1

        def work_generator():
            yield 1
            yield 2

        with framehook.frame_hook(None, observer=observer, name="observer"):
            work_sub()
            assert list(work_generator()) == [1, 2]
        work_sub()
        report(events)
    """)
    # The generator function's call creates the generator; its runs are resumes.
    assert events == [
        ["call", "work_sub", "work_sub"], ["return", "work_sub", "work_sub"],
        ["call", "work_generator", "work_generator"], ["return", "work_generator", "work_generator"],
        ["resume", "work_generator", None], ["yield", "work_generator", None],
        ["resume", "work_generator", None], ["yield", "work_generator", None],
        ["resume", "work_generator", None], ["return", "work_generator", None],
    ]


@needs_subinterpreters
@both_kinds
def test_order_enabled_disabled_and_removal_as_in_main(sub, isolated):
    out = same_everywhere(sub, """
        import framehook
        seen = []

        def first(frame):
            if frame.f_code.co_name == "work_sub":
                seen.append("first")

        def second(frame):
            if frame.f_code.co_name == "work_sub":
                seen.append("second")

        def work_sub():
            return 1

        def step(label):
            work_sub()
            out[label] = seen[:]
            del seen[:]

        def names():
            return [handle.name for handle in framehook.frame_hooks()]

        out = {}
        a = framehook.add_frame_hook(first, name="first")
        framehook.add_frame_hook(second, name="second")
        out["names"] = names()
        step("both")
        a.enabled = False
        step("first off")
        a.enabled = True
        with framehook.disabled():
            step("disabled()")
        framehook.remove_frame_hook(first)  # by the callable
        out["removed"] = names()
        try:
            framehook.remove_frame_hook(a)
        except ValueError:
            out["twice"] = "ValueError"
        with framehook.frame_hook(first, name="with") as handle:
            out["inside with"] = names()
            step("with")
        out["after with"] = [names(), handle.registered]
        framehook.clear_frame_hooks()
        out["cleared"] = [names(), framehook._native._is_installed()]
        step("nothing")
        report(out)
    """)
    assert out == {
        "names": ["first", "second"],
        "both": ["first", "second"],
        "first off": ["second"],
        "disabled()": [],
        "removed": ["second"],
        "twice": "ValueError",
        "inside with": ["second", "with"],
        "with": ["second", "first"],
        "after with": [["second"], False],
        "cleared": [[], False],
        "nothing": [],
    }


# ------------------------------------------------------------------ interpreters in parallel

PARALLEL = """
    import framehook

    def work_{index}(x):
        return x + {index}

    seen = {{}}

    def hook(frame):
        name = frame.f_code.co_name
        if name.startswith("work_"):
            seen[name] = seen.get(name, 0) + 1

    wrong = 0
    for round in range({rounds}):
        handle = framehook.add_frame_hook(hook, cache=bool(round & 1), name="h{index}")
        for x in range(3):
            wrong += work_{index}(x) != x + {index}
        framehook.remove_frame_hook(handle)
        work_{index}(0)  # not hooked: no hook left
    report({{"seen": seen, "wrong": wrong, "hooks": len(framehook.frame_hooks()),
             "installed": framehook._native._is_installed()}})
"""


@needs_subinterpreters
def test_interpreters_hooking_in_parallel_each_see_their_own_frames():
    """Four own-GIL interpreters (and a legacy one from 3.13), each in its thread, adding
    and removing hooks while the main interpreter does the same: each sees exactly its own
    frames. (On 3.12 a legacy interpreter's thread waits for the shared GIL for as long as
    the main thread runs Python code: CPython asks the wrong interpreter to drop it.)"""
    interps = [Interp(isolated=index < 4) for index in range(5 if sys.version_info >= (3, 13) else 4)]
    results: dict[int, object] = {}
    errors: list[BaseException] = []

    def run(index: int, interp: Interp) -> None:
        try:
            results[index] = interp.run(PARALLEL.format(index=index, rounds=ROUNDS))
        except BaseException as error:  # reported below
            errors.append(error)

    main_seen: dict[str, int] = {}

    def main_hook(frame):
        name = frame.f_code.co_name
        if name.startswith("work_"):
            main_seen[name] = main_seen.get(name, 0) + 1

    def work_main(x):
        return x - 1

    threads = [threading.Thread(target=run, args=(index, interp)) for index, interp in enumerate(interps)]
    try:
        for thread in threads:
            thread.start()
        main_rounds = 0
        while any(thread.is_alive() for thread in threads) or main_rounds < ROUNDS:
            with framehook.frame_hook(main_hook, cache=bool(main_rounds & 1)):
                assert work_main(main_rounds) == main_rounds - 1
            main_rounds += 1
        for thread in threads:
            thread.join()
    finally:
        for interp in interps:
            interp.close()
    assert errors == []
    # Asked on every call without cache, once per round (per new hook set) with it.
    asked = ROUNDS // 2 * 3 + ROUNDS // 2
    for index in range(len(interps)):
        assert results[index] == {"seen": {f"work_{index}": asked}, "wrong": 0, "hooks": 0, "installed": False}
    assert main_seen == {"work_main": main_rounds}


# --------------------------------------------------------- destroyed with hooks registered


@needs_subinterpreters
def test_interpreters_destroyed_with_hooks_then_new_ones_start_clean():
    """Each interpreter is destroyed with hooks registered and cache=True decisions stored
    (a replacement among them); the next one, often at a reused address, starts with no
    hooks, and its own hooks run. Over 64 of them: a slot leak used to stop there."""
    ids = set()
    for cycle in range(CYCLES):
        with Interp(isolated=cycle % 4 != 3) as interp:
            assert interp.id not in ids
            ids.add(interp.id)
            assert fi.frame_hooks(interp.handle) == []
            result = interp.run("""
                import framehook
                before = [handle.name for handle in framehook.frame_hooks()]
                asked = []

                def work_original():
                    return "original"

                def work_replacement():
                    return "replaced"

                def hook(frame):
                    if frame.original_code is work_original.__code__:
                        asked.append(1)
                        return work_replacement.__code__

                framehook.add_frame_hook(hook, cache=True, name="replacer")
                framehook.add_frame_hook(lambda frame: None, cache=True, name="decliner")
                out = [work_original() for _ in range(3)]
                report({"before": before, "out": out, "asked": len(asked)})
            """)
            assert result == {"before": [], "out": ["replaced"] * 3, "asked": 1}
            if cycle % 8 == 0:
                fi.add_frame_hook(interp.handle, "subinterp_hooks:collect")
                assert fi.frame_hooks(interp.handle) == ["replacer", "decliner", "collect"]
        assert not si.exists(interp.id)
    # The main interpreter is unaffected, and its hooks work.
    assert framehook.frame_hooks() == []
    with framehook.frame_hook(lambda frame: None, cache=True, name="main"):
        assert [handle.name for handle in framehook.frame_hooks()] == ["main"]


@needs_subinterpreters
def test_interpreter_destroyed_while_hooks_are_mid_use_in_a_generator():
    """A replaced generator left suspended, a hook registered, an observer observing:
    destroying the interpreter releases them without a crash."""
    with Interp(isolated=True) as interp:
        assert interp.run("""
            import framehook

            def work_gen():
                yield "original"

            def work_gen_replacement():
                yield "replaced"
                yield "again"

            def hook(frame):
                if frame.original_code is work_gen.__code__:
                    return work_gen_replacement.__code__

            framehook.add_frame_hook(hook, name="gen", observer=lambda event, code, original: None)
            suspended = work_gen()
            report(next(suspended))
        """) == "replaced"
    assert framehook.frame_hooks() == []


# ------------------------------------------------------------------------------- logging


@needs_subinterpreters
@both_kinds
def test_logging_goes_to_the_hooking_interpreters_logger(isolated):
    logger = logging.getLogger("framehook")
    main_records = Records()
    level = logger.level
    logger.setLevel(logging.DEBUG)
    logger.addHandler(main_records)
    try:
        with Interp(isolated=isolated) as interp:
            sub_records = interp.run("""
                import logging
                import framehook

                records = []

                class Collect(logging.Handler):
                    def emit(self, record):
                        records.append([record.name, record.levelname, record.getMessage(),
                                        record.exc_info[0].__name__ if record.exc_info else None])

                logger = logging.getLogger("framehook")
                logger.setLevel(logging.DEBUG)
                logger.addHandler(Collect())

                def work_sub():
                    return "ran"

                def broken(frame):
                    if frame.f_code.co_name == "work_sub":
                        raise RuntimeError("sub's hook failed")

                with framehook.frame_hook(broken, on_error="log"):
                    assert work_sub() == "ran"
                report(records)
            """)
            assert main_records.records == []
        # The sub's hook error, with its exception, and its own install/remove messages.
        assert [record[:2] for record in sub_records] == [["framehook", "DEBUG"], ["framehook", "ERROR"],
                                                          ["framehook", "DEBUG"]]
        installed, failed, removed = sub_records
        assert installed[2] == f"eval function installed in interpreter {interp.id}"
        assert failed[2].startswith("frame hook 'broken' failed on <code object work_sub")
        assert failed[3] == "RuntimeError"
        assert removed[2] == f"eval function removed from interpreter {interp.id}"
        assert main_records.records == []

        # After the sub is gone, the main interpreter's hooks and logging still work.
        def work_main():
            return "main ran"

        def broken_main(frame):
            if frame.f_code is work_main.__code__:
                raise RuntimeError("main's hook failed")

        with framehook.frame_hook(broken_main, on_error="log", name="broken_main"):
            assert work_main() == "main ran"
    finally:
        logger.removeHandler(main_records)
        logger.setLevel(level)
    messages = [record.getMessage() for record in main_records.records]
    assert len(messages) == 3 and "eval function installed" in messages[0] and "removed" in messages[2]
    assert messages[1].startswith("frame hook 'broken_main' failed")
    assert str(main_records.records[1].exc_info[1]) == "main's hook failed"


ERROR_IN_A_SUB_THEN_MAIN = """
import sys
sys.path.insert(0, {here!r})
from subinterpreters import Interp
import framehook.sot

with Interp(isolated=True) as interp:
    interp.exec('''
        import framehook
        try:
            framehook.remove_frame_hook(42)
        except ValueError:
            pass
    ''')
print("destroyed", flush=True)
framehook.sot.eval_frame_skip_file_prefix(())  # a PyO3 function of the main interpreter
print("main works", flush=True)
"""


@needs_subinterpreters
def test_an_error_raised_by_framehook_in_a_subinterpreter_leaves_main_working():
    """framehook's ValueError raised (and caught) in an isolated interpreter, which is then
    destroyed; then the main interpreter calls a PyO3 function of framehook. In a child
    process: when this fails, the rest of the run would crash at a later PyO3 call."""
    done = subprocess.run([sys.executable, "-c", ERROR_IN_A_SUB_THEN_MAIN.format(here=si.HERE)],
                          capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout.split()) == (0, ["destroyed", "main", "works"]), done.stderr[-3000:]


def test_a_raising_log_handler_does_not_break_add_frame_hook(monkeypatch):
    """Every interpreter version: the handler's exception goes to sys.unraisablehook, and
    the hook is registered and runs."""

    class Raising(logging.Handler):
        def emit(self, record):
            raise RuntimeError("the log handler broke")

    unraisable = []
    monkeypatch.setattr(sys, "unraisablehook", unraisable.append)
    logger = logging.getLogger("framehook")
    level = logger.level
    handler = Raising(logging.DEBUG)
    logger.setLevel(logging.DEBUG)
    logger.addHandler(handler)
    calls = []

    def work():
        return "ran"

    def hook(frame):
        if frame.f_code is work.__code__:
            calls.append(1)

    try:
        handle = framehook.add_frame_hook(hook, name="despite-logging")
        assert handle.registered and framehook.frame_hooks() == [handle]
        assert work() == "ran" and calls == [1]
        framehook.remove_frame_hook(handle)
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
    assert not handle.registered
    broke = [u for u in unraisable if isinstance(u.exc_value, RuntimeError)]
    assert broke and all(str(u.exc_value) == "the log handler broke" for u in broke)


# ------------------------------------------------------------------ framehook.interpreters


@needs_subinterpreters
@both_kinds
def test_interpreters_module_adds_lists_removes_and_clears(sub, isolated):
    target = sub.handle  # what the version hands out: Interpreter, InterpreterID or int
    assert fi.frame_hooks(target) == []
    first = fi.add_frame_hook(target, "subinterp_hooks:collect")
    second = fi.add_frame_hook(target, "subinterp_hooks:Holder.nested", name="nested", cache=True)
    third = fi.add_frame_hook(target, None, observer="subinterp_hooks:observe", name="observer")
    assert all(isinstance(token, int) for token in (first, second, third))
    assert len({first, second, third}) == 3
    assert fi.frame_hooks(target) == ["collect", "nested", "observer"]
    assert fi.frame_hooks(sub.id) == fi.frame_hooks(target)  # the ID works as well
    assert framehook.frame_hooks() == []  # nothing in the main interpreter

    work = """
        import subinterp_hooks

        def work_sub():
            return 1

        work_sub()
        work_sub()
        report({"seen": subinterp_hooks.seen, "events": subinterp_hooks.events})
        del subinterp_hooks.seen[:], subinterp_hooks.events[:]
    """
    # collect on each call; nested (cached) on the first only.
    assert sub.run(work) == {"seen": ["work_sub"] * 3, "events": [["call", "work_sub"], ["return", "work_sub"]] * 2}
    assert subinterp_hooks.seen == [] and subinterp_hooks.events == []  # the main interpreter's copy

    fi.remove_frame_hook(target, second)
    assert fi.frame_hooks(target) == ["collect", "observer"]
    with pytest.raises(ValueError, match=f"interpreter {sub.id}: no hook with token {second}"):
        fi.remove_frame_hook(target, second)
    assert sub.run(work)["seen"] == ["work_sub"] * 2

    sub.exec("import framehook; framehook.add_frame_hook(lambda frame: None, name='added inside')")
    assert fi.frame_hooks(target) == ["collect", "observer", "added inside"]
    fi.clear_frame_hooks(target)
    assert fi.frame_hooks(target) == []
    with pytest.raises(ValueError, match="no hook with token"):
        fi.remove_frame_hook(target, first)
    assert sub.run(work) == {"seen": [], "events": []}
    assert sub.run("report(framehook._native._is_installed())") is False


@needs_subinterpreters
@both_kinds
def test_interpreters_module_on_error(sub, isolated):
    fi.add_frame_hook(sub.handle, "subinterp_hooks:raising", on_error="log")
    assert sub.run("""
        def work_sub():
            return "ran"

        report(work_sub())
    """) == "ran"
    fi.clear_frame_hooks(sub.handle)
    fi.add_frame_hook(sub.handle, "subinterp_hooks:raising")  # on_error="raise"
    with pytest.raises(si.Failed) as failed:
        sub.exec("work_sub()")
    assert failed.value.kind == "ValueError" and "refuses work_sub" in failed.value.message


@needs_subinterpreters
def test_interpreters_module_rejects_bad_input(sub):
    target = sub.handle
    for bad in ("1", None, 1.5, True, object()):
        with pytest.raises(TypeError, match="expected an interpreter"):
            fi.frame_hooks(bad)
    with pytest.raises(ValueError, match="not negative"):
        fi.frame_hooks(-1)
    with pytest.raises(TypeError, match="hook must be a 'module:attribute' string"):
        fi.add_frame_hook(target, subinterp_hooks.collect)
    for malformed in ("subinterp_hooks.collect", "subinterp_hooks:", ":collect", "a b:c", "m:x..y", "m:1x"):
        with pytest.raises(ValueError, match="is not a 'package.module:attribute' string"):
            fi.add_frame_hook(target, malformed)
    with pytest.raises(TypeError, match="observer must be"):
        fi.add_frame_hook(target, "subinterp_hooks:collect", observer=subinterp_hooks.observe)
    with pytest.raises(TypeError, match="needs a hook, an observer, or both"):
        fi.add_frame_hook(target, None)
    with pytest.raises(ValueError, match="on_error"):
        fi.add_frame_hook(target, "subinterp_hooks:collect", on_error="ignore")
    with pytest.raises(TypeError, match="cache must be a bool"):
        fi.add_frame_hook(target, "subinterp_hooks:collect", cache=1)
    with pytest.raises(TypeError, match="name must be a str"):
        fi.add_frame_hook(target, "subinterp_hooks:collect", name=1)
    with pytest.raises(TypeError, match="token must be an int"):
        fi.remove_frame_hook(target, "1")

    # Errors in the target: its exception's type, naming the spec and the interpreter.
    where = f"interpreter {sub.id}: "
    with pytest.raises(ModuleNotFoundError, match=re.escape(where + "hook 'no_such_module_here:hook': cannot import")):
        fi.add_frame_hook(target, "no_such_module_here:hook")
    with pytest.raises(AttributeError, match=re.escape(where + "hook 'subinterp_hooks:missing'")):
        fi.add_frame_hook(target, "subinterp_hooks:missing")
    with pytest.raises(AttributeError, match=re.escape("observer 'subinterp_hooks:Holder.missing'")):
        fi.add_frame_hook(target, "subinterp_hooks:collect", observer="subinterp_hooks:Holder.missing")
    with pytest.raises(TypeError, match=re.escape(where + "hook 'subinterp_hooks:not_callable' is not callable")):
        fi.add_frame_hook(target, "subinterp_hooks:not_callable")
    with pytest.raises(ValueError, match=re.escape(where + "no hook with token 12345")):
        fi.remove_frame_hook(target, 12345)
    assert fi.frame_hooks(target) == []  # nothing was half-added

    # A token belongs to its interpreter.
    token = fi.add_frame_hook(target, "subinterp_hooks:collect")
    with Interp() as other:
        with pytest.raises(ValueError, match="no hook with token"):
            fi.remove_frame_hook(other.handle, token)
        assert fi.frame_hooks(other.handle) == []
    assert fi.frame_hooks(target) == ["collect"]

    # A destroyed interpreter, and one that never was.
    sub.close()
    for call in (lambda: fi.frame_hooks(target), lambda: fi.clear_frame_hooks(target),
                 lambda: fi.add_frame_hook(target, "subinterp_hooks:collect"),
                 lambda: fi.remove_frame_hook(target, token), lambda: fi.frame_hooks(2**40)):
        with pytest.raises(RuntimeError, match="does not exist"):
            call()


@needs_subinterpreters
def test_interpreters_module_on_an_interpreter_busy_in_another_thread(sub):
    """An interpreter runs one script at a time: a clear RuntimeError, and it works after."""
    started, release = si.fresh_key(), si.fresh_key()
    thread = threading.Thread(target=sub.exec, args=(f"""
        import time
        import framehook
        framehook._native._post({started}, "started")
        deadline = time.monotonic() + 30
        while framehook._native._take({release}) is None and time.monotonic() < deadline:
            time.sleep(0.001)
    """,))
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while si.take(started) is None:
            assert time.monotonic() < deadline
            time.sleep(0.001)
        with pytest.raises(RuntimeError, match=f"interpreter {sub.id}"):
            fi.frame_hooks(sub.handle)
    finally:
        framehook._native._post(release, "go")
        thread.join()
    fi.add_frame_hook(sub.handle, "subinterp_hooks:collect")
    assert fi.frame_hooks(sub.handle) == ["collect"]


@needs_subinterpreters
@both_kinds
def test_interpreters_module_reports_a_script_that_failed_before_answering(sub, isolated):
    """framehook not importable in the target: the script itself fails, reported the way
    the version reports a failed script, and arrives as the same exception type."""
    sub.exec("import sys; sys.modules['framehook'] = None")
    with pytest.raises(ModuleNotFoundError, match=f"interpreter {sub.id}: import of framehook halted"):
        fi.frame_hooks(sub.handle)
    sub.exec("del sys.modules['framehook']")
    assert fi.frame_hooks(sub.handle) == []


@needs_subinterpreters
def test_interpreters_module_from_threads_at_once():
    """Threads of the main interpreter each manage one interpreter's hooks at the same
    time: every reply reaches its own caller."""
    rounds = 1000 if FULL else 100
    interps = [Interp(isolated=index % 2 == 0) for index in range(4)]
    failures: list[BaseException] = []

    def manage(index: int, interp: Interp) -> None:
        try:
            for round in range(rounds):
                token = fi.add_frame_hook(interp.handle, "subinterp_hooks:collect", name=f"i{index}r{round}")
                assert fi.frame_hooks(interp.handle) == [f"i{index}r{round}"]
                fi.remove_frame_hook(interp.handle, token)
        except BaseException as error:  # reported below
            failures.append(error)

    threads = [threading.Thread(target=manage, args=(index, interp)) for index, interp in enumerate(interps)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert failures == []
        assert [fi.frame_hooks(interp.handle) for interp in interps] == [[]] * len(interps)
    finally:
        for interp in interps:
            interp.close()


@needs_subinterpreters
def test_interpreters_module_on_the_calling_interpreter():
    token = fi.add_frame_hook(si.main_interpreter_id(), "subinterp_hooks:collect", name="here")
    assert [handle.name for handle in framehook.frame_hooks()] == ["here"]
    assert fi.frame_hooks(si.main_interpreter_id()) == ["here"]

    def work_main():
        return 1

    try:
        work_main()
        assert subinterp_hooks.seen == ["work_main"]
    finally:
        del subinterp_hooks.seen[:]
    fi.remove_frame_hook(si.main_interpreter_id(), token)
    assert framehook.frame_hooks() == []


@needs_subinterpreters
def test_interpreters_module_from_one_subinterpreter_to_another():
    with Interp() as caller, Interp() as target:
        names = caller.run(f"""
            import framehook.interpreters as fi
            token = fi.add_frame_hook({target.id}, "subinterp_hooks:collect", name="from a sub")
            names = fi.frame_hooks({target.id})
            fi.remove_frame_hook({target.id}, token)
            report([names, fi.frame_hooks({target.id})])
        """)
    assert names == [["from a sub"], []]


@pytest.mark.skipif(si.SUPPORTED, reason="the version check of Python < 3.12")
def test_interpreters_module_needs_312():
    for call in (lambda: fi.frame_hooks(1), lambda: fi.add_frame_hook(1, "subinterp_hooks:collect"),
                 lambda: fi.remove_frame_hook(1, 1), lambda: fi.clear_frame_hooks(1)):
        with pytest.raises(RuntimeError, match=r"needs Python 3\.12 or newer"):
            call()


# ----------------------------------------------------------------- PyO3-based extensions


def _smoke_native_hook_example():
    import native_hook_example

    def source(x):
        return x + 1

    def target(x):
        return x * 10

    handle = native_hook_example.redirect(source, target)
    try:
        assert source(4) == 40
    finally:
        framehook.remove_frame_hook(handle)
    assert source(4) == 5


def _smoke_hookprof():
    import hookprof

    def work_profiled():
        return sum(range(10))

    with hookprof.Profiler() as profiler:
        work_profiled()
    assert any(row.name.endswith("work_profiled") and row.ncalls == 1 for row in profiler.stats())


@needs_subinterpreters
@pytest.mark.parametrize("module, smoke", [("hookprof", _smoke_hookprof),
                                            ("native_hook_example", _smoke_native_hook_example)])
def test_pyo3_extensions_refuse_isolated_subinterpreters_and_keep_working_in_main(module, smoke):
    importlib.import_module(module)
    with Interp(isolated=True) as interp:
        refused = interp.run(f"""
            try:
                import {module}
            except ImportError as error:
                report(str(error))
        """)
        assert refused is not None, f"{module} imported in an isolated sub-interpreter"
        assert re.search("sub-?interpreters?", refused, re.I), refused
        # framehook itself still imports there.
        assert interp.run("import framehook; report(framehook.frame_hooks())") == []
    smoke()


@pytest.mark.skipif(sys.version_info < (3, 13), reason="ctypes loads in isolated sub-interpreters from 3.13 on")
def test_the_c_api_registers_native_hooks_in_the_calling_interpreter():
    # The C API as a C extension uses it, through ctypes (PYFUNCTYPE: called attached).
    # The hook function is CPython's Py_IsFinalizing: an int function returning 0 while
    # the interpreter runs, which C's calling convention lets stand for a declining hook.
    code = """
        import ctypes
        import framehook

        class Spec(ctypes.Structure):
            _fields_ = [("size", ctypes.c_size_t), ("name", ctypes.c_char_p), ("hook", ctypes.c_void_p),
                        ("observe", ctypes.c_void_p), ("user_data", ctypes.c_void_p),
                        ("free_user_data", ctypes.c_void_p), ("cache", ctypes.c_int), ("on_error", ctypes.c_int)]

        class Api(ctypes.Structure):
            _fields_ = [("version", ctypes.c_uint), ("size", ctypes.c_size_t), ("add_hook", ctypes.c_void_p),
                        ("remove_hook", ctypes.c_void_p)]

        capsule_import = ctypes.pythonapi.PyCapsule_Import
        capsule_import.restype, capsule_import.argtypes = ctypes.c_void_p, [ctypes.c_char_p, ctypes.c_int]
        api = Api.from_address(capsule_import(b"framehook._native._C_API", 0))
        add_hook = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.POINTER(Spec))(api.add_hook)
        remove_hook = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object)(api.remove_hook)
        declining = ctypes.cast(ctypes.pythonapi.Py_IsFinalizing, ctypes.c_void_p).value

        def work():
            return 7

        spec = Spec(ctypes.sizeof(Spec), b"native-decliner", declining, None, None, None, 0, 0)
        handle = add_hook(ctypes.byref(spec))
        result = {"handle": [type(handle) is framehook.HookHandle, handle.native, handle.name],
                  "hooks": [hook.name for hook in framehook.frame_hooks()],
                  "installed": framehook._native._is_installed(), "work": work()}
        result["removed"] = remove_hook(handle)
        result["after"] = [[hook.name for hook in framehook.frame_hooks()], framehook._native._is_installed()]
        try:
            add_hook(ctypes.byref(Spec(ctypes.sizeof(Spec), b"empty", None, None, None, None, 0, 0)))
        except ValueError as error:
            result["empty spec"] = str(error)
        report(result)
    """
    with framehook.frame_hook(lambda frame: None, name="main-hook"):
        with Interp(isolated=True) as interp:
            result = interp.run(code)
        assert [hook.name for hook in framehook.frame_hooks()] == ["main-hook"]
    assert result == {
        "handle": [True, True, "native-decliner"],
        "hooks": ["native-decliner"],
        "installed": True,
        "work": 7,
        "removed": 0,
        "after": [[], False],
        "empty spec": 'native hook "empty" has neither a hook nor an observe function',
    }


# --------------------------------------------------------------------------- reference leaks


@needs_subinterpreters
@pytest.mark.skipif(not hasattr(sys, "gettotalrefcount"), reason="sys.gettotalrefcount exists on debug builds only")
def test_no_reference_leaked_per_interpreter_lifetime():
    """Rounds of: create an interpreter, import framehook, add hooks (one through
    framehook.interpreters), run hooked code, remove them but one, destroy it. The
    total reference count (sys.gettotalrefcount(): every interpreter's, and what the
    destroyed ones left) stays flat after a warm-up, as for interpreters that never
    import framehook; measured the way framehook_dev.stress does (gc.collect() before
    each snapshot)."""

    def bare():
        with Interp(isolated=True) as interp:
            interp.run("report(1)")

    def hooked():
        with Interp(isolated=True) as interp:
            token = fi.add_frame_hook(interp.handle, "subinterp_hooks:collect", cache=True)
            interp.run("""
                import framehook

                def work_sub(x):
                    return x

                with framehook.frame_hook(lambda frame: None, observer=lambda *event: None):
                    for x in range(50):
                        work_sub(x)
                # Left registered, with a decision stored, when the interpreter goes.
                framehook.add_frame_hook(lambda frame: None, cache=True)
                work_sub(0)
                report(len(framehook.frame_hooks()))
            """)
            fi.remove_frame_hook(interp.handle, token)

    def drift(step, rounds):
        for _ in range(3):  # warm-up: one-time caches
            step()
        for _ in range(3):
            gc.collect()
        before = sys.gettotalrefcount()
        for _ in range(rounds):
            step()
        for _ in range(3):
            gc.collect()
        return sys.gettotalrefcount() - before

    rounds = 100 if FULL else 20
    baseline = drift(bare, rounds)
    measured = drift(hooked, rounds)
    # One reference kept per round would show as `rounds`.
    assert measured - baseline < rounds // 2, (measured, baseline)
