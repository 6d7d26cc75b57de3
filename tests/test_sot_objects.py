"""SOT on user objects and classes: their Python special methods (bool, len, repr,
operators, getattr, setattr, init), descriptors, super(), enums and namedtuples, run as
CPython runs them."""

import re
import sys

import numpy as np
import pytest

import framehook.sot as sot
from sot_helpers import _Plain

pytestmark = pytest.mark.usefixtures("fresh_sot")


def test_attributes_of_a_namedtuple_are_read_without_a_break():
    import collections

    Pair = collections.namedtuple("Pair", "a b")

    def f(x, pair):
        return x * pair.a + pair.b, pair.a

    fast = sot.translate(f, full_graph=True)
    for pair in (Pair(2.0, 3.0), Pair(5.0, 1.0)):
        got, want = fast(np.ones(2), pair), f(np.ones(2), pair)
        np.testing.assert_array_equal(got[0], want[0])
        assert got[1] == want[1]
    stats = sot.stats(fast)
    assert stats.graph_breaks == [] and stats.graphs == stats.translations >= 1, stats


def test_a_builtin_types_method_called_through_its_class_is_computed_as_the_bound_call():
    def f(x, text):
        parts = str.split("1,2,3", ",")
        return x * len(parts) + int.bit_length(7), str.upper(text)

    fast = sot.translate(f, full_graph=True)
    for text in ("ab", "ab", "cd"):
        got, want = fast(np.ones(2), text), f(np.ones(2), text)
        np.testing.assert_array_equal(got[0], want[0])
        assert got[1] == want[1]
    stats = sot.stats(fast)
    # The text is guarded by value: a new one is a new translation, never a stale result.
    assert (stats.translations, stats.graphs, stats.graph_breaks) == (2, 2, []), stats


def test_truth_of_objects_runs_their_python_bool_or_len_in_the_translation():
    import operator

    class Plain:
        pass

    class WithBool:
        def __init__(self):
            self.on = False

        def __bool__(self):
            return self.on

    class WithLen:
        def __init__(self, items):
            self.items = items

        def __len__(self):
            return len(self.items)

    class WrongBool:
        def __bool__(self):
            return 1

    def truths(x, obj):
        y = x + 1 if obj else x - 1
        return y, bool(obj), operator.truth(obj), not obj

    fast = sot.translate(truths, full_graph=True)
    x = np.ones(2)
    with_bool, with_len = WithBool(), WithLen([])
    for objects in ((Plain(), with_bool, with_len), (with_bool, with_len)):
        for obj in objects:
            got, want = fast(x, obj), truths(x, obj)
            np.testing.assert_array_equal(got[0], want[0])
            assert got[1:] == want[1:]
        with_bool.on, with_len.items = True, [1]  # the same objects answer otherwise now
    stats = sot.stats(fast)
    # One translation per class, and per answer of the state the methods read.
    assert stats.graph_breaks == [] and stats.ops_captured == 5 and stats.translations == 5, stats

    # CPython's message: 3.15 reworded it.
    with pytest.raises(TypeError, match=r"__bool__ should return bool|__bool__\(\) must return a bool"):
        sot.translate(truths)(x, WrongBool())
    with pytest.raises(sot.GraphBreakError, match="its __bool__ gave a value CPython would check"):
        sot.translate(truths, full_graph=True)(x, WrongBool())


def test_namedtuples_of_tensors_made_in_the_translation_act_as_tuples():
    import collections

    Pair = collections.namedtuple("Pair", "a b")

    def f(x):
        y = Pair(x + 1, x * 2)
        first, second = y
        total = y.a + y[1] + first + second + sum(len(y) * v for v in y)
        return Pair(total, y.b), y._fields, isinstance(y, tuple), y[-2:][0]

    fast = sot.translate(f, full_graph=True)
    x = np.arange(3.0)
    for _ in range(2):
        got, want = fast(x), f(x)
        assert type(got[0]) is Pair and got[1:3] == want[1:3]
        for g, w in zip(got[0] + (got[3],), want[0] + (want[3],)):
            np.testing.assert_array_equal(g, w)
    stats = sot.stats(fast)
    assert (stats.translations, stats.graph_breaks) == (1, []), stats
    assert stats.ops_captured >= 8, stats


