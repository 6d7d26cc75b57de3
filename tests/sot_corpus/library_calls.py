"""Calls of library functions (the standard library's): inlined as user functions are, within
a budget of instructions per outermost library call; whatever stops one inside (a break,
something not modeled, the budget spent) makes the whole call the break, at the call site."""

import collections
import colorsys
import copy
import dataclasses
import enum
import functools
import heapq
import inspect
import os
import pathlib
import sys
import textwrap
import typing

from ._case import arr, case


@case(args=lambda: (arr(3),), graphs=1, ops=3)
def library_arithmetic_inlined(x):
    h, s, v = colorsys.rgb_to_hsv(0.2, 0.4, 0.6)
    return x * h + s + v


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def library_exception_caught_by_caller(x):
    # dataclasses.fields raises TypeError (from None) inside the library: the caller catches it.
    try:
        dataclasses.fields(5)
    except TypeError as error:
        return x + len(str(error)), error.__cause__ is None, error.__suppress_context__
    return x


@case(args=lambda: (arr(3),), graphs=1, ops=1, raises=TypeError)
def library_exception_escapes(x):
    y = x + 1
    dataclasses.fields(y)
    return y


@case(args=lambda: (arr(3), collections.UserList([1, 2, 3])), graphs=1, ops=1)
def library_method_mutates_argument(x, items):
    items.append(4)  # UserList.append, the library's: `self.data.append(item)`
    return x + len(items.data), items.data


@case(args=lambda: (arr(3), collections.UserList([1])), graphs=1, ops=1)
def library_method_extends_argument(x, items):
    items.extend([5, 6])  # UserList.extend: `self.data.extend(other)`, its isinstance test first
    return x + len(items.data), items.data


@case(args=lambda: (arr(3), [5, 1, 4, 2, 0]), graphs=1, ops=1)
def library_function_mutates_caller_list(x, heap):
    heapq._siftdown(heap, 0, len(heap) - 1)  # the Python one: moves the 0 up, in place
    return x + heap[0], heap


class _Color(enum.Enum):
    RED = 1
    GREEN = 2
    BLUE = 4


@case(args=lambda: (arr(3), 2), graphs=1, ops=1)
def enum_member_by_value(x, value):
    # `_Color(2)` runs EnumType.__call__ (a metaclass's `__call__` written in Python): the
    # member that exists, looked up by value (inspect.signature: `_ParameterKind(kind)`).
    member = _Color(value)
    return x * member.value, member is _Color.GREEN, member.name


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def library_generator_iterated_by_caller(x):
    total = 0
    for member in _Color:  # EnumType.__iter__ gives the library's generator
        total += member.value
    return x + total


class _Node:
    def __init__(self, value, child=None):
        self.value = value
        self.child = child

    def __copy__(self):
        # User code called back from copy.copy, calling copy.copy again (nested library
        # calls share the outermost call's budget).
        child = copy.copy(self.child) if self.child is not None else None
        return _Node(self.value + 1, child)


@case(args=lambda: (arr(3),), graphs=1, ops=2)
def library_calls_back_user_code(x):
    node = copy.copy(_Node(1, _Node(10)))
    return x * node.value + node.child.value


@functools.cache
def _cached_hue(r):
    return colorsys.rgb_to_hsv(r, 0.5, 0.25)[0]


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def lru_cached_user_function_calling_the_library(x):
    return x + _cached_hue(0.75)


@functools.lru_cache(maxsize=16)
def _bounded_pair(n):
    return [n, n + 1]  # the cache keeps this list: every later call gives the same one


_MADE_BY_A_CACHED_CALL = "an lru_cache'd function, gives an object it made"


@case(args=lambda: (arr(3),), graphs=1, ops=1, breaks=[_MADE_BY_A_CACHED_CALL] * 2)
def bounded_lru_cache_gives_its_one_object(x):
    a = _bounded_pair(2)
    b = _bounded_pair(2)
    return x + len(a) if a is b else x - 1.0


@case(args=lambda: (arr(3),), graphs=1, ops=1, breaks=["_SpecialGenericAlias.__getitem__"] * 2)
def typing_alias_is_the_cached_one(x):
    # typing caches its aliases (a bounded lru_cache): attrs compares field types by identity.
    # (Where typing's cached function reads the caller's frame, it breaks on that first.)
    return x + 1.0 if typing.List[int] is typing.List[int] else x - 1.0  # noqa: UP006


_LONG_TEXT = "line\n" * 400


