"""`python -m framehook`, run in a subprocess as a user would run it."""

import os
import subprocess
import sys
import sysconfig
import textwrap

import pytest

import framehook

HOOKS = '''
def upper(frame):
    """greeting() returns its text upper-cased."""
    code = frame.f_code
    if code.co_name != "greeting":
        return None
    return code.replace(co_consts=tuple(c.upper() if isinstance(c, str) else c for c in code.co_consts))


def exclaim(frame):
    """greeting() gets a "!", but only once upper() has run before it."""
    code = frame.f_code
    if code.co_name != "greeting":
        return None
    return code.replace(co_consts=tuple(c + "!" if isinstance(c, str) and c.isupper() else c
                                        for c in code.co_consts))


def fail(frame):
    raise RuntimeError("a hook that always fails")


class Hooks:
    upper = staticmethod(upper)


NOT_CALLABLE = 5
'''

SCRIPT = '''
import sys

import framehook

def greeting():
    return "hello"

print(greeting())
print("argv:", sys.argv)
print("name:", __name__)
print("path0:", sys.path[0])
if "add-hook" in sys.argv:
    framehook.add_frame_hook(lambda frame: None, name="added-by-script")
if "show-hooks-at-exit" in sys.argv:
    import atexit
    atexit.register(lambda: print("hooks at exit:", framehook.frame_hooks()))
if "exit" in sys.argv:
    sys.exit(3)
if "raise" in sys.argv:
    def fail():
        raise ValueError("the script failed")
    fail()
'''


@pytest.fixture
def program(tmp_path):
    """A directory holding a hook module and a script, used as the working directory."""
    (tmp_path / "cli_hooks.py").write_text(textwrap.dedent(HOOKS))
    (tmp_path / "cli_script.py").write_text(textwrap.dedent(SCRIPT))
    return tmp_path


def framehook_cli(*arguments, cwd):
    return subprocess.run(
        [sys.executable, "-m", "framehook", *arguments], cwd=cwd, capture_output=True, text=True, timeout=120
    )


def printed(done, label):
    """The value a script line `print(label + ":", value)` printed."""
    prefix = label + ": "
    return next(line[len(prefix):] for line in done.stdout.splitlines() if line.startswith(prefix))


def running_interpreter():
    name = "{}.{}".format(*sys.version_info[:2])
    if sysconfig.get_config_var("Py_GIL_DISABLED"):
        name += "t"
    if hasattr(sys, "gettotalrefcount"):
        name += "d"
    return name


# run


def test_run_without_hooks_runs_the_script_unchanged(program):
    done = framehook_cli("run", "cli_script.py", cwd=program)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "hello"


@pytest.mark.parametrize("spec", ["cli_hooks:upper", "cli_hooks:Hooks.upper"])  # dotted attribute paths too
def test_run_hook_replaces_the_code_the_script_runs(program, spec):
    done = framehook_cli("run", "-H", spec, "cli_script.py", cwd=program)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "HELLO"


def test_run_registers_hooks_in_the_order_given(program):
    in_order = framehook_cli("run", "-H", "cli_hooks:upper", "--hook", "cli_hooks:exclaim", "cli_script.py",
                             cwd=program)
    reversed_order = framehook_cli("run", "-H", "cli_hooks:exclaim", "-H", "cli_hooks:upper", "cli_script.py",
                                   cwd=program)
    assert in_order.stdout.splitlines()[0] == "HELLO!"
    assert reversed_order.stdout.splitlines()[0] == "HELLO"


def test_run_gives_the_script_its_arguments_name_and_directory(program):
    elsewhere = program / "elsewhere"
    elsewhere.mkdir()
    script = elsewhere / "cli_script.py"
    script.write_text(textwrap.dedent(SCRIPT))
    script_argument = os.path.join("elsewhere", "cli_script.py")
    # Options after the script are the script's, even framehook's own.
    done = framehook_cli("run", "-H", "cli_hooks:upper", script_argument, "one", "--two", "-H", "x", "--help",
                         cwd=program)
    assert done.returncode == 0, done.stderr
    assert printed(done, "argv") == repr([script_argument, "one", "--two", "-H", "x", "--help"])
    assert printed(done, "name") == "__main__"
    assert printed(done, "path0") == os.path.realpath(str(elsewhere))


def test_run_propagates_the_scripts_exit_code(program):
    done = framehook_cli("run", "-H", "cli_hooks:upper", "cli_script.py", "exit", cwd=program)
    assert done.returncode == 3
    assert done.stdout.splitlines()[0] == "HELLO"


def test_run_reports_an_uncaught_exception_as_python_does(program):
    script = str(program / "cli_script.py")
    done = framehook_cli("run", "-H", "cli_hooks:upper", script, "raise", cwd=program)
    plain = subprocess.run([sys.executable, script, "raise"], cwd=program, capture_output=True, text=True, timeout=120)
    assert done.returncode == plain.returncode == 1
    assert "ValueError: the script failed" in done.stderr
    # The same traceback, starting at the script: none of the runner's frames.
    assert done.stderr == plain.stderr


def test_run_module_mode(program):
    done = framehook_cli("run", "-H", "cli_hooks:upper", "-m", "cli_script", "a", "-m", "b", cwd=program)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "HELLO"
    directory = os.path.realpath(str(program))
    assert printed(done, "argv") == repr([os.path.join(directory, "cli_script.py"), "a", "-m", "b"])
    assert printed(done, "name") == "__main__"
    assert printed(done, "path0") == directory


