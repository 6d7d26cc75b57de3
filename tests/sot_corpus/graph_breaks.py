"""Graph breaks: print, opaque calls, branches on array values, array-to-Python conversions, breaks in loops."""

import binascii
import time

import numpy as np

from ._case import NESTED_RESUME, arr, case, iarr, pos


def _printing_identity(v):
    print("inside callee")
    return v


@case(args=lambda: (arr(3),), graphs=2, ops=2, breaks=["print"])
def print_between_ops(x):
    y = x + 1
    print("hi")
    return y * 2


@case(args=lambda: (arr(3),), graphs=1, ops=1, breaks=["print"])
def print_first(x):
    print("start")
    return x * 3


@case(args=lambda: (arr(3),), graphs=1, ops=1, breaks=["print"])
def print_last(x):
    y = x - 1
    print("done", 3)
    return y


@case(args=lambda: (arr(2, 3),), graphs=2, ops=2, breaks=["print"])
def print_shape(x):
    y = x * 2
    print(y.shape)
    return y + 1


@case(args=lambda: (arr(3),), graphs=2, ops=2, breaks=["print"])
def print_array(x):
    y = x * 2
    print(y)
    return y + 1


@case(args=lambda: (arr(3),), graphs=3, ops=3, breaks=["print", "print"])
def two_prints(x):
    a = x + 1
    print("a")
    b = a * 2
    print("b")
    return b - 1


@case(args=lambda: (arr(3),), graphs=2, ops=2, breaks=["unsupported call"], recompiles=1)
def opaque_builtin_call(x):
    y = x + 1
    ok = time.perf_counter_ns() > 0  # a new value on every call
    return y * ok


@case(args=lambda: (arr(3),), graphs=2, ops=2, breaks=["unsupported call"])
def c_extension_function(x):
    y = x + 1
    c = binascii.crc32(b"abc")
    return y + (c % 7)


@case(args=lambda: (arr(3),), graphs=1, ops=3)
def branch_on_all(x):
    if (x > 0).all():
        return x + 1
    return x - 1


@case(args=lambda: (arr(3),), graphs=1, ops=4)
def branch_on_sum(x):
    if x.sum() > 0:
        y = x * 2
    else:
        y = x / 2
    return y + 1


@case(args=lambda: (pos(3),), graphs=2, ops=2, breaks=["tensor to python"])
def float_of_reduction(x):
    s = float(x.sum())
    return x * s


@case(args=lambda: (arr(3),), graphs=2, ops=2, breaks=["tensor to python"])
def item_of_element(x):
    v = x[0].item()
    return x - v, v


@case(args=lambda: (arr(3),), graphs=0, ops=0, breaks=["tensor to python"])
def tolist(x):
    items = x.tolist()
    return items, len(items)


@case(args=lambda: (iarr(3, low=1, high=4),), graphs=2, ops=2, breaks=["tensor to python"])
def int_of_element(a):
    n = int(a[0])
    return a * n


@case(args=lambda: (arr(3),), graphs=2, ops=3, breaks=["tensor to python"])
def bool_of_reduction(x):
    flag = bool((x > 2).any())
    return x * 2 if flag else x + 1


# The callee's print breaks the caller's graph there; the callee goes on after it in a
# resume function, then the caller after the call (3.11+). 3.9/3.10: the caller breaks at the
# call, and the callee runs as a call of its own, translated in turn, breaking at its print
# too (as Paddle's SOT and Dynamo do).
@case(args=lambda: (arr(3),), graphs=2, ops=2, breaks=["print"] if NESTED_RESUME else ["print", "print"])
def print_in_inlined_callee(x):
    a = x + 1
    b = _printing_identity(a)
    return b * 2


# A break in a `for` loop: the loop runs in a bridge, as the original; the first
# iteration's addition is a graph before it (what follows it is a translation of its own).
@case(args=lambda: (arr(3),), graphs=1, ops=1, breaks=["print"], hot=False)
def print_in_loop(x):
    for i in range(3):
        x = x + i
        print(i)
    return x


@case(args=lambda: (arr(3),), graphs=1, ops=2, breaks=["data-dependent"], hot=False)
def data_dependent_break_in_loop(x):
    for _ in range(3):
        if x.sum() > 100:
            break
        x = x + 1
    return x


# The `while` loop runs in a bridge from its first test on; the test is a graph before it.
@case(args=lambda: (arr(3),), graphs=1, ops=2, breaks=["data-dependent"], hot=False)
def while_on_array_value(x):
    while (x < 3).any():
        x = x + 1
    return x


@case(args=lambda: (arr(3),), graphs=1, ops=1, breaks=["print"])
def print_with_keywords(x):
    print("a", "b", sep="-", end="!\n")
    return x + 1


@case(args=lambda: (arr(3), 4), graphs=2, ops=2, breaks=["print"])
def python_values_across_break(x, n):
    y = x * n
    print(n)
    m = n + 1
    return y + m, m


@case(args=lambda: (arr(3),), graphs=2, ops=3, breaks=["tensor to python", "print"])
def break_in_resume_function(x):
    a = x + 1
    if float(a.max()) > 10:
        return a
    b = a * 2
    print("b")
    return b


@case(args=lambda: (arr(3), [1.0]), graphs=2, ops=2, breaks=["print"])
def list_argument_across_break(x, items):
    items.append(2.0)
    y = x * items[0]
    print(len(items))
    items.append(3.0)
    return y + items[-1]


@case(args=lambda: (arr(3),), graphs=1, ops=2)
def branch_with_no_ops_after(x):
    if x.mean() > 5:
        return 1.0
    return 0.0


@case(args=lambda: (arr(4),), graphs=1, ops=3)
def branch_on_numpy_function(x):
    if np.any(x > 0.99):
        return x * 0
    return x * 1


@case(args=lambda: (arr(3),), graphs=2, ops=2, breaks=["print"])
def locals_survive_break(x):
    a, b, c = 1, "two", [3]
    y = x + a
    print(b)
    return y * len(c), a, b, c
