"""The README's main job, examples/chained_hooks.py, runs and shows each hook's work."""

import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "chained_hooks.py"


def test_chained_hooks_example():
    done = subprocess.run([sys.executable, str(EXAMPLE)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = {line.split(":", 1)[0].strip(): line.split(":", 1)[1].strip() for line in done.stdout.splitlines()
             if ":" in line and not line.startswith(" ")}
    assert lines["without hooks"] == "['hello, ada', 'hello, grace']"
    assert lines["hooks, in order"] == "['translate', 'shout', 'hookprof']"
    assert lines["with three hooks"] == "['BONJOUR, ada', 'BONJOUR, grace']"
    assert lines["translate rewrote"].startswith("['greet']")  # cached: once
    assert lines["shout built on it"] == "['greet']"
    assert lines["hooks removed"] == "[]"
    assert lines["back to normal"] == "['hello, ada', 'hello, grace']"
    # The profiler reports the code that ran, as a replacement of greet, called twice.
    greet_rows = [line for line in done.stdout.splitlines() if "(greet [replaces greet])" in line]
    assert len(greet_rows) == 1 and greet_rows[0].split()[0] == "2", done.stdout
