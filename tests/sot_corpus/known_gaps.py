"""Cases the translator does not meet yet, each with why and where: the harness marks them
``xfail(strict=True)``, so they are reported (never counted as passes) and one that starts
passing fails until it is taken off this list. Every entry is a gap in the translator, not
in the case: the case states what a complete translator does."""

from __future__ import annotations

import sys

ALL = None  # every interpreter

_EXCEPTION_ESCAPING_A_HANDLER = (
    "an exception escaping from inside an exception handler (a re-raise, or through __exit__) "
    "is not raised by generated code: the frame falls back to the original"
)
_BREAK_UNDER_SAVED_OFFSET = (
    "a graph break under a handler that saves the instruction offset (with, finally, an except "
    "body) resumes at the breaking instruction itself, whose resume function then runs eagerly: "
    "the operations after it are not captured"
)
_BLOCK_STACK_BREAK = (
    "3.9/3.10 set handlers up with SETUP_* instructions a resume function would skip: a graph "
    "break inside try runs the rest of the frame eagerly"
)
_CHANGING_RESUME_ARGUMENT = (
    "the value an opaque call returns differs on every call and the resume function guards it "
    "by value (no dynamic ints yet): the resume function recompiles on every call"
)

_TENSOR_IN_TEMPLATE = (
    "a t-string is made from known Python values only: one interpolating a tensor breaks the "
    "graph and the frame runs eagerly"
)

# case id -> (reason, the (major, minor) versions it fails on, or ALL)
KNOWN_GAPS: dict[str, tuple[str, object]] = {
    "generators/yield_from": ("`yield from` (SEND) is not simulated in inlined generators", ALL),
    "exceptions/reraise_bare": (_EXCEPTION_ESCAPING_A_HANDLER, ALL),
    "with/not_suppressing_exit": (_EXCEPTION_ESCAPING_A_HANDLER, ALL),
    "exceptions/raise_inside_except": (_EXCEPTION_ESCAPING_A_HANDLER, {(3, 11), (3, 12), (3, 13), (3, 14)}),
    "graph_breaks/opaque_builtin_id": (_CHANGING_RESUME_ARGUMENT, ALL),
    "breaks_in_blocks/opaque_call_in_try": (_CHANGING_RESUME_ARGUMENT, ALL),
    "call_objects/property_setter": ("property setters on objects the translation made", ALL),
    "call_objects/slotted_object": ("objects of classes with __slots__ are not made symbolically", ALL),
    "call_objects/dataclass_equality": (
        "an object the translation made cannot be compared by value (dataclass __eq__)",
        ALL,
    ),
    "del/del_attribute_argument": ("deleting an attribute of an object from the frame", ALL),
    "side_effects/set_add_discard": ("mutating a set from the frame", ALL),
    "breaks_in_blocks/two_breaks_in_nested_blocks": (_BREAK_UNDER_SAVED_OFFSET, ALL),
    "breaks_in_blocks/return_from_with_after_break": (_BREAK_UNDER_SAVED_OFFSET, ALL),
    "breaks_in_blocks/print_in_with": (_BREAK_UNDER_SAVED_OFFSET, ALL),
    # 3.14's finally inside the with saves no offset: the break resumes through a landing pad.
    "breaks_in_blocks/print_in_try_in_with": (_BREAK_UNDER_SAVED_OFFSET, {(3, 9), (3, 10), (3, 11), (3, 12), (3, 13)}),
    "breaks_in_blocks/print_in_except": (_BREAK_UNDER_SAVED_OFFSET, ALL),
    "breaks_in_blocks/conversion_in_with": (_BREAK_UNDER_SAVED_OFFSET, ALL),
    "breaks_in_blocks/print_in_try": (_BLOCK_STACK_BREAK, {(3, 9), (3, 10)}),
    "breaks_in_blocks/data_dependent_branch_in_try": (_BLOCK_STACK_BREAK, {(3, 9), (3, 10)}),
    "breaks_in_blocks/break_then_suppressed_raise": (_BLOCK_STACK_BREAK, {(3, 9), (3, 10)}),
    "breaks_in_blocks/break_then_raise_and_catch": (_BLOCK_STACK_BREAK, {(3, 9), (3, 10)}),
    "except_star/unmatched_group_propagates": ("except* (CHECK_EG_MATCH) is not simulated", ALL),
    "except_star/two_except_star_handlers": ("except* (CHECK_EG_MATCH) is not simulated", ALL),
    "except_star/naked_exception_wrapped": ("except* (CHECK_EG_MATCH) is not simulated", ALL),
    "except_star/except_star_catches_group": ("except* (CHECK_EG_MATCH) is not simulated", ALL),
    "except_star/array_ops_around_group": ("except* (CHECK_EG_MATCH) is not simulated", ALL),
    "tstrings/array_interpolated": (_TENSOR_IN_TEMPLATE, ALL),
    "tstrings/template_holding_array": (_TENSOR_IN_TEMPLATE, ALL),
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
