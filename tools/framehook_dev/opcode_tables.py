"""The bytecode layer's opcode tables, generated from the running interpreter.

    python -m framehook_dev.opcode_tables           # print this interpreter's table
    python -m framehook_dev.opcode_tables --write   # write crates/framehook-bytecode/tables/cpython-3.X.txt
    python -m framehook_dev.opcode_tables --check   # compare with the checked-in table (exit 1 and a diff)

The format is ``crates/framehook-bytecode/tables/FORMAT.md``. Facts come from the
interpreter wherever it exposes them: names and numbers from ``opcode.opmap``, cache counts
from ``opcode._inline_cache_entries``, argument kinds from ``dis``'s lists and from how ``dis``
resolves arguments of synthetic instructions (the ``co_names`` shift of ``LOAD_GLOBAL``, the
flag bits below ``IMPORT_NAME``'s name, the direction and unit of every jump), stack effects
from ``dis.stack_effect`` (fitted to an expression and checked on every sampled argument), the
call layout, comparison encoding and exact-bool jumps from compiling small snippets, the stack
slots of a loop's iterator from ``GET_ITER``'s stack effect. Kept here, as the interpreter does
not expose them: the ``terminator`` and ``internal`` lists (each name with the versions whose
``opmap`` must hold it), the opcodes whose argument names an enumeration's value, and three
readings of names (``LOAD_SMALL_INT``'s argument is its value; a ``*_DEREF`` opcode that 3.14's
``dis`` lists with the locals is ``deref``; ``*BORROW*`` opcodes push borrowed references).
A version that changes a rule in a way the expressions cannot say fails loudly, naming the
opcode: that is where a new version needs a new rule.
"""

from __future__ import annotations

import argparse
import difflib
import dis
import importlib.util
import opcode
import platform
import sys
import types
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Optional

# Execution never continues at the next instruction (not exposed by the interpreter): each
# name with the first and last minor version (None: still) whose opmap must hold it.
TERMINATORS = {
    "RETURN_VALUE": (9, None),
    "RETURN_CONST": (12, 13),
    "RAISE_VARARGS": (9, None),
    "RERAISE": (9, None),
    "JUMP_FORWARD": (9, None),
    "JUMP_ABSOLUTE": (9, 10),
    "JUMP_BACKWARD": (11, None),
    "JUMP_BACKWARD_NO_INTERRUPT": (11, None),
}
# The interpreter's own opcodes, which never appear in co_code (not exposed either).
INTERNAL = {
    "INTERPRETER_EXIT": (12, None),
    "RESERVED": (12, None),
    "ENTER_EXECUTOR": (13, None),
    "TRACE_RECORD": (15, None),  # the JIT's trace recorder
}
# Arguments that name a value of an enumeration: (opcode, enumeration, dis's list of names).
ENUM_ARGS = (
    ("BINARY_OP", "binary_op", lambda: [name for name, _ in getattr(dis, "_nb_ops", ())]),
    ("CALL_INTRINSIC_1", "intrinsic1", lambda: list(getattr(dis, "_intrinsic_1_descs", ()))),
    ("CALL_INTRINSIC_2", "intrinsic2", lambda: list(getattr(dis, "_intrinsic_2_descs", ()))),
    ("LOAD_SPECIAL", "special", lambda: list(getattr(dis, "_special_method_names", ()))),
    (
        "LOAD_COMMON_CONSTANT",
        "common_constant",
        lambda: [_constant_name(c) for c in getattr(dis, "_common_constants", ())],
    ),
)
SAMPLE_OPARGS = [*range(1100), 4095, 65535, 65536, 1 << 20]


def _constant_name(constant: object) -> str:
    return getattr(constant, "__name__", repr(constant))


def _opcodes() -> list[tuple[str, int]]:
    return sorted(
        (
            (name, number)
            for name, number in opcode.opmap.items()
            if number < 256 and not name.startswith("INSTRUMENTED_")
        ),
        key=lambda item: item[1],
    )


