"""Instructions per call of SOT's workloads, eager and translated, counted by callgrind:
exact and repeatable where timings on a shared machine are not.

    python benches/sot_instructions.py --name 3.13 --json out.json

Driven by ``python -m framehook_dev.sot_workloads_bench --instructions``, which runs it on
each interpreter with a release build. For each workload of benches/sot_workloads.py and the
2-op hot call, each way of calling it (eager, translated) runs under valgrind
--tool=callgrind twice, with FEW and with MORE calls after the same warm-up (the first calls:
translation, recompilations): the difference over the extra calls is the instructions per
call. Before counting, each translation is checked as the timed run checks it (results equal
to eager, graphs, no fallback). ``--json`` gets the counts and the translated/eager ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
from typing import Any, Callable

# Run as a script: its directory is sys.path[0], so its neighbours import.
import sot_workloads
from instructions import callgrind_instructions

FEW, MORE = 10, 60
WARMUP = 5  # the calls before either count: translation and the recompilations of first calls
CALLS: dict[str, dict[str, Callable[..., Callable[[], Any]]]] = {
    **{name: {"eager": sot_workloads.eager_call, "translated": sot_workloads.translated_call}
       for name in sot_workloads.WORKLOADS},
    "two_ops": {"eager": lambda _: sot_workloads.two_ops_eager(),
                "translated": lambda _: sot_workloads.two_ops_translated()},
}


def worker(name: str, kind: str, calls: int) -> None:
    call = CALLS[name][kind](name)
    for _ in range(WARMUP + calls):
        call()


def instructions(name: str, kind: str, calls: int) -> int:
    # One BLAS thread: a pool's threads spin for a varying number of instructions (the
    # workloads' small matrices run on one thread anyway).
    return callgrind_instructions([os.path.abspath(__file__), "--worker", name, kind, str(calls)],
                                  env=("OPENBLAS_NUM_THREADS=1", "OMP_NUM_THREADS=1"))


def main() -> int:
    if sys.argv[1:2] == ["--worker"]:
        worker(sys.argv[2], sys.argv[3], int(sys.argv[4]))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--name", default=platform.python_version(), help="the interpreter's name")
    parser.add_argument("--json", help="write the counts here, as JSON")
    args = parser.parse_args()
    for name in sot_workloads.WORKLOADS:
        sot_workloads.check_translation(name)
    counts: dict[str, dict[str, float]] = {}
    for name in CALLS:
        per_call = {kind: (instructions(name, kind, MORE) - instructions(name, kind, FEW)) / (MORE - FEW)
                    for kind in ("eager", "translated")}
        per_call["ratio"] = per_call["translated"] / per_call["eager"]
        counts[name] = per_call
        print(f"{name:10} eager {per_call['eager']:10.0f}  translated {per_call['translated']:10.0f}  "
              f"instructions per call (translated/eager {per_call['ratio']:.3f})", flush=True)
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"name": args.name, "python": platform.python_version(),
                       "numpy": sot_workloads.np.__version__, "calls": [FEW, MORE], "warmup": WARMUP,
                       "instructions_per_call": counts}, out, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
