"""PaddlePaddle's ``paddle.jit.to_static`` on framehook.

    import framehook.sot.paddle
    framehook.sot.paddle.install(translator="framehook")   # before paddle.jit.sot is imported
    import paddle
    paddle.jit.to_static(fn)           # SOT mode now translates with framehook's translator

``install()`` picks the translator behind ``to_static``'s SOT mode (``full_graph=False``,
the default), once per process:

- ``translator="paddle"`` (the default): Paddle's own translator, its frames hooked through
  framehook. Paddle's SOT reaches its native eval-frame layer only through five attributes
  of ``paddle.base.core``, read at call time; ``install()`` replaces them with framehook's.
- ``translator="framehook"``: framehook's own translator with the paddle backend
  (``framehook.sot.translate(fn, backend="paddle")``). The five functions are replaced as
  well (so framehook alone owns the interpreter's eval function), then
  ``paddle.jit.sot.symbolic_translate``, the one function ``to_static`` calls to translate,
  is framehook's.

Either way it must run before ``paddle.jit.sot`` is imported (its import registers the skip
rules), and refuses when Paddle's own eval frame is active.
"""

from __future__ import annotations

import inspect
import os
import sys
import types
import weakref
from typing import Any, Callable, Literal, Optional

from . import (
    eval_frame_no_skip_codes,
    eval_frame_skip_file_prefix,
    set_eval_frame,
    sot_set_with_graph,
    sot_setup_codes_with_graph,
)

__all__ = ["install", "installed"]

_REPLACEMENTS = {
    "set_eval_frame": set_eval_frame,
    "eval_frame_skip_file_prefix": eval_frame_skip_file_prefix,
    "eval_frame_no_skip_codes": eval_frame_no_skip_codes,
    "sot_setup_codes_with_graph": sot_setup_codes_with_graph,
    "sot_set_with_graph": sot_set_with_graph,
}

_TRANSLATORS = ("paddle", "framehook")

# Translations per code that translator="framehook" keeps: Paddle's own limit
# (OpcodeExecutorCache.MAX_CACHE_SIZE), as a layer class's forward serves every instance.
_CACHE_SIZE = 20
# Where a function keeps its translations (see _symbolic_translate).
_TRANSLATIONS = "_framehook_sot_translations"
# The backends translator="framehook" translates with, by the MIN_GRAPH_SIZE they honour
# (None: unset), made on first use.
_backends: dict[Optional[int], Any] = {}


def installed() -> Optional[Literal["paddle", "framehook"]]:
    """Which translator runs ``paddle.jit.to_static``'s SOT mode on framehook in this process:
    ``"paddle"`` (Paddle's, on framehook's eval-frame functions), ``"framehook"``
    (framehook's own), or None (Paddle's SOT on Paddle's own eval frame). Truthy exactly
    when framehook's eval-frame functions are in place."""
    core = sys.modules.get("paddle.base.core")
    if core is None or any(getattr(core, name, None) is not function for name, function in _REPLACEMENTS.items()):
        return None
    translate = getattr(sys.modules.get("paddle.jit.sot"), "symbolic_translate", None)
    if translate is not None and inspect.unwrap(translate) is _symbolic_translate:
        return "framehook"
    return "paddle"


