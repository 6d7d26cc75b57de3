"""Graph breaks inside try, except, finally and with blocks (Paddle never translates these frames)."""

import contextlib
import sys
import threading
import time

from ._case import arr, case

# 3.11+ generated code raises and catches a copy of an exception the top frame raised,
# where it raised it, for its traceback; 3.9/3.10 raise it for real (a break there).
RAISED_FOR_REAL = [] if sys.version_info >= (3, 11) else ["raised and caught in the translation"]


class _Recorder:
    def __init__(self, log):
        self.log = log

    def __enter__(self):
        self.log.append("enter")
        return self

    def __exit__(self, exc_type, exc, tb):
        self.log.append(("exit", None if exc_type is None else exc_type.__name__))
        return False


class _Suppress:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return True


@case(args=lambda: (arr(3),), graphs=2, ops=2, breaks=["print"])
def print_in_try(x):
    try:
        y = x + 1
        print("in try")
        z = y * 2
    except ValueError:
        z = x
    return z


@case(args=lambda: (arr(3), []), graphs=2, ops=2, breaks=["print"])
def print_in_with(x, log):
    with _Recorder(log):
        y = x * 3
        print("in with")
        y = y - 1
    return y


@case(args=lambda: (arr(3),), graphs=2, ops=2, breaks=["print"])
def print_in_finally(x):
    try:
        y = x + 1
    finally:
        print("finally")
    return y * 2


# Each exception the handler makes current again at a break has its traceback
# (`logging.exception()` prints it).
@case(args=lambda: (arr(3),), graphs=2, ops=2, breaks=[*RAISED_FOR_REAL, "print"])
def print_in_except(x):
    try:
        raise ValueError("v")
    except ValueError:
        y = x * 2
        print("caught")
    return y + 1


@case(args=lambda: (arr(3),), graphs=1, ops=3)
def data_dependent_branch_in_try(x):
    # Assumed: checked by the graph, no break.
    try:
        if x.sum() > 0:
            return x * 2
        return x / 2
    except TypeError:
        return None


@case(args=lambda: (arr(3),), graphs=2, ops=3, breaks=["data-dependent"])
def data_dependent_branch_in_a_loop_in_try(x):
    # In a loop a branch on a value is not assumed: the break resumes inside the try.
    try:
        for _ in range(1):
            if x.sum() > 0:
                return x * 2
        return x / 2
    except TypeError:
        return None


@case(args=lambda: (arr(3), []), graphs=2, ops=2, breaks=["tensor to python"])
def conversion_in_with(x, log):
    with _Recorder(log):
        s = float(x.max())
        return x - s


@case(args=lambda: (arr(3), []), graphs=2, ops=2, breaks=["print"])
def print_in_try_in_with(x, log):
    with _Recorder(log):
        try:
            a = x + 1
            print("deep")
            b = a * 2
        finally:
            log.append("finally")
    return b


@case(args=lambda: (arr(3),), graphs=2, ops=2, breaks=["print"])
def break_then_raise_and_catch(x):
    try:
        y = x + 1
        print("before raise")
        raise KeyError("k")
    except KeyError:
        y = y * 2
    return y


@case(args=lambda: (arr(3),), graphs=1, ops=1, breaks=["print"])
def break_then_suppressed_raise(x):
    with _Suppress():
        y = x + 1
        print("p")
        raise ValueError("x")
    return y


@case(args=lambda: (arr(3),), graphs=2, ops=2, breaks=["unsupported call"], recompiles=1)
def opaque_call_in_try(x):
    try:
        y = x * 2
        ok = time.perf_counter_ns() > 0  # a new value on every call
    except Exception:
        ok = False
    return y + ok


@case(args=lambda: (arr(3), []), graphs=2, ops=2, breaks=["print"])
def return_from_with_after_break(x, log):
    with _Recorder(log):
        y = x - 1
        print("returning")
        return y * 3


@case(args=lambda: (arr(3), []), graphs=3, ops=3, breaks=["print", "print"])
def two_breaks_in_nested_blocks(x, log):
    with _Recorder(log):
        a = x + 1
        print("one")
        try:
            b = a * 2
            print("two")
        finally:
            log.append("finally")
        c = b - 3
    return c


@case(args=lambda: (arr(3), []), graphs=1, ops=3)
def data_dependent_branch_in_with(x, log):
    with _Recorder(log):
        if x.sum() > 0:
            return x * 2
        return x / 2


@case(args=lambda: (arr(3), []), graphs=2, ops=3, breaks=["data-dependent"])
def data_dependent_branch_in_a_loop_in_with(x, log):
    with _Recorder(log):
        for _ in range(1):
            if x.sum() > 0:
                return x * 2
        return x / 2


