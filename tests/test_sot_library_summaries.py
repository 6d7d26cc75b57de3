"""Summaries of pure calls (`src/sot/translator/vm/summaries.rs`): a library function whose
simulation made no operation, changed nothing and gave a constant gives it again in a later
translation for arguments of the same kinds, under its guards rebased on the new call
(`SotStats.library_calls_replayed`), without being simulated again; so does a traced
function from its second call in the session on. What it read changing
between the translations, or after them, is seen: the result is always the original's.

The library functions here are compiled with a file name in the standard library's folder,
as the translator tells a library's code from the user's by where it lives."""

import inspect
import io
import os
import subprocess
import sys
import sysconfig
import types

import numpy as np
import pytest

import framehook.sot as sot

pytestmark = pytest.mark.usefixtures("fresh_sot")

_LOG = io.StringIO()

_LIBRARY_SOURCE = '''
import dataclasses
import math

KNOWN = {}
CALLS = []


class Holder:
    registered = None


HOLDER = Holder()


def is_known(x):
    """Reads module state, as narwhals' is_into_dataframe reads sys.modules."""
    name = type(x).__name__
    for key in ("pandas", "polars", "pyarrow", "modin", "cudf", "dask"):
        names = KNOWN.get(key)
        if names is not None and name in names:
            return True
    return name in KNOWN


def flag_of(obj):
    return getattr(obj, "flag", False) is True


def is_matrix(x):
    return x.ndim == 2


def is_same(a, b):
    return a is b


def call_it(function):
    return function()


def registered_flag():
    return HOLDER.registered.flag is True


def first_of(iterator):
    return next(iterator)


def counted(x):
    CALLS.append(type(x).__name__)
    return len(CALLS) > 0


def is_leap(year):
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


class InputTags:
    def __init__(self):
        self.allow_nan = False
        self.two_d = True
        self.dtypes = ["float64"]


@dataclasses.dataclass
class Tags:
    """As scikit-learn's tags: a dataclass holding another object made with it."""
    sparse: bool = False
    name: str = "tags"
    input_tags: InputTags = dataclasses.field(default_factory=InputTags)


def make_tags(x):
    """Objects made from what it reads, as scikit-learn's get_tags makes its dataclasses."""
    tags = Tags(sparse=x.ndim == 2)
    tags.input_tags.two_d = x.ndim == 2
    return tags


def _flagged_class():
    flag = True

    class Flagged:
        """Its __init__ reads a cell of its closure, as a dataclass's generated one does."""
        def __init__(self):
            self.flag = flag

    return Flagged


Flagged = _flagged_class()


CONFIG = {"assume_finite": False, "display": "diagram"}


def get_config():
    """A copy of the module's settings, as scikit-learn's get_config."""
    return CONFIG.copy()


def make_tags_holding(x, held):
    tags = Tags()
    tags.name = held
    return tags


MODE = {"dispatch": False}


def namespace_of(x):
    """A module of its globals and a flag, as scikit-learn's get_namespace gives
    (array_api_compat's numpy, False) where array-API dispatch is off."""
    if not MODE["dispatch"]:
        return math, False
    return dataclasses, True


def dispatch_enabled():
    """A setting, given as it is read (scikit-learn's _routing_enabled)."""
    return MODE["dispatch"]


def device_of(x):
    """As scikit-learn's device: what numpy's arrays give for any shape (numpy 2's
    "cpu"; numpy 1's arrays have no device)."""
    return x.device if hasattr(x, "device") else None


def counts_then_prints(x):
    """Simulated a long way before what stops it: a print."""
    total = 0
    for i in range(100):
        total += i
    CALLS.append(total)
    print("printed", file=SINK)
    return x
'''


def _library_module():
    path = os.path.join(sysconfig.get_path("stdlib"), "_framehook_test_summaries.py")
    module = types.ModuleType("_framehook_test_summaries")
    module.__file__ = path
    module.SINK = io.StringIO()
    exec(compile(_LIBRARY_SOURCE, path, "exec"), module.__dict__)
    return module


LIB = _library_module()


