"""SOT's paddle backend: tensors are ``paddle.Tensor``; a graph becomes a Paddle static
program (PIR), built on the graph's first call from the inputs' specs (their dtypes,
shapes and ``stop_gradient`` are guarded, so every later call has the same) and run by
Paddle's ``run_program`` on every call after, so gradients flow through it as through the
eager operations it replaces.

Operations are Paddle's API functions (``paddle``, ``paddle.nn.functional``,
``paddle.linalg`` ...), tensor methods and operators, Paddle's own layers (``Linear``,
``Conv2D`` ...: one operation each, their parameters the program's) and
``PyLayer.apply``: a custom layer becomes Paddle's static ``pylayer`` operation, whose
backward is the user's ``backward``."""

from __future__ import annotations

import inspect
import os
import threading
from typing import Any, Callable

import paddle
from paddle.autograd import PyLayer

from .. import disabled as _unhooked

_PADDLE_DIR = os.path.dirname(paddle.__file__) + os.sep
_TENSOR = paddle.Tensor
_VALUE = paddle.pir.Value
_LAYER = paddle.nn.Layer

# Public modules whose functions (their ``__all__``) compute on tensors.
_API_MODULES = ("", "nn.functional", "linalg", "signal", "fft", "vision.ops", "incubate.nn.functional",
                "geometric")
# Functions of those modules that do not compute a tensor: state, modes, files.
_NOT_OPERATIONS = ("in_dynamic_mode", "save", "load", "seed", "get_rng_state", "set_rng_state",
                   "get_cuda_rng_state", "set_cuda_rng_state", "set_default_dtype", "get_default_dtype",
                   "check_shape", "summary", "finfo", "iinfo", "enable_static", "disable_static",
                   "is_grad_enabled", "set_grad_enabled", "grad", "set_device", "get_device", "set_flags",
                   "get_flags", "set_printoptions", "is_tensor", "is_compiled_with_cuda", "to_dlpack",
                   "from_dlpack", "jit", "no_grad", "enable_grad", "set_autocast")
# Paddle's container layers run their sublayers: translated (inlined), not one operation.
_CONTAINERS = (paddle.nn.Sequential, paddle.nn.LayerList, paddle.nn.LayerDict, paddle.nn.ParameterList)
# Layers whose forward Paddle's static mode cannot build (Python loops over time steps).
_NOT_STATIC_LAYERS = (paddle.nn.RNN, paddle.nn.BiRNN)


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
    return found


def _tensor_methods() -> dict[int, str]:
    """The eager tensor's methods by identity: each is called by name on the static value."""
    methods = {}
    for name in dir(_TENSOR):
        member = inspect.getattr_static(_TENSOR, name, None)
        if callable(member) and hasattr(_VALUE, name):
            methods[id(getattr(_TENSOR, name))] = name
    return methods


def _is_pylayer_apply(function: Any) -> bool:
    owner = getattr(function, "__self__", None)
    return (inspect.isbuiltin(function) and isinstance(owner, type) and issubclass(owner, PyLayer)
            and owner is not PyLayer and getattr(function, "__name__", "") == "apply")


def _is_paddle_layer(value: Any) -> bool:
    """One of Paddle's own layers (not a user's subclass, not a container)."""
    cls = type(value)
    return (isinstance(value, _LAYER) and (cls.__module__ or "").startswith("paddle.")
            and not isinstance(value, _CONTAINERS + _NOT_STATIC_LAYERS))


class PaddleBackend:
    """The backend protocol, for Paddle (see ``framehook.sot.register_backend``)."""

    name = "paddle"
    tensor_types = (_TENSOR,)
    # What a tensor's guard compares (its exact type is compared too).
    meta_attributes = ("dtype", "shape", "place", "stop_gradient")
    # Tensor methods whose result is a Python value, or that act outside the graph.
    conversions = ("item", "tolist", "numpy", "__array__", "__bool__", "__float__", "__int__", "__index__",
                   "__len__", "backward", "register_hook", "clear_grad", "clear_gradient", "set_value",
                   "_numpy", "__deepcopy__")
    skip_prefixes = (_PADDLE_DIR,)
    # Model layers: pinned by identity and these attributes; their parameters and
    # sublayers are read through their ``__getattr__``.
    layer_types = (_LAYER,)
    layer_attributes = ("training",)

    def __init__(self) -> None:
        self._api = _api_functions()
        self._methods = _tensor_methods()

    def is_op(self, function: Any) -> bool:
        entry = self._api.get(id(function))
        if entry is function:
            return True
        return _is_pylayer_apply(function) or _is_paddle_layer(function)

    def is_constant_operand(self, value: Any) -> bool:
        return isinstance(value, (paddle.dtype, paddle.base.libpaddle.Place, paddle.CPUPlace, type))

    def example(self, value: Any) -> Any:
        """A copy to compute with while translating: in-place operations then leave the
        caller's tensor alone (the graph applies them once, on the real one)."""
        copy = value.detach().clone()
        copy.stop_gradient = value.stop_gradient
        return copy

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
        return _StaticGraph(graph, self._methods)


