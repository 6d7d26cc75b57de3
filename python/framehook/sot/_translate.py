"""framehook's own SOT translator, from Python: ``translate``, ``stats``, ``explain``,
``reset``, ``register_backend`` (the translator itself is Rust: framehook._native)."""

from __future__ import annotations

import functools
import importlib.util
import os
import sys
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Callable, NamedTuple, Optional

from .. import _native


class GraphBreakError(RuntimeError):
    """A graph break or a fallback where ``full_graph=True`` allows none."""


class GraphBreak(NamedTuple):
    reason: str
    filename: str
    lineno: int


@dataclass
class SotStats:
    translations: int = 0
    cache_hits: int = 0
    guard_failures: int = 0
    recompilations: int = 0
    guards: int = 0
    graphs: int = 0
    ops_captured: int = 0
    instructions_simulated: int = 0
    # Calls a summary of an earlier simulation of the same function gave (library functions;
    # traced ones from their third call in the session).
    library_calls_replayed: int = 0
    graph_breaks: list[GraphBreak] = field(default_factory=list)
    fallbacks: list[GraphBreak] = field(default_factory=list)
    own_frame: str = ""
    cost_model: str = "off"
    runs_original: int = 0


_BACKENDS: dict[str, Any] = {}
_BACKENDS_LOCK = threading.Lock()


def register_backend(name: str, backend: Any) -> None:
    """Makes ``backend`` available as ``translate(..., backend=name)``. A backend has
    ``tensor_types`` (a tuple of types), ``meta_attributes`` (the tensor attributes its
    guards compare), ``conversions`` (tensor methods that give Python values),
    ``skip_prefixes`` (files never translated), and the methods ``is_op(function)``,
    ``is_constant_operand(value)``, ``example(tensor)`` and ``compile(graph)``. ``is_op``'s
    answer for a function is kept for the session (asked once, not by each translation).
    Optional ``op_function_modules`` (module names): a Python or builtin function whose
    ``__module__`` is none of them nor under one is not an operation, ``is_op`` unasked; and
    ``constant_operand_types`` (a tuple of classes): ``is_constant_operand(value)`` is then
    ``isinstance(value, constant_operand_types)``, not asked.

    Optional: ``meta_methods`` (tensor methods of no arguments whose result follows from the
    meta attributes, such as ``dim()``: computed while translating), ``type_attributes``
    (tensor attributes that follow from a tensor type written in C, such as numpy's
    ``device``: constants), ``interned_types`` (types whose call with plain values runs no
    Python code and changes nothing, and that give one object for the same arguments where
    they intern them, such as numpy's builtin dtypes: such a call is that object, else a
    break), ``forward_of(obj)`` (the
    function a model layer's call runs, translated in its place, or None), ``layer_types`` and
    ``layer_attributes`` (layers are pinned by identity and those attributes, and read through
    their ``__getattr__``), ``layer_store(layer, name, value_type)`` (where ``layer.name =
    value`` only makes ``layer.name`` give the value, the names of the layer's tables, dicts,
    that must lack ``name`` for that, which the guards check; the store is then replayed after
    the graph through the layer's ``__setattr__``; else None), ``traced_codes`` and
    ``traced_files`` (codes and files under ``skip_prefixes`` translated all the same),
    ``fixed_functions`` (functions whose result for the same arguments is the same for the
    whole process, such as a build's facts: called while translating), ``guarded_functions``
    (functions of no arguments reading the process's state, such as the current device:
    called while translating, and again by the guards where their result was used),
    ``construct(cls, args, kwargs)`` with ``constructed_types`` (for a subclass of those, an
    object made while translating, its frames untranslated, that the generated code makes
    again from the same arguments; or None), ``compile_with_examples(graph, examples)``,
    ``call_example(function, args, kwargs)`` (an operation called on examples while
    translating, in place of ``function(*args, **kwargs)``: where it changes state outside its
    operands, such as a random generator or a layer's running statistics, the backend puts
    that back, as the graph's run changes it, once), ``region_types`` (context managers whose
    ``with`` block sets state the backend's operations read, such as numpy's ``errstate``,
    and whose ``__enter__`` gives None: for one the backend constructed, the block's entry
    and exit are graph nodes, ``(cls, args, kwargs)`` making and entering a manager and
    ``(cls.__exit__, (entry,), {})`` exiting it, which ``compile`` runs around the nodes
    between them; a break inside the block breaks at its ``with`` instead) with
    ``region_effects`` (a dict: functions changing only the state a region type's block
    restores, such as ``warnings.simplefilter`` for ``warnings.catch_warnings``, to that type:
    called with constants inside such a block, graph nodes) and ``region_namespaces`` (a
    dict: region type to the modules whose values its block may change; such a value read
    inside the block breaks),
    ``runs_assumptions`` (true where the compiled graph calls its
    ``framehook._native._sot_assume(value, seen)`` nodes in order, numpy's floating-point
    errors raising from its start: a branch on a one-item tensor's value is then assumed to
    go as it went while translating, checked there, the frame run again untranslated where it
    does not, instead of a break), ``writes_operands(graph, examples)``
    (whether the compiled graph may write into an array it is given; where it cannot, a run of
    it that raises makes the frame run again untranslated from its start, so that what the
    function did before the failing operation happens; without it, it may),
    ``first_operand_write(graph, examples)`` (the index of the first node that may write
    into an array the graph is given, or None; the compiled graph running no node before its
    place: assumptions checked before it still make the frame run again where they fail), and
    ``array_types`` with
    ``array_meta_attributes`` and ``array_functions`` (another library's arrays, which the
    backend's operations also take: graph values as tensors are, guarded on those
    attributes; ``array_functions`` compute on such arrays alone, an operation where they
    meet one and a break, as reading its values, where they meet a tensor).

    A graph's inputs and results may also be Python ints and floats (numbers that changed
    between calls), its nodes ``operator`` functions on them and on tensors; a backend's
    tensor combined with such a number must give a result whose meta attributes do not
    depend on the number's value (as numpy's NEP 50 promotion does)."""
    if not isinstance(name, str) or not name:
        raise TypeError("register_backend() takes a non-empty str name")
    _check_protocol(repr(name), backend)
    with _BACKENDS_LOCK:
        _BACKENDS[name] = backend


