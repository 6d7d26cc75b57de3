"""The bytecode layer against the ``bytecode`` package (3.11+), on instruction sequences
generated property-based with ``bytecode``'s own API.

Each example is a stack-balanced function body of constant loads, pops, tuples,
``COPY``/``SWAP``, binary operators, forward conditional jumps, loops with a backward jump,
and ``try`` regions (``TryBegin``/``TryEnd``, with and without ``lasti``, nested, with
values left on the stack around them so handler depths vary), which ``bytecode`` assembles
into a code object with its own stack size and exception table. framehook decodes that
code object and encodes it again (``reassemble(code, via_ir=False)``), computing both anew:
they must be the same, and ``co_code`` too. Through the canonical instructions
(``via_ir=True``) the result must run and give what ``bytecode``'s code gives.
"""

import dis
import opcode
import sys
import types

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

if sys.version_info < (3, 11):
    pytest.skip("the bytecode package's releases for 3.9 and 3.10 (0.17) predate exception tables",
                allow_module_level=True)

bc = pytest.importorskip("bytecode", reason="the bytecode package is a test requirement on 3.11+")

from framehook import bytecode  # noqa: E402

# The stack slots GET_ITER leaves: an iterator, and on 3.15+ beside it a NULL or an index.
_GET_ITER = opcode.opmap["GET_ITER"]
ITERATOR_SLOTS = 1 + dis.stack_effect(_GET_ITER, 0 if _GET_ITER >= opcode.HAVE_ARGUMENT else None)

# 3.13+ conditional jumps take an exact bool, which the compiler makes with TO_BOOL.
CONDITIONAL_NEEDS_BOOL = "TO_BOOL" in opcode.opmap
# 3.11 names its forward conditional jumps by direction.
FORWARD_JUMPS = [
    name if name in opcode.opmap else name.replace("POP_JUMP_IF", "POP_JUMP_FORWARD_IF")
    for name in ("POP_JUMP_IF_FALSE", "POP_JUMP_IF_TRUE")
]


def binary_add():
    return bc.Instr("BINARY_OP", bc.BinaryOp.ADD)


class Builder:
    """Instructions for a body, tracking the stack depth so every sequence is valid."""

    def __init__(self, draw):
        self.draw = draw
        self.instrs = []
        self.depth = 0
        self.budget = 40
        # Stack positions (from the bottom) no instruction may copy: a loop's index that
        # 3.15+ keeps beside a tuple it iterates as a tagged int, only the interpreter's.
        self.hidden = set()

    def emit(self, *instrs):
        self.instrs.extend(instrs)

    def push(self):
        self.emit(bc.Instr("LOAD_CONST", self.draw(st.integers(0, 3))))
        self.depth += 1

    def body(self, nesting):
        """Straight-line and nested pieces that leave the depth where they found it."""
        start = self.depth
        for _ in range(self.draw(st.integers(1, 6))):
            if self.budget <= 0:
                break
            self.budget -= 1
            kinds = ["push", "pop", "tuple", "copy", "swap", "add"]
            if nesting < 3:
                kinds += ["if", "loop", "try", "try"]
            kind = self.draw(st.sampled_from(kinds))
            if kind == "push" or (kind in ("pop", "tuple", "copy", "swap", "add") and self.depth == start):
                self.push()
            elif kind == "pop":
                self.emit(bc.Instr("POP_TOP"))
                self.depth -= 1
            elif kind == "tuple":
                n = self.draw(st.integers(1, self.depth - start))
                self.emit(bc.Instr("BUILD_TUPLE", n))
                self.depth += 1 - n
            elif kind == "copy":
                copyable = [i for i in range(1, self.depth + 1) if self.depth - i not in self.hidden]
                self.emit(bc.Instr("COPY", self.draw(st.sampled_from(copyable))))
                self.depth += 1
            elif kind == "swap" and self.depth - start >= 2:
                self.emit(bc.Instr("SWAP", self.draw(st.integers(2, self.depth - start))))
            elif kind == "add" and self.depth - start >= 2:
                self.emit(binary_add())
                self.depth -= 1
            elif kind == "if":
                self.conditional(nesting)
            elif kind == "loop":
                self.loop(nesting)
            elif kind == "try":
                self.try_region(nesting)
        while self.depth > start:
            self.emit(bc.Instr("POP_TOP"))
            self.depth -= 1

    def conditional(self, nesting):
        skip = bc.Label()
        self.emit(bc.Instr("LOAD_CONST", self.draw(st.booleans())))
        if CONDITIONAL_NEEDS_BOOL:
            self.emit(bc.Instr("TO_BOOL"))
        self.emit(bc.Instr(self.draw(st.sampled_from(FORWARD_JUMPS)), skip))
        self.body(nesting + 1)
        self.emit(skip)

    def loop(self, nesting):
        """``for _ in range(n)`` by hand: GET_ITER, FOR_ITER, a body, a backward jump."""
        head, done = bc.Label(), bc.Label()
        self.emit(bc.Instr("LOAD_CONST", (1, 2)), bc.Instr("GET_ITER"), head, bc.Instr("FOR_ITER", done),
                  bc.Instr("POP_TOP"))
        below = self.depth
        self.depth += ITERATOR_SLOTS
        self.hidden.update(range(below + 1, self.depth))
        self.body(nesting + 1)
        self.hidden.difference_update(range(below + 1, self.depth))
        self.emit(bc.Instr("JUMP_BACKWARD", head), done)
        if sys.version_info >= (3, 12):
            self.emit(bc.Instr("END_FOR"))
        if sys.version_info >= (3, 13):
            self.emit(bc.Instr("POP_TOP") if sys.version_info < (3, 14) else bc.Instr("POP_ITER"))
        self.depth -= ITERATOR_SLOTS

    def try_region(self, nesting):
        """A protected body; the handler re-raises (lasti, if pushed, under the exception)."""
        handler, after = bc.Label(), bc.Label()
        begin = bc.TryBegin(handler, push_lasti=self.draw(st.booleans()))
        self.emit(begin)
        before = len(self.instrs)
        self.body(nesting + 1)
        if len(self.instrs) == before:
            # An empty try body makes bytecode write an entry covering nothing, which CPython
            # never writes and framehook leaves out (both ignore it when running).
            self.emit(bc.Instr("NOP"))
        self.emit(bc.TryEnd(begin), bc.Instr("JUMP_FORWARD", after), handler, bc.Instr("RERAISE", 0), after)


