"""with statements on user context managers: enter/exit order, `as` values, suppressing or not."""

import contextlib
import itertools
import sys
import threading

import numpy as np

from ._case import arr, case


class _Recorder:
    def __init__(self, log, name="cm"):
        self.log = log
        self.name = name

    def __enter__(self):
        self.log.append(("enter", self.name))
        return self

    def __exit__(self, exc_type, exc, tb):
        self.log.append(("exit", self.name, None if exc_type is None else exc_type.__name__))
        return False


class _Suppress:
    def __init__(self, log=None):
        self.log = log

    def __enter__(self):
        return None

    def __exit__(self, exc_type, exc, tb):
        if self.log is not None:
            self.log.append(None if exc_type is None else str(exc))
        return True


class _ScaleCM:
    def __init__(self, k=2.0):
        self.k = k

    def __enter__(self):
        return self.k

    def __exit__(self, *exc):
        return None


class _ArrayCM:
    def __init__(self, v):
        self.v = v

    def __enter__(self):
        return self.v * 2

    def __exit__(self, *exc):
        return False


class _Counter:
    def __init__(self):
        self.count = 0

    def __enter__(self):
        self.count += 1
        return self

    def __exit__(self, *exc):
        return False


def _raises_value(v):
    raise ValueError("from callee")


def _with_helper(v, log):
    with _Recorder(log, "helper"):
        return v * 3


@case(args=lambda: (arr(3), []), graphs=1, ops=2)
def with_without_raise(x, log):
    with _Recorder(log):
        y = x + 1
    return y * 2


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def with_as_value(x):
    with _ScaleCM() as k:
        return x * k


@case(args=lambda: (arr(3), []), graphs=1, ops=1)
def suppressing_exit(x, log):
    y = x
    with _Suppress(log):
        y = x + 1
        raise ValueError("quiet")
    return y


# The KeyError __exit__ sees escapes: the resume function at its raise raises it for real,
# with its traceback, and the with's exit runs as it is (no break).
@case(args=lambda: (arr(3), []), graphs=0, ops=0, raises=KeyError)
def not_suppressing_exit(x, log):
    with _Recorder(log):
        raise KeyError("loud")


@case(args=lambda: (arr(3), []), graphs=1, ops=1)
def nested_with_items(x, log):
    with _Recorder(log, "a"), _ScaleCM(3.0) as k:
        return x * k


@case(args=lambda: (arr(3), []), graphs=1, ops=2)
def with_in_callee(x, log):
    return _with_helper(x, log) + 1


@case(args=lambda: (arr(3),), graphs=1, ops=2)
def enter_does_array_op(x):
    with _ArrayCM(x) as y:
        return y + 1


@case(args=lambda: (arr(3), []), graphs=1, ops=3)
def loop_inside_with(x, log):
    with _Recorder(log):
        for i in range(3):
            x = x + i
    return x


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def return_inside_suppressing_with(x):
    with _Suppress():
        return x * 3


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def same_manager_twice(x):
    cm = _Counter()
    with cm:
        pass
    with cm:
        pass
    return x * cm.count


@case(args=lambda: (arr(3), []), graphs=1, ops=1)
def suppress_callee_exception(x, log):
    with _Suppress(log):
        _raises_value(x)
    return x - 1


@case(args=lambda: (arr(3), []), graphs=1, ops=2)
def nested_with_blocks(x, log):
    with _Recorder(log, "outer"):
        with _Recorder(log, "inner"):
            x = x * 2
        x = x + 1
    return x


@case(args=lambda: (arr(3), []), graphs=1, ops=1)
def exit_sees_exception_then_outer_suppresses(x, log):
    with _Suppress(log):
        with _Recorder(log):
            raise IndexError("deep")
    return x * 2


@case(args=lambda: (arr(3), []), graphs=1, ops=2)
def with_in_loop(x, log):
    for i in range(2):
        with _Recorder(log, f"round{i}"):
            x = x + i
    return x


