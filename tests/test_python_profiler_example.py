"""examples/python_profiler.py: a profiler on framehook's observers, run as a
command and used through its API. Only call counts are checked, never timings."""

import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import framehook
import python_profiler  # examples/python_profiler.py: examples/ is on pytest's pythonpath (pyproject.toml)
from conftest import HOOKS_GENERATORS, replace_code

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "python_profiler.py"

SCRIPT = """\
import sys


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def countdown(n):
    while n:
        yield n
        n -= 1


def main(n):
    print(fib(n), sum(countdown(n)), sys.argv[1:])


main(int(sys.argv[1]))
"""

ROW = re.compile(r"^\s*(?P<calls>\d+)\s+[\d.]+\s+[\d.]+\s+(?P<name>\S+) \((?P<file>[^:]+):\d+\)(?P<marker>.*)$")


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def numbers(n):
    for i in range(n):
        yield i


def doubled_numbers(n):
    for i in range(n):
        yield 2 * i


def total(n):
    return sum(numbers(n))


def slow_double(x):
    result = x + x
    return result


def fast_double(x):
    return 2 * x


def doubles(n):
    result = 0
    for i in range(n):
        result += slow_double(i)
    return result


def test_command_line_prints_exact_call_counts(tmp_path):
    script = tmp_path / "work.py"
    script.write_text(SCRIPT)
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), str(script), "10"], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "55 55 ['10']"
    assert lines[1].split() == ["calls", "incl", "s", "excl", "s", "function"]
    rows = [ROW.match(line) for line in lines[2:]]
    assert all(rows), lines
    assert {row["name"]: int(row["calls"]) for row in rows} == {"<module>": 1, "main": 1, "fib": 177, "countdown": 1}
    assert {row["file"] for row in rows} == {"work.py"}


def test_command_line_without_a_script_profiles_its_workload():
    done = subprocess.run([sys.executable, str(EXAMPLE)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("workload: (610, 332833500)\n")
    assert len([line for line in done.stdout.splitlines() if ROW.match(line)]) == 15


def test_recursion_counts_every_call_and_its_time_once():
    profiler = python_profiler.Profiler()
    started = time.perf_counter()
    assert profiler.run(fib, 12) == 144
    elapsed = time.perf_counter() - started
    stats = profiler.stats()
    assert list(stats) == [fib.__code__]
    row = stats[fib.__code__]
    assert row.calls == 465 and row.replaced_by is None
    # Inclusive time is the outermost frame's only; fib's own time is all of it.
    assert row.inclusive <= elapsed
    assert row.exclusive == pytest.approx(row.inclusive)


def test_function_replaced_by_another_hook_is_marked(capsys):
    profiler = python_profiler.Profiler()
    with framehook.frame_hook(replace_code(slow_double.__code__, fast_double.__code__), cache=True, name="faster"):
        assert profiler.run(doubles, 10) == 90
    stats = profiler.stats()
    assert set(stats) == {doubles.__code__, slow_double.__code__}
    assert stats[doubles.__code__].calls == 1 and stats[doubles.__code__].replaced_by is None
    assert stats[slow_double.__code__].calls == 10
    assert stats[slow_double.__code__].replaced_by is fast_double.__code__
    profiler.print_stats()
    (line,) = [line for line in capsys.readouterr().out.splitlines() if "slow_double" in line]
    assert ROW.match(line)["marker"] == " [replaced by fast_double]"


def test_generator_counts_one_call_and_its_resumes():
    profiler = python_profiler.Profiler()
    assert profiler.run(total, 5) == 10
    stats = profiler.stats()
    assert set(stats) == {total.__code__, numbers.__code__}
    assert stats[numbers.__code__].calls == 1


@pytest.mark.skipif(not HOOKS_GENERATORS, reason="generator functions are hooked from 3.11")
def test_replaced_generator_resumes_count_for_its_original():
    profiler = python_profiler.Profiler()
    with framehook.frame_hook(replace_code(numbers.__code__, doubled_numbers.__code__), cache=True):
        assert profiler.run(total, 5) == 20
    stats = profiler.stats()
    # Resume and yield events name only the replacement; the profiler maps it back.
    assert set(stats) == {total.__code__, numbers.__code__}
    assert stats[numbers.__code__].calls == 1
    assert stats[numbers.__code__].replaced_by is doubled_numbers.__code__


def test_frame_already_running_when_profiling_starts():
    generator = numbers(3)
    assert next(generator) == 0
    profiler = python_profiler.Profiler()
    assert profiler.run(list, generator) == [1, 2]  # list() is builtin: only the generator runs Python
    stats = profiler.stats()
    # Its time is measured from its resumes; its call happened before.
    assert list(stats) == [numbers.__code__]
    assert stats[numbers.__code__].calls == 0


def test_threads_keep_their_own_stacks():
    def work():
        threads = [threading.Thread(target=fib, args=(10,)) for _ in range(3)]
        for thread in threads:
            thread.start()
        fib(10)
        for thread in threads:
            thread.join()

    profiler = python_profiler.Profiler()
    profiler.run(work)
    stats = profiler.stats()
    assert stats[fib.__code__].calls == 4 * 177
    assert stats[work.__code__].calls == 1
