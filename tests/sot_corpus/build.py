"""Building and unpacking containers: list/tuple/set/dict displays with * and ** splats."""

import numpy as np

from ._case import arr, case


def _affine(v, scale=1.0, shift=0.0):
    return v * scale + shift


@case(args=lambda: (arr(3), arr(3, seed=1)), graphs=1, ops=1)
def list_splat(x, y):
    return [*[x, y], x + y]


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def tuple_splat(x):
    t = (*(1, 2), *[3])
    return x * sum(t), t


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def dict_splat(x):
    base = {"a": x}
    return {**base, "b": x * 2}


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def set_splat(x):
    s = {*{1, 2}, 3}
    return x * len(s), s


@case(args=lambda: (arr(3), arr(3, seed=1)), graphs=1, ops=1)
def concatenate_splat(x, y):
    parts = [x, y]
    return np.concatenate([*parts, x])


@case(args=lambda: (arr(3),), graphs=1, ops=2)
def two_double_star_splats(x):
    a = {"scale": 2.0}
    b = {"shift": 1.0}
    return _affine(x, **a, **b)


@case(args=lambda: (arr(3), arr(3, seed=1)), graphs=1, ops=2)
def stack_list_display(x, y):
    return np.stack([x, y, x * y])


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def join_built_list(x):
    return "-".join(["a", "b", str(3)]), x + 1


@case(args=lambda: (arr(3),), graphs=0, ops=0)
def list_from_tuple_no_ops(x):
    items = list((x, 1.0))
    items.append(2.0)
    return items


@case(args=lambda: (arr(3),), graphs=1, ops=2)
def nested_displays(x):
    return {"t": (x, [x + 1, {"k": x * 2}])}


@case(args=lambda: (arr(5),), graphs=1, ops=1)
def slice_object_built(x):
    s = slice(1, None)
    return x[s]


@case(args=lambda: (arr(2, 3),), graphs=1, ops=2)
def shape_tuple_splat(x):
    return np.zeros((*x.shape, 1)) + 1.0


@case(args=lambda: (arr(3), arr(3, seed=1)), graphs=1, ops=1)
def splat_into_call(x, y):
    args = [x, y]
    return np.add(*args)


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def dict_from_keyword_splat(x):
    opts = {"k": 2.0}
    merged = dict(opts, extra=1)
    return merged, x * merged["k"]


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def tuple_of_list_splat(x):
    items = [1, 2]
    return (*items, x * 2)
