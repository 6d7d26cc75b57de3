"""The checked-in opcode tables match the running interpreter.

Each table (``crates/framehook-bytecode/tables/cpython-3.X.txt``) is generated from the
interpreter by ``python -m framehook_dev.opcode_tables``; regenerating it here and
comparing makes a patch release that changes an opcode, an argument's meaning or a stack
effect fail loudly. Free-threaded and debug builds must match their sibling's table. The
rest reads the checked-in table independently of the generator: its lines follow
``tables/FORMAT.md``, its stack-effect expressions (parsed by the format's grammar) agree
with ``dis.stack_effect``, and its argument kinds resolve the arguments of compiled code
the way ``dis`` does.
"""

import dis
import opcode
import re
import sys
import types
from pathlib import Path

import pytest

from framehook_dev import opcode_tables

REPO = Path(__file__).resolve().parents[1]
TABLE = opcode_tables.table_path(REPO)
VERSION = sys.version_info[:2]

PROPERTIES = ["version", "magic", "extended_arg", "cache", "jump_unit", "line_table", "location_entries",
              "exceptions", "deref_index", "call_layout", "compare_shift", "compare_bool_bit", "iterator_slots"]
ARG_KINDS = re.compile(r"-|const|name|name>>[12]|local|local_pair|deref|jump_(forward|backward|absolute)"
                       r"|enum:\w+|small_int|int")
FLAGS = {"terminator", "null_bit", "bool_operand", "borrow", "internal"}


def lines():
    return [line for line in TABLE.read_text().splitlines() if line and not line.startswith("#")]


def properties():
    return dict(line.split(" ") for line in lines() if line.split(" ")[0] in PROPERTIES)


def enums():
    """{kind: {value: name}} of the enum lines."""
    found = {}
    for line in lines():
        if line.startswith("enum "):
            _, kind, value, name = line.split(" ")
            found.setdefault(kind, {})[int(value)] = name
    return found


def ops():
    """{name: (number, caches, arg, effect, jump effect, flags)} of the op lines."""
    found = {}
    for line in lines():
        if line.startswith("op "):
            _, name, number, caches, arg, effect, jump_effect, flags = line.split(" ")
            found[name] = (int(number), int(caches), arg, effect, jump_effect, flags)
    return found


def test_table_matches_this_interpreter():
    diff = opcode_tables.compare(TABLE.read_text(), opcode_tables.table_text())
    assert not diff, (
        f"{TABLE.name} differs from CPython {sys.version.split()[0]}; regenerate it with "
        "`python -m framehook_dev.opcode_tables --write` and review the change:\n" + "\n".join(diff)
    )


def test_table_follows_the_format():
    kinds = [line.split(" ")[0] for line in lines()]
    rest = kinds[len(PROPERTIES):]
    assert kinds[:len(PROPERTIES)] == PROPERTIES
    assert set(rest) == {"enum", "op"} and rest == sorted(rest, key=["enum", "op"].index)
    table = properties()
    assert table["version"] == "{}.{}".format(*VERSION)
    assert table["extended_arg"] == str(opcode.EXTENDED_ARG)
    numbers = [number for number, *_ in ops().values()]
    assert numbers == sorted(numbers)
    for name, (_, _, arg, _, _, flags) in ops().items():
        assert ARG_KINDS.fullmatch(arg), (name, arg)
        assert not arg.startswith("enum:") or arg[5:] in enums(), (name, arg)
        assert flags == "-" or set(flags.split(",")) <= FLAGS, (name, flags)


def test_table_lists_every_opcode_with_its_number_and_caches():
    # A list by opcode in 3.11, a dict by name after (a frozendict from 3.15).
    entries = getattr(opcode, "_inline_cache_entries", {})
    if hasattr(entries, "items"):
        caches = dict(entries)
    else:
        caches = {name: entries[number] for name, number in opcode.opmap.items() if number < len(entries)}
    expected = {
        name: (number, caches.get(name, 0))
        for name, number in opcode.opmap.items()
        if number < 256 and not name.startswith("INSTRUMENTED_")
    }
    assert {name: (number, cache) for name, (number, cache, *_) in ops().items()} == expected


