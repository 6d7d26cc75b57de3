"""match statements (Python 3.10+): literal, sequence, mapping, class, or, guard and value patterns."""

import dataclasses

import numpy as np

from ._case import arr, case


class _Plain:
    def __init__(self, a, b):
        self.a = a
        self.b = b


@dataclasses.dataclass
class _DPoint:
    a: float
    b: float


class _Modes:
    TRAIN = "train"
    EVAL = "eval"


@case(args=lambda: (arr(3), "neg"), graphs=1, ops=1)
def literal_patterns(x, mode):
    match mode:
        case "relu":
            return np.maximum(x, 0.0)
        case "neg":
            return -x
        case _:
            return x


@case(args=lambda: (arr(3), (2.0, 1.0)), graphs=1, ops=2)
def sequence_pattern(x, pair):
    match pair:
        case (a, b):
            return x * a + b
        case _:
            return x


@case(args=lambda: (arr(3), {"scale": 3.0, "extra": 1}), graphs=1, ops=1)
def mapping_pattern_with_rest(x, cfg):
    match cfg:
        case {"scale": s, **rest}:
            return x * s, rest
        case _:
            return x, {}


@case(args=lambda: (arr(3), _Plain(2.0, 0.5)), graphs=1, ops=2)
def class_keyword_pattern(x, p):
    match p:
        case _Plain(a=a, b=b):
            return x * a - b
        case _:
            return x


@case(args=lambda: (arr(3), _DPoint(1.5, 2.0)), graphs=1, ops=2)
def class_positional_pattern(x, p):
    match p:
        case _DPoint(a, b):
            return x * a + b
        case _:
            return x


@case(args=lambda: (arr(3), 12), graphs=1, ops=1)
def or_and_guard(x, n):
    match n:
        case 1 | 2:
            return x + n
        case k if k > 10:
            return x * k
        case _:
            return x


@case(args=lambda: (arr(3), [2.0, 5, 6, 7]), graphs=1, ops=2)
def star_pattern(x, items):
    match items:
        case [first, *rest]:
            return x * first + len(rest)
        case []:
            return x


@case(args=lambda: (arr(3), "eval"), graphs=1, ops=1)
def value_pattern(x, mode):
    match mode:
        case _Modes.TRAIN:
            return x * 2
        case _Modes.EVAL:
            return x / 2
    return x


@case(args=lambda: (arr(3), 0.5), graphs=1, ops=1)
def none_and_type_patterns(x, bias):
    match bias:
        case None:
            return x
        case float():
            return x + bias
        case _:
            return x - 1


@case(args=lambda: (arr(2, 3),), graphs=1, ops=1)
def match_on_shape(x):
    match x.shape:
        case (n,):
            return x * n
        case (n, m):
            return x.reshape(m, n)


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def class_pattern_on_array(x):
    match x:
        case np.ndarray():
            return x + 1
        case _:
            return x


@case(args=lambda: (arr(3), {"op": "scale", "args": [4.0]}), graphs=1, ops=1)
def nested_patterns(x, data):
    match data:
        case {"op": "scale", "args": [k]}:
            return x * k
        case {"op": "shift", "args": [k]}:
            return x + k
    return x


@case(args=lambda: (arr(3), ("add", 2.0)), graphs=1, ops=1)
def as_pattern(x, command):
    match command:
        case (("add" | "sub") as op, k):
            return x + k if op == "add" else x - k
    return x


class _Twice:
    __match_args__ = ("a", "a")
    a = 1.0


class _ListedArgs:
    __match_args__ = ["a"]  # CPython wants a tuple
    a = 1.0


class _Keys:
    SCALE = "scale"


# Patterns CPython rejects break: the instruction raises its own error where it runs.


@case(args=lambda: (arr(3), _Twice()), graphs=1, ops=1, breaks=["naming an attribute twice"], raises=TypeError)
def class_pattern_naming_an_attribute_twice(x, p):
    y = x * 2.0
    match p:
        case _Twice(a, b):
            return y * a * b
    return y


@case(args=lambda: (arr(3), _ListedArgs()), graphs=1, ops=1, breaks=["not a tuple"], raises=TypeError)
def class_pattern_with_match_args_not_a_tuple(x, p):
    y = x * 2.0
    match p:
        case _ListedArgs(a):
            return y * a
    return y


@case(args=lambda: (arr(3), {"scale": 2.0, "shift": 1.0}), graphs=1, ops=1, breaks=["naming a key twice"],
      raises=ValueError)
def mapping_pattern_naming_a_key_twice(x, cfg):
    y = x * 2.0
    match cfg:
        case {_Keys.SCALE: s, "scale": t}:
            return y * s * t
    return y
