"""Build framehook for every interpreter of the matrix and run the tests on each.

    python -m framehook_dev.matrix              # lint, all ten interpreters, the 3.14t/3.15t build checks, cargo test
    python -m framehook_dev.matrix --only 3.12  # one interpreter (or a comma-separated few; 3.15t: a build check)

A run of the whole matrix starts with the lint steps (``framehook_dev.lint``; ``--lint``
adds them to an ``--only`` run, ``--no-lint`` leaves them out) and ends with ``cargo test``.
For each interpreter: provision it (``framehook_dev.provision``, cached outside the repo),
make or reuse its venv (cached too), build the wheels with maturin in the interpreter's
own target directory (framehook with the cargo feature ``testing``, which adds the test and
bench helpers to ``framehook._native``), install them and this dev package, run pytest.
3.14, 3.14d, 3.15 and 3.15d run inside the Debian sid root. 3.14t and 3.15t, which no
machine of ours can run, are build checks (``framehook_dev.build_check``): everything compiled
against 3.14's (3.15's) headers configured free-threaded, nothing run. Ends with a summary table (each lint step and the
build check count as one test) and one closing line ``N passed, N failed[, N skipped]``;
exits non-zero on any lint, build or test failure.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ElementTree
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Optional

from . import checkout, provision

REPO = checkout.find()
REQUIREMENTS = REPO / "tests" / "requirements.txt"
# This package, installed into every venv (the tests and the torture's child import it).
DEV_PACKAGE = REPO / "tools"
# framehook's test build: the cargo feature that adds the test and bench helpers
# (framehook._native._is_installed, _capi_add, _bench_floor_install, ...).
TEST_FEATURES = ["testing"]
# The real paddlepaddle wheel, for SOT's compatibility tests: PyPI has CPU
# wheels for 3.9-3.13 (about 200 MB each), so two interpreters carry it.
PADDLE_REQUIREMENTS = REPO / "tests" / "requirements-paddle.txt"
PADDLE_INTERPRETERS = {"3.10", "3.13"}
INTERPRETERS = ["3.9", "3.10", "3.11", "3.12", "3.13", "3.13t", "3.14", "3.14d", "3.15", "3.15d"]
# Interpreters built for but never run (no machine of ours has them): framehook_dev.build_check.
BUILD_CHECKS = ["3.14t", "3.15t"]
SID_INTERPRETERS = {name: f"python{name}" for v in provision.SID_VERSIONS for name in (v, f"{v}d")}
# Venvs and build directories live in the cache, so a fresh clone reuses compiled
# dependencies. FRAMEHOOK_BUILD_DIR moves them (not the interpreters) elsewhere, so that
# two checkouts can run the matrix side by side without rebuilding each other's builds.
BUILD_DIR = Path(os.environ.get("FRAMEHOOK_BUILD_DIR") or provision.CACHE)
TARGETS = BUILD_DIR / "target"
# Inside the sid root: the root's own /opt, or the build dir (bound at the same path).
SID_VENVS = BUILD_DIR / "sid-venvs" if "FRAMEHOOK_BUILD_DIR" in os.environ else Path("/opt/framehook/venvs")

PROBE = (
    "import json, sys, sysconfig; print(json.dumps({"
    "'version': sys.version.replace(chr(10), ' '), "
    "'gil': 'off' if sysconfig.get_config_var('Py_GIL_DISABLED') else 'on', "
    "'debug': hasattr(sys, 'gettotalrefcount')}))"
)


def log(message: str) -> None:
    print(f"[matrix] {message}", file=sys.stderr, flush=True)


@dataclass
class Result:
    name: str
    version: str = "?"
    gil: str = "?"
    debug: str = "?"
    passed: int = 0
    failed: int = 0
    skipped: int = 0
    error: Optional[str] = None
    seconds: float = 0.0
    build_check: bool = False  # built, not run: one test (framehook_dev.build_check)


@dataclass
class Target:
    """Where an interpreter runs: on the host, or inside the sid root."""

    name: str
    python: str  # the base interpreter, as seen where it runs
    venv: Path  # as seen where it runs
    in_sid: bool = False
    env: dict[str, str] = field(default_factory=dict)

    @property
    def venv_python(self) -> str:
        return str(self.venv / "bin" / "python")

    def command(self, argv: Sequence[str], *, cwd: Path = REPO,
                extra_env: Optional[dict[str, str]] = None) -> list[str]:
        """The host argv that runs ``argv`` where the interpreter lives (with ``extra_env``
        there, when that is the sid root; on the host, the caller passes the environment)."""
        if not self.in_sid:
            return list(argv)
        # Inside the root, the environment is the one sid_command sets up.
        home = Path.home()
        TARGETS.mkdir(parents=True, exist_ok=True)
        return provision.sid_command(
            list(argv), binds=[REPO, home / ".cargo", home / ".rustup", BUILD_DIR],
            env=dict(self.env, **(extra_env or {})), cwd=cwd,
        )

    def run(self, argv: Sequence[str], *, cwd: Path = REPO, capture: bool = False,
            extra_env: Optional[dict[str, str]] = None, output: Optional[IO[str]] = None,
            timeout: Optional[float] = None) -> subprocess.CompletedProcess:
        """Runs ``argv`` where the interpreter lives; ``capture`` collects stdout and stderr
        in the result, ``output`` sends them to a file instead."""
        env = dict(os.environ, **(extra_env or {}))
        command = self.command(argv, cwd=cwd, extra_env=extra_env)
        return subprocess.run(
            command, cwd=cwd, env=env, text=True,
            stdout=subprocess.PIPE if capture else output,
            stderr=subprocess.STDOUT if capture or output else None, timeout=timeout,
        )


def resolve(name: str) -> Target:
    if name in SID_INTERPRETERS:
        provision.ensure_sid_root()
        return Target(name, f"/usr/bin/{SID_INTERPRETERS[name]}",
                      SID_VENVS / name, in_sid=True)
    python = provision.ensure_python313t() if name == "3.13t" else provision.pyenv_python(name)
    return Target(name, str(python), BUILD_DIR / "venvs" / name)


def host_path(target: Target, path: Path) -> Path:
    """Where the host sees `path` as `target` sees it (sid venvs may live only inside the root)."""
    in_root_only = target.in_sid and not path.is_relative_to(BUILD_DIR) and not path.is_relative_to(REPO)
    return provision.ensure_sid_root() / str(path).lstrip("/") if in_root_only else path


def ensure_venv(target: Target) -> None:
    """Creates the venv with the test requirements, unless an up-to-date one exists."""
    requirements = [REQUIREMENTS]
    if target.name in PADDLE_INTERPRETERS:
        requirements.append(PADDLE_REQUIREMENTS)
    wanted = hashlib.sha256(b"".join(path.read_bytes() for path in requirements)).hexdigest()
    host_stamp = host_path(target, target.venv / "framehook-requirements.sha256")
    if host_stamp.exists() and host_stamp.read_text().strip() == wanted:
        return
    log(f"{target.name}: creating venv {target.venv}")
    steps = [
        [target.python, "-m", "venv", "--clear", str(target.venv)],
        [target.venv_python, "-m", "pip", "install", "--quiet", "--upgrade", "pip"],
        [target.venv_python, "-m", "pip", "install", "--quiet", "-r", str(REQUIREMENTS)],
    ]
    for argv in steps:
        done = target.run(argv, capture=True)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} failed:\n{done.stdout[-3000:]}")
    for optional in requirements[1:]:
        argv = [target.venv_python, "-m", "pip", "install", "--quiet", "-r", str(optional)]
        if target.run(argv, capture=True).returncode != 0:
            log(f"{target.name}: {optional.name} not installable here; the tests needing it skip")
    host_stamp.write_text(wanted + "\n")


def packages() -> list[Path]:
    """framehook, then each example that is a package of its own (examples/*/pyproject.toml)."""
    return [REPO] + sorted(path.parent for path in REPO.glob("examples/*/pyproject.toml"))


def pyproject_features(package: Path) -> list[str]:
    """The cargo features in ``[tool.maturin]`` of ``package``'s pyproject.toml (read
    without tomllib, which 3.9 and 3.10 lack)."""
    text = (package / "pyproject.toml").read_text()
    section = re.search(r"^\[tool\.maturin\][ \t]*$(.*?)(?=^\[|\Z)", text, re.M | re.S)
    listed = section and re.search(r"^features\s*=\s*\[([^\]]*)\]", section.group(1), re.M)
    return re.findall(r"[\"']([^\"']+)[\"']", listed.group(1)) if listed else []


# What build_and_install last installed in each venv, by this process.
_INSTALLED: dict[str, tuple] = {}


def build_and_install(target: Target, *, release: bool = False, testing: bool = True,
                      profile_guided: bool = False) -> None:
    """Builds every package's wheel and installs them, with this dev package (unless this
    process installed that build already). ``release``: optimised, for benchmarks.
    ``testing``: framehook with the test and bench helpers (``TEST_FEATURES``); without, the
    build users get (the lint's stubtest checks the stubs against it). ``profile_guided``
    (with ``release``): framehook optimised with the profile of a training run
    (``profile_guided_wheel``), the wheel ``make wheel`` builds."""
    if profile_guided and not release:
        raise ValueError("a profile-guided build is a release build: pass release=True")
    if _INSTALLED.get(target.name) == (release, testing, profile_guided):
        return
    target_dir = TARGETS / target.name
    wheels = target_dir / "wheels"
    shutil.rmtree(wheels, ignore_errors=True)
    for package in packages():
        # maturin's --features replaces pyproject.toml's list, so the test build repeats it.
        features = pyproject_features(package) + TEST_FEATURES if package == REPO and testing else []
        if package == REPO and profile_guided:
            profile_guided_wheel(target, features, wheels)
        else:
            maturin_build(target, package, wheels, release=release, features=features, target_dir=target_dir)
    built = sorted(wheels.glob("*.whl"))
    if len(built) != len(packages()):
        raise RuntimeError(f"expected {len(packages())} wheels in {wheels}, found {built}")
    install_wheels(target, built)
    _INSTALLED[target.name] = (release, testing, profile_guided)


def maturin_build(target: Target, package: Path, out: Path, *, release: bool, features: Sequence[str],
                  target_dir: Path, rustflags: Sequence[str] = ()) -> None:
    """``package``'s wheel into ``out``, built in the cargo target directory ``target_dir``;
    ``rustflags`` join those of .cargo/config.toml (cargo merges a ``--config`` list)."""
    name = "framehook" if package == REPO else str(package.relative_to(REPO))
    described = [f"target dir {target_dir}", *([f"features {','.join(features)}"] if features else []),
                 *([f"rustflags {' '.join(rustflags)}"] if rustflags else [])]
    log(f"{target.name}: building {name} ({', '.join(described)})")
    build = target.run(
        [str(target.venv / "bin" / "maturin"), "build", "--interpreter", target.venv_python,
         "--manifest-path", str(package / "Cargo.toml"), "--out", str(out),
         *(["--release"] if release else []), *(["--features", ",".join(features)] if features else []),
         *(["--config", f"build.rustflags={json.dumps(list(rustflags))}"] if rustflags else [])],
        capture=True, extra_env={"CARGO_TARGET_DIR": str(target_dir)},
    )
    if build.returncode != 0:
        raise RuntimeError(f"maturin build of {name} failed:\n{build.stdout[-6000:]}")


def install_wheels(target: Target, wheels: Sequence[Path]) -> None:
    """``wheels`` into the target's venv (over what it has), then this dev package."""
    install = target.run(
        [target.venv_python, "-m", "pip", "install", "--quiet", "--force-reinstall", "--no-deps",
         *map(str, wheels)],
        capture=True,
    )
    if install.returncode != 0:
        raise RuntimeError(f"installing {[wheel.name for wheel in wheels]} failed:\n{install.stdout[-3000:]}")
    install_dev_package(target)


def profile_guided_wheel(target: Target, features: Sequence[str], out: Path) -> None:
    """framehook's release wheel, optimised with the profile of a training run
    (``framehook_dev.pgo_training``: the fuzzer's generated programs, the SOT corpus and the
    project's model workloads; never a benchmark's own code), into ``out``. Three steps,
    each in a cargo target directory of its own so that none rebuilds another's
    dependencies: an instrumented build, installed and trained in the target's venv;
    ``llvm-profdata merge`` of the profiles; the build that uses them."""
    root = TARGETS / f"{target.name}-pgo"
    profiles, instrumented = root / "profiles", root / "instrumented-wheel"
    shutil.rmtree(instrumented, ignore_errors=True)
    maturin_build(target, REPO, instrumented, release=True, features=features, target_dir=root / "generate",
                  rustflags=[f"-Cprofile-generate={profiles}"])
    # The build scripts ran instrumented too: only the training's profiles are wanted.
    shutil.rmtree(host_path(target, profiles), ignore_errors=True)
    install_wheels(target, sorted(instrumented.glob("*.whl")))
    log(f"{target.name}: training the instrumented build (framehook_dev.pgo_training)")
    training = target.run([target.venv_python, "-m", "framehook_dev.pgo_training", str(REPO)], capture=True,
                          extra_env={"PYTHONHASHSEED": "0"})
    if training.returncode != 0:
        raise RuntimeError(f"the profile-guided build's training run failed:\n{training.stdout[-3000:]}")
    raw = sorted(host_path(target, profiles).glob("*.profraw"))
    if not raw:
        raise RuntimeError(f"the training run left no profile in {profiles}")
    merging = host_path(target, root / "merging.profdata")
    merge = subprocess.run([str(provision.ensure_llvm_profdata()), "merge", "-o", str(merging), *map(str, raw)],
                           text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if merge.returncode != 0:
        raise RuntimeError(f"llvm-profdata merge failed:\n{merge.stdout[-3000:]}")
    # Named by its contents: cargo rebuilds on a change of flags, not of the file they name.
    merged = root / f"framehook-{hashlib.sha256(merging.read_bytes()).hexdigest()[:16]}.profdata"
    for old in host_path(target, root).glob("framehook-*.profdata"):
        old.unlink()
    merging.rename(host_path(target, merged))
    maturin_build(target, REPO, out, release=True, features=features, target_dir=root / "use",
                  rustflags=[f"-Cprofile-use={merged}"])


def _dev_package_digest() -> str:
    digest = hashlib.sha256()
    files = [DEV_PACKAGE / "pyproject.toml", *sorted((DEV_PACKAGE / "framehook_dev").rglob("*"))]
    for path in files:
        if path.is_file() and "__pycache__" not in path.parts:
            digest.update(str(path.relative_to(DEV_PACKAGE)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


@functools.cache
def dev_wheel() -> Path:
    """A wheel of this package as the checkout has it, built once per content (in the build
    dir, which the sid root sees): venvs get a copy of this checkout's tools, never a link
    to a checkout that another clone sharing the cache may change or remove."""
    digest = _dev_package_digest()
    out = BUILD_DIR / "dev-wheels" / digest[:16]
    found = sorted(out.glob("framehook_dev-*.whl"))
    if found:
        return found[0]
    log(f"building the dev package's wheel ({DEV_PACKAGE.relative_to(REPO)})")
    shutil.rmtree(out, ignore_errors=True)  # an earlier run's, left without its wheel
    temporary = out.with_name(out.name + f".tmp-{os.getpid()}")
    shutil.rmtree(temporary, ignore_errors=True)
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir",
                           str(temporary), str(DEV_PACKAGE)], text=True, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT)
    if done.returncode != 0:
        shutil.rmtree(temporary, ignore_errors=True)
        raise RuntimeError(f"building the dev package's wheel failed:\n{done.stdout[-3000:]}")
    try:
        os.replace(temporary, out)
    except OSError:  # another run (a clone sharing the cache) put the same wheel there first
        shutil.rmtree(temporary, ignore_errors=True)
    found = sorted(out.glob("framehook_dev-*.whl"))
    if not found:
        raise RuntimeError(f"building the dev package's wheel left no wheel in {out}")
    return found[0]


def install_dev_package(target: Target) -> None:
    """This package into the target's venv (unless that copy is current), so that the tests
    and the torture's and stress's children import it."""
    wheel = dev_wheel()
    stamp = host_path(target, target.venv / "framehook-dev.sha256")
    if stamp.exists() and stamp.read_text().strip() == wheel.parent.name and _dev_package_installed(target):
        return
    done = target.run([target.venv_python, "-m", "pip", "install", "--quiet", "--no-deps", "--force-reinstall",
                       str(wheel)], capture=True)
    if done.returncode != 0:
        raise RuntimeError(f"installing {wheel.name} failed:\n{done.stdout[-3000:]}")
    stamp.write_text(wheel.parent.name + "\n")


def _dev_package_installed(target: Target) -> bool:
    """Whether the venv's copy of this package has this checkout's files (the stamp alone
    is not enough: a `pip install` by hand or by another run may have replaced the copy)."""
    source = DEV_PACKAGE / "framehook_dev"
    wanted = {path.relative_to(source): path.read_bytes() for path in source.rglob("*.py")}
    for installed in host_path(target, target.venv / "lib").glob("python*/site-packages/framehook_dev"):
        copies = {path.relative_to(installed): path for path in installed.rglob("*.py")}
        return copies.keys() == wanted.keys() and all(
            copies[name].read_bytes() == content for name, content in wanted.items())
    return False


def probe(target: Target, result: Result) -> None:
    done = target.run([target.venv_python, "-c", PROBE], capture=True)
    if done.returncode == 0:
        info = json.loads(done.stdout.strip().splitlines()[-1])
        result.version, result.gil = info["version"], info["gil"]
        result.debug = "debug" if info["debug"] else "release"


def run_pytest(target: Target, result: Result, pytest_args: Sequence[str]) -> None:
    report = REPO / "target" / "matrix" / target.name / "junit.xml"
    report.unlink(missing_ok=True)
    log(f"{target.name}: pytest")
    target.run(
        [target.venv_python, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rs",
         f"--junitxml={report}", *pytest_args],
        # The sid root starts from a clean environment: carry the tests' own settings in.
        extra_env={"FRAMEHOOK_EXPECT_PYTHON": target.name, "FRAMEHOOK_SUITES_DIR": str(BUILD_DIR / "suites"),
                   **{k: v for k, v in os.environ.items() if k.startswith("FRAMEHOOK_HYPOTHESIS_")}},
    )
    if not report.exists():
        raise RuntimeError("pytest produced no report (it crashed or could not start)")
    suites = ElementTree.parse(report).getroot()
    suites = [suites] if suites.tag == "testsuite" else list(suites)
    for suite in suites:
        total = int(suite.get("tests", 0))
        failed = int(suite.get("failures", 0)) + int(suite.get("errors", 0))
        skipped = int(suite.get("skipped", 0))
        result.failed += failed
        result.skipped += skipped
        result.passed += total - failed - skipped


def prepare_suites(target: Target) -> None:
    """The third-party packages tests/test_sot_suites.py runs (framehook_dev.sot_suites;
    installed once per manifest, cached)."""
    from . import sot_suites  # sot_suites uses this module

    sot_suites.prepare_for_tests(target)


def run_interpreter(name: str, pytest_args: Sequence[str]) -> Result:
    result = Result(name)
    started = time.monotonic()
    try:
        target = resolve(name)
        ensure_venv(target)
        probe(target, result)
        build_and_install(target)
        prepare_suites(target)
        run_pytest(target, result, pytest_args)
    except (provision.ProvisionError, RuntimeError, OSError) as error:
        result.error = str(error)
        log(f"{name}: ERROR: {error}")
    result.seconds = time.monotonic() - started
    return result


def run_cargo_test() -> Result:
    result = Result("cargo test", version="host", gil="-", debug="-")
    started = time.monotonic()
    log("cargo test")
    python = str(provision.pyenv_python("3.12"))
    libdir = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_config_var('LIBDIR'))"],
                            text=True, capture_output=True, check=True).stdout.strip()
    # The test binary links libpython, which is not on the loader's default path.
    env = dict(os.environ, CARGO_TARGET_DIR=str(TARGETS / "cargo-test"),
               PYO3_PYTHON=python,
               LD_LIBRARY_PATH=os.pathsep.join(filter(None, [libdir, os.environ.get("LD_LIBRARY_PATH")])))
    done = subprocess.run(["cargo", "test", "--workspace", "--quiet"], cwd=REPO, env=env, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    print(done.stdout, flush=True)
    for line in done.stdout.splitlines():
        if line.startswith("test result:"):
            words = line.replace(";", "").split()
            counts = {words[i + 1]: int(words[i]) for i in range(len(words) - 1) if words[i].isdigit()}
            result.passed += counts.get("passed", 0)
            result.failed += counts.get("failed", 0)
            result.skipped += counts.get("ignored", 0)
    if done.returncode != 0 and result.failed == 0:
        result.error = "cargo test failed to build or run"
    result.seconds = time.monotonic() - started
    return result


def summary(results: list[Result]) -> int:
    headers = ["interpreter", "GIL", "build", "passed", "failed", "skipped", "time", "sys.version"]
    rows = []
    for r in results:
        status = [str(r.passed), str(r.failed), str(r.skipped)] if r.error is None else ["-", "ERROR", "-"]
        rows.append([r.name, r.gil, r.debug, *status, f"{r.seconds:.0f}s", r.version])
    widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(headers)]
    line = lambda cells: "  ".join(c.ljust(w) for c, w in zip(cells, widths))  # noqa: E731
    print()
    print(line(headers))
    print(line(["-" * w for w in widths]))
    for row in rows:
        print(line(row))
    checks = [r for r in results if r.build_check]
    if checks:
        print()
    for r in checks:
        print(f"{r.name}: build check only (no interpreter): {'passed' if r.failed == 0 and not r.error else 'failed'}")
    for r in results:
        if r.error:
            print(f"\n{r.name}: {r.error.splitlines()[0] if r.error else ''}")
    passed = sum(r.passed for r in results)
    failed = sum(r.failed for r in results) + sum(1 for r in results if r.error)
    skipped = sum(r.skipped for r in results)
    closing = f"{passed} passed, {failed} failed"
    if skipped:
        closing += f", {skipped} skipped"
    print()
    print(closing)
    return 1 if failed else 0