@case(args=lambda: (arr(3),), graphs=2, ops=2, breaks=["indent (a library function: more than 1000 instructions"])
def library_call_over_budget(x):
    y = x + 1
    text = textwrap.indent(_LONG_TEXT, "  ")  # a loop of 400 rounds: past the budget
    return y * len(text)


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def library_call_under_budget(x):
    return x + len(textwrap.indent("a\nb\n", "  "))


_NEW_TYPE_IS_A_CLASS = sys.version_info >= (3, 10)


@case(args=lambda: (arr(3),), graphs=2 if _NEW_TYPE_IS_A_CLASS else 1, ops=2,
      breaks=["unsupported call: NewType"] if _NEW_TYPE_IS_A_CLASS else 0)
def library_function_reading_frames(x):
    # NewType (a class from 3.10 on) reads its caller's module from the frame
    # (typing._caller: sys._getframe or sys._getframemodulename): a break; the call runs as
    # it is. 3.9's is a function that makes a function and names it: translated.
    y = x + 1
    user_id = typing.NewType("UserId", int)
    return y * len(user_id.__name__)


def _recursive_sum(items):
    # The user's function, handed to a library function that calls it back, recursing.
    return sum(functools.reduce(lambda a, b: a + b, [i]) if isinstance(i, int) else _recursive_sum(i)
               for i in items)


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def library_calls_in_recursion(x):
    return x + _recursive_sum([1, [2, [3, copy.copy((4,))[0]]]])


# What scikit-learn's validation reaches in the standard library, modeled exactly.

class _Fitted:
    def __init__(self):
        self.coef_ = 2.0
        self.alpha = 0.5
        self.classes_ = (0, 1)


@case(args=lambda: (arr(3), _Fitted()), graphs=1, ops=1)
def vars_of_an_argument(x, estimator):
    # vars(obj) is obj.__dict__ itself (check_is_fitted lists the names ending in "_").
    fitted = [name for name in vars(estimator) if name.endswith("_") and not name.startswith("__")]
    return x * len(fitted), fitted, vars(estimator) is estimator.__dict__


# 3.9 and 3.10 (block stacks) run the frame from a break inside a try as it is.
@case(args=lambda: (arr(3),), graphs=2 if sys.version_info >= (3, 11) else 1,
      ops=2 if sys.version_info >= (3, 11) else 1, breaks=["vars() of an object without __dict__"])
def vars_of_an_object_without_dict(x):
    y = x + 1
    try:
        vars(3)  # TypeError, raised by the call run as it is
    except TypeError:
        y = y * 2
    return y


class _Slotted:
    __slots__ = ("a", "b")

    def __init__(self):
        self.a = 3


@case(args=lambda: (arr(3), _Slotted()), graphs=1, ops=1)
def c_data_descriptors_read_on_instances(x, slotted):
    # A getset descriptor's __get__ bound (inspect's _static_getmro) and unbound, a member
    # descriptor's (a slot), each the attribute the instance's read finds.
    mro = type.__dict__["__mro__"].__get__(type(slotted))
    namespace = type(type.__dict__["__dict__"]).__get__(type.__dict__["__dict__"], _Slotted)
    a = type(slotted).__dict__["a"].__get__(slotted)
    return x + a, mro, "a" in namespace, "__init__" in namespace, "z" in namespace


_MISSING = object()
# Where inspect looks classes up through weak references it makes (3.13, later 3.12s), the
# translation does not make them: each call simulated breaks. Of an array (a class without
# instance dicts) the call is answered from the class, not simulated.
_WEAK_MRO = hasattr(inspect, "_shadowed_dict_from_weakref_mro_tuple")


@case(args=lambda: (arr(3), _Fitted()), graphs=1, ops=1,
      breaks=["getattr_static (a library function: unsupported call: creating a"] if _WEAK_MRO else 0)
def getattr_static_of_instances_and_arrays(x, estimator):
    found = inspect.getattr_static(estimator, "coef_", _MISSING)
    on_array = inspect.getattr_static(x, "__narwhals_dataframe__", _MISSING) is _MISSING
    shape = inspect.getattr_static(x, "shape") is type(x).__dict__["shape"]
    return x * found, on_array, shape


@case(args=lambda: (arr(3), _Fitted()), graphs=1, ops=1)
def object_getattribute_called(x, estimator):
    alpha = object.__getattribute__(estimator, "alpha")
    try:
        object.__getattribute__(x, "__dict__")  # an array has none: AttributeError
    except AttributeError as error:
        return x * alpha, str(error)
    return x


