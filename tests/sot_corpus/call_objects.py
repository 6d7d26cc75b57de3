"""Calling objects: classes with __call__, dataclasses, properties, staticmethods, classmethods, slots."""

import copy
import dataclasses
import functools

import numpy as np

from ._case import Cycling, arr, case


class _Affine:
    def __init__(self, w, b):
        self.w = w
        self.b = b

    def __call__(self, v):
        return v * self.w + self.b


@dataclasses.dataclass
class _Point:
    a: float
    b: float = 1.0

    def scale(self, v):
        return v * self.a


@dataclasses.dataclass
class _Pair:
    left: np.ndarray
    right: np.ndarray


class _Props:
    def __init__(self, k):
        self._k = k

    @property
    def k(self):
        return self._k

    @k.setter
    def k(self, value):
        self._k = value

    @property
    def double(self):
        return self._k * 2


class _Holder:
    def __init__(self, v):
        self.v = v

    @property
    def doubled(self):
        return self.v * 2


class _Tools:
    factor = 3.0

    @staticmethod
    def scale(v, k):
        return v * k

    @classmethod
    def make(cls, v):
        return v * cls.factor

    def inst(self, v):
        return v - self.factor


class _Slotted:
    __slots__ = ("v",)

    def __init__(self, v):
        self.v = v


class _Inner:
    value = 2.5


class _Outer:
    def __init__(self):
        self.inner = _Inner()


@case(args=lambda: (arr(3),), graphs=1, ops=2)
def call_instance(x):
    return _Affine(2.0, 1.0)(x)


@case(args=lambda: (_Affine(2.0, 1.0), arr(3)), graphs=1, ops=2)
def call_instance_argument(f, x):
    return f(x)


@case(args=lambda: (arr(3),), graphs=1, ops=2)
def dataclass_built(x):
    p = _Point(2.0)
    return x * p.a + p.b


@case(args=lambda: (_Pair(arr(2, 3), arr(3, 2, seed=1)),), graphs=1, ops=1)
def dataclass_argument_with_arrays(p):
    return p.left @ p.right


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def dataclass_returned(x):
    return _Point(x * 2, 3.0)


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def dataclass_method(x):
    return _Point(4.0).scale(x)


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def property_python_value(x):
    return x * _Props(1.5).double


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def property_array_value(x):
    return _Holder(x).doubled


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def property_setter(x):
    p = _Props(1.0)
    p.k = 4.0
    return x * p.k


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def staticmethod_call(x):
    return _Tools.scale(x, 3.0)


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def classmethod_call(x):
    return _Tools.make(x)


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def staticmethod_through_instance(x):
    return _Tools().scale(x, 0.5)


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def method_through_class(x):
    t = _Tools()
    return _Tools.inst(t, x)


@case(args=lambda: (arr(3),), graphs=1, ops=2)
def bound_dunder_call(x):
    m = _Affine(1.0, 0.5).__call__
    return m(x)


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def slotted_object(x):
    s = _Slotted(x)
    return s.v * 2


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def class_attribute(x):
    return x * _Tools.factor


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def nested_attributes(x):
    return x + _Outer().inner.value


@case(args=lambda: (arr(3),), graphs=1, ops=2)
def call_with_keywords(x):
    return _Affine(w=3.0, b=0.0)(v=x)


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def dataclass_equality(x):
    same = _Point(1.0, 2.0) == _Point(1.0, 2.0)
    return x * same, _Point(5.0).b


class _Plain:
    def __init__(self, v):
        self.v = v


class _Ordered:
    def __init__(self, v):
        self.v = v

    def __lt__(self, other):
        return self.v < other.v


@case(args=lambda: (arr(3),), graphs=1, ops=4)
def equality_without_eq_is_identity(x):
    a, b = _Plain(1.0), _Plain(1.0)
    return x * (a == b) + x * (a == a) + (a != b)


@case(args=lambda: (arr(3),), graphs=1, ops=3)
def reflected_comparison(x):
    low, high = _Ordered(1.0), _Ordered(2.0)
    return x * (high > low) + x * (low < high)  # `high > low` runs low.__lt__(high)


class _TwoSlots:
    __slots__ = ("v", "w")

    def __init__(self, v):
        self.v = v


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def slotted_unset_slot(x):
    s = _TwoSlots(x)
    try:
        return s.w  # never set: AttributeError, as from a real instance
    except AttributeError:
        return s.v * 2


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def slotted_object_returned(x):
    s = _TwoSlots(x + 1)
    s.w = 2.0
    return s.v, s.w, type(s).__name__, s.__slots__


