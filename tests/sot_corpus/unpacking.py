"""Unpacking: tuples, lists, strings, dict items, starred targets and arrays (one op per element)."""

from ._case import arr, case


@case(args=lambda: (arr(3),), graphs=1, ops=2)
def tuple_unpack(x):
    a, b, c = x, 2.0, 3
    return a * b + c


@case(args=lambda: (arr(3),), graphs=1, ops=5)
def array_elements_unpack(x):
    a, b, c = x
    return a + b * c


@case(args=lambda: (arr(2, 3),), graphs=1, ops=3)
def array_rows_unpack(x):
    top, bottom = x
    return top - bottom


@case(args=lambda: ([arr(2, seed=i) for i in range(4)],), graphs=1, ops=1)
def starred_list_unpack(xs):
    first, *rest = xs
    return first + rest[-1]


@case(args=lambda: (arr(3),), graphs=1, ops=2)
def starred_middle(x):
    a, *mid, b = [1, 2, 3, 4, 5]
    return x * (a + b) + len(mid)


@case(args=lambda: (arr(3),), graphs=1, ops=3)
def nested_unpack(x):
    (a, b), c = (x, x * 2), 3.0
    return (a + b) * c


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def unpack_single_item(x):
    ((k, v),) = {"s": 2.0}.items()
    return x * v, k


@case(args=lambda: (arr(3), arr(3, seed=1)), graphs=1, ops=1)
def swap_arguments(x, y):
    x, y = y, x
    return x - y


@case(args=lambda: (arr(3),), graphs=1, ops=2)
def unpack_python_arithmetic(x):
    q, r = 7 // 2, 7 % 2
    return x * q + r


@case(args=lambda: (arr(3),), graphs=1, ops=4)
def unpack_in_for(x):
    for a, b in [(1.0, 2.0), (3.0, 4.0)]:
        x = x * a + b
    return x


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def unpack_string(x):
    a, b = "xy"
    return {a: x, b: x + 1}


@case(args=lambda: (arr(3, 2),), graphs=1, ops=4)
def starred_array_rows(x):
    first, *rest = x
    return first * len(rest)


@case(args=lambda: (arr(2, 3),), graphs=1, ops=1)
def unpack_shape(x):
    rows, cols = x.shape
    return x.reshape(cols, rows)


@case(args=lambda: ([(arr(2), 1.0), (arr(2, seed=1), 2.0)],), graphs=1, ops=3)
def unpack_pairs_from_argument(pairs):
    (a, ka), (b, kb) = pairs
    return a * ka + b * kb


@case(args=lambda: (arr(3),), graphs=1, ops=2)
def unpack_list_target(x):
    [a, b] = [x + 1, 2.0]
    return a * b
