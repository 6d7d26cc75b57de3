"""Operators: arithmetic, bitwise and comparisons on arrays, numpy scalars and Python scalars."""

import numpy as np

from ._case import arr, case, iarr, pos


@case(args=lambda: (pos(4), pos(4, seed=1)), graphs=1, ops=7)
def arithmetic_operators(x, y):
    return x + y, x - y, x * y, x / y, x // y, x % y, x ** 2


@case(args=lambda: (iarr(4, low=0, high=8), iarr(4, seed=1, low=0, high=8)), graphs=1, ops=6)
def bitwise_operators(a, b):
    return a & b, a | b, a ^ b, a << 1, b >> 1, ~a


@case(args=lambda: (arr(5), arr(5, seed=1)), graphs=1, ops=6)
def comparison_operators(x, y):
    return x < y, x <= y, x == y, x != y, x > y, x >= y


@case(args=lambda: (arr(4),), graphs=1, ops=3)
def unary_operators(x):
    return -x, +x, np.abs(x)


@case(args=lambda: (arr(2, 3), arr(3, 4, seed=1), arr(4, 2, seed=2)), graphs=1, ops=2)
def matmul_chain(a, b, c):
    return a @ b @ c


@case(args=lambda: (pos(3),), graphs=1, ops=4)
def reflected_operators(x):
    return 2.0 - x, 3.0 / (x + 2.0), 2 ** x


@case(args=lambda: (arr(3), 10, 4), graphs=1, ops=1)
def python_int_arithmetic(x, a, b):
    c = (a + b) * (a - b) // 3 % 7
    return x * c, c


@case(args=lambda: (arr(3), 1.5), graphs=1, ops=1)
def python_float_arithmetic(x, f):
    g = f ** 2 / 3.0 - f
    return x - g, g


@case(args=lambda: (arr(4),), graphs=1, ops=4)
def numpy_scalar_arithmetic(x):
    s = x.sum()
    m = x.max()
    return s * 2 + m


@case(args=lambda: (arr(3), 5), graphs=1, ops=1)
def python_bitwise(x, n):
    m = (n << 2) | (n & 1) ^ 5
    return x + m


@case(args=lambda: (arr(6),), graphs=1, ops=2)
def count_of_mask(x):
    return (x > 0.5).sum()


@case(args=lambda: (iarr(3), arr(3)), graphs=1, ops=2)
def int_array_times_float_array(a, x):
    return a * x + a


@case(args=lambda: (iarr(4), iarr(4, seed=1, low=1, high=5)), graphs=1, ops=3)
def integer_division(a, b):
    return a / b, a // b, a % b


@case(args=lambda: (pos(3), pos(3, seed=1)), graphs=1, ops=1)
def array_power(x, y):
    return x ** y


@case(args=lambda: (arr(3), "abc"), graphs=1, ops=1)
def string_operators(x, s):
    return s * 2 + "!", x * len(s)


@case(args=lambda: (arr(3), 2, 5), graphs=1, ops=1)
def python_comparisons(x, a, b):
    return (a < b, a == b, a != b, a >= b), x * (a < b)


@case(args=lambda: (arr(4), arr(4, seed=1)), graphs=1, ops=5)
def numpy_ufunc_calls(x, y):
    return np.add(x, y), np.multiply(x, 2), np.maximum(x, y), np.minimum(x, 0.0), np.power(x, 2)


@case(args=lambda: (arr(5),), graphs=1, ops=2)
def where(x):
    return np.where(x > 0, x, 0.0)


@case(args=lambda: (arr(3), arr(3, seed=1)), graphs=1, ops=2)
def dot_and_outer(x, y):
    return np.dot(x, y), np.outer(x, y)


@case(args=lambda: (arr(5), arr(5, seed=1)), graphs=1, ops=6)
def boolean_array_logic(x, y):
    return (x > 0) & (y > 0) | ~(x > y)


@case(args=lambda: (iarr(4),), graphs=1, ops=3)
def int_array_by_python_int(a):
    return a // 3, a % 3, -a


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def complex_constant(x):
    c = (1 + 2j) * 2
    return x * c.real, c


@case(args=lambda: (arr(3, dtype=np.float32),), graphs=1, ops=1)
def float32_times_python_float(x):
    return x * 2.5


@case(args=lambda: (arr(3, 3), arr(3, seed=1)), graphs=1, ops=1)
def matrix_vector(m, v):
    return m @ v


@case(args=lambda: (arr(6),), graphs=1, ops=3)
def mean_std_var(x):
    return x.mean(), x.std(), x.var()


@case(args=lambda: (arr(3),), graphs=1, ops=4)
def numpy_scalar_with_python_scalar(x):
    s = x.sum()
    return s + 1, 2.0 * s, s > 0


@case(args=lambda: (arr(2, 3),), graphs=1, ops=2)
def transpose_matmul(x):
    return x.T @ x


@case(args=lambda: (pos(4),), graphs=1, ops=3)
def log_sqrt_exp(x):
    return np.log(x), np.sqrt(x), np.exp(x)


_NAMESPACES = {"numpy": np, "linalg": np.linalg}


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def modules_compared_with_eq(x):
    # A module's == is object's, which CPython falls back to `is` for (scikit-learn's
    # `xp == xp_array` of two array namespaces).
    xp, other = _NAMESPACES["numpy"], _NAMESPACES["linalg"]
    if xp == np and xp != other and np.linalg == other:
        return x * 2
    return x - 1


class _Infinity:
    # packaging's `Infinity`: greater than anything, equal only to itself's kind.
    def __eq__(self, other):
        return isinstance(other, _Infinity)

    def __lt__(self, other):
        return False

    def __ge__(self, other):
        return True

    def __hash__(self):
        return 7


_INFINITY = _Infinity()


@case(args=lambda: (arr(3), (1, 9)), graphs=1, ops=1)
def tuples_holding_objects_compared_item_by_item(x, release):
    key, other = (1, 9, _INFINITY), release + (0,)
    # The same object is equal without its `__eq__`; the first unequal items decide; else the lengths.
    answers = (key >= other, key < other, key == (1, 9, _INFINITY), key != other, (key, 1) <= (key,),
               (1, _INFINITY) < (2, _INFINITY), (_INFINITY,) == (_Infinity(),))
    return x * 2 if key >= other else x, answers