def _check_protocol(label: str, backend: Any) -> None:
    missing = [a for a in ("tensor_types", "meta_attributes", "conversions", "skip_prefixes", "is_op",
                           "is_constant_operand", "example", "compile") if not hasattr(backend, a)]
    if missing:
        raise TypeError(f"backend {label} lacks {', '.join(missing)}")


def _numpy_backend() -> Any:
    from ._numpy_backend import NumpyBackend

    return NumpyBackend()


def _paddle_backend() -> Any:
    try:
        from ._paddle_backend import PaddleBackend
    except ImportError as error:
        raise ValueError(f"SOT backend 'paddle' needs the paddlepaddle package ({error})") from None
    return PaddleBackend()


# Made on first use: importing paddle takes about a second.
_BUILTIN_BACKENDS: dict[str, Callable[[], Any]] = {"numpy": _numpy_backend, "paddle": _paddle_backend}


def _backend(name: Any) -> Any:
    """The backend named ``name``, or ``name`` itself where it is a backend object."""
    if not isinstance(name, str):
        _check_protocol(f"object {type(name).__name__}", name)
        return name
    with _BACKENDS_LOCK:
        if name not in _BACKENDS and name in _BUILTIN_BACKENDS:
            _BACKENDS[name] = _BUILTIN_BACKENDS[name]()
        try:
            return _BACKENDS[name]
        except KeyError:
            known = ", ".join(sorted(set(_BACKENDS) | set(_BUILTIN_BACKENDS)))
            raise ValueError(f"unknown SOT backend {name!r} (known: {known})") from None