@case(args=lambda: (arr(3), _TwoSlots(1.0)), graphs=1, ops=2)
def a_slot_of_a_frame_object_is_stored(x, s):
    # pyparsing and scikit-learn store into slotted objects: the store is replayed after
    # the graph, and read back while translating.
    s.w = x * 2
    return s.w + s.v


class _Doubling:
    def __setattr__(self, name, value):
        object.__setattr__(self, name, value * 2)


class _Shifted(_Doubling):
    def __setattr__(self, name, value):
        super().__setattr__(name, value + 1)


@case(args=lambda: (arr(3), _Shifted()), graphs=1, ops=4)
def a_python_setattr_is_inlined(x, target):
    # STORE_ATTR calls the class's own __setattr__: inlined, with object.__setattr__ (and
    # super()'s) as the store it makes, replayed past the override.
    target.y = x
    made = _Doubling()
    made.y = x
    return target.y + made.y, made


class _FrozenPoint:
    __slots__ = ("v",)

    def __init__(self, v):
        # attrs' frozen classes: the store past their own __setattr__, bound once.
        setter = _object_setattr_get(self)
        setter("v", v)

    def __setattr__(self, name, value):
        raise AttributeError(f"{type(self).__name__} is frozen")


_object_setattr_get = object.__setattr__.__get__


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def a_frozen_class_is_made_and_refuses_a_store(x):
    point = _FrozenPoint(x * 2)
    try:
        point.v = 0
        refused = None
    except AttributeError as error:
        refused = str(error)
    return point.v, refused, point


class _Results:
    """pyparsing's ParseResults: slots, and names read through a Python __getattr__."""

    __slots__ = ("_tokens", "_names")

    def __init__(self, tokens, names):
        self._tokens, self._names = tokens, names

    def __getattr__(self, name):
        try:
            return self._names[name]
        except KeyError:
            if name.startswith("__"):
                raise AttributeError(name) from None
            return ""


class _Defaults:
    def __init__(self, **fields):
        self.__dict__.update(fields)

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)  # copy's and pickle's protocols: not defaults
        return f"default {name}"


_defaults = Cycling(_Defaults(a=1.0), _Defaults(a=1.0, b="own"))


@case(args=lambda: (arr(3), _Results([2.0], {"scale": 3.0})), graphs=1, ops=2)
def a_python_getattr_answers_where_the_lookup_fails(x, results):
    # The slot read as it is; the missing names through __getattr__, inlined.
    return x * results._tokens[0] * results.scale, results.missing


@case(args=lambda: (arr(3), _defaults.next_value()), graphs=1, ops=1, rejected=1)
def a_python_getattr_is_guarded_by_what_the_object_lacks(x, record):
    # The hook answers for `b` while the object lacks it: another object with its own
    # `b` fails the guards.
    return x + record.a, record.b


class _NotesDict(dict):
    """scikit-learn's Bunch: a dict subclass with a Python __getattr__ (its type's lookup is
    then the hook calling dict's generic __getattribute__ first), notes kept in its own
    __dict__."""

    def __init__(self, notes, **items):
        super().__init__(items)
        self.__dict__["_notes"] = notes

    def __getattr__(self, key):
        try:
            return self.__dict__["_notes"][key]
        except KeyError:
            raise AttributeError(key) from None


_notes = Cycling(_NotesDict({"scale": 2.0}, a=1), _NotesDict({"scale": 3.0}, a=1))


@case(args=lambda: (arr(3), _notes.next_value()), graphs=1, ops=2, rejected=1)
def a_dict_subclass_with_getattr_reads_its_own_dict(x, notes):
    # `__dict__` is the type's descriptor (found before __getattr__ is asked); `scale`
    # through __getattr__, inlined; the other object's notes fail the guards.
    return x * notes.scale + notes.__dict__["_notes"]["scale"]


class _Tokens:
    """pyparsing's ParseResults: a Python __new__ (handing back an instance it is given)
    and a Python __init__, over slots."""

    __slots__ = ("items", "name")

    def __new__(cls, items=None, name=None):
        if isinstance(items, _Tokens):
            return items
        self = object.__new__(cls)
        self.items = [] if items is None else list(items)
        return self

    def __init__(self, items=None, name=None):
        self.name = name


class _Counted:
    def __new__(cls, value):
        self = super().__new__(cls)
        self.value = value
        return self


