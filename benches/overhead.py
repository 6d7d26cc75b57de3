"""framehook's overhead per frame, one pyperf run per interpreter (driven by framehook_dev.bench).

    python benches/overhead.py [--configs a,b,...] [--workloads fib,...] [pyperf options] -o out.json
    python benches/overhead.py --count-frames      # eval-function calls per iteration, as JSON

Every benchmark is named WORKLOAD/CONFIG and runs in its own worker processes,
so "framehook not imported" (a) is really that. A configuration is set up once
per worker process, before the first timed loop, and stays for its life.
"""

import collections
import json
import os
import sys

import pyperf

# Run as a script (pyperf's workers too): its directory is sys.path[0].
import workloads

# What each configuration runs under (letters as in the results tables).
CONFIGS = {
    "a": "framehook not imported",
    "b": "floor: a bare pass-through PEP 523 function",
    "c": "framehook imported, no hooks",
    "d": "one declining native hook (C API)",
    "e": "one declining Python hook, cache=True",
    "f": "one declining Python hook, cache=False",
    "g": "three declining Python hooks, cache=True",
    "h": "identity replacement of every function (cache=True)",
    "i": "the hookprof profiler observing",
    # 3.15+: as (e), the interpreter not asked to keep specializing under the eval function.
    "j": "one declining Python hook, cache=True, specialization not kept (3.15+)",
    # Beside Paddle: every one imports paddle, so they share its process state.
    "paddle": "paddle imported, no eval frame",
    "paddle-callback": "Paddle's set_eval_frame, callback declining",
    "paddle-skip": "Paddle's set_eval_frame, workload files skipped",
    "sot-callback": "framehook.sot.set_eval_frame, callback declining",
    "sot-skip": "framehook.sot.set_eval_frame, workload files skipped",
}
CORE_CONFIGS = list("abcdefghi")
PADDLE_CONFIGS = ["paddle", "paddle-callback", "paddle-skip", "sot-callback", "sot-skip"]

# Objects a configuration keeps alive for the life of the worker.
_kept = []


def decline(frame):
    return None


def identity(frame):
    # A distinct but equivalent code object: the frame runs framehook's replacement path.
    return frame.f_code.replace()


CustomCode = collections.namedtuple("CustomCode", ["code", "disable_eval_frame"])
DECLINE = CustomCode(None, False)


def sot_callback(frame):
    return DECLINE


def set_up_sot(config, *, import_paddle=True):
    """Paddle's eval-frame functions, Paddle's own or framehook.sot's, driven alike.

    The workload's codes are marked as having a graph, so neither side gives up
    on them after ten calls: every frame takes the path being measured. Every
    configuration imports paddle (unless told not to), so all share its process state."""
    if import_paddle:
        import paddle.base.core as core
    if config == "paddle":
        return
    if config.startswith("sot-"):
        import framehook.sot as core  # noqa: F811  (the same five functions)
    core.sot_setup_codes_with_graph(workloads.all_codes())
    if config.endswith("-skip"):
        core.eval_frame_skip_file_prefix((os.path.dirname(workloads.__file__),))
    core.set_eval_frame(sot_callback)


def set_up(config):
    if config == "a":
        return
    if config in PADDLE_CONFIGS:
        set_up_sot(config)
        return
    import framehook
    from framehook import _native

    if config == "b":
        _native._bench_floor_install()
    elif config == "d":
        # A hook that only declines (the test decliner's call counter would be its own cost).
        _kept.append(_native._capi_add(b"bench-native-decliner", counting=False))
    elif config in "efgj":
        for index in range(3 if config == "g" else 1):
            _kept.append(framehook.add_frame_hook(decline, name=f"decline{index}", cache=config != "f"))
        if config == "j" and not _native._set_eval_specializing(False):
            raise SystemExit("(j) needs CPython 3.15+ (an eval function's 'allow specialization' setting)")
    elif config == "h":
        _kept.append(framehook.add_frame_hook(identity, name="identity", cache=True))
    elif config == "i":
        import hookprof

        profiler = hookprof.Profiler()
        profiler.start()
        _kept.append(profiler)


_ready = []


def timed(workload, config):
    def run(loops):
        if not _ready:
            set_up(config)
            _ready.append(config)
        iterations = range(loops)
        start = pyperf.perf_counter()
        for _ in iterations:
            workload()
        return pyperf.perf_counter() - start

    return run


def count_frames():
    """Eval-function calls per iteration of each workload, counted by framehook's
    test-only pass-through function (generator resumes count, as each one is a call)."""
    from framehook import _native

    counts = {}
    for name, workload in workloads.WORKLOADS.items():
        workload()
        _native._foreign_install()
        before = _native._foreign_calls()
        for _ in range(10):
            workload()
        counts[name] = (_native._foreign_calls() - before) / 10
        _native._foreign_uninstall()
    print(json.dumps(counts))


def add_cmdline_args(cmd, args):
    cmd.extend(["--configs", args.configs, "--workloads", args.workloads])


def main():
    if "--count-frames" in sys.argv:
        count_frames()
        return
    runner = pyperf.Runner(add_cmdline_args=add_cmdline_args)
    runner.argparser.add_argument("--configs", default=",".join(CORE_CONFIGS))
    runner.argparser.add_argument("--workloads", default=",".join(workloads.WORKLOADS))
    args = runner.parse_args()
    runner.metadata["framehook_configs"] = json.dumps({key: CONFIGS[key] for key in args.configs.split(",")})
    for workload in args.workloads.split(","):
        for config in args.configs.split(","):
            runner.bench_time_func(f"{workload}/{config}", timed(workloads.WORKLOADS[workload], config))


if __name__ == "__main__":
    main()