@pytest.fixture(autouse=True)
def _library_state():
    LIB.KNOWN.clear()
    LIB.CALLS.clear()
    yield
    LIB.KNOWN.clear()
    LIB.CALLS.clear()
    LIB.HOLDER.registered = None
    LIB.MODE["dispatch"] = False
    LIB.math = sys.modules["math"]


def _mark_known_and_break():
    LIB.KNOWN["ndarray"] = True
    print("a break", file=_LOG)


def asks_twice(x):
    a = x * 2.0 if LIB.is_known(x) else x * 3.0
    print("a break", file=_LOG)  # the translation ends here; a resume function goes on
    return a + 1.0 if LIB.is_known(a) else a - 1.0


def asks_twice_changing_between(x):
    a = x * 2.0 if LIB.is_known(x) else x * 3.0
    _mark_known_and_break()
    return a + 1.0 if LIB.is_known(a) else a - 1.0


def _break_line(function):
    """The line of `function`'s print, its break."""
    lines, first = inspect.getsourcelines(function)
    return first + next(i for i, line in enumerate(lines) if "print(" in line)


def _translations(fast):
    st = sot.stats(fast)
    return st.translations, st.graphs, [b.lineno for b in st.graph_breaks], st.library_calls_replayed


def test_a_pure_library_call_is_simulated_once_and_given_again_by_its_summary():
    x = np.arange(3.0)
    expected = asks_twice(x)
    fast = sot.translate(asks_twice)
    np.testing.assert_array_equal(fast(x), expected)
    translations, graphs, breaks, replayed = _translations(fast)
    # The frame, then the resume function after the break: one graph each; the second call
    # of is_known (on a float array like the first's) is the summary's.
    assert (translations, graphs, len(breaks), replayed) == (2, 2, 1, 1)

    # Hot calls run the translation; what the summary read changing is seen by its guards.
    np.testing.assert_array_equal(fast(x), expected)
    LIB.KNOWN["ndarray"] = True
    now = asks_twice(x)
    assert not np.array_equal(now, expected)
    np.testing.assert_array_equal(fast(x), now)
    LIB.KNOWN["ndarray"] = None
    LIB.KNOWN["polars"] = {"ndarray"}
    np.testing.assert_array_equal(fast(x), asks_twice(x))


def asks_again_after_the_break(x):
    a = x * 2.0 if LIB.is_known(x) else x * 3.0
    print("a break", file=_LOG)
    b = a + 1.0 if LIB.is_known(x) else a - 1.0
    return b * 2.0 if LIB.is_known(x) else b * 3.0


def test_a_summary_replayed_twice_on_one_argument_keeps_its_guards():
    """The resume function's two calls on the same argument are both the summary's (the
    second adds the guards the first read, without reading them again); what they read
    changing is still seen on later calls."""
    x = np.arange(3.0)
    expected = asks_again_after_the_break(x)
    fast = sot.translate(asks_again_after_the_break)
    np.testing.assert_array_equal(fast(x), expected)
    translations, graphs, breaks, replayed = _translations(fast)
    assert (translations, graphs, breaks, replayed) == (2, 2, [_break_line(asks_again_after_the_break)], 2)
    np.testing.assert_array_equal(fast(x), expected)
    LIB.KNOWN["ndarray"] = True
    now = asks_again_after_the_break(x)
    assert not np.array_equal(now, expected)
    np.testing.assert_array_equal(fast(x), now)
    assert sot.stats(fast).translations > translations


_TRACED_HELPERS = """
def either_known(x, y):
    return LIB.is_known(x) or LIB.is_known(y)
"""


def asks_through_a_traced_helper(helpers, x, y, z, w):
    a = x * 2.0 if LIB.is_known(x) else x * 3.0
    print("a break", file=_LOG)  # the resume function goes on
    b = a + 1.0 if helpers.either_known(z, x) else a - 1.0
    c = b * 2.0 if helpers.either_known(y, w) else b * 3.0
    print("a break", file=_LOG)  # the next resume function goes on
    return c + 1.0 if helpers.either_known(w, y) else c - 1.0


