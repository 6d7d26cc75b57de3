"""Strings: methods, comparisons, concatenation, slicing, conversions, beside array ops."""

import numpy as np

from ._case import arr, case


@case(args=lambda: (arr(3), "Hello World"), graphs=1, ops=1)
def string_methods(x, s):
    return s.lower(), s.upper(), s.split(), x * len(s)


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def join(x):
    parts = ["a", "b"]
    return "+".join(parts), x * 2


@case(args=lambda: (arr(4), "relu"), graphs=1, ops=1)
def compare_string_argument(x, act):
    if act == "relu":
        return np.maximum(x, 0.0)
    return x


@case(args=lambda: (arr(3), "scale_2"), graphs=1, ops=1)
def startswith(x, name):
    if name.startswith("scale"):
        return x * 2
    return x


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def concatenate_in_loop(x):
    s = ""
    for ch in "abc":
        s = s + ch
    return s, x + len(s)


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def strip_replace(x):
    s = "  a-b  ".strip().replace("-", "_")
    return s, x - 1


@case(args=lambda: (arr(3), "hello"), graphs=1, ops=1)
def substring_in(x, s):
    return ("lo" in s), x * ("z" in s)


@case(args=lambda: (arr(3), "hello"), graphs=1, ops=1)
def index_and_count(x, s):
    return s[0] + s[-1], x * s.count("l")


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def encode_to_bytes(x):
    b = "ab".encode("utf-8")  # noqa: UP012
    return b, x * len(b)


@case(args=lambda: (arr(3), "3"), graphs=1, ops=2)
def parse_numbers(x, s):
    n = int(s)
    f = float("2.5")
    return x * n + f


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def repeat(x):
    return "ab" * 3, x * 3


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def dtype_name(x):
    return x.dtype.name, str(x.dtype), x + 0


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def zfill_center(x):
    return "7".zfill(3), "a".center(5, "*"), x / 2


@case(args=lambda: (arr(3), "a,b,,c"), graphs=1, ops=1)
def split_filter_join(x, s):
    parts = [p for p in s.split(",") if p]
    return "|".join(parts), x * len(parts)


class _Named:
    def __init__(self, name):
        self.name = name

    def __str__(self):
        return "<" + self.name + ">"


@case(args=lambda: (arr(3), [_Named("a"), _Named("b")]), graphs=1, ops=1)
def join_of_a_generator_expression(x, items):
    # pyparsing names its elements with `" ".join(str(e) for e in self.exprs)`: the
    # generator drained as join drains it, each `__str__` inlined.
    text = " ".join(str(item) for item in items)
    return x * len(text), text, ",".join(k for k in ("p", "q") if k != "q")


class _Countable:
    """more-itertools' `countable` (more.py): an iterator object counting what it gives."""

    def __init__(self, iterable):
        self._iterator = iter(iterable)
        self.items_seen = 0

    def __iter__(self):
        return self

    def __next__(self):
        item = next(self._iterator)
        self.items_seen += 1
        return item


@case(args=lambda: (arr(3), "0123456789"), graphs=2, ops=1,
      breaks=["cannot rebuild"] * 2 + ["iteration over str_"] * 2 + ["unsupported call: str.join"],
      hot=False)  # `items_seen += 1` turns dynamic on the first call: the second runs its graph once more
def join_of_an_iterator_object(x, text):
    # more-itertools' CountableTests.test_basic: join runs the object's `__next__` on each
    # call, so it is never computed while translating (that consumed the iterator).
    it = _Countable(text)
    first = next(it)
    seen = it.items_seen
    rest = "".join(it)
    return x + seen, first, seen, rest, it.items_seen


class _Cell:
    def __init__(self, value):
        self.value = value

    def __getitem__(self, key):
        return self.value


_CELL = _Cell(1)


@case(args=lambda: (arr(3),), graphs=1, ops=1, globals_checked=("_CELL",), breaks=["unsupported call: str.format"] * 2)
def format_reads_an_attribute_and_an_item(x):
    # `"{0.value}"` reads an attribute, `"{0[k]}"` an item, of its argument when it runs.
    _CELL.value += 1
    return x + 1, "{0.value}".format(_CELL), "{0[k]}/{c.value:>3}".format(_CELL, c=_CELL)  # noqa: UP030, UP032
