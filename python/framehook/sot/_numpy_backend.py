"""SOT's numpy backend: tensors are numpy arrays and scalars; a graph compiles to
a generated Python function that runs only the captured operations, each at its
source line (so a traceback through a graph shows the user's own lines)."""

from __future__ import annotations

import ast
import builtins
import math
import operator
import os
import types
import warnings
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

    def compile_with_examples(self, graph: tuple, examples: tuple) -> Callable[..., tuple]:
        """``compile``, lowered for the types the inputs had while translating (guarded:
        every later call has the same exact types, dtypes and shapes). A subclass that
        overrides ``compile`` gets its own ``compile``."""
        if type(self).compile is not NumpyBackend.compile:
            return self.compile(graph)
        return compile_graph(graph, examples)


# ---------------------------------------------------------------- lowering
#
# A graph is compiled to Python calling numpy. What numpy's high-level Python entry points
# and Python's operators add around the ufunc they reach costs as much as the ufunc on small
# arrays, so the compile step lowers each node to the call numpy would end up making, where
# that is the same computation on the same types: the inputs' exact types, dtypes and shapes
# are guarded, so the types seen while compiling (the graph run once on copies of the
# translation's examples) are those of every later call. Each rule below is the only place
# its rewrite is made; a node no rule applies to is called as recorded.

class _ById(dict[int, tuple[Any, Any]]):
    """A table keyed by the identity of functions (a node's function may be any callable,
    unhashable or with an ``__eq__`` of its own)."""

    def __init__(self, table: Any):
        super().__init__((id(k), (k, v)) for k, v in (table.items() if isinstance(table, dict) else
                                                       ((k, True) for k in table)))

    def has(self, function: Any) -> bool:
        entry = self.get(id(function))
        return entry is not None and entry[0] is function

    def of(self, function: Any) -> Any:
        return self[id(function)][1]

    def functions(self) -> list[Any]:
        return [function for function, _ in self.values()]


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



# Arithmetic whose Python-number operand numpy converts to the array operand's dtype (NEP 50
# weak scalars) before running the ufunc's loop for that dtype: the number is converted once,
# at compile time, to a 0-d array of that dtype (same cast, same loop, same result).
_WEAK_SCALAR_ARITHMETIC = _ById((
    operator.add, operator.sub, operator.mul, operator.truediv,
    np.add, np.subtract, np.multiply, np.true_divide, np.maximum, np.minimum,
))

# What an operator on arrays calls: the elementwise ufunc it is on an exact ndarray and
# numbers (``a + b`` is ``np.add(a, b)``), whose result the call can write into an array.
_OPERATOR_UFUNCS = _ById({
    operator.add: np.add, operator.sub: np.subtract, operator.mul: np.multiply,
    operator.truediv: np.true_divide, operator.neg: np.negative,
})

_MATMUL = _ById((operator.matmul, np.matmul))

_METHODS = np.ndarray.__dict__
# Reductions reached through numpy's Python wrappers (``numpy._core._methods`` for the
# methods, ``fromnumeric`` for the functions): on an exact ndarray each is one ufunc
# reduce, ``umr(a, axis, dtype, out, keepdims)``. ``max``/``min`` take no dtype (None).
_REDUCTIONS = _ById({
    _METHODS["sum"]: np.add.reduce, np.sum: np.add.reduce,
    _METHODS["max"]: np.maximum.reduce, np.max: np.maximum.reduce,
    _METHODS["min"]: np.minimum.reduce, np.min: np.minimum.reduce,
})
_MEANS = _ById((_METHODS["mean"], np.mean))
# Methods that read a sequence argument only: a constant list passed may be a tuple.
_SHAPE_METHODS = _ById((_METHODS["reshape"], _METHODS["transpose"]))
# What the compile-time run may call: pure, on the value types it checks.
_PURE_METHODS = _ById([
    *_REDUCTIONS.functions(), *_MEANS.functions(), *_SHAPE_METHODS.functions(),
    _METHODS["astype"], _METHODS["copy"],
])


def _resolve(value: Any, values: list, ref_type: Any) -> Any:
    if isinstance(value, ref_type):
        found = values[value.index]
        if found is _UNKNOWN:
            raise LookupError
        return found
    if isinstance(value, tuple):
        return tuple(_resolve(v, values, ref_type) for v in value)
    if isinstance(value, list):
        return [_resolve(v, values, ref_type) for v in value]
    if isinstance(value, slice):
        return slice(*(_resolve(v, values, ref_type) for v in (value.start, value.stop, value.step)))
    return value


