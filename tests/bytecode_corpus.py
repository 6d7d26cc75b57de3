"""Programs for the bytecode layer's canonical round trip (tests/test_bytecode.py): each
source defines ``main()``, run once as compiled and once with every code object (nested
ones included) reassembled through the canonical instructions. Sources for newer syntax are
listed with the version that has it, and compiled only there."""

import sys

BIG_CONSTANTS = 300

BASE = '''
import contextlib
import dataclasses
import functools

G = 10


def closures(n):
    total = 0

    def add(k):
        nonlocal total
        total += k
        return total

    return [add(i) for i in range(n)], total


def exceptions(items):
    out = []
    for x in items:
        try:
            try:
                out.append(10 // x)
            finally:
                out.append("f")
        except ZeroDivisionError as e:
            out.append(type(e).__name__)
        else:
            out.append("else")
    try:
        raise KeyError("k") from ValueError("v")
    except LookupError as e:
        out.append((repr(e), type(e.__cause__).__name__))
    return out


class CM:
    def __init__(self, log):
        self.log = log

    def __enter__(self):
        self.log.append("enter")
        return self

    def __exit__(self, *exc):
        self.log.append(("exit", exc[0] is not None))
        return True


def withs():
    log = []
    with CM(log), CM(log) as inner:
        log.append(inner is not None)
        raise ValueError
    return log


def comprehensions(n):
    return (
        [i * i for i in range(n) if i % 2],
        {i: str(i) for i in range(n)},
        sorted({i % 3 for i in range(n)}),
        sum(i for i in range(n)),
        [[j for j in range(i)] for i in range(3)],
    )


def gen(n):
    x = yield 0
    for i in range(n):
        x = yield i + (x or 0)
    return "done"


def generators():
    g = gen(3)
    out = [next(g)]
    try:
        while True:
            out.append(g.send(1))
    except StopIteration as e:
        out.append(e.value)

    def delegate():
        result = yield from gen(2)
        yield result

    closed = gen(5)
    next(closed)
    closed.close()
    return out, list(delegate())


def calls(*args, **kwargs):
    def f(a, b=2, *rest, c, d=4, **kw):
        return (a, b, rest, c, d, sorted(kw.items()))

    return [
        f(1, c=3),
        f(*args, c=5, **kwargs),
        f(1, 2, 3, 4, c=6, d=7, e=8),
        functools.reduce(lambda x, y: x + y, args, 0),
        "-".join(str(a) for a in args),
    ]


class Base:
    def m(self):
        return "base"


class Derived(Base):
    def m(self):
        return "derived+" + super().m()

    @property
    def p(self):
        return G * 2


@dataclasses.dataclass
class Point:
    x: int
    y: int = 0

    def norm(self):
        return abs(self.x) + abs(self.y)


def classes():
    d = Derived()
    return d.m(), d.p, Point(3, -4).norm(), repr(Point(1))


async def agen(n):
    for i in range(n):
        yield i


async def coro(n):
    out = [i async for i in agen(n)]
    async with contextlib.AsyncExitStack() as stack:
        out.append(len(stack._exit_callbacks))
    async for i in agen(2):
        out.append(-i)
    return out


def coroutines():
    c = coro(3)
    try:
        c.send(None)
    except StopIteration as e:
        return e.value


def strings(x):
    return f"{x!r:>10}|{x:{'^'}{8}}|{x}", "a" "b", "%s-%d" % ("x", 3)


def branches(a, b):
    out = []
    for x in (a, b, None, 0, [], [1]):
        if x and a or not b:
            out.append(1)
        elif x is None:
            out.append(2)
        else:
            out.append(3)
        out.append(a < x if isinstance(x, int) else x in (None, 0))
    while a > 0:
        a -= 1
        if a == 2:
            continue
        if a == 5:
            break
    return out, a, 1 < a <= 3, a if a else b


def unpack(seq):
    a, *b, c = seq
    (d, e), f = (1, 2), 3
    return a, b, c, d, e, f


def scopes():
    global G
    G += 1
    x = G
    del x
    try:
        x  # noqa: F821
    except UnboundLocalError:
        return G


def subscripts(seq):
    seq = list(seq)
    seq[1:3] = ["a", "b"]
    del seq[0]
    seq[-1] += 100
    return seq, seq[::2], seq[1:]


BIG_FUNCTION


def main():
    return [
        closures(4), exceptions([1, 0, 5]), withs(), comprehensions(6), generators(), calls(1, 2, z=3),
        classes(), coroutines(), strings(42), branches(3, 0), unpack(range(6)), scopes(), subscripts(range(6)),
        big(7), big(-1),
    ]
'''


