"""What translating costs, counted from run time (`SotStats.instructions_simulated`): the
instructions a translation simulates are bounded, a long call is simulated once, and a break
deep in inlined calls does not make each caller's callee simulate again what led there."""

import contextlib
import io
import sys

import numpy as np
import pytest

import framehook
import framehook.sot as sot

pytestmark = pytest.mark.usefixtures("fresh_sot")

_LOG = io.StringIO()


def _busy(n):
    # Pure Python the VM simulates: a few instructions per round.
    total = 0
    for i in range(n):
        total += i
    return total


def _innermost(x):
    y = x * 2.0 + _busy(150)
    print("a break", file=_LOG)  # the break, outside any loop
    return y + 1.0


def _middle(x):
    return _innermost(x) - 1.0


def _outer(x):
    return _middle(x) * 3.0


def _top(x):
    return _outer(x + 1.0)


def test_a_break_deep_in_inlined_calls_is_not_simulated_again_by_each_callee():
    """3.11+: the break at `_innermost`'s print, three frames down, keeps the top frame's
    graph up to there and goes on in each frame (nested resume): the top frame's call runs
    `_outer`'s bridge, which runs `_middle`'s, which runs `_innermost`'s, which runs the
    print and then `_innermost`'s resume function; each bridge then calls its frame's. One
    break, `_busy` simulated once. 3.9/3.10: the top frame breaks at its call of `_outer`,
    which runs as a call: `_outer`, `_middle` and `_innermost` are each translated as they
    run. Each begins where the top frame's translation saw it break (a hint), so `_busy` is
    simulated twice (inlined in the top frame's translation, and in `_innermost`'s own,
    which must reach its break), not once per level."""
    alone = sot.translate(_innermost)
    x = np.arange(3.0)
    np.testing.assert_array_equal(alone(x), _innermost(x))
    once = sot.stats(alone).instructions_simulated
    assert once > 150 * 4, once  # _busy's rounds, simulated

    sot.reset()
    fast = sot.translate(_top)
    printed = _LOG.getvalue().count("a break")
    translated = fast(x)
    assert _LOG.getvalue().count("a break") == printed + 1  # the print ran once
    np.testing.assert_array_equal(translated, _top(x))
    st = sot.stats(fast)
    if sys.version_info >= (3, 11):
        assert [(b.lineno, b.reason) for b in st.graph_breaks] == [
            (_innermost.__code__.co_firstlineno + 2, "print() is a side effect the graph cannot hold (print)")]
        # The top frame's graph (up to `_innermost`'s print) and one per resume function
        # after it: `_innermost`'s, `_middle`'s, `_outer`'s and `_top`'s.
        assert (st.translations, st.graphs) == (5, 4), st
        assert st.instructions_simulated < 1.3 * once, (st.instructions_simulated, once)
        np.testing.assert_array_equal(fast(x), _top(x))
        assert sot.stats(fast).cache_hits == 5
        return
    # One break per frame, each where the print is: the same as each would find alone.
    assert [(b.lineno, b.reason) for b in st.graph_breaks] == [
        (_innermost.__code__.co_firstlineno + 2, st.graph_breaks[0].reason)] * 4, st.graph_breaks
    assert "print" in st.graph_breaks[0].reason
    assert st.graphs >= 2 and st.translations >= 5
    # Twice `_innermost`'s prefix (and what the other frames add), not four or five times.
    assert st.instructions_simulated < 2.5 * once, (st.instructions_simulated, once)
    # The translations run again from the cache, with the same result.
    np.testing.assert_array_equal(fast(x), _top(x))
    assert sot.stats(fast).cache_hits >= 5


def _long_call(x):
    return x + _busy(1000)


def test_a_long_call_is_simulated_once_in_its_callers_translation():
    """A call simulating more instructions than a translation's first bound (5,000) but
    fewer than one instruction's calls may (10,000) is inlined whole: no break, one
    translation, the call's instructions simulated once."""
    fast = sot.translate(_long_call)
    x = np.arange(3.0)
    np.testing.assert_array_equal(fast(x), _long_call(x))
    st = sot.stats(fast)
    assert (st.translations, st.graphs, st.graph_breaks) == (1, 1, []), st
    assert 5_000 < st.instructions_simulated < 10_000, st.instructions_simulated
    np.testing.assert_array_equal(fast(x + 1), _long_call(x + 1))
    assert sot.stats(fast).cache_hits == 1


def _longer_call(x):
    return x + _busy(5000)


def test_a_call_past_its_bound_runs_as_a_call():
    """A call simulating more than one instruction's calls may is the break: it runs as a
    call (its own frames translated as they run), the rest of the frame resumed after it."""
    fast = sot.translate(_longer_call)
    x = np.arange(3.0)
    np.testing.assert_array_equal(fast(x), _longer_call(x))
    st = sot.stats(fast)
    assert st.graph_breaks, st
    assert "a call simulating more than 10000 instructions" in st.graph_breaks[0].reason
    assert st.graph_breaks[0].lineno == _longer_call.__code__.co_firstlineno + 1