_UNKNOWN: Any = object()
_PLAIN_OPERANDS = (bool, int, float, complex, type(None), slice, tuple, list, np.dtype, type)


def _plain(value: Any) -> bool:
    """A value numpy computes on without calling back into Python code."""
    if type(value) is _ARRAY_TYPE or isinstance(value, np.generic):
        return value.dtype.kind != "O"
    if isinstance(value, (tuple, list)):
        return all(_plain(v) for v in value)
    if isinstance(value, slice):
        return all(_plain(v) for v in (value.start, value.stop, value.step))
    return type(value) in _PLAIN_OPERANDS


def _run_once(graph: tuple, examples: tuple, ref_type: type) -> list:
    """Every symbol's value for the examples, ``_UNKNOWN`` where the node is not one the
    lowering knows to be pure (nothing else is run: a random draw must not happen twice)."""
    inputs, nodes, _ = graph
    values: list = [e.copy() if type(e) is _ARRAY_TYPE else (_UNKNOWN if e is None else e) for e in examples]
    values += [_UNKNOWN] * (inputs - len(values))
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        for function, args, kwargs, _, _ in nodes:
            result = _UNKNOWN
            pure = (_INFIX.has(function) or _PREFIX.has(function) or isinstance(function, np.ufunc)
                    or _PURE_METHODS.has(function) or function is operator.getitem or _IN_PLACE.has(function))
            if pure and "out" not in kwargs:
                try:
                    call_args = _resolve(args, values, ref_type)
                    call_kwargs = {k: _resolve(v, values, ref_type) for k, v in kwargs.items()}
                    numbers_only = not _IN_PLACE.has(function) or all(type(a) in _NUMBERS for a in call_args)
                    if numbers_only and _plain(call_args) and _plain(tuple(call_kwargs.values())):
                        result = function(*call_args, **call_kwargs)
                except Exception:
                    result = _UNKNOWN
            values.append(result)
    return values


def _dtype_constant(number: Any, dtype: np.dtype) -> Any:
    """``number`` as a 0-d array of ``dtype`` when that is exactly what numpy's weak-scalar
    conversion makes of it (no overflow, an int represented exactly), else None."""
    if type(number) not in (int, float) or dtype.kind not in "fc":
        return None
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            converted = np.asarray(number, dtype=dtype)
        except (OverflowError, ValueError):
            return None
    if type(number) is int:
        return converted if converted.item() == number else None
    return converted if math.isfinite(number) == bool(np.isfinite(converted)) else None


def _is_array(value: Any, kinds: str = "") -> bool:
    return type(value) is _ARRAY_TYPE and (not kinds or value.dtype.kind in kinds)


def _axis_items(axis: Any, shape: tuple) -> Any:
    """How many items a reduction over ``axis`` takes (numpy's ``_count_reduce_items``)."""
    if axis is None:
        axis = tuple(range(len(shape)))
    elif not isinstance(axis, tuple):
        axis = (axis,)
    items = 1
    for ax in axis:
        if type(ax) is not int or not -len(shape) <= ax < len(shape):
            return None
        items *= shape[ax]
    return items


def _reduction_arguments(args: tuple, kwargs: dict, ref_type: type) -> Any:
    """``(axis, keepdims)`` of a reduction called as ``f(a[, axis], axis=, keepdims=)`` with
    constant arguments, else None."""
    if not 1 <= len(args) <= 2 or set(kwargs) - {"axis", "keepdims"} or len(args) == 2 and "axis" in kwargs:
        return None
    axis = args[1] if len(args) == 2 else kwargs.get("axis")
    keepdims = kwargs.get("keepdims", False)
    if isinstance(axis, list) or type(keepdims) is not bool or _holds_ref(axis, ref_type):
        return None
    return axis, keepdims


def _holds_ref(value: Any, ref_type: type) -> bool:
    if isinstance(value, ref_type):
        return True
    if isinstance(value, (tuple, list)):
        return any(_holds_ref(v, ref_type) for v in value)
    if isinstance(value, slice):
        return any(_holds_ref(v, ref_type) for v in (value.start, value.stop, value.step))
    return False


