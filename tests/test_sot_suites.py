"""A slice of third-party test suites through SOT: each test gives its eager outcome.

The full run is a tool (``python -m framehook_dev.sot_suites``, docs/reliability.md,
"Third-party suites"); this runs the ``slice`` of each package in
``tools/framehook_dev/suites_manifest.json``, eagerly and then with every test function
translated (``sot.translate(test, trace_modules=(<the package>,))``), each in a child process
(the suite's own pytest configuration and conftest), and compares the outcomes test by test.
It also asserts that the tests really ran translated (their own frames ran as generated code,
translations were made), so that it cannot pass with the translator doing nothing.

The packages are pinned sdists that the matrix installs for each test venv
(``framehook_dev.sot_suites.prepare_for_tests``, cached under the build dir); run outside the
matrix, or where they do not install, the tests skip with the reason.
"""

from __future__ import annotations

import concurrent.futures
import os
import sys
from pathlib import Path

import pytest

sot_suites = pytest.importorskip("framehook_dev.sot_suites")
from framehook_dev import matrix  # noqa: E402 - after the skip above

PACKAGES = [package for package in sot_suites.load_manifest()[0] if package.slice]
# The slice must run translated: at least this share of its tests made translations.
MIN_TRANSLATED_SHARE = 0.9
# A slice test taking longer than this is a hang (the whole slice takes seconds).
SLICE_TIMEOUT_S = 60.0


def installed_site() -> Path:
    if "FRAMEHOOK_SUITES_DIR" not in os.environ:
        pytest.skip("run through framehook_dev.matrix, which installs the third-party suites")
    name = os.environ.get("FRAMEHOOK_EXPECT_PYTHON", "")
    site = Path(os.environ["FRAMEHOOK_SUITES_DIR"]) / "site" / name / "packages"
    error = site.with_suffix(".error")
    if error.exists():
        pytest.skip(f"the third-party suites do not install on {name}: {error.read_text().splitlines()[0]}")
    if not (site / ".framehook-installed").exists():
        pytest.skip(f"the third-party suites are not installed for {name!r} ({site})")
    return site


@pytest.mark.parametrize("package", PACKAGES, ids=[package.name for package in PACKAGES])
def test_slice_gives_eager_outcomes_translated(package, tmp_path):
    site = installed_site()
    if not package.tree.is_dir():
        pytest.skip(f"{package.tree} is not unpacked (the matrix unpacks it)")
    target = matrix.Target(os.environ.get("FRAMEHOOK_EXPECT_PYTHON", "here"), sys.executable, Path(sys.prefix))
    # The two children side by side: each is mostly interpreter and pytest start-up.
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        futures = {mode: pool.submit(sot_suites.run_suite, target, package, mode, site, tmp_path,
                                     timeout=SLICE_TIMEOUT_S, tests=package.slice) for mode in ("eager", "sot")}
        runs = {mode: future.result() for mode, future in futures.items()}
    compared = sot_suites.compare(runs["eager"], runs["sot"])
    summary = compared["summary"]
    assert not summary["problems"], summary["problems"]
    assert summary["tests"] >= len(package.slice), f"the slice ran only {sorted(compared['tests'])}"
    assert all(entry["eager"] != "not run" for entry in compared["tests"].values()), compared["tests"]

    divergent = {test: (entry["eager"], entry["sot"], entry.get("sot_error", ""))
                 for test, entry in compared["tests"].items() if entry["eager"] != entry["sot"]}
    unexplained = {test: why for test, why in divergent.items() if not _known(package, test)}
    assert not unexplained, f"{len(unexplained)} of {summary['tests']} tests diverge translated: {unexplained}"

    # Not vacuous: nearly every test ran generated code (translations of its own, or of the
    # package's code that earlier tests made: shared), and tests' own frames ran as
    # generated code (a test body that loops over a break runs its own frame eagerly).
    stats = [entry.get("stats", {}) for entry in compared["tests"].values()]
    translated = sum(1 for entry in stats if entry.get("translations", 0) + entry.get("cache_hits", 0) > 0)
    assert translated >= MIN_TRANSLATED_SHARE * len(stats), f"{translated} of {len(stats)} tests ran generated code"
    assert any(entry.get("own_frame") == "translated" for entry in stats), "no test's own frame ran translated"


def _known(package, test: str) -> bool:
    """Whether ``test`` is a known divergence of the translator (the manifest's
    ``known_divergent``, by test id or by the id's prefix before a parameter)."""
    return any(test == known or test.startswith(known + "[") for known in package.known_divergent)
