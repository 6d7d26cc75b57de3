"""The checked-in opcode tables match the running interpreter.

Each table (``crates/framehook-bytecode/tables/cpython-3.X.txt``) is generated from the
interpreter by ``python -m framehook_dev.opcode_tables``; regenerating it here and
comparing makes a patch release that changes an opcode, an argument's meaning or a stack
effect fail loudly. Free-threaded and debug builds must match their sibling's table. The
stack-effect expressions are also evaluated independently of the generator's fitter.
"""

import dis
import opcode
import sys
from pathlib import Path

from framehook_dev import opcode_tables

REPO = Path(__file__).resolve().parents[1]
TABLE = opcode_tables.table_path(REPO)


def checked_in():
    return TABLE.read_text()


def ops():
    """(name, number, caches, arg, effect, jump effect, flags) per op line."""
    return [line.split(" ")[1:] for line in checked_in().splitlines() if line.startswith("op ")]


def test_table_matches_this_interpreter():
    diff = opcode_tables.compare(checked_in(), opcode_tables.table_text())
    assert not diff, (
        f"{TABLE.name} differs from CPython {sys.version.split()[0]}; regenerate it with "
        "`python -m framehook_dev.opcode_tables --write` and review the change:\n" + "\n".join(diff)
    )


def test_table_lists_every_opcode_with_its_number_and_caches():
    listed = {name: (int(number), int(caches)) for name, number, caches, *_ in ops()}
    expected = {
        name: (number, opcode_tables._caches(name, number))
        for name, number in opcode.opmap.items()
        if number < 256 and not name.startswith("INSTRUMENTED_")
    }
    assert listed == expected


def evaluate(expression, oparg):
    """The table's expression grammar, evaluated the simple way (Python's own parser)."""
    python = expression.replace("popcount(", "_popcount(").replace("==", " == ")
    return int(eval(python, {"oparg": oparg, "_popcount": lambda v: bin(v).count("1")}))


def test_stack_effects_agree_with_dis():
    samples = [0, 1, 2, 3, 4, 7, 15, 16, 255, 256, 257, 1000, 65535, 65536]
    checked = 0
    for name, number, _, arg, effect, jump_effect, _ in ops():
        if effect == "?":
            continue
        number = int(number)
        for oparg in samples if arg != "-" else [None]:
            for jump, text in ((False, effect), (True, effect if jump_effect == "=" else jump_effect)):
                try:
                    expected = dis.stack_effect(number, oparg, jump=jump)
                except ValueError:
                    continue
                assert evaluate(text, oparg or 0) == expected, (name, oparg, jump, text)
                checked += 1
    assert checked > 500
