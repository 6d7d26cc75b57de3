"""Frame hooks in another interpreter: add, remove and list them from outside (3.12+).

framehook's state is per interpreter: each interpreter has its own hooks, and
``framehook.add_frame_hook`` registers in the interpreter that calls it. This
module registers hooks in *another* interpreter, a sub-interpreter given by the
caller::

    import framehook.interpreters as fi

    token = fi.add_frame_hook(interp, "mypackage.hooks:trace", cache=True)
    fi.frame_hooks(interp)             # ["trace"]: the names, in call order
    fi.remove_frame_hook(interp, token)
    fi.clear_frame_hooks(interp)

``interp`` is a ``concurrent.interpreters.Interpreter`` (3.14), an interpreter
ID (3.12's ``_xxsubinterpreters`` and 3.13's ``_interpreters`` hand out those),
or any object with an integer ``.id``. Hooks and observers are named by
``"module:attribute"`` strings: objects cannot cross interpreters, so the
target imports the module and looks the attribute up itself, and the hook runs
there, on that interpreter's frames. Each call runs a short script in the
target (its ``_interpreters.exec``, or ``_xxsubinterpreters.run_string`` on
3.12), which imports framehook there and keeps the added hooks' handles, keyed
by the token returned; results come back as plain text. The script does its work
inside ``framehook.disabled()``: the target's hooks see one frame of it, its
``<module>``, and none of the imports and calls it makes. The calling
interpreter may be the target too: the work is then done in place.

Errors raised in the target reach the caller as exceptions of the same built-in
type (``ImportError``, ``AttributeError``, ``TypeError``, ``ValueError``, ...;
``RuntimeError`` for others), whose message starts with ``interpreter N:``.
An interpreter that no longer exists, or that runs code in another thread at
the time (an interpreter runs one script at a time), gives ``RuntimeError``.

Needs Python 3.12 or newer, where sub-interpreters can have their own GIL and
framehook's own hooks; on older versions every function raises
``RuntimeError``.
"""

from __future__ import annotations

import builtins
import importlib
import json
import operator
import os
import re
import sys
import traceback
from typing import Any, Callable, Literal, Optional

from . import _native

__all__ = ["add_frame_hook", "clear_frame_hooks", "frame_hooks", "remove_frame_hook"]

_MINIMUM = (3, 12)


# ----------------------------------------------------------------- the caller's side


def add_frame_hook(
    interp: object,
    hook: Optional[str],
    *,
    name: Optional[str] = None,
    cache: bool = False,
    on_error: Literal["raise", "log"] = "raise",
    observer: Optional[str] = None,
) -> int:
    """Registers the hook ``hook`` ("package.module:callable") in the interpreter ``interp``.

    The target imports the module and resolves the attribute path (dots allowed
    after the colon, as in ``"pkg.mod:Class.method"``), then calls
    ``framehook.add_frame_hook(hook, name=name, cache=cache, on_error=on_error,
    observer=observer)`` there, with the same meaning as in the calling
    interpreter. ``observer`` is another "module:callable" or None; ``hook`` may
    be None when an observer is given. Returns a token for
    :func:`remove_frame_hook`. A malformed spec raises ``ValueError`` here; a
    module the target cannot import, or an attribute it lacks, raises
    ``ImportError`` or ``AttributeError`` naming the spec and the interpreter.
    """
    _check_version()
    target = _interpreter_id(interp)
    hook = _check_spec(hook, "hook")
    observer = _check_spec(observer, "observer")
    if hook is None and observer is None:
        raise TypeError("add_frame_hook needs a hook, an observer, or both")
    if name is not None and not isinstance(name, str):
        raise TypeError(f"name must be a str, not {type(name).__name__}")
    if not isinstance(cache, bool):
        raise TypeError(f"cache must be a bool, not {type(cache).__name__}")
    if on_error not in ("raise", "log"):
        raise ValueError(f"on_error must be 'raise' or 'log', not {on_error!r}")
    args = {"hook": hook, "name": name, "cache": cache, "on_error": on_error, "observer": observer}
    token = _call(target, "add", args)
    assert isinstance(token, int)
    return token


def remove_frame_hook(interp: object, token: int) -> None:
    """Removes the hook that :func:`add_frame_hook` registered in ``interp`` under ``token``.

    ``ValueError`` if no hook with that token is registered there (removed already,
    cleared, or added to another interpreter)."""
    _check_version()
    target = _interpreter_id(interp)
    if isinstance(token, bool) or not isinstance(token, int):
        raise TypeError(f"token must be an int from framehook.interpreters.add_frame_hook, not {type(token).__name__}")
    _call(target, "remove", {"token": token})


def clear_frame_hooks(interp: object) -> None:
    """Removes every hook of ``interp`` (``framehook.clear_frame_hooks()`` there), whoever added it."""
    _check_version()
    _call(_interpreter_id(interp), "clear", {})


