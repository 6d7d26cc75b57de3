"""The module that was built is the one for the running interpreter."""

import os
import sys
import sysconfig

import framehook
from framehook import _native


def test_module_reports_the_interpreter_it_was_built_for():
    info = framehook.build_info()
    assert info["version"][:2] == sys.version_info[:2]
    assert info["version_hex"] >> 16 == sys.hexversion >> 16
    assert info["gil_disabled"] == bool(sysconfig.get_config_var("Py_GIL_DISABLED"))
    assert info["debug"] == hasattr(sys, "gettotalrefcount")


def test_extension_suffix_matches_the_running_interpreter():
    assert _native.__file__.endswith(sysconfig.get_config_var("EXT_SUFFIX"))


def test_the_matrix_ran_the_interpreter_it_meant():
    expected = os.environ.get("FRAMEHOOK_EXPECT_PYTHON")
    if expected is None:
        import pytest

        pytest.skip("not run by framehook_dev.matrix (FRAMEHOOK_EXPECT_PYTHON unset)")
    name = "{}.{}".format(*sys.version_info[:2])
    if sysconfig.get_config_var("Py_GIL_DISABLED"):
        name += "t"
    if hasattr(sys, "gettotalrefcount"):
        name += "d"
    assert name == expected


def test_gil_state_matches_the_build():
    gil_disabled = bool(sysconfig.get_config_var("Py_GIL_DISABLED"))
    if hasattr(sys, "_is_gil_enabled"):
        # Importing framehook must not re-enable the GIL on a free-threaded build.
        assert sys._is_gil_enabled() is not gil_disabled
    else:
        assert not gil_disabled
