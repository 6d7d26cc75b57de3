"""The program generator of ``framehook_dev.sot_fuzz``: random Python functions over
templates x values, deterministic from a seed, in a form the shrinker can take apart.

A ``Case`` is a function ``f(a, b, c)`` whose body is a list of ``Fragment``s (each a block
of statements that appends what it computes to the list ``r``, which ``f`` returns) and
three argument expressions (source text, evaluated in the helpers' namespace, so that a
reproducer is plain text). Every fragment and argument carries simpler alternatives, which
the shrinker tries in order.

The generator, not the comparator, keeps the eager run deterministic: no ``id()``, no
``hash()``, no repr of objects without their own ``__repr__``, no unbounded loops or
allocations (repetition, ``**``, ``<<`` and ``range`` only with small literals; ints are
either small or past the index range, so ``seq * n`` fails at once).
"""

from __future__ import annotations

import random
import sys
from dataclasses import dataclass, field, replace
from typing import Callable, Optional

PARAMS = ("a", "b", "c")
HAS_MATCH = sys.version_info >= (3, 10)

# Exec'd once per process under a file name of its own: the translator never enters files
# under the interpreter's library directories, where this package is installed.
HELPERS_FILENAME = "<sot_fuzz helpers>"
HELPERS = '''
import collections
import collections.abc
import contextlib
import math
import warnings

import numpy as np

nan = float("nan")
inf = float("inf")


class Sized:
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if not 0 <= i < self.n:
            raise IndexError("Sized index out of range")
        return i * 2

    def __repr__(self):
        return f"Sized({self.n})"


class Truthy:
    def __init__(self, flag):
        self.flag = flag

    def __bool__(self):
        return self.flag

    def __repr__(self):
        return f"Truthy({self.flag})"


class BadBool:
    def __bool__(self):
        raise ValueError("BadBool has no truth")

    def __repr__(self):
        return "BadBool()"


class EqAll:
    def __eq__(self, other):
        return True

    def __hash__(self):
        return 7

    def __repr__(self):
        return "EqAll()"


class Hashy:
    def __init__(self, v):
        self.v = v

    def __eq__(self, other):
        return isinstance(other, Hashy) and other.v == self.v

    def __hash__(self):
        return hash(self.v)

    def __lt__(self, other):
        return self.v < other.v

    def __repr__(self):
        return f"Hashy({self.v!r})"


class Slotted:
    __slots__ = ("p", "q")

    def __init__(self, p, q):
        self.p = p
        self.q = q

    def __repr__(self):
        return f"Slotted({self.p!r}, {self.q!r})"


class HalfSlotted:
    """Slots, the second set only when given: an unset slot raises AttributeError."""
    __slots__ = ("p", "q")

    def __init__(self, p, *q):
        self.p = p
        if q:
            self.q = q[0]

    def __repr__(self):
        return f"HalfSlotted({self.p!r}{', ' + repr(self.q) if hasattr(self, 'q') else ''})"


class Shadow:
    """A method an instance may shadow with an attribute of its own."""

    def __init__(self, own):
        if own:
            self.get = lambda: "own"
            self.double = 2

    def get(self):
        return "class"

    def double(self):
        return "class double"

    def __repr__(self):
        return f"Shadow({'get' in vars(self)})"


class PlainTuple(tuple):
    """A tuple subclass overriding nothing: its slices are tuples."""


class Dyn:
    def __init__(self):
        self.real = 5

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        return "dyn:" + name

    def __repr__(self):
        return "Dyn()"


class Prop:
    def __init__(self, v):
        self.v = v

    @property
    def double(self):
        return self.v * 2

    @property
    def boom(self):
        raise AttributeError("boom is not here")

    @property
    def bad(self):
        raise ValueError("bad property")

    def __repr__(self):
        return f"Prop({self.v!r})"


class Point:
    __match_args__ = ("x", "y")

    def __init__(self, x, y):
        self.x = x
        self.y = y

    def __eq__(self, other):
        return isinstance(other, Point) and (self.x, self.y) == (other.x, other.y)

    def __hash__(self):
        return hash((self.x, self.y))

    def __add__(self, other):
        if isinstance(other, Point):
            return Point(self.x + other.x, self.y + other.y)
        return NotImplemented

    def __lt__(self, other):
        return (self.x, self.y) < (other.x, other.y)

    def __repr__(self):
        return f"Point({self.x!r}, {self.y!r})"


class Bag:
    def __init__(self, **fields):
        self.__dict__.update(fields)

    def __repr__(self):
        return "Bag(" + ", ".join(f"{k}={v!r}" for k, v in sorted(self.__dict__.items())) + ")"


class Seq:
    def __init__(self, n):
        self.n = n

    def __getitem__(self, i):
        if isinstance(i, int) and 0 <= i < self.n:
            return i + 10
        raise IndexError(i)

    def __repr__(self):
        return f"Seq({self.n})"


class Box:
    def __init__(self, item):
        self.item = item

    def get(self):
        return self.item

    def __repr__(self):
        return f"Box({self.item!r})"


class DictSub(dict):
    def __getitem__(self, key):
        return ("sub", key)

    def keys(self):
        return ["only"]

    def __repr__(self):
        return f"DictSub({dict(self)!r})"


class DictMissing(dict):
    def __missing__(self, key):
        return ("missing", key)


class DictIter(dict):
    def __iter__(self):
        return iter(["zz"])

    def __len__(self):
        return 42

    def __contains__(self, key):
        return key == "zz"


class ListSub(list):
    def __iter__(self):
        return iter(list.__getitem__(self, slice(None, None, -1)))

    def __len__(self):
        return list.__len__(self) + 1

    def __contains__(self, item):
        return True

    def __repr__(self):
        return f"ListSub({list.__getitem__(self, slice(None))!r})"


class ListGet(list):
    def __getitem__(self, i):
        return ("got", i)

    def append(self, item):
        list.append(self, ("appended", item))


class StrSub(str):
    def upper(self):
        return "UP"

    def __len__(self):
        return 99

    def __eq__(self, other):
        return True

    def __hash__(self):
        return 3

    def __repr__(self):
        return f"StrSub({str.__str__(self)!r})"


class IntSub(int):
    def __add__(self, other):
        return "added"

    def __bool__(self):
        return False

    def __repr__(self):
        return f"IntSub({int.__int__(self)})"


class FloatSub(float):
    def __round__(self, ndigits=None):
        return "rounded"

    def __abs__(self):
        return "abs"


class TupleSub(tuple):
    def __getitem__(self, i):
        return "tuple-sub"

    def __len__(self):
        return 0


class Tracker:
    """A context manager recording its calls into the list it is given."""

    def __init__(self, log, swallow=False):
        self.log = log
        self.swallow = swallow

    def __enter__(self):
        self.log.append("enter")
        return self

    def __exit__(self, kind, value, tb):
        self.log.append(("exit", None if kind is None else kind.__name__))
        return self.swallow


class Countdown:
    """An iterator class (``__iter__``/``__next__``)."""

    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return self

    def __next__(self):
        if self.n <= 0:
            raise StopIteration
        self.n -= 1
        return self.n

    def __repr__(self):
        return f"Countdown({self.n})"
'''