@st.composite
def functions(draw):
    builder = Builder(draw)
    builder.emit(bc.Instr("RESUME", 0))
    for _ in range(draw(st.integers(0, 3))):
        builder.push()  # values that stay on the stack under everything else
    builder.body(0)
    while builder.depth:
        builder.emit(bc.Instr("POP_TOP"))
        builder.depth -= 1
    builder.emit(bc.Instr("LOAD_CONST", "done"), bc.Instr("RETURN_VALUE"))
    code = bc.Bytecode(builder.instrs)
    code.first_lineno = 1
    code.name = "generated"
    try:
        return code.to_code()
    except Exception as error:  # bytecode refuses the sequence: not an example
        from hypothesis import reject

        del error
        reject()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(functions())
def test_stack_size_and_exception_table_match_bytecode(code):
    again = bytecode.reassemble(code, via_ir=False)
    assert again.co_stacksize == code.co_stacksize
    assert again.co_exceptiontable == code.co_exceptiontable
    assert again.co_code == code.co_code


def outcome(code):
    """What running ``code`` gives: its result, or the exception it raises."""
    try:
        return types.FunctionType(code, {})()
    except Exception as error:  # operators on mixed values may raise; both must raise alike
        return type(error), str(error)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(functions())
def test_canonical_round_trip_runs_the_same(code):
    again = bytecode.reassemble(code)
    assert outcome(again) == outcome(code)


SOURCES = {
    "try_finally": "def f(x):\n    try:\n        return x()\n    finally:\n        x = None\n",
    "nested_with": "def f(a, b):\n    with a as x, b:\n        try:\n            return [i for i in x]\n"
                   "        except (KeyError, ValueError) as e:\n            return e\n",
    "async_with": "async def f(a):\n    async with a as x:\n        async for i in x:\n            await i\n",
    "match": "def f(p):\n    match p:\n        case [1, *rest] if rest:\n            return rest\n"
             "        case {'k': v}:\n            return v\n        case _:\n            return None\n",
    "except_star": "def f(g):\n    found = None\n    try:\n        g()\n    except* ValueError as e:\n"
                   "        found = e\n    return found\n",
}


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_real_functions_agree_with_bytecode(name):
    namespace = {}
    exec(compile(SOURCES[name], name, "exec"), namespace)
    code = namespace["f"].__code__
    theirs = bc.Bytecode.from_code(code).to_code()
    ours = bytecode.reassemble(code, via_ir=False)
    assert ours.co_stacksize == theirs.co_stacksize == code.co_stacksize
    assert ours.co_exceptiontable == theirs.co_exceptiontable == code.co_exceptiontable
