"""SOT's numpy backend: tensors are numpy arrays and scalars; a graph compiles to
a generated Python function that runs only the captured operations, each at its
source line (so a traceback through a graph shows the user's own lines)."""

from __future__ import annotations

import ast
import os
import types
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
        if value is None or isinstance(value, (bool, int, float, str)) and type(value) in (bool, int, float, str):
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
    namespace: dict[str, Any] = {"_slice": slice, **constants}
    exec(compile(tree, filename, "exec"), namespace)
    function = namespace["__sot_graph"]
    assert isinstance(function, types.FunctionType)
    return function