@dataclass(frozen=True)
class Value:
    """An argument: source text, its kind, and simpler texts of (roughly) the same kind."""

    expr: str
    kind: str
    simpler: tuple[str, ...] = ()


@dataclass(frozen=True)
class Fragment:
    """A block of statements (lines without the function's indentation)."""

    template: str
    lines: tuple[str, ...]
    simpler: tuple[Fragment, ...] = ()


@dataclass(frozen=True)
class Case:
    """One generated function and its arguments."""

    seed: str
    args: tuple[Value, ...]
    body: tuple[Fragment, ...]
    prelude: tuple[str, ...] = field(default=())
    # Arguments of a later call, mostly of the same kinds: what the first call's
    # translation guards must tell apart from `args`.
    later: tuple[Value, ...] = field(default=())

    def source(self) -> str:
        lines = [f"def f({', '.join(PARAMS)}):", "    r = []"]
        for fragment in self.body:
            lines += ["    " + line for line in fragment.lines]
        lines.append("    return r")
        return "\n".join(lines) + "\n"

    def templates(self) -> list[str]:
        return [fragment.template for fragment in self.body]

    def with_body(self, body: tuple[Fragment, ...]) -> Case:
        return replace(self, body=body)

    def with_arg(self, index: int, value: Value) -> Case:
        args = list(self.args)
        args[index] = value
        return replace(self, args=tuple(args))


# ------------------------------------------------------------- values

SMALL_INTS = ("0", "1", "-1", "2", "3", "7", "-5", "True", "False")
BIG_INTS = ("2**63", "-2**63 - 1", "10**20", "2**100")  # past the index range: seq * n fails at once
FLOATS = ("0.0", "-0.0", "1.5", "-2.5", "nan", "inf", "-inf", "1e300", "0.1", "3.0")
STRS = ("''", "'a'", "'ab'", "'abc'", "'h\\xe9llo'", "'3'", "'k'", "'keys'", "' x y '")
BYTES = ("b''", "b'xy'", "b'\\x00\\xff'")
COMPLEXES = ("1j", "(1+2j)", "complex(nan, 0)", "-0j", "(3-0j)")
RANGES = ("range(0)", "range(3)", "range(1, 7, 2)", "range(5, -3, -2)")
NP_SCALARS = ("np.float64(1.5)", "np.float32(nan)", "np.int64(-3)", "np.int32(7)", "np.bool_(True)",
              "np.bool_(False)", "np.float64(-0.0)", "np.uint8(200)", "np.complex128(1j)", "np.float64(inf)",
              "np.int64(0)")
USER_VALUES = ("Sized(0)", "Sized(3)", "Truthy(False)", "Truthy(True)", "BadBool()", "EqAll()", "Hashy(2)",
               "Slotted(1, [2])", "Dyn()", "Prop(3)", "Point(1, 2)", "Bag(v=1, w=[2])", "Seq(3)", "Box([1])",
               "Countdown(3)", "HalfSlotted(1)", "HalfSlotted(1, 2)", "Shadow(False)", "Shadow(True)")
SUBCLASS_VALUES = ("DictSub({'k': 1, 'v': 2})", "DictMissing({'k': 1})", "DictIter({'k': 1})",
                   "ListSub([1, 2, 3])", "ListGet([1, 2])", "StrSub('ab')", "IntSub(3)", "FloatSub(2.5)",
                   "TupleSub((1, 2))", "PlainTuple((1, 2, 3))")
STDLIB_VALUES = ("collections.OrderedDict([('k', 1), ('v', 2)])", "collections.defaultdict(int, {'k': 1})",
                 "collections.Counter('abca')", "collections.deque([1, 2])",
                 "collections.namedtuple('NT', 'x y')(1, 2)")