def _operand_refs(value: Any, ref_type: Any) -> list:
    """The symbols an argument holds, nested ones included."""
    if isinstance(value, ref_type):
        return [value.index]
    if isinstance(value, (tuple, list)):
        return [index for v in value for index in _operand_refs(v, ref_type)]
    if isinstance(value, slice):
        return [index for v in (value.start, value.stop, value.step) for index in _operand_refs(v, ref_type)]
    if isinstance(value, dict):
        return [index for v in value.values() for index in _operand_refs(v, ref_type)]
    return []


def _elementwise_ufunc(function: Any, args: tuple, kwargs: dict) -> Any:
    """The elementwise ufunc a node calls with its operands only, or None."""
    ufunc = _OPERATOR_UFUNCS.of(function) if _OPERATOR_UFUNCS.has(function) else function
    if (isinstance(ufunc, np.ufunc) and ufunc.signature is None and ufunc.nout == 1 and ufunc.nin == len(args)
            and not kwargs):
        return ufunc
    return None


def _makes_new_array(function: Any, kwargs: dict) -> bool:
    """Whether a call returns a new array that keeps no reference to its arguments, where it
    returns an exact ndarray: a ufunc or an operator on arrays (``**`` too: numpy's power or
    the ufunc it calls for a few exponents), a reduction."""
    if "out" in kwargs:
        return False
    if (isinstance(function, np.ufunc) or _OPERATOR_UFUNCS.has(function) or _MATMUL.has(function)
            or function is operator.pow):
        return not kwargs
    return _REDUCTIONS.has(function) or _MEANS.has(function)


_C_ORDER = -1
# Ufuncs that warn for an ``out`` passed by position (numpy 2.5 deprecates it there).
_KEYWORD_OUT = _ById((np.maximum, np.minimum, np.fmax, np.fmin))


def _votes_on_layout(value: Any) -> bool:
    """Whether an operand of an elementwise call (broadcast to the result) can decide the
    order of the result's axes (numpy's iterator orders two axes by the strides of the
    operands that step along both): an array varying along two axes or more."""
    return type(value) is _ARRAY_TYPE and value.ndim > 0 and sum(extent > 1 for extent in value.shape) > 1


