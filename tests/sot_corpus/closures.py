"""Closures: cells read and written (nonlocal), nested levels, closures as the translated function."""

import numpy as np

from ._case import arr, case


def _make_scaled(factor):
    def scaled(x):
        return x * factor

    return scaled


def _make_bias(bias):
    def biased(x):
        return x + bias

    return biased


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def read_cell(x):
    k = 2.0

    def f():
        return x * k

    return f()


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def nonlocal_counter(x):
    n = 0

    def bump():
        nonlocal n
        n += 1

    bump()
    bump()
    return x * n


@case(args=lambda: (arr(3),), graphs=1, ops=2)
def nonlocal_array(x):
    acc = x

    def add(v):
        nonlocal acc
        acc = acc + v

    add(1.0)
    add(2.0)
    return acc


case(args=lambda: (arr(3),), graphs=1, ops=1, name="module_level_closure")(_make_scaled(3.0))
case(args=lambda: (arr(3),), graphs=1, ops=1, name="closure_over_array")(_make_bias(np.array([1.0, 2.0, 3.0])))


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def cell_changed_after_def(x):
    k = 1.0

    def f():
        return x * k

    k = 5.0
    return f()


@case(args=lambda: (arr(3),), graphs=1, ops=2)
def two_levels_of_cells(x):
    a = 2.0

    def f():
        b = 3.0

        def g():
            return x * a + b

        return g()

    return f()


@case(args=lambda: (arr(3), 0.5), graphs=1, ops=1)
def lambda_closure(x, k):
    f = lambda: x - k  # noqa: E731
    return f()


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def closure_appends_to_cell_list(x):
    log = []

    def record(v):
        log.append(v)
        return v

    y = record(x + 1)
    return y, log


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def late_binding(x):
    fs = []
    for i in range(3):
        fs.append(lambda: i)  # noqa: B023  (late binding on purpose)
    return x * (fs[0]() + fs[1]())


@case(args=lambda: (arr(3),), graphs=1, ops=2)
def argument_cell_rebound(x):
    def f():
        return x + 1

    x = x * 2
    return f()


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def argument_cell_rebound_old_value_returned(x):
    # (The fuzzer's seed 153: the generated code stored the argument's cell anew, then read
    # the old value, a graph input, from that cell.)
    def f():
        return x

    old = (x,)
    x = x + 1.0
    return old, f()


@case(args=lambda: (arr(3), np.float64(1.5)), graphs=1, ops=2)
def argument_cell_rebound_in_place_scalar(x, c):
    # A numpy scalar's `+=` makes a new object (an array's writes into it).
    def inner(w):
        return (c, w)

    pair = inner(x * 2.0)
    c += [7]
    return pair, c


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def nonlocal_two_levels_down(x):
    total = 0

    def outer():
        def inner():
            nonlocal total
            total += 2

        inner()

    outer()
    return x * total


@case(args=lambda: (arr(3),), graphs=1, ops=3)
def closure_returned_and_called(x):
    def make(k):
        def use(v):
            return v * k + 1

        return use

    return make(2.0)(x) - 1


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def closure_divides_by_cell(x):
    scale = 4.0

    def f(v):
        return v / scale

    return f(x)