def test_an_enum_members_name_and_value_are_read_with_the_member_pinned():
    import enum

    class Color(enum.Enum):
        RED = 1
        BLUE = "b"

    def f(x, color):
        return x * 2, color.name, color.value

    fast = sot.translate(f, full_graph=True)
    for color in (Color.RED, Color.RED, Color.BLUE):
        got, want = fast(np.ones(2), color), f(np.ones(2), color)
        np.testing.assert_array_equal(got[0], want[0])
        assert got[1:] == want[1:]
    stats = sot.stats(fast)
    assert (stats.translations, stats.cache_hits, stats.graph_breaks) == (2, 1, []), stats


def test_int_enum_members_and_str_subclasses_compare_as_their_values_do():
    import enum

    class Direction(enum.IntEnum):
        UP = 1
        DOWN = 2

    class Name(str):
        pass

    def f(x, a, b, name):
        y = x * 2 if a == b else x * 3
        return (y + 1 if a != 1 else y), name == "k", a < b

    fast = sot.translate(f, full_graph=True)
    name = Name("k")
    for a, b in ((Direction.UP, Direction.UP), (Direction.UP, Direction.DOWN), (Direction.UP, Direction.UP)):
        got, want = fast(np.ones(2), a, b, name), f(np.ones(2), a, b, name)
        np.testing.assert_array_equal(got[0], want[0])
        assert got[1:] == want[1:]
    stats = sot.stats(fast)
    assert (stats.translations, stats.cache_hits, stats.graph_breaks) == (2, 1, []), stats


def test_a_namedtuple_of_known_values_is_made_in_the_translation():
    import collections

    Pair = collections.namedtuple("Pair", "a b")
    Quartet = collections.namedtuple("Quartet", "a b c d", defaults=(3, 4))

    def f(x, k):
        p = Pair(k, 2)
        q = Quartet(1, k)
        return x * p.a + q.d, p, q._fields, p[1]

    fast = sot.translate(f, full_graph=True)
    for k in (1, 1, 5):
        got, want = fast(np.ones(2), k), f(np.ones(2), k)
        np.testing.assert_array_equal(got[0], want[0])
        assert got[1:] == want[1:] and type(got[1]) is Pair
    stats = sot.stats(fast)
    assert (stats.translations, stats.cache_hits, stats.graph_breaks) == (2, 1, []), stats


class _Counter:
    def __init__(self):
        self.count = 0

    def __repr__(self):
        return f"Counter({self.count})"

    def __len__(self):
        return self.count


def _describe_counter(x, counter):
    return x * len(counter), repr(counter), str(counter), f"{counter}", f"{counter!r:>12}"


def test_builtins_read_an_objects_state_as_each_call_holds_it():
    # One object each call, its state changed between calls: its Python __repr__ and
    # __len__ run in the translation (inlined), not once while translating.
    fast = sot.translate(_describe_counter)
    counter = _Counter()
    for count in range(1, 4):
        counter.count = count
        got, want = fast(np.ones(2), counter), _describe_counter(np.ones(2), counter)
        np.testing.assert_array_equal(got[0], want[0])
        assert got[1:] == want[1:] == ((f"Counter({count})",) * 3 + (f"{'Counter(' + str(count) + ')':>12}",))
    st = sot.stats(fast)
    assert st.graph_breaks == [] and st.fallbacks == [] and st.graphs == st.translations
    assert st.translations <= 3  # a guard on the count (the same count hits the cache)
    assert fast(np.ones(2), counter)[1] == "Counter(3)" and sot.stats(fast).cache_hits >= 1


class _Logged:
    def __init__(self):
        self.log = []

    def __radd__(self, other):
        self.log.append("__radd__")
        return other + 1

    def __neg__(self):
        self.log.append("__neg__")
        return -1

    def __contains__(self, item):
        self.log.append("__contains__")
        return True


