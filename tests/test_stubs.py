"""The hand-written .pyi stubs agree with the built module (mypy.stubtest)."""

import subprocess
import sys

import pytest

mypy = pytest.importorskip("mypy", reason="mypy is not installable for this interpreter (see tests/requirements-typing.txt)")


def test_stubs_match_the_runtime(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "mypy.stubtest", "framehook", "--mypy-config-file", str(tmp_path / "none.ini")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
