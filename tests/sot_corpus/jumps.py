"""Jumps on Python values: if/elif/else, and/or short-circuit, not, while with Python conditions."""

import numpy as np

from ._case import arr, case


@case(args=lambda: (arr(3), True), graphs=1, ops=2)
def if_true(x, flag):
    if flag:
        x = x + 1
    return x * 2


@case(args=lambda: (arr(3), False), graphs=1, ops=1)
def if_false(x, flag):
    if flag:
        x = x + 1
    return x * 2


@case(args=lambda: (arr(3), 2), graphs=1, ops=1)
def elif_chain(x, n):
    if n == 1:
        return x + 1
    elif n == 2:
        return x + 2
    elif n == 3:
        return x + 3
    else:
        return x


@case(args=lambda: (arr(3), 7), graphs=1, ops=1)
def else_of_elif_chain(x, n):
    if n == 1:
        return x + 1
    elif n == 2:
        return x + 2
    else:
        return x - n


@case(args=lambda: (arr(3), True, 0), graphs=1, ops=1)
def and_short_circuit(x, a, b):
    if a and b:
        return x * 3
    return x - 3


@case(args=lambda: (arr(3), 0), graphs=1, ops=1)
def or_default(x, a):
    k = a or 5
    return x * k


@case(args=lambda: (arr(3), False), graphs=1, ops=1)
def not_python_value(x, flag):
    if not flag:
        return -x
    return x


@case(args=lambda: (arr(3), 2, 3), graphs=1, ops=1)
def and_value(x, a, b):
    return x * (a and b)


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def none_default(x, bias=None):
    if bias is None:
        bias = 0.5
    return x + bias


@case(args=lambda: (arr(3), arr(3, seed=1)), graphs=1, ops=1)
def is_not_none_array(x, y):
    if y is not None:
        return x + y
    return x


@case(args=lambda: (arr(3), 3), graphs=1, ops=1)
def isinstance_branch(x, k):
    if isinstance(k, int):
        return x * k
    return x / k


@case(args=lambda: (arr(3), 1.0, 2.0), graphs=1, ops=2)
def nested_if(x, a, b):
    if a > 0:
        if b > 0:
            return x + a + b
        return x + a
    return x


@case(args=lambda: (arr(3, dtype=np.float32),), graphs=1, ops=1)
def if_dtype(x):
    if x.dtype == np.float32:
        return x * 2
    return x.astype(np.float32)


@case(args=lambda: (arr(3), 3), graphs=1, ops=3)
def while_python_condition(x, n):
    i = 0
    while i < n:
        x = x * 2
        i += 1
    return x


@case(args=lambda: (arr(3), [1.0, 2.0]), graphs=1, ops=1)
def if_len_of_list(x, items):
    if len(items) > 1:
        return x * items[1]
    return x


@case(args=lambda: (arr(3), "a"), graphs=1, ops=1)
def not_in(x, key):
    if key not in ("a", "b"):
        return x
    return x * 2


@case(args=lambda: (arr(3), [2.0]), graphs=1, ops=1)
def truthiness_of_list(x, items):
    if items:
        return x + items[0]
    return x


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def or_picks_array(x):
    y = None or x
    return y + 1


@case(args=lambda: (arr(3), False), graphs=1, ops=2)
def if_else_both_assign(x, flag):
    if flag:
        y = x * 2
    else:
        y = x / 2
    return y + 1


@case(args=lambda: (arr(3), 0, ""), graphs=1, ops=1)
def or_chain_falls_through(x, a, b):
    return x * (a or b or 4)
