"""Generators called from translated code (inlined) and generator expressions consumed there;
a generator the translation ran up to a `yield`, handed on at a break suspended there."""

import io
from itertools import islice

from ._case import NESTED_RESUME, arr, case

# Where the breaks' prints go.
_SINK = io.StringIO()


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


@case(args=lambda: (arr(3), [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]), graphs=1, ops=1)
def islice_of_a_list(x, xs):
    firsts = list(islice(xs, 3))
    return x * sum(islice(xs, 1, None, 2)), firsts, list(islice(xs, 4, 2)), list(islice(iter(xs), 2, 9, 3))


def _steps(steps, stop):
    # As scikit-learn's `Pipeline._iter`: the steps before `stop`, passthrough ones skipped.
    for index, (name, step) in enumerate(islice(steps, 0, stop)):
        if step is not None and step != "passthrough":
            yield index, name, step


@case(args=lambda: (arr(3),), graphs=1, ops=1, breaks=("print",))
def a_break_in_a_loop_over_a_generator_hands_the_generator_on(x):
    # The loop, from the break on, runs in its bridge, over the generator handed on.
    steps = [("double", 2.0), ("skip", "passthrough"), ("triple", 3.0), ("last", 4.0)]
    total = x + 1
    for index, name, factor in _steps(steps, len(steps) - 1):
        print(name, file=_SINK)  # a break: the loop goes on in the resume function
        total = total * factor + index
    return total


def _cleaned_up(x, log):
    log.append("started")
    try:
        yield x * 2
        yield x * 3
    finally:
        log.append("cleaned up")


@case(args=lambda: (arr(3),), graphs=1, ops=1, breaks=("print", "generator.close"))
def a_generator_suspended_in_a_try_is_closed_after_a_break(x):
    log = []
    numbers = _cleaned_up(x, log)
    first = next(numbers)
    print("between", file=_SINK)
    numbers.close()  # runs its `finally`, as the original's would
    return first, log


@case(args=lambda: (arr(3),), graphs=1, ops=1, breaks=("print", "generator.throw"))
def an_exception_thrown_into_a_generator_after_a_break_runs_its_finally(x):
    log = []
    numbers = _cleaned_up(x, log)
    first = next(numbers)
    print("between", file=_SINK)
    try:
        numbers.throw(KeyError("thrown"))
    except KeyError:
        log.append("caught")
    return first, log


def _running_total():
    total = 0.0
    while True:
        sent = yield total
        if sent is None:
            return
        total = total + sent


@case(args=lambda: (arr(3),), graphs=2, ops=2, breaks=("print", "generator.send"))
def values_sent_into_a_generator_before_and_after_a_break(x):
    totals = _running_total()
    next(totals)
    totals.send(x)
    print("between", file=_SINK)
    return totals.send(x * 2)


def _takes_one(numbers):
    taken = next(numbers)
    print("in the callee", file=_SINK)
    return taken


@case(args=lambda: (arr(3),), graphs=3, ops=4 if NESTED_RESUME else 3,
      breaks=(("print", "iteration over generator") if NESTED_RESUME
              else ("print", "iteration over generator", "print", "iteration over generator")))
def a_generator_advanced_by_the_call_that_breaks_is_handed_on_where_it_is(x):
    # 3.11+: the break resumes in the callee, after its advance. 3.9/3.10 break at the call,
    # before the advance the translation made there: the generator is handed on as it was
    # before it (handed on a step ahead, the sum would miss an item), and the callee, run as
    # a call, advances it for real. The resume function iterates the real generator: a break.
    numbers = _scaled(x, 4)
    first = next(numbers)
    second = _takes_one(numbers)
    return first + second + sum(numbers)


@case(args=lambda: (arr(3),), graphs=1, ops=2, breaks=("print", "iteration over generator"))
def a_generator_expression_over_the_frames_variables_is_handed_on(x):
    # Its free variables are the frame's cells, which the generated code hands it.
    scale = 2.0
    scaled = (x * scale * k for k in (1.0, 2.0, 3.0))
    first = next(scaled)
    print("between", file=_SINK)
    scale = 10.0  # the generator reads the cell: the rest are scaled by 10
    return first, list(scaled)


@case(args=lambda: (arr(3), list(range(10))), graphs=1, ops=1, breaks=("print", "iteration over islice"))
def an_islice_advanced_before_a_break_is_handed_on_where_it_is(x, numbers):
    picked = islice(numbers, 1, 8, 3)
    first = next(picked)
    print("between", file=_SINK)
    return x * first, list(picked), type(picked).__name__
