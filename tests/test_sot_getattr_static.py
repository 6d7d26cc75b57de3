"""`inspect.getattr_static` of an object whose class keeps no instance dict
(`src/sot/translator/vm/getattr_static.rs`): answered from the class's MRO as the function
finds it, not simulated (narwhals asks it of every array scikit-learn validates); the class
guarded where it can change. Other objects are simulated as before."""

import inspect

import numpy as np
import pytest

import framehook.sot as sot

pytestmark = pytest.mark.usefixtures("fresh_sot")

_MISSING = object()

# The function's own instructions: simulating its four `getattr_static` calls would add
# over a hundred each (with the `lru_cache`d walk of the MRO they make on 3.12+).
OWN_STEPS = 100


def probes_an_array(x):
    series = inspect.getattr_static(x, "__narwhals_series__", _MISSING) is not _MISSING
    frame = inspect.getattr_static(x, "__narwhals_dataframe__", _MISSING) is not _MISSING
    shape = inspect.getattr_static(x, "shape")
    try:
        inspect.getattr_static(x, "__no_such_attribute__")
        missing = "found"
    except AttributeError as error:
        missing = error.args
    return x * 2, series, frame, type(shape).__name__, missing


def test_an_array_s_attributes_come_from_its_class_without_simulating_the_function():
    x = np.arange(3.0)
    fast = sot.translate(probes_an_array)
    got = fast(x)
    want = probes_an_array(x)
    assert repr(got) == repr(want)
    assert got[1:] == (False, False, "getset_descriptor", ("__no_such_attribute__",))
    st = sot.stats(fast)
    assert (st.translations, st.graphs, st.ops_captured, st.graph_breaks) == (1, 1, 1, []), st
    assert st.instructions_simulated < OWN_STEPS, st
    assert repr(fast(x + 1)) == repr(probes_an_array(x + 1))
    assert sot.stats(fast).translations == 1


class _Slotted:
    __slots__ = ("scale",)

    def __init__(self, scale):
        self.scale = scale

    def method(self):
        return self.scale


class _SlottedChild(_Slotted):
    __slots__ = ()


def reads_a_slotted_object(x, obj):
    method = inspect.getattr_static(obj, "method")
    extra = inspect.getattr_static(obj, "extra", None)
    slot = inspect.getattr_static(obj, "scale")
    return x + 1, method, extra, type(slot).__name__


def test_a_class_attribute_set_after_the_translation_is_seen():
    """The found entry and the absent one rest on the class and its bases: a class
    attribute set later (on the base) makes the translation's guard fail, and the call
    answers as the function does then."""
    x = np.arange(2.0)
    obj = _SlottedChild(2.0)
    fast = sot.translate(reads_a_slotted_object)
    assert repr(fast(x, obj)) == repr(reads_a_slotted_object(x, obj))
    st = sot.stats(fast)
    assert (st.translations, st.graph_breaks) == (1, []), st
    assert fast(x, obj)[1] is _Slotted.__dict__["method"]
    _Slotted.extra = "set later"
    try:
        got = fast(x, obj)
        assert got[2] == "set later"
        assert repr(got) == repr(reads_a_slotted_object(x, obj))
        assert sot.stats(fast).guard_failures == 1
    finally:
        del _Slotted.extra
    assert fast(x, obj)[2] is None


class _WithDict:
    kind = "class"

    def __init__(self):
        self.kind = "instance"


class _Meta(type):
    flavour = "meta"


class _OfMeta(metaclass=_Meta):
    __slots__ = ()


def reads_others(x, with_dict, of_meta):
    return (
        x - 1,
        inspect.getattr_static(with_dict, "kind"),
        inspect.getattr_static(_WithDict, "kind"),
        inspect.getattr_static(of_meta, "flavour", "none"),
        inspect.getattr_static(_OfMeta, "flavour", "none"),
    )


# Where inspect looks classes up through weak references it makes (3.13, later 3.12s), the
# translation does not make them: each call simulated breaks.
WEAK_MRO = hasattr(inspect, "_shadowed_dict_from_weakref_mro_tuple")


def test_objects_it_does_not_answer_for_are_simulated_alike():
    """An instance with a `__dict__`, a class, an instance of a class of another metaclass:
    simulated as before, with the function's answers (the instance's own entry first, a
    class's metaclass read)."""
    x = np.arange(2.0)
    args = (x, _WithDict(), _OfMeta())
    fast = sot.translate(reads_others)
    got = fast(*args)
    assert repr(got) == repr(reads_others(*args))
    assert got[1:] == ("instance", "class", "none", "meta")
    st = sot.stats(fast)
    if WEAK_MRO:
        assert [b.reason.startswith("unsupported call: getattr_static") for b in st.graph_breaks] == [True] * 4, st
    else:
        assert (st.translations, st.graph_breaks) == (1, []), st
        assert st.instructions_simulated > 4 * OWN_STEPS, st
