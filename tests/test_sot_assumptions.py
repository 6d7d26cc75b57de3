"""Branches on a tensor's value, assumed: the translation takes the branch the value took
while translating, and the graph checks the value on every call; where it goes the other
way, the frame runs again untranslated, so that the other branch runs as eagerly. Nothing of
the frame has happened by then (the graph runs before the side effects), numpy's reports
raise inside such a graph (so the run again reports them once), and where either cannot hold
(a graph writing its operand, an operation that warned while translating, a branch in a
loop) the branch breaks as before."""

import warnings

import numpy as np
import pytest

import framehook.sot as sot

pytestmark = pytest.mark.usefixtures("fresh_sot")


def run(fn, *args):
    """What a call returns or raises, its log and its warnings (message, line)."""
    log = []
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")
        try:
            result = ("returned", repr(fn(*args, log)))
        except Exception as error:  # compared with the eager call's
            result = ("raised", type(error).__name__, str(error))
    return result, log, [(str(w.message), w.lineno) for w in shown]


def test_a_branch_on_a_value_is_one_graph_and_the_other_way_runs_the_frame_again():
    def f(x, log):
        log.append("start")
        total = x.sum()
        if total > 0:
            log.append("positive")
            return x * 2
        log.append("not positive")
        return x - 1

    fast = sot.translate(f, cost_model=False)
    for x in (np.ones(3), -np.ones(3), np.ones(3), np.zeros(3)):
        assert run(fast, x) == run(f, x), x
    st = sot.stats(fast)
    # One translation: the calls going the other way ran the original, not a new translation.
    assert (st.translations, st.graphs, st.graph_breaks, st.fallbacks) == (1, 1, [], [])
    assert st.ops_captured == 3
    assert "_sot_assume" in sot.explain(fast, np.ones(3), [])


def test_what_the_graph_reported_before_a_failed_assumption_is_reported_once():
    # log(0) divides by zero before the branch: numpy's report raises inside the graph, and
    # the run again warns once, at the function's line, as eagerly.
    def f(x, log):
        y = np.log(x)
        if (y < 1).all():
            log.append("small")
            return y
        return -y

    fast = sot.translate(f, cost_model=False)
    for x in (np.ones(2), np.array([0.0, 1.0]), np.array([0.0, 10.0]), np.array([5.0, 6.0])):
        assert run(fast, x) == run(f, x), x
    assert sot.stats(fast).graph_breaks == []


def test_a_branch_checked_before_the_graph_writes_its_operand_is_assumed():
    # The check comes before `x += 1`: where it fails, nothing was written yet, so the frame
    # runs again (an exception after the write would be raised on, not run again).
    def checks_then_writes(x, log):
        if x.sum() > 0:
            log.append("positive")
            x += 1
            return x
        log.append("not positive")
        return -x

    fast = sot.translate(checks_then_writes, cost_model=False)
    for x in (np.ones(2), -np.ones(2), np.ones(2), np.zeros(2)):
        assert run(fast, x.copy()) == run(checks_then_writes, x.copy()), x
    st = sot.stats(fast)
    # One graph, the branch in it (not a translation again to break there).
    assert (st.translations, st.graphs, st.graph_breaks, st.fallbacks) == (1, 1, [], []), st
    assert "_sot_assume" in sot.explain(fast, np.ones(2), [])
    # The caller's array is written once, where the branch went as assumed.
    x = np.ones(2)
    fast(x, [])
    np.testing.assert_array_equal(x, [2.0, 2.0])


