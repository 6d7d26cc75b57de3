"""The numpy backend's cost model (``sot.translate(cost_model=True)``, the default outside
tests): after its warm-up calls, a translated function's calls alternate, timed, between the
translation and the original, then run the faster way; results are the same either way."""

import gc

import numpy as np
import pytest

import framehook
from framehook import sot


@pytest.fixture(autouse=True)
def no_translated_function_left():
    """Translated functions of earlier tests that are garbage but not yet collected would
    keep SOT's hook in the chain, which these tests watch leave it."""
    gc.collect()


WARM_CALLS = 2
TRIALS = 5
JUDGED_CALLS = WARM_CALLS + 2 * TRIALS

# Many values of an argument read and guarded, next to nothing computed: the guards (its
# keys, then each value: an argument's, which no watcher answers) cost more than the
# original's dict reads.
SETTINGS = {f"key{i}": i for i in range(400)}


def guarded_more_than_computed(x, settings=SETTINGS):
    total = 0
    for key in settings:
        total += settings[key]
    return x, total


def folded_away(x):
    # The loop runs while translating (within the translation's budget); the translation
    # returns its result. Each step's large power makes the original's call some 30 times
    # a translated call's guards and graph, even in a debug build: the trials tell them
    # apart on a busy machine (with `i * i` they were within 2x in a debug build, and the
    # choice flipped now and then).
    total = 0
    for i in range(400):
        total += i**300 % 1000
    return x * total


def test_a_translation_slower_than_the_original_is_left_for_the_original():
    fast = sot.translate(guarded_more_than_computed, cost_model=True)
    x = np.arange(3.0)
    for _ in range(JUDGED_CALLS + 5):
        result = fast(x)
        assert result[0] is x and result[1] == sum(range(400))
    stats = sot.stats(fast)
    assert stats.translations == 1
    assert stats.cost_model == "original", stats
    # The trials' original calls and every call after the choice.
    assert stats.runs_original == TRIALS + 5
    assert stats.cache_hits == WARM_CALLS - 1 + TRIALS
    # No function needs the hook: it left the chain, and CPython runs every frame itself.
    assert "sot.translate" not in hook_names()
    assert not framehook._native._is_installed()


def test_the_choice_is_judged_again_later_with_the_hook_back_for_the_trials():
    fast = sot.translate(guarded_more_than_computed, cost_model=True)
    x = np.arange(3.0)
    # The choice is made by the last trial; the next call parks the function.
    calls = JUDGED_CALLS + 1
    for _ in range(calls):
        fast(x)
    assert sot.stats(fast).cost_model == "original" and "sot.translate" not in hook_names()
    # Judged again at 16 times the calls of the choice: an original trial, then a
    # translated one, with the hook in the chain again.
    while calls < JUDGED_CALLS * 16 + 1:
        fast(x)
        calls += 1
    assert sot.stats(fast).cost_model == "judging" and "sot.translate" in hook_names()
    for _ in range(2 * TRIALS):
        fast(x)
    assert sot.stats(fast).cost_model == "original" and "sot.translate" not in hook_names()


def hook_names():
    return [handle.name for handle in framehook.frame_hooks()]


def test_a_translation_that_pays_keeps_running():
    fast = sot.translate(folded_away, cost_model=True)
    x = np.arange(3.0)
    expected = folded_away(x)
    for _ in range(JUDGED_CALLS + 5):
        np.testing.assert_array_equal(fast(x), expected)
    stats = sot.stats(fast)
    assert stats.cost_model == "translated", stats
    assert stats.runs_original == TRIALS
    assert stats.cache_hits == JUDGED_CALLS + 5 - 1 - TRIALS
    assert stats.graphs == 1 and stats.ops_captured == 1
    assert "sot.translate" in hook_names()


def test_judging_reports_its_state_and_no_model_is_off():
    judged = sot.translate(folded_away, cost_model=True)
    x = np.arange(3.0)
    judged(x)
    assert sot.stats(judged).cost_model == "judging"
    plain = sot.translate(folded_away, cost_model=False)
    for _ in range(JUDGED_CALLS + 1):
        plain(x)
    stats = sot.stats(plain)
    assert (stats.cost_model, stats.runs_original) == ("off", 0)
    assert stats.cache_hits == JUDGED_CALLS


def test_a_call_that_raises_is_the_originals_error_either_way():
    def divide(x, d):
        return x / d, 10 // d

    fast = sot.translate(divide, cost_model=True)
    x = np.arange(3.0)
    for _ in range(JUDGED_CALLS):
        fast(x, 2)
    for _ in range(3):
        with pytest.raises(ZeroDivisionError):
            fast(x, 0)
    np.testing.assert_array_equal(fast(x, 2)[0], x / 2)


def test_cost_model_must_be_a_bool_or_none():
    with pytest.raises(TypeError, match="cost_model must be True, False or None"):
        sot.translate(folded_away, cost_model="yes")
