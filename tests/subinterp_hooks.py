"""Hooks and observers that tests/test_interpreters.py names by "module:attribute" spec, for
framehook.interpreters to import inside another interpreter (test-only; not in the wheel).

Each interpreter imports its own copy of this module, so the lists below are per
interpreter. The hooks care about functions whose name starts with ``work_`` only.
"""

from __future__ import annotations

seen: list[str] = []
events: list[list[str]] = []


def collect(frame):
    """Records the names of the ``work_`` functions it sees start; declines."""
    name = frame.f_code.co_name
    if name.startswith("work_"):
        seen.append(name)
    return None


def raising(frame):
    if frame.f_code.co_name.startswith("work_"):
        raise ValueError(f"subinterp_hooks.raising refuses {frame.f_code.co_name}")
    return None


def observe(event, code, original_code):
    if code.co_name.startswith("work_"):
        events.append([event, code.co_name])


class Holder:
    @staticmethod
    def nested(frame):
        """A hook reached by a dotted attribute path: "subinterp_hooks:Holder.nested"."""
        return collect(frame)


not_callable = 42
