"""Provision the CPython interpreters framehook is tested on that the machine lacks.

Where each interpreter comes from:

* 3.9 .. 3.13: pyenv builds already on the machine image (``pyenv_python``).
* 3.13t (free-threaded): built from the ``python3.13`` source package of Debian's
  stable suite (trixie), fetched with ``apt-get source`` through a private apt state,
  configured with ``--disable-gil --enable-shared`` and installed to
  ``CACHE/python3.13t`` (``ensure_python313t``).
* 3.14 and 3.15 with their debug builds ``python3.14d``/``python3.15d``: Debian sid
  binary packages. They need a newer glibc than the bookworm host, so they live in a
  sid root made with ``debootstrap`` at ``CACHE/sid-root`` (``ensure_sid_root``);
  ``sid_command`` turns an argv into a host argv that runs it in there, in a private
  mount namespace. A root made before a version joined ``SID_VERSIONS`` gets its
  packages added in place on the next call (the stamp lists what it holds).

Everything is cached outside the repository, under ``CACHE`` (``$FRAMEHOOK_CACHE`` or
``~/.cache/framehook``). Each product is built in a temporary directory next to its
final place and renamed into place once complete; a stamp file inside marks it
finished, so an interrupted run leaves nothing that a later run mistakes for a good
one. A later run finds the stamp and returns at once.

The Debian mirror is never named here: it is read from the machine's own apt
configuration, and the extra suites (trixie sources, sid) are written to a private apt
state under ``CACHE/apt`` instead of the system's apt configuration.

Standard library only, Python 3.9+. Needs root (apt-get, debootstrap, mount).
Run as ``python -m framehook_dev.provision [all|313t|sid]``.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

__all__ = [
    "CACHE",
    "ProvisionError",
    "pyenv_python",
    "ensure_python313t",
    "ensure_sid_root",
    "sid_command",
]

CACHE = Path(os.environ.get("FRAMEHOOK_CACHE", Path.home() / ".cache" / "framehook"))

# Stamp written inside a product directory once it is complete and checked.
STAMP = ".framehook-provisioned"

# The Debian suite whose python3.13 source package we build (stable at the time of
# writing; named explicitly so a later stable without python3.13 does not break us).
PY313_SUITE = "trixie"
# The CPython versions taken from sid, each with its debug build, headers, venv and tests.
SID_VERSIONS = ("3.14", "3.15")
# Packages installed inside the sid root.
SID_PACKAGES = [
    *(f"{pkg}{v}{suffix}" for v in SID_VERSIONS
      for pkg, suffix in (("python", ""), ("python", "-dev"), ("python", "-dbg"), ("python", "-venv"),
                          ("libpython", "-testsuite"))),
    "gcc",
    "libc6-dev",
    "ca-certificates",
]
# Host packages needed to build 3.13t, with the modules they give.
PY313T_BUILD_PACKAGES = [
    "gcc",
    "make",
    "pkg-config",
    "xz-utils",
    "libssl-dev",  # ssl, hashlib's OpenSSL backends
    "zlib1g-dev",  # zlib (pip needs it)
    "libffi-dev",  # ctypes
    "libsqlite3-dev",  # sqlite3 (optional)
    "libbz2-dev",  # bz2 (optional)
    "liblzma-dev",  # lzma (optional)
]
# Modules the 3.13t build must have, and which -dev package provides each.
PY313T_REQUIRED_MODULES = {
    "ssl": "libssl-dev",
    "_hashlib": "libssl-dev",
    "zlib": "zlib1g-dev",
    "_ctypes": "libffi-dev",
    "ctypes": "libffi-dev",
    "pyexpat": "(bundled expat)",
    "_json": "(core)",
    "venv": "(stdlib)",
    "ensurepip": "(stdlib)",
}
PY313T_OPTIONAL_MODULES = {"_sqlite3": "libsqlite3-dev", "_bz2": "libbz2-dev", "_lzma": "liblzma-dev"}

# Host files copied into the sid root (same path inside) so that the network, TLS and
# pip behave there as on the host. Missing host files are skipped.
SID_HOST_FILES = [
    "/etc/resolv.conf",
    "/etc/hosts",
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pip.conf",
]
# Host environment variables passed into the sid root when set (besides those
# sid_command always sets); the test profiles (FRAMEHOOK_FULL, FRAMEHOOK_HYPOTHESIS_PROFILE)
# so that they reach 3.14 and 3.14d as they reach the other interpreters.
SID_PASSTHROUGH_ENV = ("TERM", "CI", "NO_COLOR", "RUST_BACKTRACE", "RUST_LOG", "SOURCE_DATE_EPOCH",
                       "FRAMEHOOK_FULL", "FRAMEHOOK_HYPOTHESIS_PROFILE")
SID_PASSTHROUGH_PREFIXES = ("PIP_", "http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY")

# Our mirrors may serve a frozen snapshot of the archive whose Release files are past
# their Valid-Until date; signatures are still checked.
_APT_SNAPSHOT_OPTS = ("-o", "Acquire::Check-Valid-Until=false")

HOST_KEYRING = Path("/usr/share/keyrings/debian-archive-keyring.gpg")


class ProvisionError(Exception):
    """An interpreter (or something it needs) could not be had."""


# --------------------------------------------------------------------------- helpers


def _cache() -> Path:
    # Read the module global at call time so a caller may repoint provision.CACHE.
    return Path(CACHE).expanduser().absolute()


_print_lock = threading.Lock()


def _log(msg: str) -> None:
    with _print_lock:
        print(f"[provision] {msg}", file=sys.stderr, flush=True)


def _tail(path: Path, lines: int = 40) -> str:
    try:
        data = path.read_text(errors="replace").splitlines()
    except OSError:
        return "(no log)"
    return "\n".join(data[-lines:])


def _run(
    argv: Sequence[object],
    *,
    what: str,
    log: Path,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    check: bool = True,
    show_tail: bool = True,
) -> subprocess.CompletedProcess:
    """Run argv with its output appended to ``log``; on failure show the log's tail."""
    argv = [str(a) for a in argv]
    log.parent.mkdir(parents=True, exist_ok=True)
    full_env = None
    if env is not None:
        full_env = dict(os.environ)
        full_env.update(env)
    with open(log, "ab") as fh:
        fh.write(f"\n$ {shlex.join(argv)}\n".encode())
        fh.flush()
        try:
            proc = subprocess.run(
                argv, stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=full_env, cwd=cwd
            )
        except FileNotFoundError as exc:
            raise ProvisionError(f"{what}: command not found: {argv[0]} ({exc})") from exc
    if check and proc.returncode != 0:
        tail = _tail(log)
        shown = shlex.join(argv)
        if len(shown) > 400:
            shown = shown[:400] + " ..."
        if show_tail:
            with _print_lock:
                print(
                    f"[provision] FAILED: {what} (exit {proc.returncode})\n"
                    f"[provision] command: {shown}\n"
                    f"[provision] last lines of {log}:\n{tail}",
                    file=sys.stderr,
                    flush=True,
                )
        raise ProvisionError(
            f"{what} failed (exit {proc.returncode}); command: {shown}; full log: {log}\n"
            + "\n".join(tail.splitlines()[-12:])
        )
    return proc


