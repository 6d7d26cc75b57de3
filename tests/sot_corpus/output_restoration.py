"""Output restoration: returning containers and objects mixing arrays and Python values, arguments."""

import numpy as np

from ._case import arr, case, iarr


class _Result:
    def __init__(self, value, status):
        self.value = value
        self.status = status


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def tuple_mixed(x):
    return x + 1, 2, "s", None


@case(args=lambda: (arr(3),), graphs=1, ops=2)
def list_mixed(x):
    return [x * 2, [x, 3.0], {"k": x - 1}]


@case(args=lambda: (arr(2, 3),), graphs=1, ops=1)
def dict_mixed(x):
    return {"sum": x.sum(), "shape": x.shape, "x": x}


@case(args=lambda: (arr(3), arr(3, seed=1)), graphs=1, ops=1)
def arguments_returned(x, y):
    z = x + y
    return y, x, z


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def same_array_twice(x):
    y = x * 2
    pair = (y, y)
    return pair[0] is pair[1], pair


@case(args=lambda: (arr(4),), graphs=1, ops=1)
def numpy_scalar(x):
    return x.max()


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def deeply_nested(x):
    return ((x,), ((x + 1,),))


@case(args=lambda: (arr(3),), graphs=0, ops=0)
def python_constant(x):
    return 3.5


@case(args=lambda: (arr(3), 1), graphs=0, ops=0)
def varargs_returned(*args):
    return args


@case(args=lambda: (arr(3),), kwargs=lambda: {"k": 2.0, "z": "a"}, graphs=1, ops=1)
def kwargs_returned(x, **kw):
    return kw, x * kw["k"]


@case(args=lambda: (iarr(5),), graphs=1, ops=2)
def int_results_and_dtype(a):
    return a.sum(), a.argmax(), a.dtype


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def new_object(x):
    return _Result(x * 2, "ok")


@case(args=lambda: (arr(3),), graphs=1, ops=2)
def numpy_bool(x):
    return (x > 0).any()


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def empty_containers(x):
    return (), [], {}, x + 0


@case(args=lambda: ([arr(3), arr(3, seed=1)],), graphs=1, ops=1)
def argument_list_returned_after_append(xs):
    xs.append(xs[0] + 1)
    return xs


@case(args=lambda: (arr(3),), graphs=1, ops=2)
def intermediate_and_final(x):
    y = x * 2
    z = y + 1
    return {"y": y, "z": z, "x": x}


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def numpy_constant_array(x):
    return np.ones(2), x


@case(args=lambda: (arr(2, 2),), graphs=1, ops=2)
def views_of_argument(x):
    return x[0], x.T