DTYPES = ("float64", "float32", "int64", "int32", "bool_", "complex128", "uint8")
SHAPES = ((), (0,), (1,), (3,), (2, 3), (4,))


def pick(rng: random.Random, options: tuple[str, ...]) -> str:
    return options[rng.randrange(len(options))]


def scalar_text(rng: random.Random) -> str:
    return pick(rng, rng.choice((SMALL_INTS, FLOATS[:6], STRS[:6], ("None", "(1, 2)", "b'x'"))))


def array_value(rng: random.Random) -> Value:
    dtype = rng.choice(DTYPES)
    shape = rng.choice(SHAPES)
    count = 1
    for n in shape:
        count *= n
    if dtype in ("float64", "float32", "complex128"):
        pool = ("1.0", "-2.0", "0.5", "0.0", "-0.0", "3.0", "nan", "inf", "-inf")
        weights = (5, 5, 5, 3, 1, 5, 1, 1, 1)
    elif dtype == "bool_":
        pool, weights = ("True", "False"), (1, 1)
    elif dtype == "uint8":
        pool, weights = ("0", "1", "3", "255"), (1, 3, 3, 1)
    else:
        pool, weights = ("0", "1", "-2", "3", "5"), (1, 3, 2, 3, 2)
    data = [rng.choices(pool, weights)[0] for _ in range(count)]
    flat = f"np.array([{', '.join(data)}], dtype=np.{dtype})"
    expr = flat if len(shape) == 1 else (f"np.array({data[0]}, dtype=np.{dtype})" if not shape
                                         else f"{flat}.reshape({shape})")
    simpler = (f"np.ones(3, dtype=np.{dtype})", "np.ones(3)", "np.float64(1.0)", "1.0")
    return Value(expr, "ndarray", simpler)


def container_value(rng: random.Random, kind: str, depth: int = 0) -> Value:
    n = rng.choice((0, 1, 2, 2, 3, 4))
    if kind in ("set", "frozenset"):
        items = [pick(rng, SMALL_INTS[:7] + STRS[1:5] + ("1.5", "nan", "None", "(1, 2)")) for _ in range(n)]
    elif depth < 1 and rng.random() < 0.25:
        items = [container_value(rng, rng.choice(("list", "tuple", "dict")), depth + 1).expr for _ in range(n)]
    else:
        items = [scalar_text(rng) for _ in range(n)]
    if kind == "list":
        return Value(f"[{', '.join(items)}]", kind, ("[]", "[1]", "[1, 2]"))
    if kind == "tuple":
        return Value(f"({', '.join(items)}{',' if len(items) == 1 else ''})", kind, ("()", "(1,)", "(1, 2)"))
    if kind == "set":
        return Value("{" + ", ".join(items) + "}" if items else "set()", kind, ("set()", "{1}", "{1, 2}"))
    if kind == "frozenset":
        return Value(f"frozenset({{{', '.join(items)}}})" if items else "frozenset()", kind,
                     ("frozenset()", "frozenset({1})"))
    keys = [pick(rng, ("'k'", "'v'", "'keys'", "1", "2", "'x'", "0", "None")) for _ in range(n)]
    return Value("{" + ", ".join(f"{k}: {v}" for k, v in zip(keys, items)) + "}", "dict",
                 ("{}", "{'k': 1}", "{1: 2}"))


def random_value(rng: random.Random, kind: Optional[str] = None) -> Value:
    """A value of ``kind``, or of a random kind."""
    kind = kind or rng.choices(
        ("int", "bigint", "float", "str", "bytes", "list", "tuple", "dict", "set", "frozenset", "range",
         "complex", "None", "ndarray", "npscalar", "user", "subclass", "stdlib"),
        (8, 2, 6, 5, 2, 7, 4, 6, 3, 2, 2, 2, 2, 14, 5, 6, 6, 3))[0]
    if kind in ("list", "tuple", "dict", "set", "frozenset"):
        return container_value(rng, kind)
    if kind == "ndarray":
        return array_value(rng)
    table = {"int": (SMALL_INTS, ("0", "1")), "bigint": (BIG_INTS, ("2**63", "1")),
             "float": (FLOATS, ("0.0", "1.5")), "str": (STRS, ("''", "'a'")), "bytes": (BYTES, ("b''",)),
             "range": (RANGES, ("range(0)", "range(3)")), "complex": (COMPLEXES, ("1j",)),
             "None": (("None",), ()), "npscalar": (NP_SCALARS, ("np.float64(1.5)", "1.5")),
             "user": (USER_VALUES, ("Box(1)", "Bag(v=1)")), "subclass": (SUBCLASS_VALUES, ()),
             "stdlib": (STDLIB_VALUES, ())}
    options, simpler = table[kind]
    return Value(pick(rng, options), kind, simpler)


# ------------------------------------------------------------- expressions

ATTRS = ("keys", "append", "shape", "real", "imag", "upper", "v", "p", "q", "x", "missing", "__len__", "dtype",
         "T", "count", "items", "bit_length", "conjugate", "double", "boom", "bad", "n", "get", "sort", "add",
         "startswith", "ndim", "size", "item", "__iter__", "flag", "index", "copy")
TYPES = ("int", "float", "str", "list", "dict", "tuple", "set", "frozenset", "bool", "complex", "bytes",
         "np.ndarray", "np.generic", "np.floating", "np.integer", "(list, tuple)", "(int, float)", "object",
         "type(None)", "range", "Sized", "DictSub", "collections.abc.Sized", "collections.abc.Mapping",
         "collections.abc.Iterable", "collections.abc.Sequence", "collections.abc.Hashable")
