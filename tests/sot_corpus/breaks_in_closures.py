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


def _make_adder(k):
    def add(v):
        return v + k

    return add


def _make_counter():
    count = 0

    def bump():
        nonlocal count
        count += 1
        return count

    def peek():
        return count

    return bump, peek


# A closure an inlined call made, handed on at a break: its cell (the call's frame is
# gone) is made anew by the generated code, shared by the closures that share it.
@case(args=lambda: (arr(3),), graphs=2, ops=2, breaks=["print"])
def closure_made_by_an_inlined_call_across_print(x):
    add = _make_adder(2.0)
    bump, peek = _make_counter()
    bump()
    y = add(x)
    print("made")
    bump()
    # peek sees bump's count: the two share the one cell made anew.
    return add(y), add.__closure__[0].cell_contents, peek()


def _make_decorator(wrapping):
    # more-itertools' make_decorator: closures three deep, each over the one before's cells.
    def decorator(*wrapping_args):
        def outer_wrapper(f):
            def inner_wrapper(*args):
                return wrapping(f(*args), *wrapping_args)

            return inner_wrapper

        return outer_wrapper

    return decorator


def _scale(v, k):
    return v * k


@case(args=lambda: (arr(3),), graphs=1, ops=2, breaks=["print"])
def decorated_by_an_inlined_decorator_factory_across_print(x):
    scaled = _make_decorator(_scale)

    @scaled(2.0)
    def user(v):
        return v + 1.0

    print("decorated")
    return user(x)


def _made_before_what_it_calls():
    def first():
        return second() + 1.0

    def second():
        return 2.0

    return first


@case(args=lambda: (arr(3),), graphs=2, ops=2, breaks=["a value made after it", "print"])
def a_closure_over_a_function_made_after_it_across_print(x):
    # `first`'s cell holds `second`, made after it: its new cell cannot hold it yet, and the
    # translation breaks where `first` was made (the call runs as it is).
    y = x * 2.0
    first = _made_before_what_it_calls()
    print("made")
    return y + first()


def _registers(box):
    count = 0
    box.append(lambda: count)  # held by the caller's list only
    print("registered")
    count = 5
    return count


@case(args=lambda: (arr(3),), graphs=1, ops=1,
      breaks=["cells of an inlined function", "print"] if NESTED_RESUME else ["print", "print"])
def a_closure_over_a_cell_of_a_frame_that_goes_on(x):
    # `_registers` goes on after its print (3.11+: its resume function) and sets `count`:
    # the lambda must share its cell, so no new one is made for it, and the translation
    # breaks where the call is made (3.9/3.10 break at the call, not inside it).
    box = []
    _registers(box)
    return x + 1.0, box[0]()
