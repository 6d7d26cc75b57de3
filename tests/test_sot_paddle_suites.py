"""A slice of Paddle's own test suites through ``paddle.jit.to_static`` on framehook's translator.

The full runs are a tool (``python -m framehook_dev.paddle_sot_suite --suite sot|dygraph_to_static``,
docs/reliability.md, "Paddle's test/sot suite" and "Paddle's dygraph_to_static suite"); this runs
a few files of each, every file in a process of its own as Paddle's CI runs it: once on Paddle's
own translator (``native``) and once through ``framehook.sot.paddle.install(translator="framehook")``
(``translator``), and asserts the judge of the full runs: every test that passes natively passes
translated; and over the slice, framehook's translator breaks the graph no more often than Paddle's
(the tool reports each test with more). It also asserts that framehook's translator did the work:
the translated runs called what ``symbolic_translate`` gave (timed by the runner), and framehook's
switch was installed from start to end.

Paddle's files are not in this repository: they are fetched into the cache by their manifests
(``tools/framehook_dev/paddle_*_manifest.json``); where they are absent, or paddle is not
installed (the matrix installs it on 3.10 and 3.13), the tests skip with the reason.
"""

from __future__ import annotations

import json
import sys

import pytest

pytest.importorskip("paddle", reason="paddlepaddle 3.3.1 wheels are installed on 3.10 and 3.13 in the matrix")
suite_tool = pytest.importorskip("framehook_dev.paddle_sot_suite")

# Per suite, the files of the slice: small models (an LSTM, a PTB language model) and what
# users lean on (a PyLayer recomputing a to_static function, data-dependent control flow,
# layers' attributes set in forward, loops, side effects), a few minutes in all.
SLICE = {
    "sot": ["test_builtin_dispatch", "test_side_effects", "test_12_for_loop"],
    "dygraph_to_static": ["test_lstm", "test_ptb_lm", "test_isinstance", "test_ifelse", "test_jit_recompute"],
}
# A file's timeout: a hang, as no file of the slice takes a minute on a debug build.
FILE_TIMEOUT_S = 240


@pytest.mark.parametrize("suite", sorted(SLICE))
def test_slice_passes_translated_what_passes_natively(suite, tmp_path, capsys):
    tests_dir = suite_tool.SUITES[suite].tests
    missing = [name for name in SLICE[suite] if not (tests_dir / f"{name}.py").is_file()]
    if missing:
        pytest.skip(f"Paddle's {suite} files {missing} are not in {tests_dir} (fetched by their manifest)")
    report = tmp_path / "report.json"
    arguments = ["--suite", suite, "--python", sys.executable, "--mode", "native", "--mode", "translator",
                 "--timeout", str(FILE_TIMEOUT_S), "--report", str(report), "--logs", str(tmp_path / "logs")]
    for name in SLICE[suite]:
        arguments += ["-k", f"{name}.py"]
    exit_code = suite_tool.main(arguments)
    output = capsys.readouterr().out
    assert exit_code in (0, 1), output[-6000:]  # 1: a test differs (below)

    results = json.loads(report.read_text())
    (label,) = results["runs"]
    runs = results["runs"][label]
    differing = [d for ds in results["differing"][label]["translator"].values() for d in ds]
    failing = [f"{d['test']}: {d['translator']}: {d.get('translator_message')}" for d in differing
               if "native_breaks" not in d]
    assert not failing, "\n".join(failing)
    costs = results["summary"][label]["costs"]
    breaks = {side: sum(c[side]["breaks"] for c in costs.values() if c["tests"]) for side in ("native", "translator")}
    assert breaks["translator"] <= breaks["native"], (breaks, [d["test"] for d in differing])
    assert sorted(runs["translator"]) == sorted(f"{name}.py" for name in SLICE[suite])
    for name, run in runs["translator"].items():
        assert run["framehook_installed"], f"framehook's translator was not installed throughout {name}"
        passed = [t for t in run["tests"].values() if t["outcome"] in suite_tool.PASSING]
        assert passed, f"no test of {name} passed translated"
        # Not vacuous: the translated tests ran what framehook's symbolic_translate made.
        assert sum(t.get("calls", 0) for t in passed) > 0, f"{name}: no translated call"