def _curated(names: dict[str, tuple[int, Optional[int]]], what: str) -> set[str]:
    """The names of a curated list this version has; one its versions must have but lacks fails."""
    minor = sys.version_info[1]
    for name, (first, last) in names.items():
        expected = first <= minor and (last is None or minor <= last)
        if expected != (name in opcode.opmap):
            state = "lacks" if expected else "has"
            raise SystemExit(f"{what}: 3.{minor}'s opmap {state} {name}; update the list's versions for it")
    return {name for name in names if name in opcode.opmap}


def _has_arg(number: int) -> bool:
    hasarg = getattr(opcode, "hasarg", None)
    return number in hasarg if hasarg is not None else number >= opcode.HAVE_ARGUMENT


def _caches(name: str, number: int) -> int:
    entries = getattr(opcode, "_inline_cache_entries", None)
    if entries is None:
        return 0
    if hasattr(entries, "get"):  # a dict by name (3.12+; a frozendict from 3.15)
        return int(entries.get(name, 0))
    return int(entries[number]) if number < len(entries) else 0


def _synthetic(number: int, arg: int, *, before: int = 0, names: int = 10) -> list[dis.Instruction]:
    """dis's reading of one instruction (``before`` NOPs ahead of it) in a synthetic code object."""
    nop = opcode.opmap["NOP"]
    cache = opcode.opmap.get("CACHE", 0)
    caches = [(cache, 0)] * _caches(opcode.opname[number], number)
    units = [(nop, 0)] * before + [(number, arg)] + caches + [(nop, 0)] * 600
    code = compile("pass", "<probe>", "exec").replace(
        co_code=bytes(b for unit in units for b in unit),
        co_names=tuple(f"n{i}" for i in range(names)),
        co_varnames=tuple(f"v{i}" for i in range(20)),
        co_nlocals=20,
        co_consts=tuple(range(10)),
    )
    return list(dis.get_instructions(code))


def _instruction_at(instructions: list[dis.Instruction], offset: int) -> dis.Instruction:
    return next(i for i in instructions if i.offset == offset)


def _jump_kind(number: int) -> tuple[str, str]:
    """(argument kind, unit) of a jump, from how dis resolves ``arg=4`` at byte 80."""
    before, arg = 40, 4
    instruction = _instruction_at(_synthetic(number, arg, before=before), 2 * before)
    after = 2 * before + 2 * (1 + _caches(opcode.opname[number], number))
    target = instruction.argval
    for kind, unit, expected in (
        ("jump_forward", "units", after + 2 * arg),
        ("jump_forward", "bytes", after + arg),
        ("jump_backward", "units", after - 2 * arg),
        ("jump_absolute", "units", 2 * arg),
        ("jump_absolute", "bytes", arg),
    ):
        if target == expected:
            return kind, unit
    raise SystemExit(f"{opcode.opname[number]}: dis resolves a jump of 4 at byte 80 to {target!r}; no known rule")


def _name_shift(number: int) -> int:
    argval = _instruction_at(_synthetic(number, 6), 0).argval
    for shift in (0, 1, 2):
        if argval == f"n{6 >> shift}":
            return shift
    raise SystemExit(f"{opcode.opname[number]}: dis reads name argument 6 as {argval!r}; no known rule")


def _arg_kind(name: str, number: int, jump_units: set[str]) -> str:
    if not _has_arg(number):
        return "-"
    for op, kind, _ in ENUM_ARGS:
        if name == op:
            return f"enum:{kind}"
    if name == "LOAD_SMALL_INT":
        return "small_int"
    if number in dis.hasconst:
        return "const"
    if number in dis.hasname:
        shift = _name_shift(number)
        return "name" if shift == 0 else f"name>>{shift}"
    if number in dis.haslocal and name.endswith("_DEREF"):
        # 3.14's dis lists LOAD_DEREF with the locals (both index the locals-plus array).
        return "deref"
    if number in dis.haslocal:
        argval = _instruction_at(_synthetic(number, 0x12), 0).argval
        return "local_pair" if isinstance(argval, tuple) else "local"
    if number in dis.hasfree:
        return "deref"
    jumps = set(dis.hasjrel) | set(dis.hasjabs) | set(getattr(dis, "hasjump", ()))
    if number in jumps:
        kind, unit = _jump_kind(number)
        jump_units.add(unit)
        return kind
    if number in dis.hascompare:
        return "enum:compare"
    return "int"


