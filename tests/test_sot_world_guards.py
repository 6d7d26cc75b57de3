"""World guards: what a translation read through its globals and builtins, other dicts,
modules, thread-locals and functions' parts is answered by CPython's dict and function
watchers (3.12+, builds with the GIL) while none of it changes, instead of read again on
each call; every change of it is seen on the next call, as eager code sees it."""

import sys
import threading
import types

import numpy as np
import pytest

import framehook.sot as sot
from framehook import _native
from sot_helpers import FREE_THREADED

pytestmark = pytest.mark.usefixtures("fresh_sot")

WATCHED = sys.version_info >= (3, 12) and not FREE_THREADED

SCALE = 2.0
CONFIG = {"scale": 3.0}
LOCAL = threading.local()
LOCAL.factor = 4.0
MODULE = types.ModuleType("watched_module")
MODULE.offset = 1.0


def helper(v, k, *, shift=0.5):
    return v * k + shift


def other_helper(v, k, *, shift=0.5):
    return v - k - shift


def reads_the_world(x):
    return helper(x, SCALE) * CONFIG["scale"] + MODULE.offset + LOCAL.factor + abs(-1.5)


class _OffsetProperty(types.ModuleType):
    @property
    def offset(self):
        return 11.0


def _set_global(name, value):
    undo = globals()[name]
    globals()[name] = value
    return lambda: globals().__setitem__(name, undo)


def _shadow_builtin():
    globals()["abs"] = lambda v: 100.0
    return lambda: globals().pop("abs")


def _set(owner, name, value):
    undo = getattr(owner, name)
    setattr(owner, name, value)
    return lambda: setattr(owner, name, undo)


def _set_item(mapping, key, value):
    undo = mapping[key]
    mapping[key] = value
    return lambda: mapping.__setitem__(key, undo)


CHANGES = {
    "a global rebound": lambda: _set_global("SCALE", 5.0),
    "a called function rebound": lambda: _set_global("helper", other_helper),
    "a function's code replaced": lambda: _set(helper, "__code__", other_helper.__code__),
    "a function's keyword defaults replaced": lambda: _set(helper, "__kwdefaults__", {"shift": 7.0}),
    "a function's keyword defaults changed in place": lambda: _set_item(helper.__kwdefaults__, "shift", 2.0),
    "a dict's entry": lambda: _set_item(CONFIG, "scale", 6.0),
    "a module's attribute": lambda: _set(MODULE, "offset", 9.0),
    "a module's class": lambda: _set(MODULE, "__class__", _OffsetProperty),
    "a thread-local's attribute": lambda: _set(LOCAL, "factor", 8.0),
    "a builtin shadowed by a global": _shadow_builtin,
}


def _unspecialized(function):
    """A copy of `function` with a code object not yet run: 3.14+'s specialized attribute
    read of a module (LOAD_ATTR_MODULE) reads the module's dict past a property its new
    class defines, where the unspecialized read, and 3.9-3.13's, calls the property."""
    return types.FunctionType(function.__code__.replace(), function.__globals__)


def guards_checked(run):
    before = _native._guards_checked()
    run()
    return _native._guards_checked() - before


def test_a_hot_call_checks_only_the_guards_the_watchers_cannot_answer():
    x = np.ones(2)
    fast = sot.translate(reads_the_world, full_graph=True)
    fast(x)
    fast(x)  # the first call that takes the entry checks every guard, and arms it
    stats = sot.stats(fast)
    assert (stats.translations, stats.cache_hits, stats.graph_breaks) == (1, 1, []), stats
    checked = guards_checked(lambda: fast(x))
    if WATCHED:
        # The array's guard alone: the globals, the dict's entry, the module's and the
        # thread-local's attributes, the function's parts and the builtin are answered.
        assert checked == 1, (checked, stats.guards)
    else:
        assert checked == stats.guards, (checked, stats.guards)


@pytest.mark.parametrize("change", CHANGES.values(), ids=CHANGES.keys())
def test_each_change_of_what_the_watchers_answer_is_seen_on_the_next_call(change):
    x = np.arange(2.0)
    fast = sot.translate(reads_the_world)
    for _ in range(3):
        np.testing.assert_array_equal(fast(x), reads_the_world(x))
    before = sot.stats(fast).translations
    undo = change()
    try:
        want = _unspecialized(reads_the_world)(x)
        for _ in range(2):
            np.testing.assert_array_equal(fast(x), want)
    finally:
        undo()
    for _ in range(2):
        np.testing.assert_array_equal(fast(x), reads_the_world(x))
    assert sot.stats(fast).translations > before


def test_a_thread_local_read_on_another_thread_is_that_threads():
    x = np.ones(2)
    fast = sot.translate(reads_the_world)
    for _ in range(3):
        fast(x)
    results = {}

    def on_another_thread():
        LOCAL.factor = -3.0
        results["translated"] = [fast(x) for _ in range(3)]
        results["eager"] = reads_the_world(x)

    thread = threading.Thread(target=on_another_thread)
    thread.start()
    thread.join()
    for got in results["translated"]:
        np.testing.assert_array_equal(got, results["eager"])
    np.testing.assert_array_equal(fast(x), reads_the_world(x))
    assert not np.array_equal(results["eager"], reads_the_world(x))