def _operators_of(x, o):
    return x + (1 + o), -o, 2 in o


def test_operators_on_an_object_run_its_methods_on_every_call():
    fast = sot.translate(_operators_of)
    eager_object, translated_object = _Logged(), _Logged()
    for _ in range(3):
        got, want = fast(np.ones(2), translated_object), _operators_of(np.ones(2), eager_object)
        np.testing.assert_array_equal(got[0], want[0])
        assert got[1:] == want[1:]
    assert translated_object.log == eager_object.log
    st = sot.stats(fast)
    assert st.graph_breaks and all("may answer otherwise on a later call" in b.reason for b in st.graph_breaks)
    assert st.graphs >= 1 and st.fallbacks == []


class _Frozen:
    def __setattr__(self, name, value):
        raise AttributeError(f"frozen: {name}")


def _store_on_a_frozen_object(x):
    y = x + 1
    made = _Frozen()
    try:
        made.value = 1
    except AttributeError as error:
        return y, str(error), hasattr(made, "value")
    return x, "stored", hasattr(made, "value")


def test_an_object_made_while_translating_stores_through_its_classs_setattr():
    fast = sot.translate(_store_on_a_frozen_object)
    got, want = fast(np.ones(2)), _store_on_a_frozen_object(np.ones(2))
    np.testing.assert_array_equal(got[0], want[0])
    assert got[1:] == want[1:] == ("frozen: value", False)
    st = sot.stats(fast)
    # The class's __setattr__ runs inlined: it raises where STORE_ATTR calls it.
    assert st.graph_breaks == [] and st.fallbacks == []
    assert st.graphs == 1 and st.ops_captured == 1


def _make_a_class(x):
    made = type("Made", (), {})
    return x + 1, made.__module__


def test_a_class_made_by_type_takes_the_functions_module_not_its_callers():
    fast = sot.translate(_make_a_class)
    caller_globals = {"fast": fast, "x": np.ones(2), "__name__": "a_caller_elsewhere"}
    got = eval("fast(x)", caller_globals)
    np.testing.assert_array_equal(got[0], np.full(2, 2.0))
    assert got[1] == _make_a_class(np.ones(2))[1] == __name__
    assert [b.reason for b in sot.stats(fast).graph_breaks] == [
        "type() making a class (it reads the calling frame's globals)"
    ]


class _SetsThroughSuper:
    def __setattr__(self, name, value):
        if name == "frozen":
            raise AttributeError(name)
        super().__setattr__(name, value)  # object.__setattr__, bound to self


def _store_through_super(x, target):
    target.tag = "set"
    return x + 1, target.tag


def test_super_gives_objects_c_methods_bound():
    fast = sot.translate(_store_through_super)
    for _ in range(2):
        target = _SetsThroughSuper()
        got = fast(np.ones(2), target)
        np.testing.assert_array_equal(got[0], np.full(2, 2.0))
        assert got[1] == "set" and target.__dict__ == {"tag": "set"}
    assert sot.stats(fast).graphs >= 1


class _Base:
    def scaled(self, x):
        return x * 2


class _SuperAfterABreak(_Base):
    def scaled(self, x):
        y = x + 1
        print(end="")  # a graph break: the rest runs in a resume function
        parent = super()  # zero-argument: reads the frame's first local and __class__
        return parent.scaled(y), super().scaled(y) + 1


def test_super_reads_plain_class_attributes_and_a_super_object_passed_in():
    class A:
        a = 1

        def scaled(self, x):
            return x * 3

    class B(A):
        a = 111

        def scaled(self, x):
            return x * 5

    class C(B):
        def values(self, x):
            return super().a + x, super(B, self).a + x

    def through(spr, x):
        return spr.scaled(x) + 1

    x = np.ones(2)
    fast = sot.translate(C().values, full_graph=True)
    for got, want in zip(fast(x), C().values(x)):
        np.testing.assert_array_equal(got, want)
    fast = sot.translate(through, full_graph=True)
    c = C()
    for spr in (super(B, c), super(C, c), super(B, c)):
        np.testing.assert_array_equal(fast(spr, x), through(spr, x))
    stats = sot.stats(fast)
    # The super object's class is guarded: one translation per class it starts after.
    assert (stats.translations, stats.cache_hits, stats.graph_breaks) == (2, 1, []), stats


