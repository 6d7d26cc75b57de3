"""SOT's numpy backend: tensors are numpy arrays and scalars; a graph compiles to
a generated Python function that runs only the captured operations, each at its
source line (so a traceback through a graph shows the user's own lines)."""

from __future__ import annotations

import ast
import builtins
import os
import types
import weakref
from typing import Any, Callable

import numpy as np

_NUMPY_DIR = os.path.dirname(np.__file__) + os.sep
_ARRAY_TYPE = np.ndarray


def _is_numpy_callable(function: Any) -> bool:
    if isinstance(function, np.ufunc):
        return True
    module = getattr(function, "__module__", None) or ""
    if module == "numpy" or module.startswith("numpy."):
        return callable(function) and not isinstance(function, type)
    return False


class NumpyBackend:
    """The backend protocol, for numpy (see ``framehook.sot.register_backend``)."""

    name = "numpy"
    tensor_types = (np.ndarray, np.generic)
    # What a tensor's guard compares (its exact type is compared too).
    meta_attributes = ("dtype", "shape")
    # Tensor methods whose result is a Python value computed from the data.
    conversions = ("item", "tolist", "tobytes", "__bool__", "__float__", "__int__", "__index__", "__len__")
    # Files the translator never enters: numpy's own.
    skip_prefixes = (_NUMPY_DIR,)

    def is_op(self, function: Any) -> bool:
        return _is_numpy_callable(function)

    def is_constant_operand(self, value: Any) -> bool:
        return isinstance(value, (np.dtype, type))

    def example(self, value: Any) -> Any:
        return value.copy() if type(value) is _ARRAY_TYPE else value

    def compile(self, graph: tuple) -> Callable[..., tuple]:
        return compile_graph(graph)


def compile_graph(graph: tuple) -> Callable[..., tuple]:
    """``graph`` is ``(inputs, nodes, outputs)``, nodes ``(function, args, kwargs, filename,
    line)`` whose arguments hold ``framehook._native.SotRef`` symbols."""
    from .._native import SotRef

    inputs, nodes, outputs = graph
    constants: dict[str, Any] = {}

    def operand(value: Any) -> str:
        if isinstance(value, SotRef):
            return f"v{value.index}"
        if isinstance(value, tuple):
            return "(" + "".join(operand(v) + ", " for v in value) + ")"
        if isinstance(value, list):
            return "[" + ", ".join(operand(v) for v in value) + "]"
        if isinstance(value, slice):
            return f"_slice({operand(value.start)}, {operand(value.stop)}, {operand(value.step)})"
        if value is None or type(value) in (bool, str):
            return repr(value)
        name = f"c{len(constants)}"
        constants[name] = value
        return name

    params = ", ".join(f"v{i}" for i in range(inputs))
    statements = []
    filename = nodes[0][3] if nodes else "<sot graph>"
    for index, (function, args, kwargs, node_file, line) in enumerate(nodes):
        call_args = [operand(a) for a in args] + [f"{k}={operand(v)}" for k, v in kwargs.items()]
        statement = f"v{inputs + index} = {operand(function)}({', '.join(call_args)})"
        statements.append((statement, line if node_file == filename else 0))
    returned = "".join(f"v{o}, " for o in outputs)
    source = f"def __sot_graph({params}):\n" + "".join(f"    {s}\n" for s, _ in statements)
    source += f"    return ({returned})\n"
    tree = ast.parse(source)
    definition = tree.body[0]
    assert isinstance(definition, ast.FunctionDef)
    lines = [line for _, line in statements if line > 0] or [1]
    placed = [line if line > 0 else min(lines) for _, line in statements] + [max(lines)]
    for node, line in zip(definition.body, placed):
        for child in ast.walk(node):
            if isinstance(child, (ast.stmt, ast.expr)):
                child.lineno = child.end_lineno = line
    definition.lineno = min(lines)
    definition.end_lineno = max(lines)
    key = (filename, source, tuple(placed))
    code = _CODES.get(key)
    if code is None:
        module_code = compile(tree, filename, "exec")
        code = next(c for c in module_code.co_consts if isinstance(c, types.CodeType))
        # Marked nested: free-threaded 3.13 makes a function of a code without the flag
        # immortal once a thread has run (deferred reference counting, gh-117696).
        code = code.replace(co_flags=code.co_flags | _CO_NESTED)
        _CODES[key] = code
    namespace: dict[str, Any] = {"__builtins__": builtins, "_slice": slice, **constants}
    return types.FunctionType(code, namespace, "__sot_graph")


# A graph's code, by its source and lines, while a graph function uses it: graphs of one
# shape (recompilations for another shape, dtype or number; translations of a closure made
# again) share one code object, their constants (numbers included) in the function's
# globals. CPython frees no code object made on free-threaded 3.13 once a thread has run
# (gh-117696): there a new code per graph would be kept for good, and this reuses it.
_CODES: weakref.WeakValueDictionary[tuple, types.CodeType] = weakref.WeakValueDictionary()
_CO_NESTED = 0x10
