"""SOT's numpy backend: tensors are numpy arrays and scalars; a graph compiles to
a generated Python function that runs only the captured operations, each at its
source line (so a traceback through a graph shows the user's own lines)."""

from __future__ import annotations

import builtins
import importlib
import inspect
import math
import operator
import os
import re
import struct
import sys
import types
import warnings
import weakref
from collections.abc import Mapping
from typing import Any, Callable, Optional

import numpy as np

from ._numpy_tables import (
    _ARRAY_MAKERS,
    _IN_PLACE,
    _INFIX,
    _METHODS,
    _NOT_KEPT,
    _NUMBERS,
    _PREFIX,
    _AnswersById,
    _ById,
    _is_made,
    _made_by_the_graph,
)

_NUMPY_DIR = os.path.dirname(np.__file__) + os.sep
_ARRAY_TYPE = np.ndarray


# numpy functions a graph must not run: the translator calls an operation once on example
# arrays while translating and the graph calls it again on every call, which is exact only
# for functions of their arguments alone. These read or change state outside them (the
# error state, print options, files, stdout) or run Python code given to them.
_NOT_OPERATIONS = frozenset({
    "seterr", "geterr", "seterrcall", "geterrcall", "setbufsize", "getbufsize",
    "set_printoptions", "get_printoptions", "printoptions",
    "save", "savez", "savez_compressed", "savetxt", "load", "loadtxt", "genfromtxt",
    "fromfile", "fromregex", "memmap",
    "apply_along_axis", "apply_over_axes", "piecewise", "frompyfunc", "fromfunction",
    "info", "show_config", "show_runtime",
})
# The warnings module, and where 3.14+ implements it.
_WARNINGS_MODULES = tuple(m for m in (warnings, sys.modules.get("_py_warnings")) if m is not None)
# The context managers whose `with` block is a region of the graph (`region_types`), and
# what changes only the warning filters that warnings.catch_warnings() saves and restores.
_REGION_TYPES = (np.errstate, warnings.catch_warnings)
_FILTER_CHANGES = (warnings.simplefilter, warnings.filterwarnings, warnings.resetwarnings)
# A dtype's limits: each attribute a value of the dtype alone (`finfo` made once per dtype).
_LIMITS_TYPES = (np.iinfo, np.finfo)
# numpy's functions of dtypes and scalar types whose results are the same for the whole process.
_DTYPE_QUESTIONS = ("issubdtype", "isdtype", "can_cast", "promote_types", "result_type")
# Whose functions share a hidden state (the global random generator): none is an operation.
_STATEFUL_MODULES = ("numpy.random",)
# What an operation takes as a constant (not a graph value): dtypes and classes.
_CONSTANT_OPERAND_TYPES = (np.dtype, type)
# A numpy function object: a C function, a ufunc, or an array-function dispatcher (not an
# instance of another numpy class, such as np.vectorize, which runs Python code).
_FUNCTION_TYPES: tuple[type, ...] = (types.BuiltinFunctionType, types.FunctionType, type(np.concatenate))


def _is_numpy_callable(function: Any) -> bool:
    if isinstance(function, np.ufunc):
        return True
    if not isinstance(function, _FUNCTION_TYPES):
        return False
    # Asked first: most functions asked about are another module's (a Python function has
    # no `__self__`, which would be looked up in vain).
    module = getattr(function, "__module__", None) or ""
    if not (module == "numpy" or module.startswith("numpy.")):
        return False
    owner = getattr(function, "__self__", None)
    if owner is not None and not isinstance(owner, (types.ModuleType, np.ndarray, np.generic)):
        # A method of a numpy object other than an array (errstate, a random Generator):
        # it works on that object's state.
        return False
    if "." in getattr(function, "__qualname__", ""):
        # A method of a numpy class read from the class (`errstate.__enter__`).
        return False
    if module.startswith(_STATEFUL_MODULES) or module.split(".")[1:2] == ["random"]:
        return False
    return getattr(function, "__name__", "") not in _NOT_OPERATIONS


