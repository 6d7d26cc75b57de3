"""hookprof's overhead on call-heavy code, beside cProfile's, in one pyperf run.

    python examples/profiler/bench_overhead.py [pyperf options, e.g. --fast or -o out.json]

Each workload runs bare, under hookprof and under cProfile, and with only a
no-op framehook hook installed (framehook's own share of hookprof's cost: its
PEP 523 eval function and hook dispatch). Every variant is a benchmark of the
same pyperf run, and the parent process prints each variant's median time as
a ratio of the bare run's (medians: a shared machine's noise moves means more).
"""

import cProfile

import pyperf

import framehook
import hookprof


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def tiny(x):
    return x + 1


def fib_20():
    fib(20)  # 21891 calls, recursion up to 20 deep


def tiny_calls():
    total = 0
    for _i in range(20_000):  # 20000 calls of a one-line function from one frame
        total = tiny(total)


class Bare:
    def start(self):
        pass

    def stop(self):
        pass


class CProfile:
    def __init__(self):
        self.profile = cProfile.Profile()

    def start(self):
        self.profile.enable()

    def stop(self):
        self.profile.disable()


class NoopHook:
    """framehook with one hook that declines every code, once (cache=True): no observer."""

    def start(self):
        self.handle = framehook.add_frame_hook(lambda frame: None, name="noop", cache=True)

    def stop(self):
        framehook.remove_frame_hook(self.handle)


PROFILERS = {"bare": Bare, "hookprof": hookprof.Profiler, "cProfile": CProfile, "framehook no-op hook": NoopHook}
WORKLOADS = {"fib(20)": fib_20, "tiny calls": tiny_calls}


def timed(workload, make_profiler):
    def run(loops):
        profiler = make_profiler()
        start = pyperf.perf_counter()
        profiler.start()
        for _ in range(loops):
            workload()
        profiler.stop()
        return pyperf.perf_counter() - start

    return run


def main():
    runner = pyperf.Runner()
    runner.metadata["description"] = "hookprof and cProfile overhead on call-heavy workloads"
    results = {}
    for workload_name, workload in WORKLOADS.items():
        for profiler_name, make_profiler in PROFILERS.items():
            name = f"{workload_name} {profiler_name}"
            results[name] = runner.bench_time_func(name, timed(workload, make_profiler))
    if runner.args.worker or any(result is None for result in results.values()):
        return  # a worker process, or a partial run (--help, ...)
    print()
    for workload_name in WORKLOADS:
        bare = results[f"{workload_name} bare"].median()
        ratios = ", ".join(f"{name} {results[f'{workload_name} {name}'].median() / bare:.2f}x"
                           for name in PROFILERS if name != "bare")
        print(f"{workload_name}: bare {bare * 1e3:.2f} ms; {ratios}")


if __name__ == "__main__":
    main()
