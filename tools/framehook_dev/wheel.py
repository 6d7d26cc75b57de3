"""framehook's optimised wheel for one interpreter: a release build with profile-guided
optimisation (``matrix.profile_guided_wheel``: an instrumented build trained on the
fuzzer's programs, the SOT corpus and the model workloads, then built again with that
profile), copied into ``dist/``. The scikit-learn benchmark measures this build.

    make wheel                                          # the machine's default python3
    python -m framehook_dev.wheel --python /usr/bin/python3.12 --out dist

The interpreter gets a venv of its own for the build (maturin, and numpy for the training),
cached with the matrix's venvs; rustup's ``llvm-tools`` component is added on first need.
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Optional

from . import bench, matrix

VENVS = matrix.BUILD_DIR / "wheel-venvs"
REQUIREMENTS = ["--only-binary", ":all:", "numpy", "maturin>=1.7,<2"]


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", type=Path, default=Path(shutil.which("python3") or sys.executable),
                        help="the interpreter to build for (default: python3 on PATH)")
    parser.add_argument("--out", type=Path, default=matrix.REPO / "dist", help="where the wheel goes (default dist/)")
    args = parser.parse_args(argv)
    # The venv is the interpreter's own: its tag, and where it lives (two installs of one
    # version must not share one).
    probe = ("import os, sys, sysconfig; print(sys.implementation.cache_tag"
             " + ('t' if sysconfig.get_config_var('Py_GIL_DISABLED') else '')"
             " + ('d' if hasattr(sys, 'gettotalrefcount') else ''), os.path.realpath(sys.executable))")
    tag, executable = subprocess.run([str(args.python), "-c", probe], check=True, text=True,
                                     stdout=subprocess.PIPE).stdout.split(maxsplit=1)
    executable = executable.strip()
    where = hashlib.sha256(executable.encode()).hexdigest()[:8]
    target = bench.own_venv(f"{tag}-{where}", VENVS, "wheel", python=Path(executable))
    bench.ensure_installed(target, REQUIREMENTS, "\n".join(REQUIREMENTS).encode(), "framehook-wheel.sha256",
                           "numpy maturin")
    # framehook alone (build_and_install would build and install the example packages too).
    staging = matrix.TARGETS / target.name / "wheels"
    shutil.rmtree(staging, ignore_errors=True)
    matrix.profile_guided_wheel(target, [], staging)
    args.out.mkdir(parents=True, exist_ok=True)
    wheels = sorted(staging.glob("framehook-*.whl"))
    if len(wheels) != 1:
        raise RuntimeError(f"expected one framehook wheel, found {wheels}")
    shutil.copy2(wheels[0], args.out / wheels[0].name)
    print(args.out / wheels[0].name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