def _logfile(name: str) -> Path:
    d = _cache() / "logs"
    d.mkdir(parents=True, exist_ok=True)
    return d / f"{name}.log"


@contextlib.contextmanager
def _lock(name: str) -> Iterator[None]:
    """Serialize provisioning of one product across processes (and threads)."""
    cache = _cache()
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / f".{name}.lock", "w") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            _log(f"waiting for another provisioning run to finish with {name}")
            fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _is_complete(path: Path) -> bool:
    return (path / STAMP).is_file()


def _write_stamp(path: Path, info: dict) -> None:
    tmp = path / (STAMP + ".tmp")
    tmp.write_text(json.dumps(info, indent=2, sort_keys=True) + "\n")
    os.replace(tmp, path / STAMP)


def _mounts_under(path: Path) -> list[str]:
    """Mount points (in our mount namespace) at or below ``path``."""
    prefix = str(path)
    found = []
    try:
        with open("/proc/self/mountinfo") as fh:
            for line in fh:
                mnt = line.split()[4]
                mnt = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), mnt)
                if mnt == prefix or mnt.startswith(prefix + "/"):
                    found.append(mnt)
    except OSError:
        pass
    return found


def _safe_rmtree(path: Path) -> None:
    """Remove a directory tree, never descending into something mounted inside it."""
    if not (path.exists() or path.is_symlink()):
        return
    mounts = _mounts_under(path)
    if mounts:
        # Only a run that did not use a private mount namespace could leave these.
        for mnt in sorted(mounts, key=len, reverse=True):
            subprocess.run(
                ["umount", "--recursive", "--lazy", mnt], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
            )
        mounts = _mounts_under(path)
        if mounts:
            raise ProvisionError(f"refusing to delete {path}: still mounted inside it: {', '.join(mounts)}")
    if path.is_symlink() or not path.is_dir():
        path.unlink()
    else:
        shutil.rmtree(path)  # does not follow symlinks (the root's absolute links stay harmless)


def _discard_incomplete(path: Path, temp_glob: str) -> None:
    """Remove a half-finished product and stale temp dirs of earlier runs (caller holds the lock)."""
    if (path.exists() or path.is_symlink()) and not _is_complete(path):
        _log(f"removing half-finished {path} left by an earlier run")
        _safe_rmtree(path)
    for stale in path.parent.glob(temp_glob):
        _log(f"removing stale temporary {stale}")
        _safe_rmtree(stale)


def _nproc() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover
        return os.cpu_count() or 1


def _require_root(what: str) -> None:
    if os.geteuid() != 0:
        raise ProvisionError(f"{what} needs root (apt-get, debootstrap, mount); running as uid {os.geteuid()}")


# ---------------------------------------------------------------- apt: host and private


_host_apt_lock = threading.Lock()


