"""Regular expressions: `re`'s compiled patterns and their matches change under no method,
so a search of a value is computed while translating (a match is made again by the
generated code where it is used as an object), beside array ops."""

import re

from ._case import arr, case

_VERSION = re.compile(r"^\s*v?(?P<major>\d+)\.(?P<minor>\d+)(?:\.(?P<patch>\d+))?\s*$", re.VERBOSE)


class _Version:
    # As packaging's `Version` (vendored by scikit-learn) reads its class's pattern.
    _regex = _VERSION

    def __init__(self, text):
        match = self._regex.search(text)
        if not match:
            raise ValueError(f"Invalid version: {text!r}")
        self.release = (int(match.group("major")), int(match.group("minor")), int(match.group("patch") or 0))


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def version_parsed_from_a_constant(x):
    if _Version("1.9.0").release >= (1, 9):
        return x * 2
    return x


@case(args=lambda: (arr(3), "2.10"), graphs=1, ops=1)
def groups_of_a_match_of_an_argument(x, text):
    m = _VERSION.match(text)
    return x + int(m.group("minor")), m.groups(), m.span("major"), m.groupdict(), m[1], m.lastgroup


@case(args=lambda: (arr(3), "one"), graphs=1, ops=1)
def a_search_that_finds_nothing(x, text):
    if _VERSION.fullmatch(text) is None:
        return x - 1
    return x


@case(args=lambda: (arr(3), "a1b22c333"), graphs=1, ops=1)
def findall_split_and_sub(x, text):
    digits = re.compile(r"\d+")
    return digits.findall(text), digits.split(text), digits.sub("#", text), digits.subn("", text), x * 3


@case(args=lambda: (arr(3), "k=v"), graphs=1, ops=1)
def a_match_read_after_its_string(x, text):
    m = re.compile(r"(\w)=(\w)").search(text)
    return m.string, m.re.pattern, m.expand(r"\2\1"), m.start(2), m.end(), x + m.pos
