"""SOT on framehook: the runtime a symbolic opcode translator drives.

The functions are Paddle's five eval-frame functions with Paddle's meaning
(see ``framehook.sot.paddle`` to run Paddle's SOT on them, or framehook's
translator behind ``paddle.jit.to_static``), as builtins:

- ``set_eval_frame(callback)``: this thread's callback, returning the old one.
  ``callback(frame)`` is called for each frame about to run and returns an
  object with ``code`` (a replacement code object or None) and
  ``disable_eval_frame`` (True: the frame's whole call subtree runs without
  the callback). The callback is unset while it runs. The frame has
  ``f_code``, ``f_locals`` (cells and free variables unboxed), ``f_globals``
  and ``f_builtins``.
- ``eval_frame_skip_file_prefix(prefixes)``, ``eval_frame_no_skip_codes(codes)``:
  frames of files under a prefix are not handed to the callback, unless their
  code is listed as never skipped. Checked first, before anything costly.
- ``sot_setup_codes_with_graph(codes)``, ``sot_set_with_graph(code)``: codes
  marked as having a graph keep being translated; a code the callback has left
  unchanged 10 times (skipped frames included) without being marked runs
  unchanged from then on, with its whole call subtree unhooked. Replacement
  codes are never given up.

framehook's own translator: ``translate(fn, backend="numpy", full_graph=False,
cache_size=8)`` (backends "numpy" and "paddle"), ``stats``, ``explain``, ``reset``,
``save`` (a paddle translation for inference), ``GraphBreakError`` and
``register_backend`` (``framehook.sot._translate``).

SOT is one frame hook among others: while a thread has a callback, the hook
named "sot" is in ``framehook.frame_hooks()``, after the hooks registered
before it.
"""

from .. import _native

if not hasattr(_native, "set_eval_frame"):
    # SOT's runtime keeps process-wide state (it is built on PyO3): framehook
    # adds it to the main interpreter's module only.
    raise ImportError("framehook.sot is available in the main interpreter only, not in sub-interpreters")

from .._native import (
    eval_frame_no_skip_codes,
    eval_frame_skip_file_prefix,
    set_eval_frame,
    sot_pass_exception_tables,
    sot_set_with_graph,
    sot_setup_codes_with_graph,
)
from ._translate import (
    GraphBreak,
    GraphBreakError,
    SotStats,
    explain,
    register_backend,
    reset,
    save,
    stats,
    translate,
)

__all__ = [
    "GraphBreak",
    "GraphBreakError",
    "SotStats",
    "explain",
    "register_backend",
    "reset",
    "save",
    "stats",
    "translate",
    "eval_frame_no_skip_codes",
    "eval_frame_skip_file_prefix",
    "set_eval_frame",
    "sot_pass_exception_tables",
    "sot_set_with_graph",
    "sot_setup_codes_with_graph",
]