def compile_graph(graph: tuple, examples: Any = None) -> Callable[..., tuple]:
    """``graph`` is ``(inputs, nodes, outputs)``, nodes ``(function, args, kwargs, filename,
    line)`` whose arguments hold ``framehook._native.SotRef`` symbols; ``examples``, where
    given, the inputs' values while translating (the nodes are then lowered for their types)."""
    from .._native import SotRef

    inputs, nodes, outputs = graph
    constants: dict[str, Any] = {}
    values = _run_once(graph, examples, SotRef) if examples is not None else None

    def value_of(arg: Any) -> Any:
        return values[arg.index] if values is not None and isinstance(arg, SotRef) else _UNKNOWN

    def constant(value: Any) -> str:
        name = f"c{len(constants)}"
        constants[name] = value
        return name

    def operand(value: Any) -> str:
        if isinstance(value, SotRef):
            return f"v{value.index}"
        if isinstance(value, (tuple, slice)) and not _holds_ref(value, SotRef):
            # Immutable and constant: made once, not at every call.
            return constant(value)
        if isinstance(value, tuple):
            return "(" + "".join(operand(v) + ", " for v in value) + ")"
        if isinstance(value, list):
            return "[" + ", ".join(operand(v) for v in value) + "]"
        if isinstance(value, slice):
            return f"_slice({operand(value.start)}, {operand(value.stop)}, {operand(value.step)})"
        if value is None or type(value) in (bool, str):
            return repr(value)
        return constant(value)

    def lowered(target: str, function: Any, args: tuple, kwargs: dict, result: Any, out: Any) -> Any:
        """The statements for ``target = function(*args, **kwargs)`` by a lowering rule, or
        None; ``out``, where given, the elementwise ufunc's name and the array to write into."""
        if kwargs:
            reduction = _reduction_arguments(args, kwargs, SotRef)
        elif len(args) == 2 and _WEAK_SCALAR_ARITHMETIC.has(function):
            # A Python number beside an array of an inexact dtype the result keeps.
            for number_at in (0, 1):
                array = value_of(args[1 - number_at])
                if _is_array(array, "fc") and _is_array(result) and result.dtype == array.dtype:
                    converted = _dtype_constant(args[number_at], array.dtype)
                    if converted is not None:
                        operands = list(args)
                        operands[number_at] = _Bound(constant(converted))
                        return [_call_or_infix(target, function, operands, operand, out)]
            reduction = None
        else:
            reduction = _reduction_arguments(args, kwargs, SotRef) if len(args) <= 2 else None
        source = value_of(args[0]) if args else _UNKNOWN
        if reduction is not None and _is_array(source) and _is_array(result):
            axis, keepdims = reduction
            if _REDUCTIONS.has(function):
                umr = constant(_REDUCTIONS.of(function))
                return [f"{target} = {umr}({operand(args[0])}, {operand(axis)}, None, None, {keepdims})"]
            if _MEANS.has(function) and source.dtype.kind in "fc" and source.dtype.itemsize >= 4:
                # numpy's ``_mean``: the sum, divided in place by the count (an intp).
                items = _axis_items(axis, source.shape)
                if items:
                    umr, divide = constant(np.add.reduce), constant(np.true_divide)
                    count = constant(np.intp(items))
                    return [
                        f"{target} = {umr}({operand(args[0])}, {operand(axis)}, None, None, {keepdims})",
                        f"{target} = {divide}({target}, {count}, out={target}, casting='unsafe', subok=False)",
                    ]
        if _SHAPE_METHODS.has(function) and _is_array(source) and len(args) == 2 and not kwargs:
            shape = args[1]
            if isinstance(shape, list) and not _holds_ref(shape, SotRef) and all(type(i) is int for i in shape):
                return [f"{target} = {operand(function)}({operand(args[0])}, {constant(tuple(shape))})"]
        if not kwargs and (_INFIX.has(function) and len(args) == 2 or _PREFIX.has(function) and len(args) == 1):
            return [_call_or_infix(target, function, list(args), operand, out)]
        if _IN_PLACE.has(function) and not kwargs and len(args) == 2 and type(source) in _NUMBERS:
            return [f"{target} = {operand(args[0])} {_IN_PLACE.of(function)} {operand(args[1])}"]
        if function is operator.getitem and not kwargs and len(args) == 2:
            return [f"{target} = {operand(args[0])}[{operand(args[1])}]"]
        return None

    # Arrays the graph made that only calls making new arrays read (ufuncs, operators,
    # reductions: none keeps a view), by the last symbol reading them: an elementwise call
    # of the same shape and dtype can write its result into one no later node reads.
    output_set = set(outputs)
    last_read: dict[int, int] = {}
    viewed: set[int] = set()
    for index, (function, args, kwargs, _, _) in enumerate(nodes):
        only_reads = _makes_new_array(function, kwargs)
        for arg in list(args) + list(kwargs.values()):
            refs = _operand_refs(arg, SotRef)
            if not (only_reads and isinstance(arg, SotRef)):
                viewed.update(refs)  # a view or a container may keep it
            for ref in refs:
                last_read[ref] = inputs + index
    fresh: set[int] = set()
    # Per array symbol, the symbol whose strides order its axes (or C order, whatever the
    # inputs' layouts): numpy gives a new array the order of the operands that step along
    # its axes (an array varying along two axes or more), C order where they disagree or
    # none does; arrays of one order and shape get one layout from an elementwise call.
    order_of: dict[int, int] = {}

    def axes_order(args: tuple, shape: tuple) -> Any:
        """The order of an elementwise call's new result of ``shape``: ``_C_ORDER`` where
        an operand of C order orders its axes or none does, the order the operands that do
        share, else None (unknown)."""
        orders = set()
        for arg in args:
            value = value_of(arg) if isinstance(arg, SotRef) else arg
            if value is _UNKNOWN:
                return None
            if _votes_on_layout(value):
                if not isinstance(arg, SotRef) or value.shape != shape:
                    return None
                orders.add(order_of.get(arg.index, arg.index))
        if not orders or _C_ORDER in orders:
            return _C_ORDER
        return orders.pop() if len(orders) == 1 else None

    taken: set[int] = set()  # arrays whose memory a later result took

    def reusable(symbol: int, args: tuple, result: Any) -> Any:
        """The array the elementwise node of ``symbol`` can write its result into: one the
        graph made, not returned, of the result's type, shape, dtype and axis order (the
        array numpy would allocate), read last by this node or before it, operands first.
        None where there is none (always without examples: nothing is known of the arrays)."""
        if values is None or not _is_array(result):
            return None
        known = values
        order = axes_order(args, result.shape)
        operands = [a.index for a in args if isinstance(a, SotRef)]

        def fits(index: int, operand: bool) -> bool:
            if index not in fresh or index in viewed or index in output_set or index in taken:
                return False
            if last_read.get(index, -1) > symbol or operand and last_read.get(index) != symbol:
                return False
            array = known[index]
            if array.shape != result.shape or array.dtype != result.dtype:
                return False
            # An operand of C order gives the result C order (C order wins where operands
            # disagree); another array must have the order the operands give.
            if order_of[index] == _C_ORDER and operand:
                return True
            return order is not None and order_of[index] == order

        for index in operands + sorted(fresh):
            if fits(index, index in operands):
                taken.add(index)
                return index
        return None

    params = ", ".join(f"v{i}" for i in range(inputs))
    statements: list[tuple[str, int]] = []
    filename = nodes[0][3] if nodes else "<sot graph>"
    for index, (function, args, kwargs, node_file, line) in enumerate(nodes):
        target = f"v{inputs + index}"
        result = values[inputs + index] if values is not None else _UNKNOWN
        ufunc = _elementwise_ufunc(function, args, kwargs)
        into = reusable(inputs + index, args, result) if ufunc is not None else None
        # Written into a dead array: the same ufunc call with ``out`` (positional, the
        # cheapest form, where numpy takes it so), after the rules that pick the operands.
        out = None
        if into is not None:
            out = (constant(ufunc), f"out=v{into}" if _KEYWORD_OUT.has(ufunc) else f"v{into}")
        lines = lowered(target, function, args, kwargs, result, out)
        if _is_array(result) and _makes_new_array(function, kwargs):
            fresh.add(inputs + index)
            if not _votes_on_layout(result) or _MATMUL.has(function) and result.ndim == 2:
                # Varying along one axis at most, an array has one dense layout; a 2-d
                # matrix product has C order (no loop axis for numpy to order).
                order = _C_ORDER
            elif ufunc is not None or function is operator.pow:  # ``**`` calls an elementwise ufunc
                order = order_of[into] if into is not None else axes_order(args, result.shape)
            else:
                order = None
            order_of[inputs + index] = inputs + index if order is None else order
        if lines is None and out is not None:
            lines = [_call_or_infix(target, function, list(args), operand, out)]
        if lines is None:
            call_args = [operand(a) for a in args] + [f"{k}={operand(v)}" for k, v in kwargs.items()]
            lines = [f"{target} = {operand(function)}({', '.join(call_args)})"]
        statements.extend((statement, line if node_file == filename else 0) for statement in lines)
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
    function = types.FunctionType(code, namespace, "__sot_graph")
    function.__dict__["__sot_source__"] = source  # what the lowering made, for tests and debugging
    return function