def translate(fn: Optional[Callable[..., Any]] = None, *, backend: Any = "numpy", full_graph: bool = False,
              cache_size: int = 8, trace_modules: Iterable[str] = (), cost_model: Optional[bool] = None) -> Any:
    """``fn`` translated by SOT: its calls (and the calls it makes) run as generated code
    around compiled graphs of its tensor operations. Also a decorator, with or without
    arguments. ``backend``: a backend's name (``"numpy"``, ``"paddle"``, or one given to
    ``register_backend``), or a backend object itself.

    The standard library's and installed packages' functions are never translated as frames
    of their own: a call of one is inlined within a budget of instructions, and is a graph
    break where anything inside stops it (framehook's and the backend's own files are never
    entered). ``trace_modules`` names modules or packages of those (``"unittest"``,
    ``"test"``) whose code this function's calls translate and inline like the user's own;
    their translations are shared with every function translated with the same backend and
    options, and kept until ``reset()``.

    ``cost_model``: after its first calls, the function's calls alternate, timed, between
    the translation and the original code, and run the translation from then on where its
    best time is at least 5% under the original's, else the original (judged again now
    and then); what a call computes is the same either way. ``None``: on for the
    numpy backend (the paddle backend chooses per graph, between a program and its
    operations), unless the environment variable ``FRAMEHOOK_SOT_COST_MODEL`` is ``0``
    (counters that do not depend on timing, as tests want). ``sot.stats`` says what it
    chose (``cost_model``) and how many calls ran the original (``runs_original``)."""
    if not isinstance(cache_size, int) or isinstance(cache_size, bool) or cache_size < 1:
        raise ValueError(f"cache_size must be a positive int, not {cache_size!r}")
    if cost_model is not None and not isinstance(cost_model, bool):
        raise TypeError(f"cost_model must be True, False or None, not {cost_model!r}")
    backend_object = _backend(backend)
    if cost_model is None:
        cost_model = backend_object is _backend("numpy") and os.environ.get("FRAMEHOOK_SOT_COST_MODEL", "1") != "0"
    traced_names = trace_modules if isinstance(trace_modules, str) else tuple(trace_modules)
    traced = _module_prefixes(traced_names)

    def wrap(function: Callable[..., Any]) -> Any:
        translated = _native.SotTranslated(function, backend_object, bool(full_graph), cache_size, traced,
                                           cost_model)
        functools.update_wrapper(translated, function)
        translated.__dict__["_sot_backend"] = backend  # for explain() and save()
        translated.__dict__["_sot_trace_modules"] = traced_names  # for explain()
        return translated

    return wrap if fn is None else wrap(fn)


def _module_prefixes(names: Iterable[str]) -> list[str]:
    """The file prefixes of the modules and packages ``names`` (a package: its directories)."""
    if isinstance(names, str):
        raise TypeError("trace_modules takes module names (an iterable of str), not one str")
    prefixes = []
    for name in names:
        if not isinstance(name, str):
            raise TypeError(f"trace_modules takes module names, not {type(name).__name__}")
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError) as error:
            raise ValueError(f"trace_modules: no module named {name!r} ({error})") from None
        if spec is None:
            raise ValueError(f"trace_modules: no module named {name!r}")
        if spec.submodule_search_locations:
            prefixes += [os.path.join(location, "") for location in spec.submodule_search_locations]
        elif spec.origin and os.path.isfile(spec.origin):
            prefixes.append(spec.origin)
        else:
            raise ValueError(f"trace_modules: {name!r} has no Python source to translate")
    return prefixes


def _native_of(fast: Any) -> Any:
    if isinstance(fast, _native.SotTranslated):
        return fast
    inner = getattr(fast, "__func__", None)
    if isinstance(inner, _native.SotTranslated):
        return inner
    raise TypeError(f"sot.stats() takes a function made by sot.translate(), not {type(fast).__name__}")


def stats(fast: Any) -> SotStats:
    """The counters of a translated function (since it was made or since ``reset()``)."""
    raw = _native_of(fast)._stats()
    return SotStats(
        **{k: raw[k] for k in ("translations", "cache_hits", "guard_failures", "recompilations", "guards",
                               "graphs", "ops_captured", "instructions_simulated",
                               "library_calls_replayed")},
        graph_breaks=[GraphBreak(*r) for r in raw["graph_breaks"]],
        fallbacks=[GraphBreak(*r) for r in raw["fallbacks"]],
        own_frame=raw["own_frame"],
        cost_model=raw["cost_model"],
        runs_original=raw["runs_original"],
    )