def test_zero_argument_super_in_a_resume_function_finds_the_first_argument():
    obj = _SuperAfterABreak()
    fast = sot.translate(obj.scaled)
    for _ in range(2):
        got = fast(np.ones(2))
        for have, want in zip(got, obj.scaled(np.ones(2))):
            np.testing.assert_array_equal(have, want)
    st = sot.stats(fast)
    assert st.graphs >= 1
    assert [b.reason for b in st.graph_breaks] and all("print" in b.reason for b in st.graph_breaks)


class _InitOnly:
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)


def _object_init_messages(x):
    messages = []
    for make in (_Plain, _InitOnly):
        try:
            make().__init__(42)
            messages.append(None)
        except TypeError as error:
            messages.append(str(error))
    # Without arguments, object.__init__ does nothing.
    return x * 2.0, messages, _InitOnly().__init__()


def test_object_init_of_a_made_object_raises_cpythons_errors_for_arguments():
    fast = sot.translate(_object_init_messages)
    x = np.ones(2)
    expected = _object_init_messages(x)
    assert expected[1] == [
        "_Plain.__init__() takes exactly one argument (the instance to initialize)",
        "object.__init__() takes exactly one argument (the instance to initialize)",
    ]
    for _ in range(2):
        got = fast(x)
        np.testing.assert_array_equal(got[0], expected[0])
        assert got[1:] == expected[1:]
    st = sot.stats(fast)
    assert st.graphs == 1 and st.ops_captured == 1 and st.graph_breaks == [] and st.fallbacks == []


def test_not_equal_of_objects_the_translation_made_asks_eq_as_python_does():
    # object.__ne__ inverts __eq__ unless it declines; then the reflected __ne__ is asked.
    def compare(calls):
        class Left:
            def __eq__(self, other):
                calls.append("Left.__eq__")
                return NotImplemented

        class Right:
            def __ne__(self, other):
                calls.append("Right.__ne__")
                return NotImplemented

        class Equal:
            def __eq__(self, other):
                return True

        return Left() != Right(), Equal() != Equal(), calls

    fast = sot.translate(compare)
    assert fast([]) == compare([]) == (True, False, ["Left.__eq__", "Right.__ne__"])
    assert sot.stats(fast).own_frame == "translated" and sot.stats(fast).fallbacks == []


def _super_without_arguments():
    super()


def _super_after_deleting_self(self):
    del self
    super()


def _super_with_an_empty_cell():
    class Emptied:  # made on each call: deleting __class__ empties the class's cell for good
        def f(self):
            nonlocal __class__  # noqa: F821 - the compiler's implicit cell
            del __class__
            super()

    Emptied().f()


@pytest.mark.parametrize(("call", "message"), [
    (_super_without_arguments, r"super\(\): no arguments"),
    (lambda: _super_after_deleting_self(None), r"super\(\): arg\[0\] deleted"),
    (_super_with_an_empty_cell, r"super\(\): empty __class__ cell"),
], ids=["no arguments", "first deleted", "empty cell"])
def test_zero_argument_super_raises_cpythons_errors(call, message):
    # The generated code raising at super() held None where the original had deleted
    # the first argument: "__class__ cell not found" instead of "arg[0] deleted".
    def use():
        try:
            call()
        except RuntimeError as error:
            return str(error)
        return None

    fast = sot.translate(use)
    for _ in range(2):
        assert re.fullmatch(message, fast() or "") and fast() == use()
    assert sot.stats(fast).fallbacks == []


class _ClassAttributeNamedClass:
    __class__ = 413


