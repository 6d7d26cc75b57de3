"""The C API capsule for native hooks: registration and bad input."""

import os

import pytest

import framehook
from framehook import _native


def plain(x):
    return x * 2


def test_capsule_and_header_are_published():
    assert type(_native._C_API).__name__ == "PyCapsule"
    header = os.path.join(framehook.get_include(), "framehook.h")
    with open(header) as source:
        text = source.read()
    assert '#define FRAMEHOOK_CAPSULE_NAME "framehook._native._C_API"' in text


def test_native_hook_joins_the_chain_and_is_freed_once_removed():
    calls_before, freed_before = _native._capi_counts()
    handle = _native._capi_add(b"native-decliner")
    assert handle in framehook.frame_hooks()
    assert handle.native and handle.hook is None and handle.name == "native-decliner"
    assert plain(2) == 4
    calls, freed = _native._capi_counts()
    assert calls > calls_before and freed == freed_before
    _native._capi_set_enabled(handle, False)
    assert not handle.enabled
    calls_disabled = _native._capi_counts()[0]
    plain(3)
    assert _native._capi_counts()[0] == calls_disabled
    _native._capi_remove(handle)
    del handle
    assert _native._capi_counts()[1] == freed_before + 1


def test_removing_twice_raises_value_error():
    handle = _native._capi_add(None)
    assert handle.name == "<native hook>"
    _native._capi_remove(handle)
    with pytest.raises(ValueError, match="not registered"):
        _native._capi_remove(handle)
    # The Python API treats native handles like any other.
    with pytest.raises(ValueError):
        framehook.remove_frame_hook(handle)


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"null_spec": True}, ValueError, "spec is NULL"),
        ({"size_delta": -8}, ValueError, r"spec.size is \d+, expected at least"),
        ({"hook": False}, ValueError, "neither a hook nor an observe function"),
        ({"on_error": 7}, ValueError, "on_error must be"),
    ],
)
def test_bad_specs_raise_and_do_not_take_the_user_data(kwargs, error, message):
    freed_before = _native._capi_counts()[1]
    with pytest.raises(error, match=message):
        _native._capi_add(b"bad", **kwargs)
    assert framehook.frame_hooks() == []
    assert _native._capi_counts()[1] == freed_before


def test_non_utf8_name_is_rejected():
    with pytest.raises(ValueError, match="not UTF-8"):
        _native._capi_add(b"\xff\xfe")


@pytest.mark.parametrize("bad", [None, 42, "handle"])
def test_remove_and_enable_reject_what_is_not_a_handle(bad):
    with pytest.raises(TypeError, match="HookHandle|NULL"):
        _native._capi_remove(bad)
    if bad is not None:
        with pytest.raises(TypeError, match="HookHandle"):
            _native._capi_set_enabled(bad, True)