@case(args=lambda: (arr(3), [1, 2], {"k": 5}), graphs=1, ops=1)
def unbound_container_methods(x, items, table):
    list.append(items, 3)
    found = dict.get(table, "k", 0) + dict.get(table, "missing", 10)
    return x * found, items, dict.get(table, "k"), tuple.index((4, 5, 6), 5)


class _OwnGet(dict):
    def get(self, key, default=None):
        return 42


@case(args=lambda: (arr(3), _OwnGet(k=1)), graphs=1, ops=2)
def unbound_dict_method_of_a_subclass(x, table):
    y = x + 1
    # dict's own get, not the subclass's: the entry read from the dict's storage.
    found = dict.get(table, "k")
    return y * found


@case(args=lambda: (arr(3), {"a": 1.5, "b": 2}), graphs=1, ops=2)
def dict_get_of_an_argument(x, table):
    return x * table.get("a", 0) + table.get("missing", 3), table.get("b")


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def os_path_functions_of_text(x):
    # os.fspath(path) of a str is the str: os.path's functions run whole.
    path = os.path.join("data", "model.bin")
    return x * len(path), os.path.basename(path), os.path.splitext(path), os.fspath(b"raw")


@case(args=lambda: (arr(3), pathlib.PurePosixPath("data", "model.bin")), graphs=2, ops=2, breaks=["fspath"])
def os_fspath_of_a_path_object(x, given):
    y = x + 1
    path = os.fspath(given)  # its __fspath__: a break
    return y * len(path)


class _SlottedWithHook:
    __slots__ = ("a",)

    def __getattr__(self, name):
        return "hooked"


@case(args=lambda: (arr(3), _SlottedWithHook()), graphs=1, ops=1, breaks=["member_descriptor.__get__"],
      raises=AttributeError)
def member_descriptor_get_beside_getattr(x, slotted):
    # slotted.a is "hooked" (the unset slot raises, __getattr__ answers); the descriptor's own
    # __get__ raises AttributeError: not modeled, the call runs as it is.
    y = x + len(slotted.a)
    type(slotted).__dict__["a"].__get__(slotted)
    return y


def _decorated(function):
    @functools.wraps(function)
    def wrapper(*args):
        return function(*args)

    return wrapper


@_decorated
def _wrapped_scale(x):
    return x * 2.0


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def unwrap_reads_the_recursion_limit(x):
    # inspect.unwrap (under inspect.signature: scikit-learn's estimators) bounds its loop
    # by sys.getrecursionlimit(): read while translating, guarded.
    inner = inspect.unwrap(_wrapped_scale)
    return inner(x), inner.__name__


def _documented(y):
    """Scales."""
    return y * 3.0


_documented.marker = "kept"


@case(args=lambda: (arr(3),), graphs=1, ops=2)
def wraps_a_function_the_translation_made(x):
    # functools.wraps on a function made here (scikit-learn's `delayed`): the wrapper takes
    # the wrapped one's name, doc, module, `__dict__` and `__wrapped__`.
    @functools.wraps(_documented)
    def wrapper(y):
        return _documented(y) + 1.0

    wrapper.extra = 1
    return (wrapper(x), wrapper.__name__, wrapper.__qualname__, wrapper.__doc__,
            wrapper.__module__, wrapper.__wrapped__ is _documented, wrapper.marker,
            list(wrapper.__dict__), wrapper.__dict__["extra"], "marker" in wrapper.__dict__,
            len(wrapper.__dict__))


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def a_wrapped_function_is_made_again_with_what_was_stored(x):
    # Its `__dict__` returned, the function the translation made and renamed is made so by
    # the generated code: the real function's `__dict__`, as the stores left it.
    @functools.wraps(_documented)
    def wrapper(y):
        return y * 2.0

    wrapper.extra = [1]
    described = vars(wrapper)
    return (wrapper(x), described, wrapper.__name__, wrapper.__qualname__, wrapper.__doc__,
            wrapper.__module__, wrapper.__wrapped__ is _documented)


class _CallWrapper:
    # scikit-learn's `_FuncWrapper`: update_wrapper(self, function) on a new object.
    def __init__(self, function):
        self.function = function
        functools.update_wrapper(self, function)

    def __call__(self, y):
        return self.function(y)


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def update_wrapper_on_an_object_the_translation_made(x):
    wrapped = _CallWrapper(_documented)
    return (wrapped(x), wrapped.__name__, wrapped.__doc__, wrapped.marker,
            sorted(wrapped.__dict__), wrapped.__dict__["__wrapped__"] is _documented)