@case(args=lambda: ({}, arr(3)), graphs=1, ops=1)
def suppress_catches_a_missing_key(table, x):
    # contextlib's suppress and nullcontext run as user code does: no break.
    with contextlib.suppress(KeyError):
        table["missing"]
        return x + 1
    return x * 2


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def nullcontext_gives_its_object(x):
    with contextlib.nullcontext(x) as same:
        return same * 2, same is x


def _all_finite(x):
    # scikit-learn's _assert_all_finite: the sum's overflow is no error there.
    with np.errstate(over="ignore"):
        first_pass = np.isfinite(np.sum(x))
    return first_pass


@case(args=lambda: (arr(3),), graphs=1, ops=3)
def errstate_block_in_the_graph(x):
    # np.errstate's with block is a region of the graph: no break at its entry or exit.
    finite = _all_finite(x)
    return x * 2, finite


@case(args=lambda: (arr(3),), graphs=1, ops=3)
def nested_errstate_blocks_in_the_graph(x):
    with np.errstate(all="ignore"):
        y = x / 2
        with np.errstate(divide="raise"):
            z = y / 3
        w = z - 1
    return w


@case(args=lambda: (arr(3),), graphs=1, ops=2)
def catch_warnings_block_in_the_graph(x):
    # scikit-learn's check_array: the filter it sets holds for the conversion inside.
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", np.exceptions.ComplexWarning)
        y = np.asarray(x, dtype=np.float64)
    return y * 2


_CONFIG = {"scale": 1.0}


@contextlib.contextmanager
def _scaled(scale):
    # scikit-learn's `config_context`: set, yield, put back in `finally`.
    old = _CONFIG["scale"]
    _CONFIG["scale"] = scale
    try:
        yield old
    finally:
        _CONFIG["scale"] = old


@case(args=lambda: (arr(3),), graphs=1, ops=2, globals_checked=("_CONFIG",))
def contextmanager_sets_and_puts_back(x):
    # The generator runs to its yield at the `with`, past it at the end (its StopIteration
    # caught by contextlib's `__exit__`): one graph, the dict's stores replayed.
    with _scaled(3.0) as old:
        y = x * _CONFIG["scale"]
    return y + old, _CONFIG["scale"]


def _counted_to(n):
    yield from range(n)
    return n


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def stop_iteration_carries_what_the_generator_returned(x):
    numbers = _counted_to(2)
    seen = [next(numbers), next(numbers)]
    try:
        next(numbers)
    except StopIteration as end:
        seen.append(end.value)
    try:
        next(iter([]))
    except StopIteration as end:
        seen.append(end.args)
    return x + len(seen), seen


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def stop_iteration_through_builtin_iterators(x):
    # enumerate, filter and dropwhile hand on the StopIteration of the iterator under them
    # (a generator's carries what it returned); one that ran out of a list's is bare.
    ends = []
    for make in (enumerate, lambda g: filter(None, g), lambda g: itertools.dropwhile(bool, g)):
        it = make(_counted_to(2))
        for _ in range(4):
            try:
                next(it)
            except StopIteration as end:
                ends.append(end.args)
                break
    try:
        next(enumerate([]))
    except StopIteration as end:
        ends.append(end.args)
    return x - 1, ends


def _delegating(inner):
    got = yield from inner
    return got


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def a_generator_asked_again_after_its_end_stops_bare(x):
    # Only the advance that ended it carries its return value: a later next() raises a bare
    # StopIteration, and a `yield from` of it gives None.
    numbers = _counted_to(1)
    next(numbers)
    ends = []
    for _ in range(2):
        try:
            next(numbers)
        except StopIteration as end:
            ends.append(end.args)
    outer = _delegating(numbers)
    try:
        next(outer)
    except StopIteration as end:
        ends.append(end.args)
    return x * 2, ends



@case(args=lambda: (arr(3),), graphs=1, ops=2,
      breaks=("cannot rebuild", "iteration over generator", "iteration over zip"))
