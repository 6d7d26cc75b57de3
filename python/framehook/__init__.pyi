import contextlib
import types
from typing import Any, Callable, Literal

from ._native import Frame as Frame
from ._native import HookHandle as HookHandle
from ._native import add_frame_hook as add_frame_hook
from ._native import build_info as build_info
from ._native import clear_frame_hooks as clear_frame_hooks
from ._native import disabled as disabled
from ._native import frame_hooks as frame_hooks
from ._native import remove_frame_hook as remove_frame_hook

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
__version__: str

def frame_hook(
    hook: Callable[[Frame], Any] | None,
    *,
    name: str | None = None,
    cache: bool = False,
    on_error: str = "raise",
    observer: Callable[
        [Literal["call", "return", "exception", "yield", "resume"], types.CodeType, types.CodeType | None], object
    ]
    | None = None,
) -> contextlib.AbstractContextManager[HookHandle]: ...
def get_include() -> str: ...