def _unrolled(x):
    y = x + 1.0
    total = 0
    for i in range(20_000):
        total += i
    return y * total


def test_a_loop_of_the_translated_frame_breaks_past_the_translation_bound():
    """A loop of the frame itself is unrolled until the translation has simulated 10,000
    instructions; the graph so far stands (the `+` before the loop), the loop goes on in a
    resume function."""
    fast = sot.translate(_unrolled)
    x = np.arange(3.0)
    np.testing.assert_array_equal(fast(x), _unrolled(x))
    st = sot.stats(fast)
    assert st.graph_breaks and "more than 10000 instructions simulated" in st.graph_breaks[0].reason
    assert st.ops_captured >= 1
    # Bounded: the translation and its resume functions' together.
    assert st.instructions_simulated < 20_000 * 4 * 3, st.instructions_simulated


def _prefix(x):
    return x * 2.0 + _busy(150)


def _break_inside_a_region(x):
    y = x * 2.0 + _busy(150)
    with np.errstate(over="ignore"):
        z = y * 3.0
        print("a break", file=_LOG)  # inside the region: the graph breaks at the `with`
        w = z + 1.0
    return w


def test_a_break_inside_a_graph_region_does_not_simulate_again_what_led_to_the_region():
    """The graph cannot stop inside a region, so a break in a region's block is a break at
    the `with` that entered it: the translation goes back to the state it had there, not
    simulating the frame again up to it (`_busy` once, not twice)."""
    alone = sot.translate(_prefix)
    x = np.arange(3.0)
    np.testing.assert_array_equal(alone(x), _prefix(x))
    once = sot.stats(alone).instructions_simulated
    assert once > 150 * 4, once

    sot.reset()
    fast = sot.translate(_break_inside_a_region, cost_model=False)
    np.testing.assert_array_equal(fast(x), _break_inside_a_region(x))
    st = sot.stats(fast)
    with_line = _break_inside_a_region.__code__.co_firstlineno + 2
    assert st.graph_breaks[0].lineno == with_line and st.graphs >= 2, (st.graph_breaks, st.graphs)
    assert "inside the with block of a graph region (print()" in st.graph_breaks[0].reason, st.graph_breaks
    assert st.instructions_simulated < 1.5 * once, (st.instructions_simulated, once)
    np.testing.assert_array_equal(fast(x), _break_inside_a_region(x))
    assert sot.stats(fast).cache_hits >= 1


# The rounds of the loop in `_region_after_a_made_iterator`'s block (a global: guarded, so
# each value translates anew).
_ROUNDS = 30


def _region_after_a_made_iterator(x):
    y = x * 2.0
    items = (v for v in (3.0, 1.0))  # made while translating: no break can hand it on
    with np.errstate(over="ignore"):
        total = 0
        # In the frame (a call's summary would replay), within the region's budget of
        # simulated instructions (`REGION_BUDGET`).
        for i in range(_ROUNDS):
            total += i
        z = y * 3.0 + total
        print("a break", file=_LOG)  # inside the region: the graph breaks at the `with`
        w = z + next(items)
    return w


@contextlib.contextmanager
def _rounds(rounds):
    """`_ROUNDS` set to `rounds` (and translations forgotten) for the block."""
    global _ROUNDS
    _ROUNDS = rounds
    sot.reset()
    try:
        yield
    finally:
        _ROUNDS = 30


def _simulated_by_the_region_example(rounds):
    """The instructions simulated by `_region_after_a_made_iterator`'s first call, then by
    its call with other shapes, with `rounds` rounds of its loop; and its stats."""
    with _rounds(rounds):
        fast = sot.translate(_region_after_a_made_iterator, cost_model=False)
        x = np.arange(3.0)
        np.testing.assert_array_equal(fast(x), _region_after_a_made_iterator(x))
        first = sot.stats(fast)
        x4 = np.arange(4.0)  # other shapes: the codes are translated again, guarded anew
        np.testing.assert_array_equal(fast(x4), _region_after_a_made_iterator(x4))
        again = sot.stats(fast)
    simulated = first.instructions_simulated
    return simulated, again.instructions_simulated - simulated, first, again


def _loop_in_the_frame(x):
    total = 0
    for i in range(_ROUNDS):
        total += i
    return x * 2.0 + total


def _simulated_by_the_loop_alone(rounds):
    with _rounds(rounds):
        alone = sot.translate(_loop_in_the_frame)
        x = np.arange(3.0)
        np.testing.assert_array_equal(alone(x), _loop_in_the_frame(x))
        return sot.stats(alone).instructions_simulated


