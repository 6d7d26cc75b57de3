"""framehook: the high-level CPython frame-hook API on PEP 523.

A hook is ``hook(frame) -> types.CodeType | None``. It sees each frame about to
run and may return a replacement code object; hooks run in registration order,
each seeing the code returned by the previous one. A hook may also observe
evaluation with ``observer(event, code, original_code)``: "call", "return",
"exception", "yield" and "resume" events, each with the code object that
actually runs and, for frames handed to the hooks, their original code (None
for resumed generators, whose call event named it).

Native hooks register through the C API in ``framehook.h``
(``framehook.get_include()``), published as the capsule
``framehook._native._C_API``.
"""

from __future__ import annotations

import contextlib
import os
import types
from collections.abc import Iterator
from typing import Any, Callable, Optional

from ._native import (
    Frame,
    HookHandle,
    add_frame_hook,
    build_info,
    clear_frame_hooks,
    disabled,
    frame_hooks,
    remove_frame_hook,
)

__all__ = [
    "Frame",
    "HookHandle",
    "add_frame_hook",
    "build_info",
    "clear_frame_hooks",
    "disabled",
    "frame_hook",
    "frame_hooks",
    "get_include",
    "remove_frame_hook",
]

__version__: str = build_info()["crate_version"]


@contextlib.contextmanager
def frame_hook(
    hook: Optional[Callable[[Frame], Any]],
    *,
    name: Optional[str] = None,
    cache: bool = False,
    on_error: str = "raise",
    observer: Optional[Callable[[str, types.CodeType, Optional[types.CodeType]], object]] = None,
) -> Iterator[HookHandle]:
    """Register ``hook`` (and/or ``observer``) for the duration of a ``with`` block."""
    handle = add_frame_hook(hook, name=name, cache=cache, on_error=on_error, observer=observer)
    try:
        yield handle
    finally:
        if handle.registered:
            remove_frame_hook(handle)


def get_include() -> str:
    """The directory holding ``framehook.h``, the C API for native hooks."""
    return os.path.join(os.path.dirname(__file__), "include")
