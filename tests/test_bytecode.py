"""framehook.bytecode: decoding and assembling on the running interpreter.

The raw round trip: every code object compiled from the standard library (nested ones
included) re-encodes byte for byte: ``co_code``, the exception table, the line table and
``co_stacksize`` (a sample of the library in ``make test``; all of it with
``FRAMEHOOK_FULL=1``). Two exceptions, where CPython's ``co_stacksize`` exceeds what the
final bytecode can reach, so the computed size is smaller (never larger): 3.9 computes it
before its peephole optimiser folds constant tuples (``def f(a=1, b=2)`` pushes ``(1, 2)``,
counted as two), and 3.11 counts exception handlers that no entry of the exception table
leads to (a ``try`` whose body cannot raise), which the computation never reaches. Bad
input raises a clear exception, never crashes.
"""

import importlib.util
import json
import opcode
import os
import subprocess
import sys
import sysconfig
import types
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bytecode_corpus
from framehook import _native, bytecode

FULL = os.environ.get("FRAMEHOOK_FULL") == "1"
# In make test: every SAMPLE_STEP-th file of the library, sorted by path.
SAMPLE_STEP = 12
# CPython 3.9 over-estimates some stack sizes (see above).
PEEPHOLE_STACK_SIZES = sys.version_info < (3, 10)
# Execution never continues after these.
TERMINATORS = {"RETURN_VALUE", "RETURN_CONST", "RAISE_VARARGS", "RERAISE", "JUMP_FORWARD", "JUMP_BACKWARD",
               "JUMP_ABSOLUTE", "JUMP_BACKWARD_NO_INTERRUPT"}