# An expression of the table's grammar: terms; a term is an integer or an optional K* and an atom.
TERM = re.compile(
    r"(?P<sign>[+-]?)(?:(?:(?P<factor>\d+)\*)?(?:(?P<oparg>oparg)|\(oparg&(?P<mask>\d+)\)|\(oparg>>(?P<shift>\d+)\)"
    r"|\(\(oparg>>(?P<shift2>\d+)\)&(?P<mask2>\d+)\)|popcount\(oparg&(?P<popmask>\d+)\)|\(oparg==(?P<equal>\d+)\))"
    r"|(?P<int>\d+))"
)


def evaluate(expression, oparg):
    """The value of a table expression, read by the format's grammar (not the generator's)."""
    total, position = 0, 0
    while position < len(expression):
        term = TERM.match(expression, position)
        assert term and term.end() > position and (term["sign"] or position == 0), (expression, position)
        group = {key: int(value) for key, value in term.groupdict().items() if value and key not in ("sign", "oparg")}
        if "int" in group:
            value = group["int"]
        elif term["oparg"]:
            value = oparg
        elif "mask" in group:
            value = oparg & group["mask"]
        elif "shift" in group:
            value = oparg >> group["shift"]
        elif "shift2" in group:
            value = (oparg >> group["shift2"]) & group["mask2"]
        elif "popmask" in group:
            value = bin(oparg & group["popmask"]).count("1")
        else:
            value = int(oparg == group["equal"])
        value *= group.get("factor", 1)
        total += -value if term["sign"] == "-" else value
        position = term.end()
    return total


def test_expression_grammar():
    assert evaluate("0", 5) == 0
    assert evaluate("-1-popcount(oparg&15)", 0b10110) == -3
    assert evaluate("(oparg&255)+(oparg>>8)-1", 0x203) == 4
    assert evaluate("1-2*oparg", 3) == -5
    assert evaluate("-2+((oparg>>2)&1)+(oparg==3)", 7) == -1
    for outside in ("oparg*2", "1 - oparg", "1oparg", "(oparg|1)", "-1-"):
        with pytest.raises(AssertionError):
            evaluate(outside, 1)


def test_stack_effects_agree_with_dis():
    samples = [0, 1, 2, 3, 4, 5, 7, 8, 15, 16, 17, 31, 255, 256, 257, 258, 1000, 4095, 65535, 65536, 1 << 20]
    checked = 0
    for name, (number, _, arg, effect, jump_effect, _) in ops().items():
        if effect == "?":
            continue
        for oparg in samples if arg != "-" else [None]:
            for jump, text in ((False, effect), (True, effect if jump_effect == "=" else jump_effect)):
                try:
                    expected = dis.stack_effect(number, oparg, jump=jump)
                except ValueError:
                    continue
                assert evaluate(text, oparg or 0) == expected, (name, oparg, jump, text)
                checked += 1
    assert checked > 1000


def test_iterator_slots_are_what_an_exhausted_loop_pops():
    """The exhausted path of a compiled ``for`` loop (``FOR_ITER``'s jump, then what runs at
    its target before the code after the loop) pops exactly ``iterator_slots`` values."""
    rows = ops()
    slots = int(properties()["iterator_slots"])
    code = compile("def f(y):\n    for x in y:\n        pass\n    return 1\n", "<tables>", "exec").co_consts[0]
    instructions = list(dis.get_instructions(code))
    loop = next(i for i in instructions if i.opname == "FOR_ITER")
    depth = slots + dis.stack_effect(loop.opcode, loop.arg, jump=True)
    popping = [i for i in instructions if i.offset >= loop.argval]
    while depth > 0:
        instruction = popping.pop(0)
        assert instruction.opname in ("END_FOR", "POP_ITER", "POP_TOP"), instruction
        depth += dis.stack_effect(instruction.opcode, instruction.arg if rows[instruction.opname][2] != "-" else None)
    assert depth == 0 and popping[0].opname not in ("END_FOR", "POP_ITER", "POP_TOP")


