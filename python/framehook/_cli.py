"""``python -m framehook``: run a program with frame hooks, list hooks, describe the build.

    python -m framehook run [-H module:callable]... [--cache] [--on-error raise|log]
                            [--list-hooks] (script.py | -m module) [args ...]
    python -m framehook list [-H module:callable]...
    python -m framehook version
    python -m framehook matrix
"""

from __future__ import annotations

import argparse
import functools
import importlib
import os
import runpy
import sys
import sysconfig
from collections.abc import Sequence
from typing import Any, Callable, TextIO

import framehook

PROG = "python -m framehook"

# What differs between the supported interpreters (the details live in src/pep523_backend/,
# every version check in its compat header).
_SHADOW_FRAME = "shadow PyFrameObject"
_IN_PLACE = "fresh frame re-initialised in place, else a call"
MATRIX_HEADERS = ("python", "build", "replacement frame", "generator/coroutine functions")
MATRIX = (
    ("3.9", "default", _SHADOW_FRAME, "passed through"),
    ("3.10", "default", _SHADOW_FRAME, "passed through"),
    ("3.11", "default", _IN_PLACE, "hooked (initial call)"),
    ("3.12", "default", _IN_PLACE, "hooked (initial call)"),
    ("3.13", "default", _IN_PLACE, "hooked (initial call)"),
    ("3.13t", "free-threaded", _IN_PLACE, "hooked (initial call)"),
    ("3.14", "default", _IN_PLACE, "hooked (initial call)"),
    ("3.14d", "debug", _IN_PLACE, "hooked (initial call)"),
    ("3.15", "default", _IN_PLACE, "hooked (initial call)"),
    ("3.15d", "debug", _IN_PLACE, "hooked (initial call)"),
)

# run's options that take a value as the next argument (see split_run_arguments).
_RUN_OPTIONS_WITH_VALUE = ("-H", "--hook", "--on-error")


class HookSpecError(Exception):
    """A -H value that does not name a callable."""


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    if not arguments:
        parser.print_help()
        return 2
    command: list[str] = []
    if arguments[0] == "run":
        run_options, command = split_run_arguments(arguments[1:])
        arguments = ["run", *run_options]
    options = parser.parse_args(arguments, argparse.Namespace(command=command))
    handler: Callable[[argparse.Namespace], int] = options.handler
    return handler(options)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Run Python programs with frame hooks, and describe this framehook build.",
    )
    parser.add_argument("--version", action="version", version=f"framehook {framehook.__version__}")
    commands = parser.add_subparsers(title="commands", metavar="command")

    run = commands.add_parser(
        "run",
        help="run a script or module with frame hooks registered",
        description=(
            "Run a script or module as `python script.py` or `python -m module` would, with the "
            "given hooks registered in order and removed afterwards. Every argument after the "
            "script or `-m module` is the program's own."
        ),
        usage=(
            f"{PROG} run [-h] [-H module:callable]... [--cache] [--on-error {{raise,log}}]\n"
            f"{' ' * len('usage: ' + PROG)}     [--list-hooks] (script.py | -m module) [args ...]"
        ),
        allow_abbrev=False,  # split_run_arguments knows only the full option names
    )
    add_hook_option(run)
    run.add_argument("--cache", action="store_true", help="register the hooks with cache=True")
    run.add_argument("--on-error", choices=("raise", "log"), default="raise",
                     help="what an exception from a hook does (default: raise)")
    run.add_argument("--list-hooks", action="store_true",
                     help="print the registered hooks to stderr when the program ends")
    run.set_defaults(handler=run_command, parser=run)

    listing = commands.add_parser("list", help="register the given hooks and list the registered hooks")
    add_hook_option(listing)
    listing.set_defaults(handler=list_command, parser=listing)

    version = commands.add_parser("version", help="framehook's version and the interpreter it was built for")
    version.set_defaults(handler=version_command)

    matrix = commands.add_parser("matrix", help="the supported interpreters and how they differ")
    matrix.set_defaults(handler=matrix_command)
    return parser


