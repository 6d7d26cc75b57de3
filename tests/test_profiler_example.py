"""examples/profiler: hookprof, a profiler using framehook only through its C API capsule."""

import asyncio
import io
import os
import re
import subprocess
import sys
import threading
import time
import xml.etree.ElementTree as ElementTree

import pytest

import framehook
import hookprof

# Times come from one monotonic clock, so the inequalities below hold exactly;
# only the conversion of nanoseconds to float seconds may round.
EPS = 1e-9
COLLAPSED_LINE = re.compile(r"^[^;]+(;[^;]+)* \d+$")


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def run_fib():
    return fib(10)


def leaf(x):
    return x * 2


def middle():
    return leaf(1) + leaf(2)


def outer():
    return middle() + leaf(3) + run_fib()


def numbers(n):
    for i in range(n):
        yield leaf(i)


def between():
    time.sleep(0.005)


def consume():
    total = 0
    for value in numbers(4):
        between()
        total += value
    return total


def boom():
    raise ValueError("boom")


def catcher():
    for _ in range(3):
        try:
            boom()
        except ValueError:
            pass


def shout():
    return "quiet"


def rows(profiler, function):
    """The rows of the code objects that ran for `function` (itself or a replacement)."""
    code = function.__code__
    return [row for row in profiler.stats()
            if (row.filename, row.lineno, row.name) == (code.co_filename, code.co_firstlineno,
                                                         getattr(code, "co_qualname", code.co_name))]


def row(profiler, function):
    (found,) = rows(profiler, function)
    return found


def test_exact_call_counts():
    with hookprof.Profiler() as profiler:
        assert run_fib() == 55
    fib_row = row(profiler, fib)
    assert (fib_row.ncalls, fib_row.primitive_calls) == (177, 1)
    assert fib_row.replaced is None and fib_row.name == "fib"
    assert row(profiler, run_fib).ncalls == 1


def test_inclusive_and_exclusive_times_add_up():
    with hookprof.Profiler() as profiler:
        outer()
    for stat in profiler.stats():
        assert stat.cumtime + EPS >= stat.tottime >= 0
    called = [row(profiler, middle), row(profiler, run_fib)]
    leaf_row = row(profiler, leaf)
    assert leaf_row.ncalls == 3
    outer_row = row(profiler, outer)
    # leaf's cumtime covers its calls from middle too, so only its direct call is bounded here.
    assert outer_row.cumtime + EPS >= sum(stat.cumtime for stat in called)
    assert outer_row.cumtime + EPS >= outer_row.tottime + sum(stat.cumtime for stat in called)
    assert row(profiler, middle).cumtime + EPS >= row(profiler, middle).tottime


def test_recursion_counts_once_in_cumtime():
    with hookprof.Profiler() as profiler:
        for _ in range(3):
            run_fib()
    fib_row, caller = row(profiler, fib), row(profiler, run_fib)
    assert (fib_row.ncalls, fib_row.primitive_calls) == (3 * 177, 3)
    # Counting every nested frame would make fib's cumtime several times its caller's.
    assert fib_row.cumtime <= caller.cumtime + EPS
    assert fib_row.tottime <= fib_row.cumtime + EPS


@pytest.mark.parametrize("profiler_first", [True, False])
def test_replaced_code_is_reported_as_a_replacement(profiler_first):
    original = shout.__code__
    replacement = original.replace(co_consts=tuple("LOUD" if c == "quiet" else c for c in original.co_consts))

    def loud(frame):
        return replacement if frame.original_code is original else None

    profiler = hookprof.Profiler()
    if profiler_first:
        profiler.start()
    framehook.add_frame_hook(loud, name="loud", cache=True)
    if not profiler_first:
        profiler.start()
    try:
        assert shout() == "LOUD"
        assert shout() == "LOUD"
    finally:
        profiler.stop()
    (stat,) = rows(profiler, shout)  # the original never ran, only its replacement
    assert (stat.ncalls, stat.replaced) == (2, "shout")
    assert stat.label == "shout [replaces shout]"
    table = io.StringIO()
    profiler.print_stats(file=table)
    assert "(shout [replaces shout])" in table.getvalue()
    assert any("shout [replaces shout] (" in line for line in profiler.collapsed())


