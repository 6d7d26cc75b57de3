"""Helpers shared by the tests of framehook's SOT translator on its user API
(tests/test_sot_translate.py and the topic files beside it: tests/test_sot_guards.py,
test_sot_graph_breaks.py, ...). Their fixture, ``fresh_sot``, is in tests/conftest.py."""

import functools
import sys

import framehook.sot as sot

FREE_THREADED = "t" in getattr(sys, "abiflags", "")


class _Opaque(functools.partial):
    """A callable whose call the translator breaks on: a subclass of a C type with C's
    `__call__` (a partial itself is called through)."""


def two_ops(x, y):
    return x * 2.0 + y


class _Plain:
    pass


def assert_translated_with_breaks(fast):
    st = sot.stats(fast)
    assert st.own_frame == "translated" and st.translations >= 2 and st.graph_breaks, st
    assert st.fallbacks == []


class Namespace:
    pass
