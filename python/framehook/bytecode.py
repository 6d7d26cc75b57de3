"""framehook's bytecode layer: CPython 3.9-3.15 bytecode, decoded and assembled in Rust.

- ``decode(code)``: the code object's instructions in the canonical instruction set, the
  one SOT's translator understands on every version (``canonical=False``: the running
  version's own instructions, arguments whole, caches and ``EXTENDED_ARG`` left out).
  Printing the result lists them like ``dis``.
- ``reassemble(code, *, via_ir=True)``: a new code object that behaves as ``code``: raised
  to the canonical instruction set and lowered back (``via_ir=False``: the running version's
  instructions re-encoded; the result equals ``code`` byte for byte).

Both raise ``TypeError`` for anything but a code object and ``ValueError`` naming the code
object and the problem for malformed bytecode. The opcode tables behind them are generated
from each interpreter (``crates/framehook-bytecode/tables``).
"""

from __future__ import annotations

import types
from collections.abc import Iterator, Sequence
from typing import NamedTuple, Optional, overload

from . import _native

if not hasattr(_native, "_bytecode_decode"):
    # The binding is a PyO3 module part, which framehook adds to the main interpreter only.
    raise ImportError("framehook.bytecode is available in the main interpreter only, not in sub-interpreters")

__all__ = ["Bytecode", "Instruction", "decode", "reassemble"]


class Instruction(NamedTuple):
    """One instruction; ``target`` and ``handler[0]`` are positions of instructions."""

    position: int
    name: str
    arg: Optional[int]
    argval: object
    argrepr: str
    target: Optional[int]
    # (line, end line, column, end column); None where unknown.
    positions: tuple[Optional[int], Optional[int], Optional[int], Optional[int]]
    # (target, stack depth, whether the raising instruction's offset is pushed), or None.
    handler: Optional[tuple[int, int, bool]]

    @property
    def lineno(self) -> Optional[int]:
        return self.positions[0]


class Bytecode(Sequence[Instruction]):
    """A code object's instructions; ``str()`` lists them like ``dis``."""

    def __init__(self, code: types.CodeType, instructions: list[Instruction], canonical: bool) -> None:
        self.code = code
        self.canonical = canonical
        self._instructions = instructions

    @overload
    def __getitem__(self, index: int) -> Instruction: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[Instruction]: ...
    def __getitem__(self, index: int | slice) -> Instruction | Sequence[Instruction]:
        return self._instructions[index]

    def __len__(self) -> int:
        return len(self._instructions)

    def __iter__(self) -> Iterator[Instruction]:
        return iter(self._instructions)

    def __repr__(self) -> str:
        kind = "canonical" if self.canonical else "raw"
        return f"<Bytecode of {self.code.co_name}: {len(self)} {kind} instructions>"

    def __str__(self) -> str:
        targets = {i.target for i in self._instructions} | {i.handler[0] for i in self._instructions if i.handler}
        lines = []
        last_line = None
        for instruction in self._instructions:
            line = instruction.lineno
            shown_line = f"{line:>5}" if line is not None and line != last_line else "     "
            last_line = line if line is not None else last_line
            marker = ">>" if instruction.position in targets else "  "
            arg = "" if instruction.arg is None else str(instruction.arg)
            handler = ""
            if instruction.handler:
                target, depth, lasti = instruction.handler
                handler = f"  [-> {target} depth {depth}{' lasti' if lasti else ''}]"
            detail = f"({instruction.argrepr})" if instruction.argrepr else ""
            text = f"{shown_line} {marker}{instruction.position:>5} {instruction.name:<28} {arg:>5} {detail}{handler}"
            lines.append(text.rstrip())
        return "\n".join(lines)


def decode(code: types.CodeType, *, canonical: bool = True) -> Bytecode:
    """The instructions of ``code``: canonical, or the running version's own."""
    rows = _native._bytecode_decode_canonical(code) if canonical else _native._bytecode_decode(code)
    instructions = [Instruction(position, *row) for position, row in enumerate(rows)]
    return Bytecode(code, instructions, canonical)


def reassemble(code: types.CodeType, *, via_ir: bool = True) -> types.CodeType:
    """A new code object equivalent to ``code``, through the canonical instructions or not."""
    return _native._bytecode_reassemble(code, via_ir)
