"""SOT's paddle backend: tensors are ``paddle.Tensor``; a graph becomes a Paddle static
program (PIR), built on the graph's first call from the inputs' specs (their dtypes,
shapes and ``stop_gradient`` are guarded, so every later call has the same) and run by
Paddle's ``run_program``, so gradients flow through it as through the eager operations it
replaces; where the graph's operations called eagerly are measured faster (the cost model
of ``_StaticGraph``), those run instead. ``save`` exports a graph for inference.

Operations are Paddle's API functions (``paddle``, ``paddle.nn.functional``,
``paddle.linalg`` ...), tensor methods and operators, Paddle's own layers (``Linear``,
``Conv2D`` ...: one operation each, their parameters the program's) and
``PyLayer.apply``: a custom layer becomes Paddle's static ``pylayer`` operation, whose
backward is the user's ``backward``."""

from __future__ import annotations

import copy
import inspect
import logging
import operator
import os
import sys
import threading
import time
from collections.abc import Sequence
from typing import Any, Callable, Optional

import numpy as np
import paddle  # type: ignore[import-not-found]  # (typed nowhere; absent where mypy checks the stubs)
from paddle.autograd import PyLayer  # type: ignore[import-not-found]

from .. import disabled as _unhooked
from .._native import SotRef as _SotRef

_PADDLE_DIR = os.path.dirname(paddle.__file__) + os.sep
_TENSOR = paddle.Tensor
_VALUE = paddle.pir.Value
_LAYER = paddle.nn.Layer
# Numpy's scalars too: immutable numbers, constants of a program.
_CONSTANT_OPERANDS = (paddle.dtype, paddle.base.libpaddle.Place, paddle.CPUPlace, paddle.base.libpaddle.Size, type,
                      np.generic)

# Public modules whose functions (their ``__all__``) compute on tensors.
_API_MODULES = ("", "nn.functional", "linalg", "signal", "fft", "vision.ops", "incubate.nn.functional",
                "geometric", "metric")
# Functions of other modules that compute a tensor: (module under ``paddle``, name). The
# dygraph_to_static tests' models compute their accuracy in ``forward`` with
# ``paddle.static.accuracy``, which static mode builds too.
_MORE_OPERATIONS = (("tensor.creation", "fill_constant"), ("static", "accuracy"))
# Functions of those modules that do not compute a tensor: state, modes, files.
_NOT_OPERATIONS = ("in_dynamic_mode", "save", "load", "seed", "get_rng_state", "set_rng_state",
                   "get_cuda_rng_state", "set_cuda_rng_state", "set_default_dtype", "get_default_dtype",
                   "check_shape", "summary", "finfo", "iinfo", "enable_static", "disable_static",
                   "is_grad_enabled", "set_grad_enabled", "grad", "set_device", "get_device", "set_flags",
                   "get_flags", "set_printoptions", "is_tensor", "is_compiled_with_cuda", "to_dlpack",
                   "from_dlpack")
# Paddle's container layers run their sublayers: translated (inlined), not one operation.
_CONTAINERS = (paddle.nn.Sequential, paddle.nn.LayerList, paddle.nn.LayerDict, paddle.nn.ParameterList)
# Layers whose forward Paddle's static mode cannot build (Python loops over time steps).
_NOT_STATIC_LAYERS = (paddle.nn.RNN, paddle.nn.BiRNN)
# Numpy's ufuncs, each once (some are bound to several names).
_NUMPY_UFUNCS = tuple({id(ufunc): ufunc for ufunc in vars(np).values() if isinstance(ufunc, np.ufunc)}.values())
# Classes of plain values made from their arguments (distributed placements and meshes).
_VALUE_CLASSES = (paddle.distributed.ProcessMesh, paddle.distributed.Shard, paddle.distributed.Replicate,
                  paddle.distributed.Partial)


def _api_functions() -> dict[int, Any]:
    found: dict[int, Any] = {}
    for suffix in _API_MODULES:
        module = paddle
        for part in filter(None, suffix.split(".")):
            module = getattr(module, part)
        for name in getattr(module, "__all__", ()):
            function = getattr(module, name, None)
            if name in _NOT_OPERATIONS or not (inspect.isfunction(function) or inspect.isbuiltin(function)):
                continue
            found[id(function)] = function
    for name, function in vars(paddle._C_ops).items():
        if not name.startswith("_") and inspect.isbuiltin(function):
            found[id(function)] = function
    # Outside those modules' ``__all__`` (older code's ``paddle.tensor.fill_constant``, ``paddle.static.accuracy``).
    for module, name in _MORE_OPERATIONS:
        function = getattr(sys.modules.get(f"paddle.{module}"), name, None)
        if function is not None:
            found[id(function)] = function
    return found


def _devices_beside_the_cpu() -> bool:
    """Whether this Paddle can hold a tensor elsewhere than on the CPU (a CPU-only wheel
    cannot: there every tensor's place is the CPU, and comparing places, about 3 µs a
    tensor, is left out of the guards)."""
    compiled = ("is_compiled_with_cuda", "is_compiled_with_rocm", "is_compiled_with_xpu", "is_compiled_with_ipu")
    return (any(getattr(paddle, name)() for name in compiled if hasattr(paddle, name))
            or bool(paddle.device.get_all_custom_device_type()))