def asks_again_through_a_traced_helper(helpers, x, y, z, w):
    a = x * 2.0 if LIB.is_known(x) else x * 3.0
    print("a break", file=_LOG)  # the resume function goes on
    b = a + 1.0 if LIB.is_known(z) or LIB.is_known(y) else a - 1.0
    c = b * 2.0 if helpers.either_known(y, w) else b * 3.0
    d = c + 2.0 if helpers.either_known(y, w) else c - 2.0
    print("a break", file=_LOG)  # the next resume function goes on
    return d + 1.0 if helpers.either_known(w, y) else d - 1.0


@pytest.fixture
def traced_helpers(tmp_path, monkeypatch):
    """A module of traced code calling the library (its functions are summarized from their
    second call, their library calls replayed inside the recording)."""
    (tmp_path / "_framehook_traced_helpers.py").write_text(_TRACED_HELPERS)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "_framehook_traced_helpers", raising=False)
    import _framehook_traced_helpers as helpers

    helpers.LIB = LIB
    return helpers


@pytest.mark.parametrize(
    ("function", "replayed"),
    [
        # is_known for z, x, y and w in the first resume function (the helper's first call
        # simulated, its second recorded), the helper's summary in the second.
        (asks_through_a_traced_helper, 5),
        # is_known for z and y, then for y and w in each of the helper's two calls: inside
        # the recording on arguments it was replayed on before in the translation.
        (asks_again_through_a_traced_helper, 7),
    ],
)
def test_a_summary_replayed_again_inside_a_recording_gives_it_its_guards(traced_helpers, function, replayed):
    """In the first resume function, is_known's guards on the module's state are added at
    its first replay (for z) only; its later replays inside the recording of the traced
    helper's second call, on new arguments or on ones it was replayed on before (which add
    again what that replay added: none of those guards), still give them to that recording,
    so that the helper's summary, replayed by the next resume function, holds them too: the
    state changing is seen on later calls."""
    helpers = traced_helpers
    x, y, z, w = (np.arange(n, dtype=float) for n in (3, 4, 5, 6))
    expected = function(helpers, x, y, z, w)
    fast = sot.translate(function, trace_modules=("_framehook_traced_helpers",))
    np.testing.assert_array_equal(fast(helpers, x, y, z, w), expected)
    translations, graphs, breaks, got_replayed = _translations(fast)
    assert (translations, len(breaks), got_replayed) == (3, 2, replayed)
    np.testing.assert_array_equal(fast(helpers, x, y, z, w), expected)
    LIB.KNOWN["ndarray"] = True
    now = function(helpers, x, y, z, w)
    assert not np.array_equal(now, expected)
    np.testing.assert_array_equal(fast(helpers, x, y, z, w), now)


def asks_for_tags_twice(x):
    first = LIB.make_tags(x)
    first.input_tags.allow_nan = True  # changes to what the first call made only
    first.input_tags.dtypes.append("float32")
    second = LIB.make_tags(x)
    y = x * 2.0 if first.sparse or second.input_tags.two_d else x * 3.0
    z = y + 1.0 if second.input_tags.allow_nan else y - 1.0
    fresh = first is not second and first.input_tags is not second.input_tags
    fresh = fresh and first.input_tags.dtypes is not second.input_tags.dtypes
    return z, fresh, second


def _tags_state(tags):
    return tags.sparse, tags.name, vars(tags.input_tags)


