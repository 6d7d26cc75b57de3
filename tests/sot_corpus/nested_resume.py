"""A break deep in inlined calls (3.11+: nested resume): the top frame's graph runs up to the
innermost frame's breaking instruction, and each frame goes on where it stopped. Where a
frame cannot (a class's `__init__`, a callback of a builtin, a generator), the call above it
is the break and runs as a call, as on 3.9/3.10."""

import functools
import io
import sys

from ._case import NESTED_RESUME, arr, case

_LOG = io.StringIO()


def _leaf(y):
    z = y * 2.0
    print("leaf", file=_LOG)
    return z + 1.0


def _middle(y, scale=1.0):
    w = y - 3.0
    return _leaf(w) * scale + w


def _upper(y):
    v = y + 1.0
    return _middle(v, scale=2.0) - v


# Three frames down, a keyword call on the way: one break (3.11+); each frame's work before
# the break is in the top frame's graph, after it in each frame's resume function.
@case(args=lambda: (arr(3),), graphs=5 if NESTED_RESUME else 8, ops=9,
      breaks=["print"] if NESTED_RESUME else ["print"] * 4)
def three_frames_down(x):
    u = x * 0.5
    return _upper(u) + u


def _raises_after(y):
    print("about to raise", file=_LOG)
    raise ValueError(f"bad {y.shape}")


def _passes_on(y):
    return _raises_after(y + 1.0) * 2.0


# An exception from the innermost frame's rest leaves each frame as it would, to the top
# frame's handler.
@case(args=lambda: (arr(3),), graphs=1 if NESTED_RESUME else 2, ops=2,
      breaks=["print", "exception from the frame"] if NESTED_RESUME else ["print"] * 3)
def exception_after_the_break_reaches_the_top(x):
    try:
        return _passes_on(x * 3.0)
    except ValueError as error:
        return str(error)


class _Made:
    def __init__(self, y):
        self.y = y * 2.0
        print("made", file=_LOG)
        self.z = self.y + 1.0


# The call of a class gives the instance, not `__init__`'s None: the break is the top frame's
# call, and `__init__` runs in the call (translated on its own). 3.13 runs the second call's
# `__init__` as it is (noticed here, not nested resume's doing: the class call is a call).
@case(args=lambda: (arr(3),), graphs=4, ops=4, breaks=["print", "print"], hot=sys.version_info[:2] != (3, 13))
def a_break_in_init_is_the_callers_call(x):
    made = _Made(x + 1.0)
    return made.z - made.y


def _noisy_key(item):
    print("key", item, file=_LOG)
    return -item


# A key function `sorted` calls back: the break is the call of `sorted`. (Not hot: the key
# function's translation is guarded on each item, so the calls translate anew at first.)
@case(args=lambda: (arr(3), [3, 1, 2]), graphs=2, ops=2, breaks=["print"] * 2, hot=False)
def a_break_in_a_callback_is_the_builtins_call(x, items):
    ordered = sorted(items, key=_noisy_key)
    return x * ordered[0] + 1.0


def _scaled_by(factor, y):
    out = y * factor
    print("scaled", file=_LOG)
    return out - 1.0


# A partial of a function: its call gives the function's result, which goes on where it broke.
@case(args=lambda: (arr(3),), graphs=3 if NESTED_RESUME else 4, ops=4,
      breaks=["print"] if NESTED_RESUME else ["print", "print"])
def a_partial_goes_on_in_its_function(x):
    triple = functools.partial(_scaled_by, 3.0)
    return triple(x + 2.0) * 2.0


def _fills(y):
    bucket = [y * 2.0]
    print("filling", file=_LOG)
    bucket.append(y + 1.0)
    return bucket


def _wraps_list(y):
    made = _fills(y)
    made.append(y)
    return made


# A list made before the break is the one object the frames go on with after it.
@case(args=lambda: (arr(3),), graphs=2 if NESTED_RESUME else 3, ops=3,
      breaks=["print"] if NESTED_RESUME else ["print", "print", "print"])
def a_list_made_before_the_break_is_one_object_after_it(x):
    items = _wraps_list(x - 1.0)
    return items, len(items)


