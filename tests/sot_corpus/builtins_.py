"""Builtins on Python values and iterables: enumerate, range, zip, map, len, isinstance, min, max, sorted..."""

import typing

import numpy as np

from ._case import Cycling, arr, case


def _double(v):
    return v * 2


class _WithK:
    k = 4.0


@case(args=lambda: (arr(3), [1.0, 2.0, 3.0]), graphs=1, ops=3)
def enumerate_with_start(x, ks):
    acc = x
    for i, k in enumerate(ks, start=1):
        acc = acc + i * k
    return acc


@case(args=lambda: (arr(3), [0.5, 2.0, 3.0]), graphs=1, ops=3)
def range_of_len(x, items):
    for i in range(len(items)):
        x = x * items[i]
    return x


@case(args=lambda: ([arr(2, seed=i) for i in range(3)],), graphs=1, ops=2)
def zip_stops_at_shortest(xs):
    out = []
    for a, b, c in zip(xs, (1.0, 2.0), "ab"):
        out.append((a * b, c))
    return out


@case(args=lambda: ([arr(2, seed=i) for i in range(3)],), graphs=1, ops=3)
def map_user_function(xs):
    return list(map(_double, xs))


@case(args=lambda: (arr(3),), graphs=1, ops=3)
def map_lambda(x):
    return list(map(lambda k: x * k, (1.0, 2.0, 3.0)))


@case(args=lambda: (arr(3), "abcd", {"a": 1}), graphs=1, ops=1)
def len_of_everything(x, s, d):
    return x * (len(s) + len(d) + len(x))


@case(args=lambda: (arr(3), 2.5), graphs=1, ops=1)
def isinstance_tuple_of_types(x, v):
    if isinstance(v, (int, float)):
        return x * v
    return x


@case(args=lambda: (arr(3), [3.0, 1.0, 2.0]), graphs=1, ops=2)
def min_max_of_list(x, ks):
    return x * min(ks) + max(ks)


@case(args=lambda: (arr(3), ["aa", "b", "cccc"]), graphs=1, ops=1)
def max_with_key(x, words):
    return x * len(max(words, key=len))


@case(args=lambda: (arr(3), -3), graphs=1, ops=1)
def abs_of_python_int(x, k):
    return x * abs(k)


@case(args=lambda: (arr(3), [3, 1, 2]), graphs=1, ops=1)
def sorted_reverse(x, ks):
    s = sorted(ks, reverse=True)
    return x * s[0], s


@case(args=lambda: (arr(3), [1.5, 2.5]), graphs=1, ops=1)
def sum_of_list(x, ks):
    return x * sum(ks)


@case(args=lambda: (arr(3), [True, False]), graphs=1, ops=2)
def any_all(x, flags):
    return x * any(flags) + all(flags)


@case(args=lambda: (arr(3), 2.71828), graphs=1, ops=1)
def round_python_float(x, f):
    return x * round(f, 2)


@case(args=lambda: (arr(3), 11), graphs=1, ops=2)
def divmod_python(x, n):
    q, r = divmod(n, 3)
    return x * q - r


@case(args=lambda: (arr(3), [1, 2, 3]), graphs=1, ops=6)
def reversed_list(x, ks):
    for k in reversed(ks):
        x = x * 10 + k
    return x


@case(args=lambda: (arr(3), _WithK()), graphs=1, ops=2)
def getattr_hasattr(x, obj):
    if hasattr(obj, "k") and not hasattr(obj, "missing"):
        return x * getattr(obj, "k") + getattr(obj, "missing", 0.0)  # noqa: B009
    return x


@case(args=lambda: (arr(3), 2.0), graphs=1, ops=1)
def type_name(x, v):
    return type(v).__name__, x * 2


@case(args=lambda: (arr(3),), graphs=0, ops=0)
def container_constructors(x):
    return list((1, 2)), tuple([x, 1]), dict(a=x), set([1, 2]), frozenset("ab")


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def scalar_constructors(x):
    return str(12), int("7"), float("1.5"), bool([]), x * int(2.0)