def test_a_call_giving_objects_it_made_is_given_again_as_new_objects_by_its_summary():
    """make_tags gives a dataclass holding another object holding a list, all made by the
    call: its summary makes new ones with the same attributes at each replay, which the
    caller then changes as its own (the first call's changes are not the second's)."""
    x = np.arange(3.0)
    expected, fresh, tags = asks_for_tags_twice(x)
    assert fresh
    fast = sot.translate(asks_for_tags_twice)
    got, got_fresh, got_tags = fast(x)
    np.testing.assert_array_equal(got, expected)
    assert got_fresh
    # The second call's objects, made again by the generated code.
    assert type(got_tags) is LIB.Tags and type(got_tags.input_tags) is LIB.InputTags
    assert _tags_state(got_tags) == _tags_state(tags)
    translations, graphs, breaks, replayed = _translations(fast)
    assert (translations, graphs, len(breaks), replayed) == (1, 1, 0, 1)

    # A matrix: what the call read (the array's meta) differs, so it is simulated again.
    m = np.ones((2, 2))
    expected, _, tags = asks_for_tags_twice(m)
    got, _, got_tags = fast(m)
    np.testing.assert_array_equal(got, expected)
    assert _tags_state(got_tags) == _tags_state(tags) and got_tags.input_tags.two_d
    assert sot.stats(fast).translations == 2

    # The dataclass's default, which the instance holds, changing is seen by the guard the
    # summary keeps on it.
    defaults = LIB.Tags.__init__.__defaults__
    LIB.Tags.__init__.__defaults__ = (defaults[0], "renamed", defaults[2])
    try:
        _, _, tags = asks_for_tags_twice(x)
        _, _, got_tags = fast(x)
        assert got_tags.name == tags.name == "renamed"
    finally:
        LIB.Tags.__init__.__defaults__ = defaults


def asks_for_the_config_twice(x):
    first = LIB.get_config()
    first["assume_finite"] = True  # the first copy's, not the second's
    second = LIB.get_config()
    return (x + 1.0 if second["assume_finite"] else x - 1.0), first is not second, second


def test_a_call_giving_a_dict_it_made_is_given_again_as_a_new_dict_by_its_summary():
    x = np.arange(3.0)
    fast = sot.translate(asks_for_the_config_twice)
    got, fresh, config = fast(x)
    expected, _, expected_config = asks_for_the_config_twice(x)
    np.testing.assert_array_equal(got, expected)
    assert fresh and config == expected_config and type(config) is dict
    assert sot.stats(fast).library_calls_replayed == 1
    # The settings changing is seen by the summary's guards.
    LIB.CONFIG["assume_finite"] = True
    try:
        expected, _, expected_config = asks_for_the_config_twice(x)
        got, _, config = fast(x)
        np.testing.assert_array_equal(got, expected)
        assert config == expected_config
    finally:
        LIB.CONFIG["assume_finite"] = False


def reads_the_config_then_works(x):
    config = LIB.get_config()
    total = 0
    for i in range(100):  # simulated: what a second simulation of the frame would cost
        total += i
    return x + total if config["assume_finite"] else x - total


def test_a_summary_whose_guards_fail_on_the_call_is_not_replayed():
    """The settings change, so the first translation's guards fail; the second finds the
    summary of get_config, whose guards it reads at the call and finds failing: it simulates
    the call (once), rather than replaying it and simulating the whole frame again when the
    guards fail on the frame at the end."""
    x = np.arange(3.0)
    fast = sot.translate(reads_the_config_then_works)
    np.testing.assert_array_equal(fast(x), reads_the_config_then_works(x))
    first = sot.stats(fast).instructions_simulated
    assert first > 100 * 3, first
    LIB.CONFIG["assume_finite"] = True
    try:
        np.testing.assert_array_equal(fast(x), reads_the_config_then_works(x))
        st = sot.stats(fast)
        assert (st.translations, st.library_calls_replayed) == (2, 0)
        assert st.instructions_simulated - first < 1.5 * first, (st.instructions_simulated, first)
    finally:
        LIB.CONFIG["assume_finite"] = False


def asks_the_namespace_twice(x):
    xp, compliant = LIB.namespace_of(x)
    print("a break", file=_LOG)  # the translation ends here; a resume function goes on
    again, compliant_again = LIB.namespace_of(x)
    return (x + 1.0 if again is xp and not compliant_again else x - 1.0), again, compliant_again


