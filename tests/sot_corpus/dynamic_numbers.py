"""Numbers that change between calls (a step count, a learning rate, a value an opaque call
returns): the first translation specializes them; the first change recompiles once with the
number computed with in the graph (a dynamic source, guarded on its type), and later calls
hit the cache whatever its value. Arithmetic on such numbers is free, as Python's is.
Each case has its own ``Changing`` number (one per run of the case)."""

import numpy as np

from ._case import Changing, arr, case


class _Schedule:
    def __init__(self, step):
        self.step = step


_k = Changing(3)


@case(args=lambda: (arr(3), _k.next_value()), graphs=1, ops=2, recompiles=1)
def scale_by_changing_int(x, k):
    return x * k + k


_rate = Changing(0.5, 0.25)


@case(args=lambda: (arr(3), arr(3, seed=1), _rate.next_value()), graphs=1, ops=2, recompiles=1)
def sgd_step_with_changing_rate(param, grad, lr):
    return param - lr * grad


_n = Changing(1)


@case(args=lambda: (arr(3), _n.next_value()), graphs=1, ops=1, recompiles=1)
def arithmetic_on_the_number_first(x, n):
    shift = n * 2 + 1
    return x + shift


_returned = Changing(1)


@case(args=lambda: (arr(3), _returned.next_value()), graphs=1, ops=1, recompiles=1)
def number_returned_beside_array(x, n):
    return x * n, n + 1


_compared = Changing(1)


@case(args=lambda: (arr(3), _compared.next_value()), graphs=1, ops=1, recompiles=1)
def comparison_as_array_operand(x, n):
    return x * (n > 2)


_scheduled = Changing(2)


@case(args=lambda: (arr(3), _Schedule(_scheduled.next_value())), graphs=1, ops=1, recompiles=1)
def attribute_of_an_argument(x, schedule):
    return x / schedule.step


_beside = Changing(1)


@case(args=lambda: (arr(3), _beside.next_value(), 4), graphs=1, ops=1, recompiles=1)
def changing_beside_fixed(x, n, m):
    return x + (n - m)


_lr = Changing(0.1, 0.01)


@case(args=lambda: (arr(2, 3), _lr.next_value()), graphs=1, ops=3, recompiles=1)
def numpy_function_then_changing_scale(x, lr):
    y = np.tanh(x)
    return y * lr + y


_bound = Changing(5)


@case(args=lambda: (arr(4), _bound.next_value()), graphs=1, ops=1, recompiles=1)
def number_only_arithmetic_then_array(x, n):
    total = 0
    total += n
    total -= 1
    return x * total, total >= n