@case(args=lambda: (arr(2, 3),), graphs=1, ops=1)
def max_of_shape(x):
    return x.reshape(max(x.shape), -1)


@case(args=lambda: (arr(3), {"a": 1, "b": 2}), graphs=1, ops=2)
def enumerate_dict(x, d):
    for i, _key in enumerate(d):
        x = x + i
    return x


@case(args=lambda: (arr(3),), graphs=1, ops=4)
def zip_with_dict_items_and_range(x):
    for (_k, v), n in zip({"a": 1.0, "b": 2.0}.items(), range(5)):
        x = x * v + n
    return x


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def callable_builtin(x):
    return callable(_double), callable(3), x - 1


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def pow_builtin(x):
    return x * pow(2, 3)


@case(args=lambda: (arr(3),), graphs=0, ops=0)
def chr_ord(x):
    return chr(ord("a") + 1), x


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def iter_next(x):
    it = iter([1.0, 2.0])
    a = next(it)
    return x * a, next(it)


@case(args=lambda: (arr(3), [4, 2, 8]), graphs=1, ops=1)
def min_max_with_default(x, ks):
    return x * (min(ks, default=0) + max([], default=1))


@case(args=lambda: (arr(3), 3.0), graphs=1, ops=1)
def isinstance_of_numpy_type(x, v):
    if isinstance(x, np.ndarray) and not isinstance(v, np.ndarray):
        return x + v
    return x


@case(args=lambda: (arr(3), [("b", 2.0), ("a", 1.0)]), graphs=1, ops=2)
def sorted_with_key_lambda(x, pairs):
    for _name, k in sorted(pairs, key=lambda p: p[0]):
        x = x * k
    return x


class _Bag:
    def __init__(self, **fields):
        self.__dict__.update(fields)


@case(args=lambda: (arr(3), _Bag(old=1)), graphs=1, ops=2)
def setattr_and_delattr_store_as_statements_do(x, bag):
    # jinja2 and attrs set attributes by name: the store replayed after the graph, as
    # `bag.made = ...` would be.
    setattr(bag, "made", x * 2)  # noqa: B010 (the builtin is the test)
    delattr(bag, "old")
    return bag.made + 1


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def typing_cast_hands_its_value_back(x):
    return typing.cast("np.ndarray", x * 2)


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def a_folded_call_giving_a_dtype(x):
    # numpy's function of dtypes computed while translating: a dtype is the backend's constant.
    return x.astype(np.result_type(x.dtype, np.float32))


@case(args=lambda: (arr(3), 2), graphs=1, ops=1, min_version=(3, 10))
def unions_of_types_are_values(x, n):
    # `int | None` (types.UnionType, typing.Union from 3.14): or-ed again, compared, asked.
    number = int | float
    optional = number | None
    return x * n, isinstance(n, optional), optional == (int | float | None), optional.__args__


_memo_keys = Cycling(np.add, np.multiply)


@case(args=lambda: (arr(3), _memo_keys.next_value()), graphs=1, ops=1, rejected=1)
def id_of_a_function_keys_a_memo(x, f):
    # id() of a function from the frame pins it: one number on every call passing the
    # guards, and another function fails them (copy.deepcopy and inspect.unwrap key their
    # memos by id).
    names = {id(np.add): "add", id(np.multiply): "multiply"}
    return x * 2.0, names[id(f)]


@case(args=lambda: (arr(3), None), graphs=1, ops=1)
def id_of_none_keys_a_memo(x, nothing):
    # copy.deepcopy (before 3.14) keys its memo by id(x) first: None from the frame is one
    # object for every call.
    memo = {id(nothing): "none"}
    return x * 2.0, memo.get(id(None))


@case(args=lambda: (arr(3), [1, 2]), graphs=2, ops=2, breaks=("builtin id()",), hot=False)
def id_of_a_list_from_the_frame_breaks(x, items):
    # Each call may bring another list: its id is that call's own. (The code after the
    # break is handed the number, a dict's key, which each call's new list changes.)
    y = x * 2.0
    seen = {id(items): items}
    return y + len(seen)