# ------------------------------------------------------------------ stack effects


def _effects(number: int, jump: bool) -> Optional[dict[int, int]]:
    """dis.stack_effect per sampled argument (0 only, for no argument); None if refused."""
    if not _has_arg(number):
        try:
            return {0: dis.stack_effect(number, jump=jump)}
        except ValueError:
            return None
    effects = {}
    for arg in SAMPLE_OPARGS:
        try:
            effects[arg] = dis.stack_effect(number, arg, jump=jump)
        except ValueError:
            continue
    return effects or None


Atom = tuple[str, Callable[[int], int]]
ATOMS: list[Atom] = [
    ("oparg", lambda a: a),
    ("(oparg&1)", lambda a: a & 1),
    ("popcount(oparg&15)", lambda a: bin(a & 15).count("1")),
    ("((oparg>>2)&1)", lambda a: (a >> 2) & 1),
    ("(oparg==3)", lambda a: int(a == 3)),
]
UNPACK_EX = ("(oparg&255)+(oparg>>8)", lambda a: (a & 255) + (a >> 8))


def _render(constant: int, terms: Sequence[tuple[int, str]]) -> str:
    text = str(constant) if constant or not terms else ""
    for factor, atom in terms:
        sign = "-" if factor < 0 else "+"
        magnitude = abs(factor)
        body = atom if magnitude == 1 else f"{magnitude}*{atom}"
        text += (("-" if factor < 0 else "") + body) if not text else sign + body
    return text


def _candidates() -> Iterable[tuple[str, Callable[[int], int]]]:
    for constant in range(-8, 9):
        yield _render(constant, []), (lambda a, c=constant: c)
    for atom, value in ATOMS:
        for factor in (-1, 1, -2, 2):
            for constant in range(-8, 9):
                yield _render(constant, [(factor, atom)]), (lambda a, c=constant, f=factor, v=value: c + f * v(a))
    for constant in range(-8, 9):
        text = UNPACK_EX[0] + (f"+{constant}" if constant > 0 else f"{constant}" if constant < 0 else "")
        yield text, (lambda a, c=constant: c + UNPACK_EX[1](a))


def _fit(name: str, effects: dict[int, int]) -> str:
    for text, function in _candidates():
        if all(function(arg) == effect for arg, effect in effects.items()):
            return text
    sample = dict(list(effects.items())[:12])
    raise SystemExit(f"{name}: no stack-effect expression fits dis.stack_effect ({sample} ...)")


# ------------------------------------------------------------------ snippets


def _instructions(source: str) -> list[dis.Instruction]:
    """Instructions of the first function defined by ``source`` (or of the module)."""
    module = compile(source, "<probe>", "exec")
    functions = [c for c in module.co_consts if isinstance(c, types.CodeType)]
    return list(dis.get_instructions(functions[0] if functions else module))


def _call_layout() -> str:
    names = [i.opname for i in _instructions("f(x)")]
    if "PUSH_NULL" not in names:
        return "plain"
    return "null_first" if names.index("PUSH_NULL") < names.index("LOAD_NAME") else "callable_first"


def _compare_args(condition: bool) -> dict[str, int]:
    args = {}
    for symbol in dis.cmp_op:
        body = f"    if a {symbol} b:\n        return 1\n" if condition else f"    return a {symbol} b\n"
        source = "def f(a, b):\n" + body
        args[symbol] = next(i.arg for i in _instructions(source) if i.opname == "COMPARE_OP")
    return args


def _compare_shift(args: dict[str, int]) -> int:
    for shift in range(8):
        if all(args[symbol] >> shift == index for index, symbol in enumerate(dis.cmp_op)):
            return shift
    raise SystemExit(f"COMPARE_OP: no shift gives the comparison from {args}")