def add_hook_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-H", "--hook", dest="hooks", action="append", default=[], metavar="module:callable",
        help="a hook to register, e.g. mypkg.hooks:trace or mypkg.hooks:Tracer.hook; repeatable",
    )


def split_run_arguments(arguments: Sequence[str]) -> tuple[list[str], list[str]]:
    """run's own options, and the program after them (`-m module ...` or `script ...`).

    The program starts at `-m` or at the first argument that is not an option,
    so that its own arguments, even `-H` or `--help`, stay its own."""
    index = 0
    while index < len(arguments):
        argument = arguments[index]
        if argument == "--":
            return list(arguments[:index]), list(arguments[index + 1:])
        if argument == "-m" or not argument.startswith("-"):
            return list(arguments[:index]), list(arguments[index:])
        index += 2 if argument in _RUN_OPTIONS_WITH_VALUE else 1
    return list(arguments), []


def load_hook(spec: str) -> Callable[..., Any]:
    """The callable that `module:attribute.path` names."""
    module_name, colon, attribute_path = spec.partition(":")
    if not (colon and is_dotted_name(module_name) and is_dotted_name(attribute_path)):
        raise HookSpecError(f"hook {spec!r}: expected module:callable, e.g. mypkg.hooks:trace")
    try:
        target: Any = importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        # Only the named module (or its package) missing is the spec's fault;
        # a failing import inside the hook module keeps its traceback.
        if error.name is None or not (module_name + ".").startswith(error.name + "."):
            raise
        raise HookSpecError(f"hook {spec!r}: no module named {error.name!r}") from None
    attributes = attribute_path.split(".")
    for depth, attribute in enumerate(attributes):
        try:
            target = getattr(target, attribute)
        except AttributeError:
            owner = repr(f"{module_name}:{'.'.join(attributes[:depth])}") if depth else f"module {module_name!r}"
            raise HookSpecError(f"hook {spec!r}: {owner} has no attribute {attribute!r}") from None
    if not callable(target):
        raise HookSpecError(f"hook {spec!r}: {type(target).__name__!r} object is not callable")
    return target


def is_dotted_name(name: str) -> bool:
    return all(part.isidentifier() for part in name.split("."))


def load_hooks(options: argparse.Namespace) -> list[tuple[str, Callable[..., Any]]]:
    """Every -H hook, or exit 2 naming the first bad one."""
    parser: argparse.ArgumentParser = options.parser
    try:
        return [(spec, load_hook(spec)) for spec in options.hooks]
    except HookSpecError as error:
        parser.exit(2, f"{parser.prog}: error: {error}\n")


def run_command(options: argparse.Namespace) -> int:
    parser: argparse.ArgumentParser = options.parser
    if not options.command or options.command == ["-m"]:
        parser.error("expected a script or -m module")
    # Hook modules are imported first, from the directories `python -m framehook` searches.
    hooks = load_hooks(options)
    if options.command[0] == "-m":
        module, *program_arguments = options.command[1:]
        # run_module replaces "-m" by the module's path while it runs, as `python -m` does.
        sys.argv = ["-m", *program_arguments]
        first_path_entry = os.getcwd()
        run_program = functools.partial(runpy.run_module, module, run_name="__main__", alter_sys=True)
    else:
        script, *program_arguments = options.command
        if not os.path.exists(script):
            parser.exit(2, f"{parser.prog}: error: can't open file {os.path.abspath(script)!r}: "
                           "No such file or directory\n")
        sys.argv = [script, *program_arguments]
        first_path_entry = os.path.dirname(os.path.realpath(script))
        run_program = functools.partial(runpy.run_path, script, run_name="__main__")
    # sys.path[0] is the entry `python -m framehook` added, unless -I or -P kept it out.
    if not (sys.flags.isolated or getattr(sys.flags, "safe_path", False)):
        sys.path[0] = first_path_entry

    handles = [
        framehook.add_frame_hook(hook, name=spec, cache=options.cache, on_error=options.on_error)
        for spec, hook in hooks
    ]
    uncaught = None
    try:
        run_program()
    except Exception as error:  # SystemExit and KeyboardInterrupt end the process as usual
        uncaught = error
    finally:
        with framehook.disabled():  # the program is over: its hooks must not run framehook's code
            if uncaught is not None:
                report_uncaught(uncaught)
            if options.list_hooks:
                print("framehook: frame hooks registered when the program ended:", file=sys.stderr)
                print_hooks(sys.stderr)
            for handle in handles:
                if handle.registered:  # the program may have removed it
                    framehook.remove_frame_hook(handle)
    return 0 if uncaught is None else 1


