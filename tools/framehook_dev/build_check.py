"""Build checks: the matrix's interpreters that no machine of ours can run, compiled only.

    python -m framehook_dev.matrix --only 3.14t    # make test PY=3.14t

3.14t, free-threaded CPython 3.14: no such interpreter can be had (Debian ships no
free-threaded 3.14 and answers 404 for python3.14's source files; no registry package
ships one). So framehook is built, not run, against the headers of the sid root's
python3.14 (``/usr/include/python3.14``, the internal ones included) configured the way
``--disable-gil`` configures them: ``pyconfig.h`` of a free-threaded build differs from a
default build's only by ``#define Py_GIL_DISABLED 1``, which the check passes to the C
compiler. What it builds is what the matrix's test build compiles, the same way:

* ``cargo build --lib`` of framehook and of each example package (the matrix's
  ``packages()``), with the features the test build uses (``pyproject.toml``'s plus
  ``testing`` for framehook), inside the sid root, in a target directory of its own
  (``<build dir>/target/3.14t``, outside the repository);
* the Rust side with PyO3 configured for a free-threaded 3.14 by a ``PYO3_CONFIG_FILE``
  (CPython 3.14, build flag ``Py_GIL_DISABLED``), so ``#[cfg(Py_GIL_DISABLED)]`` paths
  (PyO3's and ours) are compiled;
* the C shim by the repository's own ``build.rs`` (every file it compiles, as it compiles
  them), with ``PYO3_PYTHON=/usr/bin/python3.14`` for the include directories and
  ``CFLAGS=-DPy_GIL_DISABLED=1`` (read by the ``cc`` crate), so ``#ifdef Py_GIL_DISABLED``
  paths are compiled.

The check fails on a build error, on a C compiler warning located in the repository's
files (other builds print those and go on; here the build is the only thing checked),
on a rustc warning in one of the workspace's crates (clippy holds them to
``-D warnings`` too), and when the build did not get the configuration it claims:
PyO3 without the ``Py_GIL_DISABLED`` and ``Py_3_14`` cfgs, or a shim whose objects do
not call the free-threaded ``Py_DECREF``'s ``_Py_DecRefShared`` (so the define did not
reach the compiler).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from . import matrix, provision


@dataclass(frozen=True)
class HeaderBuild:
    """An interpreter built for from another's headers, with a configuration of its own."""

    name: str
    python: str  # the interpreter inside the sid root whose headers are used (build.rs asks it)
    version: str  # PyO3's version
    build_flags: str  # PyO3's build flags (comma-separated)
    cflags: str  # what the headers' pyconfig.h would define
    symbol: str  # an undefined symbol the shim's objects have only when built so


CHECKS = {
    f"{version}t": HeaderBuild(
        name=f"{version}t",
        python=f"/usr/bin/python{version}",
        version=version,
        build_flags="Py_GIL_DISABLED",
        cflags="-DPy_GIL_DISABLED=1",
        # Py_DECREF's shared-refcount path: free-threaded headers only (refcount.h).
        symbol="_Py_DecRefShared",
    )
    for version in provision.SID_VERSIONS
}

# A C compiler diagnostic as the cc crate forwards it (cargo:warning=FILE:LINE:COL: warning: ...).
C_WARNING = re.compile(r"^(?P<file>[^:\s][^:]*):\d+(?::\d+)?: warning: ")
# Cargo's progress, and the cc crate's record of the variables it read (in a failed build script's output).
NOISE = re.compile(r"^\s*(Compiling|Checking|Fresh|Blocking|Updating|Downloaded?|Locking|Adding)\s"
                   r"|^\s*cargo::?rerun-if-|^\s*[A-Za-z_][\w-]* = (None|Some\(.*\))$")
SUMMARY = re.compile(r"^(\d+ warnings? emitted|aborting due to)")


def log(message: str) -> None:
    print(f"[matrix] {message}", file=sys.stderr, flush=True)