def test_a_resume_function_breaks_at_once_at_a_region_that_broke_inside_before():
    """A break inside a region, where the `with` cannot be broken at (a value made while
    translating is live there), breaks earlier; the resume function made there reaches the
    same `with` and breaks at it at once (`cache::RegionBreak`), not simulating the
    region's block again. A later translation of the code with other guards does too.
    Counted in simulations of the loop: what 30 rounds add to what 0 rounds simulate."""
    loop = _simulated_by_the_loop_alone(30) - _simulated_by_the_loop_alone(0)
    assert loop >= 30 * 4, loop  # at least four instructions a round
    without_first, without_again, _, _ = _simulated_by_the_region_example(0)
    first, again, st, st_again = _simulated_by_the_region_example(30)
    with_line = _region_after_a_made_iterator.__code__.co_firstlineno + 3
    # The original's, moved to the generator's line; the resume function's, at the `with`.
    assert [b.lineno for b in st.graph_breaks[:2]] == [with_line - 1, with_line], st.graph_breaks
    assert "inside the with block of a graph region (print()" in st.graph_breaks[1].reason, st.graph_breaks
    # The loop twice: in the original's region, and in the block's translation after the
    # `with` ran (not a third time in the resume function's region).
    assert 1.5 * loop < first - without_first < 2.5 * loop, (first, without_first, loop)
    # Translated again: once, in the block's translation (the original and the resume
    # function break at the `with` at once).
    assert st_again.translations > 6, st_again.translations
    assert 0.5 * loop < again - without_again < 1.5 * loop, (again, without_again, loop)


def _long_prefix(x):
    a = x + 1.0
    b = a * 2.0 - x
    c = (a + b) / 3.0
    d = c * c + a - b
    e = d - c + 1.0
    f = (e + d) * (a - 2.0)
    g = f / 4.0 + e - d
    h = g * 2.0 + f - c
    print("a break", file=_LOG)  # the break: what follows is short
    return h + 1.0


def test_a_resume_function_leaves_out_what_only_the_start_reached():
    """A resume function is the original entered at its break: the part before the break,
    which no path from there reaches, is not in its code (nor lowered, encoded and decoded
    again when it is translated). Seen by a hook beside the translator, asked about the
    resume function's frame as it runs."""
    codes = []
    handle = framehook.add_frame_hook(
        lambda frame: codes.append(frame.f_code) if frame.f_code.co_name == "_long_prefix" else None)
    try:
        fast = sot.translate(_long_prefix)
        x = np.arange(3.0)
        np.testing.assert_array_equal(fast(x), _long_prefix(x))
    finally:
        framehook.remove_frame_hook(handle)
    st = sot.stats(fast)
    assert [b.lineno for b in st.graph_breaks] == [_long_prefix.__code__.co_firstlineno + 9], st.graph_breaks
    assert (st.translations, st.graphs) == (2, 2), st
    original = _long_prefix.__code__
    resumed = [code for code in codes if code is not original]
    assert len(resumed) == 1, codes
    # The prologue taking the values handed on, the print and the return: a fraction of
    # the original's instructions.
    assert len(resumed[0].co_code) < len(original.co_code) / 2, (len(resumed[0].co_code), len(original.co_code))


def _prefix_then_print(x):
    total = _busy(150)
    print("a break", file=_LOG)
    return x + total


def _prefix_then_generator_then_print(x):
    total = _busy(150)
    shifts = (v for v in (1.0, 2.0))  # a generator made while translating
    print("a break", file=_LOG)  # its state here holds the generator: no resume function
    return x + next(shifts) + total


def test_a_translation_that_must_break_earlier_is_not_simulated_again():
    """The print breaks where the frame holds a generator the translation made, which no
    resume function can be given: the translation breaks instead where the generator is
    made. It goes back to its state kept there, rather than simulating the frame again up
    to it: `_busy` is simulated once, as in the same frame without the function."""
    x = np.arange(3.0)
    plain = sot.translate(_prefix_then_print)
    np.testing.assert_array_equal(plain(x), _prefix_then_print(x))
    once = sot.stats(plain).instructions_simulated
    assert once > 150 * 4, once
    sot.reset()
    fast = sot.translate(_prefix_then_generator_then_print)
    printed = _LOG.getvalue().count("a break")
    np.testing.assert_array_equal(fast(x), _prefix_then_generator_then_print(x))
    assert _LOG.getvalue().count("a break") == printed + 2  # the translated call's and the original's
    st = sot.stats(fast)
    made_at = _prefix_then_generator_then_print.__code__.co_firstlineno + 2
    assert [(b.lineno, b.reason.split(" (")[0]) for b in st.graph_breaks][:1] == [
        (made_at, "it makes a value the generated code cannot rebuild")], st.graph_breaks
    assert st.instructions_simulated < 1.3 * once, (st.instructions_simulated, once)
    np.testing.assert_array_equal(fast(x), _prefix_then_generator_then_print(x))
