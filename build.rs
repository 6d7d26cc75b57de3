//! Compiles the CPython-internals shim (the C files of `src/pep523_backend/`)
//! against the internal headers of the interpreter this module is being built
//! for. `testing.c` (test and bench eval functions) only with the `testing`
//! feature.
//!
//! The interpreter is the one PyO3 builds for (`PYO3_PYTHON`, set by maturin, or
//! `python3`). The script re-runs whenever that choice or the interpreter itself
//! changes, so a shim compiled for one interpreter is never linked into a module
//! for another.

use std::env;
use std::path::PathBuf;
use std::process::Command;

const QUERY: &str = "\
import sys, sysconfig
print(sysconfig.get_paths()['include'])
print(sys.executable)
";

const SHIM_DIR: &str = "src/pep523_backend";
/// The shim's C files, by concern (see `contract.h` and `shim_internal.h`).
const SHIM_FILES: &[&str] = &[
    "eval.c",
    "native_chain.c",
    "replace.c",
    "observe.c",
    "frame_view.c",
    "code_extra.c",
    "stack_guard.c",
    "layout_frame.c",
    "contract_layout.c",
];

fn main() {
    println!("cargo:rerun-if-changed={SHIM_DIR}");
    println!("cargo:rerun-if-changed=src/hookapi/capi_layout.c");
    println!("cargo:rerun-if-changed=python/framehook/include/framehook.h");
    println!("cargo:rerun-if-env-changed=PYO3_PYTHON");
    println!("cargo:rerun-if-env-changed=PYTHON_SYS_EXECUTABLE");

    let python = env::var("PYO3_PYTHON")
        .or_else(|_| env::var("PYTHON_SYS_EXECUTABLE"))
        .unwrap_or_else(|_| "python3".to_owned());
    let output = Command::new(&python)
        .args(["-c", QUERY])
        .output()
        .unwrap_or_else(|err| panic!("cannot run the target interpreter {python:?}: {err}"));
    assert!(
        output.status.success(),
        "the target interpreter {python:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8(output.stdout).expect("interpreter printed non-UTF-8 paths");
    let mut lines = stdout.lines();
    let include = PathBuf::from(lines.next().expect("no include directory reported"));
    let executable = lines.next().expect("no sys.executable reported");

    // Re-run when the interpreter binary or its configuration is replaced in place.
    println!("cargo:rerun-if-changed={executable}");
    println!("cargo:rerun-if-changed={}", include.join("pyconfig.h").display());
    let internal = include.join("internal");
    assert!(
        internal.is_dir(),
        "{} is missing: framehook needs the interpreter's internal headers \
         (install the -dev package, or use a build that ships include/python3.x/internal)",
        internal.display()
    );

    let testing = env::var_os("CARGO_FEATURE_TESTING").is_some();
    let mut build = cc::Build::new();
    build.files(SHIM_FILES.iter().map(|file| PathBuf::from(SHIM_DIR).join(file)));
    if testing {
        build
            .file(PathBuf::from(SHIM_DIR).join("testing.c"))
            .define("FH_TESTING", None);
    }
    build
        // The published C API header: the shim shares its event numbers, and
        // capi_layout.c lets a test compare the header's structs with Rust's.
        .file("src/hookapi/capi_layout.c")
        .include("python/framehook/include")
        .include(&include)
        .include(&internal)
        .define("Py_BUILD_CORE", None)
        .std("gnu11")
        .warnings(true)
        .flag_if_supported("-Wno-unused-parameter")
        .flag_if_supported("-Wno-missing-field-initializers")
        // A missing internal header must fail the build, not leave an undefined symbol.
        .flag_if_supported("-Werror=implicit-function-declaration")
        .compile("framehook_shim");
}
