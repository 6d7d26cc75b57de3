import dis
import os
import sys
import sysconfig

# Translated functions' counters must not depend on timing: no cost model unless a test
# asks for one (tests/test_sot_cost_model.py). Set before framehook.sot reads it.
os.environ["FRAMEHOOK_SOT_COST_MODEL"] = "0"

import pytest

import framehook

HOOKS_GENERATORS = sys.version_info >= (3, 11)
# Free-threaded 3.13 makes new code objects immortal once a thread has run (gh-117696).
FREE_THREADED_313 = bool(sysconfig.get_config_var("Py_GIL_DISABLED")) and sys.version_info[:2] == (3, 13)


@pytest.fixture(autouse=True)
def no_hooks_left():
    """Every test starts with no hooks; clearing them removes the eval function."""
    framehook.clear_frame_hooks()
    yield
    framehook.clear_frame_hooks()
    assert framehook.frame_hooks() == []
    assert not framehook._native._is_installed()


@pytest.fixture
def fresh_sot():
    """SOT's translations and counters forgotten before and after a test: the tests of the
    translator's user API (tests/test_sot_translate.py and its topic files) ask for it with
    ``pytestmark = pytest.mark.usefixtures("fresh_sot")``."""
    import framehook.sot as sot

    sot.reset()
    yield
    sot.reset()


def replace_code(target, replacement):
    """A hook that swaps `target`'s code for `replacement`, counting its calls."""

    def hook(frame):
        hook.calls += 1
        if frame.original_code is target:
            return replacement
        return None

    hook.calls = 0
    return hook


_DEREF_OPS = {
    dis.opmap[name]
    for name in ("LOAD_DEREF", "STORE_DEREF", "DELETE_DEREF", "LOAD_CLOSURE", "MAKE_CELL",
                 "LOAD_CLASSDEREF", "LOAD_FROM_DICT_OR_DEREF")
    if name in dis.opmap
} | set(dis.haslocal)  # 3.13 compiles LOAD_CLOSURE to LOAD_FAST


def with_extra_local(code, name="_framehook_extra"):
    """An equivalent code object whose frame layout differs: one more local.

    From 3.11 cell and free variables are addressed by their slot after the
    locals, so their instructions move up by one slot."""
    raw = bytearray(code.co_code)
    if sys.version_info >= (3, 11):
        for offset in range(0, len(raw), 2):
            name = dis.opname[raw[offset]]
            if name.count("FAST") == 2:
                # Superinstructions pack two slots in four bits each.
                assert all(part < code.co_nlocals for part in (raw[offset + 1] >> 4, raw[offset + 1] & 15))
            elif raw[offset] in _DEREF_OPS and raw[offset + 1] >= code.co_nlocals:
                assert raw[offset + 1] < 255, "test helper does not handle EXTENDED_ARG"
                raw[offset + 1] += 1
    return code.replace(
        co_code=bytes(raw),
        co_varnames=code.co_varnames + (name,),
        co_nlocals=code.co_nlocals + 1,
    )


def renamed(code, like):
    """`code` carrying `like`'s names, so tracebacks and reprs read naturally."""
    kwargs = {"co_name": like.co_name}
    if sys.version_info >= (3, 11):
        kwargs["co_qualname"] = like.co_qualname
    return code.replace(**kwargs)
