"""The training run of framehook's profile-guided build (``matrix.profile_guided_wheel``):
run in the target's venv with the instrumented build installed, it exercises what users
run, so that the optimiser lays out and inlines for those paths.

    python -m framehook_dev.pgo_training /path/to/checkout

What it runs, in this order, all deterministic:

- the differential fuzzer's generated programs (``sot_fuzz.fuzz``, seed ``SEED``,
  ``FUZZ_CASES`` cases): translation, guards, breaks and resume functions over every
  statement template, on numpy arrays and Python values;
- the project's model workloads (benches/sot_models.py: a model's forward over its blocks,
  an Adam step, attention, a dense stack), each translated after ``sot.reset()`` and called
  hot;
- the SOT corpus (tests/sot_corpus), each case translated and called twice;
- a Python frame hook and an observer over plain calls (the hook API's own paths).

Never a benchmark's measured code: scikit-learn, the held-out workloads and the outside
suites stay out, so their tables measure code the profile did not see.
"""

from __future__ import annotations

import contextlib
import io
import sys
import time
import warnings
from pathlib import Path

SEED = 1000
FUZZ_CASES = 3000
MODEL_ROUNDS = 3
HOT_CALLS = 20
HOOKED_ROUNDS = 10  # of fib(15): 1,973 frames each


def fuzzer_programs() -> str:
    from . import sot_fuzz

    ran = sot_fuzz.fuzz(seed=SEED, cases=FUZZ_CASES)
    return f"{ran['cases']} generated programs"


def model_workloads() -> str:
    import numpy as np

    import framehook.sot as sot
    import numpy_functional  # benches/
    import sot_models  # benches/

    names = sorted(sot_models.workloads(np.asarray, numpy_functional))
    for _ in range(MODEL_ROUNDS):
        for name in names:
            workload = sot_models.workloads(np.asarray, numpy_functional)[name]
            sot.reset()
            fast = sot.translate(workload.function, cost_model=False)
            for _ in range(HOT_CALLS):
                fast(*workload.args)
    return f"{len(names)} model workloads x {MODEL_ROUNDS}"


def corpus() -> str:
    import framehook.sot as sot
    from sot_corpus import collect  # tests/

    cases, _ = collect()
    ran = 0
    for entry in cases:
        if entry.skip_reason:
            continue
        sot.reset()
        fast = sot.translate(entry.fn)
        for _ in range(2):
            # A case's own exception is its outcome here; its output is not wanted.
            with contextlib.suppress(Exception), contextlib.redirect_stdout(io.StringIO()):
                fast(*entry.make_args(), **entry.make_kwargs())
        ran += 1
    sot.reset()
    return f"{ran} corpus cases"


def hook_api() -> str:
    import framehook

    def fib(n: int) -> int:
        return n if n < 2 else fib(n - 1) + fib(n - 2)

    seen = [0]

    def hook(frame: object) -> None:
        seen[0] += 1

    def observer(*_: object) -> None:
        seen[0] += 1

    for registered in (framehook.add_frame_hook(hook, name="pgo-training"),
                       framehook.add_frame_hook(None, name="pgo-observer", observer=observer)):
        try:
            for _ in range(HOOKED_ROUNDS):
                fib(15)
        finally:
            framehook.remove_frame_hook(registered)
    return f"{seen[0]} hooked frames"


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m framehook_dev.pgo_training CHECKOUT", file=sys.stderr)
        return 2
    checkout = Path(argv[0])
    sys.path[:0] = [str(checkout / "benches"), str(checkout / "tests")]
    began = time.monotonic()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numpy's RuntimeWarnings of generated programs
        for part in (fuzzer_programs, model_workloads, corpus, hook_api):
            print(f"pgo training: {part()} ({time.monotonic() - began:.1f} s)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
