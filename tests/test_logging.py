"""Rust `tracing` events reach Python logging under the "framehook" logger."""

import logging

import framehook


def _hooked() -> int:
    return 1


def test_install_and_removal_are_logged_at_debug(caplog):
    # Level set after import: the bridge must not have cached an older level.
    with caplog.at_level(logging.DEBUG, logger="framehook"):
        handle = framehook.add_frame_hook(lambda frame: None)
        assert _hooked() == 1
        framehook.remove_frame_hook(handle)
    messages = [(r.name, r.levelno, r.getMessage()) for r in caplog.records]
    installed = [m for m in messages if "eval function installed" in m[2]]
    removed = [m for m in messages if "eval function removed" in m[2]]
    assert installed and removed, messages
    for name, level, _ in installed + removed:
        assert name == "framehook" or name.startswith("framehook."), name
        assert level == logging.DEBUG


def test_nothing_is_emitted_above_the_configured_level(caplog):
    with caplog.at_level(logging.WARNING, logger="framehook"):
        handle = framehook.add_frame_hook(lambda frame: None)
        framehook.remove_frame_hook(handle)
    assert not [r for r in caplog.records if r.name.startswith("framehook")]