def test_a_call_giving_an_object_of_its_module_is_given_again_through_its_path():
    """namespace_of gives a module of its globals in a tuple it made: its summary makes a
    new tuple holding what the new call's function reads there, so that the module being
    replaced later (or the setting changing) is seen."""
    x = np.arange(3.0)
    fast = sot.translate(asks_the_namespace_twice)
    got, xp, compliant = fast(x)
    expected, _, _ = asks_the_namespace_twice(x)
    np.testing.assert_array_equal(got, expected)
    assert xp is sys.modules["math"] and compliant is False
    translations, graphs, breaks, replayed = _translations(fast)
    assert (translations, graphs, breaks, replayed) == (2, 1, [_break_line(asks_the_namespace_twice)], 1)

    other = types.ModuleType("other")
    LIB.math = other
    got, xp, _ = fast(x)
    np.testing.assert_array_equal(got, expected)
    assert xp is other
    LIB.MODE["dispatch"] = True
    expected, want_xp, want_compliant = asks_the_namespace_twice(x)
    got, xp, compliant = fast(x)
    np.testing.assert_array_equal(got, expected)
    assert (xp, compliant) == (want_xp, want_compliant) == (LIB.dataclasses, True)


def asks_the_setting_twice(x):
    first = LIB.dispatch_enabled()
    print("a break", file=_LOG)  # the translation ends here; a resume function goes on
    return x * 2.0, first, LIB.dispatch_enabled()


def test_a_call_giving_a_value_it_read_gives_it_again_through_its_path():
    """The setting is read again where the function reads it, as the simulation had it: no
    translation rests on its value (a constant guarded on it would make the resume function
    translate again when it changes)."""
    x = np.arange(3.0)
    fast = sot.translate(asks_the_setting_twice)
    got = fast(x)
    np.testing.assert_array_equal(got[0], x * 2.0)
    assert got[1:] == (False, False)
    assert _translations(fast) == (2, 1, [_break_line(asks_the_setting_twice)], 1)
    LIB.MODE["dispatch"] = True
    got = fast(x)
    assert got[1:] == (True, True)
    assert sot.stats(fast).translations == 2


def holds_what_it_was_given(x, items):
    tags = LIB.make_tags_holding(x, items)
    tags_again = LIB.make_tags_holding(x, items)
    return x + len(tags.name) + len(tags_again.name), tags_again.name is items


def test_a_call_giving_an_object_holding_what_it_was_given_holds_it_again():
    """The object holds the caller's list: the summary's new object holds the new call's
    argument itself (its path from the call), whose length the hot calls read anew."""
    x = np.arange(3.0)
    items = [1, 2]
    fast = sot.translate(holds_what_it_was_given)
    got, same = fast(x, items)
    np.testing.assert_array_equal(got, holds_what_it_was_given(x, items)[0])
    assert same
    assert sot.stats(fast).library_calls_replayed == 1
    items.append(3)
    got, same = fast(x, items)
    np.testing.assert_array_equal(got, holds_what_it_was_given(x, items)[0])
    assert same


def test_a_summary_whose_reads_changed_since_it_was_made_is_not_used():
    """The break's call marks ndarrays known after the first translation recorded is_known
    (False): the resume function's translation finds the summary, its guards fail on the
    frame, and it is translated again simulating the call (True)."""
    x = np.arange(3.0)
    expected = asks_twice_changing_between(x)
    LIB.KNOWN.clear()
    fast = sot.translate(asks_twice_changing_between)
    np.testing.assert_array_equal(fast(x), expected)
    translations, graphs, breaks, replayed = _translations(fast)
    # The break is the print in the called function (translated on its own, no graph).
    assert (graphs, replayed) == (2, 0)
    assert set(breaks) == {_mark_known_and_break.__code__.co_firstlineno + 2}


class _Flagged:
    def __init__(self, flag):
        self.flag = flag


def asks_objects(x, first, second):
    a = x + 1.0 if LIB.flag_of(first) else x - 1.0
    print("a break", file=_LOG)  # the translation ends here; a resume function goes on
    return a * 2.0 if LIB.flag_of(second) else a * 3.0


@pytest.mark.parametrize("flags", [(True, True), (False, True), (True, False), (False, False)])
def test_a_summary_reads_its_argument_object_through_the_new_calls_argument(flags):
    x = np.arange(3.0)
    first, second = _Flagged(flags[0]), _Flagged(flags[1])
    fast = sot.translate(asks_objects)
    np.testing.assert_array_equal(fast(x, first, second), asks_objects(x, first, second))
    translations, graphs, breaks, replayed = _translations(fast)
    # The second object's flag is the first's: the summary's guard (on the resume function's
    # argument) holds, and it gives the result; else the call is simulated.
    assert (translations, graphs, len(breaks), replayed) == (2, 2, 1, int(flags[0] == flags[1]))
    # Hot: the entries' guards tell the objects apart.
    for other in ((True, False), (False, True), (True, True)):
        objects = _Flagged(other[0]), _Flagged(other[1])
        np.testing.assert_array_equal(fast(x, *objects), asks_objects(x, *objects))