def _class_of_a_made_object(x):
    return x * 2.0, _ClassAttributeNamedClass().__class__


def test_a_class_defining_its_own_class_attribute_answers_it():
    fast = sot.translate(_class_of_a_made_object)
    assert fast(np.ones(2))[1] == 413 == _class_of_a_made_object(np.ones(2))[1]
    assert sot.stats(fast).graph_breaks == []


def _raise_booh(self):
    raise AttributeError("booh")


class _InitIsAProperty:
    __init__ = property(_raise_booh)


def _make_one_whose_init_is_a_property(x):
    try:
        _InitIsAProperty()
    except AttributeError as error:
        return x * 2.0, str(error)
    return x * 2.0, "masked"


def test_a_class_whose_init_is_not_a_function_is_called_as_it_is():
    # Made as if its __init__ were object's, the object hid the property's error.
    fast = sot.translate(_make_one_whose_init_is_a_property)
    for _ in range(2):
        assert fast(np.ones(2))[1] == "booh" == _make_one_whose_init_is_a_property(np.ones(2))[1]


class _CountingDescriptor:
    def __init__(self):
        self.reads = 0

    def __get__(self, instance, owner=None):
        self.reads += 1
        return self.reads


class _WithACountingDescriptor:
    value = _CountingDescriptor()


def _read_a_descriptor_twice(x, o):
    return x * 2.0, o.value, o.value


def test_a_descriptor_written_in_python_runs_its_get_on_every_read():
    # Read while translating, its value was the first call's and __get__ ran once more
    # than eagerly (test_dataclasses' test_getting_field_calls_get, through a Mock).
    eager_object, translated_object = _WithACountingDescriptor(), _WithACountingDescriptor()
    _WithACountingDescriptor.__dict__["value"].reads = 0
    want = [_read_a_descriptor_twice(np.ones(2), eager_object)[1:] for _ in range(3)]
    _WithACountingDescriptor.__dict__["value"].reads = 0
    fast = sot.translate(_read_a_descriptor_twice)
    got = [fast(np.ones(2), translated_object)[1:] for _ in range(3)]
    assert got == want == [(1, 2), (3, 4), (5, 6)]
    # Its __get__ is inlined; its store on the descriptor (found through the class, a
    # constant without a source) is a break.
    st = sot.stats(fast)
    assert st.graphs >= 1 and st.fallbacks == []
    assert {b.reason for b in st.graph_breaks} == {"attribute assignment on an object without a source"}


def test_a_missing_attribute_of_an_object_the_translation_made_goes_to_its_getattr():
    """CPython calls a class's `__getattr__` where the lookup fails. For an object the
    translation made, `__getattr__` is inlined (what it returns is the attribute), and an
    `AttributeError` it raises is raised by the original (a break), where CPython gives it
    the attribute's name and the object, which `Did you mean` reads (3.10+). The translation
    raised its own, without either (CPython's `AttributeErrorTests` under SOT)."""

    class Lazy:
        def __init__(self, scale):
            self.scale = scale

        def __getattr__(self, name):
            if name == "double":
                return self.scale * 2
            raise AttributeError()

    def use(x):
        lazy = Lazy(3.0)
        y = x * lazy.double
        try:
            lazy.missing  # noqa: B018 (the lookup is the test)
        except AttributeError as error:
            return y, getattr(error, "name", None), type(getattr(error, "obj", None)).__name__

    fast = sot.translate(use)
    for _ in range(2):
        got, want = fast(np.ones(2)), use(np.ones(2))
        np.testing.assert_array_equal(got[0], want[0])
        assert got[1:] == want[1:] == (("missing", "Lazy") if sys.version_info >= (3, 10) else (None, "NoneType"))
    st = sot.stats(fast)
    assert st.graphs >= 1 and st.fallbacks == [], st
    assert st.graph_breaks[0].reason == "AttributeError from the __getattr__ of a " \
        "test_a_missing_attribute_of_an_object_the_translation_made_goes_to_its_getattr.<locals>.Lazy object (missing)"