class _StaticGraph:
    """A graph's static programs, one per tuple of the numbers among its inputs (a number
    is a constant of the program; its type only is guarded), built on first use."""

    # Past this many programs for one graph (a number that changes on every call), the
    # graph's operations run eagerly.
    MAX_PROGRAMS = 8

    def __init__(self, graph: tuple, methods: dict[int, str]):
        self._inputs, self._nodes, self._outputs = graph
        self._methods = methods
        self._programs: dict[tuple, _Program] = {}
        self._lock = threading.Lock()

    def __call__(self, *args: Any) -> tuple:
        # Compiled code: nothing it calls is translated (Paddle's static build runs code
        # of its own making, outside its directory).
        with _unhooked():
            numbers = tuple(a for a in args if not isinstance(a, _TENSOR))
            program = self._programs.get(numbers)
            if program is None:
                if len(self._programs) >= self.MAX_PROGRAMS:
                    return self._replay(args, eager=True)
                with self._lock:
                    program = self._programs.get(numbers)
                    if program is None:
                        program = self._programs[numbers] = _Program(self, args)
            return program(args)

    def _replay(self, args: tuple, eager: bool) -> tuple:
        """The graph's operations on ``args`` (eager tensors, or the static program's inputs):
        the value of every output."""
        values = list(args)
        for function, node_args, kwargs, _, _ in self._nodes:
            call_args = _resolve(node_args, values)
            call_kwargs = {k: _resolve(v, values) for k, v in kwargs.items()}
            values.append(function(*call_args, **call_kwargs) if eager else
                          self._static_call(function, call_args, call_kwargs))
        return tuple(values[o] for o in self._outputs)

    def _static_call(self, function: Any, args: tuple, kwargs: dict) -> Any:
        name = self._methods.get(id(function))
        if name is not None and args and isinstance(args[0], _VALUE):
            return getattr(args[0], name)(*args[1:], **kwargs)
        if _is_pylayer_apply(function):
            from paddle.jit.dy2static.py_layer import StaticPyLayer

            return StaticPyLayer(function.__self__).apply(*args, **kwargs)
        return function(*args, **kwargs)


def _resolve(value: Any, values: list) -> Any:
    from .._native import SotRef

    if isinstance(value, SotRef):
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


class _Program:
    """One static program of a graph: its tensor inputs fed, its parameters (those of
    Paddle's layers it calls) bound, its outputs the graph's tensor results; the graph's
    other results (numbers, an input returned as it is) are kept or passed through."""

    def __init__(self, graph: _StaticGraph, args: tuple):
        from paddle.static import InputSpec

        self._tensor_positions = [i for i, a in enumerate(args) if isinstance(a, _TENSOR)]
        specs = [InputSpec(shape=list(args[i].shape), dtype=args[i].dtype, name=f"sot_input_{i}",
                           stop_gradient=args[i].stop_gradient) for i in self._tensor_positions]
        positions = self._tensor_positions
        template = list(args)
        # Per graph output: ("program", k) the program's k-th output, ("input", i) the
        # call's i-th argument, ("constant", value) a value fixed by the numbers.
        self._results: list[tuple[str, Any]] = []
        results = self._results

        @paddle.jit.not_to_static
        def build(feeds: list) -> list:
            inputs = list(template)
            for position, feed in zip(positions, feeds):
                inputs[position] = feed
            produced = []
            for index, value in zip(graph._outputs, graph._replay(tuple(inputs), eager=False)):
                if index < graph._inputs and index in positions:
                    results.append(("input", index))
                elif isinstance(value, _VALUE):
                    results.append(("program", len(produced)))
                    produced.append(value)
                else:
                    results.append(("constant", value))
            return produced

        static = paddle.jit.to_static(build, input_spec=[specs], full_graph=True)
        feeds = [args[i] for i in positions]
        _, self._partial = static.get_concrete_program(feeds)
        self._produces = any(kind == "program" for kind, _ in results)
        self._run = self._partial.sot_call

    def __call__(self, args: tuple) -> tuple:
        produced = self._run([args[i] for i in self._tensor_positions]) if self._produces else []
        out = []
        for kind, what in self._results:
            if kind == "program":
                tensor = produced[what]
                tensor.name = ""  # run_program names its results after the program's variables
                out.append(tensor)
            elif kind == "input":
                out.append(args[what])
            else:
                out.append(what)
        return tuple(out)

