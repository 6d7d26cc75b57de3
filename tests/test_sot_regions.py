"""numpy's error state in translations: `with np.errstate(...)` is a region of the graph
(its entry and exit graph nodes, the operations between them run under it), so that what
warns, raises or stays quiet does so as eagerly, with no break at the `with`."""

import warnings

import numpy as np
import pytest

import framehook.sot as sot

pytestmark = pytest.mark.usefixtures("fresh_sot")


def outcome(fn, *args):
    """What a call gives, raises and warns (where, what), and whether the error state is
    the caller's afterwards."""
    before = np.geterr()
    with warnings.catch_warnings(record=True) as log:
        warnings.simplefilter("always")
        try:
            result = ("returned", repr(fn(*args)))
        except Exception as error:  # the comparison is of what was raised
            result = ("raised", type(error).__name__, str(error))
    return result, [(w.lineno, str(w.message)) for w in log], np.geterr() == before


def same_as_eager(f, *calls):
    fast = sot.translate(f, cost_model=False)
    for args in calls:
        eager = outcome(f, *args)
        assert outcome(fast, *args) == eager, args
    return fast, sot.stats(fast)


def test_an_errstate_block_runs_in_the_graph_under_its_state():
    def f(x, scale):
        with np.errstate(over="ignore"):
            y = x * scale  # overflows, quietly
        return np.isfinite((y + 1).sum()), y * scale  # overflows again: warns

    big = np.float32(3e38)
    fast, st = same_as_eager(f, (np.ones(3, np.float32), big), (np.ones(3, np.float32), big))
    assert outcome(f, np.ones(3, np.float32), big)[1], "the eager call warns outside the block"
    assert (st.translations, st.graphs, st.graph_breaks, st.fallbacks) == (1, 1, [], [])
    assert st.ops_captured == 5
    text = sot.explain(fast, np.ones(3, np.float32), big)
    assert "errstate(over='ignore')" in text and "errstate.__exit__" in text, text


def test_an_error_inside_a_region_leaves_the_error_state_as_it_was():
    # Translated where nothing divides by zero; then a zero: the region raises inside the
    # graph, its `finally` exits it, and the frame runs again untranslated (the log once).
    def f(x, log):
        log.append("start")
        with np.errstate(divide="raise"):
            y = 1.0 / x
        return y + 1

    fast = sot.translate(f, cost_model=False)
    fast(np.ones(2), [])
    for fn in (f, fast):
        log = []
        before = np.geterr()
        with pytest.raises(FloatingPointError, match="divide by zero"):
            fn(np.array([1.0, 0.0]), log)
        assert np.geterr() == before and log == ["start"]
    st = sot.stats(fast)
    assert (st.translations, st.graph_breaks) == (1, [])


def test_nested_regions_and_a_region_in_a_callee():
    def quiet_log(z):
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.log(z)

    def f(x, y):
        with np.errstate(all="ignore"):
            z = x / y
            with np.errstate(divide="warn"):
                w = x / y  # warns here, where eagerly it does
            z = z - w
        return quiet_log(z - 1) + quiet_log(x)

    calls = [(np.array([1.0, 2.0]), np.array([1.0, 0.0])), (np.array([-1.0, 2.0]), np.array([2.0, 4.0]))]
    _, st = same_as_eager(f, *calls)
    assert outcome(f, *calls[0])[1], "the inner block warns"
    assert (st.translations, st.graphs, st.graph_breaks, st.fallbacks) == (1, 1, [], [])


def test_a_break_inside_a_region_breaks_at_its_with():
    # The graph cannot stop inside a region: the `with` runs as it is, its block after it.
    def f(x):
        with np.errstate(over="ignore"):
            y = x * 2
            print("shape", y.shape)
            z = y * 3
        return z

    _, st = same_as_eager(f, (np.ones(2),), (np.ones(2),))
    reasons = [b.reason for b in st.graph_breaks]
    assert any("inside the with block of a graph region (print()" in r for r in reasons), reasons


@pytest.mark.parametrize("make", [
    lambda: np.errstate(call=lambda *a: None, all="call"),  # a callback: Python code
    lambda: type("Mine", (np.errstate,), {})(over="ignore"),  # a subclass may enter otherwise
])
def test_other_error_state_managers_are_not_regions(make):
    def f(x):
        with make():
            y = x * 2
        return y + 1

    _, st = same_as_eager(f, (np.ones(2),), (np.ones(2),))
    assert st.graph_breaks, "entered as it is, at a break"


def test_a_catch_warnings_block_runs_in_the_graph_with_its_filters():
    # The filter set inside the block makes the conversion's warning an error there, and
    # only there: the graph runs the block's entry, its filter, the operation and its exit.
    def f(x):
        with warnings.catch_warnings():
            warnings.simplefilter("error", np.exceptions.ComplexWarning)
            try:
                y = np.asarray(x, dtype=np.float64)
            except np.exceptions.ComplexWarning:
                return "complex"
        return y.astype(np.float32) + np.asarray(x, dtype=np.float64)  # warns, no error

    real, complex_ = np.ones(2), np.ones(2) + 1j
    fast, st = same_as_eager(f, (real,), (real,), (complex_,), (real,))
    assert outcome(f, complex_)[0] == ("returned", "'complex'")
    # One translation per dtype; the complex one returns from the handler, in the block.
    assert (st.translations, st.graph_breaks, st.fallbacks) == (2, [], [])
    fresh = sot.translate(f, cost_model=False)
    fresh(real)
    text = sot.explain(fresh, real)
    assert "catch_warnings()" in text and "simplefilter" in text, text


def test_reading_the_warning_filters_inside_catch_warnings_breaks():
    # The translation does not hold the filters the block set: a read of them breaks.
    def f(x):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            count = len(warnings.filters)
        return x * count

    _, st = same_as_eager(f, (np.ones(2),), (np.ones(2),))
    reasons = [b.reason for b in st.graph_breaks]
    assert any("filters read inside a catch_warnings block" in r for r in reasons), reasons


def test_a_filter_set_outside_catch_warnings_is_no_region_effect():
    def f(x):
        warnings.simplefilter("ignore", UserWarning)  # for good: not undone by any block
        return x + 1

    with warnings.catch_warnings():
        _, st = same_as_eager(f, (np.ones(2),))
    assert st.graph_breaks, "set as it is, at a break"


def test_a_region_manager_entered_twice_raises_as_eagerly():
    # numpy refuses to enter one errstate twice; the graph, which makes a manager per
    # entry, would not: the second entry runs as it is.
    def f(x):
        quiet = np.errstate(over="ignore")
        with quiet:
            y = x * 2
        with quiet:
            return y * 3

    _, st = same_as_eager(f, (np.ones(2),), (np.ones(2),))
    assert outcome(f, np.ones(2))[0][0] == "raised"
    assert st.graph_breaks, "entered again as it is, at a break"


def _described(x):
    manager = np.errstate(all="ignore")
    return x + 1, repr(manager), manager


def test_what_reads_a_made_again_managers_identity_is_not_computed_while_translating():
    # The generated code makes the manager again on every call: its repr (object's, with
    # its address) is that object's, not the one made while translating.
    fast = sot.translate(_described, cost_model=False)
    for _ in range(3):
        result, described, manager = fast(np.ones(2))
        np.testing.assert_array_equal(result, np.ones(2) + 1)
        assert described == repr(manager)