def test_an_error_after_the_graph_wrote_its_operand_is_raised_not_run_again():
    # Only a failed assumption runs the frame again: the inverse of a singular matrix,
    # after `x += 1`, raises from the graph, the array written once, as eagerly.
    def checks_writes_inverts(x, matrix, log):
        if x.sum() > 0:
            x += 1
            return np.linalg.inv(matrix)
        return -x

    fast = sot.translate(checks_writes_inverts, cost_model=False)
    fast(np.ones(2), np.eye(2), [])
    for make in (lambda: (np.ones(2), np.zeros((2, 2))), lambda: (-np.ones(2), np.zeros((2, 2)))):
        x, m = make()
        x_eager, m_eager = make()
        assert run(fast, x, m) == run(checks_writes_inverts, x_eager, m_eager)
        np.testing.assert_array_equal(x, x_eager)
    assert sot.stats(fast).graph_breaks == []


def test_a_branch_is_not_assumed_where_the_frame_could_not_run_again():
    def writes_its_operand(x, log):
        x += 1  # the graph writes into the caller's array: it cannot run again
        if x.sum() > 0:
            return x
        return -x

    def warned_while_translating(x, log):
        y = np.sqrt(x)  # sqrt(-1) warns while translating: it would again before a rerun
        if np.isnan(y).any():
            return 0.0
        return y

    def in_a_loop(x, log):
        for _ in range(2):
            if x.sum() > 0:  # a loop on a value would be unrolled and assumed to run as often
                x = x - 1
        return x

    for f, x in ((writes_its_operand, np.ones(2)), (warned_while_translating, -np.ones(2)), (in_a_loop, np.ones(2))):
        fast = sot.translate(f, cost_model=False)
        assert run(fast, x.copy()) == run(f, x.copy())
        reasons = [b.reason for b in sot.stats(fast).graph_breaks]
        assert reasons and ("data-dependent" in reasons[0] or "cannot run again" in reasons[0]), (f, reasons)


def test_writes_into_a_copy_the_graph_made_leave_it_able_to_run_again():
    # scikit-learn's scalers: check_array copies, then `X -= mean_`: the writes go into the
    # graph's own array, so a check after them can still run the frame again. Where the
    # array may be the caller's (np.asarray gives it back), the branch breaks.
    def copies(x, log):
        y = np.array(x)
        y -= 1
        z = np.asarray(y)  # the graph's copy given back
        z /= 2
        if z.sum() > 0:
            log.append("positive")
            return z
        return -z

    def may_be_the_callers(x, log):
        y = np.asarray(x)
        y -= 1
        if y.sum() > 0:
            return y
        return -y

    fast = sot.translate(copies, cost_model=False)
    for make in (lambda: np.full(2, 3.0), lambda: np.zeros(2), lambda: np.full(2, 3.0)):
        x, x_eager = make(), make()
        assert run(fast, x) == run(copies, x_eager)
        np.testing.assert_array_equal(x, x_eager)
    st = sot.stats(fast)
    assert (st.translations, st.graphs, st.graph_breaks) == (1, 1, []), st
    assert "_sot_assume" in sot.explain(fast, np.full(2, 3.0), [])

    fast = sot.translate(may_be_the_callers, cost_model=False)
    x, x_eager = np.full(2, 3.0), np.full(2, 3.0)
    assert run(fast, x) == run(may_be_the_callers, x_eager)
    np.testing.assert_array_equal(x, x_eager)
    assert [b.reason for b in sot.stats(fast).graph_breaks] == [
        "it makes a branch on a tensor's value whose graph cannot run again"
    ]


def _checks_then_writes(x, log):
    if x.sum() > 0:  # checked before the write: a failed check can run the frame again
        log.append("positive")
    x += 1
    return x


def _checks(x, log):
    if x.max() > 2:
        log.append("large")
        return x * 2
    return x


