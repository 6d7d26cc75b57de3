"""For loops (unrolled): range, lists, tuples, enumerate, zip, dict views, arrays, nesting, break/continue/else,
iterators written in Python."""

import numpy as np

from ._case import Cycling, arr, case


@case(args=lambda: (arr(3),), graphs=1, ops=3)
def range_loop(x):
    for i in range(3):
        x = x + i
    return x


@case(args=lambda: (arr(3),), graphs=1, ops=6)
def range_with_step(x):
    for i in range(0, 6, 2):
        x = x * 2 - i
    return x


@case(args=lambda: (arr(3), [1.0, 2.0, 3.0]), graphs=1, ops=3)
def list_loop(x, ks):
    for k in ks:
        x = x * k
    return x


@case(args=lambda: (arr(3),), graphs=1, ops=2)
def tuple_loop(x):
    for k in (0.5, 1.5):
        x = x + k
    return x


@case(args=lambda: (arr(3), [1.0, 2.0, 3.0]), graphs=1, ops=3)
def enumerate_loop(x, ks):
    for i, k in enumerate(ks):
        x = x + i * k
    return x


@case(args=lambda: ([arr(2, seed=i) for i in range(3)], [arr(2, seed=10 + i) for i in range(3)]), graphs=1, ops=3)
def zip_loop(xs, ys):
    out = []
    for a, b in zip(xs, ys):
        out.append(a * b)
    return out


@case(args=lambda: ({"a": arr(3), "b": arr(3, seed=1)},), graphs=1, ops=2)
def dict_items_loop(d):
    total = 0.0
    for _key, v in d.items():
        total = total + v
    return total


@case(args=lambda: (arr(3), {"a": 1.0, "b": 2.0}), graphs=1, ops=2)
def dict_keys_loop(x, d):
    names = []
    for k in d.keys():
        names.append(k)
        x = x + d[k]
    return x, names


@case(args=lambda: (arr(3), {"a": 1.5, "b": 2.0}), graphs=1, ops=2)
def dict_values_loop(x, d):
    for v in d.values():
        x = x * v
    return x


@case(args=lambda: (arr(3), {"b": 1.0, "a": 2.0}), graphs=1, ops=2)
def dict_iteration_order(x, d):
    out = []
    for k in d:
        out.append((k, x * d[k]))
    return out


@case(args=lambda: (arr(3),), graphs=1, ops=6)
def nested_loops(x):
    for i in range(2):
        for j in range(3):
            x = x + i * j
    return x


@case(args=lambda: (arr(3),), graphs=1, ops=3)
def break_on_python_value(x):
    for i in range(10):
        if i == 3:
            break
        x = x + 1
    return x


@case(args=lambda: (arr(3),), graphs=1, ops=3)
def continue_on_python_value(x):
    for i in range(5):
        if i % 2:
            continue
        x = x * 2
    return x


@case(args=lambda: (arr(3),), graphs=1, ops=3)
def for_else(x):
    for _ in range(2):
        x = x + 1
    else:
        x = x * 10
    return x


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def for_else_skipped_by_break(x):
    for k in [1, 2, 3]:
        if k == 2:
            break
        x = x - k
    else:
        x = x * 100
    return x


@case(args=lambda: (arr(3, 2),), graphs=1, ops=10)
def iterate_array_rows(x):
    acc = np.zeros(2)
    for row in x:
        acc = acc + row * 2
    return acc


@case(args=lambda: ([arr(2, seed=i) for i in range(4)],), graphs=1, ops=3)
def loop_over_list_of_arrays(xs):
    total = xs[0]
    for v in xs[1:]:
        total = total + v
    return total


@case(args=lambda: (arr(3),), graphs=1, ops=6)
def descending_range(x):
    for i in range(2, -1, -1):
        x = x * 10 + i
    return x


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def python_accumulator(x):
    n = 0
    for i in range(4):
        n += i
    return x * n


@case(args=lambda: (arr(3),), graphs=1, ops=3)
def while_true_with_break(x):
    i = 0
    while True:
        i += 1
        x = x + i
        if i >= 3:
            break
    return x


@case(args=lambda: (arr(2, 3),), graphs=1, ops=4)
def enumerate_array_rows(x):
    out = []
    for i, row in enumerate(x):
        out.append(row * i)
    return out


@case(args=lambda: (arr(3), "abc"), graphs=1, ops=3)
def loop_over_string(x, s):
    for ch in s:
        x = x + ord(ch) % 7
    return x


@case(args=lambda: (arr(3),), graphs=1, ops=4)
def loop_building_list_then_stack(x):
    parts = []
    for k in range(3):
        parts.append(x * k)
    return np.stack(parts)


@case(args=lambda: (arr(2),), graphs=1, ops=6)
def nested_loop_with_break(x):
    for i in range(3):
        for j in range(3):
            if j > i:
                break
            x = x + j
    return x


class _Countdown:
    """An iterator written in Python (jinja2's token streams are such)."""

    def __init__(self, start):
        self.left = start

    def __iter__(self):
        return self

    def __next__(self):
        if self.left <= 0:
            raise StopIteration
        self.left -= 1
        return self.left


class _Steps:
    def __init__(self, *steps):
        self.steps = steps

    def __iter__(self):
        return _StepIterator(self)


class _StepIterator:
    def __init__(self, owner):
        self.owner, self.position = owner, 0

    def __iter__(self):
        return self

    def __next__(self):
        if self.position == len(self.owner.steps):
            raise StopIteration()
        self.position += 1
        return self.owner.steps[self.position - 1]


_countdowns = Cycling(_Countdown(3), _Countdown(2))


@case(args=lambda: (arr(3), _countdowns.next_value()), graphs=1, ops=3, rejected=1)
def a_python_iterator_is_advanced_inlined(x, countdown):
    # Its __next__ runs inlined until its StopIteration; the count it leaves is written
    # back, and another count fails the guards.
    for left in countdown:
        x = x + left
    return x, countdown.left, next(countdown, "done")


@case(args=lambda: (arr(3),), graphs=1, ops=3)
def a_python_iterable_made_here(x):
    for step in _Steps(1.0, 2.0, 3.0):
        x = x * step
    return x


class _Fields(tuple):
    """attrs' `CAttributes`: a tuple subclass keeping tuple's iteration."""

    @property
    def first(self):
        return self[0]


_field_rows = Cycling(_Fields((1.0, 2.0)), _Fields((3.0, 4.0, 5.0)))


@case(args=lambda: (arr(3), _field_rows.next_value()), graphs=1, ops=2, rejected=1)
def a_tuple_subclass_from_the_frame_iterates_as_a_tuple(x, fields):
    for value in fields:
        x = x * value
    return x, fields.first, len(fields)