def frame_hooks(interp: object) -> list[str]:
    """The names of the hooks registered in ``interp``, in call order (whoever added them)."""
    _check_version()
    names = _call(_interpreter_id(interp), "names", {})
    assert isinstance(names, list)
    return names


def _check_version() -> None:
    if sys.version_info < _MINIMUM:
        raise RuntimeError(
            "framehook.interpreters needs Python 3.12 or newer (sub-interpreters with their own hooks "
            f"need 3.12+); this is Python {sys.version_info[0]}.{sys.version_info[1]}"
        )


def _interpreter_id(interp: object) -> int:
    """The ID of ``interp``: an Interpreter's ``.id``, or an integer (3.12's InterpreterID too)."""
    if isinstance(interp, bool):
        raise TypeError("expected an interpreter or an interpreter ID, not a bool")
    value: Any = getattr(interp, "id", interp)
    try:
        if isinstance(value, bool):
            raise TypeError
        ident = operator.index(value)
    except TypeError:
        raise TypeError(
            "expected an interpreter (concurrent.interpreters.Interpreter, an interpreter ID, or an object "
            f"with an integer .id), not {type(interp).__name__}"
        ) from None
    if ident < 0:
        raise ValueError(f"interpreter IDs are not negative: {ident}")
    return ident


def _check_spec(spec: object, role: str) -> Optional[str]:
    """``spec`` if it is None or a well-formed "package.module:attribute.path"."""
    if spec is None:
        return None
    if not isinstance(spec, str):
        raise TypeError(f"{role} must be a 'module:attribute' string (or None), not {type(spec).__name__}")
    module, colon, path = spec.partition(":")
    if not colon or not all(part.isidentifier() for part in module.split(".") + path.split(".")):
        raise ValueError(
            f"{role} {spec!r} is not a 'package.module:attribute' string (an importable module, a colon, "
            "then the attribute, dots allowed on both sides)"
        )
    return spec


def _fresh_key() -> int:
    """A mailbox key no other caller uses (the mailbox is shared by the whole process)."""
    return int.from_bytes(os.urandom(8), "little") >> 1


def _call(target: int, op: str, args: dict[str, Any]) -> Any:
    """Runs ``op`` in the interpreter ``target`` and returns its result, or raises its error."""
    key = _fresh_key()
    request = json.dumps({"op": op, "args": args})
    failure: Optional[_Failure] = None
    if target == _current_id():
        with _native.disabled():
            _serve(key, request)  # no need to cross: run it here, the same way
    else:
        # One statement, so that the script's own frame is the only one the target's hooks see.
        script = (
            "with __import__('framehook').disabled(): "
            f"__import__('framehook.interpreters', fromlist=['_serve'])._serve({key}, {request!r})\n"
        )
        failure = _run(target, script)
    text = _native._take(key)  # type: ignore[attr-defined]  # private, not in the stub
    if text is None:
        if failure is None:
            raise RuntimeError(f"interpreter {target}: no reply from framehook there")
        # The script failed before it could answer (framehook not importable there, ...).
        raise _rebuild(target, failure)
    reply = json.loads(text)
    if "error" in reply:
        raise _rebuild(target, _Failure(**reply["error"]))
    return reply["ok"]


class _Failure:
    """An exception of another interpreter, as text."""

    def __init__(self, module: str, qualname: str, message: str, traceback: Optional[str] = None) -> None:
        self.module = module
        self.qualname = qualname
        self.message = message
        self.traceback = traceback


def _rebuild(target: int, failure: _Failure) -> BaseException:
    """The caller's exception for ``failure``: the same built-in type, or RuntimeError."""
    message = f"interpreter {target}: {failure.message}"
    kind = getattr(builtins, failure.qualname, None) if failure.module == "builtins" else None
    error: Optional[BaseException] = None
    if isinstance(kind, type) and issubclass(kind, Exception):
        try:
            error = kind(message)
        except Exception:  # a built-in type whose constructor wants more (UnicodeDecodeError)
            error = None
    if error is None:
        shown = failure.qualname if failure.module == "builtins" else f"{failure.module}.{failure.qualname}"
        error = RuntimeError(f"interpreter {target}: {shown}: {failure.message}")
    if failure.traceback:
        error.add_note(f"The exception in interpreter {target}:\n{failure.traceback.rstrip()}")
    return error


# ------------------------------------------------ what differs between the versions

_low: Any = None


def _module() -> Any:
    """The interpreters module of this version: _interpreters (3.13+), _xxsubinterpreters (3.12)."""
    global _low
    if _low is None:
        _low = importlib.import_module("_interpreters" if sys.version_info >= (3, 13) else "_xxsubinterpreters")
    return _low


def _current_id() -> int:
    current = _module().get_current()
    # 3.13+: (id, whence); 3.12: an InterpreterID.
    return int(current[0] if isinstance(current, tuple) else current)


_CLASS_REPR = re.compile(r"<class '([\w.]+)'>: (.*)", re.S)


