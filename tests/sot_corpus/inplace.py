"""In-place stores and operators: augmented assignment on arrays, items, attributes and Python values."""

import numpy as np

from ._case import arr, case, iarr


class Box:
    def __init__(self, total):
        self.total = total


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def iadd_argument(x):
    x += 1
    return x


@case(args=lambda: (arr(3),), graphs=1, ops=2)
def imul_copy(x):
    y = x.copy()
    y *= 2
    return y


@case(args=lambda: (arr(2, 3), arr(2, 3, seed=1)), graphs=1, ops=1)
def isub_other_array(x, y):
    x -= y
    return x


@case(args=lambda: (arr(4),), graphs=1, ops=1)
def setitem_scalar(x):
    x[0] = 5.0
    return x


@case(args=lambda: (arr(4),), graphs=1, ops=2)
def setitem_slice_then_sum(x):
    x[1:] = 0.0
    return x.sum()


@case(args=lambda: (arr(2, 3), arr(3, seed=1)), graphs=1, ops=1)
def setitem_row(x, y):
    x[0] = y
    return x


@case(args=lambda: (arr(3),), graphs=1, ops=3)
def augassign_item(x):
    x[1] += 2.0
    return x


@case(args=lambda: (arr(4),), graphs=1, ops=3)
def augassign_slice(x):
    x[:2] *= 3.0
    return x


@case(args=lambda: (arr(3), 4), graphs=1, ops=1)
def python_int_augassign(x, n):
    n += 2
    n *= 3
    return x * n


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def list_iadd(x):
    items = [x]
    items += [x + 1]
    return items


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def str_iadd(x):
    s = "a"
    s += "b"
    return s, x * 2


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def dict_item_iadd_python(x):
    d = {"a": 1}
    d["a"] += 2
    return d, x - d["a"]


@case(args=lambda: (Box(arr(3)), arr(3, seed=1)), graphs=1, ops=1)
def attribute_iadd_array(box, x):
    box.total += x
    return box.total


@case(args=lambda: (arr(3),), graphs=1, ops=2)
def ipow(x):
    y = x + 0.0
    y **= 2
    return y


@case(args=lambda: (lambda v: (v, v))(arr(3)), graphs=1, ops=2)
def iadd_through_alias(a, b):
    a += 1
    return b * 2


@case(args=lambda: (iarr(4, low=0, high=16),), graphs=1, ops=1)
def ior_int_array(x):
    x |= 1
    return x


@case(args=lambda: (iarr(4, low=0, high=20),), graphs=1, ops=2)
def ifloordiv_copy(x):
    y = x.copy()
    y //= 3
    return y


@case(args=lambda: (arr(2, 2),), graphs=1, ops=2)
def iadd_numpy_result(x):
    y = np.ones((2, 2))
    y += x
    return y


@case(args=lambda: (arr(3),), graphs=1, ops=2)
def inplace_on_local_keeps_argument(x):
    y = x
    y = y + 1
    y -= 2
    return x, y
