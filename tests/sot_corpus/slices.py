"""Slicing and indexing: basic, negative, multi-dimensional, newaxis, Ellipsis, fancy, masks, stores."""

from ._case import arr, case


@case(args=lambda: (arr(5),), graphs=1, ops=1)
def slice_tail(x):
    return x[1:]


@case(args=lambda: (arr(5),), graphs=1, ops=1)
def reverse_slice(x):
    return x[::-1]


@case(args=lambda: (arr(4, 4),), graphs=1, ops=1)
def two_dimensional_slice(x):
    return x[1:3, ::2]


@case(args=lambda: (arr(3),), graphs=1, ops=3)
def newaxis_outer(x):
    return x[:, None] * x[None, :]


@case(args=lambda: (arr(2, 3),), graphs=1, ops=1)
def ellipsis_index(x):
    return x[..., 0]


@case(args=lambda: (arr(3, 4),), graphs=1, ops=2)
def index_then_slice(x):
    return x[0][1:]


@case(args=lambda: (arr(4), arr(4, seed=1)), graphs=1, ops=2)
def slice_store(x, y):
    x[:2] = y[:2]
    return x


@case(args=lambda: (arr(3), [1, 2, 3, 4, 5]), graphs=1, ops=1)
def python_list_step_slice(x, items):
    return x * sum(items[::2])


@case(args=lambda: (arr(6), 1, 4), graphs=1, ops=1)
def slice_bounds_from_arguments(x, a, b):
    return x[a:b]


@case(args=lambda: (arr(4),), graphs=1, ops=1)
def fancy_index(x):
    return x[[0, 2]]


@case(args=lambda: (arr(6),), graphs=1, ops=2)
def boolean_mask(x):
    return x[x > 0]


@case(args=lambda: (arr(3), "hello"), graphs=1, ops=1)
def string_slice(x, s):
    return s[1:-1], x[-1]


@case(args=lambda: (arr(6),), graphs=1, ops=1)
def slice_from_len(x):
    n = len(x)
    return x[n // 2:]


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def tuple_slice(x):
    t = (x, 1, 2, 3)
    return t[1:], t[0][:2]


@case(args=lambda: (arr(3, 4),), graphs=1, ops=2)
def negative_indices(x):
    return x[-1, -1], x[:, -1]


@case(args=lambda: (arr(6),), graphs=1, ops=1)
def slice_object_step(x):
    s = slice(None, None, 2)
    return x[s]


@case(args=lambda: (arr(5),), graphs=1, ops=3)
def masked_store(x):
    y = x.copy()
    y[y < 0] = 0.0
    return y


@case(args=lambda: (arr(2, 3, 4),), graphs=1, ops=1)
def mixed_index_and_slices(x):
    return x[1, :, 1:3]


@case(args=lambda: (arr(4, 4),), graphs=1, ops=1)
def column_store(x):
    x[:, 0] = 1.0
    return x


@case(args=lambda: (arr(3, 3),), graphs=1, ops=2)
def integer_array_index(x):
    idx = [2, 0]
    return x[idx], x[idx, idx]


@case(args=lambda: (arr(4), (1, 2, 3)), graphs=1, ops=1, breaks=0)
def slice_of_tuple_argument(x, t):
    return x + 1, t[:2], t[1:]
