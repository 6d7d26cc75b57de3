"""Instructions of chosen parts of a run, counted by callgrind on the thread that runs them.

A benchmark runs its worker with ``run_worker``: under callgrind, collection off, the worker
given ``--worker LIBRARY --worker-out FILE``; it turns collection on around what it measures
with ``Callgrind(LIBRARY).counting(label)`` (callgrind's client requests, from Python through
ctypes) and writes what is not counted to FILE as JSON. Collection is per thread, so other
threads (a library's spinning workers) are not counted. Each counted part is dumped under its
label; ``run_worker`` returns the instructions per label and the worker's JSON.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

# A client request is an instruction sequence callgrind recognises: compiled at run time with
# valgrind's header.
CLIENT_SOURCE = r"""
#include <valgrind/callgrind.h>
void bench_toggle_collect(void) { CALLGRIND_TOGGLE_COLLECT; }
void bench_dump_stats(const char *label) { CALLGRIND_DUMP_STATS_AT(label); }
"""
DUMP_LABEL = "desc: Trigger: Client Request: "


class Callgrind:
    """The worker's side: counting what runs between two points on the calling thread."""

    def __init__(self, library: Path) -> None:
        self.client = ctypes.CDLL(str(library))
        self.client.bench_dump_stats.argtypes = [ctypes.c_char_p]

    @contextlib.contextmanager
    def counting(self, label: str) -> Iterator[None]:
        """Counts what runs inside on this thread; dumped under ``label`` (then zeroed)."""
        self.client.bench_toggle_collect()
        try:
            yield
        finally:
            self.client.bench_toggle_collect()
            self.client.bench_dump_stats(label.encode())


def run_worker(argv: Sequence[str]) -> tuple[dict[str, int], Any]:
    """Runs ``argv`` under callgrind as described above: the instructions of each dump, by its
    label, and the JSON the worker wrote."""
    with tempfile.TemporaryDirectory(prefix="callgrind-") as temporary:
        directory = Path(temporary)
        source, library, out = directory / "client.c", directory / "client.so", directory / "worker.json"
        source.write_text(CLIENT_SOURCE)
        subprocess.run(["cc", "-shared", "-fPIC", "-O1", "-o", str(library), str(source)], check=True)
        subprocess.run(["valgrind", "--tool=callgrind", "--collect-atstart=no",
                        f"--callgrind-out-file={directory / 'callgrind.out'}", *argv,
                        "--worker", str(library), "--worker-out", str(out)], check=True)
        return counted_dumps(directory), json.loads(out.read_text())


def counted_dumps(directory: Path) -> dict[str, int]:
    """The instructions of each dump callgrind wrote in ``directory``, by its label."""
    counts = {}
    for dump in directory.glob("callgrind.out*"):
        label = total = None
        for line in dump.read_text(errors="replace").splitlines():
            if line.startswith(DUMP_LABEL):
                label = line[len(DUMP_LABEL):].strip()
            elif line.startswith(("summary: ", "totals: ")):
                total = int(line.split()[1])
        if label is not None and total is not None:
            counts[label] = total
    return counts
