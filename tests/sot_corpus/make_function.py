"""Making functions inside translated code: lambdas, nested defs, defaults, decorators."""

import numpy as np

from ._case import arr, case


@case(args=lambda: (arr(3),), graphs=1, ops=2)
def local_lambda(x):
    f = lambda v: v * 2  # noqa: E731
    return f(x) + 1


@case(args=lambda: (arr(3),), graphs=1, ops=2)
def lambda_with_default(x):
    f = lambda v, k=3.0: v * k  # noqa: E731
    return f(x), f(x, 0.5)


@case(args=lambda: (arr(3),), graphs=1, ops=2)
def nested_def(x):
    def inner(v):
        return v - 1

    return inner(inner(x))


@case(args=lambda: (arr(3), 4.0), graphs=1, ops=1)
def default_from_local(x, k):
    def inner(v, scale=k):
        return v * scale

    return inner(x)


@case(args=lambda: (arr(3), 2.0), graphs=1, ops=3)
def nested_def_capturing(x, k):
    def inner(v):
        return v + k

    return inner(x) * inner(x)


@case(args=lambda: (arr(3),), graphs=1, ops=2)
def list_of_lambdas(x):
    fs = [lambda v: v + 1, lambda v: v * 2]
    for f in fs:
        x = f(x)
    return x


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def keyword_only_default_lambda(x):
    f = lambda v, *, k=2: v ** k  # noqa: E731
    return f(x, k=3)


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def lambda_returning_lambda(x):
    make = lambda k: (lambda v: v * k)  # noqa: E731
    return make(4.0)(x)


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def annotated_nested_def(x):
    def inner(v: np.ndarray, k: float = 2.0) -> np.ndarray:
        return v * k

    return inner(x)


@case(args=lambda: (arr(3),), graphs=1, ops=2)
def decorator_defined_inside(x):
    def deco(f):
        def wrapped(v):
            return f(v) + 1

        return wrapped

    @deco
    def g(v):
        return v * 2

    return g(x)


@case(args=lambda: (arr(3),), graphs=1, ops=3)
def defaults_bind_loop_variable(x):
    fs = []
    for k in (1.0, 2.0):
        fs.append(lambda v, k=k: v * k)
    return fs[0](x) + fs[1](x)


@case(args=lambda: (arr(3),), graphs=1, ops=2)
def varargs_lambda(x):
    f = lambda *vs: vs[0] - vs[-1]  # noqa: E731
    return f(x, 1.0, x * 3)


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def kwargs_lambda(x):
    f = lambda **kw: kw["v"] * kw["k"]  # noqa: E731
    return f(v=x, k=5.0)