LITERALS = ("0", "1", "-1", "2", "3", "1.5", "nan", "-0.0", "'ab'", "'k'", "None", "True", "[1, 2]", "(1, 2)",
            "{'k': 1}", "np.float64(2.0)", "np.arange(3)", "np.ones(3)", "b'xy'", "1j", "{1, 2}", "10**20")
BINOPS = ("+", "-", "*", "/", "//", "%", "&", "|", "^", "@")
COMPARES = ("==", "!=", "<", "<=", ">", ">=", "in", "not in", "is", "is not")
SLICES = ("[0]", "[-1]", "[1]", "[5]", "[-9]", "[1:]", "[:2]", "[::-1]", "[::2]", "[1:-1]", "[10:]", "[:, 0]",
          "[..., 0]", "[None]", "['k']", "[True]", "[1.5]", "[0:0]", "[::0]")
NP_EXPRS = ("{x} + 1", "{x} * 2.0", "np.sum({x})", "{x}.shape", "{x}[0]", "np.isfinite({x}).all()",
            "np.maximum({x}, 0)", "{x}.reshape(-1)", "np.mean({x})", "({x} > 0).all()", "np.where({x} > 0, {x}, 0)",
            "{x}.astype(np.float32)", "-{x}", "abs({x})", "{x} ** 2", "np.exp({x})", "{x}.T", "{x}.sum()",
            "np.sqrt({x})", "{x}.dtype", "{x}.ndim", "{x} / {y}", "{x} @ {y}", "np.concatenate([{x}, {y}])",
            "{x}.max()", "np.argmax({x})", "{x}.tolist()", "float(np.sum({x}))", "{x}.size", "len({x})",
            "np.dot({x}, {y})", "{x}.copy()", "np.clip({x}, 0, 1)", "np.zeros_like({x})", "{x} == {y}",
            "np.array_equal({x}, {y})", "{x}.item()", "np.abs({x}).min()", "{x}[{x} > 0]", "np.log({x})")
BUILTIN_EXPRS = (
    "len({x})", "hasattr({x}, {attr})", "getattr({x}, {attr})", "getattr({x}, {attr}, None) is not None",
    "callable(getattr({x}, {attr}, None))", "type(getattr({x}, {attr}, 0)).__name__", "isinstance({x}, {type})",
    "sorted({x})", "list(reversed({x}))", "min({x})", "max({x})", "min({x}, {y})", "max({x}, {y}, key=len)",
    "sum({x})", "sum({x}, {y})", "any({x})", "all({x})", "list(enumerate({x}))", "list(enumerate({x}, 1))",
    "list(zip({x}, {y}))", "list(map(str, {x}))", "list(filter(None, {x}))", "dict({x})", "list({x})",
    "tuple({x})", "set({x})", "frozenset({x})", "abs({x})", "round({x})", "round({x}, 1)", "divmod({x}, {y})",
    "str({x})", "repr({x})", "int({x})", "float({x})", "bool({x})", "complex({x})", "{x} is {y}",
    "{x} is not None", "next(iter({x}))", "next(iter({x}), 'end')", "list(range({n}))", "list(range({n}, 7, 2))",
    "{{**{x}}}", "[*{x}]", "(*{x}, *{y})", "{{*{x}}}", "len({x}) if hasattr({x}, '__len__') else -1",
    "dict.fromkeys({x})", "sorted({x}, reverse=True)", "sorted({x}, key=str)", "list(map(len, {x}))",
    "'-'.join({x})", "{x}.get('k')", "{x}.keys()", "list({x}.items())", "{x}.count(1)", "{x}.index(1)",
    "{x}.copy()", "{x}.upper()", "{x}.split()", "{x}.bit_length()", "{x}.conjugate()", "{x}.real", "{x}.imag",
    "{x}.is_integer()", "type({x}).__name__", "type({x}) is {type}", "{x}.__class__.__name__", "iter({x}) is {x}",
    "[v for v in {x}]", "[v * 2 for v in {x} if v]", "{{v: 1 for v in {x}}}", "{{str(v) for v in {x}}}",
    "sum(1 for v in {x})", "list(zip(*{x}))", "ascii({x})", "format({x})", "hash({x}) == hash({x})",
    "{x} == {x}", "{x} != {y}", "{x}[:]", "pow({x}, 2)", "{x} in {y}", "{y} in {x}", "len({x}) == len({y})",
    "max({x}, default=None)", "min({x}, {y}, default=0)", "getattr({x}, 'v', 'none')", "vars({x})",
    "{x}.p", "{x}.double", "{x}.v", "{x}.n", "{x}.missing", "{x}.get()", "{x}.item", "{x}.x",
)
AUGOPS = ("+=", "-=", "*=", "|=", "&=", "//=", "/=", "%=")


class Chooser(random.Random):
    """The generator's random source, which knows the kinds of the case's arguments."""

    def __init__(self, seed: str) -> None:
        super().__init__(seed)
        self.arrays: list[str] = []  # the parameters holding arrays or numpy scalars


def operand(rng: random.Random) -> str:
    if rng.random() < 0.8:
        return rng.choice(PARAMS)
    return f"({pick(rng, LITERALS)})"  # parenthesized: (0).real, not 0.real


def array_operand(rng: random.Random) -> str:
    """A parameter holding an array, mostly, where there is one: numpy operations that run."""
    arrays = getattr(rng, "arrays", ())
    return rng.choice(arrays) if arrays and rng.random() < 0.8 else operand(rng)