# Code that uses most opcodes with an argument; the argument kinds must resolve them as dis does.
SOURCES = [
    """
import os.path as p
from os import sep
g = 0
def f(a, b=1, *args, k=2, **kw):
    global g
    x = [i * 2 for i in range(a) if i]
    y = {i: j for i, j in kw.items()}
    c = 3
    def inner():
        nonlocal c
        c += a
        return c, x, any(v for v in x)
    del y
    while a:
        a -= 1
        if a > b and not k or a is None or a is not sep:
            continue
        elif a <= 3 or a >= 4 or a == 5 or a in x:
            break
    else:
        g = (a, b) if a != b else -a
    for i in args:
        try:
            p.join(i, *args, **kw)
        except (OSError, ValueError) as e:
            raise RuntimeError from e
        finally:
            x.append(i)
    with open(a) as h, open(b):
        h.read()
    first, *rest = args
    x[0:2] = x[a:b]
    assert a, f"{a!r:>{b}} {c}"
    if a:
""" + "        x = a\n" * 150 + """
    return inner, lambda: (yield from args)
class C(B):
    z = 1
    def m(self):
        return super().m(self.z), __class__
def outer(v):
    class K:
        w = v
    return K
async def co(s):
    async for i in s:
        await i
    async with s as t:
        return [j async for j in t]
def more(a, b):
    global g
    s = {a, b}
    a.b = {v for v in s}
    del a.b, g
    x = 1
    del x
    print(x)
    c = a or b and a
    d = a[1:b:2]
    f(a=1, *s)
    while a is not None:
        a = a.next
    def h():
        nonlocal c
        del c
    return d, h, more(b=a)
del sep
""",
]
if VERSION >= (3, 10):
    SOURCES.append("""
def m(a):
    match a:
        case [1, *r]: return r
        case {"k": v, **kw}: return v
        case C(x=1) | None: return 0
        case _: return -1
""")
if VERSION >= (3, 11):
    SOURCES.append("try:\n    pass\nexcept* ValueError:\n    pass\n")
if VERSION >= (3, 12):
    SOURCES.append("type T[X] = list[X]\ndef gen[U](x: U) -> U:\n    return x\n")
if VERSION >= (3, 14):
    SOURCES.append('t"{a!r:>{b}}"\n')


def code_objects(code):
    yield code
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            yield from code_objects(constant)


UNCHECKED = object()


def resolve(kind, instruction, caches, code, table, values):
    """What the argument of ``instruction`` names by the table's rules (dis's ``argval``)."""
    oparg = instruction.arg
    cells = [c for c in code.co_cellvars if c not in code.co_varnames]
    locals_plus = [*code.co_varnames, *cells, *code.co_freevars]
    by_slot = table["deref_index"] == "localsplus"
    variables = locals_plus if by_slot else code.co_varnames
    unit = 2 if table["jump_unit"] == "units" else 1
    after = instruction.offset + 2 + 2 * caches
    if kind == "const":
        return code.co_consts[oparg]
    if kind.startswith("name"):
        return code.co_names[oparg >> int(kind[6:] or 0)]
    if kind == "local":
        return variables[oparg]
    if kind == "local_pair":
        return variables[oparg >> 4], variables[oparg & 15]
    if kind == "deref":
        return locals_plus[oparg] if by_slot else (code.co_cellvars + code.co_freevars)[oparg]
    if kind == "jump_forward":
        return after + unit * oparg
    if kind == "jump_backward":
        return after - unit * oparg
    if kind == "jump_absolute":
        return unit * oparg
    if kind == "enum:compare":
        return values["compare"][oparg >> int(table["compare_shift"])]
    if kind == "small_int":
        return oparg
    return UNCHECKED


def test_argument_kinds_resolve_compiled_code_as_dis_does():
    table, rows, values = properties(), ops(), enums()
    checked = set()
    for source in SOURCES:
        for code in code_objects(compile(source, "<tables>", "exec")):
            for instruction in dis.get_instructions(code):
                number, caches, kind, *_ = rows[instruction.opname]
                assert instruction.opcode == number
                expected = resolve(kind, instruction, caches, code, table, values)
                if expected is not UNCHECKED:
                    # 3.11's dis resolves no constant but LOAD_CONST's (KW_NAMES: <unknown>).
                    if instruction.argval is not getattr(dis, "UNKNOWN", UNCHECKED):
                        assert instruction.argval == expected, (instruction, kind)
                elif kind.startswith("enum:"):
                    assert instruction.arg in values[kind[5:]], (instruction, kind)
                elif kind == "-":
                    assert not instruction.arg, instruction
                checked.add(kind)
    assert {"const", "local", "deref", "jump_forward", "enum:compare"} <= checked