def leap_of_a_literal_then_of(year):
    literal = LIB.is_leap(2024)
    return literal, LIB.is_leap(year)


def test_a_summary_of_a_constant_argument_guards_the_frame_value_it_is_given_again():
    """Recorded for the literal 2024, the summary is found for the frame's year, equal to it
    on the first call: the translation then rests on the year being 2024 (idna's
    `_encode_range(cp_value, 0)` in a loop over a label gave the first letter's range for
    every letter)."""
    fast = sot.translate(leap_of_a_literal_then_of)
    assert fast(2024) == (True, True)
    assert sot.stats(fast).library_calls_replayed == 1
    assert fast(2023) == (True, False)
    assert fast(1900) == (True, False)
    assert fast(2000) == (True, True)


# A module of the user's (traced) beside this one: a summary reads globals through its
# function, not as the translated frame's own.
_USER_SOURCE = """
import _framehook_test_summaries as LIB


def known_here(x):
    return type(x).__name__ in LIB.KNOWN


def make_flagged(x):
    made = LIB.Flagged()
    made.two_d = x.ndim == 2
    return made
"""


def _user_module():
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_framehook_test_user.py")
    module = types.ModuleType("_framehook_test_user")
    module.__file__ = path
    sys.modules.setdefault("_framehook_test_summaries", LIB)
    exec(compile(_USER_SOURCE, path, "exec"), module.__dict__)
    return module


USER = _user_module()


def asks_a_traced_function_three_times(x):
    a = x * 2.0 if USER.known_here(x) else x * 3.0
    b = a + 1.0 if USER.known_here(a) else a - 1.0
    return b * 2.0 if USER.known_here(b) else b * 3.0


def test_a_pure_traced_function_is_summarized_from_its_second_call():
    """The first call is simulated, the second recorded, the third the summary's."""
    x = np.arange(3.0)
    fast = sot.translate(asks_a_traced_function_three_times)
    np.testing.assert_array_equal(fast(x), asks_a_traced_function_three_times(x))
    st = sot.stats(fast)
    assert (st.translations, st.graphs, len(st.graph_breaks), st.library_calls_replayed) == (1, 1, 0, 1)
    # What the summary read changing is seen by the guards it left.
    LIB.KNOWN["ndarray"] = True
    expected = asks_a_traced_function_three_times(x)
    np.testing.assert_array_equal(fast(x), expected)
    assert sot.stats(fast).translations == 2


def asks_for_flagged_three_times(x):
    a, b, c = USER.make_flagged(x), USER.make_flagged(x), USER.make_flagged(x)
    return (x + 1.0 if a.flag and b.flag and c.flag and not c.two_d else x - 1.0), a is not c


def test_a_call_inlining_a_closure_inlined_before_it_is_summarized_on_the_cells_contents():
    """Flagged's __init__, inlined by the first call (simulated), reads its closure's cell
    again in the second (recorded): the translation stored nothing there, so the call read
    what the function holds, and its summary rests on the cell's contents (the third
    call is the summary's)."""
    x = np.arange(3.0)
    fast = sot.translate(asks_for_flagged_three_times)
    got, fresh = fast(x)
    np.testing.assert_array_equal(got, asks_for_flagged_three_times(x)[0])
    assert fresh
    st = sot.stats(fast)
    assert (st.translations, st.graphs, len(st.graph_breaks), st.library_calls_replayed) == (1, 1, 0, 1)
    cell = LIB.Flagged.__init__.__closure__[0]
    cell.cell_contents = False
    try:
        expected = asks_for_flagged_three_times(x)[0]
        np.testing.assert_array_equal(fast(x)[0], expected)
        assert sot.stats(fast).translations == 2
    finally:
        cell.cell_contents = True


