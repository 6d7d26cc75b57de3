"""The lint steps, in this order: rustfmt, clippy, ruff, stubtest.

    python -m framehook_dev.lint                       # every step (make lint)
    python -m framehook_dev.lint --only ruff,stubtest  # some

* ``rustfmt``: ``cargo fmt --all --check``.
* ``clippy``: ``cargo clippy --workspace --all-targets --all-features -- -D warnings``,
  against the pyenv 3.12 interpreter (``PYO3_PYTHON``), in a target directory of its own
  in the build directory (outside the repository, like ``cargo test``'s).
* ``ruff``: ``ruff check`` over the repository (configuration: ``[tool.ruff]`` in the
  root pyproject.toml), with this Python's ruff: the dev venv (``.venv``) has the version
  pinned in ``tools/requirements-lint.txt``.
* ``stubtest``: ``mypy.stubtest`` of the hand-written stubs (``framehook``, and the profiler
  example's ``hookprof._native``) against the build users get (without the cargo feature
  ``testing``), built and installed by the matrix's functions in a 3.12 venv and build
  directory of its own (``venvs/3.12-stubtest``: installed in the matrix's 3.12 venv, it
  replaced the test build under a ``make test`` running beside it), with
  ``tools/stubtest-allowlist.txt``; mypy pinned in ``tools/requirements-stubtest.txt``. One
  interpreter is enough: the stubs describe the API, which is the same on all.

Each step prints its output when it fails; the command ends with one verdict line per step
and exits 1 when a step failed.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import importlib.util
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Callable, NamedTuple

from . import matrix, provision

REPO = matrix.REPO
LINT_REQUIREMENTS = REPO / "tools" / "requirements-lint.txt"
STUBTEST_REQUIREMENTS = REPO / "tools" / "requirements-stubtest.txt"
STUBTEST_ALLOWLIST = REPO / "tools" / "stubtest-allowlist.txt"
# The modules whose hand-written .pyi stubs stubtest checks (framehook's submodules included).
STUBBED = ["framehook", "hookprof._native"]
STUBTEST_PYTHON = "3.12"


class Outcome(NamedTuple):
    name: str
    ok: bool
    seconds: float
    output: str


def log(message: str) -> None:
    print(f"[lint] {message}", file=sys.stderr, flush=True)


def _run(argv: Sequence[str], *, env: dict | None = None, cwd: Path = REPO) -> tuple[bool, str]:
    try:
        done = subprocess.run(list(argv), cwd=cwd, env=dict(os.environ, **(env or {})), text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    except FileNotFoundError as error:
        return False, f"{argv[0]}: not found ({error})"
    return done.returncode == 0, done.stdout


def rustfmt() -> tuple[bool, str]:
    return _run(["cargo", "fmt", "--all", "--check", "--", "--color", "never"])


def clippy() -> tuple[bool, str]:
    env = {"PYO3_PYTHON": str(provision.pyenv_python(STUBTEST_PYTHON)),
           "CARGO_TARGET_DIR": str(matrix.TARGETS / "clippy")}
    return _run(["cargo", "clippy", "--workspace", "--all-targets", "--all-features", "--", "-D", "warnings"],
                env=env)


def ruff() -> tuple[bool, str]:
    if importlib.util.find_spec("ruff") is None:
        return False, (f"ruff is not installed for {sys.executable}: run the lint from the dev venv "
                       f"(make lint), or pip install -r {LINT_REQUIREMENTS.relative_to(REPO)}")
    return _run([sys.executable, "-m", "ruff", "check", "--no-cache"])


def _ensure_mypy(target: matrix.Target) -> None:
    wanted = hashlib.sha256(STUBTEST_REQUIREMENTS.read_bytes()).hexdigest()
    stamp = matrix.host_path(target, target.venv / "framehook-stubtest.sha256")
    if stamp.exists() and stamp.read_text().strip() == wanted:
        return
    log(f"{target.name}: pip install -r {STUBTEST_REQUIREMENTS.relative_to(REPO)}")
    done = target.run([target.venv_python, "-m", "pip", "install", "--quiet", "-r", str(STUBTEST_REQUIREMENTS)],
                      capture=True)
    if done.returncode != 0:
        raise RuntimeError(f"installing mypy failed:\n{done.stdout[-3000:]}")
    stamp.write_text(wanted + "\n")


def stubtest() -> tuple[bool, str]:
    try:
        tested = matrix.resolve(STUBTEST_PYTHON)
        target = dataclasses.replace(tested, name=f"{tested.name}-stubtest",
                                     venv=tested.venv.with_name(f"{tested.venv.name}-stubtest"))
        matrix.ensure_venv(target)
        matrix.build_and_install(target, testing=False)
        _ensure_mypy(target)
    except (provision.ProvisionError, RuntimeError, OSError) as error:
        return False, f"could not prepare the {STUBTEST_PYTHON} venv: {error}"
    with tempfile.TemporaryDirectory() as empty:
        # Run outside the checkout, with no mypy configuration: the installed build is checked.
        return _run([target.venv_python, "-m", "mypy.stubtest", *STUBBED, "--allowlist", str(STUBTEST_ALLOWLIST),
                     "--mypy-config-file", str(Path(empty) / "none.ini")], cwd=Path(empty))


STEPS: dict[str, Callable[[], tuple[bool, str]]] = {
    "rustfmt": rustfmt,
    "clippy": clippy,
    "ruff": ruff,
    "stubtest": stubtest,
}


def run(names: Sequence[str] = tuple(STEPS)) -> list[Outcome]:
    """Runs the named steps in order (all of them by default); a failing step's output is printed."""
    outcomes = []
    for name in names:
        log(name)
        started = time.monotonic()
        ok, output = STEPS[name]()
        outcome = Outcome(name, ok, time.monotonic() - started, output)
        if not ok:
            lines = output.rstrip().splitlines()
            shown = "\n".join(lines[-200:])
            log(f"{name}: FAILED" + (f" (last 200 of {len(lines)} lines)" if len(lines) > 200 else ""))
            print(shown, flush=True)
        outcomes.append(outcome)
    return outcomes


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help=f"comma-separated steps, of {','.join(STEPS)}")
    args = parser.parse_args(argv)
    names = args.only.split(",") if args.only else list(STEPS)
    unknown = [name for name in names if name not in STEPS]
    if unknown:
        parser.error(f"unknown step(s) {unknown}; choose from {list(STEPS)}")
    outcomes = run(names)
    print()
    for outcome in outcomes:
        print(f"{'ok    ' if outcome.ok else 'FAILED'}  {outcome.name:9} {outcome.seconds:.0f}s")
    failed = [outcome.name for outcome in outcomes if not outcome.ok]
    print(f"\nlint: {len(outcomes) - len(failed)} passed, {len(failed)} failed"
          + (f" ({', '.join(failed)})" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