def test_run_list_hooks_names_every_hook_when_the_script_ends(program):
    done = framehook_cli("run", "--list-hooks", "--cache", "-H", "cli_hooks:upper", "-H", "cli_hooks:exclaim",
                         "cli_script.py", "add-hook", cwd=program)
    assert done.returncode == 0, done.stderr
    listing = done.stderr.splitlines()
    names = [line.split()[1] for line in listing[3:]]
    assert names == ["cli_hooks:upper", "cli_hooks:exclaim", "added-by-script"]
    upper_row = listing[3].split()
    assert upper_row[:7] == ["1", "cli_hooks:upper", "python", "yes", "yes", "raise", "no"]
    assert "<function upper" in listing[3]


def test_run_on_error_log_keeps_the_script_running(program):
    done = framehook_cli("run", "--on-error", "log", "-H", "cli_hooks:fail", "-H", "cli_hooks:upper",
                         "cli_script.py", cwd=program)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "HELLO"
    assert "RuntimeError: a hook that always fails" in done.stderr


def test_run_removes_its_hooks_when_the_script_ends(program):
    done = framehook_cli("run", "-H", "cli_hooks:upper", "cli_script.py", "show-hooks-at-exit", cwd=program)
    assert done.returncode == 0, done.stderr
    assert printed(done, "hooks at exit") == "[]"


@pytest.mark.parametrize(
    "spec, complaint",
    [
        ("cli_hooks", "expected module:callable, e.g. mypkg.hooks:trace"),
        ("cli_hooks.py:upper", "no module named 'cli_hooks.py'"),
        ("no_such_module_for_framehook:hook", "no module named 'no_such_module_for_framehook'"),
        ("cli_hooks:missing", "module 'cli_hooks' has no attribute 'missing'"),
        ("cli_hooks:Hooks.missing", "'cli_hooks:Hooks' has no attribute 'missing'"),
        ("cli_hooks:NOT_CALLABLE", "'int' object is not callable"),
    ],
)
@pytest.mark.parametrize("command", [["run"], ["list"]])
def test_a_bad_hook_spec_is_a_one_line_usage_error(program, command, spec, complaint):
    arguments = [*command, "-H", "cli_hooks:upper", "-H", spec]
    if command == ["run"]:
        arguments.append("cli_script.py")
    done = framehook_cli(*arguments, cwd=program)
    assert done.returncode == 2
    assert done.stdout == ""  # the script did not run
    assert done.stderr == f"python -m framehook {command[0]}: error: hook {spec!r}: {complaint}\n"


def test_run_a_missing_script_is_a_usage_error(program):
    done = framehook_cli("run", "no_such_script.py", cwd=program)
    assert done.returncode == 2
    assert "no_such_script.py" in done.stderr
    assert "Traceback" not in done.stderr


def test_run_without_a_program_is_a_usage_error(program):
    done = framehook_cli("run", "-H", "cli_hooks:upper", cwd=program)
    assert done.returncode == 2
    assert "expected a script or -m module" in done.stderr


# list, version, matrix, help


def test_list_shows_the_given_hooks_in_a_table(program):
    done = framehook_cli("list", "-H", "cli_hooks:upper", "-H", "cli_hooks:Hooks.upper", cwd=program)
    assert done.returncode == 0, done.stderr
    header, _, first, second = done.stdout.splitlines()
    assert header.split() == ["#", "name", "kind", "enabled", "cache", "on_error", "observes", "callable"]
    assert first.split()[:7] == ["1", "cli_hooks:upper", "python", "yes", "no", "raise", "no"]
    assert second.split()[:2] == ["2", "cli_hooks:Hooks.upper"]
    assert "<function upper at" in second


def test_list_without_hooks(program):
    done = framehook_cli("list", cwd=program)
    assert (done.returncode, done.stdout) == (0, "no frame hooks registered\n")


def test_version_names_the_build_and_the_running_interpreter(tmp_path):
    done = framehook_cli("version", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    info = framehook.build_info()
    assert lines[0].split() == ["framehook", framehook.__version__]
    assert lines[1].startswith("built for  CPython {}.{}.{} ({})".format(*info["version"], running_interpreter()))
    assert "gil_disabled={}, debug={}".format(info["gil_disabled"], info["debug"]) in lines[1]
    assert lines[2] == "running    " + sys.version.replace("\n", " ")


def test_matrix_lists_every_interpreter_and_marks_the_running_one(tmp_path):
    done = framehook_cli("matrix", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    rows = {line.split()[0]: line for line in done.stdout.splitlines()[2:] if line}
    assert ["3.9", "3.10", "3.11", "3.12", "3.13", "3.13t", "3.14", "3.14d", "3.15", "3.15d"] == list(rows)[:10]
    assert "shadow PyFrameObject" in rows["3.9"] and "passed through" in rows["3.10"]
    assert "re-initialised in place" in rows["3.11"] and "hooked" in rows["3.11"]
    assert "free-threaded" in rows["3.13t"]
    marked = [name for name, line in rows.items() if line.endswith("<- running")]
    running = running_interpreter()
    if running in rows:
        assert marked == [running]
    else:
        assert marked == [] and f"running {running}: not an interpreter framehook is tested on" in done.stdout


def test_no_arguments_prints_usage(tmp_path):
    done = framehook_cli(cwd=tmp_path)
    assert done.returncode == 2
    assert done.stdout.startswith("usage: python -m framehook")
    for command in ("run", "list", "version", "matrix"):
        assert command in done.stdout


def test_help_and_version_options(tmp_path):
    helped = framehook_cli("--help", cwd=tmp_path)
    assert helped.returncode == 0 and helped.stdout.startswith("usage: python -m framehook")
    run_help = framehook_cli("run", "--help", cwd=tmp_path)
    assert run_help.returncode == 0 and "(script.py | -m module)" in run_help.stdout
    version = framehook_cli("--version", cwd=tmp_path)
    assert (version.returncode, version.stdout) == (0, f"framehook {framehook.__version__}\n")