def install(translator: str = "paddle") -> None:
    """Make ``paddle.jit.to_static``'s SOT mode run on framehook, with Paddle's translator
    (``translator="paddle"``) or framehook's (``translator="framehook"``). Idempotent; a
    process keeps the translator it installed first (installing the other one raises
    RuntimeError).

    With ``translator="framehook"``, each function ``to_static`` translates is
    ``framehook.sot.translate(fn, backend="paddle", cache_size=20)``: one translation per
    ``to_static`` call (per layer, for ``to_static(layer)``) and training mode, kept while
    both live. Gradients, ``layer.eval()``, ``paddle.jit.save``/``load`` (which convert
    through Paddle's AST path, as with Paddle's translator), ``enable_to_static(False)`` and
    ``full_graph=True`` (Paddle's AST path) work as with Paddle's translator. The graphs'
    programs are built with ``to_static``'s ``build_strategy`` and ``backend`` (CINN).

    Paddle's SOT environment flags: ``MIN_GRAPH_SIZE``, read where a translation is made (as
    Paddle reads it at each translation), runs the graphs of fewer operations as their
    operations, eagerly, and the others as their static programs, as Paddle does
    (``MIN_GRAPH_SIZE=0``: every graph as its program); unset, framehook's cost model chooses
    between each graph's program and its operations by timing both. Read here:
    ``COST_MODEL`` is ignored (Paddle 3.3.1 reads it nowhere); refused (RuntimeError): a true
    ``STRICT_MODE`` (Paddle's raises where its translator would run a frame in dygraph, and
    lets graph breaks through: framehook's has no such mode), a positive ``SOT_LOG_LEVEL``
    (framehook's translator logs to the ``framehook.sot`` logger instead). Changing these after
    ``install()`` has no effect on framehook's translator."""
    if translator not in _TRANSLATORS:
        raise ValueError(
            f"unknown translator {translator!r}: framehook.sot.paddle.install() takes translator='paddle' "
            "(Paddle's translator on framehook's eval frame) or translator='framehook' (framehook's own)"
        )
    current = installed()
    if current == translator:
        return
    if current is not None:
        raise RuntimeError(
            f"framehook.sot.paddle.install(translator={translator!r}): the {current!r} translator is installed "
            "already, and a process keeps the translator it installed first"
        )
    if translator == "framehook":
        _check_environment()
    _install_eval_frame()
    if translator == "framehook":
        _use_framehook_translator()


def _install_eval_frame() -> None:
    """Puts framehook's eval-frame functions in ``paddle.base.core`` in place of Paddle's."""
    too_late = sorted(name for name in sys.modules if name == "paddle.jit.sot" or name.startswith("paddle.jit.sot."))
    if too_late:
        raise RuntimeError(
            "framehook.sot.paddle.install() must run before paddle.jit.sot is imported "
            f"(already imported: {', '.join(too_late[:3])}); call it first thing in the program"
        )
    import paddle.base.core as core  # type: ignore

    missing = [name for name in _REPLACEMENTS if not hasattr(core, name)]
    if missing:
        raise RuntimeError(f"this paddle has no {', '.join(missing)} in paddle.base.core: not a SOT-capable build")
    # Paddle's own callback on this thread means its eval frame is in use.
    previous = core.set_eval_frame(None)
    if previous is not None:
        core.set_eval_frame(previous)
        raise RuntimeError(
            "Paddle's own eval frame is active (a SOT callback is set on this thread); "
            "install framehook's before anything is translated"
        )
    for name, function in _REPLACEMENTS.items():
        setattr(core, name, function)


def _check_environment() -> None:
    """Raises for a Paddle SOT environment flag framehook's translator cannot honour, each
    parsed as Paddle 3.3.1 parses it (paddle/jit/sot/utils/envs.py)."""
    from paddle.utils.environments import (  # type: ignore[import-not-found]
        BooleanEnvironmentVariable,
        IntegerEnvironmentVariable,
    )

    def refuse(flag: str, why: str) -> RuntimeError:
        return RuntimeError(
            f"framehook.sot.paddle.install(translator='framehook'): {flag}={os.environ[flag]!r}: {why}; "
            f"unset {flag} to use framehook's translator"
        )

    try:
        strict = BooleanEnvironmentVariable("STRICT_MODE", False).get()
    except ValueError as error:
        raise refuse("STRICT_MODE", f"not a truth value ({error})") from None
    if strict:
        raise refuse(
            "STRICT_MODE",
            "Paddle's strict mode raises where its translator would run a whole frame in dygraph and lets "
            "graph breaks through; framehook's translator has no such mode (framehook.sot.translate(fn, "
            "backend='paddle', full_graph=True) raises on graph breaks too)",
        )
    if IntegerEnvironmentVariable("SOT_LOG_LEVEL", 0).get() > 0:
        raise refuse(
            "SOT_LOG_LEVEL",
            "it asks for the debug output of Paddle's translator, which does not run; framehook's translator "
            "logs each translation, graph break and fallback to the 'framehook.sot' logger (debug level), and "
            "framehook.sot.explain(fn, *args) describes one call",
        )