def _run(target: int, script: str) -> Optional[_Failure]:
    """Runs ``script`` in ``target``: None if it ran to its end, else what it raised.

    Each version reports a failed script its own way: 3.12's run_string raises
    RunFailedError("<class 'T'>: message"); 3.13+'s exec returns an excinfo
    namespace (3.14's Interpreter.exec raises ExecutionFailed carrying one)."""
    low = _module()
    try:
        if sys.version_info >= (3, 13):
            excinfo = low.exec(target, script)
        else:
            low.run_string(target, script)
            excinfo = None
    except Exception as error:
        if getattr(error, "excinfo", None) is not None:
            excinfo = getattr(error, "excinfo")  # noqa: B009  # 3.14's ExecutionFailed
        elif type(error).__name__ == "RunFailedError":
            found = _CLASS_REPR.fullmatch(str(error))
            if found is None:
                return _Failure("builtins", "RuntimeError", str(error))
            module, _, qualname = found.group(1).rpartition(".")
            return _Failure(module or "builtins", qualname, found.group(2))
        elif "unrecognized interpreter ID" in str(error) or type(error).__name__ == "InterpreterNotFoundError":
            raise RuntimeError(f"interpreter {target} does not exist (destroyed, or never created)") from error
        else:
            raise RuntimeError(f"cannot run code in interpreter {target}: {error}") from error
    if excinfo is None:
        return None
    kind = excinfo.type
    details = getattr(excinfo, "errdisplay", None) or getattr(excinfo, "formatted", None)
    return _Failure(kind.__module__, kind.__qualname__, excinfo.msg, details)


# ----------------------------------------------------------------- the target's side

# The hooks added through this module in this interpreter, by token.
_HANDLES: dict[int, Any] = {}


def _serve(key: int, request: str) -> None:
    """Runs in the target interpreter (inside ``framehook.disabled()``, so that its hooks see
    none of this module's work): does the request and posts the reply under ``key``."""
    try:
        parsed = json.loads(request)
        reply: dict[str, Any] = {"ok": _OPERATIONS[parsed["op"]](**parsed["args"])}
    except BaseException as error:  # everything goes back to the caller, SystemExit too
        described = {"module": type(error).__module__, "qualname": type(error).__qualname__, "message": str(error)}
        if not getattr(error, "_framehook_plain", False):
            described["traceback"] = "".join(traceback.format_exception(type(error), error, error.__traceback__))
        reply = {"error": described}
    _native._post(key, json.dumps(reply))  # type: ignore[attr-defined]  # private, not in the stub


def _plain(error: BaseException) -> BaseException:
    """Marks ``error`` as complete in itself: its traceback is not worth sending."""
    error._framehook_plain = True  # type: ignore[attr-defined]
    return error


def _resolve(spec: str, role: str) -> Callable[..., Any]:
    module_name, _, path = spec.partition(":")
    try:
        found: Any = importlib.import_module(module_name)
    except ImportError as error:
        raise _plain(type(error)(f"{role} {spec!r}: cannot import {module_name!r}: {error}")) from error
    walked = module_name
    for attribute in path.split("."):
        try:
            found = getattr(found, attribute)
        except AttributeError as error:
            raise _plain(AttributeError(f"{role} {spec!r}: {walked!r} has no attribute {attribute!r}")) from error
        walked = f"{walked}:{attribute}" if walked == module_name else f"{walked}.{attribute}"
    if not callable(found):
        raise _plain(TypeError(f"{role} {spec!r} is not callable: it is a {type(found).__name__}"))
    return found


def _forget_removed() -> None:
    for token in [token for token, handle in _HANDLES.items() if not handle.registered]:
        _HANDLES.pop(token, None)


def _add(hook: Optional[str], name: Optional[str], cache: bool, on_error: Literal["raise", "log"],
         observer: Optional[str]) -> int:
    import framehook

    handle = framehook.add_frame_hook(
        None if hook is None else _resolve(hook, "hook"),
        name=name,
        cache=cache,
        on_error=on_error,
        observer=None if observer is None else _resolve(observer, "observer"),
    )
    _forget_removed()
    token = _fresh_key()
    while token in _HANDLES:
        token = _fresh_key()
    _HANDLES[token] = handle
    return token


def _remove(token: int) -> None:
    import framehook

    handle = _HANDLES.pop(token, None)
    if handle is None or not handle.registered:
        raise _plain(ValueError(f"no hook with token {token} is registered (removed already, or added elsewhere)"))
    framehook.remove_frame_hook(handle)


def _clear() -> None:
    import framehook

    framehook.clear_frame_hooks()
    _HANDLES.clear()


def _names() -> list[str]:
    import framehook

    _forget_removed()
    return [handle.name for handle in framehook.frame_hooks()]


_OPERATIONS: dict[str, Callable[..., Any]] = {"add": _add, "remove": _remove, "clear": _clear, "names": _names}
