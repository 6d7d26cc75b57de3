"""Three frame hooks chained on one program, then removed.

1. ``translate`` rewrites code: it replaces the constant "hello" in any code
   object that uses it by "bonjour" (a new code object, via ``code.replace``).
2. ``shout`` sees the code the first hook returned (``frame.f_code``) and
   builds on it: it upper-cases that code's string constants.
3. ``count`` only watches: it counts the frames that start and the code each
   would run, and never replaces anything.

Run: ``python examples/chained_hooks.py``
"""

from __future__ import annotations

import collections
import types

import framehook


def greet(name):
    greeting = "hello"
    return greeting + ", " + name


def program():
    return [greet(name) for name in ("ada", "grace")]


def translate(frame):
    code = frame.f_code
    if "hello" in code.co_consts:
        consts = tuple("bonjour" if c == "hello" else c for c in code.co_consts)
        return code.replace(co_consts=consts)
    return None


def shout(frame):
    code = frame.f_code
    if code is not frame.original_code:  # an earlier hook replaced it: build on that
        consts = tuple(c.upper() if isinstance(c, str) else c for c in code.co_consts)
        return code.replace(co_consts=consts)
    return None


starts: collections.Counter = collections.Counter()


def count(frame):
    starts[frame.original_code.co_name] += 1
    return None


def main() -> None:
    print("without hooks:     ", program())
    handles = [
        framehook.add_frame_hook(translate, cache=True),
        framehook.add_frame_hook(shout, cache=True),
        framehook.add_frame_hook(count),
    ]
    print("hooks, in order:   ", [h.name for h in framehook.frame_hooks()])
    print("with three hooks:  ", program())
    print("frames counted:    ", dict(starts))
    for handle in handles:
        framehook.remove_frame_hook(handle)
    print("hooks removed:     ", framehook.frame_hooks())
    print("back to normal:    ", program())
    assert isinstance(greet.__code__, types.CodeType) and program() == ["hello, ada", "hello, grace"]


if __name__ == "__main__":
    main()