def pyo3_config(check: HeaderBuild) -> str:
    """The PYO3_CONFIG_FILE for ``check``: PyO3 reads it instead of asking an interpreter."""
    return "\n".join([
        "implementation=CPython",
        f"version={check.version}",
        "shared=true",
        "abi3=false",
        f"build_flags={check.build_flags}",
        "pointer_width=64",
        "suppress_build_script_link_lines=false",
        "",
    ])


def headers_version(check: HeaderBuild) -> str:
    """PY_VERSION of the headers used (patchlevel.h in the sid root)."""
    include = provision.ensure_sid_root() / "usr" / "include" / Path(check.python).name / "patchlevel.h"
    found = re.search(r'#define\s+PY_VERSION\s+"([^"]+)"', include.read_text(errors="replace"))
    return found.group(1) if found else "?"


@dataclass
class Build:
    """What one ``cargo build --message-format=json`` reported."""

    returncode: int
    stderr: str
    messages: list[dict]

    def ours(self, reason: str) -> list[dict]:
        """Messages of ``reason`` from the workspace's packages (path dependencies)."""
        return [m for m in self.messages if m.get("reason") == reason and m.get("package_id", "").startswith("path+")]


def cargo_build(target: matrix.Target, check: HeaderBuild, package: Path, env: dict[str, str]) -> Build:
    features = matrix.pyproject_features(package) + (matrix.TEST_FEATURES if package == matrix.REPO else [])
    log(f"{check.name}: cargo build {'framehook' if package == matrix.REPO else package.relative_to(matrix.REPO)}"
        f" ({check.build_flags}, features {','.join(features) or '-'})")
    argv = ["cargo", "build", "--lib", "--manifest-path", str(package / "Cargo.toml"), "--message-format=json",
            *(["--features", ",".join(features)] if features else [])]
    done = subprocess.run(target.command(argv, extra_env=env), cwd=matrix.REPO, text=True, capture_output=True)
    messages = []
    for line in done.stdout.splitlines():
        if line.startswith("{"):
            try:
                messages.append(json.loads(line))
            except ValueError:
                pass
    return Build(done.returncode, done.stderr, messages)


def c_warnings(build: Build) -> tuple[list[str], list[str]]:
    """The C compiler's output forwarded by the workspace's build scripts: (the blocks
    holding a warning in one of the repository's files, the other warning blocks)."""
    ours: list[str] = []
    foreign: list[str] = []
    for executed in build.ours("build-script-executed"):
        output = Path(executed["out_dir"]).parent / "output"
        if not output.is_file():
            continue
        lines = [re.sub(r"^cargo::?warning=", "", line) for line in output.read_text(errors="replace").splitlines()
                 if re.match(r"^cargo::?warning=", line)]
        located = [C_WARNING.match(line) for line in lines]
        files = [Path(m.group("file")) for m in located if m]
        if not files:
            continue
        mine = any((path if path.is_absolute() else matrix.REPO / path).resolve().is_relative_to(matrix.REPO)
                   for path in files)
        (ours if mine else foreign).append("\n".join(lines))
    return ours, foreign


def rust_diagnostics(build: Build, level: str) -> list[str]:
    """rustc's rendered diagnostics of ``level`` for the workspace's crates."""
    return [m["message"]["rendered"] for m in build.ours("compiler-message")
            if m["message"].get("level") == level and not SUMMARY.match(m["message"].get("message", ""))]