def expression(rng: random.Random) -> tuple[str, str]:
    """(template name, expression text) over the parameters."""
    x, y = operand(rng), operand(rng)
    roll = rng.random()
    if roll < 0.38:
        text = pick(rng, BUILTIN_EXPRS)
        name = "builtin:" + text.split("(")[0].replace("{x}", "x").replace("{y}", "y")[:30]
    elif roll < 0.58:
        text = pick(rng, NP_EXPRS)
        name = "numpy:" + text[:24]
        x = array_operand(rng)
    elif roll < 0.76:
        op = pick(rng, BINOPS)
        text, name = "{x} " + op + " {y}", "binop:" + op
    elif roll < 0.88:
        first, second = pick(rng, COMPARES), pick(rng, COMPARES[:6])
        chained = rng.random() < 0.3
        text = "{x} " + first + " {y}" + (f" {second} {{z}}" if chained else "")
        name = "compare:" + first + (" chained" if chained else "")
    elif roll < 0.94:
        op = pick(rng, ("-", "+", "~", "not "))
        text, name = op + "{x}", "unary:" + op.strip()
    else:
        text, name = "{x}" + pick(rng, SLICES), "subscript"
    return name, text.format(x=x, y=y, z=operand(rng), attr=repr(pick(rng, ATTRS)), type=pick(rng, TYPES),
                             n=pick(rng, ("0", "3", "-2", "5")))


# ------------------------------------------------------------- statements


def simple_append(rng: random.Random, k: int) -> Fragment:
    name, text = expression(rng)
    return Fragment(name, (f"r.append({text})",))


def guarded(rng: random.Random, k: int) -> Fragment:
    """An expression inside ``try``: the exception is part of the result."""
    name, text = expression(rng)
    caught = pick(rng, ("Exception", "TypeError", "(TypeError, ValueError)", "AttributeError",
                        "(IndexError, KeyError)", "LookupError", "ArithmeticError"))
    lines = ["try:", f"    t{k} = {text}", f"except {caught} as e{k}:",
             f"    r.append(('caught', type(e{k}).__name__, str(e{k})))"]
    if rng.random() < 0.4:
        lines += ["else:", f"    r.append(('else', t{k}))"]
    if rng.random() < 0.3:
        lines += ["finally:", "    r.append('finally')"]
    return Fragment("try:" + name, tuple(lines), (Fragment(name, (f"r.append({text})",)),))


def truth(rng: random.Random, k: int) -> Fragment:
    x, y = array_operand(rng), operand(rng)
    cond = pick(rng, (x, f"not {x}", f"{x} and {y}", f"{x} or {y}", f"({x} > 0).all()", f"({x} == {y}).any()",
                      f"len({x})", f"{x} is None", f"np.isfinite({x}).all()", f"{x}.any()", f"{x} == {y}",
                      f"{x} in {y}", f"isinstance({x}, np.ndarray) and {x}.size"))
    lines = [f"if {cond}:", f"    r.append(('then', {x}))", "else:", f"    r.append(('else', {y}))"]
    alt = (Fragment("truth:expr", (f"r.append(bool({cond}))",)),)
    if rng.random() < 0.3:
        lines = [f"r.append({x} if {cond} else {y})"]
    if rng.random() < 0.3:
        lines = [f"r.append({x} and {y})", f"r.append({x} or {y})"]
    return Fragment("truth", tuple(lines), alt)


def augmented(rng: random.Random, k: int) -> Fragment:
    x, y = rng.choice(PARAMS), operand(rng)
    op = pick(rng, AUGOPS)
    lines = [f"t{k} = {x}", f"t{k} {op} {y}", f"r.append(t{k})", f"r.append(t{k} is {x})"]
    return Fragment("augassign:" + op, tuple(lines))


def store(rng: random.Random, k: int) -> Fragment:
    x, v = rng.choice(PARAMS), operand(rng)
    form = rng.randrange(6)
    if form == 0:
        lines = [f"{x}{pick(rng, SLICES[:7] + ('[0:1]', '[:]'))} = {v}"]
    elif form == 1:
        lines = [f"del {x}{pick(rng, SLICES[:7] + ('[:1]',))}"]
    elif form == 2:
        lines = [f"{x}.{pick(rng, ATTRS)} = {v}"]
    elif form == 3:
        lines = [f"{x}.append({v})"]
    elif form == 4:
        lines = [f"{x}.update({v})"]
    else:
        lines = [f"{x}.{pick(rng, ('pop()', 'clear()', 'sort()', 'reverse()', 'add(1)', 'extend([9])'))}"]
    lines.append(f"r.append({x})")
    return Fragment("store:" + lines[0].split("(")[0][:20], tuple(lines))


def unpack(rng: random.Random, k: int) -> Fragment:
    x = operand(rng)
    target = pick(rng, (f"p{k}, q{k}", f"p{k}, *q{k}", f"*p{k}, q{k}", f"p{k}, q{k}, s{k}", f"(p{k}, q{k}), s{k}",
                        f"[p{k}]", f"p{k},"))
    names = [n.strip("*()[] ") for n in target.split(",") if n.strip("*()[] ")]
    lines = [f"{target} = {x}", f"r.append(({', '.join(names)},))"]
    if rng.random() < 0.3:
        lines = [f"for {target} in {x}:", f"    r.append(({', '.join(names)},))"]
    return Fragment("unpack:" + target.replace(str(k), ""), tuple(lines))


