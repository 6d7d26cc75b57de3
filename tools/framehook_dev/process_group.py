"""Running a test process in a process group of its own, with a time limit.

Shared by the suite runners (``torture``, ``paddle_sot_suite``). Standard library only.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple, Optional


class Finished(NamedTuple):
    returncode: int
    timed_out: bool
    seconds: float
    pid: int  # also the process group's id


def run_in_own_group(argv: Sequence[str], *, cwd: Path, env: Optional[dict], log_path: Path,
                     timeout: float) -> Finished:
    """Runs ``argv`` with stdin closed and stdout/stderr to ``log_path``, in a new session;
    after ``timeout`` seconds the whole process group is killed."""
    start = time.monotonic()
    timed_out = False
    with open(log_path, "wb") as out:
        proc = subprocess.Popen(list(argv), cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)
        try:
            returncode = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            kill_group(proc.pid)
            returncode = proc.wait()
    return Finished(returncode, timed_out, time.monotonic() - start, proc.pid)


def kill_group(pgid: int) -> None:
    with contextlib.suppress(OSError):
        os.killpg(pgid, signal.SIGKILL)