def _bool_operands() -> set[str]:
    """Conditional jumps the compiler puts TO_BOOL before."""
    found = set()
    for source in ("def f(x):\n    if x:\n        return 1\n", "def f(x):\n    if not x:\n        return 1\n"):
        instructions = _instructions(source)
        for previous, instruction in zip(instructions, instructions[1:]):
            if previous.opname == "TO_BOOL" and "JUMP" in instruction.opname:
                found.add(instruction.opname)
    return found


def _location_entries() -> str:
    """Whether the assembler writes one PEP 657 entry per run of instructions at the same
    position (3.12+) or one per instruction (3.11); ``-`` for the older line tables."""
    if not hasattr(types.CodeType, "co_positions"):
        return "-"
    module = compile("def f(x):\n    with x:\n        return g(x)(x)\n", "<probe>", "exec")
    code = next(c for c in module.co_consts if isinstance(c, types.CodeType))
    entries = sum(1 for byte in code.co_linetable if byte & 0x80)
    positions = list(code.co_positions())
    sizes = []
    for instruction in dis.get_instructions(code):
        sizes.append((positions[instruction.offset // 2], 1 + _caches(instruction.opname, instruction.opcode)))
    per_instruction = sum(-(-size // 8) for _, size in sizes)
    runs: list[list] = []
    for position, size in sizes:
        if runs and runs[-1][0] == position:
            runs[-1][1] += size
        else:
            runs.append([position, size])
    merged = sum(-(-size // 8) for _, size in runs)
    if merged == per_instruction:
        raise SystemExit("the location probe cannot tell merged runs from entries per instruction")
    if entries not in (merged, per_instruction):
        raise SystemExit(f"co_linetable has {entries} entries: not {merged} runs, not {per_instruction} instructions")
    return "merged" if entries == merged else "per_instruction"


def _import_flags() -> list[tuple[int, str]]:
    """The flag bits below an ``IMPORT_NAME`` argument's name index (3.15+: lazy, eager), named
    as dis shows them (``json + lazy``); none where the argument is the index alone."""
    number = opcode.opmap["IMPORT_NAME"]
    shift = _name_shift(number)
    flags = []
    for bit in range(shift):
        argrepr = _instruction_at(_synthetic(number, 1 << shift | 1 << bit), 0).argrepr
        name, plus, flag = argrepr.partition(" + ")
        if name != "n1" or not plus or not flag.isidentifier():
            raise SystemExit(f"IMPORT_NAME: dis shows flag bit {bit} as {argrepr!r}; no known rule")
        flags.append((1 << bit, flag))
    return flags


def _iterator_slots() -> int:
    """Stack slots a ``for`` loop's iterator takes: what ``GET_ITER`` leaves in place of the
    iterable (3.15+: the iterator or sequence, and NULL or an index)."""
    number = opcode.opmap["GET_ITER"]
    return 1 + dis.stack_effect(number, 0 if _has_arg(number) else None)


def _deref_index() -> str:
    source = "def f(a):\n    b = 1\n    def g():\n        return b\n    return g\n"
    store = next(i for i in _instructions(source) if i.opname == "STORE_DEREF")
    return "cell_free" if store.arg == 0 else "localsplus"


# ------------------------------------------------------------------ the table


def table_text() -> str:
    major, minor = sys.version_info[:2]
    jump_units: set[str] = set()
    bool_operands = _bool_operands()
    terminators = _curated(TERMINATORS, "terminator")
    internal = _curated(INTERNAL, "internal")
    for op, kind, names in ENUM_ARGS:
        if op in opcode.opmap and not names():
            raise SystemExit(f"{op}: dis names no values of enum {kind}")
    rows = []
    for name, number in _opcodes():
        arg = _arg_kind(name, number, jump_units)
        plain, jumped = _effects(number, False), _effects(number, True)
        if plain is None:
            effect, jump_effect = "?", "="
        else:
            effect = _fit(name, plain)
            jump_effect = _fit(name, jumped) if jumped is not None else effect
            jump_effect = "=" if jump_effect == effect else jump_effect
        flags = []
        if name in terminators:
            flags.append("terminator")
        if arg.startswith("name>>") and plain is not None and plain.get(0) != plain.get(1):
            flags.append("null_bit")
        if name in bool_operands:
            flags.append("bool_operand")
        if "BORROW" in name:
            flags.append("borrow")
        if name in internal:
            flags.append("internal")
        caches = _caches(name, number)
        rows.append(f"op {name} {number} {caches} {arg} {effect} {jump_effect} {','.join(flags) or '-'}")
    if len(jump_units) != 1:
        raise SystemExit(f"jumps count in {sorted(jump_units)}: expected one unit")
    has_caches = "CACHE" in opcode.opmap and any(_caches(name, number) for name, number in _opcodes())
    expression_args = _compare_args(condition=False)
    condition_args = _compare_args(condition=True)
    bool_bits = {condition_args[s] ^ expression_args[s] for s in dis.cmp_op}
    if len(bool_bits) != 1:
        raise SystemExit(f"COMPARE_OP: conditions change the argument by {bool_bits}")
    bool_bit = bool_bits.pop()
    lines = [
        f"# CPython {major}.{minor} opcode table, generated by python -m framehook_dev.opcode_tables "
        f"from CPython {platform.python_version()}.",
        "# Do not edit: tests/test_bytecode_tables.py compares it with every running interpreter (tables/FORMAT.md).",
        f"version {major}.{minor}",
        f"magic {int.from_bytes(importlib.util.MAGIC_NUMBER[:2], 'little')}",
        f"extended_arg {opcode.EXTENDED_ARG}",
        f"cache {opcode.opmap['CACHE'] if has_caches else '-'}",
        f"jump_unit {jump_units.pop()}",
        "line_table " + (
            "pep657" if hasattr(types.CodeType, "co_positions")
            else "pep626" if hasattr(types.CodeType, "co_lines") else "lnotab"
        ),
        f"location_entries {_location_entries()}",
        "exceptions " + ("table" if hasattr(types.CodeType, "co_exceptiontable") else "block_stack"),
        f"deref_index {_deref_index()}",
        f"call_layout {_call_layout()}",
        f"compare_shift {_compare_shift(expression_args)}",
        f"compare_bool_bit {bool_bit or '-'}",
        f"iterator_slots {_iterator_slots()}",
    ]
    for _, kind, names in ENUM_ARGS:
        lines.extend(f"enum {kind} {value} {entry}" for value, entry in enumerate(names()) if entry)
    lines.extend(f"enum import_flag {value} {name}" for value, name in _import_flags())
    lines.extend(f"enum compare {index} {symbol}" for index, symbol in enumerate(dis.cmp_op))
    lines.extend(f"enum compare_oparg {expression_args[symbol]} {symbol}" for symbol in dis.cmp_op)
    lines.extend(rows)
    return "\n".join(lines) + "\n"


def table_path(repo: Path) -> Path:
    major, minor = sys.version_info[:2]
    return repo / "crates" / "framehook-bytecode" / "tables" / f"cpython-{major}.{minor}.txt"


def _content(text: str) -> list[str]:
    return [line for line in text.splitlines() if line and not line.startswith("#")]


def compare(expected: str, actual: str) -> list[str]:
    """A unified diff of two tables' content (comment lines ignored); empty when equal."""
    diff = difflib.unified_diff(_content(expected), _content(actual), "checked in", "this interpreter", lineterm="")
    return list(diff)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--write", action="store_true", help="write this interpreter's table into the checkout")
    action.add_argument("--check", action="store_true", help="compare with the checked-in table")
    args = parser.parse_args(argv)
    text = table_text()
    if not (args.write or args.check):
        sys.stdout.write(text)
        return 0
    from . import checkout

    path = table_path(checkout.find())
    if args.write:
        path.write_text(text)
        print(f"wrote {path}")
        return 0
    diff = compare(path.read_text(), text)
    print("\n".join(diff) if diff else f"{path.name}: matches this interpreter")
    return 1 if diff else 0


if __name__ == "__main__":
    sys.exit(main())
