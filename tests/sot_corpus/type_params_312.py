"""PEP 695 type parameters and type aliases (Python 3.12+) on functions and classes used by translated code."""

from ._case import arr, case


def _first[T](items: list[T]) -> T:
    return items[0]


class _Box[T]:
    def __init__(self, v: T):
        self.v = v

    def get(self) -> T:
        return self.v


def _scale[T: float](v, k: T):
    return v * k


type _Vec = list[float]


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def generic_function(x):
    return _first([x, 1.0]) * 2


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def generic_class(x):
    return _Box(x + 1).get()


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def type_alias_annotation(x):
    v: _Vec = [1.0, 2.0]
    return x * len(v)


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def bounded_type_parameter(x):
    return _scale(x, 3.0)


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def generic_function_defined_inside(x):
    def inner[T](v: T) -> T:
        return v

    return inner(x) + 1


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def type_parameters_introspected(x):
    return x * len(_Box.__type_params__), _first.__type_params__[0].__name__
