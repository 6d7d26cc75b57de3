"""Generators called from translated code (inlined) and generator expressions consumed there."""

from ._case import arr, case


def _scaled(v, n):
    for i in range(n):
        yield v * i


def _count_up(n):
    i = 0
    while i < n:
        yield i
        i += 1


def _delegating(v):
    yield from _scaled(v, 2)
    yield v


def _sub_returning(v):
    yield v * 2
    return v + 10


def _collects_return(v, out):
    result = yield from _sub_returning(v)
    out.append(result)
    yield result


def _from_list(v):
    yield from [v, v * 3]


def _nested(v):
    yield from _delegating(v)
    yield from _from_list(v)


def _pairs(v):
    yield v, "first"
    yield v + 1, "second"


@case(args=lambda: (arr(3),), graphs=1, ops=3)
def list_of_generator(x):
    return list(_scaled(x, 3))


@case(args=lambda: (arr(3),), graphs=1, ops=6)
def for_over_generator(x):
    total = x
    for v in _scaled(x, 3):
        total = total + v
    return total


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def sum_of_python_generator(x):
    n = sum(_count_up(4))
    return x * n


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def genexpr_sum_python(x):
    return x * sum(i * i for i in range(4))


@case(args=lambda: (arr(3),), graphs=1, ops=2)
def genexpr_to_tuple(x):
    return tuple(x * k for k in (1.0, 2.0))


@case(args=lambda: (arr(3), [1.0, 2.0, 3.0]), graphs=1, ops=3)
def genexpr_to_list(x, ks):
    return list(x + k for k in ks)


@case(args=lambda: (arr(3),), graphs=1, ops=2)
def yield_from(x):
    return list(_delegating(x))


@case(args=lambda: (arr(3),), graphs=1, ops=2)
def yield_from_return_value(x):
    out = []
    items = list(_collects_return(x, out))
    return items, out


@case(args=lambda: (arr(3),), graphs=1, ops=2)
def yield_from_a_list(x):
    a, b = _from_list(x)
    return a - b


@case(args=lambda: (arr(3),), graphs=1, ops=3)
def nested_yield_from(x):
    return list(_nested(x))


@case(args=lambda: (arr(3),), graphs=1, ops=3)
def next_on_generator(x):
    g = _scaled(x, 5)
    a = next(g)
    b = next(g)
    return a + b


@case(args=lambda: (arr(3),), graphs=1, ops=3)
def unpack_generator(x):
    a, b = _scaled(x, 2)
    return b - a


@case(args=lambda: (arr(3), [1, 3]), graphs=1, ops=1)
def any_of_genexpr(x, ks):
    if any(k > 2 for k in ks):
        return x * 2
    return x


@case(args=lambda: (arr(3),), graphs=1, ops=4)
def zip_generator_with_tuple(x):
    out = []
    for a, b in zip(_scaled(x, 2), (1.0, 2.0)):
        out.append(a + b)
    return out


@case(args=lambda: ([arr(3, seed=i) for i in range(3)],), graphs=1, ops=3)
def genexpr_of_reductions(xs):
    return list(v.sum() for v in xs)


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def generator_yielding_tuples(x):
    return dict((name, v) for v, name in _pairs(x))


@case(args=lambda: (arr(3),), graphs=1, ops=3)
def enumerate_generator(x):
    out = []
    for i, v in enumerate(_scaled(x, 3)):
        out.append((i, v))
    return out
