"""The README's main job: SOT on a small numpy model among other hooks, in a venv of this python.

Installs numpy, framehook and the profiler example (which observes the hooks) into a venv
of the running interpreter and runs examples/sot_demo.py with it.

    python -m framehook_dev.demo      (make demo)

The venv is cached outside the repo (``$FRAMEHOOK_CACHE/venvs/demo-<version>``).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import venv
from collections.abc import Sequence
from typing import Optional

from . import checkout, provision

REPO = checkout.find()


def main(argv: Optional[Sequence[str]] = None) -> int:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args(argv)
    home = provision.CACHE / "venvs" / ("demo-{}.{}".format(*sys.version_info[:2]))
    python = home / "bin" / "python"
    if not python.exists():
        print(f"[demo] creating {home}", file=sys.stderr, flush=True)
        venv.EnvBuilder(with_pip=True, clear=True).create(home)
    # numpy from a wheel only, as the test venvs have it: never a ten-minute source build.
    packages = ["--only-binary", "numpy", "numpy", str(REPO), str(REPO / "examples" / "profiler")]
    print(f"[demo] pip install {' '.join(packages)}", file=sys.stderr, flush=True)
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", *packages], check=True)
    return subprocess.run([str(python), str(REPO / "examples" / "sot_demo.py")], cwd=REPO).returncode


if __name__ == "__main__":
    sys.exit(main())