def explain(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> str:
    """Translates and runs ``fn(*args, **kwargs)`` once and says what happened: each
    translation's graph and its operations, the guards, each graph break and fallback with
    its reason and source line. A function made by ``translate`` is explained with its backend
    and traced modules."""
    target = getattr(fn, "__wrapped__", fn) if isinstance(fn, _native.SotTranslated) else fn
    fast = translate(target, backend=getattr(fn, "_sot_backend", "numpy"),
                     trace_modules=getattr(fn, "_sot_trace_modules", ()))
    fast._explain_translations()
    try:
        fast(*args, **kwargs)
        outcome = "ran"
    except Exception as exc:  # the text says how the call ended
        outcome = f"raised {type(exc).__name__}: {exc}"
    raw = fast._stats()
    lines = [f"sot.explain({getattr(target, '__qualname__', target)!s}): {outcome}",
             f"  translations={raw['translations']} graphs={raw['graphs']} ops={raw['ops_captured']} "
             f"breaks={len(raw['graph_breaks'])} fallbacks={len(raw['fallbacks'])}"]
    lines += [text.rstrip("\n") for text in raw["explanations"]]
    for kind, records in (("graph break", raw["graph_breaks"]), ("fallback", raw["fallbacks"])):
        for reason, filename, lineno in records:
            lines.append(f"{kind}: {reason}\n    at {filename}:{lineno}: {_source_line(filename, lineno)}")
    return "\n".join(lines) + "\n"


def save(fast: Any, path: str, *, input_spec: Any) -> None:
    """Saves ``fast`` (made by ``translate``; its call must translate to one graph) for
    inference, as its backend saves a graph: with ``backend="paddle"``, the files
    ``paddle.jit.save(…, path)`` writes, which ``paddle.jit.load(path)`` loads.
    ``input_spec``: the arguments' ``paddle.static.InputSpec``s."""
    translated = _native_of(fast)
    backend = getattr(translated, "_sot_backend", "numpy")
    name = backend if isinstance(backend, str) else getattr(backend, "name", type(backend).__name__)
    if name != "paddle":
        raise ValueError(f"sot.save() saves translations of the paddle backend, not {name!r}")
    from ._paddle_backend import save as save_paddle

    target = getattr(translated, "__wrapped__", None)
    if target is None:
        raise TypeError("sot.save() takes a function made by sot.translate()")
    save_paddle(target, path, input_spec)


def _source_line(filename: str, lineno: int) -> str:
    import linecache

    return linecache.getline(filename, lineno).strip() if lineno > 0 else ""


def reset() -> None:
    """Forgets every translation, cache entry and counter."""
    _native._sot_reset()


def _set_list_iterator_position(iterator: Any, position: Optional[int]) -> None:
    """Where SOT's generated code leaves a list iterator from the frame that the
    translation advanced: ``position`` items on; exhausted where ``position`` is None."""
    if position is None:
        iterator.__setstate__(sys.maxsize)
        next(iterator, None)  # exhausted, it lets go of its list, as CPython's does
    else:
        iterator.__setstate__(position)


class _GraphHolder(list):
    """The one-item list holding a compiled graph that SOT's generated code calls
    (``holder[0](*inputs)``), emptied when the code is kept for reuse and refilled: hashed
    by identity, so that the code object holding it can be hashed."""

    __slots__ = ()
    __hash__ = object.__hash__  # type: ignore[assignment]

    def __eq__(self, other: object) -> bool:
        return self is other


class _Held(tuple):
    """A value SOT's generated code holds that cannot be hashed (a list, a slice before
    3.12), boxed: the box hashes by identity, so that the code object holding it can be
    hashed. The generated code reads ``box[0]``."""

    __slots__ = ()
    __hash__ = object.__hash__

    def __eq__(self, other: object) -> bool:
        return self is other


def _bound(function: Any, receiver: Any) -> Any:
    """A method SOT's generated code rebuilds: bound as attribute lookup binds it (a C
    method descriptor gives a builtin method, a Python function a bound method)."""
    return type(function).__get__(function, receiver, type(receiver))


# The partial type the translator models: the one `_partial` makes again (a program that
# calls another, such as a freshly imported functools' own, calls it for real).
_partial_type = functools.partial


def _partial(function: Any, args: tuple, names: tuple, values: tuple) -> Any:
    """A ``functools.partial`` SOT's generated code makes again."""
    return _partial_type(function, *args, **dict(zip(names, values)))


def _list_iterator(items: list[Any], position: Optional[int]) -> Iterator[Any]:
    """A list iterator that SOT's generated code rebuilds at a graph break: over the live
    list, ``position`` items on; exhausted where ``position`` is None (it stays so)."""
    iterator = iter(items if position is not None else [])
    _set_list_iterator_position(iterator, position)
    return iterator
