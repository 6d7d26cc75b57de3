"""framehook: the high-level CPython frame-hook API on PEP 523.

A hook is ``hook(frame) -> types.CodeType | None``. It sees each frame about to
run and may return a replacement code object; hooks run in registration order,
each seeing the code returned by the previous one.
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator, Optional

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
    "remove_frame_hook",
]

__version__: str = build_info()["crate_version"]


@contextlib.contextmanager
def frame_hook(
    hook: Callable[[Frame], Any],
    *,
    name: Optional[str] = None,
    cache: bool = False,
    on_error: str = "raise",
) -> Iterator[HookHandle]:
    """Register ``hook`` for the duration of a ``with`` block."""
    handle = add_frame_hook(hook, name=name, cache=cache, on_error=on_error)
    try:
        yield handle
    finally:
        if handle.registered:
            remove_frame_hook(handle)
