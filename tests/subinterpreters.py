"""Sub-interpreters for the tests, the same on every version (test-only; not in the wheel).

The only place that knows each version's interpreters module: 3.12's
``_xxsubinterpreters``, 3.13's ``_interpreters``, 3.14's ``concurrent.interpreters``
(isolated interpreters; legacy ones through ``_interpreters``). An interpreter
made here has this directory on its ``sys.path`` (so ``subinterp_hooks`` imports
there) and a ``report(value)`` function in its ``__main__``: what code run with
:meth:`Interp.run` reports comes back to the caller as JSON, through framehook's
mailbox (``framehook._native._post``/``_take``).
"""

from __future__ import annotations

import json
import os
import sys
import textwrap
from typing import Any, Optional

SUPPORTED = sys.version_info >= (3, 12)
REASON = "own-GIL sub-interpreters and framehook's hooks in them need Python 3.12+"
HERE = os.path.dirname(os.path.abspath(__file__))

if sys.version_info >= (3, 14):
    import concurrent.interpreters as high

    import _interpreters as low
elif sys.version_info >= (3, 13):
    import _interpreters as low

    high = None
elif SUPPORTED:
    import _xxsubinterpreters as low

    high = None
else:
    low = high = None


class Failed(Exception):
    """Code run in a sub-interpreter raised: ``kind`` is its type's name, ``text`` what it printed."""

    def __init__(self, kind: str, message: str, text: str = "") -> None:
        super().__init__(f"{kind}: {message}\n{text}")
        self.kind = kind
        self.message = message


def fresh_key() -> int:
    return int.from_bytes(os.urandom(8), "little") >> 1


# `threading` imported by the thread that creates (and destroys) the interpreter: on 3.12,
# destroying an interpreter whose `threading` was first imported in another thread waits
# forever in threading._shutdown() (CPython gh-105716, fixed in 3.13), and framehook
# imports `logging`, which imports `threading`.
SETUP = f"""
import sys
import threading
sys.path.insert(0, {HERE!r})
__report_key__ = None

def report(value):
    import json
    import framehook
    framehook._native._post(__report_key__, json.dumps(value))
"""


class Interp:
    """A sub-interpreter: isolated (its own GIL and allocator) or legacy (the main's GIL)."""

    def __init__(self, isolated: bool = True) -> None:
        self.isolated = isolated
        if high is not None and isolated:
            self.handle: Any = high.create()
            self.id = self.handle.id
        elif sys.version_info >= (3, 13):
            self.handle = self.id = low.create("isolated" if isolated else "legacy")
        else:
            self.handle = low.create(isolated=isolated)  # an InterpreterID
            self.id = int(self.handle)
        self.closed = False
        self.exec(SETUP)

    def exec(self, code: str) -> None:
        """Runs ``code`` in the interpreter's ``__main__``; raises :class:`Failed` if it raises."""
        code = textwrap.dedent(code)
        if high is not None and self.isolated:
            try:
                self.handle.exec(code)
            except high.ExecutionFailed as error:
                raise self._failed(error.excinfo) from None
        elif sys.version_info >= (3, 13):
            excinfo = low.exec(self.id, code)
            if excinfo is not None:
                raise self._failed(excinfo)
        else:
            try:
                low.run_string(self.handle, code)
            except low.RunFailedError as error:
                # "<class 'ValueError'>: message"
                kind, _, message = str(error).partition(": ")
                raise Failed(kind.removeprefix("<class '").removesuffix("'>").rpartition(".")[2], message) from None

    @staticmethod
    def _failed(excinfo: Any) -> Failed:
        return Failed(excinfo.type.__name__, excinfo.msg, getattr(excinfo, "errdisplay", "") or "")

    def run(self, code: str) -> Any:
        """Runs ``code`` and returns the last value it passed to ``report()`` (None if none)."""
        from framehook import _native

        key = fresh_key()
        self.exec(f"__report_key__ = {key}\n" + textwrap.dedent(code))
        text = _native._take(key)
        return None if text is None else json.loads(text)

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        if high is not None and self.isolated:
            self.handle.close()
        else:
            low.destroy(self.handle)

    def __enter__(self) -> Interp:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def exists(interp_id: int) -> bool:
    """Whether an interpreter with this ID exists now."""
    listed = low.list_all()
    return any(int(entry[0] if isinstance(entry, tuple) else entry) == interp_id for entry in listed)


def main_interpreter_id() -> int:
    current = low.get_main()
    return int(current[0] if isinstance(current, tuple) else current)


def take(key: int) -> Optional[str]:
    from framehook import _native

    return _native._take(key)
