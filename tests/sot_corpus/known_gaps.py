"""Cases the translator does not meet yet, each with why and where: the harness marks them
``xfail(strict=True)``, so they are reported (never counted as passes) and one that starts
passing fails until it is taken off this list. Every entry is a gap in the translator, not
in the case: the case states what a complete translator does."""

from __future__ import annotations

import sys

ALL = None  # every interpreter

_BREAK_IN_BLOCK_STACK_HANDLER = (
    "3.9/3.10 run an except body under a handler block no instruction can set up again: a graph "
    "break inside one runs the frame eagerly"
)

_COPY_314 = (
    "3.14's copy.copy tests the object's type against a module-level set of types, a set holding "
    "objects whose contents no guard compares: the call breaks instead of being inlined"
)

_WITH_C_MANAGER_314 = (
    "3.14+ reads a `with`'s `__enter__` and `__exit__` with LOAD_SPECIAL, where no resume function "
    "can start: a manager written in C (a lock of the program's) runs the frame eagerly"
)

# case id -> (reason, the (major, minor) versions it fails on, or ALL)
KNOWN_GAPS: dict[str, tuple[str, object]] = {
    "breaks_in_blocks/print_in_except": (_BREAK_IN_BLOCK_STACK_HANDLER, {(3, 9), (3, 10)}),
    "breaks_in_blocks/exception_current_after_break_in_except": (_BREAK_IN_BLOCK_STACK_HANDLER, {(3, 9), (3, 10)}),
    "breaks_in_blocks/exception_cleared_after_handler": (_BREAK_IN_BLOCK_STACK_HANDLER, {(3, 9), (3, 10)}),
    "breaks_in_blocks/break_in_nested_handlers": (_BREAK_IN_BLOCK_STACK_HANDLER, {(3, 9), (3, 10)}),
    "breaks_in_blocks/break_out_of_a_with_in_a_while_loop": (
        "3.9/3.10 set a `with` block up with an instruction no bridge can run again: a loop holding "
        "one runs eagerly after a break",
        {(3, 9), (3, 10)},
    ),
    "side_effects/set_add_discard": ("mutating a set from the frame", ALL),
    "library_calls/library_calls_back_user_code": (_COPY_314, {(3, 14)}),
    "library_calls/library_calls_in_recursion": (_COPY_314, {(3, 14)}),
    "with/a_break_while_a_made_lock_is_held": (_WITH_C_MANAGER_314, {(3, 14), (3, 15)}),
    "with/a_lock_of_the_program_is_held_for_real": (_WITH_C_MANAGER_314, {(3, 14), (3, 15)}),
    "exceptions/builtin_method_refusing_keywords_raises_cpythons_message": (
        "a method call (`obj.m(...)`, CPython's LOAD_ATTR method form) is simulated as a bound "
        "method and handed to the generated code as one at a break, so a C method refusing "
        "keywords names itself without its type ('update()', not 'set.update()')",
        ALL,
    ),
    "except_star/break_inside_clause": (
        "an except* clause handles only what it matched, which no instruction can make the "
        "current exception again in a resume function: a graph break inside one runs the frame eagerly",
        ALL,
    ),
    "except_star/raise_inside_clause": (
        "an exception raised inside an except* clause is merged with the group's rest by CPython's "
        "PREP_RERAISE_STAR, which is not simulated: the original code runs (a fallback)",
        ALL,
    ),
    "type_params/generic_function_defined_inside": (
        "PEP 695 type parameters (INTRINSIC_TYPEVAR) are not simulated",
        ALL,
    ),
}


def known_gap(case_id: str) -> str | None:
    """Why the translator does not meet `case_id` on this interpreter yet, or None."""
    entry = KNOWN_GAPS.get(case_id)
    if entry is None:
        return None
    reason, versions = entry
    if versions is ALL or sys.version_info[:2] in versions:  # type: ignore[operator]
        return reason
    return None
