"""Graph breaks in closures: free and cell variables carried across a break, closures breaking at a call."""

from ._case import NESTED_RESUME, arr, case


def _make_printer(k):
    def printer(x):
        y = x * k
        print("scale", k)
        return y + k

    return printer


def _make_thresholder(t):
    def thresholder(x):
        if x.sum() > t:
            return x - t
        return x + t

    return thresholder


def _make_converter(k):
    def converter(x):
        v = float(x[0])
        return x * v * k

    return converter


case(args=lambda: (arr(3),), graphs=2, ops=2, breaks=["print"], name="free_variable_across_print")(
    _make_printer(2.0))
# A branch on a value is assumed (no break); the free variable is a constant of the graph.
case(args=lambda: (arr(3),), graphs=1, ops=3, name="free_variable_in_branch")(
    _make_thresholder(0.25))
case(args=lambda: (arr(3),), graphs=2, ops=3, breaks=["tensor to python"], name="free_variable_after_conversion")(
    _make_converter(3.0))


# The closure's print breaks the graph there, and the closure (in its cell over `tag`) and
# its caller go on after it (3.11+); 3.9/3.10: the caller breaks at the call, and the
# closure, run as a call of its own, breaks at its print too.
@case(args=lambda: (arr(3),), graphs=2, ops=2, breaks=["print"] if NESTED_RESUME else ["print", "print"])
def printing_closure_called(x):
    tag = "closure"

    def show(v):
        print(tag)
        return v

    y = x + 1
    z = show(y)
    return z * 2


@case(args=lambda: (arr(3),), graphs=2, ops=2, breaks=["print"])
def cell_variable_across_break(x):
    n = 0

    def bump():
        nonlocal n
        n += 1

    bump()
    y = x * 2
    print("n", n)
    bump()
    return y + n


# The lambda's print breaks the graph there, and the lambda and its caller go on after it
# (3.11+); 3.9/3.10: the caller breaks at the call, and the lambda, run as a call of its
# own, breaks at its print too.
@case(args=lambda: (arr(3),), graphs=2, ops=2, breaks=["print"] if NESTED_RESUME else ["print", "print"])
def printing_lambda_called(x):
    f = lambda v: print("lambda") or v  # noqa: E731
    y = x + 1
    z = f(y)
    return z - 1


@case(args=lambda: (arr(3),), graphs=2, ops=2, breaks=["print"])
def cell_rebound_after_break(x):
    k = 1.0

    def get():
        return k

    y = x + get()
    print("mid")
    k = 3.0
    return y * get()


@case(args=lambda: (arr(3),), graphs=2, ops=2, breaks=["print"])
def argument_cell_across_break(x):
    def peek():
        return x

    a = peek() + 1
    print("peeked")
    return a * peek()
