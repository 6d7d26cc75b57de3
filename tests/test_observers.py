"""Observers: call/return/exception/yield/resume events with the code that ran."""

import asyncio
import sys
import threading

import pytest

import framehook
from conftest import HOOKS_GENERATORS, renamed, replace_code, with_extra_local


class Recorder:
    """An observer keeping (event, code name, original) for the codes it is told to watch."""

    def __init__(self, *codes):
        self.codes = set(codes)
        self.events = []

    def __call__(self, event, code, original):
        if code in self.codes or original in self.codes:
            self.events.append((event, code, original))

    def names(self):
        return [(event, code.co_name) for event, code, _ in self.events]


def add(x):
    return x + 1


def fails():
    raise KeyError("boom")


def counter(n):
    for i in range(n):
        yield i


def test_call_and_return_carry_the_running_code():
    recorder = Recorder(add.__code__)
    with framehook.frame_hook(None, observer=recorder) as handle:
        assert add(1) == 2
        assert handle.observes and handle.hook is None and handle.observer is recorder
    assert recorder.events == [("call", add.__code__, add.__code__), ("return", add.__code__, add.__code__)]


def test_exception_event_and_the_exception_still_propagates():
    recorder = Recorder(fails.__code__)
    with framehook.frame_hook(None, observer=recorder):
        with pytest.raises(KeyError, match="boom"):
            fails()
    assert recorder.names() == [("call", "fails"), ("exception", "fails")]


def test_replaced_code_is_reported_with_its_original():
    replacement = renamed(with_extra_local(add.__code__), add.__code__)
    recorder = Recorder(add.__code__)
    framehook.add_frame_hook(replace_code(add.__code__, replacement))
    framehook.add_frame_hook(None, observer=recorder)
    assert add(41) == 42
    assert recorder.events == [("call", replacement, add.__code__), ("return", replacement, add.__code__)]


def test_generator_yields_and_resumes():
    recorder = Recorder(counter.__code__)
    with framehook.frame_hook(None, observer=recorder):
        assert list(counter(2)) == [0, 1]
    events = recorder.names()
    # 3.11+: the call creating the generator is a frame of its own; 3.9/3.10
    # create generators without a frame, so their first run is the call.
    if HOOKS_GENERATORS:
        assert events[:2] == [("call", "counter"), ("return", "counter")]
        events = events[2:]
        first = "resume"
    else:
        first = "call"
    assert events == [
        (first, "counter"), ("yield", "counter"),
        ("resume", "counter"), ("yield", "counter"),
        ("resume", "counter"), ("return", "counter"),
    ]
    # Resumed frames were not handed to hooks: their original is not known there.
    assert all(original is None for event, _, original in recorder.events if event in ("resume", "yield"))


def test_generator_closed_and_thrown_into():
    recorder = Recorder(counter.__code__)
    with framehook.frame_hook(None, observer=recorder):
        generator = counter(5)
        next(generator)
        with pytest.raises(ValueError):
            generator.throw(ValueError("in"))
    tail = recorder.names()[-2:]
    assert tail == [("resume", "counter"), ("exception", "counter")]


def test_coroutine_events():
    async def leaf():
        await asyncio.sleep(0)
        return 7

    recorder = Recorder(leaf.__code__)
    with framehook.frame_hook(None, observer=recorder):
        assert asyncio.run(leaf()) == 7
    events = [event for event, _ in recorder.names()]
    assert events.count("yield") == 1
    assert events[-1] == "return"


def test_observer_exceptions_go_to_unraisablehook_and_change_nothing():
    seen = []
    previous = sys.unraisablehook
    sys.unraisablehook = seen.append

    def broken(event, code, original):
        if code is add.__code__:
            raise RuntimeError("observer bug")

    try:
        with framehook.frame_hook(None, observer=broken, name="broken"):
            assert add(1) == 2
    finally:
        sys.unraisablehook = previous
    assert len(seen) == 2  # call and return
    assert isinstance(seen[0].exc_value, RuntimeError)
    assert "broken" in str(seen[0].object)


def test_observer_sees_a_clean_state_during_an_exception_exit():
    states = []

    def check(event, code, original):
        if code is fails.__code__:
            states.append(sys.exc_info())

    with framehook.frame_hook(None, observer=check):
        with pytest.raises(KeyError):
            fails()
    assert states == [(None, None, None), (None, None, None)]


def test_frames_started_by_an_observer_are_not_observed():
    recorder = Recorder(add.__code__)

    def calls_add(event, code, original):
        if code is not add.__code__:
            add(0)
        recorder(event, code, original)

    with framehook.frame_hook(None, observer=calls_add):
        counter_total = sum(counter(3))
    assert counter_total == 3
    assert recorder.events == []


def test_disabled_and_reenabled_observer():
    recorder = Recorder(add.__code__)
    handle = framehook.add_frame_hook(None, observer=recorder)
    handle.enabled = False
    add(1)
    assert recorder.events == []
    handle.enabled = True
    add(1)
    assert len(recorder.events) == 2


def test_hook_and_observer_together_and_removal_by_observer_callable():
    recorder = Recorder(add.__code__)
    hook = replace_code(add.__code__, None)
    framehook.add_frame_hook(hook, observer=recorder, name="both")
    add(1)
    assert hook.calls >= 1 and len(recorder.events) == 2
    framehook.remove_frame_hook(recorder)
    assert framehook.frame_hooks() == []


def test_observe_only_hook_needs_something_to_call():
    with pytest.raises(TypeError, match="needs a hook, an observer, or both"):
        framehook.add_frame_hook(None)
    with pytest.raises(TypeError, match="observer must be callable"):
        framehook.add_frame_hook(None, observer=42)


def test_observers_pair_every_call_on_threads():
    counts = {}
    lock = threading.Lock()

    def tally(event, code, original):
        if code is add.__code__:
            with lock:
                counts[event] = counts.get(event, 0) + 1

    def work():
        for i in range(2000):
            assert add(i) == i + 1

    with framehook.frame_hook(None, observer=tally):
        threads = [threading.Thread(target=work) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert counts == {"call": 8000, "return": 8000}