@case(args=lambda: (arr(3), []), graphs=1, ops=1, breaks=["print"], raises=TypeError)
def break_raising_under_with(x, log):
    with _Recorder(log):
        y = x + 1
        print(y, sep=1)  # TypeError, raised by the break itself: __exit__ sees it
    return y


@case(args=lambda: (arr(3),), graphs=1, ops=1, breaks=["print"])
def break_raising_under_suppressing_with(x):
    y = x + 1
    with _Suppress():
        print(y, sep=1)  # suppressed by __exit__: the frame goes on after the with
        y = y * 5
    return y


_EXIT_STACK = contextlib.ExitStack()


@case(args=lambda: (arr(3),), graphs=2, ops=2, breaks=["ExitStack.__exit__ (a library function"])
def library_context_manager(x):
    # Its __enter__ and __exit__ are the standard library's: __enter__ is inlined (it gives
    # the stack back), __exit__ breaks inside (sys.exc_info), so the call breaks.
    with _EXIT_STACK:
        y = x + 1
    return y * 2


@case(
    args=lambda: (arr(3), []),
    graphs=2,
    ops=2,
    breaks=["print"],
    raises=KeyError,
)
def raise_after_break_under_with(x, log):
    with _Recorder(log):
        y = x + 1
        print("then raise")
        log.append(y * 2)
        raise KeyError("k")  # after the break: __exit__ (not suppressing) sees it
    return y


@case(args=lambda: (arr(3),), graphs=1, ops=1, breaks=[*RAISED_FOR_REAL, "exc_info"])
def exception_current_after_break_in_except(x):
    try:
        raise KeyError("k")
    except KeyError:
        y = x * 2
        current = sys.exc_info()  # breaks: what runs it must have the exception current
    return y, current[:2]


@case(
    args=lambda: (arr(3),),
    graphs=1,
    ops=1,
    breaks=[*RAISED_FOR_REAL, "exc_info", "exc_info"],
)
def exception_cleared_after_handler(x):
    try:
        raise KeyError("k")
    except KeyError:
        inside = sys.exc_info()[0]
    after = sys.exc_info()[0]  # the handler's end made the caller's (none) current again
    return x + 1, inside, after


# repr() of the handled exception breaks too: pinned by identity, it would fail its guard
# on every call (each call raises a new one) and keep its traceback's frames alive. 3.11+:
# y = x * 2 is a graph, each `sys.exc_info()` breaks and its resume function breaks at
# repr() of an exception from the frame. 3.9/3.10: the outer exception is raised for real
# (a break), and the resume function that handles it breaks at the inner one, an exception
# from the frame there: the handlers run as they are, without a graph.
@case(
    args=lambda: (arr(3),),
    graphs=1 if sys.version_info >= (3, 11) else 0,
    ops=1 if sys.version_info >= (3, 11) else 0,
    breaks=(["exc_info", "exception from the frame", "exc_info", "exception from the frame"]
            if sys.version_info >= (3, 11) else ["raised and caught in the translation", "exception from the frame"]),
)
def break_in_nested_handlers(x):
    try:
        raise KeyError("outer")
    except KeyError:
        try:
            raise ValueError("inner")
        except ValueError:
            y = x * 2
            inner = repr(sys.exc_info()[1])
        outer = repr(sys.exc_info()[1])
    return y, inner, outer


@contextlib.contextmanager
def _generator_context():
    yield


@case(args=lambda: (arr(3),), graphs=1, ops=2)
def break_out_of_a_generator_context_in_a_while_loop(x):
    # contextlib's helper, inlined, makes a context manager holding a generator the VM runs:
    # entered and exited in the graph's translation, the loop unrolled.
    y = x * 2
    counter = 0
    while True:
        counter += 1
        with _generator_context():
            counter += 10
            break
        counter += 100
    return y + counter


_LOCK = threading.Lock()


@case(args=lambda: (arr(3),), graphs=2, ops=2, breaks=["__exit__ of lock written in C", "lock.__exit__"])
def break_out_of_a_with_in_a_while_loop(x):
    # The loop runs in a bridge (a lock's `__exit__`, written in C, breaks); `break`
    # leaves it from inside the `with`, whose __exit__ and its self the exit hands on (3.15
    # once took them for a `for` loop's iterator slots, popped them and crashed).
    y = x * 2
    counter = 0
    while True:
        counter += 1
        with _LOCK:
            counter += 10
            break
        counter += 100
    return y + counter