class _TensorMethods:
    """The eager tensor's methods, by identity: each is called by name on the static value.
    Only the members the class hands out as the same object each time (functions, method
    descriptors), each kept, so that an identity is never a freed object's."""

    def __init__(self) -> None:
        self._by_id: dict[int, tuple[Any, str]] = {}
        for name in dir(_TENSOR):
            member = getattr(_TENSOR, name, None)
            if callable(member) and hasattr(_VALUE, name) and getattr(_TENSOR, name) is member:
                self._by_id[id(member)] = (member, name)

    def name_of(self, function: Any) -> str | None:
        entry = self._by_id.get(id(function))
        return entry[1] if entry is not None and entry[0] is function else None


def _is_ast_marked(function: Any) -> bool:
    """A function Paddle's ``paddle.jit.sot.utils.try_ast_func`` marked: its control flow on
    tensors is for Paddle's AST conversion to capture (read where the marks are: only code
    that marked one has imported them)."""
    marks = sys.modules.get("paddle.jit.sot.utils.call_ast_utils")
    code = getattr(function, "__code__", None)
    return marks is not None and code is not None and code in marks.try_ast_codes


def _is_pylayer_apply(function: Any) -> bool:
    owner = getattr(function, "__self__", None)
    return (inspect.isbuiltin(function) and isinstance(owner, type) and issubclass(owner, PyLayer)
            and owner is not PyLayer and getattr(function, "__name__", "") == "apply")


def _is_paddle_layer(value: Any) -> bool:
    """One of Paddle's own layers (not a user's subclass, not a container)."""
    cls = type(value)
    return (isinstance(value, _LAYER) and (cls.__module__ or "").startswith("paddle.")
            and not isinstance(value, _CONTAINERS + _NOT_STATIC_LAYERS))


def _copied_build_strategy(strategy: Any) -> Any:
    """A new ``BuildStrategy`` with ``strategy``'s settings (Paddle's cannot be copied
    otherwise), or None for None."""
    if strategy is None:
        return None
    cls = type(strategy)
    copied = cls()
    for name in dir(cls):
        if not name.startswith("_") and isinstance(getattr(cls, name), property):
            setattr(copied, name, getattr(strategy, name))
    return copied


