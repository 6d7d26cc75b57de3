"""`copy.deepcopy` of objects the translation made (`src/sot/translator/vm/deepcopy.rs`):
the copy the function would make, made by the VM rather than simulating the function, whose
memo is keyed by `id()`; what the copy rests on (the class's copy hooks, copyreg's tables,
its `__slotnames__`) guarded."""

import copy
import copyreg
import dataclasses

import numpy as np
import pytest

import framehook.sot as sot

pytestmark = pytest.mark.usefixtures("fresh_sot")


class _Settings:
    def __init__(self, scale):
        self.scale = scale
        self.names = ["a"]


def copies_settings(x):
    settings = _Settings(2.0)
    copied = copy.deepcopy(settings)
    return x * copied.scale, type(copied).__name__, copied.names


def test_the_first_copy_of_a_class_writes_its_slotnames_as_the_function_would():
    """copyreg writes a class's `__slotnames__` at its first copy: the translation asks
    copyreg for them, so the first translated call copies without a break and leaves the
    class as an eager first copy does."""
    x = np.arange(3.0)
    assert "__slotnames__" not in vars(_Settings)
    fast = sot.translate(copies_settings)
    got = fast(x)
    assert vars(_Settings)["__slotnames__"] == []
    assert repr(got) == repr(copies_settings(x))
    st = sot.stats(fast)
    assert (st.translations, st.graphs, st.graph_breaks) == (1, 1, []), st
    assert repr(fast(x)) == repr(copies_settings(x))
    assert sot.stats(fast).guard_failures == 0


class _Slotted:
    __slots__ = ("scale", "__weakref__", "_Slotted__private")

    def __init__(self, scale):
        self.scale = scale


def copies_slotted(x):
    copied = copy.deepcopy(_Slotted(3.0))
    return x * copied.scale, hasattr(copied, "_Slotted__private")


def test_slotnames_worked_out_for_a_class_of_slots_are_copyreg_s():
    """A class of `__slots__` (a private one mangled, `__weakref__` left out): the slots
    copied are those copyreg names, in its order; written into the class as eagerly."""
    x = np.arange(3.0)
    assert "__slotnames__" not in vars(_Slotted)
    fast = sot.translate(copies_slotted)
    got = fast(x)
    assert vars(_Slotted)["__slotnames__"] == ["scale", "_Slotted__private"]
    assert repr(got) == repr(copies_slotted(x))
    st = sot.stats(fast)
    assert (st.translations, st.graphs, st.graph_breaks) == (1, 1, []), st


@dataclasses.dataclass
class _Tags:
    kind: str
    multi: bool = False


copy.deepcopy(_Tags("k"))  # `__slotnames__` written


def copies_tags(x):
    tags = copy.deepcopy(_Tags("c"))
    return x + 1.0, tags


def _reduce_tags(tags):
    return _Tags, ("registered", True)


def test_a_reducer_registered_later_is_seen():
    """copyreg.pickle(cls, reducer) after the translation: its guard fails, the function
    runs again as it is, copying through the reducer."""
    x = np.arange(3.0)
    fast = sot.translate(copies_tags)
    assert repr(fast(x)) == repr(copies_tags(x))
    assert sot.stats(fast).graph_breaks == []
    copyreg.pickle(_Tags, _reduce_tags)
    try:
        got, tags = fast(x)
        assert tags == _Tags("registered", True)
        assert repr((got, tags)) == repr(copies_tags(x))
        st = sot.stats(fast)
        assert st.guard_failures == 1 and st.graph_breaks, st
    finally:
        del copyreg.dispatch_table[_Tags]


def test_a_copy_hook_added_to_the_class_later_is_seen():
    x = np.arange(3.0)
    fast = sot.translate(copies_tags)
    assert repr(fast(x)) == repr(copies_tags(x))
    _Tags.__deepcopy__ = lambda self, memo: _Tags("hooked")
    try:
        got, tags = fast(x)
        assert tags == _Tags("hooked")
        st = sot.stats(fast)
        assert st.guard_failures == 1 and st.graph_breaks, st
    finally:
        del _Tags.__deepcopy__