def configuration_problems(target: matrix.Target, check: HeaderBuild, build: Build) -> list[str]:
    """What shows the build did not get ``check``'s configuration (empty when it did)."""
    problems = []
    executed = [m for m in build.messages if m.get("reason") == "build-script-executed"]
    ffi = [m for m in executed if re.search(r"[#/]pyo3-ffi[@#]", m.get("package_id", ""))]
    wanted = {*check.build_flags.split(","), "Py_" + check.version.replace(".", "_")}
    if not ffi:
        problems.append("cargo reported no build of pyo3-ffi")
    # pyo3-ffi, and a crate of ours that takes PyO3's cfgs (pyo3_build_config::use_pyo3_cfgs).
    for m in ffi + [m for m in build.ours("build-script-executed") if any(c.startswith("Py_3_") for c in m["cfgs"])]:
        if not wanted <= set(m.get("cfgs", [])):
            problems.append(f"{m['package_id']} was configured with cfgs {m.get('cfgs')}, not {sorted(wanted)}")
    archives = [path for m in build.ours("build-script-executed")
                for path in Path(m["out_dir"]).glob("libframehook_shim.a")]
    if not archives:
        problems.append("cargo reported no build of the shim (libframehook_shim.a)")
    for archive in archives:
        done = subprocess.run(target.command(["nm", "--undefined-only", str(archive)]), cwd=matrix.REPO,
                              text=True, capture_output=True)
        if done.returncode != 0:
            problems.append(f"nm {archive} failed: {done.stderr.strip()[-500:]}")
        elif not re.search(rf"\bU {re.escape(check.symbol)}$", done.stdout, re.M):
            problems.append(f"the shim ({archive}) does not call {check.symbol}: it was not compiled with "
                            f"{check.cflags} (did build.rs stop honouring CFLAGS?)")
    return problems


def verify(target: matrix.Target, check: HeaderBuild, package: Path, build: Build) -> list[str]:
    """The reasons ``build`` fails the check (empty when it passes); prints the details."""
    name = "framehook" if package == matrix.REPO else str(package.relative_to(matrix.REPO))
    if build.returncode != 0:
        shown = [line for line in build.stderr.splitlines() if not NOISE.match(line)]
        print("\n".join([*rust_diagnostics(build, "error"), *shown[-150:]]), flush=True)
        return [f"{name}: cargo build failed (exit {build.returncode})"]
    reasons = []
    ours, foreign = c_warnings(build)
    for block in foreign:
        print(f"{check.name}: a C warning outside the repository (not counted):\n{block}", flush=True)
    if ours:
        print("\n".join(ours), flush=True)
        reasons.append(f"{name}: the C compiler warned about the repository's code")
    rust = rust_diagnostics(build, "warning")
    if rust:
        print("".join(rust), flush=True)
        reasons.append(f"{name}: rustc warned ({len(rust)} warning(s))")
    if package == matrix.REPO:
        reasons += [f"{name}: {problem}" for problem in configuration_problems(target, check, build)]
    return reasons


def run(name: str, packages: Optional[Sequence[Path]] = None) -> matrix.Result:
    """Builds every package (the matrix's, by default) for ``name``: one test, passed or failed."""
    check = CHECKS[name]
    result = matrix.Result(name, gil="off", debug="check", build_check=True)
    started = time.monotonic()
    try:
        provision.ensure_sid_root()
        result.version = f"{headers_version(check)} headers, {check.cflags} (built, not run)"
        target_dir = matrix.TARGETS / name
        target_dir.mkdir(parents=True, exist_ok=True)
        config = target_dir / "pyo3-config.txt"
        # Written only when it changes: PyO3 rebuilds everything when the file's time changes.
        if not config.is_file() or config.read_text() != pyo3_config(check):
            config.write_text(pyo3_config(check))
        target = matrix.Target(name, check.python, target_dir, in_sid=True)
        env = {"CARGO_TARGET_DIR": str(target_dir), "PYO3_CONFIG_FILE": str(config), "PYO3_PYTHON": check.python,
               "CFLAGS": check.cflags, "CARGO_TERM_COLOR": "never"}
        reasons = []
        for package in packages or matrix.packages():
            reasons += verify(target, check, package, cargo_build(target, check, package, env))
        for reason in reasons:
            log(f"{name}: FAILED: {reason}")
        result.passed, result.failed = (0, 1) if reasons else (1, 0)
    except (provision.ProvisionError, RuntimeError, OSError) as error:
        result.error = str(error)
        log(f"{name}: ERROR: {error}")
    result.seconds = time.monotonic() - started
    return result