def test_generator_counts_one_call_and_runs_only_between_resume_and_yield():
    with hookprof.Profiler() as profiler:
        assert consume() == 12
    generator, consumer, waiting = row(profiler, numbers), row(profiler, consume), row(profiler, between)
    assert generator.ncalls == 1
    assert row(profiler, leaf).ncalls == 4
    assert waiting.ncalls == 4
    # The consumer's time holds the generator's runs and the waits side by side:
    # had the generator's time not stopped at each yield, it would hold the waits too.
    assert consumer.cumtime + EPS >= generator.cumtime + waiting.cumtime
    assert generator.cumtime + EPS >= row(profiler, leaf).cumtime
    paths = [line.rsplit(" ", 1)[0] for line in profiler.collapsed()]
    names = [[frame.split(" (")[0] for frame in path.split(";")] for path in paths]
    assert ["consume", "numbers", "leaf"] in [n[-3:] for n in names]
    assert ["consume", "between"] in [n[-2:] for n in names]
    assert not any("numbers" in n and "between" in n for n in names)


def test_generator_resumed_after_it_started_unprofiled():
    generator = numbers(3)
    assert next(generator) == 0
    with hookprof.Profiler() as profiler:
        assert list(generator) == [2, 4]
    stat = row(profiler, numbers)
    assert stat.ncalls == 0  # its call happened before profiling
    assert stat.cumtime + EPS >= stat.tottime >= 0
    assert row(profiler, leaf).ncalls == 2


async def pause_and_double(x):
    await asyncio.sleep(0)
    return leaf(x)


async def gather_doubles():
    return [await pause_and_double(x) for x in range(3)]


def test_coroutines_count_one_call_each():
    with hookprof.Profiler() as profiler:
        assert asyncio.run(gather_doubles()) == [0, 2, 4]
    coroutine = row(profiler, pause_and_double)
    assert coroutine.ncalls == 3
    assert row(profiler, gather_doubles).ncalls == 1
    assert row(profiler, gather_doubles).cumtime + EPS >= coroutine.cumtime >= coroutine.tottime


def test_exceptions_end_frames():
    with hookprof.Profiler() as profiler:
        catcher()
    assert row(profiler, boom).ncalls == 3
    assert row(profiler, catcher).cumtime + EPS >= row(profiler, boom).cumtime

    with pytest.raises(ValueError, match="boom"):
        with hookprof.Profiler() as failing:
            boom()
    assert not failing.running
    assert row(failing, boom).ncalls == 1


