"""The fast part of the stress command (``python -m framehook_dev.stress``, whose full
run has its own command): short leak and thread runs of the same checks."""

import subprocess
import sys

import pytest

from framehook_dev import stress

# At least ten times the drift limit, so that one leaked reference or object per
# operation would exceed it about tenfold.
OPERATIONS = {"calls": 20 * stress.DRIFT_LIMIT, "cycles": 10 * stress.DRIFT_LIMIT}


def run(check):
    if check == "calls":
        return stress.check_calls(OPERATIONS[check])
    return stress.check_cycles(OPERATIONS[check])


@pytest.fixture(scope="module", params=sorted(OPERATIONS))
def leak_run(request):
    result = run(request.param)
    assert result["measured"] > 9 * stress.DRIFT_LIMIT
    return result


def test_every_call_runs_the_replacement_and_returns_the_right_value(leak_run):
    assert leak_run["wrong"] == 0


def test_no_reference_kept_per_operation(leak_run):
    """References to the hook, the observer, the codes and framehook's types, and
    GC-tracked objects: none may accumulate per call or per add/remove cycle."""
    assert abs(leak_run["held_refs"]) <= stress.DRIFT_LIMIT
    assert abs(leak_run["gc_objects"]) <= stress.DRIFT_LIMIT


@pytest.mark.skipif(stress.MALLOC_IN_USE is None, reason="needs glibc's mallinfo2 to count malloc'd bytes")
def test_no_allocation_kept_per_operation(leak_run):
    """Native memory too (Rust allocates with malloc): a leaked allocation per operation
    (32 bytes at least) would exceed 8 bytes per operation."""
    assert leak_run["malloc_bytes"] < 8 * leak_run["measured"]


@pytest.mark.skipif(not hasattr(sys, "gettotalrefcount"), reason="sys.gettotalrefcount exists on debug builds only")
def test_total_refcount_drift_is_bounded(leak_run):
    assert abs(leak_run["refcount_drift"]) <= stress.DRIFT_LIMIT


def test_threads_calling_while_hooks_change_get_every_result_right():
    result = stress.check_threads(seconds=0.5)
    assert result["errors"] == []
    assert result["wrong_samples"] == [] and result["wrong"] == 0
    # Every caller made each call and every mutator ten changes before the stop.
    assert result["operations"] >= 8 * len(stress.WORKLOADS) and result["mutator_ops"] >= 20


def test_freed_framehook_objects_release_their_type():
    import framehook

    def hook(frame):
        return None

    def hooked():
        pass

    types = (framehook.Frame, framehook.HookHandle, framehook.disabled)
    before = [sys.getrefcount(t) for t in types]
    with framehook.frame_hook(hook):  # a HookHandle
        for _ in range(100):
            hooked()  # a Frame each
            assert len(framehook.frame_hooks()) == 1  # a HookHandle each
    for _ in range(100):
        with framehook.disabled():
            pass
    assert [sys.getrefcount(t) for t in types] == before


@pytest.mark.skipif(sys.version_info < (3, 11), reason="generator frames are passed through unhooked before 3.11")
def test_function_a_replaced_generator_runs_from_is_freed_with_it():
    """framehook gives a replaced generator a copy of its function; free-threaded 3.13
    made such copies immortal once a thread had run (gh-117696), leaking one per call."""
    import gc
    import threading
    import types
    import weakref

    import framehook

    thread = threading.Thread(target=lambda: None)
    thread.start()
    thread.join()
    hook = stress.Replacer()
    replacement = hook.replacements[stress.counting.__code__]
    gc.disable()  # freed by its reference count, not by a collection
    try:
        with framehook.frame_hook(hook):
            steps = stress.counting(3)
            assert next(steps) is replacement
        copies = [weakref.ref(f) for f in gc.get_referrers(replacement) if isinstance(f, types.FunctionType)]
        assert copies
        del steps
        assert [copy() for copy in copies] == [None] * len(copies)
    finally:
        gc.enable()


FIRST_CALLS_IN_THREADS = """
import threading, time
import framehook

framehook.add_frame_hook(lambda frame: None, name="decline", cache=True)
functions, wrong, stop = [], [], threading.Event()

def define():
    index = 0
    while not stop.is_set():
        namespace = {}
        exec(f"def f(x):\\n    return x + {index}\\n", namespace)
        functions.append((namespace["f"], index))
        index += 1
        if len(functions) > 200:
            del functions[:100]

def call():
    while not stop.is_set():
        for function, index in functions[-50:]:
            if function(1) != 1 + index:
                wrong.append(index)

threads = [threading.Thread(target=define)] + [threading.Thread(target=call) for _ in range(6)]
for thread in threads:
    thread.start()
time.sleep(3)
stop.set()
for thread in threads:
    thread.join()
print(len(wrong))
"""


def test_threads_first_calling_the_same_new_functions():
    """Threads racing to hook a code object's first frames: each code gets one
    state (on free-threaded builds a state stored over another freed the first
    while a thread still used it: the heap broke)."""
    done = subprocess.run([sys.executable, "-c", FIRST_CALLS_IN_THREADS], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["0"]
