"""Recursion: recursive Python functions over small ints and over lists of arrays (inlined)."""

import numpy as np

from ._case import arr, case


def _fib(n):
    return n if n < 2 else _fib(n - 1) + _fib(n - 2)


def _rsum(xs):
    if len(xs) == 1:
        return xs[0]
    return xs[0] + _rsum(xs[1:])


def _rpow(v, n):
    return v if n == 0 else v * _rpow(v, n - 1)


def _factorial(n):
    return 1 if n <= 1 else n * _factorial(n - 1)


def _is_even(n):
    return True if n == 0 else _is_odd(n - 1)


def _is_odd(n):
    return False if n == 0 else _is_even(n - 1)


def _tree_sum(node):
    if isinstance(node, np.ndarray):
        return node
    parts = [_tree_sum(child) for child in node]
    out = parts[0]
    for p in parts[1:]:
        out = out + p
    return out


def _depth(node):
    if not isinstance(node, list):
        return 0
    return 1 + max(_depth(child) for child in node)


@case(args=lambda: (arr(3), 6), graphs=1, ops=1)
def fibonacci_scale(x, n):
    return x * _fib(n)


@case(args=lambda: ([arr(3, seed=i) for i in range(4)],), graphs=1, ops=3)
def recursive_sum_of_arrays(xs):
    return _rsum(xs)


@case(args=lambda: (arr(3), 3), graphs=1, ops=3)
def recursive_power(x, n):
    return _rpow(x, n)


@case(args=lambda: (arr(3), 5), graphs=1, ops=1)
def factorial_scale(x, n):
    return x / _factorial(n)


@case(args=lambda: (arr(3), 7), graphs=1, ops=1)
def mutual_recursion(x, n):
    return x * 2 if _is_even(n) else x * 3


@case(args=lambda: ([arr(2), [arr(2, seed=1), arr(2, seed=2)], [arr(2, seed=3)]],), graphs=1, ops=3)
def recursive_tree_of_arrays(tree):
    return _tree_sum(tree)


@case(args=lambda: (arr(3), 3), graphs=1, ops=3)
def recursive_nested_function(x, n):
    def go(v, k):
        return v if k == 0 else go(v + 1, k - 1)

    return go(x, n)


@case(args=lambda: (arr(3), [[1, [2]], [3]]), graphs=1, ops=1)
def recursive_depth_of_list(x, tree):
    return x * _depth(tree)
