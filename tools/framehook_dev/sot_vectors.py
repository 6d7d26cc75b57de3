"""A tensor type written in Python and the SOT backend for it (``Vector``, ``VectorBackend``).

``sot_soak`` measures ``sys.gettotalrefcount()`` on debug builds with it: numpy's wheels
are release builds, whose inlined reference counting a debug interpreter does not total
(a plain ``a + 1`` on an array moves the total by 8), so the total is exact only while
every object is handled by the interpreter's own code. The translator never enters this
file (the backend's ``skip_prefixes``): its operations are graph nodes, as numpy's are.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any, Callable


class Vector:
    """An immutable one-dimensional tensor of Python numbers, with a dtype label."""

    __slots__ = ("items", "dtype")

    def __init__(self, items: Sequence[Any], dtype: str = "float64") -> None:
        self.items = tuple(items)
        self.dtype = dtype

    @property
    def shape(self) -> tuple[int]:
        return (len(self.items),)

    def _elementwise(self, other: Any, operation: Callable[[Any, Any], Any]) -> Vector:
        if isinstance(other, Vector):
            if other.shape != self.shape:
                raise ValueError(f"shapes {self.shape} and {other.shape} differ")
            return Vector([operation(a, b) for a, b in zip(self.items, other.items)], self.dtype)
        return Vector([operation(a, other) for a in self.items], self.dtype)

    def __add__(self, other: Any) -> Vector:
        return self._elementwise(other, operator.add)

    def __radd__(self, other: Any) -> Vector:
        return self._elementwise(other, lambda a, b: b + a)

    def __sub__(self, other: Any) -> Vector:
        return self._elementwise(other, operator.sub)

    def __rsub__(self, other: Any) -> Vector:
        return self._elementwise(other, lambda a, b: b - a)

    def __mul__(self, other: Any) -> Vector:
        return self._elementwise(other, operator.mul)

    def __rmul__(self, other: Any) -> Vector:
        return self._elementwise(other, lambda a, b: b * a)

    def __repr__(self) -> str:
        return f"Vector({list(self.items)}, {self.dtype!r})"


def total(vector: Vector) -> Any:
    """The sum of the items: an operation of the backend that gives a Python number."""
    return sum(vector.items)


def same(a: Any, b: Any) -> bool:
    """Whether two results are equal: the same type, and for vectors the same dtype and items."""
    if isinstance(a, Vector) or isinstance(b, Vector):
        return type(a) is type(b) and a.dtype == b.dtype and a.items == b.items
    return type(a) is type(b) and a == b


def _resolve(value: Any, values: list, symbol: type) -> Any:
    """A graph node's argument with its graph symbols replaced by their values."""
    if isinstance(value, symbol):
        return values[value.index]
    if isinstance(value, (tuple, list)):
        return type(value)(_resolve(v, values, symbol) for v in value)
    if isinstance(value, slice):
        return slice(*(_resolve(v, values, symbol) for v in (value.start, value.stop, value.step)))
    return value


class VectorBackend:
    """The backend protocol (``framehook.sot.register_backend``) for ``Vector``: a graph
    compiles to a function that runs its nodes in order."""

    tensor_types = (Vector,)
    meta_attributes = ("dtype", "shape")
    conversions = ()
    skip_prefixes = (__file__,)

    def is_op(self, function: Any) -> bool:
        return function is total

    def is_constant_operand(self, value: Any) -> bool:
        return False

    def example(self, vector: Vector) -> Vector:
        return vector  # immutable: the translation cannot change the caller's

    def compile(self, graph: tuple) -> Callable[..., tuple]:
        from framehook._native import SotRef

        _inputs, nodes, outputs = graph

        def run(*arguments: Any) -> tuple:
            values = list(arguments)
            for function, args, kwargs, _filename, _line in nodes:
                values.append(function(*_resolve(args, values, SotRef),
                                       **{k: _resolve(v, values, SotRef) for k, v in kwargs.items()}))
            return tuple(values[o] for o in outputs)

        return run