def asks_twice_of_other_shapes(x):
    a = x * 2.0 if LIB.is_known(x) else x * 3.0
    print("a break", file=_LOG)  # the translation ends here; a resume function goes on
    m = a.reshape(1, -1)[:, :2]
    return m + 1.0 if LIB.is_known(m) else m - 1.0


def asks_devices_of_other_shapes(x):
    a = x * 2.0 if LIB.device_of(x) in ("cpu", None) else x * 3.0
    print("a break", file=_LOG)  # the translation ends here; a resume function goes on
    m = a.reshape(1, -1)
    return m + 1.0 if LIB.device_of(m) in ("cpu", None) else m - 1.0


def asks_identity(x, y):
    first = LIB.is_same(x, x)
    print("a break", file=_LOG)  # the translation ends here; a resume function goes on
    second = LIB.is_same(x, y)
    third = LIB.is_same(y, y)
    return (x + 1.0 if first else x), (y + 1.0 if second else y), (y * 2.0 if third else y)


def test_a_summary_holds_for_arguments_that_are_one_object_as_they_were():
    x, y = np.arange(3.0), np.arange(3.0)
    fast = sot.translate(asks_identity)
    for got, want in zip(fast(x, y), asks_identity(x, y)):
        np.testing.assert_array_equal(got, want)
    translations, graphs, breaks, replayed = _translations(fast)
    # is_same(x, y) is simulated (x was both arguments when recorded); is_same(y, y) is
    # the summary's.
    assert (translations, len(breaks), replayed) == (2, 1, 1)


def asks_shapes(x):
    a = x + 1.0 if LIB.is_matrix(x) else x - 1.0
    print("a break", file=_LOG)  # the translation ends here; a resume function goes on
    m = a.reshape(1, -1)
    return m * 2.0 if LIB.is_matrix(m) else m * 3.0


@pytest.mark.parametrize(
    ("function", "replayed"),
    [
        # is_known reads a tensor's type only: its summary holds for any shape.
        (asks_twice_of_other_shapes, 1),
        # device_of reads an attribute numpy's array type gives every array alike.
        (asks_devices_of_other_shapes, 1),
        # is_matrix reads its ndim: a 1-d then a 2-d array, the second call simulated.
        (asks_shapes, 0),
    ],
)
def test_a_summary_holds_for_other_tensor_meta_only_where_the_call_read_no_meta(function, replayed):
    x = np.arange(3.0)
    fast = sot.translate(function)
    np.testing.assert_array_equal(fast(x), function(x))
    assert _translations(fast) == (2, 2, [_break_line(function)], replayed)


def asks_counted(x):
    a = x + 1.0 if LIB.counted(x) else x
    print("a break", file=_LOG)  # the translation ends here; a resume function goes on
    return a + 1.0 if LIB.counted(a) else a


def test_a_library_call_that_changes_state_is_never_summarized():
    x = np.arange(3.0)
    expected = asks_counted(x)
    eager_calls = list(LIB.CALLS)
    LIB.CALLS.clear()
    fast = sot.translate(asks_counted)
    np.testing.assert_array_equal(fast(x), expected)
    translations, graphs, breaks, replayed = _translations(fast)
    assert (translations, len(breaks), replayed) == (2, 1, 0)
    assert LIB.CALLS == eager_calls  # each call appended, once, as the original did


def _counter_closure():
    n = 0

    def get():
        return n

    def steps(x):
        nonlocal n
        n += 1
        a = x + 1.0 if LIB.call_it(get) == 1 else x
        print("a break", file=_LOG)  # the translation ends here; a resume function goes on
        n += 1
        return a * 2.0 if LIB.call_it(get) == 1 else a * 3.0

    return steps


def test_a_call_reading_a_cell_the_translation_stored_into_is_never_summarized():
    """`get` reads the translated frame's cell, which the translation stored into before
    each call: what the call gave is the translation's cell, not something the frame's
    guards could hold, and it is simulated each time."""
    x = np.arange(3.0)
    expected = _counter_closure()(x)
    fast = sot.translate(_counter_closure())
    np.testing.assert_array_equal(fast(x), expected)
    translations, graphs, breaks, replayed = _translations(fast)
    assert (translations, graphs, len(breaks), replayed) == (2, 2, 1, 0)