class _Scaler:
    """Scales by its factor."""

    def __init__(self, factor):
        self.factor = factor

    def scale(self, y):
        """Scales y."""
        return y * self.factor


_Scaler.scale.marker = "on the function"


@case(args=lambda: (arr(3), _Scaler(2.0)), graphs=1, ops=1)
def wraps_a_bound_method_of_the_frame(x, scaler):
    # functools.wraps of a bound method (scikit-learn's `delayed(self._tree.query)`): the
    # method's `__module__`, `__name__`, `__doc__`, `__dict__` are its function's, read
    # through `__func__` as the method's C lookup forwards them.
    method = scaler.scale

    @functools.wraps(method)
    def wrapper(y):
        return method(y)

    return (wrapper(x), wrapper.__name__, wrapper.__qualname__, wrapper.__doc__, wrapper.__module__,
            wrapper.marker, wrapper.__wrapped__.__func__ is _Scaler.scale, method.__self__ is scaler,
            method.__func__ is _Scaler.scale)


@case(args=lambda: (arr(3), _Scaler(3.0)), graphs=1, ops=1)
def update_wrapper_of_a_bound_method_on_a_new_object(x, scaler):
    wrapped = _CallWrapper(scaler.scale)
    return wrapped(x), wrapped.__name__, wrapped.__doc__, wrapped.marker, sorted(wrapped.__dict__)


class _SlotAndDict:
    __slots__ = ("a", "__dict__")


@case(args=lambda: (arr(3),), graphs=1, ops=1, breaks=["class attribute __dict__"])
def the_dict_of_an_object_with_slots_breaks(x):
    # A slot is stored outside the `__dict__`: the view is not made for such a class.
    obj = _SlotAndDict()
    obj.a = 1
    obj.b = 2
    return x + 1.0, obj.__dict__


class _SlottedTag:
    __slots__ = ("kind", "names", "unset")

    def __init__(self, kind, names):
        self.kind = kind
        self.names = names


@dataclasses.dataclass
class _Tags:
    inner: _SlottedTag
    extra: dict
    pair: tuple
    missing: object = None


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def deepcopy_of_objects_the_translation_made(x):
    # The copy copy.deepcopy makes (a bare instance given its __dict__ and slots' copies),
    # one list met three times copied once, atoms and a tuple of atoms kept, no break.
    shared = [1, 2]
    tags = _Tags(_SlottedTag("c", shared), {"a": shared, "b": (1, "s")}, (shared, 3))
    copied = copy.deepcopy(tags)
    copied.inner.names.append(3)
    return (x + 1.0, copied.inner.kind, copied.inner.names, tags.inner.names, hasattr(copied.inner, "unset"),
            copied.extra, copied.pair, copied.missing, copied is tags, copied.inner is tags.inner,
            copied.extra["a"] is copied.inner.names, copied.pair[0] is copied.inner.names,
            copied.extra["b"] is tags.extra["b"], copy.deepcopy(None), copy.deepcopy("s"))


class _OwnCopy:
    def __init__(self, value):
        self.value = value

    def __deepcopy__(self, memo):
        return _OwnCopy(self.value + 1)


@case(args=lambda: (arr(3),), graphs=1, ops=2, breaks=["unsupported call: deepcopy"])
def deepcopy_of_an_object_copying_itself(x):
    # A class's own __deepcopy__: the library function is called as it is (it breaks).
    copied = copy.deepcopy(_OwnCopy(1))
    return x * copied.value + 1.0


@case(args=lambda: (arr(3),), graphs=1, ops=2, breaks=["an attribute made after it", "print"])
def a_function_given_a_function_made_after_it_across_print(x):
    # `first` is made before `second`: the generated code cannot store `second` in it as it
    # makes it, and the translation breaks where `first` was made.
    def first(v):
        return v + 1.0

    def second(v):
        return v * 2.0

    first.partner = second
    print("made")
    return first(x), first.partner(x)


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def type_params_of_a_made_function_are_a_field_from_312(x):
    # 3.12+ keep `__type_params__` in the function; before, it is an item of its `__dict__`.
    def made(v):
        return v

    made.__type_params__ = ()
    return x + 1.0, "__type_params__" in made.__dict__, made.__type_params__