class NumpyBackend:
    """The backend protocol, for numpy (see ``framehook.sot.register_backend``)."""

    name = "numpy"
    tensor_types = (np.ndarray, np.generic)
    # What a tensor's guard compares (its exact type is compared too).
    meta_attributes = ("dtype", "shape")
    # What numpy's own array and scalar types give for any of their values ("cpu").
    type_attributes = ("device",)
    # np.dtype("float64"), np.dtype(np.float64): numpy's one object for each builtin dtype.
    interned_types = (np.dtype,)
    # Questions about dtypes, answered from their arguments alone: called while translating
    # where no argument is an array (`np.issubdtype(x.dtype, np.floating)`), operations of
    # an array otherwise.
    fixed_functions = tuple(getattr(np, name) for name in _DTYPE_QUESTIONS if hasattr(np, name))
    # np.errstate(...) of constant settings and warnings.catch_warnings(): made while
    # translating, and again by the generated code (`construct`); each one's `with` block
    # is a region of the graph, the operations inside it run by the graph under the error
    # state or warning filters it sets, and the filters set inside it (`region_effects`).
    region_types = _REGION_TYPES
    # And a dtype's limits (`np.iinfo(np.int32).max`): values of the dtype alone.
    constructed_types = (*_REGION_TYPES, *_LIMITS_TYPES)
    region_effects = {function: warnings.catch_warnings for function in _FILTER_CHANGES}
    # Where the values catch_warnings() changes live (the filters list): read inside its
    # block, they break. numpy's error state is in no namespace the translation reads.
    region_namespaces = {warnings.catch_warnings: _WARNINGS_MODULES}
    # Graphs run assumptions (`_sot_assume` nodes) in order, under numpy's error state
    # "raise": a branch on an array's value is assumed, not broken on.
    runs_assumptions = True
    # Tensor methods whose result is a Python value computed from the data.
    conversions = ("item", "tolist", "tobytes", "__bool__", "__float__", "__int__", "__index__", "__len__")
    # Files the translator never enters: numpy's own.
    skip_prefixes = (_NUMPY_DIR,)

    @property
    def op_function_modules(self) -> Optional[tuple[str, ...]]:
        """A Python or builtin function is an operation only where numpy's, as ``is_op``
        says: the translator asks about no other module's function. None for a subclass
        with an ``is_op`` of its own, which is asked about every one."""
        return ("numpy",) if type(self).is_op is NumpyBackend.is_op else None

    def is_op(self, function: Any) -> bool:
        return _is_numpy_callable(function)

    @property
    def constant_operand_types(self) -> Optional[tuple[type, ...]]:
        """Dtypes and classes, what ``is_constant_operand`` says yes to: the translator asks
        ``isinstance`` itself. None for a subclass with an ``is_constant_operand`` of its own."""
        own = type(self).is_constant_operand is NumpyBackend.is_constant_operand
        return _CONSTANT_OPERAND_TYPES if own else None

    def is_constant_operand(self, value: Any) -> bool:
        return isinstance(value, _CONSTANT_OPERAND_TYPES)

    def example(self, value: Any) -> Any:
        return value.copy() if type(value) is _ARRAY_TYPE else value

    def construct(self, cls: Any, args: tuple, kwargs: dict) -> Any:
        """``np.errstate(**settings)`` itself (not a subclass's) of settings numpy takes, no
        callback among them (numpy's error state is per context: entering one changes
        nothing else), and ``warnings.catch_warnings()`` keeping the warnings module's own
        display (no ``record``, no other module); ``np.iinfo``/``np.finfo`` of a dtype (a
        type, a dtype or its name: not an array's); None otherwise."""
        if cls in _LIMITS_TYPES:
            if kwargs or len(args) != 1 or not isinstance(args[0], (type, np.dtype, str)):
                return None
            try:
                return cls(args[0])
            except (TypeError, ValueError):  # not a dtype of its kind: the call raises
                return None
        if cls is np.errstate:
            if args or "call" in kwargs or not all(v is None or type(v) is str for v in kwargs.values()):
                return None
        elif cls is warnings.catch_warnings:
            if args or kwargs.get("record") or kwargs.get("module") is not None:
                return None
        else:
            return None
        if cls is np.errstate or kwargs:
            try:
                with cls(*args, **kwargs):  # each checks its settings as it enters
                    pass
            except (TypeError, ValueError, AssertionError):
                return None
        return cls(*args, **kwargs)

    def call_example(self, function: Any, args: tuple, kwargs: dict) -> Any:
        """An operation on examples while translating, numpy's error handler and log kept
        for the graph's run on the same call to call (the translator keeps the example's
        warnings from the user alike). What raises still raises here (numpy's "raise"), so
        that an operation writing into its operand breaks where it would raise."""
        quiet = _example_settings()
        if quiet is None:  # numpy's default state: nothing to change (entering costs µs)
            return function(*args, **kwargs)
        with np.errstate(**quiet):
            return function(*args, **kwargs)

    def compile(self, graph: tuple) -> Callable[..., tuple]:
        return compile_graph(graph)

    def compile_with_examples(self, graph: tuple, examples: tuple) -> Callable[..., tuple]:
        """``compile``, lowered for the types the inputs had while translating (guarded:
        every later call has the same exact types, dtypes and shapes). A subclass that
        overrides ``compile`` gets its own ``compile``."""
        if type(self).compile is not NumpyBackend.compile:
            return self.compile(graph)
        return compile_graph(graph, examples)

    def writes_operands(self, graph: tuple, examples: tuple) -> bool:
        """Whether the compiled graph may write into an array it is given (an input, or a
        view of one). Where it cannot, a run that raises leaves everything as it was, and the
        generated code runs the frame again untranslated (so that what the function did
        before the failing operation happens, as it does eagerly)."""
        first = _first_operand_write(graph, examples)
        # Where it may, the translator asks ``first_operand_write`` of the graph next: the
        # answer waits for it (one tuple, read whole by another thread; held until then).
        self._answered = (graph, examples, first) if first is not None else None
        return first is not None

    def first_operand_write(self, graph: tuple, examples: tuple) -> Optional[int]:
        """The index of the first node that may write into an array the graph is given, or
        None. The compiled graph runs no node before its place (a fused run's members run
        at its last member's), so a check before that node raises with nothing written."""
        answered, self._answered = self._answered, None
        if answered is not None and answered[0] is graph and answered[1] is examples:
            return answered[2]
        return _first_operand_write(graph, examples)

    _answered: Optional[tuple] = None


# ---------------------------------------------------------------- lowering
#
# A graph is compiled to Python calling numpy. What numpy's high-level Python entry points
# and Python's operators add around the ufunc they reach costs as much as the ufunc on small
# arrays, so the compile step lowers each node to the call numpy would end up making, where
# that is the same computation on the same types: the inputs' exact types, dtypes and shapes
# are guarded, so the types seen while compiling (the graph run once on copies of the
# translation's examples) are those of every later call. Each rule below is the only place
# its rewrite is made; a node no rule applies to is called as recorded.


# A region's nodes: a manager made and entered, its exit, a filter set inside the block.
_REGION_NODE_TABLE = _ById([*_REGION_TYPES, *(region.__exit__ for region in _REGION_TYPES), *_FILTER_CHANGES])



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
# Attributes of an array a node reads (``w.T``): views and values, which never raise on an
# array (``mT`` does, below two dimensions).
_ARRAY_ATTRIBUTES = frozenset({"T", "real", "imag", "shape", "ndim", "size", "dtype"})