def _min_graph_size() -> Optional[int]:
    """``MIN_GRAPH_SIZE`` as Paddle reads it (its default, 10, where it is not an integer),
    None where it is unset."""
    # Read at every to_static call: parsed here as paddle.utils.environments parses it.
    value = os.environ.get("MIN_GRAPH_SIZE")
    if value is None:
        return None
    try:
        return max(0, int(value))
    except ValueError:
        return 10


def _use_framehook_translator() -> None:
    """Makes ``paddle.jit.sot.symbolic_translate`` framehook's translator."""
    # Imported now that framehook's functions are in place, which its skip rules go to.
    import paddle.jit.sot  # type: ignore[import-not-found]

    # to_static's SOT mode looks the package's up at every call; the module's, for its importers.
    paddle.jit.sot.symbolic_translate = _symbolic_translate
    paddle.jit.sot.translate.symbolic_translate = _symbolic_translate


def _symbolic_translate(
    fn: Callable[..., Any], *, training: bool = True, build_strategy: Any = None, backend: Any = None
) -> Callable[..., Any]:
    """``paddle.jit.sot.symbolic_translate`` under translator="framehook": ``fn`` translated
    by framehook's translator, which the caller then calls. ``to_static`` passes its
    ``build_strategy`` (one per ``to_static`` call), the function's or layer's training mode
    and its ``backend``: one translation per combination, made on first use."""
    import paddle  # type: ignore[import-not-found]

    if not paddle.framework.use_pir_api():  # Paddle's check and message (translate.py)
        raise RuntimeError(
            "SOT is only supported when running in PIR mode. Please set the environment variable "
            "FLAGS_enable_pir_api=1 to enable it."
        )
    if inspect.ismethod(fn):
        # A bound method is new at each attribute lookup: its function's translation, bound.
        return types.MethodType(
            _symbolic_translate(fn.__func__, training=training, build_strategy=build_strategy, backend=backend),
            fn.__self__,
        )
    # Kept on the function: a translation holds its function, so a table of our own would
    # keep every function alive; this way the two go together.
    try:
        translations = fn.__dict__.setdefault(_TRANSLATIONS, {})
    except AttributeError:
        raise TypeError(f"symbolic_translate() takes a Python function, not {type(fn).__name__}") from None
    # The function is part of the key: `functools.wraps` copies this table to a wrapper.
    min_graph_size = _min_graph_size()
    key = (id(fn), id(build_strategy), bool(training), backend, min_graph_size)
    entry = translations.get(key)
    if entry is None or entry[0] is not fn:
        from . import translate

        def forget(_strategy: Any) -> None:
            translations.pop(key, None)

        # The build strategy held weakly: the translation goes with the to_static() that made it.
        held = None if build_strategy is None else weakref.ref(build_strategy, forget)
        entry = translations[key] = (fn, held, translate(
            fn, backend=_backend_with(min_graph_size, build_strategy, backend), cache_size=_CACHE_SIZE))
    return entry[2]


def _backend_with(min_graph_size: Optional[int], build_strategy: Any, backend: Any) -> Any:
    """The backend of one ``to_static`` call: the one honouring ``min_graph_size`` (None: the
    cost model chooses), building the graphs' programs with the call's ``build_strategy``
    and ``backend`` where it gives them."""
    shared = _backends.get(min_graph_size)
    if shared is None:
        from ._paddle_backend import PaddleBackend

        shared = _backends.setdefault(min_graph_size, PaddleBackend(
            cost_model=min_graph_size is None, min_graph_size=min_graph_size or 0))
    if build_strategy is None and backend is None:
        return shared
    return shared.with_program_options(build_strategy, backend)