def stop_iteration_of_zip_over_a_generator_runs_as_it_is(x):
    # Which of zip's iterators ended is not kept: its StopIteration is not made, so zip and
    # the generator are made by the real code (a generator suspended inside `yield from`
    # cannot be handed on).
    y = (x + 1) * 2
    it = zip(_counted_to(1), [0, 1])
    next(it)
    try:
        next(it)
    except StopIteration as end:
        return y, end.args
    return y, None


_LONG_BLOCK = "it makes a break inside the with block of a graph region (more than 300 instructions"


def _long_sum(x, n):
    total = x
    for _ in range(n):
        total = total + 1
    return total


@case(
    args=lambda: (arr(3),),
    graphs=2,
    ops=201,
    breaks=[
        _LONG_BLOCK,
        # On 3.14 the resume function starts at the `with` and breaks there at once (the
        # region broke inside before); earlier it starts inside the block, and errstate's
        # `__exit__` (numpy's code) is its break.
        _LONG_BLOCK if sys.version_info >= (3, 14) else "errstate.__exit__",
    ],
)
def a_long_call_inside_a_region_breaks_at_the_with(x):
    # A break inside a region's block throws the block's simulation away, so the block (its
    # calls included) simulates a bounded number of instructions: past it, the `with` is the
    # break and the
    # block is translated on its own, the call inlined there (its loop's 200 additions in
    # the resume function's graph), the `with` entered and left for real.
    y = x * 2
    with np.errstate(over="ignore"):
        z = _long_sum(y, 200)
    return z


# Locks the translated code makes (joblib's `Parallel`, scikit-learn's forests): held and
# released while translating on a lock nobody else sees; the generated code makes the lock
# again where it is free.


@case(args=lambda: (arr(3),), graphs=1, ops=2)
def a_lock_made_here_held_by_with(x):
    lock = threading.Lock()
    with lock:
        y = x + 1
        inside = lock.locked()
    return y * 2, inside, lock.locked()


def _accumulate(value, out, lock):
    # scikit-learn's `_accumulate_prediction`: the sum under the lock it is handed.
    with lock:
        out[0] += value


@case(args=lambda: (arr(3),), graphs=1, ops=5)
def a_lock_handed_to_a_helper(x):
    out = [x * 0.0]
    lock = threading.Lock()
    for k in (1.0, 2.0):
        _accumulate(x * k, out, lock)
    return out[0]


class _Pool:
    # joblib's `Parallel`: a reentrant lock made in `__init__`, held around its work.
    def __init__(self):
        self._lock = threading.RLock()

    def run(self, function, value):
        with self._lock:
            with self._lock:
                return function(value)


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def a_reentrant_lock_of_an_object_made_here(x):
    pool = _Pool()
    return pool.run(lambda v: v - 1, x)


@case(args=lambda: (arr(3),), graphs=1, ops=2)
def a_lock_acquired_and_released_by_its_methods(x):
    lock = threading.Lock()
    first = lock.acquire()
    y = x * 3
    held = lock.locked()
    lock.release()
    return y + 1, first, held, lock.locked()


@case(args=lambda: (arr(3),), graphs=2, ops=2,
      breaks=["a lock the translation holds", "__exit__ of lock", "print", "lock.__exit__"])
def a_break_while_a_made_lock_is_held(x):
    # Made again by the generated code, a lock would be free: the lock is made by the
    # code that runs on from before it, which holds it as the original does (a lock of the
    # frame's, then: entered for real).
    y = x + 1
    lock = threading.Lock()
    with lock:
        print("holding")
        z = y * 2
    return z


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def releasing_a_free_lock_raises_as_it_does(x):
    lock = threading.Lock()
    try:
        lock.release()
    except RuntimeError as error:
        return x + 1, str(error)
    return x, ""


_SHARED = threading.Lock()


@case(args=lambda: (arr(3),), graphs=2, ops=2, breaks=["__exit__ of lock", "lock.__exit__"])
def a_lock_of_the_program_is_held_for_real(x):
    # Another thread may hold it: entered by the code that runs on, not while translating.
    y = x + 1
    with _SHARED:
        z = y * 2
    return z
