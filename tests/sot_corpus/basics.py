"""Basics: arithmetic on arrays and Python values, locals, numpy calls and array methods."""

import numpy as np

from ._case import arr, case, iarr, pos


@case(args=lambda: (arr(3), 2.0), graphs=1, ops=2, translations=1)
def add_scale(x, k):
    return x + x * k


@case(args=lambda: (arr(3),), graphs=1, ops=1, translations=1)
def plus_one(x):
    return x + 1


@case(args=lambda: (arr(2, 3), arr(2, 3, seed=1)), graphs=1, ops=2)
def two_inputs(x, y):
    return x * y - y


@case(args=lambda: (arr(4), 3), graphs=1, ops=1)
def python_then_array(x, n):
    m = n * 2 + 1
    return x * m


@case(args=lambda: (arr(3),), graphs=1, ops=3)
def reassigned_local(x):
    y = x + 1
    y = y * 2
    y = y - 3
    return y


@case(args=lambda: (arr(5),), graphs=1, ops=2)
def two_reductions(x):
    a = x.sum()
    b = x.max()
    return a, b


@case(args=lambda: (4,), graphs=1, ops=2)
def numpy_call_on_python_value(n):
    return np.arange(n) * 2


@case(args=lambda: (arr(2, 3), arr(3, 4, seed=1)), graphs=1, ops=1)
def matmul(x, y):
    return x @ y


@case(args=lambda: (arr(4, dtype=np.float32),), graphs=1, ops=2)
def float32_stays_float32(x):
    return x * 2.0 + 1.0


@case(args=lambda: (iarr(5),), graphs=1, ops=2)
def int64_arithmetic(x):
    return x * 3 - 1


@case(args=lambda: (arr(3, dtype=np.float32), arr(3, seed=1)), graphs=1, ops=1)
def mixed_dtypes_promote(x, y):
    return x + y


@case(args=lambda: (arr(4),), graphs=1, ops=4)
def numpy_ufuncs(x):
    return np.tanh(x) + np.exp(-x)


@case(args=lambda: (arr(6),), graphs=1, ops=3)
def method_chain(x):
    return x.reshape(2, 3).T.sum(axis=1)


@case(args=lambda: (pos(4),), graphs=1, ops=2)
def normalise_by_sum(x):
    s = x.sum()
    return x / s


@case(args=lambda: (arr(3, 4),), graphs=1, ops=1)
def numpy_keyword_arguments(x):
    return np.sum(x, axis=0, keepdims=True)


@case(args=lambda: (arr(2, 3),), graphs=1, ops=1)
def reshape_from_shape(x):
    n = x.shape[0] * x.shape[1]
    return x.reshape(n)


@case(args=lambda: (arr(3),), graphs=1, ops=2)
def astype_then_scale(x):
    return x.astype(np.float32) * 2


@case(args=lambda: (arr(2, 2),), graphs=1, ops=2)
def zeros_like_plus(x):
    return np.zeros_like(x) + x


@case(args=lambda: (arr(5),), graphs=1, ops=3)
def mask_and(x):
    return (x > 0) & (x < 0.5)


@case(args=lambda: (arr(3),), graphs=1, ops=2)
def constant_array_operand(x):
    return x + np.array([1.0, 2.0, 3.0])


@case(args=lambda: (arr(3), arr(3, seed=1), 0.5), graphs=1, ops=3)
def lerp(a, b, t):
    return a + (b - a) * t
