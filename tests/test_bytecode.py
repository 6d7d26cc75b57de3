"""framehook.bytecode: decoding and assembling on the running interpreter.

The raw round trip: every code object compiled from the standard library (nested ones
included) re-encodes byte for byte: ``co_code``, the exception table, the line table and
``co_stacksize`` (a sample of the library in ``make test``; all of it with
``FRAMEHOOK_FULL=1``). One exception: CPython 3.9 computes ``co_stacksize`` before its
peephole optimiser folds constant tuples (``def f(a=1, b=2)`` pushes ``(1, 2)``, counted as
two), so its stack sizes can exceed what the final bytecode reaches; there the computed
size may be smaller, never larger. Bad input raises a clear exception, never crashes.
"""

import os
import sys
import sysconfig
import types
from pathlib import Path

import pytest

from framehook import bytecode

FULL = os.environ.get("FRAMEHOOK_FULL") == "1"
# In make test: every SAMPLE_STEP-th file of the library, sorted by path.
SAMPLE_STEP = 12
# CPython 3.9 over-estimates some stack sizes (see above).
STACK_SIZE_MAY_SHRINK = sys.version_info < (3, 10)
# The fields that hold the bytecode, as this interpreter names them.
FIELDS = [
    name
    for name in ("co_code", "co_exceptiontable", "co_linetable" if hasattr(types.CodeType, "co_linetable") else "co_lnotab", "co_stacksize")
    if hasattr(types.CodeType, name)
]


def stdlib_sources():
    root = Path(sysconfig.get_paths()["stdlib"])
    files = sorted(p for p in root.rglob("*.py") if "site-packages" not in p.parts)
    return files if FULL else files[::SAMPLE_STEP]


def code_objects(code):
    yield code
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            yield from code_objects(constant)


def compiled(path):
    try:
        return compile(path.read_bytes(), str(path), "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        # Lib/test holds files that are bad on purpose (badsyntax_*, bad encodings).
        return None


def test_raw_round_trip_of_the_standard_library():
    checked = 0
    mismatches = []
    for path in stdlib_sources():
        module = compiled(path)
        if module is None:
            continue
        for code in code_objects(module):
            again = bytecode.reassemble(code, via_ir=False)
            different = [name for name in FIELDS if getattr(again, name) != getattr(code, name)]
            if STACK_SIZE_MAY_SHRINK and "co_stacksize" in different and again.co_stacksize < code.co_stacksize:
                different.remove("co_stacksize")
            if different:
                mismatches.append(f"{path}:{code.co_firstlineno} {code.co_name}: {', '.join(different)}")
            checked += 1
    assert checked > (20_000 if FULL else 1_000)
    assert not mismatches, f"{len(mismatches)} of {checked} differ:\n" + "\n".join(mismatches[:20])


def test_decode_lists_instructions_like_dis():
    def sample(items, scale):
        total = 0
        for item in items:
            try:
                total += item * scale
            except TypeError:
                continue
        return total

    raw = bytecode.decode(sample.__code__, canonical=False)
    canonical = bytecode.decode(sample.__code__)
    assert len(raw) > 10 and len(canonical) > 10
    names = [i.name for i in canonical]
    assert "FOR_ITER" in names and "BINARY_OP" in names and "CALL" not in names
    binary = next(i for i in canonical if i.name == "BINARY_OP")
    assert binary.argval == "NB_INPLACE_ADD" or binary.argval == "NB_MULTIPLY"
    loop = next(i for i in canonical if i.name == "FOR_ITER")
    assert loop.target is not None and loop.target > loop.index
    # The try body's instructions go to the handler (3.11+); the listing shows it.
    text = str(canonical)
    assert "FOR_ITER" in text and "(scale)" in text
    assert all(i.lineno is None or sample.__code__.co_firstlineno <= i.lineno for i in canonical)


def sample_code():
    def f(a, b):
        for item in a:
            if item > b:
                return item
        return None

    return f.__code__


def truncated(code):
    return code.replace(co_code=code.co_code[:-1])


def unknown_opcode(code):
    """``code`` with an opcode no version defines (``co_code`` de-specialises the numbers
    of specialised instructions, so the first number it keeps)."""
    import opcode

    for number in range(256):
        if opcode.opname[number].startswith("<"):
            bad = code.replace(co_code=code.co_code + bytes([number, 0]))
            if bad.co_code[-2] == number:
                return bad
    pytest.skip("every undefined opcode number is a specialised instruction, which co_code turns into its base")


def jump_out_of_range(code):
    """The first jump's argument made to point far past the end."""
    import dis

    jump = next(i for i in dis.get_instructions(code) if i.opcode in dis.hasjrel + dis.hasjabs)
    data = bytearray(code.co_code)
    data[jump.offset + 1] = 250
    return code.replace(co_code=bytes(data))


def bad_exception_table(code):
    return code.replace(co_exceptiontable=bytes([0x01, 0x02]))


@pytest.mark.parametrize(
    "change, message",
    [
        (truncated, "truncated"),
        (unknown_opcode, "unknown opcode"),
        (jump_out_of_range, "jump at byte"),
        (bad_exception_table, "exception table"),
    ],
)
def test_bad_input_raises_value_error(change, message):
    if change is bad_exception_table and not hasattr(types.CodeType, "co_exceptiontable"):
        pytest.skip("no exception table before 3.11")
    try:
        bad = change(sample_code())
    except ValueError:
        pytest.skip("this interpreter refuses such a code object itself")
    for canonical in (False, True):
        with pytest.raises(ValueError, match=message):
            bytecode.decode(bad, canonical=canonical)
    for via_ir in (False, True):
        with pytest.raises(ValueError, match=message):
            bytecode.reassemble(bad, via_ir=via_ir)


def test_not_a_code_object_raises_type_error():
    for bad in (None, 1, "code", sample_code):
        with pytest.raises(TypeError, match="code object"):
            bytecode.decode(bad)
        with pytest.raises(TypeError, match="code object"):
            bytecode.reassemble(bad)
