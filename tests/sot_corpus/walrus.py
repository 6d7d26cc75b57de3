"""Assignment expressions (:=) in conditions, expressions, comprehensions and while loops."""

from ._case import arr, case


def _double(v):
    return v * 2


@case(args=lambda: (arr(3), [1, 2, 3]), graphs=1, ops=1)
def walrus_in_if(x, items):
    if (n := len(items)) > 2:
        return x * n
    return x


@case(args=lambda: (arr(3),), graphs=1, ops=2)
def walrus_binds_array(x):
    y = (z := x + 1) * 2
    return y, z


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def walrus_in_comprehension_condition(x):
    vals = [y for k in range(3) if (y := k * 2) > 0]
    return x * sum(vals), y


@case(args=lambda: (arr(3),), graphs=1, ops=3)
def walrus_in_while(x):
    i = 0
    while (i := i + 1) < 4:
        x = x * 2
    return x


@case(args=lambda: (arr(3),), graphs=1, ops=2)
def walrus_array_in_comprehension(x):
    ys = [(last := x * k) for k in (1.0, 2.0)]
    return ys, last


@case(args=lambda: (arr(3),), graphs=1, ops=3)
def walrus_in_call_argument(x):
    return _double(t := x - 1) + t


@case(args=lambda: (arr(3), {"k": 2.0}), graphs=1, ops=1)
def walrus_with_dict_get(x, d):
    if (k := d.get("k")) is not None:
        return x * k
    return x
