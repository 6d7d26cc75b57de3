"""A mutation check of SOT's own tests: run against broken translators, they must fail.

The test build (the cargo ``testing`` feature) reads ``FRAMEHOOK_SOT_MUTANT`` once
(src/sot/translator/hook.rs): ``run_original`` translates as usual, every translation-time
counter included, then runs the original code; ``eager`` never translates. Under
``run_original`` at least 95% of the corpus cases (tests/test_sot_corpus.py) must fail, and
under ``eager`` every hostile test (tests/test_sot_hostile.py): their counters come from run
time (tests/sot_runtime.py), not only from translating.

The two suites run at once, in child pytest processes, on one interpreter (3.12): about 16 s
of CPU time (the corpus 10 s, the hostile tests 6 s), 12-20 s of wall time on two cores.
"""

import os
import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(sys.version_info[:2] != (3, 12),
                                reason="the mutation check runs on 3.12 only (it takes 12-20 s)")

TESTS = Path(__file__).parent
# The share of corpus cases a translator that runs the original code must fail.
CORPUS_FAILING = 0.95


def start(test_file, mutant, report):
    """A child pytest running ``test_file`` under ``mutant``, its outcomes in ``report``."""
    return subprocess.Popen(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--tb=no",
         f"--junitxml={report}", str(TESTS / test_file)],
        cwd=TESTS.parent, env=dict(os.environ, FRAMEHOOK_SOT_MUTANT=mutant),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def outcomes(child, report):
    """``{test id: "passed" | "failed" | "xfailed" | "skipped"}`` of a finished child."""
    output, _ = child.communicate(timeout=600)
    assert report.exists(), f"the child pytest wrote no report (it crashed):\n{output[-3000:]}"
    results = {}
    for testcase in ElementTree.parse(report).getroot().iter("testcase"):
        skipped = testcase.find("skipped")
        if testcase.find("failure") is not None or testcase.find("error") is not None:
            outcome = "failed"
        elif skipped is not None:
            outcome = "xfailed" if skipped.get("type") == "pytest.xfail" else "skipped"
        else:
            outcome = "passed"
        results[testcase.get("name")] = outcome
    return results


def test_broken_translators_fail_the_corpus_and_the_hostile_tests(tmp_path):
    corpus_report, hostile_report = tmp_path / "corpus.xml", tmp_path / "hostile.xml"
    corpus = start("test_sot_corpus.py", "run_original", corpus_report)
    hostile = start("test_sot_hostile.py", "eager", hostile_report)
    corpus_outcomes, hostile_outcomes = outcomes(corpus, corpus_report), outcomes(hostile, hostile_report)

    # Corpus cases that pass with a working translator: neither skipped nor a known gap (xfail).
    cases = {name: outcome for name, outcome in corpus_outcomes.items()
             if name.startswith("test_case[") and outcome in ("passed", "failed")}
    passing = sorted(name for name, outcome in cases.items() if outcome == "passed")
    assert len(cases) >= 400, f"only {len(cases)} corpus cases ran"
    print(f"run_original: {len(cases) - len(passing)} of {len(cases)} corpus cases failed")
    assert len(passing) <= (1 - CORPUS_FAILING) * len(cases), (
        f"a translator that runs the original code passes {len(passing)} of {len(cases)} corpus cases: "
        f"{passing[:40]}")

    # Every hostile test; a strict xfail passing under eager is reported failed, as it must be.
    not_failing = sorted(name for name, outcome in hostile_outcomes.items() if outcome != "failed")
    assert len(hostile_outcomes) >= 20, f"only {len(hostile_outcomes)} hostile tests ran"
    print(f"eager: {len(hostile_outcomes) - len(not_failing)} of {len(hostile_outcomes)} hostile tests failed")
    assert not not_failing, f"a translator that runs every frame eagerly passes hostile tests: {not_failing}"
