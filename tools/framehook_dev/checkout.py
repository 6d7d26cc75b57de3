"""The framehook checkout the tools work on.

The dev venv (``.venv``) installs this package editable, so its modules live in
``<checkout>/tools/framehook_dev``. A copy installed elsewhere (a test venv holds a
wheel of it) finds the checkout from the working directory instead.
"""

from __future__ import annotations

import os
from pathlib import Path


def _is_checkout(path: Path) -> bool:
    return (path / "Cargo.toml").is_file() and (path / "tools" / "framehook_dev").is_dir()


def find() -> Path:
    """The checkout holding this package, else the working directory or one of its parents."""
    here = Path(__file__).resolve().parent.parent.parent
    if _is_checkout(here):
        return here
    cwd = Path(os.getcwd()).resolve()
    for path in (cwd, *cwd.parents):
        if _is_checkout(path):
            return path
    raise RuntimeError(f"{__name__}: no framehook checkout holds {Path(__file__).parent} or {cwd}")
