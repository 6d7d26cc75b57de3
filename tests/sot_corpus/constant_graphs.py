"""Constant graphs: functions without any array op compile no graph (but are translated)."""

import numpy as np

from ._case import arr, case


def _identity(v):
    return v


@case(args=lambda: (3, 4), graphs=0, ops=0)
def python_arithmetic(a, b):
    return a * b + 1


@case(args=lambda: (arr(3),), graphs=0, ops=0)
def return_argument(x):
    return x


@case(args=lambda: (arr(2, 3),), graphs=0, ops=0)
def shape_dtype_ndim_size(x):
    return x.shape, x.ndim, x.size, x.dtype


@case(args=lambda: ("ab",), graphs=0, ops=0)
def string_building(s):
    return s + "!" * 3


@case(args=lambda: (arr(3), arr(3, seed=1)), graphs=0, ops=0)
def container_shuffle(x, y):
    return [y, x], {"x": x}


@case(args=lambda: (5,), graphs=0, ops=0)
def python_loop(n):
    total = 0
    for i in range(n):
        total += i * i
    return total


@case(args=lambda: (arr(4),), graphs=0, ops=0)
def len_of_array(x):
    return len(x) * 2


@case(args=lambda: (arr(3),), graphs=0, ops=0)
def dtype_comparison(x):
    return x.dtype == np.float64, x.dtype.kind


@case(graphs=0, ops=0, translations=1)
def no_arguments():
    return 42


@case(args=lambda: (arr(3),), graphs=0, ops=0)
def pass_through_callee(x):
    return _identity(x)


@case(graphs=0, ops=0)
def tuple_of_constants():
    return (1, "a", None, 2.5, True, b"x")


@case(args=lambda: (arr(3),), graphs=0, ops=0)
def isinstance_of_array(x):
    return isinstance(x, np.ndarray), isinstance(x, (list, tuple))


@case(args=lambda: ([1, 2, 3], {"a": 1}), graphs=0, ops=0)
def containers_only(items, d):
    return items[::-1], sorted(d.items()), {**d, "b": 2}


@case(args=lambda: (arr(2, 3),), graphs=0, ops=0)
def shape_arithmetic(x):
    rows, cols = x.shape
    return rows * cols, (cols, rows), x.shape[::-1]