class PaddleBackend:
    """The backend protocol, for Paddle (see ``framehook.sot.register_backend``)."""

    name = "paddle"
    tensor_types = (_TENSOR,)
    # What a tensor's guard compares (its exact type is compared too); "place" only where a
    # tensor can be anywhere but the CPU (``__init__``).
    meta_attributes: tuple[str, ...] = ("dtype", "shape", "stop_gradient")
    # Tensor methods of no arguments whose result follows from the guarded meta attributes.
    meta_methods = ("dim", "ndimension", "is_tensor", "is_floating_point", "is_complex", "is_integer",
                    "element_size")
    # Tensor methods whose result is a Python value, or that act outside the graph.
    conversions = ("item", "tolist", "numpy", "__array__", "__bool__", "__float__", "__int__", "__index__",
                   "__len__", "backward", "register_hook", "clear_grad", "clear_gradient", "set_value",
                   "_numpy", "__deepcopy__")
    skip_prefixes = (_PADDLE_DIR,)
    # Model layers: pinned by identity and these attributes; their parameters and
    # sublayers are read through their ``__getattr__``.
    layer_types = (_LAYER,)
    layer_attributes = ("training",)
    # Paddle's own code translated all the same: the container layers' methods (a
    # Sequential's forward calls its sublayers, a LayerList iterates them).
    traced_codes = (*(function.__code__ for container in _CONTAINERS for function in vars(container).values()
                      if inspect.isfunction(function)),
                    # `paddle.tensor` is an object reading its attributes from the module.
                    *((type(paddle.tensor).__getattr__.__code__,) if not inspect.ismodule(paddle.tensor) else ()))
    # And the functions of Paddle's SOT debugging module (``psdb.assert_true``, the markers
    # ``breakgraph`` and ``fallback``), plain Python: named by path, as importing
    # ``paddle.jit.sot`` here would take the place ``framehook.sot.paddle.install()`` needs.
    traced_files = (os.path.join(_PADDLE_DIR, "jit", "sot", "psdb.py"),)
    # Readers of the process's state, guarded where their result is used (the guards call
    # them again): the current device, whether gradients are recorded.
    guarded_functions = (paddle.get_device, paddle.is_grad_enabled)
    # The build's facts (``is_compiled_with_cuda()`` and the like), the same all along, and
    # numpy's ufuncs (of numbers: the ones of a shape's arithmetic, ``np.ceil(n / 7)``).
    fixed_functions = (*{id(function): function for module in (paddle, paddle.device, paddle.base.libpaddle)
                         for name, function in vars(module).items()
                         if name.startswith("is_compiled_with_") and callable(function)}.values(),
                       *_NUMPY_UFUNCS)

    # Numpy's arrays: graph values as tensors are (guarded on dtype and shape, never on their
    # contents), computed on by numpy's ufuncs and the arrays' methods in Python on every
    # call, and fed to a program, converted as eager arithmetic converts them
    # (``paddle.to_tensor``), where they meet a tensor.
    array_types = (np.ndarray,)
    array_meta_attributes = ("dtype", "shape")
    array_functions = _NUMPY_UFUNCS

    def __init__(self, cost_model: bool = True, min_graph_size: int = 0) -> None:
        """``cost_model=False``: every graph runs as its static program (else a graph's
        first calls choose between the program and its operations called eagerly), but a
        graph of fewer than ``min_graph_size`` operations, whose operations run eagerly
        (Paddle's ``MIN_GRAPH_SIZE``)."""
        self._api = _api_functions()
        self._methods = _TensorMethods()
        self._cost_model = cost_model
        self._min_graph_size = min_graph_size
        # `paddle.jit.to_static`'s options for the graphs' programs (`with_program_options`).
        self._program_options: dict[str, Any] = {}
        if _devices_beside_the_cpu():
            self.meta_attributes = (*self.meta_attributes, "place")

    def with_program_options(self, build_strategy: Any = None, backend: Any = None) -> PaddleBackend:
        """This backend, building its graphs' programs with ``paddle.jit.to_static``'s
        ``build_strategy`` (``paddle.static.BuildStrategy``: the passes applied; as it is now,
        a copy, so that the translations do not keep the caller's alive) and ``backend``
        (``"CINN"``, where Paddle is built with it)."""
        options = copy.copy(self)
        options._program_options = {"build_strategy": _copied_build_strategy(build_strategy), "backend": backend}
        return options

    def is_op(self, function: Any) -> bool:
        entry = self._api.get(id(function))
        if entry is function:
            return True
        return _is_pylayer_apply(function) or _is_paddle_layer(function) or _is_ast_marked(function)

    @property
    def constant_operand_types(self) -> Optional[tuple[type, ...]]:
        """What ``is_constant_operand`` says yes to (the translator asks ``isinstance``
        itself); None for a subclass with an ``is_constant_operand`` of its own."""
        own = type(self).is_constant_operand is PaddleBackend.is_constant_operand
        return _CONSTANT_OPERANDS if own else None

    def is_constant_operand(self, value: Any) -> bool:
        """Dtypes, places and shapes (``paddle.Size``, a list whose contents the tensor's
        guard fixes): values the translation reads, indexes and passes to operations."""
        return isinstance(value, _CONSTANT_OPERANDS)

    # The classes ``construct`` is asked about.
    constructed_types = (_LAYER, *_VALUE_CLASSES)

    def construct(self, cls: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """``cls(*args, **kwargs)`` made while translating, to be made again by the generated
        code, where making it touches nothing but the new object: Paddle's distributed
        placements and meshes, and Paddle's own layers holding no parameters or buffers of
        their own and no sublayers but those passed to them (``nn.Softmax()``, whose call
        is then one operation; ``nn.LayerList(layers[1:])``, iterated as those layers).
        None for any other class."""
        if cls in _VALUE_CLASSES:
            return cls(*args, **kwargs)
        if not (issubclass(cls, _LAYER) and (cls.__module__ or "").startswith("paddle.")
                and not issubclass(cls, _NOT_STATIC_LAYERS)):
            return None
        given = {id(item) for argument in (*args, *kwargs.values())
                 for item in (argument if isinstance(argument, (list, tuple)) else [argument])}
        layer = cls(*args, **kwargs)
        own_state = (next(iter(layer.parameters(include_sublayers=False)), None) is not None
                     or next(iter(layer.buffers(include_sublayers=False)), None) is not None)
        return None if own_state or any(id(s) not in given for s in layer.children()) else layer

    def example(self, value: Any) -> Any:
        """A copy to compute with while translating: in-place operations then leave the
        caller's tensor alone (the graph applies them once, on the real one)."""
        if isinstance(value, np.ndarray):
            return value.copy()
        copy = value.detach().clone()
        copy.stop_gradient = value.stop_gradient
        return copy

    def call_example(self, function: Any, args: tuple, kwargs: dict) -> Any:
        """An operation on examples while translating, leaving alone what the graph's run
        changes, once: the random generator's state (a dropout's draw), and the untrained
        state one of Paddle's layers may write into (a BatchNorm's running statistics in
        training, a SpectralNorm's vectors)."""
        generator = paddle.get_rng_state()
        state = [*function.parameters(), *function.buffers()] if isinstance(function, _LAYER) else []
        saved = [(tensor, tensor.clone()) for tensor in state if tensor.stop_gradient and tensor._is_initialized()]
        try:
            return function(*args, **kwargs)
        finally:
            paddle.set_rng_state(generator)
            with paddle.no_grad():
                for tensor, value in saved:
                    tensor.set_value(value)

    def layer_store(self, layer: Any, name: str, value_type: type) -> tuple[str, ...] | None:
        """Where ``layer.name = value`` (of ``value_type``) only makes ``layer.name`` give the
        value, the tables that must lack ``name`` for that (and lack it now): Paddle's
        ``Layer.__setattr__`` files a tensor among the layer's buffers, another value in its
        ``__dict__``, unless ``name`` is a parameter's or a sublayer's (which take only their
        kind, else raise), or another value a buffer's. None for a Parameter, a Layer or a
        ``to_static`` function (filed and renamed apart), a property of the layer's class, and a
        subclass's own ``__setattr__``."""
        cls = type(layer)
        if cls.__setattr__ is not _LAYER.__setattr__ or isinstance(inspect.getattr_static(cls, name, None), property):
            return None
        # A to_static function exists only where Paddle's module making them was imported.
        translator = sys.modules.get("paddle.jit.dy2static.program_translator")
        filed_apart = (paddle.base.framework.EagerParamBase, _LAYER,
                       *((translator.StaticFunction,) if translator is not None else ()))
        if issubclass(value_type, filed_apart):
            return None
        tables: tuple[str, ...] = ("_parameters", "_sub_layers")
        if not (issubclass(value_type, _TENSOR) or value_type is type(None)):
            tables += ("_buffers",)
        return None if any(name in layer.__dict__.get(table, ()) for table in tables) else tables

    def forward_of(self, value: Any) -> Any:
        """For a user's layer (a ``paddle.nn.Layer`` whose call runs no hook), the function
        its call runs, ``forward(layer, *args)``, to translate in its place; else None."""
        if not isinstance(value, _LAYER) or _is_paddle_layer(value) or isinstance(value, _NOT_STATIC_LAYERS):
            return None
        if value._forward_pre_hooks or value._forward_post_hooks:
            return None
        forward = inspect.getattr_static(type(value), "forward", None)
        return forward if inspect.isfunction(forward) else None

    def compile(self, graph: tuple) -> Callable[..., tuple]:
        return _StaticGraph(graph, self._methods, self._cost_model, self._program_options, self._min_graph_size)


# ``operator`` functions of a tensor and a number: the number may be a program input cast
# to the tensor's dtype instead, which is how Paddle's eager arithmetic converts it too.
_NUMBER_OPERATORS = (operator.add, operator.sub, operator.mul, operator.truediv, operator.pow, operator.iadd,
                     operator.isub, operator.imul, operator.itruediv, operator.lt, operator.le, operator.gt,
                     operator.ge, operator.eq, operator.ne)
# Functions that write into their first operand where it is a numpy array: ``operator``'s
# item assignments and in-place operators, and the arrays' methods that do.
_ARRAY_WRITERS = (operator.setitem, operator.delitem, operator.iadd, operator.iand, operator.iconcat,
                  operator.ifloordiv, operator.ilshift, operator.imatmul, operator.imod, operator.imul,
                  operator.ior, operator.ipow, operator.irshift, operator.isub, operator.itruediv,
                  operator.ixor, *(getattr(np.ndarray, name) for name in (
                      "fill", "sort", "put", "partition", "resize", "setfield", "setflags", "byteswap", "itemset")
                      if hasattr(np.ndarray, name)))


def _written_symbols(graph: _StaticGraph, function: Any, node_args: tuple, kwargs: dict) -> list[int]:
    """The symbols a node may write into: its first operand where the function writes
    into it, and a ufunc's outputs (``out=``, or its arguments past its inputs)."""
    written = _refs(kwargs.get("out"))
    if isinstance(function, np.ufunc):
        written += _refs(node_args[function.nin:])
    first = node_args[0] if node_args else None
    if any(function is writer for writer in _ARRAY_WRITERS) or graph._writes_into_first(function):
        written += _refs(first)
    return written


class _StaticGraph:
    """A graph's static programs, built on first use. The graph's inputs that are numbers
    (their types only guarded) do not make programs of their own where they meet a
    tensor in arithmetic: there they are fed (one float64 tensor of them per call), each
    cast to that tensor's dtype.
    Elsewhere (an argument of an API function) a number is a constant of the program,
    one program per value, and past ``MAX_PROGRAMS`` the graph runs eagerly. Arithmetic on
    numbers alone runs in Python on every call.

    Where Paddle's static mode cannot build what eager mode ran (an API that reads a
    tensor argument as a Python number, say), the graph's operations run eagerly, as they
    were recorded, from then on; the reason is logged ("framehook.sot")."""

    MAX_PROGRAMS = 8
    # Calls timed each way before the cost model chooses.
    TRIALS = 3

    def __init__(self, graph: tuple, methods: _TensorMethods, cost_model: bool = True,
                 program_options: dict[str, Any] | None = None, min_graph_size: int = 0):
        self._inputs, self._nodes, self._outputs = graph
        self._methods = methods
        self._program_options = program_options or {}
        self._plan: _Plan | None = None
        self._programs: dict[tuple, _Program] = {}
        self._eager = False
        # The cost model: Paddle's executor costs several µs per operation, more than
        # small tensors' eager kernels take, so a graph's first calls after its first
        # program is built time that program beside its operations called eagerly (the
        # generated `_Plan.eager`), and the faster runs from then on.
        self._timings: dict[str, list[float]] = {"static": [], "eager": []}
        self._static: bool | None = None if cost_model else len(self._nodes) >= min_graph_size
        self._lock = threading.Lock()

    def __call__(self, *args: Any) -> tuple:
        # Compiled code: nothing it calls is translated (Paddle's static build runs code
        # of its own making, outside its directory).
        with _unhooked():
            plan = self._plan
            values = None
            if plan is None:
                with self._lock:
                    plan = self._plan
                    if plan is None:
                        plan = self._plan = _Plan(self, args)
                        values, plan.first_values = plan.first_values, None
            if plan.tensors_only and self._static:
                # The common case: tensors in, one program.
                only = self._programs.get(())
                if only is not None:
                    return only(args)
            if values is None:
                values = plan.numbers(args)
            if self._eager or self._static is False or not plan.static:
                return plan.eager(values)
            key = tuple(values[i] for i in plan.specialized)
            program = self._programs.get(key)
            if program is None:
                if len(self._programs) >= self.MAX_PROGRAMS:
                    return plan.eager(values)
                with self._lock:
                    program = self._programs.get(key)
                    if program is None:
                        program = self._build(plan, values)
                if program is None:
                    return plan.eager(values)
                return program(values)  # its first run (set-up included) is not timed
            if self._static is None:
                return self._timed(plan, program, values)
            return program(values)

    def _timed(self, plan: _Plan, program: _Program, values: list) -> tuple:
        """A call of the cost model's trials: the program or the eager calls, alternately."""
        timings = self._timings
        way = "static" if len(timings["static"]) <= len(timings["eager"]) else "eager"
        start = time.perf_counter()
        result = program(values) if way == "static" else plan.eager(values)
        elapsed = time.perf_counter() - start
        with self._lock:
            timings[way].append(elapsed)
            if self._static is None and min(len(t) for t in timings.values()) >= self.TRIALS:
                self._static = min(timings["static"]) <= min(timings["eager"])
        return result

    def _build(self, plan: _Plan, values: list) -> _Program | None:
        """A program for ``values``, or None where static mode cannot build the graph."""
        while True:
            try:
                program = _Program(self, plan, values)
            except _Specialize as specialize:
                # The programs made so far feed it: a new plan, and they go.
                plan = self._plan = plan.specializing(specialize.symbol)
                self._programs.clear()
                continue
            except _BackwardMismatch:
                raise
            except Exception as error:  # static mode's own limits: the graph runs eagerly
                self._eager = True
                first = next(iter(str(error).strip().splitlines()[-1:]), "")
                logging.getLogger("framehook.sot").warning(
                    "a graph runs eagerly: Paddle's static mode cannot build it (%s: %s)", type(error).__name__,
                    first)
                return None
            self._programs[tuple(values[i] for i in plan.specialized)] = program
            return program

    def _replay(self, values: list, fed: dict[int, int] | None = None, host: frozenset[int] = frozenset()) -> tuple:
        """The graph's operations on static values ``values`` (its inputs, then whatever is
        known of its nodes' results), building a program: every output. ``fed``: the
        static values that stand for numbers, by identity, to their symbols; ``host``: the
        nodes run in Python, whose results ``values`` holds.
        Statically, an operation that writes into a tensor makes a new value: the symbol
        of the tensor written into stands for it from then on (``values`` shows them)."""
        values[:] = list(values) + [None] * (self._inputs + len(self._nodes) - len(values))
        for index, (function, node_args, kwargs, _, _) in enumerate(self._nodes):
            symbol = self._inputs + index
            if values[symbol] is not None or index in host:
                continue
            call_args = _resolve(node_args, values)
            call_kwargs = {k: _resolve(v, values) for k, v in kwargs.items()}
            target = node_args[0] if node_args and isinstance(node_args[0], _SotRef) else None
            if function is operator.setitem and target is not None and isinstance(call_args[0], _VALUE):
                values[target.index] = paddle.static.setitem(*call_args)
                continue
            values[symbol] = self._static_call(function, call_args, call_kwargs, fed or {})
            if target is not None and isinstance(call_args[0], _VALUE) and self._writes_into_first(function):
                values[target.index] = values[symbol]
        return tuple(values[o] for o in self._outputs)

    def _writes_into_first(self, function: Any) -> bool:
        """Paddle's in-place operations (``x.add_(y)``, ``paddle.tanh_(x)``) end in ``_``."""
        name = self._methods.name_of(function) or getattr(function, "__name__", None) or ""
        return name.endswith("_") and not name.endswith("__")

    def _static_call(self, function: Any, args: tuple, kwargs: dict, fed: dict[int, int]) -> Any:
        if fed and any(id(a) in fed for a in args):
            args = _with_fed_numbers(args, fed)
        name = self._methods.name_of(function)
        if name is not None and args and isinstance(args[0], _VALUE):
            return getattr(args[0], name)(*args[1:], **kwargs)
        if _is_pylayer_apply(function):
            return _static_pylayer(function.__self__, args, kwargs)
        if _is_ast_marked(function):
            from paddle.jit.dy2static.convert_call_func import convert_call  # type: ignore[import-not-found]

            return convert_call(function)(*args, **kwargs)
        return function(*args, **kwargs)


class _BackwardMismatch(ValueError):
    """A PyLayer's backward returns a gradient count other than its forward's inputs."""


def _static_pylayer(cls: type, args: tuple, kwargs: dict) -> Any:
    """``cls.apply(*args, **kwargs)`` in a static program: Paddle's ``pylayer`` operation,
    its forward and backward blocks built from the user's ``forward`` and ``backward``
    (``ctx.save_for_backward``/``ctx.saved_tensor`` carry values between them)."""
    from paddle.jit.dy2static.py_layer import StaticPyLayer  # type: ignore[import-not-found]

    layer = StaticPyLayer(cls)
    backward = layer.backward_fn_with_ctx
    inputs = sum(isinstance(a, _VALUE) for a in (*args, *kwargs.values()))

    def checked_backward(*grads: Any) -> Any:
        result = backward(*grads)
        count = len(result) if isinstance(result, (tuple, list)) else 1
        if count != inputs:
            raise _BackwardMismatch(f"{cls.__qualname__}.backward returned {count} gradients; its forward takes "
                             f"{inputs} tensor input{'s' if inputs != 1 else ''}, one gradient each")
        return result

    layer.backward_fn_with_ctx = checked_backward
    return layer.apply(*args, **kwargs)


# The largest int a float64 holds exactly, with every int below it.
_EXACT_INT = 2**53


class _Specialize(Exception):
    """A fed number meets no floating-point tensor: the program takes its value instead."""

    def __init__(self, symbol: int):
        self.symbol = symbol


def _with_fed_numbers(args: tuple, fed: dict[int, int]) -> tuple:
    """An operator's arguments with its fed number (a float64 0-d value) cast to
    the dtype of the floating-point tensor beside it, the conversion Paddle's eager
    arithmetic makes of a Python number."""
    tensors = [a for a in args if isinstance(a, _VALUE) and id(a) not in fed]
    if len(tensors) != 1 or not paddle.is_floating_point(tensors[0]):
        raise _Specialize(next(fed[id(a)] for a in args if id(a) in fed))
    dtype = tensors[0].dtype
    return tuple(paddle.cast(a, dtype) if id(a) in fed else a for a in args)


def _resolve(value: Any, values: list) -> Any:
    if isinstance(value, _SotRef):
        return values[value.index]
    if isinstance(value, tuple):
        return tuple(_resolve(v, values) for v in value)
    if isinstance(value, list):
        return [_resolve(v, values) for v in value]
    if isinstance(value, dict):
        return {k: _resolve(v, values) for k, v in value.items()}
    if isinstance(value, slice):
        return slice(_resolve(value.start, values), _resolve(value.stop, values), _resolve(value.step, values))
    return value


def _refs(value: Any) -> list[int]:
    """The symbols ``value`` (a node's argument) refers to."""
    if isinstance(value, _SotRef):
        return [value.index]
    if isinstance(value, (tuple, list)):
        return [r for v in value for r in _refs(v)]
    if isinstance(value, dict):
        return [r for v in value.values() for r in _refs(v)]
    if isinstance(value, slice):
        return _refs((value.start, value.stop, value.step))
    return []


class _Plan:
    """What a graph computes where, from the kinds of its inputs (tensor, number or numpy
    array: fixed by the guards). The host nodes, on numbers and arrays alone, run in Python
    on each call (numpy computes on its arrays). Of their values that the graph's other
    operations take: the arrays and tensors are fed to the program as tensors, the numbers
    either fed (one float64 tensor) or constants of a program per value (specialized). The
    graph's other operations are also generated as eager calls (``eager``).
    Made on the graph's first call, whose host values (``first_values``) show what the host
    nodes give."""

    def __init__(self, graph: _StaticGraph, args: tuple):
        self.graph = graph
        self.tensors = [i for i, a in enumerate(args) if isinstance(a, _TENSOR)]
        host = {i for i, a in enumerate(args) if not isinstance(a, _TENSOR)}
        # The host values that may be numpy arrays (mutable): the array inputs and what host
        # nodes compute from them; the rest are numbers.
        arrays_maybe = {i for i, a in enumerate(args) if isinstance(a, np.ndarray)}
        self.host_nodes: list[int] = []
        program_nodes = []
        writes_into_array = False
        for index, (function, node_args, kwargs, _, _) in enumerate(graph._nodes):
            refs = _refs(node_args) + _refs(kwargs)
            on_host = [r for r in refs if r in host]
            if any(r in arrays_maybe for r in _written_symbols(graph, function, node_args, kwargs)):
                writes_into_array = True
            if refs and len(on_host) == len(refs):
                host.add(graph._inputs + index)
                self.host_nodes.append(index)
                if any(r in arrays_maybe for r in refs):
                    arrays_maybe.add(graph._inputs + index)
            else:
                program_nodes.append((function, kwargs, on_host))
        # A numpy array written into: every node runs eagerly, in the graph's order (run
        # before the program, host nodes would read it before a program writes into it; a
        # program writes into its own value of it, not the caller's).
        if writes_into_array:
            self.host_nodes, program_nodes = [], []
        self.host = frozenset(self.host_nodes)
        self._padding = [None] * len(graph._nodes)
        self._prelude = _generated(graph._nodes, graph._inputs, self.host_nodes)
        self.first_values: list | None = self.numbers(args)
        values = self.first_values
        fed: set[int] = set()
        specialized: set[int] = set()
        arrays: set[int] = set()
        # A graph of host nodes alone has no program to build.
        self.static = bool(program_nodes)
        for function, kwargs, on_host in program_nodes:
            held = {r for r in on_host if isinstance(values[r], (np.ndarray, _TENSOR))}
            arrays |= held
            numbers = [r for r in on_host if r not in held]
            if any(function is op for op in _NUMBER_OPERATORS) and not kwargs:
                fed.update(numbers)
            else:
                specialized.update(numbers)
        fed -= specialized
        self.fed = sorted(fed)
        self.specialized = sorted(specialized)
        self.arrays = sorted(arrays)
        others = sorted(set(range(len(graph._nodes))) - self.host)
        # The graph's other operations as eager calls (see _StaticGraph's cost model).
        self.eager = _generated(graph._nodes, graph._inputs, others, graph._outputs)
        # Every input a tensor: one program, called with the arguments as they come.
        self.tensors_only = len(self.tensors) == len(args)

    def specializing(self, symbol: int) -> _Plan:
        """This plan with ``symbol`` a constant of the programs, not fed."""
        plan = copy.copy(self)
        plan.fed = [i for i in self.fed if i != symbol]
        plan.specialized = sorted([*self.specialized, symbol])
        plan.tensors_only = False
        return plan

    def numbers(self, args: Sequence[Any]) -> list:
        """The inputs, then the values of the host nodes (None for others)."""
        values = [*args, *self._padding]
        self._prelude(values)
        return values


def _generated(nodes: list, inputs: int, indices: list[int], outputs: tuple | None = None) -> Callable[[list], Any]:
    """A function computing the nodes ``indices`` into a graph's values ``v`` (symbol by
    symbol), each recorded call made as it was recorded, and returning the values of
    ``outputs`` where given: generated, it runs on every call. Where it returns, each
    value it computes is dropped after its last use, as eager code drops its temporaries:
    the allocator then reuses their memory for the next operations (a few per cent of
    an optimizer step's time)."""
    namespace: dict[str, Any] = {"_resolve": _resolve}

    def constant(value: Any) -> str:
        name = f"c{len(namespace)}"
        namespace[name] = value
        return name

    def source(value: Any) -> str:
        if isinstance(value, _SotRef):
            return f"v[{value.index}]"
        if not _refs(value):
            return constant(value)
        if isinstance(value, (tuple, list)):
            items = "".join(f"{source(v)}, " for v in value)
            return f"({items})" if isinstance(value, tuple) else f"[{items}]"
        return f"_resolve({constant(value)}, v)"  # a slice or a dict holding symbols

    # The values this function computes that are not returned, by the node that uses them last.
    dropped_after: dict[int, list[int]] = {}
    if outputs is not None:
        last_use = {symbol: index for index in indices
                    for symbol in _refs(nodes[index][1]) + _refs(nodes[index][2])}
        computed = {inputs + index for index in indices} - set(outputs)
        for symbol, index in last_use.items():
            if symbol in computed:
                dropped_after.setdefault(index, []).append(symbol)
    lines = ["def run(v):", "    pass"]
    for index in indices:
        function, args, kwargs, _, _ = nodes[index]
        call = [source(a) for a in args] + [f"{k}={source(a)}" for k, a in kwargs.items()]
        lines.append(f"    v[{inputs + index}] = {constant(function)}({', '.join(call)})")
        lines += [f"    v[{symbol}] = None" for symbol in dropped_after.get(index, ())]
    if outputs is not None:
        lines.append(f"    return ({''.join(f'v[{o}], ' for o in outputs)})")
    exec(compile("\n".join(lines), "<sot paddle graph>", "exec"), namespace)
    return namespace["run"]


def _input_spec(value: Any, name: str) -> Any:
    """A program input's spec: a tensor's, or that of a numpy array as a tensor."""
    from paddle.static import InputSpec  # type: ignore[import-not-found]

    if isinstance(value, np.ndarray):
        return InputSpec(shape=list(value.shape), dtype=str(value.dtype), name=name, stop_gradient=True)
    return InputSpec(shape=list(value.shape), dtype=value.dtype, name=name, stop_gradient=value.stop_gradient)


class _Program:
    """One static program of a graph: its tensor inputs, the numpy arrays it takes (as
    tensors) and fed numbers are its inputs, the parameters of Paddle's layers it calls are
    bound, its outputs the graph's tensor results; the graph's other results (numbers, an
    input returned as it is, what host nodes computed) are passed through."""

    def __init__(self, graph: _StaticGraph, plan: _Plan, values: list):
        self._graph = graph
        self._plan = plan
        # Fed as tensors: the tensor inputs, then the arrays and tensors of host nodes.
        tensors = plan.tensors + plan.arrays
        specs = [_input_spec(values[i], f"sot_input_{i}") for i in tensors]
        # Per graph output: ("program", k) the program's k-th output, else ("value", symbol).
        self._results: list[tuple[str, int]] = []
        results = self._results
        template = list(values)
        specializing: list[int] = []
        # (input position, program output) of each caller's tensor the graph writes into.
        self._written: list[tuple[int, int]] = []
        written = self._written

        @paddle.jit.not_to_static
        def build(feeds: list) -> list:
            inputs = list(template)
            for position, feed in zip(tensors, feeds):
                inputs[position] = feed
            fed = {}
            for k, position in enumerate(plan.fed):
                inputs[position] = feed = feeds[len(tensors)][k]
                fed[id(feed)] = position
            produced: list[Any] = []
            fed_values = list(inputs)
            try:
                outputs = graph._replay(inputs, fed=fed, host=plan.host)
            except _Specialize as specialize:
                # Raised outside Paddle's build, which would rewrap it.
                specializing.append(specialize.symbol)
                return []
            for index, value in zip(graph._outputs, outputs):
                # A caller's tensor returned is returned itself (written into below, if so).
                if isinstance(value, _VALUE) and index not in tensors and index not in plan.fed:
                    results.append(("program", len(produced)))
                    produced.append(value)
                else:
                    results.append(("value", index))
            # A caller's tensor the graph wrote into: its new value is written back.
            for position in plan.tensors:
                if inputs[position] is not fed_values[position]:
                    written.append((position, len(produced)))
                    produced.append(inputs[position])
            return produced

        if plan.fed:
            from paddle.static import InputSpec  # type: ignore[import-not-found]

            specs.append(InputSpec(shape=[len(plan.fed)], dtype="float64", name="sot_numbers"))
        static = paddle.jit.to_static(build, input_spec=[specs], full_graph=True, **graph._program_options)
        feeds = self._feeds(values)
        if feeds is None:
            raise _Specialize(next(i for i in plan.fed if type(values[i]) not in (int, float, bool)
                                   or abs(values[i]) > _EXACT_INT))
        _, self._partial = static.get_concrete_program(feeds)
        if specializing:
            raise _Specialize(specializing[0])
        self._run = self._partial.sot_call

    def _feeds(self, values: Sequence[Any]) -> list | None:
        """The program's inputs: the tensors, the arrays as tensors (converted as eager
        arithmetic converts them), then the fed numbers as one float64 tensor (one tensor
        made per call; an int is exact in it up to 2**53)."""
        feeds = [values[i] for i in self._plan.tensors]
        feeds += [paddle.to_tensor(values[i]) if isinstance(values[i], np.ndarray) else values[i]
                  for i in self._plan.arrays]
        if self._plan.fed:
            numbers = [values[i] for i in self._plan.fed]
            if not all(type(n) is float or type(n) in (int, bool) and abs(n) <= _EXACT_INT for n in numbers):
                return None
            feeds.append(paddle.to_tensor(numbers, dtype="float64"))
        return feeds

    def __call__(self, values: Sequence[Any]) -> tuple:
        """The graph's outputs for ``values`` (the graph's inputs, then, where the plan has
        numbers, the values of its nodes on numbers alone)."""
        feeds = self._feeds(values)
        if feeds is None:
            # A number the float64 feed cannot hold exactly (a complex, a huge int).
            return self._plan.eager(list(values))
        produced = self._run(feeds)
        for tensor in produced:
            tensor.name = ""  # run_program names its results after the program's variables
        for position, output in self._written:
            paddle.assign(produced[output], output=values[position])
        return tuple(produced[what] if kind == "program" else values[what] for kind, what in self._results)


# ---------------------------------------------------------------- export


class _Recording(PaddleBackend):
    """The paddle backend, remembering each graph it compiles with the objects its inputs
    were taken from (the tensors the translation copied, by identity)."""

    def __init__(self) -> None:
        super().__init__()
        self.graphs: list[tuple[tuple, list]] = []
        self._originals: dict[int, tuple[Any, Any]] = {}

    def example(self, value: Any) -> Any:
        copy = super().example(value)
        self._originals[id(copy)] = (copy, value)
        return copy

    def compile_with_examples(self, graph: tuple, examples: tuple) -> Callable[..., tuple]:
        originals = [self._originals.get(id(e), (None, e))[1] for e in examples]
        self.graphs.append((graph, originals))
        return self.compile(graph)


def save(function: Callable[..., Any], path: str, input_spec: Any) -> None:
    """Translates ``function`` on zeros of ``input_spec``'s shapes (a dimension of -1 or
    None taken as 2) and saves its one graph for inference as ``paddle.jit.save`` does:
    the inputs are ``input_spec``'s (dimensions left free stay free), the other tensors the
    graph reads (a layer's parameters and buffers) its persistable parameters."""
    from paddle.static import InputSpec  # type: ignore[import-not-found]

    from .. import _native
    from ._translate import stats

    if isinstance(input_spec, InputSpec) or not all(isinstance(s, InputSpec) for s in input_spec):
        raise TypeError("input_spec takes a list of paddle.static.InputSpec, one per argument")
    specs = list(input_spec)
    arguments = [paddle.zeros([2 if d is None or d < 0 else d for d in spec.shape], dtype=spec.dtype)
                 for spec in specs]
    recording = _Recording()
    fast = _native.SotTranslated(function, recording, False, 1, [], False)
    with paddle.no_grad():
        fast(*arguments)
    counters = stats(fast)
    if len(recording.graphs) != 1 or counters.graph_breaks or counters.fallbacks:
        why = [b.reason for b in counters.graph_breaks + counters.fallbacks] or [f"{len(recording.graphs)} graphs"]
        raise ValueError(f"{getattr(function, '__qualname__', function)!s} does not translate to one graph "
                         f"for these inputs, so it cannot be saved as one program: {'; '.join(why)}")
    graph, originals = recording.graphs[0]
    position = {id(argument): k for k, argument in enumerate(arguments)}
    if any(o is None for o in originals):
        raise ValueError("the graph reads a tensor the translation no longer holds; it cannot be saved")
    static_graph = _StaticGraph(graph, recording._methods)

    @paddle.jit.not_to_static
    def inference(feeds: list) -> list:
        values = [feeds[position[id(o)]] if id(o) in position else
                  paddle.pir.core._convert_into_value(o) if isinstance(o, _TENSOR) else o for o in originals]
        return [v for v in static_graph._replay(values) if isinstance(v, _VALUE)]

    held = [o for o in originals if isinstance(o, _TENSOR) and id(o) not in position]
    layers = [node[0] for node in graph[1] if isinstance(node[0], _LAYER)]
    with _unhooked():
        paddle.jit.save(_Exported(inference, held, layers), path, input_spec=[specs])


class _Exported(paddle.nn.Layer):
    """What ``paddle.jit.save`` saves: a layer whose forward runs a graph, holding the
    tensors and layers the graph reads (whose state the saved parameters are)."""

    def __init__(self, inference: Callable[[list], list], tensors: list, layers: list):
        super().__init__()
        self._inference = inference
        for k, tensor in enumerate(tensors):
            if isinstance(tensor, paddle.base.framework.EagerParamBase):
                self.add_parameter(f"tensor_{k}", tensor)
            else:
                self.register_buffer(f"tensor_{k}", tensor)
        for k, layer in enumerate(layers):
            self.add_sublayer(f"layer_{k}", layer)

    def forward(self, feeds: list) -> list:
        return self._inference(feeds)
