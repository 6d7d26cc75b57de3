"""SOT and 3.15's lazy imports (PEP 810): a module's namespace holds a placeholder for a
`lazy import` until the program first uses the name, which imports the module then.

A translation or a guard must never be what imports it (the program's import side effects
would move), and once the program has imported it, a translation made while it was a
placeholder must not stay in use."""

import sys
import types

import numpy as np
import pytest

import framehook.sot as sot

pytestmark = pytest.mark.skipif(
    not hasattr(types, "LazyImportType"), reason="lazy imports (PEP 810) are CPython 3.15+"
)

TARGET = "fh_sot_lazy_target"

MODULE = f"""
lazy import {TARGET}
import numpy as np

def scaled(x, use):
    y = np.add(x, 1.0)
    if use:
        return {TARGET}.describe(y)
    return y * 2.0
"""


@pytest.fixture
def lazy_module(tmp_path, monkeypatch):
    (tmp_path / f"{TARGET}.py").write_text(
        "IMPORTS = []\nIMPORTS.append(1)\n\ndef describe(y):\n    return float(y.sum())\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop(TARGET, None)
    module = types.ModuleType("fh_sot_lazy_user")
    exec(compile(MODULE, str(tmp_path / "fh_sot_lazy_user.py"), "exec"), module.__dict__)
    sot.reset()
    yield module
    sot.reset()
    sys.modules.pop(TARGET, None)


def placeholder_left(module):
    return TARGET not in sys.modules and type(module.__dict__[TARGET]) is types.LazyImportType


def test_translating_and_guarding_never_import_a_placeholder(lazy_module):
    x = np.arange(4.0)
    fast = sot.translate(lazy_module.scaled)
    for _ in range(3):
        np.testing.assert_array_equal(fast(x, False), (x + 1.0) * 2.0)
    stats = sot.stats(fast)
    assert stats.translations == 1 and stats.cache_hits == 2 and stats.graphs >= 1
    assert stats.ops_captured >= 2
    assert placeholder_left(lazy_module)


def test_a_placeholder_read_breaks_and_a_resolved_one_is_translated_again(lazy_module):
    x = np.arange(4.0)
    fast = sot.translate(lazy_module.scaled)
    # The translation reads the placeholder: it breaks there and the original code
    # imports the module, as it would without SOT.
    assert fast(x, True) == float((x + 1.0).sum())
    assert TARGET in sys.modules and sys.modules[TARGET].IMPORTS == [1]
    stats = sot.stats(fast)
    assert [b.reason for b in stats.graph_breaks if "lazy import" in b.reason], stats.graph_breaks
    # The namespace now holds the module: the translation that pinned the placeholder
    # fails its guard and a new one reads the module itself.
    assert lazy_module.__dict__[TARGET] is sys.modules[TARGET]
    before = sot.stats(fast)
    assert fast(x, True) == float((x + 1.0).sum())
    after = sot.stats(fast)
    assert after.guard_failures > before.guard_failures
    assert after.translations > before.translations
    assert not [b for b in after.graph_breaks[len(before.graph_breaks):] if "lazy import" in b.reason]
    assert sys.modules[TARGET].IMPORTS == [1]