def _is_array_attribute(function: Any) -> bool:
    """Whether a node's function reads one of ``_ARRAY_ATTRIBUTES`` (an ``attrgetter``)."""
    if type(function) is not operator.attrgetter:
        return False
    names = function.__reduce__()[1]
    return len(names) == 1 and names[0] in _ARRAY_ATTRIBUTES


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
# (A range and a str numpy reads in C: an index, an einsum's subscripts.)
_PLAIN_OPERANDS = (bool, int, float, complex, type(None), slice, range, str, tuple, list, np.dtype, type)


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
    lowering knows to be pure (nothing else is run: a random draw must not happen twice).
    numpy's functions the backend takes as operations are pure by that choice (functions of
    their arguments alone: see ``_NOT_OPERATIONS``)."""
    inputs, nodes, _ = graph
    values: list = [e.copy() if type(e) is _ARRAY_TYPE else (_UNKNOWN if e is None else e) for e in examples]
    values += [_UNKNOWN] * (inputs - len(values))
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        for function, args, kwargs, _, _ in nodes:
            result = _UNKNOWN
            if _is_pure(function) and "out" not in kwargs:
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


def _is_pure(function: Any) -> bool:
    """Whether the compile-time run may call ``function`` (see ``_run_once``), asked once
    per function object (the answer is the function's alone)."""
    known = _PURE_CALLS.get(function)
    if known is not _NOT_KEPT:
        return known
    pure = (_INFIX.has(function) or _PREFIX.has(function) or isinstance(function, np.ufunc)
            or _PURE_METHODS.has(function) or function is operator.getitem or _IN_PLACE.has(function)
            or _is_array_attribute(function) or _is_numpy_callable(function))
    _PURE_CALLS.keep(function, pure)
    return pure


# ``_is_pure``'s answers.
_PURE_CALLS = _AnswersById(4096)


# What writes into its operands whatever its arguments: item assignment, numpy's functions
# that fill or rearrange an array given to them, and the ndarray methods that do.
_WRITERS = _ById([
    operator.setitem, operator.delitem, np.copyto, np.put, np.putmask, np.place,
    np.put_along_axis, np.fill_diagonal,
    *(_METHODS[name] for name in (
        "fill", "sort", "partition", "put", "resize", "setfield", "setflags", "byteswap", "itemset",
        "__setitem__", "__delitem__", "__iadd__", "__isub__", "__imul__", "__imatmul__", "__itruediv__",
        "__ifloordiv__", "__imod__", "__ipow__", "__ilshift__", "__irshift__", "__iand__", "__ior__", "__ixor__",
    ) if name in _METHODS),
])
_READERS = (operator.attrgetter, operator.itemgetter)


def _writes_an_operand(function: Any, args: tuple, kwargs: dict, values: list, ref_type: type,
                       made: set) -> bool:
    """Whether a node may write into an array it is given: ``out`` given (by keyword, or by
    position where the signature names it), an in-place operator on anything but a number,
    or one of ``_WRITERS``. A function whose signature cannot be read may. A region's
    nodes, an assumption and ``_ARRAY_MAKERS`` write none, nor does an in-place operator,
    ``out=`` or an item's store into an array the graph made (``made``: see
    ``_made_by_the_graph``)."""
    if _is_region_node(function) or function is _native_assume() or _ARRAY_MAKERS.has(function):
        return False
    out = kwargs.get("out")
    if out is not None:
        return not _is_made(out, made, ref_type)
    if _IN_PLACE.has(function):
        if args and _is_made(args[0], made, ref_type):
            return False
        try:
            target = _resolve(args[0], values, ref_type)
        except (IndexError, LookupError):  # no operand, or a node's result: not known here
            return True
        return not (type(target) in _NUMBERS or isinstance(target, np.generic))
    if function is operator.setitem and _is_made(args[0], made, ref_type):
        return False
    if _WRITERS.has(function) or isinstance(getattr(function, "__self__", None), np.ufunc):
        return True  # a ufunc's `at` writes; its reduce/accumulate may by a positional out
    if isinstance(function, np.ufunc):
        return len(args) > function.nin
    if (_INFIX.has(function) or _PREFIX.has(function) or function is operator.getitem
            or isinstance(function, _READERS)):
        return False
    out_at = _out_position(function)
    if out_at is _NO_SIGNATURE:
        # An ndarray method without a signature (older numpy): none takes `out` before its
        # second argument after the array.
        return not (getattr(function, "__objclass__", None) is _ARRAY_TYPE and len(args) <= 2)
    return out_at is not None and out_at < len(args)


def _first_operand_write(graph: tuple, examples: tuple) -> Optional[int]:
    from .._native import SotRef

    inputs, nodes, _ = graph
    # The inputs' values (not the nodes' results: the graph is not run again for this).
    values = [_UNKNOWN if e is None else e for e in examples] + [_UNKNOWN] * (inputs + len(nodes))
    made: set[int] = set()
    for index, (function, args, kwargs, _, _) in enumerate(nodes):
        if _writes_an_operand(function, args, kwargs, values, SotRef, made):
            return index
        if _made_by_the_graph(function, args, kwargs, made, SotRef):
            made.add(inputs + index)
    return None


_NO_SIGNATURE = object()
# Where each callable seen takes `out` positionally, by identity, counted as it is called
# unbound (a callable is held while its entry is, so that its id is not another's): reading
# a signature costs tens of µs through `inspect.signature` (hundreds for a C function's,
# parsed by `ast`), and a translation asks of every node of every graph it compiles.
_OUT_POSITIONS = _AnswersById(4096)
# A C function's text signature names no parameter `out`: its answer needs no parsing.
_NAMES_OUT = re.compile(r"\bout\b")
_C_FUNCTION_TYPES: tuple[type, ...] = (
    types.BuiltinFunctionType, types.MethodDescriptorType, types.WrapperDescriptorType,
    types.MethodWrapperType, types.ClassMethodDescriptorType,
)


def _out_position(function: Any) -> Any:
    """The index among ``function``'s positional parameters of ``out``, None where it takes
    none so, or ``_NO_SIGNATURE`` where its signature cannot be read. A bound method is
    answered from its function (the same for every instance), less the bound argument."""
    self = getattr(function, "__self__", None)
    unbound = None
    if isinstance(function, types.MethodType):
        unbound = function.__func__
    elif isinstance(function, types.BuiltinMethodType) and not isinstance(self, types.ModuleType) and self is not None:
        # `array.astype`: one bound method per array, the same C method under each (the
        # class's, where binding it gives the same method).
        method = getattr(type(self), function.__name__, None)
        bind = getattr(method, "__get__", None)
        if not isinstance(self, type) and bind is not None and bind(self, type(self)) == function:
            unbound = method
    position = _unbound_out_position(function if unbound is None else unbound)
    if unbound is None or not isinstance(position, int):
        return position
    return position - 1 if position > 0 else None  # (`out` the bound argument: not passable)


def _unbound_out_position(function: Any) -> Any:
    known = _OUT_POSITIONS.get(function)
    if known is not _NOT_KEPT:
        return known
    positional = _positional_names(function)
    if positional is None:
        try:
            parameters = inspect.signature(function).parameters.values()
        except (TypeError, ValueError):
            _OUT_POSITIONS.keep(function, _NO_SIGNATURE)
            return _NO_SIGNATURE
        positional = [p.name for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    position = positional.index("out") if "out" in positional else None
    _OUT_POSITIONS.keep(function, position)
    return position


def _positional_names(function: Any) -> Optional[list]:
    """The names of ``function``'s positional parameters as ``inspect.signature`` gives
    them, read without it where that is plain: a Python function's code (after the
    ``__wrapped__`` chain ``inspect`` follows, as numpy's dispatchers have), or a C
    function's text signature (Argument Clinic's: ``$`` marks the bound argument, dropped
    where one is bound, ``/`` ends the positional-only ones, ``*`` the positional ones).
    None where only ``inspect`` can tell."""
    if isinstance(function, _C_FUNCTION_TYPES):
        text = getattr(function, "__text_signature__", None)
        if not isinstance(text, str) or not text.startswith("(") or not text.endswith(")"):
            return None
        if _NAMES_OUT.search(text) is None:
            return []
        return _text_signature_positional(text[1:-1], getattr(function, "__self__", None) is not None)
    try:
        target = inspect.unwrap(function, stop=lambda f: hasattr(f, "__signature__") or isinstance(f, types.MethodType))
    except ValueError:  # a cycle of wrappers
        return None
    if type(target) is not types.FunctionType or hasattr(target, "__signature__"):
        return None
    code = target.__code__
    return list(code.co_varnames[:code.co_argcount])


def _text_signature_positional(parameters: str, bound: bool) -> Optional[list]:
    names = []
    for index, parameter in enumerate(_top_level_parts(parameters)):
        name = parameter.split("=", 1)[0].strip()
        if name == "/":
            continue
        if name.startswith("*"):
            break
        if name.startswith("$"):
            if index != 0:
                return None
            if bound:
                continue
            name = name[1:]
        if not name.isidentifier():
            return None
        names.append(name)
    return names


def _top_level_parts(text: str) -> list:
    """``text`` split at the commas outside brackets and quotes."""
    parts, depth, quote, escaped, start = [], 0, "", False, 0
    for at, char in enumerate(text):
        if escaped:
            escaped = False
        elif quote:
            if char == "\\":
                escaped = True
            elif char == quote:
                quote = ""
        elif char in "'\"":
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append(text[start:at])
            start = at + 1
    parts.append(text[start:])
    return parts


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


def _mean_items(source: Any, axis: Any) -> Any:
    """The count a mean over ``axis`` of ``source`` divides by, where the lowering makes
    it numpy's ``_mean`` (an inexact dtype of 4 bytes or more), else None."""
    if source.dtype.kind not in "fc" or source.dtype.itemsize < 4:
        return None
    return _axis_items(axis, source.shape)


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


# ---------------------------------------------------------------- fused runs
#
# A run of elementwise nodes and matrix products on float32 or float64 arrays is computed by
# one call of a fused kernel (``framehook._native._sot_fused``) where numpy makes one ufunc
# call and one new array per node. The kernel fuses only what IEEE 754 rounds exactly, in
# the arrays' dtype, and the choices of maximum and minimum; a product runs numpy's own
# matmul loop on the kernel's memory. So its results are numpy's bit for bit; where numpy
# would warn (a value not finite, an underflow), a maximum could pick either of two items
# (a NaN, +0 beside -0), or an operand is not as compiled (its layout is not guarded), it
# returns None and the run's nodes are called as lowered above, which then warn or raise as
# numpy does.

_FUSED_CODES = _ById({
    np.add: 0, np.subtract: 1, np.multiply: 2, np.true_divide: 3, np.negative: 4,
    np.positive: 5, np.square: 6, np.sqrt: 7, np.reciprocal: 8, np.absolute: 9,
    np.maximum: 12, np.minimum: 13,
})
_MATRIX_PRODUCT_CODE = 14
_DIVIDE_CODE = 3
# Reductions over the last axis, keeping it.
_LAST_AXIS_CODES = {np.maximum.reduce: 10, np.minimum.reduce: 11}
# ``a ** e`` on an inexact array: the ufunc ``ndarray.__pow__`` calls for these exponents.
_POWER_CODES = {2: 6, 0.5: 7, -1: 8}
_FUSED_MAX_DIMENSIONS = 8
# A run's source slot: a call operand (an array or a number), or an earlier node of the run.
_OPERAND, _REGISTER, _CONSTANT = 0, 1 << 30, 2 << 30
_NO_SOURCE = 0xFFFFFFFF


class _MeanSum:
    """The sum a lowered mean divides (its first statement's result, under the mean's own
    name): the first operand of the mean's division in a run."""

    def __init__(self, symbol: int, value: Any):
        self.symbol = symbol
        self.value = value


def _exact_number(value: Any, dtype: np.dtype) -> bool:
    """A Python number numpy converts exactly beside an array of ``dtype`` (NEP 50's weak
    scalars: a float by a C cast; an int only where it is exactly a ``dtype`` value)."""
    if type(value) is float:
        return True
    mantissa = 24 if dtype.itemsize == 4 else 53
    return type(value) is int and abs(value) <= 1 << mantissa


def _fused_operation(function: Any, args: tuple, kwargs: dict, value_of: Callable[[Any], Any],
                     result: Any, ref_type: Any) -> Any:
    """``(code, sources)`` of a node a fused kernel computes as numpy does, else None:
    an elementwise operation of the kernels on arrays of the result's inexact dtype and
    Python numbers, making a new array of one dimension or more."""
    if not _is_array(result, "f") or result.dtype.itemsize not in (4, 8) or result.size == 0:
        return None
    if not 1 <= result.ndim <= _FUSED_MAX_DIMENSIONS:
        return None
    if _MATMUL.has(function):
        # Two matrices of the result's dtype, from the graph (numpy's own loop multiplies them).
        if kwargs or len(args) != 2 or result.ndim != 2 or not _products_available():
            return None
        for source in args:
            value: Any = value_of(source) if isinstance(source, ref_type) else None
            if not _is_array(value) or value.ndim != 2 or value.dtype != result.dtype:
                return None
        return _MATRIX_PRODUCT_CODE, list(args)
    if _REDUCTIONS.has(function) and _REDUCTIONS.of(function) in (np.maximum.reduce, np.minimum.reduce):
        # Over the last axis, kept: the kernels find the same extreme (or give up where
        # numpy's order of visiting the items could matter).
        reduction = _reduction_arguments(args, kwargs, ref_type)
        source = value_of(args[0]) if args else _UNKNOWN
        if reduction is None or not _is_array(source) or source.dtype != result.dtype:
            return None
        axis, keepdims = reduction
        last = (-1, source.ndim - 1)
        if not keepdims or not (axis in last or type(axis) is tuple and len(axis) == 1 and axis[0] in last):
            return None
        if type(axis) not in (int, tuple) or result.shape != source.shape[:-1] + (1,):
            return None
        return _LAST_AXIS_CODES[_REDUCTIONS.of(function)], [args[0]]
    if function is operator.pow and len(args) == 2 and not kwargs and type(args[1]) in (int, float):
        code = _POWER_CODES.get(args[1])
        sources: tuple = args[:1]
        if code is None or not _is_array(value_of(args[0])):
            return None
    else:
        ufunc = _elementwise_ufunc(function, args, kwargs)
        if ufunc is None or not _FUSED_CODES.has(ufunc):
            return None
        code, sources = _FUSED_CODES.of(ufunc), args
    for source in sources:
        value = value_of(source) if isinstance(source, ref_type) else source
        if _is_array(value):
            if value.dtype != result.dtype or value.ndim > _FUSED_MAX_DIMENSIONS:
                return None
        elif not _exact_number(value, result.dtype):
            return None
        elif not isinstance(source, ref_type) and _dtype_constant(value, result.dtype) is None:
            return None  # a constant the dtype cannot hold: the kernel would give up every call
    return code, list(sources)


def _mean_division(function: Any, args: tuple, kwargs: dict, value_of: Callable[[Any], Any],
                   result: Any, symbol: int, ref_type: Any) -> Any:
    """``(code, sources)`` of a lowered mean's division by its count (a float64 division
    rounded to the dtype: the same as the division in the dtype, the count being exact
    there), or None where the mean is not lowered so or not fusable."""
    if not _MEANS.has(function) or not _is_array(result, "f") or not 1 <= result.ndim <= _FUSED_MAX_DIMENSIONS:
        return None
    reduction = _reduction_arguments(args, kwargs, ref_type)
    source = value_of(args[0]) if args else _UNKNOWN
    if reduction is None or not _is_array(source) or source.dtype != result.dtype:
        return None
    axis, keepdims = reduction
    items = _mean_items(source, axis)
    if not items or not _exact_number(items, result.dtype):
        return None
    add_reduce: Any = np.add.reduce
    total = add_reduce(source, axis, None, None, keepdims)
    return _DIVIDE_CODE, [_MeanSum(symbol, total), float(items)]


def _hoistable(function: Any, args: tuple, kwargs: dict, value_of: Callable[[Any], Any], ref_type: Any) -> bool:
    """Whether a node may run before the fused run it sits in: pure, and neither raising
    nor warning on the guarded types (arithmetic and comparisons of Python numbers that
    cannot fail, views of arrays at constant indices)."""
    if kwargs:
        return False
    values = [value_of(a) if isinstance(a, ref_type) else a for a in args]
    types = {float if type(v) is float else int if type(v) in (bool, int) else None for v in values}
    if None not in types and (_INFIX.has(function) or _IN_PLACE.has(function)) and len(args) == 2:
        symbol = _INFIX.of(function) if _INFIX.has(function) else _IN_PLACE.of(function)
        # Ints compare with floats exactly; arithmetic mixing them converts the int, which
        # raises OverflowError past the floats' range.
        return symbol in ("<", "<=", "==", "!=", ">", ">=") or symbol in "+-*" and len(types) == 1
    if None not in types and _PREFIX.has(function) and _PREFIX.of(function) in "-+":
        return True
    if len(args) == 2 and _is_array(values[0]) and not _holds_ref(args[1], ref_type):
        return function is operator.getitem or _SHAPE_METHODS.has(function)
    return len(args) == 1 and _is_array(values[0]) and _is_array_attribute(function)


class _FusedRun:
    """Consecutive elementwise nodes of one dtype (the nodes between them that may run
    before them stay where they are: the run's call comes after its last member)."""

    def __init__(self, dtype: np.dtype):
        self.dtype = dtype
        self.members: list[int] = []  # symbols, in order
        self.operations: dict[int, tuple[int, list]] = {}
        self.means: set[int] = set()  # members whose lowering's first statement runs before the run

    def add(self, symbol: int, operation: tuple[int, list], mean: bool) -> None:
        self.members.append(symbol)
        self.operations[symbol] = operation
        if mean:
            self.means.add(symbol)


def _fusion_available() -> bool:
    """Whether the fused kernels can read this numpy's arrays: their fields are where the
    kernels read them (checked once, on an array of known data address and layout)."""
    if not _LAYOUT_CHECKED:
        from .._native import _sot_fused_check_layout

        sample = np.arange(60, dtype=np.float32).reshape(3, 4, 5)[::2, 1:, ::-2]
        _LAYOUT_CHECKED.append(bool(_sot_fused_check_layout(
            sample, sample.__array_interface__["data"][0], list(sample.shape), list(sample.strides))))
    return _LAYOUT_CHECKED[0]


_LAYOUT_CHECKED: list[bool] = []


def _products_available() -> bool:
    """Whether the fused kernels can run numpy's matmul loop: ``numpy.matmul``'s fields are
    where the kernels read them, its float32 and float64 loops were found, and the loops give
    ``numpy.matmul``'s own results on each of its paths (a dot, gemv, gemm; checked once:
    were a numpy to stop calling its legacy loop, this would say so)."""
    if not _MATMUL_CHECKED:
        from .._native import _sot_fused_check_matmul

        found = _fusion_available() and bool(_sot_fused_check_matmul(
            np.matmul, np.dtype(np.float32).num, np.dtype(np.float64).num))
        _MATMUL_CHECKED.append(found and all(_product_matches_numpy(np.dtype(dtype), m, n, p)
                                             for dtype in (np.float32, np.float64)
                                             for m, n, p in ((1, 7, 1), (1, 7, 5), (6, 7, 1), (6, 7, 5))))
    return _MATMUL_CHECKED[0]


def _product_matches_numpy(dtype: np.dtype, m: int, n: int, p: int) -> bool:
    """Whether a kernel of one product gives ``numpy.matmul``'s result bit for bit on
    matrices of these shapes (values whose sums round)."""
    from .._native import _sot_fused, _sot_fused_kernel

    rng = np.random.default_rng(n)
    a, b = (rng.standard_normal(shape).astype(dtype) / 3 for shape in ((m, n), (n, p)))
    words = [dtype.itemsize, 2, 1, 2, m, n, 1, 2, n, p, 0, 1,
             _MATRIX_PRODUCT_CODE, _OPERAND | 0, _OPERAND | 1, 2, m, p, 1]
    program = b"".join(word.to_bytes(4, "little") for word in words)
    plan = (_sot_fused_kernel(program, dtype), np.empty, (((m, p), dtype),))
    computed = _sot_fused(plan, a, b)
    return computed is not None and computed[0].tobytes() == np.matmul(a, b).tobytes()


_MATMUL_CHECKED: list[bool] = []


def _plan_fused_runs(nodes: tuple, inputs: int, values: list, ref_type: Any) -> list[_FusedRun]:
    """The runs of two operations or more a fused kernel computes."""
    if not _fusion_available():
        return []
    runs: list[_FusedRun] = []
    current: Any = None

    def value_of(arg: Any) -> Any:
        return values[arg.index] if isinstance(arg, ref_type) else arg

    def close() -> None:
        if current is not None and len(current.members) >= 2:
            runs.append(current)

    for index, (function, args, kwargs, _, _) in enumerate(nodes):
        symbol = inputs + index
        if _is_region_node(function) or function is _native_assume():  # one error state; a check
            close()
            current = None
            continue
        result = values[symbol]
        mean = _mean_division(function, args, kwargs, value_of, result, symbol, ref_type)
        operation = mean or _fused_operation(function, args, kwargs, value_of, result, ref_type)
        if operation is not None:
            # A mean's sum is computed before the run its division joins: a run starts there.
            if current is None or mean is not None or current.dtype != result.dtype:
                close()
                current = _FusedRun(result.dtype)
            current.add(symbol, operation, mean is not None)
            continue
        if current is not None:
            reads = {ref for arg in list(args) + list(kwargs.values()) for ref in _operand_refs(arg, ref_type)}
            if not reads & set(current.members) and _hoistable(function, args, kwargs, value_of, ref_type):
                continue
            close()
            current = None
    close()
    return runs


def _fused_kernel(run: _FusedRun, values: list, returned: set[int], ref_type: Any) -> Any:
    """``(plan, operand names, returned members)`` of a run: the plan ``_sot_fused`` takes,
    checked on the examples against numpy's results; None where the kernel's results differ."""
    from .._native import _sot_fused, _sot_fused_kernel

    operands: list = []  # (name, example) per call operand
    operand_at: dict[str, int] = {}
    constants: list[float] = []
    register_of = {symbol: at for at, symbol in enumerate(run.members)}
    words = [run.dtype.itemsize]
    instructions: list[int] = []
    outputs = [symbol for symbol in run.members if symbol in returned]

    def source(value: Any) -> int:
        if isinstance(value, ref_type) and value.index in register_of:
            return _REGISTER | register_of[value.index]
        if isinstance(value, (ref_type, _MeanSum)):
            name = f"v{value.index if isinstance(value, ref_type) else value.symbol}"
            if name not in operand_at:
                operand_at[name] = len(operands)
                operands.append((name, values[value.index] if isinstance(value, ref_type) else value.value))
            return _OPERAND | operand_at[name]
        constants.append(float(value))
        return _CONSTANT | (len(constants) - 1)

    for symbol in run.members:
        code, sources = run.operations[symbol]
        slots = [source(s) for s in sources] + [_NO_SOURCE]
        shape = values[symbol].shape
        output = outputs.index(symbol) + 1 if symbol in outputs else 0
        instructions += [code, slots[0], slots[1], len(shape), *shape, output]
    words.append(len(operands))
    for _, example in operands:
        if _is_array(example):
            words += [1, example.ndim, *example.shape]
        else:
            words.append(0)
    words.append(len(constants))
    for constant in constants:
        low, high = struct.unpack("<II", struct.pack("<d", constant))
        words += [low, high]
    words += [len(run.members), *instructions]
    program = b"".join(word.to_bytes(4, "little") for word in words)
    dtype = np.dtype(run.dtype.type)  # numpy's own object for the dtype, as its arrays hold
    layouts = tuple((values[symbol].shape, dtype) for symbol in outputs)
    plan = (_sot_fused_kernel(program, dtype), np.empty, layouts)
    results = _sot_fused(plan, *(example for _, example in operands))
    if results is not None:
        for symbol, computed in zip(outputs, results):
            expected = values[symbol]
            if (computed.shape != expected.shape or computed.strides != expected.strides
                    or computed.tobytes() != expected.tobytes()):
                return None
    return plan, [name for name, _ in operands], outputs


def _operand_source(value: Any, constant: Callable[[Any], str], ref_type: Any) -> str:
    """The source of a node's operand: a symbol, a literal, or a constant's name (``constant``
    names one). Not a closure of ``compile_graph``: one calling itself through its cell
    would leave each graph's compilation to the cycle collector, which free-threaded 3.13
    runs only once its heap has grown by a part."""
    if isinstance(value, ref_type):
        return f"v{value.index}"
    if isinstance(value, (tuple, slice)) and not _holds_ref(value, ref_type):
        # Immutable and constant: made once, not at every call.
        return constant(value)
    if isinstance(value, tuple):
        return "(" + "".join(_operand_source(v, constant, ref_type) + ", " for v in value) + ")"
    if isinstance(value, list):
        return "[" + ", ".join(_operand_source(v, constant, ref_type) for v in value) + "]"
    if isinstance(value, slice):
        parts = (_operand_source(part, constant, ref_type) for part in (value.start, value.stop, value.step))
        return "_slice({}, {}, {})".format(*parts)
    if value is None or type(value) in (bool, str):
        return repr(value)
    return constant(value)


def compile_graph(graph: tuple, examples: Any = None) -> Callable[..., tuple]:
    """``graph`` is ``(inputs, nodes, outputs)``, nodes ``(function, args, kwargs, filename,
    line)`` whose arguments hold ``framehook._native.SotRef`` symbols; ``examples``, where
    given, the inputs' values while translating (the nodes are then lowered for their types).

    The function made runs its nodes as recorded the first time (``_FirstRun``), and from
    its second run on the lowered graph (``_lowered``): a translation's graphs mostly run
    once or a few times before its hot calls, and lowering and compiling a graph costs as
    much as ten runs of it (a first call must not wait for a compiler)."""
    nodes = graph[1]
    filename, first = _graph_place(nodes)
    first_run = _FirstRun(graph, examples)
    namespace: dict[str, Any] = {"__builtins__": builtins, "_slice": slice, "_first_run": first_run}
    function = types.FunctionType(_placed_code(_ENTRY_SOURCE, filename, first), namespace, "__sot_graph")
    first_run.function = weakref.ref(function)
    return function


def _graph_place(nodes: tuple) -> tuple[str, int]:
    """The file a graph function stands in (its first node's), and its first line (the
    least line of a node in that file)."""
    filename = nodes[0][3] if nodes else "<sot graph>"
    lines = [line for *_, node_file, line in nodes if node_file == filename and line > 0]
    return filename, min(lines, default=1)


class _FirstRun:
    """What a graph function runs until it is lowered: at its first run the graph's nodes,
    called as recorded; at its second the lowering, which the function runs from then on
    (its code replaced, the constants the lowered code reads added to its globals)."""

    __slots__ = ("graph", "examples", "ran", "function")

    def __init__(self, graph: tuple, examples: Any):
        # Held until the lowering (the examples are the translation's copies).
        self.graph: Optional[tuple] = graph
        self.examples = examples
        self.ran = _NOT_RUN
        # Weak: the function's globals hold this (no cycle for the collector to find).
        self.function: Any = None

    def __call__(self, inputs: tuple) -> tuple:
        function = self.function()
        graph = self.graph
        if graph is None:  # lowered (by another thread, while this call began)
            return function(*inputs)
        if self.ran != _RAN_ONCE:
            self.ran = max(self.ran, _RAN_ONCE)
            return _run_nodes(graph, inputs, function.__globals__)
        from .._native import _sot_never_translated, disabled

        try:
            with disabled():  # framehook's own work, which hooks do not see (as a translation)
                code, constants, source = _lowered(graph, self.examples)
        except Exception:
            # What the lowering cannot make, the graph runs as recorded from now on: the
            # original's calls (exact), as a translation the backend fails falls back.
            self.ran, self.examples = _EVERY_RUN, None
            return _run_nodes(graph, inputs, function.__globals__)
        _sot_never_translated(code)
        function.__globals__.update(constants)
        function.__code__ = code
        function.__dict__["__sot_source__"] = source  # what the lowering made, for tests and debugging
        self.graph = self.examples = None
        return function(*inputs)


# A graph function's runs as recorded so far: none, one (the next lowers the graph), or every
# one (the lowering failed).
_NOT_RUN, _RAN_ONCE, _EVERY_RUN = 0, 1, 2


def _run_nodes(graph: tuple, inputs: tuple, namespace: dict[str, Any]) -> tuple:
    """The graph's first run: its nodes called as recorded, in order, each from a frame at
    the line the lowered graph runs it at (where what it warns points, with the same
    globals), under the regions it enters and, where it checks assumptions, the error state
    the lowered graph sets up for them (``_speculation_enter``); its outputs. What is still
    entered where a node raises is exited as the lowered graph's ``finally`` blocks do."""
    from .._native import SotRef

    _, nodes, outputs = graph
    filename, first = _graph_place(nodes)
    values = list(inputs)
    callers: dict[int, Any] = {}
    assuming = _checks_assumptions(nodes)
    opened: list[Any] = []
    speculating = _speculation_enter() if assuming else None
    try:
        for function, args, kwargs, node_file, line in nodes:
            call_args = _resolve(args, values, SotRef)
            call_kwargs = {name: _resolve(value, values, SotRef) for name, value in kwargs.items()}
            if _is_region_node(function):
                role = _region_role(function)
                if role is _REGION_EXIT:
                    opened.pop()
                    result = call_args[0].__exit__(None, None, None)
                elif role is _FILTER_CHANGE:
                    result = function(*call_args, **call_kwargs)
                else:
                    result = function(*call_args, **_region_settings(function, call_kwargs, assuming))
                    result.__enter__()
                    opened.append(result)
                values.append(result)
                continue
            at = line if node_file == filename and line > 0 else first
            caller = callers.get(at)
            if caller is None:
                caller = callers[at] = types.FunctionType(_placed_code(_CALLER_SOURCE, filename, at), namespace)
            values.append(caller(function, call_args, call_kwargs))
    finally:
        _leave(opened, speculating)
    return tuple(values[output] for output in outputs)


def _leave(opened: list, speculating: Any) -> None:
    """Exits the regions still entered, innermost first, then the assumptions' error state,
    each whatever the one before raised."""
    try:
        if opened:
            opened.pop().__exit__(None, None, None)
    finally:
        if opened:
            _leave(opened, speculating)
        elif speculating is not None:
            _speculation_exit(speculating)


# A graph function's code until its second run, and the code its first run calls each node
# from: compiled once with every line at its first, placed per file and first line, while
# a graph function uses them (a code made at run time goes with its file's functions).
_ENTRY_SOURCE = "def __sot_graph(*inputs):\n    return _first_run(inputs)\n"
_CALLER_SOURCE = "def __sot_graph_node(function, args, kwargs):\n    return function(*args, **kwargs)\n"
_TEMPLATES: dict[str, types.CodeType] = {}
_PLACED: weakref.WeakValueDictionary[tuple[str, str, int], types.CodeType] = weakref.WeakValueDictionary()


def _placed_code(source: str, filename: str, line: int) -> types.CodeType:
    key = (source, filename, line)
    code = _PLACED.get(key)
    if code is None:
        from .._native import _sot_never_translated

        template = _TEMPLATES.get(source)
        if template is None:
            template = _TEMPLATES[source] = _compiled(source, "<sot graph>", [1, 1])
        # (A code's lines are kept relative to its first: one new code object per place.)
        code = template.replace(co_filename=filename, co_firstlineno=line)
        _sot_never_translated(code)
        _PLACED[key] = code
    return code


def _lowered(graph: tuple, examples: Any) -> tuple[types.CodeType, dict[str, Any], str]:
    """The lowered graph: its function's code, the constants it reads as globals, and its
    source."""
    from .._native import SotRef, _sot_fused

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
        return _operand_source(value, constant, SotRef)

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
            if _MEANS.has(function):
                # numpy's ``_mean``: the sum, divided in place by the count (an intp).
                items = _mean_items(source, axis)
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

    # Fused runs, by member: the kernel's plan, the names of its operands, and the members
    # it returns (those read after the run or returned by the graph).
    run_of: dict[int, _FusedRun] = {}
    kernels: dict[int, tuple] = {}
    if values is not None:
        read_by: dict[int, set[int]] = {}
        for index, (_, args, kwargs, _, _) in enumerate(nodes):
            for arg in list(args) + list(kwargs.values()):
                for ref in _operand_refs(arg, SotRef):
                    read_by.setdefault(ref, set()).add(inputs + index)
        for planned in _plan_fused_runs(nodes, inputs, values, SotRef):
            members = set(planned.members)
            needed = {m for m in planned.members if m in output_set or read_by.get(m, set()) - members}
            kernel = _fused_kernel(planned, values, needed, SotRef)
            if kernel is not None:
                kernels[id(planned)] = kernel
                run_of.update((member, planned) for member in planned.members)
    fallback: list[tuple[str, int]] = []  # the current run's nodes as lowered, where the kernel gives up

    params = ", ".join(f"v{i}" for i in range(inputs))
    # Statements: (text, line, the lines of the statements an ``if`` holds, or None).
    statements: list[tuple[str, int, Any]] = []
    filename = _graph_place(nodes)[0]
    # The statements that enter a region and those that exit one, by index.
    enters: set[int] = set()
    exits: set[int] = set()
    assuming = _checks_assumptions(nodes)
    if assuming:
        # Where a branch on a tensor's value is assumed, the frame runs again if it goes the
        # other way: a floating-point error raises (the run again reports it as eagerly),
        # so that nothing the graph computed before the check was reported twice.
        first_line = nodes[0][4] if nodes[0][3] == filename else 0
        enters.add(len(statements))
        statements.append((f"_speculating = {constant(_speculation_enter)}()", first_line, None))
    for index, (function, args, kwargs, node_file, line) in enumerate(nodes):
        target = f"v{inputs + index}"
        if _is_region_node(function):
            placed_at = line if node_file == filename else 0
            role = _region_role(function)
            if role is _REGION_EXIT:
                exits.add(len(statements))
                statements.append((f"{operand(args[0])}.__exit__(None, None, None)", placed_at, None))
            elif role is _FILTER_CHANGE:
                call_args = [operand(a) for a in args] + [f"{k}={operand(v)}" for k, v in kwargs.items()]
                statements.append((f"{constant(function)}({', '.join(call_args)})", placed_at, None))
            else:
                kwargs = _region_settings(function, kwargs, assuming)
                made_with = [operand(a) for a in args] + [f"{k}={operand(v)}" for k, v in kwargs.items()]
                statements.append((f"{target} = {constant(function)}({', '.join(made_with)})", placed_at, None))
                enters.add(len(statements))
                statements.append((f"{target}.__enter__()", placed_at, None))
            continue
        result = values[inputs + index] if values is not None else _UNKNOWN
        ufunc = _elementwise_ufunc(function, args, kwargs)
        into = reusable(inputs + index, args, result) if ufunc is not None else None
        # Written into a dead array: the same ufunc call with ``out`` (positional, the
        # cheapest form, where numpy takes it so), after the rules that pick the operands.
        out = None
        if into is not None:
            out = (constant(ufunc), f"out=v{into}" if _KEYWORD_OUT.has(ufunc) else f"v{into}")
        lines = lowered(target, function, args, kwargs, result, out)
        run = run_of.get(inputs + index)
        if _is_array(result) and _makes_new_array(function, kwargs):
            if run is None or inputs + index in kernels[id(run)][2]:
                fresh.add(inputs + index)  # a run's other members exist only where it gives up
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
        placed_at = line if node_file == filename else 0
        if run is None:
            statements.extend((statement, placed_at, None) for statement in lines)
            continue
        if inputs + index in run.means:  # the sum, before the run
            statements.append((lines[0], placed_at, None))
            lines = lines[1:]
        fallback.extend((statement, placed_at) for statement in lines)
        if inputs + index == run.members[-1]:
            plan, operand_names, returned_members = kernels[id(run)]
            results = f"_f{run.members[0]}"
            first_line = next((at for _, at in fallback if at > 0), 0)
            call = f"{results} = {constant(_sot_fused)}({constant(plan)}, {', '.join(operand_names)})"
            unpack = "".join(f"v{m}, " for m in returned_members)
            block = (f"if {results} is None:\n" + "".join(f"    {text}\n" for text, _ in fallback)
                     + f"else:\n    {unpack}= {results}")
            statements.append((call, first_line, None))
            statements.append((block, first_line, [at for _, at in fallback]))
            fallback = []
    if assuming:
        exits.add(len(statements))
        statements.append((f"{constant(_speculation_exit)}(_speculating)", statements[0][1], None))
    returned = "".join(f"v{o}, " for o in outputs)
    source, placed = _graph_text(params, statements, enters, exits, f"return ({returned})")
    key = (filename, source, tuple(placed))
    code = _CODES.get(key)
    if code is None:
        code = _compiled(source, filename, placed)
        _CODES[key] = code
    return code, constants, source


def _graph_text(params: str, statements: list, enters: set[int], exits: set[int],
                returning: str) -> tuple[str, list[int]]:
    """The graph function's source, and the line each of its lines runs at: each statement
    at its own (0: the graph's first), a fused run's fallback statements each at theirs,
    the return at the graph's last; the statements after a region's entry, up to its exit,
    in a ``try`` whose ``finally`` exits it (at the least line it holds), as ``with``
    blocks nest."""
    known = [line for _, line, _ in statements if line > 0] or [1]
    first, last = min(known), max(known)
    text = [f"def __sot_graph({params}):"]
    placed = [first]
    opened: list[int] = []  # each open region's ``try:``, by its index in ``text``

    def emit(statement: str, line: int, held: Any, depth: int) -> None:
        parts = statement.split("\n")
        # A fused run's fallback: ``if``, its statements (each at its own line), ``else``.
        at = [line] * len(parts) if held is None else [line, *(h if h > 0 else line for h in held)]
        assert held is None or parts[len(at)].startswith("else:"), "a fallback of one line per statement"
        at += [line] * (len(parts) - len(at))
        text.extend("    " * depth + part for part in parts)
        placed.extend(at)

    for index, (statement, line, held) in enumerate(statements):
        line = line if line > 0 else first
        depth = 1 + len(opened)
        if index in exits:
            start = opened.pop()
            if start == len(text) - 1:
                emit("pass", line, None, depth)
            text.append("    " * (depth - 1) + "finally:")
            placed.append(line)
            emit(statement, line, None, depth)
            placed[start] = min(placed[start + 1:])
            continue
        emit(statement, line, held, depth)
        if index in enters:
            text.append("    " * depth + "try:")
            placed.append(line)
            opened.append(len(text) - 1)
    assert not opened, "a region the graph does not exit"
    text.append("    " + returning)
    placed.append(last)
    return "\n".join(text) + "\n", placed


def _compiled(source: str, filename: str, placed: list[int]) -> Any:
    """The code of the graph function ``source`` defines, in ``filename``, each line at its
    line in ``placed`` (compiled from the text once, file and lines set after: an ``ast``
    rewrite costs several times the compilation, and graphs of one text in other files or
    at other lines, as a small graph often is, share the compilation)."""
    from .._native import _bytecode_relined

    compiled = _COMPILED_TEXTS.get(source)
    if compiled is None:
        module_code = compile(source, "<sot graph>", "exec")
        compiled = next(c for c in module_code.co_consts if isinstance(c, types.CodeType))
        if len(_COMPILED_TEXTS) >= _COMPILED_TEXTS_KEPT:
            _COMPILED_TEXTS.clear()
        _COMPILED_TEXTS[source] = compiled
    code = _bytecode_relined(compiled.replace(co_filename=filename), placed)
    # Marked nested: free-threaded 3.13 makes a function of a code without the flag
    # immortal once a thread has run (deferred reference counting, gh-117696).
    return code.replace(co_flags=code.co_flags | _CO_NESTED)


# Each graph text's compiled function code, in no file, at the lines the text has.
_COMPILED_TEXTS: dict[str, types.CodeType] = {}
_COMPILED_TEXTS_KEPT = 256


def _is_region_node(function: Any) -> bool:
    return _REGION_NODE_TABLE.has(function)


_REGION_EXIT, _FILTER_CHANGE, _REGION_ENTRY = "exit", "filter change", "entry"


def _region_role(function: Any) -> str:
    """What a region's node does: exit a region, change the warning filters inside one, or
    make a region's manager, which the graph then enters."""
    if any(function is region.__exit__ for region in _REGION_TYPES):
        return _REGION_EXIT
    if any(function is change for change in _FILTER_CHANGES):
        return _FILTER_CHANGE
    return _REGION_ENTRY


def _region_settings(function: Any, kwargs: dict[str, Any], assuming: bool) -> dict[str, Any]:
    """The settings a region's manager is made with: in a graph that checks assumptions,
    what an np.errstate reports raises, as around it."""
    return _raising(kwargs) if assuming and function is np.errstate else kwargs


def _checks_assumptions(nodes: tuple) -> bool:
    """Whether a graph has an assumption's node (it runs under ``_speculation_enter``)."""
    assume = _native_assume()
    return any(function is assume for function, *_ in nodes)


def _raising(settings: Mapping[str, Any]) -> dict[str, Any]:
    """numpy error-state settings with what reports (warns, raises, calls the handler,
    logs) raising instead, what is ignored (or left unset) kept."""
    return {kind: action if action in (None, "ignore") else "raise" for kind, action in settings.items()}


def _speculation_enter() -> Any:
    """Enters numpy's error state for a graph that checks assumptions: what the caller's
    state reports (warns, raises, calls its handler, logs) raises instead, so that the frame
    runs again and reports it once, where it is eagerly; what it ignores stays ignored.
    Where numpy keeps its error state in a context variable (2.x), that variable is set to
    the state made once per caller's state (an ``np.errstate`` costs ten times as much)."""
    if _ERROR_STATE is None:
        manager = np.errstate(**_raising(np.geterr()))
        manager.__enter__()
        return manager
    speculating = _per_error_state(_SPECULATING, _ERROR_STATE.get(),
                                   lambda: _make_extobj(**_raising(np.geterr())))
    return _ERROR_STATE.set(speculating)


def _speculation_exit(entered: Any) -> None:
    """Leaves what ``_speculation_enter`` entered."""
    if _ERROR_STATE is None:
        entered.__exit__(None, None, None)
    else:
        _ERROR_STATE.reset(entered)


def _example_settings() -> Optional[dict[str, Any]]:
    """The error state ``call_example`` runs an operation under: what the caller's state
    raises or warns at stays, what it calls a handler for or logs is ignored; None where that
    is the caller's state. Where numpy keeps its error state in a context variable (2.x),
    kept per state object (each example call asked ``np.geterr()`` anew)."""
    if _ERROR_STATE is None:
        return _quiet_settings()
    return _per_error_state(_EXAMPLE_SETTINGS, _ERROR_STATE.get(), _quiet_settings)


def _quiet_settings() -> Optional[dict[str, Any]]:
    """``_example_settings``' answer for the current error state, made anew."""
    settings = np.geterr()
    quiet: dict[str, Any] = {kind: action if action in ("raise", "warn") else "ignore"
                             for kind, action in settings.items()}
    return None if quiet == settings else quiet


def _per_error_state(kept: dict[Any, Any], state: Any, make: Callable[[], Any]) -> Any:
    """``make()``'s answer for numpy's error-state object ``state`` (2.x), kept in ``kept``
    (one lookup: another thread may clear the dict between two on free-threaded builds)."""
    answer = kept.get(state, _UNSEEN_STATE)
    if answer is _UNSEEN_STATE:
        if len(kept) >= 64:  # states made per `with np.errstate` come and go
            kept.clear()
        answer = kept[state] = make()
    return answer


def _numpy_error_state() -> tuple[Any, Any]:
    """numpy 2.x's context variable holding the error state, and the C function making one;
    (None, None) where numpy has neither (1.x)."""
    try:
        config = importlib.import_module("numpy._core._ufunc_config")
    except ImportError:
        return None, None
    variable, make = getattr(config, "_extobj_contextvar", None), getattr(config, "_make_extobj", None)
    return (variable, make) if variable is not None and make is not None else (None, None)


_ERROR_STATE, _make_extobj = _numpy_error_state()
# Per caller's error state (numpy's object for it), the one a graph with assumptions runs under.
_SPECULATING: dict[Any, Any] = {}
# Per caller's error state (numpy's object for it), the settings an example call runs under.
_EXAMPLE_SETTINGS: dict[Any, Optional[dict[str, Any]]] = {}
_UNSEEN_STATE: Any = object()


def _native_assume() -> Any:
    """``framehook._native._sot_assume``: an assumption's node (see ``runs_assumptions``),
    imported once, at the first need."""
    global _ASSUME
    if _ASSUME is None:
        from .._native import _sot_assume

        _ASSUME = _sot_assume
    return _ASSUME


_ASSUME: Any = None


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
