//! The layering rules of docs/design.md, checked on the sources: arrows point
//! one way (backend <- hookapi <- sot), every CPython-version check is in the
//! backend's compat header, and the shim calls nothing above it except through
//! the upcalls it is given.

use std::fs;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every file under `dir` (relative to the crate) with one of `extensions`, and its text.
fn sources(dir: &str, extensions: &[&str]) -> Vec<(PathBuf, String)> {
    fn walk(dir: &Path, extensions: &[&str], out: &mut Vec<(PathBuf, String)>) {
        let mut entries: Vec<_> = fs::read_dir(dir)
            .expect("readable source directory")
            .flatten()
            .collect();
        entries.sort_by_key(|entry| entry.path());
        for entry in entries {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, extensions, out);
            } else if path
                .extension()
                .and_then(|extension| extension.to_str())
                .is_some_and(|extension| extensions.contains(&extension))
            {
                let text = fs::read_to_string(&path).expect("UTF-8 source");
                out.push((path, text));
            }
        }
    }
    let mut out = Vec::new();
    walk(&root().join(dir), extensions, &mut out);
    assert!(!out.is_empty(), "no sources under {dir}");
    out
}

fn offending_lines(files: &[(PathBuf, String)], forbidden: &[&str]) -> Vec<String> {
    files
        .iter()
        .flat_map(|(path, text)| {
            text.lines()
                .enumerate()
                .filter(|(_, line)| forbidden.iter().any(|word| line.contains(word)))
                .map(move |(number, line)| format!("{}:{}: {}", path.display(), number + 1, line.trim()))
        })
        .collect()
}

#[test]
fn the_backend_knows_nothing_above_it() {
    let backend = sources("src/pep523_backend", &["rs", "c", "h"]);
    let found = offending_lines(&backend, &["crate::hookapi", "crate::sot", "hookapi::", "sot::"]);
    assert!(
        found.is_empty(),
        "the backend refers to a layer above it:\n{}",
        found.join("\n")
    );
}

#[test]
fn hookapi_knows_nothing_of_sot() {
    let found = offending_lines(&sources("src/hookapi", &["rs"]), &["crate::sot", "sot::"]);
    assert!(found.is_empty(), "hookapi refers to SOT:\n{}", found.join("\n"));
}

#[test]
fn sot_is_built_on_hookapi_only() {
    let found = offending_lines(&sources("src/sot", &["rs"]), &["pep523_backend"]);
    assert!(
        found.is_empty(),
        "SOT reaches into the backend:\n{}",
        found.join("\n")
    );
}

#[test]
fn every_version_check_is_in_the_compat_header() {
    let mut files = sources("src", &["rs", "c", "h"]);
    files.extend(sources("crates", &["rs"]));
    let found: Vec<String> = offending_lines(&files, &["PY_VERSION_HEX", "cfg(Py_3", "Py_3_"])
        .into_iter()
        .filter(|line| !line.starts_with(&*root().join("src/pep523_backend/compat.h").to_string_lossy()))
        // The build information reports the version; it tests nothing.
        .filter(|line| !line.ends_with("{ return PY_VERSION_HEX; }"))
        .collect();
    assert!(
        found.is_empty(),
        "version checks outside compat.h:\n{}",
        found.join("\n")
    );
}

/// Every function the contract declares is defined by the shim: the C side
/// calls nothing the Rust side implements except through the upcalls table.
#[test]
fn the_shim_defines_every_function_of_the_contract() {
    let contract = fs::read_to_string(root().join("src/pep523_backend/contract.h")).expect("contract.h");
    let shim: String = sources("src/pep523_backend", &["c"])
        .into_iter()
        .map(|(_, text)| text)
        .collect();
    let declared: Vec<&str> = contract
        .lines()
        .filter(|line| !line.starts_with(' ') && !line.starts_with('#') && line.ends_with(");"))
        .filter_map(|line| {
            let name_end = line.find('(')?;
            line[..name_end]
                .rsplit(|c: char| !(c.is_alphanumeric() || c == '_'))
                .next()
        })
        .collect();
    assert!(
        declared.len() > 20,
        "the contract's functions were not found: {declared:?}"
    );
    let undefined: Vec<&&str> = declared
        .iter()
        .filter(|name| {
            let defined = |line: &&str| {
                !line.ends_with(';')
                    && [" ", "*"]
                        .iter()
                        .any(|before| line.contains(&format!("{before}{name}(")))
            };
            !shim.lines().any(|line| defined(&line))
        })
        .collect();
    assert!(
        undefined.is_empty(),
        "declared in contract.h but not defined by the shim: {undefined:?}"
    );
}

/// The bytecode layer's core knows no Python (no PyO3; code objects come in as bytes and
/// names) and no CPython version number outside its tables: its rules are keyed by which
/// opcodes and properties a version's table has.
#[test]
fn the_bytecode_layer_is_a_core_with_versions_as_data() {
    let manifest =
        fs::read_to_string(root().join("crates/framehook-bytecode/Cargo.toml")).expect("Cargo.toml");
    let dependencies = manifest.split("[dependencies]").nth(1).unwrap_or("");
    assert!(
        dependencies
            .lines()
            .all(|line| line.trim().is_empty() || line.starts_with('#') || line.starts_with('[')),
        "framehook-bytecode has dependencies:\n{dependencies}"
    );
    let files: Vec<(PathBuf, String)> = sources("crates/framehook-bytecode/src", &["rs"])
        .into_iter()
        .filter(|(path, _)| !path.ends_with("table.rs"))
        .collect();
    let found = offending_lines(&files, &["pyo3", ".minor", ".major", "(3, "]);
    assert!(
        found.is_empty(),
        "the bytecode core uses Python or branches on a version number:\n{}",
        found.join("\n")
    );
}
