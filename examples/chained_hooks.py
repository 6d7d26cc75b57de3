"""Three frame hooks on one program at once, then removed.

1. ``translate`` rewrites code: in any code object that uses the constant
   "hello" it puts "bonjour" instead (a new code object, via ``code.replace``).
2. ``shout`` sees what the first hook returned (``frame.f_code``) and builds on
   it: it upper-cases that code's string constants.
3. the hookprof profiler (examples/profiler, a separate extension using
   framehook's C API) observes: it counts calls and time per code object and
   reports the code that actually ran, marking replacements.

Run: ``python examples/chained_hooks.py`` (with hookprof installed:
``pip install . ./examples/profiler``).
"""

from __future__ import annotations

import sys

import framehook
import hookprof


def greet(name):
    greeting = "hello"
    return greeting + ", " + name


def program():
    return [greet(name) for name in ("ada", "grace")]


translated = []
shouted = []


def translate(frame):
    code = frame.f_code
    if "hello" in code.co_consts:
        translated.append(code.co_name)
        return code.replace(co_consts=tuple("bonjour" if c == "hello" else c for c in code.co_consts))
    return None


def shout(frame):
    code = frame.f_code
    if code is not frame.original_code:  # an earlier hook replaced it: build on that
        shouted.append(code.co_name)
        return code.replace(co_consts=tuple(c.upper() if isinstance(c, str) else c for c in code.co_consts))
    return None


def main() -> None:
    print("without hooks:      ", program())
    handles = [
        framehook.add_frame_hook(translate, cache=True),
        framehook.add_frame_hook(shout, cache=True),
    ]
    with hookprof.Profiler() as profiler:
        print("hooks, in order:    ", [handle.name for handle in framehook.frame_hooks()])
        print("with three hooks:   ", program())
    print("translate rewrote:  ", translated, "(cached: asked once per code object)")
    print("shout built on it:  ", shouted)
    print("the profiler saw:")
    profiler.print_stats(sort="ncalls", limit=2, file=sys.stdout)
    for handle in handles:
        framehook.remove_frame_hook(handle)
    print("hooks removed:      ", framehook.frame_hooks())
    print("back to normal:     ", program())


if __name__ == "__main__":
    main()