def loop(rng: random.Random, k: int) -> Fragment:
    x = operand(rng)
    body = pick(rng, (f"r.append(v{k})", f"r.append(v{k} + 1)", f"if v{k}:\n        break",
                      f"if not v{k}:\n        continue\n    r.append(v{k})", f"r.append(type(v{k}).__name__)",
                      f"print(v{k})", f"r.append(np.sum(v{k}))"))
    header = pick(rng, (f"for v{k} in {x}:", f"for i{k}, v{k} in enumerate({x}):",
                        f"for v{k} in sorted({x}):", f"for v{k} in reversed({x}):", f"for v{k} in iter({x}):",
                        f"for v{k}, w{k} in zip({x}, {operand(rng)}):"))
    lines = [header, *("    " + line for line in body.split("\n    "))]
    if rng.random() < 0.3:
        lines += ["else:", "    r.append('no break')"]
    if rng.random() < 0.2:
        lines = [f"n{k} = 0", f"while n{k} < 3:", f"    n{k} += 1", f"    r.append({x})",
                 f"    if {x}:", "        break"]
    return Fragment("loop", tuple(lines), (Fragment("loop:list", (f"r.append(list({x}))",)),))


def comprehension(rng: random.Random, k: int) -> Fragment:
    x, y = operand(rng), operand(rng)
    text = pick(rng, (f"[v for v in {x} if v]", f"{{v: w for v, w in zip({x}, {y})}}", f"{{v for v in {x}}}",
                      f"list(v + 1 for v in {x})", f"[(v, w) for v in {x} for w in {y}]",
                      f"[v for v in {x} if v in {y}]", f"sorted(v for v in {x})", f"[{y} for _ in {x}]",
                      f"[w for v in {x} for w in [v, v]]", f"any(v is {y} for v in {x})",
                      f"[v is {y} for v in [{x}, {y}]]", f"[np.sum(v) for v in {x}]",
                      f"max((v for v in {x}), default=1)"))
    return Fragment("comprehension", (f"r.append({text})",))


def with_block(rng: random.Random, k: int) -> Fragment:
    x, y = array_operand(rng), operand(rng)
    manager = pick(rng, ("contextlib.suppress(TypeError)", "contextlib.suppress(Exception)",
                         "contextlib.nullcontext()", f"contextlib.nullcontext({x})",
                         "np.errstate(over='ignore', divide='ignore', invalid='ignore')", "np.errstate(all='raise')",
                         "warnings.catch_warnings()", "Tracker(r)", "Tracker(r, swallow=True)", "Tracker(r) as tr"))
    inner_name, inner = expression(rng)
    body = [f"    r.append({inner})"]
    if manager.startswith("warnings") and rng.random() < 0.7:
        # Filters set for the block alone: numpy's warnings ignored, or raised as errors.
        body.insert(0, pick(rng, ("    warnings.simplefilter('ignore')",
                                  "    warnings.simplefilter('error', RuntimeWarning)",
                                  "    warnings.filterwarnings('error', message='.*overflow')")))
    if rng.random() < 0.5:
        body.append(f"    ok{k} = np.isfinite({x}).all()")
    after = []
    if rng.random() < 0.5:
        after = [f"if ok{k}:" if f"ok{k}" in body[-1] else f"if {y}:", f"    r.append({y})"]
    lines = [f"with {manager}:" if " as " in manager else f"with {manager} as m{k}:", *body, *after]
    if " as " not in manager and rng.random() < 0.5:
        lines[0] = f"with {manager}:"
    return Fragment("with:" + manager.split("(")[0], tuple(lines), (Fragment(inner_name, (f"r.append({inner})",)),))


def match_block(rng: random.Random, k: int) -> Fragment:
    x = operand(rng)
    cases = rng.sample([
        f"case [p{k}, q{k}]:\n        r.append(('pair', p{k}, q{k}))",
        f"case [p{k}, *q{k}]:\n        r.append(('head', p{k}, q{k}))",
        f"case {{'k': p{k}}}:\n        r.append(('key', p{k}))",
        f"case {{'k': p{k}, **q{k}}}:\n        r.append(('rest', p{k}, q{k}))",
        f"case int(p{k}) if p{k} > 0:\n        r.append(('pos', p{k}))",
        "case str() | bytes():\n        r.append('text')",
        f"case Point(x=p{k}, y=q{k}):\n        r.append(('point', p{k}, q{k}))",
        f"case Point(p{k}, q{k}):\n        r.append(('point args', p{k}, q{k}))",
        f"case np.ndarray():\n        r.append(('array', {x}.shape))",
        f"case float(p{k}):\n        r.append(('float', p{k}))",
        f"case (1 | 2) as p{k}:\n        r.append(('small', p{k}))",
        "case None:\n        r.append('none')",
        f"case Box(item=[p{k}]):\n        r.append(('box', p{k}))",
        f"case Slotted(p=p{k}):\n        r.append(('slotted', p{k}))",
        f"case {{**q{k}}}:\n        r.append(('mapping', q{k}))",
    ], rng.randrange(1, 5))
    lines = [f"match {x}:"]
    for case in cases:
        lines += ["    " + line for line in case.split("\n    ")]
    if rng.random() < 0.7:
        lines += ["    case _:", "        r.append('other')"]
    return Fragment("match", tuple(lines))


