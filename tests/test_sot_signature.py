"""`inspect.signature(f)` of a Python function or of a wrapper whose `__wrapped__` chain ends
at one (`src/sot/translator/vm/signature.rs`): computed while translating, not simulated
(array-api-compat asks it of `np.unique` on every `unique_values`; simulated, it ran past a
library call's budget and broke), guarded by what it is made of; `in` and `len` of its
`parameters` answered then. A signature the program keeps is made again by the generated
code, a new one on every call as the original makes."""

import functools
import inspect

import numpy as np
import pytest

import framehook.sot as sot

pytestmark = pytest.mark.usefixtures("fresh_sot")

# The translated function's own instructions: `inspect.signature` simulated runs to hundreds.
OWN_STEPS = 80


def asks_the_parameters(x, f):
    params = inspect.signature(f).parameters
    return x * 2, "flag" in params, "c" in params, len(params)


def _new_target():
    def target(a, b=1, *, flag=True):
        return a

    return target


def _assert_whole(fast, translations=1):
    st = sot.stats(fast)
    assert (st.translations, st.graphs, st.graph_breaks, st.fallbacks) == (translations, translations, [], []), st
    assert st.instructions_simulated < OWN_STEPS * translations, st


def test_a_function_s_parameters_are_read_without_simulating_the_signature():
    x, target = np.arange(3.0), _new_target()
    fast = sot.translate(asks_the_parameters)
    got = fast(x, target)
    assert repr(got) == repr(asks_the_parameters(x, target))
    assert got[1:] == (True, False, 3)
    _assert_whole(fast)
    assert repr(fast(x + 1, target)) == repr(asks_the_parameters(x + 1, target))
    assert sot.stats(fast).translations == 1


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(lambda f: setattr(f, "__signature__", inspect.Signature([
            inspect.Parameter("c", inspect.Parameter.POSITIONAL_OR_KEYWORD)])), id="__signature__"),
        pytest.param(lambda f: setattr(f, "__code__", (lambda c, flag: c).__code__), id="__code__"),
        pytest.param(lambda f: setattr(f, "__wrapped__", lambda c: c), id="__wrapped__"),
        pytest.param(lambda f: f.__kwdefaults__.clear(), id="__kwdefaults__ emptied"),
    ],
)
def test_a_function_changed_after_the_translation_is_asked_again(change):
    """Each change alters what `inspect.signature` makes of the function: the translation's
    guards fail, and the call answers as the original does then."""
    x, target = np.arange(2.0), _new_target()
    fast = sot.translate(asks_the_parameters)
    assert repr(fast(x, target)) == repr(asks_the_parameters(x, target))
    change(target)
    want = asks_the_parameters(x, target)
    assert repr(fast(x, target)) == repr(want)
    assert sot.stats(fast).guard_failures == 1


def _decorated(function):
    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        return function(*args, **kwargs)

    return wrapper


def test_a_wrapper_s_signature_is_its_wrapped_function_s():
    x = np.arange(2.0)
    target = _decorated(_new_target())
    fast = sot.translate(asks_the_parameters)
    assert repr(fast(x, target)) == repr(asks_the_parameters(x, target))
    assert fast(x, target)[1:] == (True, False, 3)
    _assert_whole(fast)
    target.__wrapped__ = lambda c: c
    assert fast(x, target)[1:] == asks_the_parameters(x, target)[1:] == (False, True, 1)
    assert sot.stats(fast).translations == 2


def asks_numpy(x):
    return x + 1, "equal_nan" in inspect.signature(np.unique).parameters


def test_a_numpy_function_s_signature_through_its_dispatcher():
    x = np.arange(2.0)
    fast = sot.translate(asks_numpy)
    assert repr(fast(x)) == repr(asks_numpy(x))
    _assert_whole(fast)


def keeps_the_signature(x, f):
    return x - 1, inspect.signature(f)


def test_a_signature_the_program_keeps_is_made_anew_on_each_call():
    x, target = np.arange(2.0), _new_target()
    fast = sot.translate(keeps_the_signature)
    first = fast(x, target)
    second = fast(x, target)
    assert first[1] == second[1] == keeps_the_signature(x, target)[1]
    assert first[1] is not second[1]
    _assert_whole(fast)


def test_a_bound_method_s_signature_is_simulated_as_before():
    """A bound method forwards its attributes to its function (its `__wrapped__` would be
    the function's): not modeled, simulated, with its answer."""

    class Holder:
        def method(self, a, *, flag=False):
            return a

    x, bound = np.arange(2.0), Holder().method
    fast = sot.translate(asks_the_parameters)
    assert repr(fast(x, bound)) == repr(asks_the_parameters(x, bound))
    assert sot.stats(fast).instructions_simulated > OWN_STEPS
