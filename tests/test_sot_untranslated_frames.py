"""What a live translation costs the rest of the program: SOT's hook acts only inside
translated calls, so while it is the only hook, frames outside them are passed through by
the eval function without asking any hook (only the thread's armed scopes are read)."""

import threading

import numpy as np
import pytest

import framehook
import framehook.sot as sot
from framehook import _native


@pytest.fixture(autouse=True)
def fresh_translator():
    sot.reset()
    framehook.clear_frame_hooks()
    yield
    sot.reset()
    framehook.clear_frame_hooks()


def leaf(x):
    return x


def call_leaves(n):
    for i in range(n):
        leaf(i)


def asked_about(run):
    """How many frames the eval function asked the hooks about while ``run()`` ran."""
    before = _native._dispatched_frames()
    run()
    return _native._dispatched_frames() - before


def scale(x):
    return x * 2.0


def test_frames_outside_translated_calls_are_not_asked_about():
    fast = sot.translate(scale)
    assert np.array_equal(fast(np.ones(3)), np.full(3, 2.0))
    assert sot.stats(fast).graphs == 1
    # 201 frames (the loop's and its leaves'): none asked about while no translated call runs.
    assert asked_about(lambda: call_leaves(200)) == 0
    # Another thread likewise.
    thread = threading.Thread(target=call_leaves, args=(200,))
    assert asked_about(lambda: (thread.start(), thread.join())) == 0


def test_frames_inside_translated_calls_still_are():
    fast = sot.translate(scale)
    fast(np.ones(3))
    # The translated function's own frame: its cache entry is chosen by its guards.
    assert asked_about(lambda: fast(np.ones(3))) >= 1
    assert sot.stats(fast).cache_hits == 1


def test_another_hook_beside_the_translator_is_asked_about_every_frame():
    seen = []
    fast = sot.translate(scale)
    fast(np.ones(3))
    handle = framehook.add_frame_hook(lambda frame: seen.append(frame.f_code.co_name))
    try:
        assert asked_about(lambda: call_leaves(20)) >= 21
        assert seen.count("leaf") == 20
    finally:
        framehook.remove_frame_hook(handle)
    assert asked_about(lambda: call_leaves(20)) == 0