# A graph's code, by its source and lines, while a graph function uses it: graphs of one
# shape (recompilations for another shape, dtype or number; translations of a closure made
# again) share one code object, their constants (numbers included) in the function's
# globals. CPython frees no code object made on free-threaded 3.13 once a thread has run
# (gh-117696): there a new code per graph would be kept for good, and this reuses it.
_CODES: weakref.WeakValueDictionary[tuple, types.CodeType] = weakref.WeakValueDictionary()
_CO_NESTED = 0x10


class _Bound:
    """An operand already named (a compile-time constant)."""

    def __init__(self, name: str):
        self.name = name


def _call_or_infix(target: str, function: Any, args: list, operand: Callable[[Any], str], out: Any = None) -> str:
    """``target = function(*args)`` as an operator expression where it is one, or as the
    call of ``out``'s ufunc name with ``out``'s last argument (the array written into)."""
    names = [a.name if isinstance(a, _Bound) else operand(a) for a in args]
    if out is not None:
        ufunc, into = out
        return f"{target} = {ufunc}({', '.join(names)}, {into})"
    if _INFIX.has(function):
        return f"{target} = {names[0]} {_INFIX.of(function)} {names[1]}"
    if _PREFIX.has(function):
        return f"{target} = {_PREFIX.of(function)}{names[0]}"
    return f"{target} = {operand(function)}({', '.join(names)})"