def closure(rng: random.Random, k: int) -> Fragment:
    x, y = operand(rng), operand(rng)
    name, inner = expression(rng)
    form = rng.randrange(4)
    if form == 0:
        lines = [f"def g{k}(u):", f"    return u, {inner}", f"r.append(g{k}({y}))"]
    elif form == 1:
        lines = [f"count{k} = 0", f"def bump{k}():", f"    nonlocal count{k}", f"    count{k} += 1",
                 f"    return {x}", f"r.append((bump{k}() is {x}, bump{k}(), count{k}))"]
    elif form == 2:
        lines = [f"h{k} = lambda u, w={y}: (u, w, {inner})", f"r.append(h{k}({x}))"]
    else:
        lines = [f"def outer{k}(u):", "    def inner(w):", f"        return (u, w, {inner})", "    return inner",
                 f"r.append(outer{k}({x})({y}))"]
    return Fragment("closure:" + name, tuple(lines), (Fragment(name, (f"r.append({inner})",)),))


def local_class(rng: random.Random, k: int) -> Fragment:
    x, y = operand(rng), operand(rng)
    form = rng.randrange(4)
    if form == 0:
        lines = [f"class K{k}:", "    def __init__(self, v):", "        self.v = v", "    def get(self):",
                 "        return self.v", f"o{k} = K{k}({x})", f"r.append(o{k}.get() is {x})",
                 f"r.append(o{k}.v)"]
    elif form == 1:
        lines = [f"class K{k}:", "    __slots__ = ('v',)", "    def __len__(self):", "        return 2",
                 f"o{k} = K{k}()", f"o{k}.v = {x}", f"r.append((len(o{k}), bool(o{k}), hasattr(o{k}, 'w')))"]
    elif form == 2:
        lines = [f"class K{k}(dict):", "    def __getitem__(self, key):", "        return ('K', key)",
                 f"o{k} = K{k}(k={x})", f"r.append((o{k}['k'], o{k}.get('k'), list(o{k}), dict(o{k})))"]
    else:
        lines = [f"class K{k}:", "    @property", "    def p(self):", f"        return {x}",
                 "    def __eq__(self, other):", f"        return other == {y}", "    __hash__ = None",
                 f"o{k} = K{k}()", f"r.append((o{k}.p is {x}, o{k} == 1, hasattr(o{k}, 'p'), getattr(o{k}, 'z', 0)))"]
    return Fragment("class", tuple(lines))


def generator(rng: random.Random, k: int) -> Fragment:
    x, y = operand(rng), operand(rng)
    form = rng.randrange(3)
    if form == 0:
        lines = [f"def gen{k}():", f"    yield {x}", f"    yield from {y}", f"r.append(list(gen{k}()))"]
    elif form == 1:
        lines = [f"def gen{k}(u):", "    for w in u:", "        if w:", "            yield w", "    return",
                 f"it{k} = gen{k}({x})", f"r.append(next(it{k}, 'done'))", f"r.append(list(it{k}))"]
    else:
        lines = [f"def gen{k}():", f"    got = yield {x}", "    yield ('got', got)",
                 f"it{k} = gen{k}()", f"r.append(next(it{k}) is {x})", f"r.append(it{k}.send({y}))"]
    return Fragment("generator", tuple(lines))


def raising(rng: random.Random, k: int) -> Fragment:
    x = operand(rng)
    error = pick(rng, ("ValueError", "KeyError", "TypeError", "RuntimeError", "LookupError"))
    form = rng.randrange(4)
    if form == 0:
        lines = ["try:", f"    raise {error}({x})", f"except {error} as e{k}:",
                 f"    r.append(e{k}.args[0] is {x})", f"    r.append(str(e{k}))"]
    elif form == 1:
        lines = ["try:", f"    raise {error}({x}, 'two')", "except Exception as e:",
                 "    r.append((type(e).__name__, e.args[1]))", "finally:", f"    r.append({x})"]
    elif form == 2:
        lines = [f"if {x}:", f"    raise {error}('raised on truth')", "r.append('not raised')"]
    else:
        lines = ["try:", "    try:", f"        raise {error}('inner')", "    finally:", f"        r.append({x})",
                 "except Exception as e:", "    r.append(repr(e))"]
    return Fragment("raise:" + error, tuple(lines))


def printing(rng: random.Random, k: int) -> Fragment:
    x, y = operand(rng), operand(rng)
    call = pick(rng, (f"print({x})", f"print({x}, {y}, sep='|')", f"print(repr({x}), end='!')", "print()",
                      f"print(len({x}))", f"print({x}, file=None)"))
    lines = [call, f"r.append({y})"]
    return Fragment("print", tuple(lines), (Fragment("print:only", (call,)),))


def identity(rng: random.Random, k: int) -> Fragment:
    x = rng.choice(PARAMS)
    holder = pick(rng, (f"[{x}]", f"({x},)", f"{{'k': {x}}}", f"Box({x})", f"Bag(v={x})", f"ValueError({x})",
                        f"Slotted({x}, 0)", f"[{x}, {x}][::-1]", f"{{1: [{x}]}}", f"Point({x}, 0)"))
    read = {"[": "[0]", "(": "[0]", "{'": "['k']", "Box": ".get()", "Bag": ".v", "Valu": ".args[0]",
            "Slot": ".p", "Poin": ".x", "{1": "[1][0]"}
    suffix = next(v for key, v in read.items() if holder.startswith(key))
    lines = [f"h{k} = {holder}", f"r.append(h{k}{suffix} is {x})"]
    if rng.random() < 0.4:
        lines.insert(1, f"r.append(np.sum({x}) if isinstance({x}, np.ndarray) else 0)")
    if rng.random() < 0.3:
        lines.insert(1, "print('between')")
    return Fragment("identity:" + holder.split("(")[0][:8], tuple(lines))


