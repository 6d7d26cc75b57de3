"""The README's main job: install framehook and the profiler example (which
observes the chain) into a venv of this python3 and run the chained-hooks
example with it.

    python3 tools/demo.py

The venv is cached outside the repo (``$FRAMEHOOK_CACHE/venvs/demo-<version>``).
"""

from __future__ import annotations

import subprocess
import sys
import venv
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import provision  # noqa: E402

REPO = Path(__file__).resolve().parent.parent


def main() -> int:
    home = provision.CACHE / "venvs" / ("demo-%d.%d" % sys.version_info[:2])
    python = home / "bin" / "python"
    if not python.exists():
        print(f"[demo] creating {home}", file=sys.stderr, flush=True)
        venv.EnvBuilder(with_pip=True, clear=True).create(home)
    packages = [str(REPO), str(REPO / "examples" / "profiler")]
    print(f"[demo] pip install {' '.join(packages)}", file=sys.stderr, flush=True)
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", *packages], check=True)
    return subprocess.run([str(python), str(REPO / "examples" / "chained_hooks.py")], cwd=REPO).returncode


if __name__ == "__main__":
    sys.exit(main())