def test_two_threads():
    barrier = threading.Barrier(2)

    def work():
        barrier.wait()
        for _ in range(5):
            run_fib()

    with hookprof.Profiler() as profiler:
        threads = [threading.Thread(target=work) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    fib_row = row(profiler, fib)
    assert (fib_row.ncalls, fib_row.primitive_calls) == (2 * 5 * 177, 10)
    work_row = row(profiler, work)
    assert work_row.ncalls == 2
    assert work_row.cumtime + EPS >= row(profiler, run_fib).cumtime


def test_stop_ends_running_frames_and_restart_adds_up():
    profiler = hookprof.Profiler()

    def stops_inside():
        run_fib()
        profiler.stop()

    profiler.start()
    stops_inside()
    assert not profiler.running
    run_fib()  # not recorded
    stat = row(profiler, stops_inside)
    assert stat.ncalls == 1 and stat.cumtime + EPS >= row(profiler, run_fib).cumtime
    assert row(profiler, fib).ncalls == 177
    with profiler:
        run_fib()
    assert row(profiler, fib).ncalls == 2 * 177


def test_registers_one_observer_and_leaves_none():
    profiler = hookprof.Profiler()
    with profiler:
        (handle,) = framehook.frame_hooks()
        assert handle.name == "hookprof" and handle.observes
        assert profiler.running
        profiler.start()  # already running: nothing changes
        assert len(framehook.frame_hooks()) == 1
    assert framehook.frame_hooks() == []
    profiler.start()
    framehook.clear_frame_hooks()  # removed behind its back: stop() still succeeds
    profiler.stop()
    assert not profiler.running


def test_print_stats_table():
    with hookprof.Profiler() as profiler:
        outer()
    table = io.StringIO()
    profiler.print_stats(file=table)
    lines = table.getvalue().splitlines()
    assert re.match(r"^ +\d+ function calls \(\d+ primitive calls\) in \d+\.\d{3} seconds$", lines[0])
    header = lines.index("   ncalls  tottime  percall  cumtime  percall filename:lineno(function)")
    body = [line for line in lines[header + 1:] if line]
    assert body[0].endswith(f":{outer.__code__.co_firstlineno}(outer)")  # the largest cumtime first
    assert any(line.split()[0] == "177/1" and line.endswith("(fib)") for line in body)

    limited = io.StringIO()
    profiler.print_stats(sort="ncalls", limit=1, file=limited)
    body = limited.getvalue().splitlines()[-2:]
    assert body[0].split()[0] == "177/1" and body[1] == ""
    with pytest.raises(ValueError, match="unknown sort key"):
        profiler.print_stats(sort="bogus")


def test_collapsed_and_flamegraph_files(tmp_path):
    with hookprof.Profiler() as profiler:
        consume()
    profiler.write_collapsed(tmp_path / "stacks.txt")
    lines = (tmp_path / "stacks.txt").read_text().splitlines()
    assert lines and all(COLLAPSED_LINE.match(line) for line in lines)
    profiler.write_flamegraph(tmp_path / "graph.svg", title="consume")
    root = ElementTree.parse(tmp_path / "graph.svg").getroot()
    assert root.tag.endswith("svg")
    assert "consume" in (tmp_path / "graph.svg").read_text()
    with pytest.raises(ValueError):
        hookprof.Profiler().write_flamegraph(tmp_path / "empty.svg")


SCRIPT = """\
import sys

def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)

def main():
    print("result", fib(10), __name__, sys.argv[1:], sys.path[0] == {here!r})
    sys.exit(int(sys.argv[1]))

main()
"""


def run_cli(*argv, cwd):
    return subprocess.run([sys.executable, "-m", "hookprof", *map(str, argv)], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


def test_cli_runs_a_script_prints_the_table_and_writes_files(tmp_path):
    script = tmp_path / "prog.py"
    script.write_text(SCRIPT.format(here=str(tmp_path)))
    collapsed, svg = tmp_path / "out.txt", tmp_path / "out.svg"
    done = run_cli("-s", "tottime", "--collapsed", collapsed, "--flamegraph", svg, script, "3", "--flag",
                   cwd=os.path.dirname(tmp_path))
    assert done.returncode == 3, done.stderr
    assert "result 55 __main__ ['3', '--flag'] True" in done.stdout
    assert "ncalls  tottime  percall  cumtime  percall filename:lineno(function)" in done.stdout
    assert re.search(r"^ +177/1 .*prog\.py:3\(fib\)$", done.stdout, re.M)
    lines = collapsed.read_text().splitlines()
    assert lines and all(COLLAPSED_LINE.match(line) for line in lines)
    assert any(line.startswith("<module> (") and ";main (" in line and ";fib (" in line for line in lines)
    assert ElementTree.parse(svg).getroot().tag.endswith("svg")


def test_cli_runs_a_module_and_reports_failures(tmp_path):
    (tmp_path / "profmod.py").write_text(SCRIPT.format(here=str(tmp_path)))
    done = run_cli("-l", "2", "-m", "profmod", "0", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "result 55 __main__ ['0'] True" in done.stdout
    assert "Ordered by: cumulative, 2 of " in done.stdout

    (tmp_path / "fails.py").write_text("def broken():\n    raise KeyError('nope')\n\nbroken()\n")
    done = run_cli("fails.py", cwd=tmp_path)
    assert done.returncode == 1
    assert "KeyError: 'nope'" in done.stderr
    assert re.search(r"fails\.py:1\(broken\)$", done.stdout, re.M)

    done = run_cli("missing.py", cwd=tmp_path)
    assert done.returncode == 2 and "can't open file" in done.stderr