def big_function():
    """A function with hundreds of constants and a long body: arguments and jumps need
    ``EXTENDED_ARG``."""
    lines = ["def big(n):", "    total = 0"]
    for i in range(BIG_CONSTANTS):
        lines.append(f"    if n > {i * 7 + 1000}:")
        lines.append(f"        total += {i * 13 + 100000}")
    lines.append("    for i in range(n):")
    lines.append("        total += i")
    lines.append("    return total")
    return "\n".join(lines)


MATCH = '''
def main():
    out = []
    for value in [1, [1, 2], {"k": 3}, (1, 2, 3), "s", None, 2.5]:
        match value:
            case 1:
                out.append("one")
            case [a, b]:
                out.append(("pair", a, b))
            case {"k": v}:
                out.append(("map", v))
            case (1, *rest):
                out.append(("rest", rest))
            case str() as s:
                out.append(("str", s))
            case None:
                out.append("none")
            case _:
                out.append("other")
    return out
'''

EXCEPT_STAR = '''
def main():
    out = []
    try:
        raise ExceptionGroup("g", [ValueError(1), TypeError(2)])
    except* ValueError as e:
        out.append(("value", len(e.exceptions)))
    except* TypeError as e:
        out.append(("type", len(e.exceptions)))
    return out
'''

TYPE_PARAMS = '''
def first[T](items: list[T]) -> T:
    return items[0]


type Pair[K] = tuple[K, K]


def main():
    return first([3, 4]), repr(Pair.__value__)
'''

TEMPLATE_STRINGS = '''
def main():
    name, n = "world", 3
    template = t"hello {name!r} {n:>4} {n * 2}"
    return template.strings, [(i.value, i.expression, i.conversion, i.format_spec) for i in template.interpolations]
'''


LAZY_IMPORTS_AND_VIRTUAL_ITERATORS = '''
lazy import json
lazy from textwrap import dedent


def imports():
    import fractions
    from decimal import Decimal
    return json.dumps([1, None, True]), dedent("  x"), fractions.Fraction(1, 3), Decimal("1.5")


def delegate(items):
    got = yield from items
    return got


def iterators(ls, ds):
    flat = [*chunk for chunk in ls]
    merged = {**d for d in ds}
    lazy = list(*chunk for chunk in ls)
    return flat, merged, lazy, list(delegate([1, 2])), list(delegate("ab")), list(delegate(range(2)))


def constants(x):
    if x is None or x == "" or x == -1:
        return True
    built = list(v for v in (1, 2)), set(v for v in (3,)), tuple(v for v in (4,))
    return False, built, all(v for v in (1,)), any(v for v in (0,))


def main():
    return imports(), iterators([[1, 2], (3,), "ab"], [{"a": 1}, {"b": 2}]), [constants(v) for v in (None, "", -1, 0)]
'''


def sources():
    """(label, source) for this interpreter."""
    found = [("base", BASE.replace("BIG_FUNCTION", big_function()))]
    for label, source, version in (
        ("match", MATCH, (3, 10)),
        ("except*", EXCEPT_STAR, (3, 11)),
        ("type parameters", TYPE_PARAMS, (3, 12)),
        ("t-strings", TEMPLATE_STRINGS, (3, 14)),
        ("lazy imports and virtual iterators", LAZY_IMPORTS_AND_VIRTUAL_ITERATORS, (3, 15)),
    ):
        if sys.version_info >= version:
            found.append((label, source))
    return found
