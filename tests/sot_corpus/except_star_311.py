"""except* and exception groups (Python 3.11+)."""

import sys

from ._case import arr, case


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def except_star_catches_group(x):
    try:
        raise ExceptionGroup("g", [ValueError("v")])
    except* ValueError:
        y = x * 2
    return y


@case(args=lambda: (arr(3), []), graphs=1, ops=1)
def two_except_star_handlers(x, log):
    try:
        raise ExceptionGroup("g", [ValueError("a"), KeyError("b")])
    except* ValueError as eg:
        log.append(("value", len(eg.exceptions)))
    except* KeyError as eg:
        log.append(("key", len(eg.exceptions)))
    return x + len(log)


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def except_star_without_raise(x):
    try:
        y = x - 1
    except* ValueError:
        y = x
    return y


# The group leaves with its traceback: the generated code raises and catches its copy
# where the original raises it, then raises it on.
@case(args=lambda: (arr(3),), graphs=0, ops=0, raises=ExceptionGroup)
def unmatched_group_propagates(x):
    try:
        raise ExceptionGroup("g", [TypeError("t")])
    except* ValueError:
        pass


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def naked_exception_wrapped(x):
    try:
        raise ValueError("plain")
    except* ValueError as eg:
        n = len(eg.exceptions)
    return x * n


@case(args=lambda: (arr(3),), graphs=1, ops=2)
def array_ops_around_group(x):
    try:
        y = x + 1
        raise ExceptionGroup("g", [ValueError("v")])
    except* ValueError:
        y = y * 3
    return y


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def tuple_of_types(x):
    try:
        raise ExceptionGroup("g", [KeyError("k"), ValueError("v")])
    except* (KeyError, ValueError) as eg:
        n = len(eg.exceptions)
    return x + n


@case(args=lambda: (arr(3),), graphs=1, ops=1, raises=KeyError)
def raise_inside_clause(x):
    try:
        y = x * 2
        raise ExceptionGroup("g", [ValueError("v")])
    except* ValueError:
        raise KeyError("from the clause")  # noqa: B904 (implicit chaining is the case)
    return y


@case(args=lambda: (arr(3), []), graphs=2, ops=2, breaks=["print"])
def break_inside_clause(x, log):
    try:
        y = x + 1
        raise ExceptionGroup("g", [ValueError("v"), KeyError("k")])
    except* ValueError as eg:
        print("handling", len(eg.exceptions))
        log.append(repr(sys.exc_info()[1]))
    except* KeyError:
        y = y * 2
    return y
