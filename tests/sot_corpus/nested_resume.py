"""A break deep in inlined calls (3.11+: nested resume): the top frame's graph runs up to the
innermost frame's breaking instruction, and each frame goes on where it stopped. Where a
frame cannot (a class's `__init__`, a callback of a builtin, a generator), the call above it
is the break and runs as a call, as on 3.9/3.10."""

import functools
import io
import sys
import sysconfig

from ._case import NESTED_RESUME, arr, case, pos

_LOG = io.StringIO()
# Free-threaded 3.13, which takes another way through a break in an inlined comprehension.
_FREE_THREADED_313 = sys.version_info[:2] == (3, 13) and bool(sysconfig.get_config_var("Py_GIL_DISABLED"))


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


def _raising_leaf(y, fail):
    w = y + 3.0
    print("leaf", file=_LOG)
    if fail:
        raise ValueError("leaf failed")
    return w * 2.0


def _guarded(y, fail):
    try:
        z = _raising_leaf(y * 2.0, fail)
    except ValueError as error:
        return y - 1.0, str(error)
    return z + 1.0, "ok"


# A callee's call inside `try`: the callee resumes under its handler (a bridge made from its
# code runs the call there), not as a call of its own translated again from its start.
@case(args=lambda: (arr(3), False), graphs=4 if NESTED_RESUME else 6, ops=6,
      breaks=["print"] if NESTED_RESUME else ["print"] * 3)
def a_callee_resumes_under_its_try(x, fail):
    r, why = _guarded(x + 0.5, fail)
    return r * 3.0, why


# What the frame below raises after the break reaches the callee's handler.
@case(args=lambda: (arr(3), True), graphs=2 if NESTED_RESUME else 4, ops=4,
      breaks=["print"] if NESTED_RESUME else ["print"] * 3)
def a_callee_handler_catches_what_the_rest_below_raises(x, fail):
    r, why = _guarded(x + 0.5, fail)
    return r * 3.0, why


class _Scope:
    """A context manager keeping what happened to it; it suppresses a KeyError."""

    def __init__(self):
        self.events = []

    def __enter__(self):
        self.events.append("enter")
        return self

    def __exit__(self, kind, value, traceback):
        self.events.append("exit" if kind is None else kind.__name__)
        return kind is KeyError


def _lookup_leaf(y, key):
    w = y * 3.0
    print("lookup", key, file=_LOG)
    return w + {"a": 1.0}[key]


def _scoped(y, scope, key):
    with scope:
        z = _lookup_leaf(y - 1.0, key)
        return z * 2.0
    return y


# A callee's call inside its `with` block: the callee resumes there, and its `with` exits
# as the original's does.
@case(args=lambda: (arr(3), _Scope(), "a"), graphs=4 if NESTED_RESUME else 6, ops=6,
      breaks=["print"] if NESTED_RESUME else ["print"] * 3)
def a_callee_resumes_inside_its_with_block(x, scope, key):
    return _scoped(x + 1.0, scope, key) + 0.5, scope.events


# What the frame below raises after the break goes through the callee's `with` exit, which
# suppresses it; the callee goes on after its block.
@case(args=lambda: (arr(3), _Scope(), "b"), graphs=2 if NESTED_RESUME else 4, ops=4,
      breaks=["print"] if NESTED_RESUME else ["print"] * 3)
def a_callee_with_block_suppresses_what_the_rest_below_raises(x, scope, key):
    return _scoped(x + 1.0, scope, key) + 0.5, scope.events


def _finally_leaf(y, log):
    try:
        return _leaf(y + 2.0)
    finally:
        log.append("finally")


# A callee's call inside `try ... finally`: its `finally` runs once, after the rest below.
@case(args=lambda: (arr(3), []), graphs=3 if NESTED_RESUME else 5, ops=5,
      breaks=["print"] if NESTED_RESUME else ["print"] * 3)
def a_callee_finally_runs_after_the_rest_below(x, log):
    return _finally_leaf(x * 2.0, log) - 1.0, log


def _tried_layers(y, n):
    acc = y - 1.0
    try:
        for _ in range(n):
            acc = _logged_layer(acc, 0.5)
    except ArithmeticError:
        return y
    return acc * 2.0


# A callee's call inside a loop inside `try`: the loop runs on in a bridge under the handler.
@case(args=lambda: (arr(3), 3), graphs=5 if NESTED_RESUME else 6, ops=7 if NESTED_RESUME else 6,
      breaks=["print"] * 2 if NESTED_RESUME else ["print"] * 3)
def a_callee_resumes_inside_its_loop_under_its_try(x, n):
    u = x + 0.5
    return _tried_layers(u, n) - u


def _converted(items):
    return [item.tolist() if item.ndim > 1 else item for item in items]


