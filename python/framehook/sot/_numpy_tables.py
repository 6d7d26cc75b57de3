"""Tables of the numpy backend's rules, keyed by the identity of functions (`_ById`,
`_AnswersById`): Python's operators and ndarray's methods; and which arrays a graph makes
itself (`_made_by_the_graph`), what `_numpy_backend`'s operand-write rule asks."""

import operator
from typing import Any

import numpy as np


class _ById(dict[int, tuple[Any, Any]]):
    """A table keyed by the identity of functions (a node's function may be any callable,
    unhashable or with an ``__eq__`` of its own)."""

    def __init__(self, table: Any):
        super().__init__((id(k), (k, v)) for k, v in (table.items() if isinstance(table, dict) else
                                                       ((k, True) for k in table)))

    def has(self, function: Any) -> bool:
        # The table holds its functions: an object alive with one's id is that function.
        return id(function) in self

    def of(self, function: Any) -> Any:
        return self[id(function)][1]

    def functions(self) -> list[Any]:
        return [function for function, _ in self.values()]


_NOT_KEPT: Any = object()


class _AnswersById:
    """Answers about functions asked once each, by identity (each entry holds its function:
    an object alive with its id is that function), ``kept`` at most, all forgotten when
    full."""

    def __init__(self, kept: int):
        self._answers: dict[int, tuple[Any, Any]] = {}
        self._kept = kept

    def get(self, function: Any) -> Any:
        """The answer kept for ``function``, or ``_NOT_KEPT``."""
        entry = self._answers.get(id(function))
        return _NOT_KEPT if entry is None else entry[1]

    def keep(self, function: Any, answer: Any) -> None:
        if len(self._answers) >= self._kept:
            self._answers.clear()
        self._answers[id(function)] = (function, answer)


# ``operator.add(a, b)`` is ``a + b`` by definition: the expression, without the call.
_INFIX = _ById({
    operator.add: "+", operator.sub: "-", operator.mul: "*", operator.truediv: "/",
    operator.floordiv: "//", operator.mod: "%", operator.pow: "**", operator.matmul: "@",
    operator.lshift: "<<", operator.rshift: ">>", operator.and_: "&", operator.or_: "|",
    operator.xor: "^", operator.lt: "<", operator.le: "<=", operator.eq: "==",
    operator.ne: "!=", operator.gt: ">", operator.ge: ">=",
})
_PREFIX = _ById({operator.neg: "-", operator.pos: "+", operator.invert: "~"})
# In-place operators: on an immutable number (``step += 1``), the operator itself.
_IN_PLACE = _ById({
    operator.iadd: "+", operator.isub: "-", operator.imul: "*", operator.itruediv: "/",
    operator.ifloordiv: "//", operator.imod: "%", operator.ipow: "**",
})
_NUMBERS = (bool, int, float, complex)

_METHODS = np.ndarray.__dict__


def _is_made(value: Any, made: set, ref_type: Any) -> bool:
    return isinstance(value, ref_type) and value.index in made


# Functions that make an array of their operand (taking no `out`), whose signatures older
# interpreters' `inspect` cannot read.
_ARRAY_MAKERS = _ById([np.array, np.asarray, np.copy, _METHODS["copy"], _METHODS["astype"]])
# `copy=` values that always copy (numpy 1.22+ also names them by `np._CopyMode`).
_ALWAYS_COPY = tuple(mode for mode in (True, getattr(getattr(np, "_CopyMode", None), "ALWAYS", None))
                     if mode is not None)


def _made_by_the_graph(function: Any, args: tuple, kwargs: dict, made: set, ref_type: type) -> bool:
    """Whether a node's result is an array only the graph holds, whose writes nothing outside
    the graph sees (so a check failing after them can run the frame again): a copy (new
    memory: ``np.copy``, ``ndarray.copy``, ``np.array`` and ``astype`` by default,
    ``np.asarray(copy=True)``), or an array the graph made given back as it is or copied
    (``np.array``/``np.asarray`` not asked to copy, ``astype(copy=False)``, an in-place
    operator's target)."""
    given_back = bool(args) and _is_made(args[0], made, ref_type)
    if not (_ARRAY_MAKERS.has(function) or _IN_PLACE.has(function)):
        return False
    if function is np.copy or function is _METHODS["copy"]:
        return True
    if function is _METHODS["astype"]:
        copy = args[5] if len(args) > 5 else kwargs.get("copy", True)
        return any(copy is always for always in _ALWAYS_COPY) or given_back
    if function is np.array or function is np.asarray:
        if kwargs.get("like") is not None:
            return False  # made by another library's `__array_function__`
        copy = kwargs.get("copy", True if function is np.array else None)
        return any(copy is always for always in _ALWAYS_COPY) or given_back
    return given_back  # an in-place operator's target