@case(args=lambda: (arr(3), [1.0, 2.0]), graphs=1, ops=3)
def a_python_new_then_init_are_inlined(x, items):
    tokens = _Tokens(items, "first")
    again = _Tokens(tokens, "second")  # the same object, initialised again
    counted = _Counted(x * 2)
    return x * len(tokens.items), tokens.name, again is tokens, tokens, counted.value + 1


def _scale(x, k, *, bias=0.0):
    return x * k + bias


@case(args=lambda: (arr(3),), graphs=1, ops=4)
def functools_partial_is_called_through(x):
    # A partial made here is called without a break: its function inlined with its
    # arguments first and its keywords under the call's.
    twice = functools.partial(_scale, k=2.0)
    return twice(x), twice(x, bias=1.0)


_partials = Cycling(functools.partial(_scale, k=2.0), functools.partial(_scale, k=3.0, bias=1.0))


@case(args=lambda: (arr(3), _partials.next_value()), graphs=1, ops=4, rejected=1)
def a_partial_from_the_caller_is_called_through(x, scaled):
    # Its function, arguments and keywords read through their sources (a toolz
    # pattern): no break, and another partial's keywords fail the guards.
    return scaled(x), scaled(x, bias=0.5)


@case(args=lambda: (arr(3),), graphs=1, ops=2)
def functools_partial_of_a_partial_is_flattened(x):
    inner = functools.partial(_scale, x)
    outer = functools.partial(inner, 3.0)
    return outer(), outer.func is _scale, outer.args[1], outer.keywords


class _Configured:
    scale = 2.0

    def method(self):
        return self


@case(args=lambda: (arr(3), _Configured), graphs=1, ops=1)
def a_classs_own_namespace_is_read_as_a_dict(x, cls):
    # attrs asks a class's __dict__ (a mappingproxy) what the class itself defines: each
    # entry read through it, guarded present or absent.
    namespace = cls.__dict__
    return x * namespace.get("scale", 1.0), "method" in namespace, "other" in namespace, namespace["scale"]


class _Element:
    """pyparsing's elements: equality written in Python, hashed by identity."""

    def __init__(self, name):
        self.name = name

    def __eq__(self, other):
        if isinstance(other, _Element):
            return self.name == other.name
        return NotImplemented

    __hash__ = object.__hash__


_others = Cycling(_Element("a"), _Element("b"))


@case(args=lambda: (arr(3), _Element("a"), _others.next_value()), graphs=1, ops=1, rejected=1)
def a_frame_objects_python_eq_is_inlined(x, element, other):
    # `==`, `!=` (object's, inverting __eq__) and `in` (identity, then ==) without a break;
    # another name fails the guards.
    same = element == other
    return x * 2, same, element != other, Ellipsis in [element, other], other in [element], element == "a"


_OBJECT_SETATTR = object.__setattr__


class _Attribute:
    """attrs' `Attribute`: slots set past its refusing __setattr__ by a bound setter."""

    __slots__ = ("name", "value")

    def __init__(self, name, value):
        bound_setattr = _OBJECT_SETATTR.__get__(self)
        bound_setattr("name", name)
        bound_setattr("value", value)

    def __setattr__(self, name, value):
        raise AttributeError("frozen")


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def a_slot_wrappers_get_binds_it(x):
    made = _Attribute("scale", x * 2)
    return made.value, made.name


class _Tally:
    count = 0


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def a_class_attribute_is_stored(x):
    # attrs counts its fields on a class attribute: stored after the graph, read back here.
    _Tally.count = 0
    _Tally.count += 1
    return x * _Tally.count, _Tally.count


class _Element2:
    """pyparsing's `ParserElement.copy()`: `copy.copy(self)`, then its lists copied."""

    def __init__(self, name):
        self.name = name
        self.actions = [name]

    def copy(self):
        made = copy.copy(self)
        made.actions = self.actions[:]
        return made


class _SlottedPair:
    __slots__ = ("first", "__second", "third")

    def __init__(self, first, second):
        self.first, self.__second = first, second


@case(args=lambda: (arr(3), _Element2("e"), _SlottedPair(2.0, 3.0)), graphs=1, ops=1)
def copy_copy_of_a_plain_instance_is_made_here(x, element, pair):
    # A new object of its class with the same values (its dict's order kept), slots set
    # where they are set.
    made = element.copy()
    made.name = "copied"
    twin = copy.copy(pair)
    return x * twin.first, made, made.actions is element.actions, twin, hasattr(twin, "third")