def _host_missing(packages: Sequence[str]) -> list[str]:
    proc = subprocess.run(
        ["dpkg-query", "-W", "-f", "${Package}\t${db:Status-Abbrev}\n", *packages],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    installed = set()
    for line in proc.stdout.splitlines():
        name, _, status = line.partition("\t")
        if status.startswith("ii"):
            installed.add(name.split(":")[0])
    return [p for p in packages if p not in installed]


def _ensure_host_packages(packages: Sequence[str], why: str) -> None:
    """apt-get install whichever of ``packages`` the host lacks."""
    missing = _host_missing(packages)
    if not missing:
        return
    _require_root(f"installing {' '.join(missing)}")
    log = _logfile("host-apt")
    env = {"DEBIAN_FRONTEND": "noninteractive"}
    install = ["apt-get", "install", "-y", "-q", "--no-install-recommends", "-o", "DPkg::Lock::Timeout=600", *missing]
    with _host_apt_lock, _lock("host-apt"):
        missing = _host_missing(packages)
        if not missing:
            return
        _log(f"installing host packages for {why}: {' '.join(missing)}")
        if _run(install, what="apt-get install", log=log, env=env, check=False).returncode != 0:
            _log("apt-get install failed; running apt-get update and retrying")
            _run(["apt-get", "update", "-q", "-o", "DPkg::Lock::Timeout=600"], what="apt-get update", log=log, env=env)
            _run(install, what=f"apt-get install {' '.join(missing)} (needed for {why})", log=log, env=env)
    still = _host_missing(packages)
    if still:
        raise ProvisionError(f"host packages still missing after apt-get install: {' '.join(still)} (needed for {why})")


def _parse_deb822(text: str) -> list[dict[str, str]]:
    stanzas: list[dict[str, str]] = []
    cur: dict[str, str] = {}
    key = None
    for raw in text.splitlines():
        if raw.startswith("#"):
            continue
        if not raw.strip():
            if cur:
                stanzas.append(cur)
            cur, key = {}, None
            continue
        if raw[0] in " \t" and key is not None:
            cur[key] += " " + raw.strip()
            continue
        k, sep, v = raw.partition(":")
        if sep:
            key = k.strip().lower()
            cur[key] = v.strip()
    if cur:
        stanzas.append(cur)
    return stanzas


def _host_codename() -> str:
    try:
        for line in Path("/etc/os-release").read_text().splitlines():
            if line.startswith("VERSION_CODENAME="):
                return line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    return ""


def _debian_mirror() -> str:
    """The Debian archive URI the machine's own apt uses (never the security archive)."""
    override = os.environ.get("FRAMEHOOK_DEBIAN_MIRROR")
    if override:
        return override.rstrip("/")
    codename = _host_codename()
    wanted = {codename, f"{codename}-updates", f"{codename}-backports"} if codename else set()
    candidates: list[tuple[int, str]] = []  # (rank, uri): rank 0 = the host's own suite

    def consider(uri: str, suites: Sequence[str]) -> None:
        if not uri.startswith(("http://", "https://")):
            return
        main_suites = [s for s in suites if not s.endswith("-security")]
        if not main_suites:
            return
        if codename and codename in main_suites:
            candidates.append((0, uri))
        elif wanted & set(main_suites):
            candidates.append((1, uri))

    tried = []
    for f in sorted(Path("/etc/apt/sources.list.d").glob("*.sources")):
        tried.append(str(f))
        try:
            stanzas = _parse_deb822(f.read_text())
        except OSError:
            continue
        for st in stanzas:
            if st.get("enabled", "yes").lower() == "no":
                continue
            if "deb" not in st.get("types", "").split() and "deb-src" not in st.get("types", "").split():
                continue
            uris = st.get("uris", "").split()
            if uris:
                consider(uris[0], st.get("suites", "").split())
    legacy = [Path("/etc/apt/sources.list"), *sorted(Path("/etc/apt/sources.list.d").glob("*.list"))]
    for f in legacy:
        if not f.is_file():
            continue
        tried.append(str(f))
        for line in f.read_text(errors="replace").splitlines():
            line = line.split("#", 1)[0].strip()
            if not line.startswith(("deb ", "deb-src ")):
                continue
            line = re.sub(r"\[[^]]*\]", " ", line)
            parts = line.split()
            if len(parts) >= 3:
                consider(parts[1], [parts[2]])
    if not candidates:
        raise ProvisionError(
            "cannot find the Debian mirror in the machine's apt configuration: no enabled deb entry for suite "
            f"{codename or '(unknown codename)'} (other than -security) in {', '.join(tried) or 'any sources file'}; "
            "set FRAMEHOOK_DEBIAN_MIRROR to the archive URI to override"
        )
    candidates.sort(key=lambda c: c[0])
    return candidates[0][1].rstrip("/")


def _private_apt(name: str, source_lines: Sequence[str]) -> list[str]:
    """An apt-get argv prefix using a private state dir under CACHE/apt/<name>.

    The system's sources, lists and package cache are left untouched.
    """
    d = _cache() / "apt" / name
    (d / "lists" / "partial").mkdir(parents=True, exist_ok=True)
    (d / "cache" / "archives" / "partial").mkdir(parents=True, exist_ok=True)
    sources = d / "sources.list"
    text = "".join(line + "\n" for line in source_lines)
    if not sources.is_file() or sources.read_text() != text:
        sources.write_text(text)
    return [
        "apt-get",
        "-q",
        "-o", f"Dir::State::Lists={d / 'lists'}",
        "-o", f"Dir::Etc::sourcelist={sources}",
        "-o", "Dir::Etc::sourceparts=-",
        "-o", f"Dir::Cache={d / 'cache'}",
        "-o", "Dir::Cache::pkgcache=",
        "-o", "Dir::Cache::srcpkgcache=",
        "-o", "APT::Sandbox::User=root",  # CACHE may be under /root, out of _apt's reach
        "-o", "Acquire::Languages=none",
        "-o", "APT::Get::List-Cleanup=true",
        *_APT_SNAPSHOT_OPTS,
    ]


def _host_keyring() -> Path:
    if not HOST_KEYRING.is_file():
        raise ProvisionError(
            f"the host's Debian archive keyring {HOST_KEYRING} is missing (install debian-archive-keyring)"
        )
    return HOST_KEYRING


# ------------------------------------------------------------------------- pyenv


def pyenv_python(version: str) -> Path:
    """The newest pyenv build of CPython ``version`` ("3.9".."3.13"), GIL-enabled.

    Looks in ``$PYENV_ROOT/versions`` (default ``~/.pyenv/versions``) for directories
    ``<version>.<patch>`` (pre-releases accepted after finals; free-threaded ``*t`` builds
    excluded) and returns ``bin/python<version>`` of the newest.
    """
    if not re.fullmatch(r"3\.\d+", version):
        raise ProvisionError(f"pyenv_python wants a version like '3.12', not {version!r}")
    versions = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv") / "versions"
    pattern = re.compile(re.escape(version) + r"\.(\d+)(?:(a|b|rc)(\d+))?")
    found = []
    for d in versions.glob(f"{version}.*"):
        m = pattern.fullmatch(d.name)
        if not m:
            continue  # e.g. 3.13.0t (free-threaded), 3.12-dev
        exe = d / "bin" / f"python{version}"
        if exe.is_file() and os.access(exe, os.X_OK):
            pre = (m.group(2), int(m.group(3))) if m.group(2) else ("z", 0)  # final sorts after a/b/rc
            found.append(((int(m.group(1)), pre), exe))
    if not found:
        present = sorted(p.name for p in versions.glob("*")) if versions.is_dir() else []
        raise ProvisionError(
            f"no pyenv build of CPython {version}: looked for {versions}/{version}.<patch>/bin/python{version} "
            f"(free-threaded *t builds excluded); present: {', '.join(present) or 'none'}"
        )
    found.sort()
    return found[-1][1]


# ------------------------------------------------------------------------ 3.13t


def _fetch_python313_source() -> Path:
    """Download trixie's python3.13 source package (verified by apt) and return its orig tarball."""
    dl = _cache() / "downloads" / f"python3.13-{PY313_SUITE}"
    dl.mkdir(parents=True, exist_ok=True)
    done = dl / ".complete"
    if done.is_file():
        tarball = dl / done.read_text().strip()
        if tarball.is_file():
            _log(f"python3.13 source already downloaded: {tarball.name}")
            return tarball
    mirror = _debian_mirror()
    keyring = _host_keyring()
    entry = f"deb-src [signed-by={keyring}] {mirror} {PY313_SUITE} main"
    apt = _private_apt(f"{PY313_SUITE}-src", [entry])
    log = _logfile("python3.13t-source")
    _log(f"fetching Debian {PY313_SUITE} source index (private apt state, mirror from apt config: {mirror})")
    _run(apt + ["update"], what=f"apt-get update for '{entry}'", log=log)
    _log(f"downloading the python3.13 source package from {PY313_SUITE} (apt-get source --download-only)")
    proc = _run(apt + ["source", "--download-only", "python3.13"], what="apt-get source", log=log, cwd=dl, check=False)
    if proc.returncode != 0:
        raise ProvisionError(
            f"cannot download Debian {PY313_SUITE}'s python3.13 source package: tried `apt-get source "
            f"--download-only python3.13` with '{entry}' (private apt state {_cache() / 'apt'}); see {log}:\n"
            + _tail(log, 12)
        )
    dscs = sorted(dl.glob("python3.13_*.dsc"), key=lambda p: p.stat().st_mtime)
    if not dscs:
        raise ProvisionError(f"apt-get source python3.13 left no .dsc in {dl}; see {log}")
    dsc = dscs[-1]
    # The orig tarball named by the newest .dsc (the pristine upstream Python-3.13.x tarball).
    names = re.findall(r"\s(python3\.13_[^\s]+\.orig\.tar\.\w+)\s*$", dsc.read_text(), re.M)
    tarballs = [dl / n for n in dict.fromkeys(names) if (dl / n).is_file()]
    if not tarballs:
        raise ProvisionError(f"no python3.13 orig tarball next to {dsc}; the source package layout changed?")
    done.write_text(tarballs[0].name + "\n")
    return tarballs[0]


_CHECK_313T = r"""
import importlib, json, sys, sysconfig, glob, os
req, opt = json.loads(sys.argv[1])
missing = []
for name in req:
    try:
        importlib.import_module(name)
    except Exception as exc:
        missing.append(f"{name} ({type(exc).__name__}: {exc})")
absent = []
for name in opt:
    try:
        importlib.import_module(name)
    except Exception:
        absent.append(name)
import ensurepip
wheels = glob.glob(os.path.join(os.path.dirname(ensurepip.__file__), "_bundled", "pip-*.whl"))
print(json.dumps({
    "version": sys.version,
    "gil_disabled_build": sysconfig.get_config_var("Py_GIL_DISABLED"),
    "gil_enabled_now": sys._is_gil_enabled(),
    "missing": missing,
    "optional_absent": absent,
    "pip_wheel": wheels[0] if wheels else None,
}))
"""


def ensure_python313t() -> Path:
    """Free-threaded CPython 3.13 at ``CACHE/python3.13t``; returns ``bin/python3.13t``.

    Built from Debian trixie's ``python3.13`` source package (its pristine upstream
    tarball; Debian's packaging patches are not needed for a private prefix), configured
    with ``--disable-gil --enable-shared`` and an rpath to its own ``lib`` so it runs
    without ``LD_LIBRARY_PATH``. No PGO/LTO, no static libpython, no ensurepip at install
    time (``python3.13t -m venv`` still installs pip from the bundled wheel).
    """
    prefix = _cache() / "python3.13t"
    exe = prefix / "bin" / "python3.13t"
    if _is_complete(prefix) and exe.is_file():
        return exe
    _require_root("building python3.13t")
    with _lock("python3.13t"):
        if _is_complete(prefix) and exe.is_file():
            return exe
        t0 = time.monotonic()
        _log(f"provisioning free-threaded CPython 3.13 into {prefix}")
        if _is_complete(prefix):  # stamped but its interpreter is gone: rebuild
            (prefix / STAMP).unlink()
        _discard_incomplete(prefix, ".python3.13t.build-*")
        _ensure_host_packages(PY313T_BUILD_PACKAGES, "building python3.13t")
        tarball = _fetch_python313_source()
        log = _logfile("python3.13t-build")
        log.write_text("")
        work = Path(tempfile.mkdtemp(prefix=".python3.13t.build-", dir=_cache()))
        try:
            _log(f"unpacking {tarball.name}")
            _run(["tar", "-xf", tarball, "-C", work], what=f"unpacking {tarball}", log=log)
            srcs = [p.parent for p in work.glob("*/configure")]
            if len(srcs) != 1:
                raise ProvisionError(f"{tarball} does not unpack to one source tree with a configure script")
            src = srcs[0]
            jobs = _nproc()
            config_env = {"LDFLAGS": f"-Wl,-rpath,{prefix / 'lib'}"}
            _log(f"configuring {src.name} (--disable-gil --enable-shared, no PGO/LTO)")
            _run(
                [
                    "./configure",
                    f"--prefix={prefix}",
                    "--disable-gil",
                    "--enable-shared",
                    "--without-static-libpython",
                    "--with-ensurepip=no",
                ],
                what="configure of python3.13t",
                log=log,
                env=config_env,
                cwd=src,
            )
            # `make install` byte-compiles the stdlib for optimization levels 0, 1 and 2;
            # only level 0 is used by our tests (the others get written lazily if ever needed).
            makefile = src / "Makefile"
            text = makefile.read_text()
            if "-o 0 -o 1 -o 2" in text:
                makefile.write_text(text.replace("-o 0 -o 1 -o 2", "-o 0"))
            _log(f"compiling with make -j{jobs} (about 2 minutes on 2 cores)")
            _run(["make", f"-j{jobs}"], what="make of python3.13t", log=log, cwd=src)
            stage = work / "stage"
            _log("installing into a staging directory")
            _run(["make", "install", f"DESTDIR={stage}"], what="make install of python3.13t", log=log, cwd=src)
            staged = stage / prefix.relative_to("/")
            if not (staged / "bin" / "python3.13t").is_file():
                raise ProvisionError(f"make install produced no bin/python3.13t under {staged}")
            os.rename(staged, prefix)  # same filesystem: atomic; the stamp comes after the checks
            _log("checking the build (ssl, zlib, ctypes, venv/ensurepip, GIL disabled)")
            proc = subprocess.run(
                [
                    str(exe), "-c", _CHECK_313T,
                    json.dumps([list(PY313T_REQUIRED_MODULES), list(PY313T_OPTIONAL_MODULES)]),
                ],
                capture_output=True,
                text=True,
                env={k: v for k, v in os.environ.items() if not k.startswith("PYTHON")},
            )
            if proc.returncode != 0:
                raise ProvisionError(f"the built {exe} does not run: {proc.stderr.strip()[-2000:]}")
            facts = json.loads(proc.stdout)
            problems = []
            if facts["missing"]:
                problems.append(
                    "modules missing: "
                    + "; ".join(
                        f"{m} (needs {PY313T_REQUIRED_MODULES.get(m.split()[0], '?')})" for m in facts["missing"]
                    )
                )
            if facts["gil_disabled_build"] != 1:
                problems.append(f"Py_GIL_DISABLED is {facts['gil_disabled_build']!r}, not 1")
            if not facts["pip_wheel"]:
                problems.append("ensurepip has no bundled pip wheel (the source tarball was stripped?)")
            if problems:
                raise ProvisionError(f"python3.13t built from {tarball.name} is unusable: " + "; ".join(problems))
            if facts["optional_absent"]:
                _log(f"note: optional modules not built: {', '.join(facts['optional_absent'])}")
            _write_stamp(prefix, {"version": facts["version"], "source": tarball.name, "built": time.ctime()})
            _log(f"python3.13t ready in {time.monotonic() - t0:.0f}s: {facts['version'].splitlines()[0]}")
            return exe
        except BaseException:
            if prefix.exists() and not _is_complete(prefix):
                _safe_rmtree(prefix)
            raise
        finally:
            _safe_rmtree(work)


# -------------------------------------------------------------------------- sid root


def _copy_host_files(root: Path) -> None:
    """Copy resolv.conf, hosts, the CA bundle and pip.conf from the host into the root."""
    for name in SID_HOST_FILES:
        src = Path(name)
        if not src.is_file():
            continue
        dst = root / name.lstrip("/")
        try:
            if not dst.is_symlink() and dst.is_file() and dst.read_bytes() == src.read_bytes():
                continue
        except OSError:
            pass
        dst.parent.mkdir(parents=True, exist_ok=True)
        # Write a temporary file and rename it over the old one: atomic for concurrent
        # callers, and never writes through a symlink (an absolute link inside the root
        # would point at the host's own file).
        tmp = dst.parent / f".{dst.name}.framehook-{os.getpid()}-{threading.get_ident()}"
        shutil.copyfile(src, tmp)
        os.chmod(tmp, 0o644)
        os.replace(tmp, dst)


def _fetch_newer_keyring() -> Path:
    """Debian's keyring package from the stable suite, verified by the host's keyring.

    The stable suite's debian-archive-keyring gains the keys that sign sid before the
    older host keyring does; apt checks its Release signature with the host keyring and
    the .deb's hash against the signed index, so the chain of trust stays intact.
    """
    dest = _cache() / "keyring"
    out = dest / "debian-archive-keyring.gpg"
    mirror = _debian_mirror()
    keyring = _host_keyring()
    suites = f"{PY313_SUITE} {PY313_SUITE}-updates"
    entries = [f"deb [signed-by={keyring}] {mirror} {s} main" for s in suites.split()]
    apt = _private_apt(f"{PY313_SUITE}-bin", entries)
    log = _logfile("sid-keyring")
    _log(f"fetching a newer debian-archive-keyring from {PY313_SUITE} (verified with the host keyring)")
    _run(apt + ["update"], what=f"apt-get update for {suites} (checked with {keyring})", log=log, show_tail=False)
    work = Path(tempfile.mkdtemp(prefix=".keyring-", dir=_cache()))
    try:
        _run(
            apt + ["download", "debian-archive-keyring"],
            what="apt-get download debian-archive-keyring",
            log=log,
            cwd=work,
            show_tail=False,
        )
        debs = list(work.glob("debian-archive-keyring_*.deb"))
        if not debs:
            raise ProvisionError(f"apt-get download debian-archive-keyring gave no .deb; see {log}")
        _run(["dpkg-deb", "-x", debs[0], work / "x"], what="unpacking debian-archive-keyring", log=log)
        got = work / "x" / "usr" / "share" / "keyrings" / "debian-archive-keyring.gpg"
        if not got.is_file():
            # Newer packages ship only the per-release keys in a directory.
            parts = sorted((work / "x" / "usr" / "share" / "keyrings").glob("debian-archive-*.gpg")) + sorted(
                (work / "x" / "etc" / "apt" / "trusted.gpg.d").glob("debian-archive-*.*")
            )
            parts = [p for p in parts if "removed" not in p.name and "security" not in p.name]
            if not parts:
                raise ProvisionError(f"{debs[0].name} holds no keyring file")
            got = work / "combined.gpg"
            got.write_bytes(b"".join(p.read_bytes() for p in parts))
        dest.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(got, out)
        return out
    finally:
        _safe_rmtree(work)


_SIGNATURE_TROUBLE = re.compile(
    r"signed by unknown key|Invalid Release signature|NO_PUBKEY|BADSIG|EXPKEYSIG|REVKEYSIG|not signed|missing key", re.I
)


def _fail(what: str, log: Path) -> None:
    """Show the tail of ``log`` and raise ProvisionError for a step that already ran."""
    tail = _tail(log)
    with _print_lock:
        print(f"[provision] FAILED: {what}\n[provision] last lines of {log}:\n{tail}", file=sys.stderr, flush=True)
    raise ProvisionError(f"{what} failed; full log: {log}\n" + "\n".join(tail.splitlines()[-12:]))


def _debootstrap(target: Path, mirror: str) -> str:
    """debootstrap minimal sid into ``target``; returns how the signature was checked."""
    log = _logfile("sid-debootstrap")
    debs = _cache() / "debs" / "sid"
    debs.mkdir(parents=True, exist_ok=True)

    def attempt(gpg_args: list[str]) -> subprocess.CompletedProcess:
        if target.exists():
            _safe_rmtree(target)
        target.mkdir(parents=True)
        # In a private mount namespace: whatever debootstrap mounts (proc, sys) vanishes with it.
        argv = [
            "unshare", "--mount", "--propagation", "private", "--",
            "debootstrap", "--variant=minbase", "--components=main", f"--cache-dir={debs}",
            *gpg_args, "sid", target, mirror,
        ]
        return _run(argv, what="debootstrap sid", log=log, check=False)

    # 1. The host's keyring (holds the keys that sign sid today).
    _log(f"debootstrap sid (minbase) from {mirror}, checking signatures with {HOST_KEYRING}")
    proc = attempt([f"--keyring={_host_keyring()}"])
    if proc.returncode == 0:
        return f"verified with {HOST_KEYRING}"
    if not _SIGNATURE_TROUBLE.search(_tail(log, 30)):
        _fail("debootstrap sid", log)
    # 2. A newer keyring from the stable suite, itself verified with the host keyring.
    _log("the host keyring cannot verify sid's Release file; trying a newer keyring")
    newer = None
    try:
        newer = _fetch_newer_keyring()
    except ProvisionError as exc:
        _log(f"could not get a newer keyring: {str(exc).splitlines()[0]}")
    if newer is not None:
        proc = attempt([f"--keyring={newer}"])
        if proc.returncode == 0:
            return f"verified with {PY313_SUITE}'s debian-archive-keyring"
        if not _SIGNATURE_TROUBLE.search(_tail(log, 30)):
            _fail("debootstrap sid (with the newer keyring)", log)
    # 3. Last resort, documented: no keyring we can reach verifies sid's Release file, and
    #    this root is a disposable test sandbox holding nothing secret. debootstrap still
    #    checks each .deb against the (unverified) Release/Packages hashes, and apt inside
    #    the root then verifies every later download with sid's own debian-archive-keyring.
    _log("WARNING: no available keyring verifies sid's Release file; using debootstrap --no-check-gpg")
    proc = attempt(["--no-check-gpg"])
    if proc.returncode != 0:
        _fail("debootstrap sid (tried: host keyring, newer keyring, --no-check-gpg)", log)
    return "NOT verified (--no-check-gpg; see framehook_dev.provision)"


_CHECK_SID = r"""
import json, os, subprocess, sys
facts = {"missing": [], "versions": {}}
for v in sys.argv[1:]:
    need = {
        f"python{v}-dev header internal/pycore_interpframe.h": f"/usr/include/python{v}/internal/pycore_interpframe.h",
        f"python{v}-dev Python.h": f"/usr/include/python{v}/Python.h",
        f"libpython{v}-testsuite /usr/lib/python{v}/test": f"/usr/lib/python{v}/test/regrtest.py",
        f"python{v}-venv ensurepip": f"/usr/lib/python{v}/ensurepip/__init__.py",
    }
    facts["missing"] += [k for k, p in need.items() if not os.path.exists(p)]
    for exe in (f"python{v}", f"python{v}d"):
        probe = "import sys; print(sys.version); print(hasattr(sys, 'gettotalrefcount'))"
        try:
            out = subprocess.run([exe, "-c", probe], capture_output=True, text=True, check=True).stdout.splitlines()
        except Exception as exc:
            facts["missing"].append(f"{exe} ({exc})")
            continue
        if exe.endswith("d") and out[1] != "True":
            facts["missing"].append(f"{exe} without sys.gettotalrefcount (not a debug build)")
        facts["versions"][exe] = out[0]
for k, p in {"gcc": "/usr/bin/gcc", "ca-certificates bundle": "/etc/ssl/certs/ca-certificates.crt"}.items():
    if not os.path.exists(p):
        facts["missing"].append(k)
print(json.dumps(facts))
"""


def _check_sid_root(root: Path) -> dict:
    """Runs ``_CHECK_SID`` inside ``root``: each sid version's interpreters, headers and tests."""
    out = subprocess.run(
        _chroot_argv(root, [f"python{SID_VERSIONS[0]}", "-c", _CHECK_SID, *SID_VERSIONS], binds=[], env={},
                     cwd=Path("/")),
        capture_output=True,
        text=True,
    )
    if out.returncode != 0:
        raise ProvisionError(f"the sid root's python3 does not run: {out.stderr.strip()[-2000:]}")
    facts = json.loads(out.stdout)
    if facts["missing"]:
        raise ProvisionError("the sid root lacks: " + "; ".join(facts["missing"]))
    return facts


def _sid_packages_missing(root: Path) -> list[str]:
    """``SID_PACKAGES`` a complete root's stamp does not list (it was made before they joined)."""
    try:
        held = json.loads((root / STAMP).read_text()).get("packages")
    except (OSError, ValueError):
        held = None
    if held is None:  # made before the stamp listed packages: it holds the 3.14 set
        held = [p for p in SID_PACKAGES if "3.14" in p or "python3." not in p]
    return [p for p in SID_PACKAGES if p not in held]


def _install_in_sid_root(root: Path, packages: list[str], mirror: str) -> None:
    log = _logfile("sid-apt")
    _log("apt-get update inside the sid root")
    _apt_in_root(root, ["apt-get", "update", "-q", *_APT_SNAPSHOT_OPTS], "apt-get update in the sid root", log)
    _log(f"installing inside the sid root: {' '.join(packages)}")
    proc = _apt_in_root(
        root, ["apt-get", "install", "-y", "-q", "--no-install-recommends", *_APT_SNAPSHOT_OPTS, *packages],
        "apt-get install in the sid root", log, check=False,
    )
    if proc.returncode != 0:
        raise ProvisionError(
            f"cannot install {' '.join(packages)} from sid ({mirror}) inside the debootstrap root: "
            f"apt-get install failed; see {log}:\n" + _tail(log, 15)
        )
    _apt_in_root(root, ["apt-get", "clean"], "apt-get clean in the sid root", log)


def _stamp_sid_root(root: Path, facts: dict, mirror: str, trust: str) -> None:
    _write_stamp(root, {**facts["versions"], "packages": SID_PACKAGES, "mirror": mirror, "signature": trust,
                        "built": time.ctime()})


def _complete_sid_root(root: Path) -> None:
    """Adds to an existing root the packages of versions that joined ``SID_VERSIONS`` after it was made."""
    if not _sid_packages_missing(root):
        return
    _require_root("adding packages to the sid root")
    with _lock("sid-root"):
        missing = _sid_packages_missing(root)
        if not missing:
            return
        stamp = json.loads((root / STAMP).read_text())
        _install_in_sid_root(root, missing, stamp.get("mirror", "?"))
        _copy_host_files(root)
        _stamp_sid_root(root, _check_sid_root(root), stamp.get("mirror", "?"), stamp.get("signature", "?"))


def _apt_in_root(
    root: Path, argv: list[str], what: str, log: Path, *, check: bool = True
) -> subprocess.CompletedProcess:
    """Runs an apt command (non-interactive) inside a Debian root, logging to ``log``."""
    env = {"DEBIAN_FRONTEND": "noninteractive"}
    return _run(_chroot_argv(root, argv, binds=[], env=env, cwd=Path("/")), what=what, log=log, check=check)


def ensure_sid_root() -> Path:
    """A Debian sid root at ``CACHE/sid-root`` with each of ``SID_VERSIONS`` (+ dev, dbg, venv,
    testsuite) and gcc.

    Made with debootstrap (minbase), then apt-get inside the root installs
    ``SID_PACKAGES``. The host's resolv.conf, CA bundle and pip.conf are copied in (again
    on every call, so they follow the host), which pip inside needs for TLS.
    """
    cache = _cache()
    root = cache / "sid-root"
    if _is_complete(root):
        _complete_sid_root(root)
        _copy_host_files(root)
        return root
    _require_root("making the sid root")
    with _lock("sid-root"):
        if _is_complete(root):
            _copy_host_files(root)
            return root
        t0 = time.monotonic()
        _log(f"provisioning a Debian sid root at {root}")
        _discard_incomplete(root, ".sid-root.tmp-*")
        _ensure_host_packages(["debootstrap"], "making the sid root")
        mirror = _debian_mirror()
        tmp = Path(tempfile.mkdtemp(prefix=".sid-root.tmp-", dir=cache))
        try:
            trust = _debootstrap(tmp, mirror)
            _copy_host_files(tmp)
            conf = tmp / "etc" / "apt" / "apt.conf.d" / "99framehook"
            conf.write_text(
                "// framehook: the mirror may serve a frozen snapshot past its Valid-Until date.\n"
                'Acquire::Check-Valid-Until "false";\n'
                'APT::Install-Recommends "false";\n'
            )
            _install_in_sid_root(tmp, SID_PACKAGES, mirror)
            _copy_host_files(tmp)  # after ca-certificates regenerated its bundle
            (tmp / "tmp").chmod(0o1777)
            _log(f"checking the sid root (Python {', '.join(SID_VERSIONS)} and their debug builds, headers, tests)")
            facts = _check_sid_root(tmp)
            _stamp_sid_root(tmp, facts, mirror, trust)
            os.rename(tmp, root)
            _log(f"sid root ready in {time.monotonic() - t0:.0f}s: {', '.join(sorted(facts['versions']))}")
            return root
        finally:
            if tmp.exists():
                _safe_rmtree(tmp)


def ensure_valgrind(in_sid: bool) -> None:
    """valgrind on the host, or inside the sid root (``bench.py --instructions`` runs
    callgrind where the interpreter runs). Installed on first need, kept after."""
    if not in_sid:
        _ensure_host_packages(["valgrind"], "counting instructions with callgrind")
        return
    root = ensure_sid_root()
    present = ["dpkg-query", "-W", "-f", "${db:Status-Abbrev}", "valgrind"]

    def installed() -> bool:
        out = subprocess.run(_chroot_argv(root, present, binds=[], env={}, cwd=Path("/")),
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        return out.returncode == 0 and out.stdout.startswith("ii")

    if installed():
        return
    _require_root("installing valgrind in the sid root")
    log = _logfile("sid-apt")
    with _lock("sid-root"):
        if installed():
            return
        _log("installing valgrind inside the sid root")
        for argv, what in (
            (["apt-get", "update", "-q", *_APT_SNAPSHOT_OPTS], "apt-get update in the sid root"),
            (["apt-get", "install", "-y", "-q", "--no-install-recommends", *_APT_SNAPSHOT_OPTS, "valgrind"],
             "apt-get install valgrind in the sid root"),
            (["apt-get", "clean"], "apt-get clean in the sid root"),
        ):
            _apt_in_root(root, argv, what, log)
    if not installed():
        raise ProvisionError(f"valgrind still missing in the sid root after apt-get install; see {log}")


def ensure_llvm_profdata() -> Path:
    """The ``llvm-profdata`` of the LLVM that this machine's rustc is built on (a profile
    merged by another LLVM may not read back), from rustup's ``llvm-tools`` component:
    added on first need (in ~/.rustup, outside the repo), kept after."""
    def located() -> Path:
        sysroot = subprocess.run(["rustc", "--print", "sysroot"], check=True, text=True,
                                 stdout=subprocess.PIPE).stdout.strip()
        host = subprocess.run(["rustc", "--print", "host-tuple"], check=True, text=True,
                              stdout=subprocess.PIPE).stdout.strip()
        return Path(sysroot) / "lib" / "rustlib" / host / "bin" / "llvm-profdata"

    tool = located()
    if tool.exists():
        return tool
    _log("adding rustup's llvm-tools component (llvm-profdata, for profile-guided builds)")
    log = _logfile("rustup-llvm-tools")
    with _lock("rustup-llvm-tools"):
        _run(["rustup", "component", "add", "llvm-tools"], what="rustup component add llvm-tools", log=log)
    if not located().exists():
        raise ProvisionError(f"llvm-profdata still missing at {tool} after adding llvm-tools; see {log}")
    return tool


def _default_env(root: Path) -> dict[str, str]:
    home = Path.home()
    cargo_home = os.environ.get("CARGO_HOME") or str(home / ".cargo")
    rustup_home = os.environ.get("RUSTUP_HOME") or str(home / ".rustup")
    env = {
        "HOME": str(home),
        "CARGO_HOME": cargo_home,
        "RUSTUP_HOME": rustup_home,
        "PATH": f"{cargo_home}/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "LANG": "C.UTF-8",
        "USER": "root",
        "LOGNAME": "root",
        "SHELL": "/bin/sh",
    }
    for k, v in os.environ.items():
        if k in SID_PASSTHROUGH_ENV or k.startswith(SID_PASSTHROUGH_PREFIXES):
            # A host path (PIP_FIND_LINKS=/opt/wheels, say) means nothing inside unless it is there too.
            if v.startswith("/") and not (root / v.lstrip("/")).exists():
                continue
            env[k] = v
    return env


def _chroot_argv(
    root: Path, argv: Sequence[str], *, binds: Sequence[Path], env: dict[str, str] | None, cwd: Path | None
) -> list[str]:
    root = Path(root).absolute()
    inner = _default_env(root)
    if env:
        inner.update({str(k): str(v) for k, v in env.items()})
    cargo_bin = f"{inner['CARGO_HOME']}/bin"
    if cargo_bin not in inner["PATH"].split(":"):
        inner["PATH"] = inner["PATH"] + ":" + cargo_bin
    q = shlex.quote
    lines = ["set -e"]
    for b in binds:
        src = Path(b).expanduser().absolute()
        if not src.exists():
            raise ProvisionError(f"sid_command: bind source {src} does not exist on the host")
        dst = root / str(src).lstrip("/")
        if src.is_dir():
            lines.append(f"mkdir -p {q(str(dst))}")
        else:
            lines.append(f"mkdir -p {q(str(dst.parent))}; [ -e {q(str(dst))} ] || : > {q(str(dst))}")
        lines.append(f"mount --rbind {q(str(src))} {q(str(dst))}")
    lines.append(f"mount -t proc proc {q(str(root / 'proc'))}")
    lines.append(f"mount --rbind /dev {q(str(root / 'dev'))}")
    lines.append(f"mount --rbind /sys {q(str(root / 'sys'))} 2>/dev/null || true")
    env_args = " ".join(q(f"{k}={v}") for k, v in sorted(inner.items()))
    inner_cmd = " ".join(q(str(a)) for a in argv)
    wd = str(cwd) if cwd is not None else "/"
    lines.append(
        f"exec chroot {q(str(root))} /usr/bin/env -i {env_args} "
        f"/bin/sh -c 'cd \"$1\" && shift && exec \"$@\"' sh {q(wd)} {inner_cmd}"
    )
    return ["unshare", "--mount", "--propagation", "private", "--", "/bin/sh", "-c", "\n".join(lines)]


def sid_command(
    argv: list[str],
    *,
    binds: list[Path],
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
) -> list[str]:
    """A host argv that runs ``argv`` inside the sid root, in a private mount namespace.

    ``unshare --mount --propagation private`` gives the command its own mount table:
    each path in ``binds`` is bind-mounted at the same path inside the root, plus
    ``/proc``, ``/dev`` and (if allowed) ``/sys``; then ``chroot``. The mounts vanish when
    the command ends, and concurrent commands do not see each other's mounts.

    The environment inside is clean: HOME, CARGO_HOME, RUSTUP_HOME (the host's, so bind
    ``~/.cargo`` and ``~/.rustup``), PATH starting with ``$CARGO_HOME/bin``, LANG=C.UTF-8,
    a few pass-through variables (TERM, CI, PIP_*, proxies), then ``env`` on top.
    ``cwd`` (default ``/``) is the working directory inside. Does not provision the root:
    call ``ensure_sid_root()`` first.
    """
    return _chroot_argv(_cache() / "sid-root", argv, binds=binds, env=env, cwd=cwd)


# ----------------------------------------------------------------------------- CLI


def main(args: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Provision framehook's test interpreters (cached under CACHE).")
    ap.add_argument("what", nargs="?", default="all", choices=["all", "313t", "sid"])
    ns = ap.parse_args(args)
    t0 = time.monotonic()
    _log(f"cache: {_cache()}")
    results: dict[str, str] = {}
    errors: dict[str, str] = {}

    if ns.what == "all":
        for v in ("3.9", "3.10", "3.11", "3.12", "3.13"):
            try:
                results[v] = str(pyenv_python(v))
            except ProvisionError as exc:
                errors[v] = str(exc)

    def do_313t() -> None:
        try:
            results["3.13t"] = str(ensure_python313t())
        except ProvisionError as exc:
            errors["3.13t"] = str(exc)

    def do_sid() -> None:
        try:
            root = ensure_sid_root()
            results["sid-root"] = str(root)
            for v in SID_VERSIONS:
                for name in (v, f"{v}d"):
                    results[name] = f"/usr/bin/python{name} (inside {root}; run via sid_command)"
        except ProvisionError as exc:
            errors["sid-root"] = str(exc)

    jobs = {"all": [do_313t, do_sid], "313t": [do_313t], "sid": [do_sid]}[ns.what]
    # The compile (CPU) and the debootstrap (network, dpkg) overlap well: run them side by side.
    threads = [threading.Thread(target=j) for j in jobs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    sid = [n for v in SID_VERSIONS for n in (v, f"{v}d")]
    order = ["3.9", "3.10", "3.11", "3.12", "3.13", "3.13t", "sid-root", *sid]
    for k in order:
        if k in results:
            print(f"{k}\t{results[k]}")
    for k, msg in errors.items():
        print(f"[provision] MISSING {k}: {msg}", file=sys.stderr)
    _log(f"done in {time.monotonic() - t0:.1f}s" + (f" ({len(errors)} missing)" if errors else ""))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