def test_the_break_comes_before_the_first_check_that_cannot_run_again():
    # A check before the graph's first write into its operand is answered by running the
    # frame again; the one after it is not: the frame breaks before the call that makes it
    # (line of `_checks`), and the checks before stay assumed in the first graph.
    def f(x, log):
        y = _checks_then_writes(x, log)
        return _checks(y, log)

    fast = sot.translate(f, cost_model=False)
    for make in (lambda: np.ones(2), lambda: np.full(2, 3.0), lambda: -np.ones(2), lambda: np.ones(2)):
        x, x_eager = make(), make()
        assert run(fast, x) == run(f, x_eager)
        np.testing.assert_array_equal(x, x_eager)
    st = sot.stats(fast)
    assert [(b.reason, b.lineno) for b in st.graph_breaks] == [
        ("it makes a branch on a tensor's value whose graph cannot run again", f.__code__.co_firstlineno + 2)
    ], st.graph_breaks
    assert "_sot_assume" in sot.explain(fast, np.ones(2), [])


def test_the_error_state_inside_the_graph_is_the_callers_ignoring_what_it_ignores():
    # Under the caller's "ignore", an overflow is no report: the assumption holds, no rerun.
    def f(x, log):
        y = x * x
        if np.isinf(y).any():
            log.append("overflowed")
            return y
        return x

    fast = sot.translate(f, cost_model=False)
    big = np.array([1e200])
    with np.errstate(over="ignore"):
        assert run(fast, big) == run(f, big)
        assert run(fast, big) == run(f, big)
    assert run(fast, big) == run(f, big)  # warns now: the graph raised, the frame ran again
    assert sot.stats(fast).graph_breaks == []


def test_a_bool_an_operation_returns_is_assumed_as_a_branch_on_it():
    # As scikit-learn's check_array does `if np.may_share_memory(array, array_orig):` (whose
    # signature older numpy does not give: there it may write its operand, and breaks). The
    # bool is the graph's, checked on every call; a call where it differs runs the original.
    def copies_unless_equal(x, y, log):
        z = np.abs(x)
        if np.array_equal(z, y):
            log.append("equal")
            z = z.copy()
        return z * 2

    fast = sot.translate(copies_unless_equal, cost_model=False)
    a, b = np.ones(3), np.zeros(3)
    for x, y in ((a, a.copy()), (b, b.copy()), (a, b), (b, a), (a, a.copy())):
        assert run(fast, x, y) == run(copies_unless_equal, x, y)
    st = sot.stats(fast)
    assert (st.translations, st.graphs, st.graph_breaks, st.fallbacks) == (1, 1, [], [])
    assert "_sot_assume" in sot.explain(fast, a, a.copy(), [])


def test_the_flags_of_an_array_the_graph_makes_are_read_by_the_graph():
    # check_array again: `flags = getattr(array, "flags", None)`, then
    # `if not getattr(flags, "writeable", True):` of an array it made (a view of a read-only
    # input is read-only too: those calls run the original).
    def writable_copy(x, log):
        y = x[1:]
        flags = getattr(y, "flags", None)
        if not getattr(flags, "writeable", True):
            log.append("read-only")
            y = y.copy()
        return y + 1, flags.c_contiguous

    fast = sot.translate(writable_copy, cost_model=False)
    frozen = np.arange(4.0)
    frozen.setflags(write=False)
    for x in (np.arange(4.0), np.arange(4.0), frozen, np.arange(4.0)):
        assert run(fast, x) == run(writable_copy, x)
    st = sot.stats(fast)
    assert (st.translations, st.graphs, st.graph_breaks, st.fallbacks) == (1, 1, [], [])
    explained = sot.explain(fast, np.arange(4.0), [])
    assert "attrgetter('flags.writeable')" in explained and "attrgetter('flags.c_contiguous')" in explained


def test_the_flags_of_an_array_the_graph_makes_used_as_a_value_break():
    def returns_flags(x, log):
        y = x + 1
        return y.flags.writeable, str(y.flags)

    fast = sot.translate(returns_flags, cost_model=False)
    x = np.arange(3.0)
    assert run(fast, x) == run(returns_flags, x)
    reasons = [b.reason for b in sot.stats(fast).graph_breaks]
    assert reasons == ["tensor to python: attribute flags of a tensor"], reasons