def run_lint() -> list[Result]:
    """The lint steps (framehook_dev.lint), each one row of the summary and one test."""
    from . import lint  # lint uses this module

    results = []
    for outcome in lint.run():
        result = Result(f"lint: {outcome.name}", version="host", gil="-", debug="-",
                        passed=int(outcome.ok), failed=int(not outcome.ok))
        result.seconds = outcome.seconds
        results.append(result)
    return results


def chosen_interpreters(parser: argparse.ArgumentParser, only: Optional[str],
                        known: Sequence[str] = tuple(INTERPRETERS)) -> list[str]:
    """The interpreters an ``--only`` option names (all of ``known`` without one); an unknown
    name is the parser's error."""
    names = list(known) if not only else only.split(",")
    unknown = [n for n in names if n not in known]
    if unknown:
        parser.error(f"unknown interpreter(s) {unknown}; choose from {list(known)}")
    return names


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="comma-separated interpreters, e.g. 3.12 or 3.13t,3.14d "
                                       f"({', '.join(BUILD_CHECKS)}: build check only)")
    parser.add_argument("--no-cargo", action="store_true", help="skip cargo test")
    lint = parser.add_mutually_exclusive_group()
    lint.add_argument("--lint", action="store_true", default=None,
                      help="run the lint steps first (the default without --only)")
    lint.add_argument("--no-lint", dest="lint", action="store_false", help="skip the lint steps")
    parser.add_argument("pytest_args", nargs="*", help="extra arguments for pytest")
    args = parser.parse_args(argv)
    names = chosen_interpreters(parser, args.only, INTERPRETERS + BUILD_CHECKS)
    from . import build_check  # build_check uses this module

    started = time.monotonic()
    results = run_lint() if (not args.only if args.lint is None else args.lint) else []
    results += [build_check.run(name) if name in BUILD_CHECKS else run_interpreter(name, args.pytest_args)
                for name in names]
    if not args.no_cargo and not args.only:
        results.append(run_cargo_test())
    status = summary(results)
    log(f"total wall time {time.monotonic() - started:.0f}s")
    return status


if __name__ == "__main__":
    # Run the package's copy of this module, the one framehook_dev.lint imports.
    from framehook_dev.matrix import main as package_main

    sys.exit(package_main())