# A callee's call inside a comprehension. 3.12+ inline it, under a handler that unbinds
# its variable again at its end: no loop bridge runs there, so the callee's frame cuts the
# chain (the top frame breaks at its call, as it does before 3.11) and the callee runs
# eagerly; 3.11 resumes in the comprehension's own frame. Free-threaded 3.13 breaks the
# callee's translation before the comprehension instead, and its rest once more at the
# append to the list made before it (noticed here, not nested resume's doing).
@case(args=lambda: (arr(3), arr(2, 2)), graphs=1, ops=2,
      breaks=(["tolist"] * 3 if not NESTED_RESUME else ["tolist"] if sys.version_info < (3, 12)
              else ["tolist", "comprehension inside it unbinds its variable"]
              + ["adding to a list or set from outside"] * _FREE_THREADED_313))
def a_callee_comprehension_call_breaks(x, y):
    z = x * 2.0
    return _converted([z, y + 1.0]), z


def _halved_while_large(y):
    for _ in range(3):
        if y.sum() > 1.0:
            y = y * 0.5
    return y + 1.0


# A branch on a tensor's value in a callee's loop (where a branch is not assumed): the graph
# runs up to it, the callee's bridge runs its loop on from the branch (taking the truth;
# 3.13+: running its `TO_BOOL`) and the top frame goes on after its call; not the callee
# translated again from its start as a call of its own.
@case(args=lambda: (pos(3),), graphs=3 if NESTED_RESUME else 4, ops=5,
      breaks=["data-dependent"] if NESTED_RESUME else ["data-dependent"] * 2)
def a_branch_on_a_tensor_in_a_callee_loop_goes_on_there(x):
    return _halved_while_large(x * 4.0) - x


def _truth_of(y):
    if y > 0.0:
        return y
    return -y


def _tried_truth(y):
    try:
        return _truth_of(y * 2.0)
    except ValueError as error:
        return y + 10.0, str(error)


# The truth of an array of three raises where the original's does: in the innermost frame's
# bridge, to the handler of the frame above.
@case(args=lambda: (arr(3),), graphs=1 if NESTED_RESUME else 3, ops=3,
      breaks=["data-dependent"] if NESTED_RESUME else ["data-dependent"] * 3)
def an_ambiguous_truth_in_a_callee_goes_to_the_handler_above(x):
    return _tried_truth(x * 3.0)


class _Lookup:
    """Items computed by a `__getitem__` written in Python, which breaks (it prints)."""

    def __getitem__(self, key):
        print("lookup", key, file=_LOG)
        return key * 2.0


def _looked_up(y, table):
    w = y + 1.0
    k = table[3]
    return w * k


# A break inside a Python `__getitem__` that a callee's subscript runs: the callee's frame
# is the innermost one that goes on (its bridge runs the subscript, whose method is then a
# frame of its own, translated and breaking on its own), not the callee translated again
# from its start.
@case(args=lambda: (arr(3), _Lookup()), graphs=3 if NESTED_RESUME else 4, ops=4,
      breaks=["print"] * 2 if NESTED_RESUME else ["print"] * 3)
def a_break_in_a_python_getitem_resumes_at_the_subscript(x, table):
    u = x * 2.0
    return _looked_up(u, table) - u


def _with_local_class(y):
    w = y * 2.0

    class Scaled:  # noqa: F841 (made for what making it does, not read)
        factor = 3.0

    return w * 3.0


# A class statement in a callee: the VM reads `__build_class__` (a builtin) and breaks at
# its call, where the callee's bridge makes the class and goes on; not a break at
# `LOAD_BUILD_CLASS` too, with the callee translated again from its start and its
# resume function breaking again at the call.
@case(args=lambda: (arr(3),), graphs=3 if NESTED_RESUME else 4, ops=4,
      breaks=["__build_class__"] if NESTED_RESUME else ["__build_class__"] * 2)
def a_class_statement_in_a_callee_breaks_once(x):
    return _with_local_class(x + 1.0) - x


def _with_optional_dependency(y):
    w = y * 2.0
    try:
        import _framehook_corpus_not_installed  # noqa: F401
    except ImportError:
        return w + 1.0
    return w


# An import that fails on every call (an optional dependency not installed: scikit-learn's
# `import pandas`) in a callee: the break is at the import, where the callee's bridge runs
# it and its handler takes the ImportError; not a break at the callee's call too.
@case(args=lambda: (arr(3),), graphs=2 if NESTED_RESUME else 3, ops=3,
      breaks=["import of"] if NESTED_RESUME else ["import of"] * 2)
def an_import_failing_in_a_callee_breaks_once(x):
    return _with_optional_dependency(x + 1.0) - x
