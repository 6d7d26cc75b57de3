"""The main job, examples/sot_demo.py: SOT translates the model as one hook among others, and
the other hooks and the profiler see its code run."""

import re
import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "sot_demo.py"
# hookprof names code by co_qualname where the interpreter has one (3.11+).
TRANSLATED_ROW = re.compile(r"^\s+(\d+) .*sot_demo\.py:\d+\((Model\.)?forward \[replaces (Model\.)?forward\]\)$")
GRAPH_ROW = re.compile(r"^\s+(\d+) .*sot_demo\.py:\d+\(__sot_graph\)$")
NODE_ROW = re.compile(r"^\s+(\d+) .*sot_demo\.py:\d+\(__sot_graph_node\)$")


def test_sot_demo():
    done = subprocess.run([sys.executable, str(EXAMPLE)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    output = done.stdout.splitlines()
    lines = {line.split(":", 1)[0].strip(): line.split(":", 1)[1].strip() for line in output
             if ":" in line and not line.startswith(" ")}
    assert lines["translated logits"] == lines["eager logits"]
    assert lines["equal to eager"] == "True (3 calls)"
    assert lines["hooks, in order"] == "['sot.translate', 'watch', 'hookprof']"
    stats = dict(field.split("=") for field in lines["SOT's stats"].split())
    # One graph, the finiteness check assumed inside it; the calls after the first hit the cache.
    assert stats == {"translations": "1", "graphs": "1", "ops": "16", "cache_hits": "2", "fallbacks": "0"}
    assert "SOT's graph break" not in lines and lines["SOT's graph breaks"].startswith("none")
    assert "forward ran SOT's code (1 code object" in lines["watch saw"]
    # A diverging input fails the assumption: the forward runs again untranslated and raises.
    diverged = "FloatingPointError: the model diverged"
    assert lines["a diverging input"].startswith(f"{diverged} / {diverged} "), lines["a diverging input"]
    # The profiler saw SOT's code for forward run on each of the 3 calls, and its graph: the
    # first run's code on the first two (the second lowers the graph, then runs it), the
    # lowered code on the last two; the first run called its nodes one by one (the 16
    # operations and the finiteness check's assumption).
    assert [int(m.group(1)) for m in map(TRANSLATED_ROW.match, output) if m] == [3], done.stdout
    assert [int(m.group(1)) for m in map(GRAPH_ROW.match, output) if m] == [2, 2], done.stdout
    assert sum(int(m.group(1)) for m in map(NODE_ROW.match, output) if m) == 17, done.stdout
    assert "sot.explain(Model.forward): ran" in output
    assert "  translations=1 graphs=1 ops=16 breaks=0 fallbacks=0" in output
    assert re.match(r"eager [\d.]+ µs, translated [\d.]+ µs: [\d.]+x eager's speed$", lines["time per call"])
    # Judged after its trials (which way wins is the machine's): 5 original trials, and
    # every call after a choice of the original.
    choice = re.match(r"(translated|original) runs \((\d+) of 20 calls ran the original\)$", lines["cost model"])
    assert choice, lines["cost model"]
    assert int(choice.group(2)) == (5 if choice.group(1) == "translated" else 5 + 20 - 12)
