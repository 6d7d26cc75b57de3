"""Comprehensions (list, dict, set, nested; inlined from 3.12) over lists, ranges, arrays and dict views."""

import numpy as np

from ._case import arr, case


def _double(v):
    return v * 2


@case(args=lambda: ([arr(3, seed=i) for i in range(3)],), graphs=1, ops=3)
def list_comprehension(xs):
    return [v * 2 for v in xs]


@case(args=lambda: (arr(3),), graphs=1, ops=4)
def over_range(x):
    return [x + i for i in range(4)]


@case(args=lambda: (arr(3),), graphs=1, ops=3)
def with_condition(x):
    return [x * k for k in range(6) if k % 2 == 0]


@case(args=lambda: (arr(3),), graphs=1, ops=3)
def dict_comprehension(x):
    return {f"k{i}": x * i for i in range(3)}


@case(args=lambda: (arr(3), [1, 4, 7, 2]), graphs=1, ops=1)
def set_comprehension(x, ks):
    return x * len({k % 3 for k in ks})


@case(args=lambda: (arr(3),), graphs=1, ops=8)
def nested_comprehension(x):
    return [[x * i + j for j in range(2)] for i in range(2)]


@case(args=lambda: (arr(3, 2),), graphs=1, ops=6)
def over_array_rows(x):
    return [row.sum() for row in x]


@case(args=lambda: (arr(3), 2.0), graphs=1, ops=3)
def uses_enclosing_variable(x, k):
    return [v * k for v in (x, x + 1)]


@case(args=lambda: ([arr(2, seed=i) for i in range(3)], [arr(2, seed=5 + i) for i in range(3)]), graphs=1, ops=3)
def over_zip(xs, ys):
    return [a - b for a, b in zip(xs, ys)]


@case(args=lambda: ([arr(2, seed=i) for i in range(3)],), graphs=1, ops=3)
def over_enumerate(xs):
    return [v * i for i, v in enumerate(xs)]


@case(args=lambda: ({"a": arr(2), "b": arr(2, seed=1)},), graphs=1, ops=2)
def dict_comprehension_over_items(d):
    return {k: v + 1 for k, v in d.items()}


@case(args=lambda: ([arr(2, seed=i) for i in range(3)],), graphs=1, ops=3)
def calls_user_function(xs):
    return [_double(v) for v in xs]


@case(args=lambda: ([[arr(2), arr(2, seed=1)], [arr(2, seed=2)]],), graphs=1, ops=3)
def flattening(xss):
    return [v + 1 for xs in xss for v in xs]


@case(args=lambda: (arr(3),), graphs=1, ops=3)
def comprehension_in_condition(x):
    return [x * i for i in range(5) if i in [j * 2 for j in range(3)]]


@case(args=lambda: (arr(3),), graphs=1, ops=3)
def loop_variable_does_not_leak(x):
    i = 10
    ys = [x + i for i in range(2)]
    return ys, x * i


@case(args=lambda: ([arr(3, seed=i) for i in range(3)],), graphs=1, ops=4)
def stacked(xs):
    return np.stack([v * 2 for v in xs])


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def dict_comprehension_python_values(x):
    d = {k: len(k) for k in ("a", "bb")}
    return d, x * d["bb"]


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def set_comprehension_of_strings(x):
    return sorted({s.upper() for s in ("a", "b", "a")}), x - 1


@case(args=lambda: (arr(3),), graphs=1, ops=2)
def comprehension_of_lambdas(x):
    fs = [lambda v, k=k: v * k for k in (2.0, 3.0)]
    return [f(x) for f in fs]


@case(args=lambda: (arr(3), 2), graphs=1, ops=2)
def comprehension_reads_argument_cell(x, n):
    def later():
        return n

    return [x * (n + later()) for _ in range(2)]


@case(args=lambda: (arr(2, 2),), graphs=1, ops=6)
def nested_over_array(x):
    return [[v for v in row] for row in x]


@case(args=lambda: ({"a": 1.0, "b": 2.0, "c": 3.0},), graphs=0, ops=0)
def dict_comprehension_filter_only_python(d):
    return {k: v for k, v in d.items() if v > 1.5}


@case(args=lambda: (arr(3), [[1.0], [2.0, 3.0]]), graphs=0, ops=0,
      breaks=["comprehension inside it unbinds", "comprehension inside it unbinds"], min_version=(3, 12))
def break_in_a_comprehension_inside_a_loop(x, rows):
    # 3.12 inlines the comprehension: its end unbinds `value` again (it was unbound), so
    # the loop cannot run in a bridge whose exits hand `value` on: the frame runs eagerly
    # from the break (found on boltons, where a bridge handed on nothing and crashed).
    for row in rows:
        printed = [print(value) for value in row]
    return x * 2, printed
