"""Stack manipulation: swaps and rotations, chained comparisons and ternaries on Python values."""

import numpy as np

from ._case import arr, case, pos


class _Holder:
    def __init__(self):
        self.n = 1


@case(args=lambda: (arr(3), arr(3, seed=1), arr(3, seed=2)), graphs=1, ops=2)
def rotate_three(x, y, z):
    x, y, z = z, x, y
    return x - y * z


@case(args=lambda: (arr(3),), graphs=1, ops=2)
def rotate_four_constants(x):
    a, b, c, d = 1, 2, 3, 4
    a, b, c, d = d, c, b, a
    return x * a - b


@case(args=lambda: (arr(3), 3), graphs=1, ops=1)
def chained_comparison_true(x, k):
    if 0 < k < 10:
        return x * k
    return x


@case(args=lambda: (arr(3), 20), graphs=1, ops=1)
def chained_comparison_false(x, k):
    return x - k if 0 < k < 10 else x + k


@case(args=lambda: (arr(3), 1, 2, 2), graphs=1, ops=1)
def chained_comparison_mixed_ops(x, a, b, c):
    return x * 2 if a < b <= c != a else x / 2


@case(args=lambda: (arr(3), True), graphs=1, ops=1)
def ternary(x, flag):
    return x * 2 if flag else x / 2


@case(args=lambda: (arr(3), 3), graphs=1, ops=2)
def nested_ternary(x, n):
    y = x + 1 if n > 5 else (x - 1 if n > 0 else x)
    return y * n


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def inplace_subscript_on_list(x):
    items = [x, 1.0]
    items[1] += 2.0
    return items[0] * items[1]


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def inplace_attribute_python(x):
    holder = _Holder()
    holder.n += 3
    return x * holder.n


@case(args=lambda: (arr(2, 3),), graphs=1, ops=1)
def chained_comparison_on_ndim(x):
    return x.T if 1 < x.ndim <= 2 else x


@case(args=lambda: (pos(3), pos(3, seed=1)), graphs=1, ops=6)
def long_expression(x, y):
    return (x + y) * (x - y) / (x * y + 1.0)


@case(args=lambda: (arr(3),), graphs=1, ops=2)
def duplicate_in_expression(x):
    y = x * 2
    return y + y


@case(args=lambda: (arr(3), 2, 2), graphs=1, ops=1)
def comparison_result_as_number(x, a, b):
    return x * ((a == b) + (a < b))


@case(args=lambda: (arr(3),), graphs=1, ops=2)
def numpy_attribute_in_expression(x):
    return np.multiply(x, np.pi) - np.e

