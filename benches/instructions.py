"""Instructions per call added by each configuration, counted by callgrind (exact and
repeatable, unlike timings on a shared machine).

    python benches/instructions.py [--workload fib] [--configs a,b,c,...]

A configuration "sub-X" (3.12+) is configuration X with the workload run in an
isolated sub-interpreter with its own GIL, created by the worker.

Runs valgrind --tool=callgrind on this interpreter twice per configuration, with
a few and with more iterations of the workload; the difference divided by the
extra frames is the instructions per call, start-up excluded.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

# Run as a script: its directory is sys.path[0], so its neighbours import.
import overhead
import workloads

FEW, MORE = 1, 3


def run_in_isolated_interpreter(source):
    """Runs `source` in a new isolated sub-interpreter (own GIL), then destroys it."""
    try:
        from concurrent import interpreters  # 3.14+
    except ImportError:
        pass
    else:
        interpreter = interpreters.create()
        try:
            interpreter.exec(source)
        finally:
            interpreter.close()
        return
    try:
        import _interpreters  # 3.13
    except ImportError:
        import _xxsubinterpreters as legacy  # 3.12

        interpreter = legacy.create(isolated=True)
        try:
            legacy.run_string(interpreter, source)
        finally:
            legacy.destroy(interpreter)
        return
    interpreter = _interpreters.create("isolated")
    try:
        failure = _interpreters.exec(interpreter, source)
        if failure is not None:
            raise RuntimeError(failure.errdisplay)
    finally:
        _interpreters.destroy(interpreter)


def worker(config, workload, iterations):
    if config.startswith("sub-"):
        here = os.path.dirname(os.path.abspath(__file__))
        run_in_isolated_interpreter(
            f"import sys; sys.path.insert(0, {here!r}); import instructions; "
            f"instructions.worker({config[4:]!r}, {workload!r}, {iterations})"
        )
        return
    run = workloads.WORKLOADS[workload]
    run()  # first-call work (caches, answers) happens in both counts alike
    if config.startswith("sot-"):
        overhead.set_up_sot(config, import_paddle=False)  # paddle's import is slow under valgrind
    else:
        overhead.set_up(config)
    for _ in range(iterations):
        run()


def callgrind_instructions(argv, env=()):
    """The instructions callgrind counts over this interpreter running ``argv`` (every
    thread), with ``env`` (``NAME=value`` settings) beside a fixed hash seed."""
    with tempfile.TemporaryDirectory() as directory:
        out = os.path.join(directory, "callgrind.out")
        subprocess.run(["env", "PYTHONHASHSEED=0", *env, "valgrind", "--tool=callgrind",
                        f"--callgrind-out-file={out}", sys.executable, *argv],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        with open(out) as profile:
            return int(re.search(r"^summary: (\d+)", profile.read(), re.M).group(1))


def instructions(config, workload, iterations):
    return callgrind_instructions([os.path.abspath(__file__), "--worker", config, workload, str(iterations)])


def frames_per_iteration(workload):
    from framehook import _native

    run = workloads.WORKLOADS[workload]
    run()
    _native._foreign_install()
    before = _native._foreign_calls()
    run()
    calls = _native._foreign_calls() - before
    _native._foreign_uninstall()
    return calls


def main():
    if sys.argv[1:2] == ["--worker"]:
        worker(sys.argv[2], sys.argv[3], int(sys.argv[4]))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", default="fib", choices=list(workloads.WORKLOADS))
    parser.add_argument("--configs", default="a,b,c,d,e,f,g,h,i")
    parser.add_argument("--json", help="also write {config: instructions per call} to this file")
    args = parser.parse_args()
    frames = frames_per_iteration(args.workload) * (MORE - FEW)
    per_call = {}
    for config in args.configs.split(","):
        more, few = instructions(config, args.workload, MORE), instructions(config, args.workload, FEW)
        per_call[config] = (more - few) / frames
        base = per_call.get("a", 0.0)
        floor = per_call.get("b")
        extra = f"  {per_call[config] - floor:+8.1f} over (b)" if floor is not None else ""
        print(f"{config:16} {per_call[config]:9.1f} instructions per call  "
              f"{per_call[config] - base:+8.1f} over (a){extra}", flush=True)
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"workload": args.workload, "instructions_per_call": per_call}, out, indent=1)


if __name__ == "__main__":
    main()
