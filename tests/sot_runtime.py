"""What a translated call ran, seen at run time rather than from SOT's translation-time
counters: the frames that started with SOT's generated code (an observer sees the code a
frame actually runs, after every hook) and the compiled graphs the generated code called
(counted by the test build's wrapper around each: ``framehook._native._sot_graph_runs``).
A translator that translates and then runs the original code shows neither.

    with RunTime() as run_time:
        ran = run_time.measure(fast, lambda: fast(x))
    ran.generated_frames, ran.graphs, ran.ops, ran.graph_runs
"""

from typing import NamedTuple

import framehook
from framehook import _native


class Ran(NamedTuple):
    """What one measured call ran."""

    # Frames that started with SOT's generated code (several per generated code where a
    # frame is called again: loops, recursion).
    generated_frames: int
    # Distinct compiled graphs that ran, and their operations (each graph's counted once).
    graphs: int
    ops: int
    # Calls of compiled graphs, all told.
    graph_runs: int

    def describe(self) -> str:
        return (f"generated_frames={self.generated_frames} graphs_run={self.graphs} ops_run={self.ops} "
                f"graph_runs={self.graph_runs}")


def graph_runs(fast) -> list:
    """Per graph compiled for ``fast``, in order: ``(runs, ops)``."""
    return _native._sot_graph_runs(fast)


class RunTime:
    """An observer counting the frames that run generated code, while entered."""

    def __init__(self):
        self.generated_frames = 0
        self.handle = None

    def _observe(self, event, code, original_code):
        # original_code is None for a generator resuming: its call counted it.
        if event == "call" and original_code is not None and code is not original_code:
            self.generated_frames += 1

    def __enter__(self):
        self.handle = framehook.add_frame_hook(None, observer=self._observe, name="sot-run-time")
        return self

    def __exit__(self, *exc):
        framehook.remove_frame_hook(self.handle)
        self.handle = None

    def measure(self, fast, call) -> Ran:
        """What ``call()`` (a call of the translated function ``fast``) ran."""
        frames, before = self.generated_frames, graph_runs(fast)
        call()
        after = graph_runs(fast)
        # Graphs compiled during the call are appended: they had run 0 times before.
        before += [(0, ops) for _, ops in after[len(before):]]
        ran = [(now - then, ops) for (then, _), (now, ops) in zip(before, after) if now > then]
        return Ran(self.generated_frames - frames, len(ran), sum(ops for _, ops in ran), sum(n for n, _ in ran))