class _Model:
    def __init__(self, w):
        self.w = w

    def forward(self, y):
        h = y @ self.w
        return self.activate(h)

    def activate(self, h):
        print("activating", file=_LOG)
        return h * (h > 0)


# A method calling a method: the bound method's function goes on where it broke.
@case(args=lambda: (_Model(arr(3, 3, seed=1)), arr(2, 3)), graphs=3 if NESTED_RESUME else 4, ops=5,
      breaks=["print"] if NESTED_RESUME else ["print", "print", "print"])
def a_method_chain_goes_on_in_each_method(model, x):
    return model.forward(x + 0.5) - 0.5


def _sums_after(y, n):
    base = y + 1.0
    print("summing", file=_LOG)
    return sum(base * k for k in range(n))


# A frame with a cell (a generator expression after the break closes over `base`): its bridge
# is made when the call runs, with a new cell holding `base`.
@case(args=lambda: (arr(3),), graphs=3 if NESTED_RESUME else 4, ops=9,
      breaks=["print"] if NESTED_RESUME else ["print", "print"])
def a_frame_with_cells_goes_on(x):
    return _sums_after(x * 2.0, 3) - 1.0


def _logged(function):
    def wrapper(y):
        print("calling", function.__name__, file=_LOG)
        return function(y) * 2.0
    return wrapper


@_logged
def _plus_three(y):
    return y + 3.0


# A decorator's wrapper (a closure over the function it wraps) goes on where it broke, in the
# wrapper's own closure.
@case(args=lambda: (arr(3),), graphs=3, ops=4,
      breaks=["print"] if NESTED_RESUME else ["print", "print"])
def a_closure_goes_on_in_its_cells(x):
    return _plus_three(x - 1.0) + 1.0


# A closure made by the frame writes its cell after the break: the frame reads what it wrote.
@case(args=lambda: (arr(3),), graphs=3, ops=3,
      breaks=["print"] if NESTED_RESUME else ["print", "print"])
def a_closure_writes_its_cell_after_the_break(x):
    count = 0

    def bump(y):
        nonlocal count
        print("bump", file=_LOG)
        count += 1
        return y * count

    return bump(x + 1.0) + count


def _calls_with_star(function, *args, **kwargs):
    scale = kwargs.pop("scale", 1.0)
    return function(*args, **kwargs) * scale


# A call with `*args` and `**kwargs` (CALL_FUNCTION_EX) on the way goes on as a plain call.
@case(args=lambda: (arr(3),), graphs=4 if NESTED_RESUME else 5, ops=5,
      breaks=["print"] if NESTED_RESUME else ["print", "print", "print"])
def a_star_call_on_the_way_goes_on(x):
    return _calls_with_star(_leaf, x + 2.0, scale=0.5) - 2.0


def _logged_layer(y, k):
    z = y * k
    print("layer", k, file=_LOG)
    return z + 1.0


def _layers(y, n):
    acc = y - 1.0
    for _ in range(n):
        acc = _logged_layer(acc, 0.5)
    return acc * 2.0


# A callee's call inside its loop breaks: the callee resumes in a bridge running its loop on
# from that call (its later rounds call the layer as the original does), not as a call
# of its own translated again from its start.
@case(args=lambda: (arr(3), 3), graphs=5 if NESTED_RESUME else 6, ops=7 if NESTED_RESUME else 6,
      breaks=["print"] * 2 if NESTED_RESUME else ["print"] * 3)
def a_callee_resumes_inside_its_loop(x, n):
    u = x + 0.5
    return _layers(u, n) - u


def _scan(y, weights):
    total = y * 0.0
    for w in weights:
        total = total + _logged_layer(y, 0.5)
        if w > 1.5:
            last = w
            break
    else:
        last = None
    return total, last


# The callee's loop is left by `break`, with a variable it assigned first inside the loop.
@case(args=lambda: (arr(3), [1.0, 2.0, 3.0]), graphs=4 if NESTED_RESUME else 5,
      ops=6 if NESTED_RESUME else 5, breaks=["print"] * 2 if NESTED_RESUME else ["print"] * 3)
def a_callee_loop_left_by_break_hands_on_what_it_assigned(x, weights):
    total, last = _scan(x * 2.0, weights)
    return total + 1.0, last