def crossed(rng: random.Random, k: int) -> Fragment:
    """A change through one parameter, then a read through another: the same object where a
    call passes it twice (`aliased`), and the read sees the change only then."""
    x, y = rng.sample(PARAMS, 2)
    change = pick(rng, (f"{x}.append(1)", f"{x}[0] = 9", f"{x}['k'] = 1", f"{x}.v = 5", f"{x}.clear()",
                        f"{x}.pop()", f"{x}.update({{'k': 2}})", f"{x} += [7]"))
    read = pick(rng, (f"len({y})", f"{y}[0]", f"{y}.get('k')", f"getattr({y}, 'v', None)", f"list({y})",
                      f"{y} == {x}", f"{y} is {x}"))
    return Fragment("crossed:" + change.split("(")[0][len(x):][:10], (change, f"r.append({read})"))


def early_return(rng: random.Random, k: int) -> Fragment:
    x = operand(rng)
    return Fragment("return", (f"if {x}:", "    return ('early', r)"))


Template = Callable[[random.Random, int], Fragment]
TEMPLATES: tuple[tuple[Template, int], ...] = (
    (simple_append, 12), (guarded, 24), (truth, 8), (augmented, 4), (store, 5), (unpack, 4), (loop, 5),
    (comprehension, 4), (with_block, 5), (closure, 4), (local_class, 3), (generator, 3), (raising, 4),
    (printing, 3), (identity, 6), (crossed, 4), (early_return, 1), *(((match_block, 4),) if HAS_MATCH else ()),
)


def generate(seed: str) -> Case:
    """The case of ``seed`` (a string: ``"<run seed>:<index>"``)."""
    rng = Chooser(seed)
    args = tuple(random_value(rng) for _ in PARAMS)
    rng.arrays = [name for name, value in zip(PARAMS, args) if value.kind in ("ndarray", "npscalar")]
    templates, weights = zip(*TEMPLATES)
    count = rng.choice((1, 2, 2, 3, 3, 4, 5))
    body = []
    for k in range(count):
        fragment = rng.choices(templates, weights)[0](rng, k)
        if rng.random() < CAUGHT_SHARE and not fragment.template.startswith("try:"):
            fragment = caught(fragment, k)
        body.append(fragment)
    # Drawn last, so that a seed's function and first arguments are what they were.
    later = tuple(random_value(rng, value.kind if rng.random() < LATER_SAME_KIND else None) for value in args)
    # Drawn after the rest too: a call's argument may be an earlier argument itself.
    args, later = aliased(rng, args, later)
    return Case(seed, args, tuple(body), later=later)


# The share of calls whose arguments hold one object twice (`f(x, x, c)`), drawn apart for
# the first call and the later one: a translation made for one object reached through two
# parameters must not run for two objects, nor the other way round.
ALIAS_SHARE = 0.15
# The share of cases where one call holds an object twice and the other an equal copy in
# its place, the rest the same: only identity tells the calls apart, so the first
# translation's guards pass for the later call unless they guard it.
TWIN_SHARE = 0.1
# An argument that is the object an earlier parameter holds: ALIAS + that parameter's name.
ALIAS = "@"


def aliased(rng: random.Random, args: tuple[Value, ...],
            later: tuple[Value, ...]) -> tuple[tuple[Value, ...], tuple[Value, ...]]:
    """The first and the later call's arguments, with some passing an earlier one's object."""
    def alias_at(values: tuple[Value, ...]) -> tuple[tuple[Value, ...], int, int]:
        position = rng.randrange(1, len(values))
        earlier = rng.randrange(position)
        alias = Value(ALIAS + PARAMS[earlier], values[earlier].kind, (values[position].expr,))
        return values[:position] + (alias,) + values[position + 1:], position, earlier

    if rng.random() < TWIN_SHARE:
        shared, position, earlier = alias_at(args)
        twin = Value(args[earlier].expr, args[earlier].kind)
        apart = args[:position] + (twin,) + args[position + 1:]
        return (shared, apart) if rng.random() < 0.5 else (apart, shared)
    if rng.random() < ALIAS_SHARE:
        args = alias_at(args)[0]
    if rng.random() < ALIAS_SHARE:
        later = alias_at(later)[0]
    return args, later


def arguments_source(values: tuple[Value, ...]) -> str:
    """The arguments as a tuple display (an aliased one names the earlier one's object)."""
    aliased_names = {value.expr[len(ALIAS):] for value in values if value.expr.startswith(ALIAS)}
    items = []
    for name, value in zip(PARAMS, values):
        if value.expr.startswith(ALIAS):
            items.append(f"_{value.expr[len(ALIAS):]}")
        elif name in aliased_names:
            items.append(f"(_{name} := {value.expr})")
        else:
            items.append(value.expr)
    return f"({', '.join(items)},)"


# The share of a later call's arguments of the same kind as the first call's (the rest of
# any kind): same-kind values are the ones a guard too weak lets through.
LATER_SAME_KIND = 0.8


# Most random operations on random values raise: a share of fragments catch what they
# raise, so that the fragments after them run too.
CAUGHT_SHARE = 0.5


def caught(fragment: Fragment, k: int) -> Fragment:
    lines = ("try:", *("    " + line for line in fragment.lines), f"except Exception as x{k}:",
             f"    r.append(('caught', type(x{k}).__name__, str(x{k})))")
    return Fragment("caught:" + fragment.template, lines, (fragment,))
