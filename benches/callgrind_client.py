"""Instructions of chosen parts of a run, counted by callgrind on the thread that runs them.

A benchmark runs its worker under ``counted_run``: callgrind starts with collection off, and
the worker turns it on around what it measures with ``Callgrind.counting(label)`` (callgrind's
client requests, from Python through ctypes). Collection is per thread, so other threads (a
library's spinning workers) are not counted. Each counted part is dumped under its label;
``counted_run`` returns the instructions per label.
"""

from __future__ import annotations

import contextlib
import ctypes
import subprocess
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Optional

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


def compile_client(directory: Path) -> Path:
    """The client library, built in ``directory``; its path is handed to the worker."""
    source, library = directory / "client.c", directory / "client.so"
    source.write_text(CLIENT_SOURCE)
    subprocess.run(["cc", "-shared", "-fPIC", "-O1", "-o", str(library), str(source)], check=True)
    return library


def counted_run(argv: Sequence[str], directory: Path, env: Optional[dict[str, str]] = None) -> dict[str, int]:
    """Runs ``argv`` under callgrind, collection off until the worker counts, dumps in
    ``directory``; the instructions of each dump, by its label."""
    subprocess.run(["valgrind", "--tool=callgrind", "--collect-atstart=no",
                    f"--callgrind-out-file={directory / 'callgrind.out'}", *argv], check=True, env=env)
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
