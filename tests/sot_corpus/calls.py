"""Calls: positional, keyword, *args, **kwargs, defaults, inlined user functions and methods."""

import functools
import os

import numpy as np

from ._case import arr, case


def _double(v):
    return v * 2


def _affine(v, scale=1.0, shift=0.0):
    return v * scale + shift


def _add3(a, b, c):
    return a + b + c


def _sum_all(*values):
    total = values[0]
    for v in values[1:]:
        total = total + v
    return total


def _kw_only(v, **kw):
    return v * kw["a"] + kw["b"]


def _outer(v):
    return _inner(v) + 1


def _inner(v):
    return v * 10


def _power(v, *, k=2.0):
    return v ** k


def _subtract(a, b=2.0, /):
    return a - b


def _forward(*args, **kwargs):
    return _affine(*args, **kwargs)


def _split(v):
    return v + 1, v - 1


def _apply(f, v):
    return f(v) + f(v)


class _Scaler:
    def __init__(self, k):
        self.k = k

    def apply(self, v):
        return v * self.k

    def apply_twice(self, v):
        return self.apply(self.apply(v))


@case(args=lambda: (arr(3),), graphs=1, ops=2)
def inlined_helper(x):
    return _double(x) + 1


@case(args=lambda: (arr(3),), graphs=1, ops=2)
def keyword_arguments(x):
    return _affine(x, scale=2.0, shift=-1.0)


@case(args=lambda: (arr(3),), graphs=1, ops=2)
def defaults_used(x):
    return _affine(x)


@case(args=lambda: (arr(3),), graphs=1, ops=2)
def mixed_keyword_and_default(x):
    return _affine(x, shift=3.0)


@case(args=lambda: (arr(3), arr(3, seed=1)), graphs=1, ops=2)
def star_args(x, y):
    args = (x, y)
    return _add3(*args, 1.0)


@case(args=lambda: (arr(3),), graphs=1, ops=2)
def star_star_kwargs(x):
    kw = {"scale": 3.0}
    return _affine(x, **kw)


@case(args=lambda: (arr(3), arr(3, seed=1)), graphs=1, ops=2)
def varargs_callee(x, y):
    return _sum_all(x, y, x)


@case(args=lambda: (arr(3),), graphs=1, ops=2)
def kwargs_callee(x):
    return _kw_only(x, a=1.5, b=2.0)


@case(args=lambda: (arr(3),), graphs=1, ops=3)
def nested_calls(x):
    return _double(_double(_double(x)))


@case(args=lambda: (arr(3),), graphs=1, ops=2)
def call_chain(x):
    return _outer(x)


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def method_call(x):
    return _Scaler(2.0).apply(x)


@case(args=lambda: (arr(3),), graphs=1, ops=2)
def method_calls_method(x):
    return _Scaler(0.5).apply_twice(x)


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def keyword_only_parameter(x):
    return _power(x, k=3.0)


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def positional_only_default(x):
    return _subtract(x)


@case(args=lambda: (arr(3),), graphs=1, ops=2)
def forwarding_args_kwargs(x):
    return _forward(x, 2.0, shift=1.0)


@case(args=lambda: (arr(3),), kwargs=lambda: {"scale": 2.5}, graphs=1, ops=1)
def called_with_keyword(x, scale=1.0):
    return x * scale


@case(args=lambda: (arr(3),), kwargs=lambda: {"k": 3.0, "bias": arr(3, seed=4)}, graphs=1, ops=2)
def called_with_kwargs_dict(x, **options):
    return x * options["k"] + options["bias"]


@case(args=lambda: (arr(3),), graphs=1, ops=3)
def multiple_return_values(x):
    a, b = _split(x)
    return a * b


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def none_default_replaced(x, opts=None):
    opts = opts or {"k": 2.0}
    return x * opts["k"]


@case(args=lambda: (arr(3),), graphs=1, ops=3)
def function_as_argument(x):
    return _apply(_double, x)


@case(args=lambda: (arr(3), arr(3, seed=1)), graphs=1, ops=1)
def numpy_keyword_call(x, y):
    return np.maximum(x, y)


@case(args=lambda: (arr(4),), graphs=1, ops=1)
def numpy_decimals_keyword(x):
    return np.round(x, decimals=2)


@case(args=lambda: (arr(3), 1.0, 2.0), graphs=1, ops=2)
def call_with_star_list(x, a, b):
    return _affine(x, *[a, b])


@functools.cache
def _settings():
    # A body the translator cannot run (it reads a file): a call the cache answers never runs it.
    with open(os.devnull) as f:
        f.read()
    return {"scale": 3.0}


_settings()


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def functools_cache_answered(x):
    # The object the cache holds (a dict, the same object eager's call returns).
    settings = _settings()
    return x * settings["scale"], settings is _settings()
