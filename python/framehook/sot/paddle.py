"""Run PaddlePaddle's SOT (``paddle.jit.sot``) on framehook.

    import framehook.sot.paddle
    framehook.sot.paddle.install()     # before paddle.jit.sot is imported
    import paddle
    paddle.jit.to_static(fn)           # SOT now hooks frames through framehook

Paddle's SOT reaches its native eval-frame layer only through five attributes
of ``paddle.base.core``, read at call time; ``install()`` replaces them with
framehook's. It must run before ``paddle.jit.sot`` is imported (its import
registers the skip rules), and refuses when Paddle's own eval frame is active.
"""

from __future__ import annotations

import sys

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


def installed() -> bool:
    """Whether Paddle's SOT runs on framehook in this process."""
    core = sys.modules.get("paddle.base.core")
    return core is not None and all(getattr(core, name, None) is function for name, function in _REPLACEMENTS.items())


def install() -> None:
    """Make Paddle's SOT use framehook's eval-frame functions. Idempotent."""
    if installed():
        return
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