# The fields that hold the bytecode, as this interpreter names them.
LINE_TABLE = "co_linetable" if hasattr(types.CodeType, "co_linetable") else "co_lnotab"
FIELDS = [
    name for name in ("co_code", "co_exceptiontable", LINE_TABLE, "co_stacksize") if hasattr(types.CodeType, name)
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


def has_unreachable_instructions(code):
    """Whether some instruction cannot be reached from the entry (fall-through, jumps and
    exception handlers followed)."""
    instructions = bytecode.decode(code, canonical=False)
    reached, work = set(), [0]
    while work:
        index = work.pop()
        if index in reached or index >= len(instructions):
            continue
        reached.add(index)
        instruction = instructions[index]
        work.extend(i for i in (instruction.target, instruction.handler and instruction.handler[0]) if i is not None)
        if instruction.name not in TERMINATORS:
            work.append(index + 1)
    return len(reached) < len(instructions)


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
            if "co_stacksize" in different and again.co_stacksize < code.co_stacksize:
                if PEEPHOLE_STACK_SIZES or has_unreachable_instructions(code):
                    different.remove("co_stacksize")
            if different:
                mismatches.append(f"{path}:{code.co_firstlineno} {code.co_name}: {', '.join(different)}")
            checked += 1
    assert checked > (20_000 if FULL else 1_000)
    assert not mismatches, f"{len(mismatches)} of {checked} differ:\n" + "\n".join(mismatches[:20])


def listing(code):
    """What the canonical instructions say, minus the argument objects' identity."""
    return [
        (i.name, i.arg, i.argval if isinstance(i.argval, (str, int)) else repr(i.argval), i.target, i.handler,
         i.positions)
        for i in bytecode.decode(code)
    ]


def test_canonical_round_trip_of_the_standard_library():
    """Lowering the canonical instructions and raising them again gives them back: every
    rule's two directions agree, for every code object of the library sample."""
    checked = 0
    mismatches = []
    for path in stdlib_sources():
        module = compiled(path)
        if module is None:
            continue
        for code in code_objects(module):
            again = bytecode.reassemble(code, via_ir=True)
            if listing(again) != listing(code):
                mismatches.append(f"{path}:{code.co_firstlineno} {code.co_name}")
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
    assert loop.target is not None and loop.target > loop.position
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
            # NOPs after it, as for garbage bytecode (see NOP_PADDING): reading ``co_code``
            # rewrites the inline caches a specialised number would have, past the end of a
            # code object that ends with it (a heap overflow that crashed later collections).
            bad = code.replace(co_code=code.co_code + bytes([number, 0]) + NOP_PADDING)
            if bad.co_code[-2 - len(NOP_PADDING)] == number:
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


def test_relined_code_runs_each_line_at_the_line_given():
    # What the numpy backend's graphs are compiled with: text made up for the graph, each of
    # its lines moved to the user's line it stands for (not in order), columns dropped.
    source = "def f(x):\n    y = x + 1\n    if y > 2:\n        y = -y\n    return y\n"
    code = next(c for c in compile(source, "<relined>", "exec").co_consts if isinstance(c, types.CodeType))
    relined = _native._bytecode_relined(code, [30, 41, 17, 90, 12])
    assert relined.co_firstlineno == 30
    assert relined.co_code == code.co_code
    import dis

    lines = {line for _, line in dis.findlinestarts(relined) if line is not None}
    assert lines <= {30, 41, 17, 90, 12} and {41, 17, 90, 12} <= lines
    if hasattr(relined, "co_positions"):
        assert all(col is None and end_col is None and end == line
                   for line, end, col, end_col in relined.co_positions() if line is not None)
    f = types.FunctionType(relined, {})
    assert (f(1), f(5)) == (2, -6)

    def raised_at(argument):
        try:
            types.FunctionType(relined, {})(argument)
        except TypeError as error:
            return error.__traceback__.tb_next.tb_lineno
        raise AssertionError("no error")

    assert raised_at("text") == 41  # `x + 1`, the source's line 2


def test_relined_code_past_the_lines_given_raises_value_error():
    code = sample_code()
    with pytest.raises(ValueError, match="past the 1 lines given"):
        _native._bytecode_relined(code, [1])


def reassembled_deeply(code):
    """``code`` and every code object in its constants, reassembled through the canonical
    instructions."""
    consts = tuple(reassembled_deeply(c) if isinstance(c, types.CodeType) else c for c in code.co_consts)
    return bytecode.reassemble(code.replace(co_consts=consts))


@pytest.mark.parametrize("label, source", bytecode_corpus.sources(), ids=[s[0] for s in bytecode_corpus.sources()])
def test_reassembled_programs_run_the_same(label, source):
    module = compile(source, f"<corpus {label}>", "exec")
    expected_namespace, namespace = {"__name__": "corpus"}, {"__name__": "corpus"}
    exec(module, expected_namespace)
    again = reassembled_deeply(module)
    exec(again, namespace)
    assert namespace["main"]() == expected_namespace["main"]()
    # Every function really runs reassembled code (not the original): the code differs in identity.
    assert namespace["main"].__code__ is not expected_namespace["main"].__code__


def test_prologue_is_what_the_compiler_writes():
    """The prologue the layer writes for generated code (free variables, cells, generator
    start, RESUME) is the one CPython's compiler writes, on every version."""
    source = """
def outer(a):
    b = 1
    def plain():
        return a + b
    def generator():
        c = yield a
        yield lambda: c + b
    async def coroutine():
        return b
    async def async_generator():
        yield a
    return plain, generator, coroutine, async_generator
"""
    namespace = {}
    exec(source, namespace)
    codes = [namespace["outer"].__code__] + [f.__code__ for f in namespace["outer"](1)]
    for code in codes:
        prologue = _native._bytecode_prologue(code)
        start = [(i.name, i.arg) for i in bytecode.decode(code)][: len(prologue)]
        assert start == prologue, code.co_name
    assert any(name == "MAKE_CELL" for name, _ in _native._bytecode_prologue(codes[0])) == (sys.version_info >= (3, 11))


@pytest.mark.skipif(sys.version_info < (3, 14), reason="LOAD_FAST_BORROW is new in 3.14")
def test_borrowed_loads_are_never_emitted():
    import dis

    def f(a, b):
        c = a + b
        return [c * a for _ in range(b)], a, b

    names = {i.opname for i in dis.get_instructions(f.__code__)}
    assert names & {"LOAD_FAST_BORROW", "LOAD_FAST_BORROW_LOAD_FAST_BORROW"}
    again = bytecode.reassemble(f.__code__)
    borrowing = {"LOAD_FAST_BORROW", "LOAD_FAST_BORROW_LOAD_FAST_BORROW"}
    assert not {i.opname for i in dis.get_instructions(again)} & borrowing
    assert types.FunctionType(again, {"range": range})(2, 3) == f(2, 3)


# Opcodes for garbage bytecode: this version's own, not the interpreter's internal ones
# numbered above the specialised forms (reading ``co_code`` holding one fails an assertion in
# debug builds). (Reading ``co_code`` of a code object whose last instruction's inline caches
# run past its end overflows CPython's buffer on 3.11+, where the getter rewrites caches; so
# garbage ends with NOPs enough to hold any caches.)
INTERPRETER_ONLY = {"ENTER_EXECUTOR", "TRACE_RECORD"}
GARBAGE_OPCODES = sorted(
    number for name, number in opcode.opmap.items()
    if number < 256 and not name.startswith("INSTRUMENTED_") and name not in INTERPRETER_ONLY
)
NOP_PADDING = bytes([opcode.opmap["NOP"], 0]) * 12


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(GARBAGE_OPCODES), st.integers(0, 255)), max_size=32))
def test_garbage_bytecode_raises_value_error_never_crashes(units):
    """Arbitrary instructions with arbitrary arguments as ``co_code``: decoding and
    reassembling either work or raise ValueError naming the problem."""
    data = bytes(byte for unit in units for byte in unit) + NOP_PADDING
    try:
        code = sample_code().replace(co_code=data)
    except ValueError:
        return  # this interpreter refuses such a code object itself
    for action in (lambda: bytecode.decode(code), lambda: bytecode.decode(code, canonical=False),
                   lambda: bytecode.reassemble(code, via_ir=False), lambda: bytecode.reassemble(code)):
        try:
            action()
        except ValueError as error:
            assert "cannot" in str(error)


RUNNER_MODULES = "test_grammar,test_scope,test_with,test_listcomps,test_exceptions"


@pytest.mark.skipif(importlib.util.find_spec("test.test_grammar") is None,
                    reason="this interpreter has no Lib/test (CPython's test suite)")
def test_canonical_round_trip_runs_cpython_tests_the_same(tmp_path):
    """CPython's own tests of the grammar, scopes, with, comprehensions and exceptions, with
    every hookable frame running its code reassembled through the canonical instructions:
    the same outcome for every test as without hooks, and no code the layer cannot take."""
    report = tmp_path / "report.json"
    done = subprocess.run(
        [sys.executable, "-m", "framehook_dev.torture", "--python", sys.executable, "--modes", "reassemble",
         "--modules", RUNNER_MODULES, "--report", str(report), "--logs", str(tmp_path / "logs")],
        capture_output=True, text=True, timeout=900,
    )
    assert done.returncode == 0, done.stdout[-5000:] + done.stderr[-3000:]
    (modules,) = [py["modules"] for py in json.loads(report.read_text())["pythons"].values()]
    for module in RUNNER_MODULES.split(","):
        assert modules[module]["verdicts"]["reassemble"]["verdict"] == "same", module
        stats = modules[module]["runs"]["reassemble"][0]["hooks"]["reassemble"]
        assert stats["transformed"] > 50 and not stats["errors"], (module, stats)