def report_uncaught(error: Exception) -> None:
    """Reports `error` as `python script.py` would: through sys.excepthook, without the runner's frames."""
    traceback = error.__traceback__
    while traceback is not None and traceback.tb_frame.f_globals.get("__name__") in (__name__, "runpy"):
        traceback = traceback.tb_next
    # The default excepthook prints the exception's own traceback, not its argument.
    sys.excepthook(type(error), error.with_traceback(traceback), traceback)


def list_command(options: argparse.Namespace) -> int:
    handles = [framehook.add_frame_hook(hook, name=spec) for spec, hook in load_hooks(options)]
    try:
        with framehook.disabled():  # listing the hooks must not run them
            print_hooks(sys.stdout)
    finally:
        for handle in handles:
            framehook.remove_frame_hook(handle)
    return 0


def print_hooks(stream: TextIO) -> None:
    handles = framehook.frame_hooks()
    if not handles:
        print("no frame hooks registered", file=stream)
        return
    rows = [
        (str(position), handle.name, "native" if handle.native else "python", yes_no(handle.enabled),
         yes_no(handle.cache), handle.on_error, yes_no(handle.observes), callable_of(handle))
        for position, handle in enumerate(handles, start=1)
    ]
    header = ("#", "name", "kind", "enabled", "cache", "on_error", "observes", "callable")
    print("\n".join(format_table(header, rows)), file=stream)


def callable_of(handle: framehook.HookHandle) -> str:
    """What a Python hook calls; native hooks have nothing to show."""
    for function in (handle.hook, handle.observer):
        if function is not None:
            return repr(function)
    return "-"


def version_command(options: argparse.Namespace) -> int:
    info = framehook.build_info()
    version = ".".join(str(part) for part in info["version"])
    built_for = interpreter_name(info["version"], info["gil_disabled"], info["debug"])
    print(f"framehook  {framehook.__version__}")
    print(f"built for  CPython {version} ({built_for}): gil_disabled={info['gil_disabled']}, debug={info['debug']}")
    print(f"running    {sys.version}".replace("\n", " "))
    return 0


def matrix_command(options: argparse.Namespace) -> int:
    running = interpreter_name(
        sys.version_info[:2], bool(sysconfig.get_config_var("Py_GIL_DISABLED")), hasattr(sys, "gettotalrefcount")
    )
    header, underline, *rows = format_table(MATRIX_HEADERS, MATRIX)
    print(header)
    print(underline)
    for row, line in zip(MATRIX, rows):
        print(f"{line}  <- running" if row[0] == running else line)
    if running not in (row[0] for row in MATRIX):
        print(f"\nrunning {running}: not an interpreter framehook is tested on")
    return 0


def interpreter_name(version: Sequence[int], gil_disabled: bool, debug: bool) -> str:
    """The matrix's name for an interpreter: 3.13, 3.13t (free-threaded), 3.14d (debug)."""
    return f"{version[0]}.{version[1]}" + ("t" if gil_disabled else "") + ("d" if debug else "")


def yes_no(flag: bool) -> str:
    return "yes" if flag else "no"


def format_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """The header, a dashed line and the rows, in left-aligned columns."""
    widths = [max(len(cell) for cell in column) for column in zip(headers, *rows)]
    return [
        "  ".join(cell.ljust(width) for cell, width in zip(line, widths)).rstrip()
        for line in [headers, ["-" * width for width in widths], *rows]
    ]