def asks_an_iterator(x, iterator):
    a = x + LIB.first_of(iterator)
    print("a break", file=_LOG)  # the translation ends here; a resume function goes on
    return a + LIB.first_of(iterator)


def test_a_call_that_advances_an_iterator_from_the_frame_is_never_summarized():
    x = np.arange(3.0)
    expected = asks_an_iterator(x, iter([1, 2]))
    fast = sot.translate(asks_an_iterator)
    iterator = iter([1, 2])
    np.testing.assert_array_equal(fast(x, iterator), expected)
    assert next(iterator, None) is None
    assert sot.stats(fast).library_calls_replayed == 0


def asks_the_registered_class(x):
    a = x + 1.0 if LIB.registered_flag() else x
    print("a break", file=_LOG)  # the translation ends here; a resume function goes on
    return a * 2.0 if LIB.registered_flag() else a


_CLASS_LIFETIME = """
import gc, sys, weakref
import numpy as np
import framehook.sot as sot
sys.path.insert(0, sys.argv[1])
import test_sot_library_summaries as case

class Registered:
    flag = True

case.LIB.HOLDER.registered = Registered
x = np.arange(3.0)
fast = sot.translate(case.asks_the_registered_class)
assert (fast(x) == case.asks_the_registered_class(x)).all()
assert sot.stats(fast).library_calls_replayed == 1, sot.stats(fast)
gone = weakref.ref(Registered)
case.LIB.HOLDER.registered = None
del Registered
gc.collect()
assert gone() is None, "the class outlived the library's last reference"
try:
    fast(x)
except AttributeError:  # None.flag, as the original
    pass
else:
    raise AssertionError("the translation did not read the library's object again")
"""


def test_a_summary_keeps_no_class_of_the_program_alive():
    """The summary reads an attribute of a class the library reaches (pinned by identity):
    it holds the class weakly, as the translations' guards do. In a process of its own:
    free-threaded 3.13 makes every class created after the process's first thread started
    immortal, and other tests start threads."""
    here = os.path.dirname(os.path.abspath(__file__))
    run = subprocess.run([sys.executable, "-c", _CLASS_LIFETIME, here], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr


def calls_the_printing_function_once(x):
    return LIB.counts_then_prints(x * 2.0) - 1.0


def calls_the_printing_function_thrice(x):
    y = LIB.counts_then_prints(x * 2.0)
    z = LIB.counts_then_prints(y + 1.0)  # an array again: breaks at once
    w = LIB.counts_then_prints(3.0)  # a float: simulated
    return z - w


def test_a_library_call_that_stopped_breaks_at_once_when_called_again_alike():
    """A library call whose simulation stops (here at a print) is the break: it runs as it
    is. Called again in the session with arguments of the same kinds, it breaks at once,
    with the same reason, without simulating the 700 instructions up to the print again;
    with an argument of another kind it is simulated again. Every call runs, once each."""
    x = np.arange(3.0)
    once = sot.translate(calls_the_printing_function_once)
    np.testing.assert_array_equal(once(x), calls_the_printing_function_once(x))
    simulated_once = sot.stats(once).instructions_simulated
    assert simulated_once > 100 * 5, simulated_once
    sot.reset()
    fast = sot.translate(calls_the_printing_function_thrice)
    printed = LIB.SINK.getvalue().count("printed")
    calls = len(LIB.CALLS)
    np.testing.assert_array_equal(fast(x), calls_the_printing_function_thrice(x))
    assert LIB.SINK.getvalue().count("printed") == printed + 6  # three calls each, once
    assert len(LIB.CALLS) == calls + 6
    st = sot.stats(fast)
    reason = "unsupported call: counts_then_prints (a library function: print() is a side effect"
    assert [b.reason[:len(reason)] for b in st.graph_breaks] == [reason] * 3, st.graph_breaks
    # The first and the third call simulated, the second not.
    assert 1.8 * simulated_once < st.instructions_simulated < 2.3 * simulated_once, (
        st.instructions_simulated, simulated_once)
