//! The layering rules of docs/design.md, checked on the sources: arrows point
//! one way (backend <- hookapi <- sot), and among the modules of a layer too
//! (no import cycle), every CPython-version check is in the backend's compat
//! header, and the shim calls nothing above it except through the upcalls it is
//! given.

use std::collections::{BTreeMap, BTreeSet};
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

// ------------------------------------------------------------ import cycles

/// The modules of one directory (one module and what is under it) and which
/// uses which, read from the sources. A module is a child of the directory's
/// module (`src/hookapi/registry.rs` is `registry`; everything under a folder
/// module, `src/sot/translator/`, counts as that child, `translator`), or the
/// directory's module itself, named `mod` (its `mod.rs`, or `<dir>.rs` beside the
/// folder).
///
/// A module uses another when its code names it by a path: in a `use` item
/// (groups such as `use crate::hookapi::{a, b::c}` included) or anywhere in the
/// code (`crate::hookapi::x::f()`, `$crate::...` in macros, `super::x`,
/// `super::super::x`, `self::x`, and a child's bare name, `x::f()`, where that
/// resolves to a module), resolved from the module the path is written in
/// (inline `mod name { ... }` blocks included). Naming an item of the
/// directory's module (`super::Item`, `super::*` in a child) uses `mod`.
/// Declaring a child (`mod x;`) is no use of it; comments, string literals
/// and unit-test modules (`#[cfg(test)] mod ...`) are not read.
struct ModuleGraph {
    /// from -> to -> where (the first place `from` names `to`: "file:line").
    edges: BTreeMap<String, BTreeMap<String, String>>,
}

/// One token of Rust code, with its line; comments and literals are dropped.
#[derive(Debug, Clone, PartialEq)]
enum Token {
    Ident(String),
    /// `::`
    PathSep,
    Punct(char),
}

/// A file's tokens, each with its line.
type Tokens = Vec<(Token, usize)>;

fn tokens(text: &str) -> Tokens {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let (mut i, mut line) = (0, 1);
    let at = |k: usize| chars.get(k).copied().unwrap_or('\0');
    let is_ident = |c: char| c.is_alphanumeric() || c == '_';
    // Skips a (raw) string or char literal's body from `k` (just past its opening quote).
    let skip_quoted = |mut k: usize, quote: char, hashes: Option<usize>, line: &mut usize| -> usize {
        while k < chars.len() {
            let c = chars[k];
            if c == '\n' {
                *line += 1;
            }
            match hashes {
                None if c == '\\' => k += 1,
                None if c == quote => return k + 1,
                Some(n) if c == quote && (1..=n).all(|h| at(k + h) == '#') => return k + 1 + n,
                _ => {}
            }
            k += 1;
        }
        k
    };
    while i < chars.len() {
        let c = chars[i];
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c.is_whitespace() {
            i += 1;
        } else if c == '/' && at(i + 1) == '/' {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && at(i + 1) == '*' {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && at(i + 1) == '*' {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && at(i + 1) == '/' {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    line += usize::from(chars[i] == '\n');
                    i += 1;
                }
            }
        } else if c == '"' {
            i = skip_quoted(i + 1, '"', None, &mut line);
        } else if c == '\'' {
            // A char literal ('x', '\n', '\u{..}'), or a lifetime or label ('a), skipped alone.
            if at(i + 1) == '\\' || (at(i + 1) != '\0' && at(i + 2) == '\'') {
                i = skip_quoted(i + 1, '\'', None, &mut line);
            } else {
                i += 1;
            }
        } else if c.is_ascii_digit() {
            while i < chars.len() && is_ident(chars[i]) {
                i += 1;
            }
        } else if is_ident(c) {
            let start = i;
            while i < chars.len() && is_ident(chars[i]) {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            let raw_prefix = matches!(word.as_str(), "r" | "br" | "cr");
            if raw_prefix && (at(i) == '"' || at(i) == '#') {
                let hashes = chars[i..].iter().take_while(|&&h| h == '#').count();
                if at(i + hashes) == '"' {
                    i = skip_quoted(i + hashes + 1, '"', Some(hashes), &mut line);
                    continue;
                }
                if word == "r" && hashes == 1 {
                    // A raw identifier, r#name: the name follows.
                    i += 1;
                    continue;
                }
            }
            if matches!(word.as_str(), "b" | "c") && at(i) == '"' {
                i = skip_quoted(i + 1, '"', None, &mut line);
            } else if word == "b" && at(i) == '\'' {
                i = skip_quoted(i + 1, '\'', None, &mut line);
            } else {
                out.push((Token::Ident(word), line));
            }
        } else if c == ':' && at(i + 1) == ':' {
            out.push((Token::PathSep, line));
            i += 2;
        } else {
            out.push((Token::Punct(c), line));
            i += 1;
        }
    }
    out
}

fn ident(tokens: &[(Token, usize)], k: usize) -> Option<&str> {
    match tokens.get(k) {
        Some((Token::Ident(word), _)) => Some(word),
        _ => None,
    }
}

fn is(tokens: &[(Token, usize)], k: usize, token: &Token) -> bool {
    tokens.get(k).is_some_and(|(found, _)| found == token)
}

/// The index just past the bracket group opening at `k` (`open` at `k`).
fn group_end(tokens: &[(Token, usize)], k: usize, open: char, close: char) -> usize {
    let mut depth = 0;
    for (j, (token, _)) in tokens.iter().enumerate().skip(k) {
        if *token == Token::Punct(open) {
            depth += 1;
        } else if *token == Token::Punct(close) {
            depth -= 1;
            if depth == 0 {
                return j + 1;
            }
        }
    }
    tokens.len()
}

/// Whether the item whose keyword is at `k` carries `#[cfg(test)]` (before its visibility).
fn is_cfg_test(tokens: &[(Token, usize)], mut k: usize) -> bool {
    let cfg_test = [
        Token::Punct('#'),
        Token::Punct('['),
        Token::Ident("cfg".into()),
        Token::Punct('('),
        Token::Ident("test".into()),
        Token::Punct(')'),
        Token::Punct(']'),
    ];
    // Skip back over a visibility: pub, pub(crate), pub(super), pub(in path).
    if k > 0 && is(tokens, k - 1, &Token::Punct(')')) {
        if let Some(open) = (0..k - 1).rev().find(|&j| is(tokens, j, &Token::Punct('('))) {
            if open > 0 && ident(tokens, open - 1) == Some("pub") {
                k = open;
            }
        }
    }
    if k > 0 && ident(tokens, k - 1) == Some("pub") {
        k -= 1;
    }
    // Then over the attributes, #[...] each.
    while k > 0 && is(tokens, k - 1, &Token::Punct(']')) {
        let Some(open) = (0..k - 1)
            .rev()
            .find(|&j| is(tokens, j, &Token::Punct('[')) && j > 0 && is(tokens, j - 1, &Token::Punct('#')))
        else {
            return false;
        };
        if tokens[open - 1..k]
            .iter()
            .map(|(token, _)| token)
            .eq(cfg_test.iter())
        {
            return true;
        }
        k = open - 1;
    }
    false
}

/// The paths a `use` tree starting at `k` names (a group gives one path per
/// member; `self` in a group names its prefix; a glob, its prefix), and the
/// index past the tree.
fn use_tree(tokens: &[(Token, usize)], mut k: usize, prefix: &[String]) -> (Vec<Vec<String>>, usize) {
    let mut path = prefix.to_vec();
    loop {
        match tokens.get(k).map(|(token, _)| token) {
            Some(Token::Ident(word)) if word == "self" && !path.is_empty() => k += 1,
            Some(Token::Ident(word)) => {
                path.push(word.clone());
                k += 1;
            }
            Some(Token::PathSep) => k += 1,
            Some(Token::Punct('*')) => return (vec![path], k + 1),
            Some(Token::Punct('{')) => {
                let mut paths = Vec::new();
                k += 1;
                while k < tokens.len() && !is(tokens, k, &Token::Punct('}')) {
                    let (found, next) = use_tree(tokens, k, &path);
                    paths.extend(found);
                    // Past the member and its comma (one token at least, whatever it is).
                    k = next.max(k + 1);
                    if is(tokens, k, &Token::Punct(',')) {
                        k += 1;
                    }
                }
                return (paths, k + 1);
            }
            // The end of this tree: `,`, `}` or `;`.
            _ => return (vec![path], k),
        }
        // `name as alias`: the alias is no part of the path.
        if ident(tokens, k) == Some("as") {
            return (vec![path], k + 2);
        }
    }
}

impl ModuleGraph {
    /// The graph of `files` (each: its path under the directory, `mod.rs` for the
    /// directory's module, and its text), the directory's module being `crate_path`.
    fn of(files: &[(String, String)], crate_path: &str) -> Self {
        let base: Vec<String> = crate_path.split("::").skip(1).map(str::to_owned).collect();
        assert!(
            crate_path.starts_with("crate::") || crate_path == "crate",
            "{crate_path}: a path from crate"
        );
        // Each file's module, from the crate root.
        let module_of = |file: &str| -> Vec<String> {
            let mut parts: Vec<String> = file
                .trim_end_matches(".rs")
                .split('/')
                .map(str::to_owned)
                .collect();
            if parts.last().is_some_and(|last| last == "mod") {
                parts.pop();
            }
            base.iter().cloned().chain(parts).collect()
        };
        let lexed: Vec<(String, Vec<String>, Tokens)> = files
            .iter()
            .map(|(file, text)| (file.clone(), module_of(file), tokens(text)))
            .collect();
        // Every module (files, and inline modules), and the unit-test ones.
        let mut modules: BTreeSet<Vec<String>> = lexed.iter().map(|(_, module, _)| module.clone()).collect();
        let mut test_modules = BTreeSet::new();
        for (_, module, tokens) in &lexed {
            Self::walk(tokens, module, &mut |k, current, _| {
                if ident(tokens, k) == Some("mod") {
                    if let Some(name) = ident(tokens, k + 1) {
                        let child: Vec<String> = current.iter().cloned().chain([name.to_owned()]).collect();
                        if is_cfg_test(tokens, k) {
                            test_modules.insert(child.clone());
                        }
                        modules.insert(child);
                    }
                }
            });
        }
        let node = |path: &[String]| -> Option<String> {
            let below = path.strip_prefix(base.as_slice())?;
            match below.first() {
                Some(child) if modules.contains(&[&base[..], &below[..1]].concat()) => Some(child.clone()),
                _ => Some("mod".to_owned()),
            }
        };
        let mut edges: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
        for (file, module, tokens) in &lexed {
            if test_modules.iter().any(|test| module.starts_with(test)) {
                continue;
            }
            let mut add = |from: &[String], path: &[String], line: usize| {
                let (Some(from), Some(to)) = (
                    node(from),
                    Self::resolve(path, from, &modules).and_then(|p| node(&p)),
                ) else {
                    return;
                };
                if from != to {
                    edges
                        .entry(from)
                        .or_default()
                        .entry(to)
                        .or_insert_with(|| format!("{file}:{line}"));
                }
            };
            let mut skip_until = 0;
            Self::walk(tokens, module, &mut |k, current, inside_test| {
                if inside_test || k < skip_until {
                    return;
                }
                let line = tokens[k].1;
                if ident(tokens, k) == Some("use") {
                    let (paths, end) = use_tree(tokens, k + 1, &[]);
                    for path in paths {
                        add(current, &path, line);
                    }
                    skip_until = end;
                    return;
                }
                // A path in code: a name followed by `::`, not itself after `::` or `.`.
                let starts_path = ident(tokens, k).is_some()
                    && is(tokens, k + 1, &Token::PathSep)
                    && !(k > 0
                        && (is(tokens, k - 1, &Token::PathSep) || is(tokens, k - 1, &Token::Punct('.'))));
                // `pub(in path)` names an ancestor, not a dependency.
                let visibility =
                    k > 1 && ident(tokens, k - 1) == Some("in") && is(tokens, k - 2, &Token::Punct('('));
                if starts_path && !visibility {
                    let mut path = Vec::new();
                    let mut j = k;
                    while let Some(word) = ident(tokens, j) {
                        path.push(word.to_owned());
                        if !is(tokens, j + 1, &Token::PathSep) {
                            break;
                        }
                        j += 2;
                    }
                    add(current, &path, line);
                    skip_until = j + 1;
                }
            });
        }
        Self { edges }
    }

    /// Calls `visit(k, module, inside_test)` for each token, `module` being the
    /// module the token is written in (inline `mod name { }` blocks entered).
    fn walk(
        tokens: &[(Token, usize)],
        file_module: &[String],
        visit: &mut impl FnMut(usize, &[String], bool),
    ) {
        // The inline modules open at token k: (name, index past its block, a unit-test module).
        let mut open: Vec<(String, usize, bool)> = Vec::new();
        for k in 0..tokens.len() {
            while open.last().is_some_and(|(_, end, _)| k >= *end) {
                open.pop();
            }
            let current: Vec<String> = file_module
                .iter()
                .cloned()
                .chain(open.iter().map(|(name, _, _)| name.clone()))
                .collect();
            let inside_test = open.iter().any(|(_, _, test)| *test);
            visit(k, &current, inside_test);
            if ident(tokens, k) == Some("mod") && is(tokens, k + 2, &Token::Punct('{')) {
                if let Some(name) = ident(tokens, k + 1) {
                    let end = group_end(tokens, k + 2, '{', '}');
                    open.push((name.to_owned(), end, is_cfg_test(tokens, k)));
                }
            }
        }
    }

    /// `path`, written in module `current`, from the crate root; None when it
    /// names nothing of this crate (an extern crate, std, an imported name).
    fn resolve(path: &[String], current: &[String], modules: &BTreeSet<Vec<String>>) -> Option<Vec<String>> {
        let first = path.first()?;
        match first.as_str() {
            "crate" => Some(path[1..].to_vec()),
            "super" => {
                let ups = path.iter().take_while(|segment| *segment == "super").count();
                let kept = current.len().checked_sub(ups)?;
                Some(current[..kept].iter().chain(&path[ups..]).cloned().collect())
            }
            "self" => Some(current.iter().chain(&path[1..]).cloned().collect()),
            name => {
                let child: Vec<String> = current.iter().cloned().chain([name.to_owned()]).collect();
                modules
                    .contains(&child)
                    .then(|| current.iter().chain(path).cloned().collect())
            }
        }
    }

    /// The knots: each set of two modules or more that all reach one another
    /// through uses (a strongly connected component), in name order.
    fn knots(&self) -> Vec<BTreeSet<String>> {
        let nodes: BTreeSet<&String> = self
            .edges
            .iter()
            .flat_map(|(from, to)| std::iter::once(from).chain(to.keys()))
            .collect();
        let reaches = |from: &String| -> BTreeSet<String> {
            let mut seen = BTreeSet::new();
            let mut stack = vec![from.clone()];
            while let Some(node) = stack.pop() {
                for next in self.edges.get(&node).into_iter().flat_map(BTreeMap::keys) {
                    if seen.insert(next.clone()) {
                        stack.push(next.clone());
                    }
                }
            }
            seen
        };
        let reach: BTreeMap<&String, BTreeSet<String>> =
            nodes.iter().map(|node| (*node, reaches(node))).collect();
        let mut knots: Vec<BTreeSet<String>> = Vec::new();
        for start in &nodes {
            if !reach[start].contains(*start) || knots.iter().any(|knot| knot.contains(*start)) {
                continue;
            }
            // What `start` reaches and what reaches it back.
            knots.push(
                reach[start]
                    .iter()
                    .filter(|node| reach[node].contains(*start))
                    .cloned()
                    .collect(),
            );
        }
        knots
    }

    /// One cycle per knot: the shortest from the knot's first module back to
    /// it, as `[a, b, ..., a]`.
    fn cycles(&self) -> Vec<Vec<String>> {
        let mut cycles = Vec::new();
        for knot in self.knots() {
            let start = knot.first().expect("a knot has modules");
            // Breadth first from `start`, within the knot, back to `start`.
            let mut parent: BTreeMap<&String, &String> = BTreeMap::new();
            let mut queue = std::collections::VecDeque::from([start]);
            'search: while let Some(node) = queue.pop_front() {
                for next in self.edges.get(node).into_iter().flat_map(BTreeMap::keys) {
                    if next == start {
                        let mut cycle = vec![start.clone(), node.clone()];
                        let mut at = node;
                        while let Some(previous) = parent.get(at) {
                            cycle.push((*previous).clone());
                            at = previous;
                        }
                        cycle.reverse();
                        cycles.push(cycle);
                        break 'search;
                    }
                    if knot.contains(next) && !parent.contains_key(next) {
                        parent.insert(next, node);
                        queue.push_back(next);
                    }
                }
            }
        }
        cycles
    }

    /// Where each step of `cycle` is written.
    fn explain(&self, cycle: &[String]) -> String {
        cycle
            .windows(2)
            .map(|step| {
                format!(
                    "    {} -> {}: {}",
                    step[0], step[1], self.edges[&step[0]][&step[1]]
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Whether module `from` uses module `to`.
    fn uses(&self, from: &str, to: &str) -> bool {
        self.edges
            .get(from)
            .is_some_and(|targets| targets.contains_key(to))
    }
}

/// The module graph of the directory `dir` (relative to the crate), whose
/// module is `crate_path` ("crate::hookapi"): see [`ModuleGraph`].
fn module_graph(dir: &str, crate_path: &str) -> ModuleGraph {
    let folder = root().join(dir);
    let mut files: Vec<(String, String)> = sources(dir, &["rs"])
        .into_iter()
        .map(|(path, text)| {
            let relative = path.strip_prefix(&folder).expect("a file under the directory");
            (relative.to_string_lossy().replace('\\', "/"), text)
        })
        .collect();
    // A folder module's own file may be `<dir>.rs` beside the folder.
    let beside = folder.with_extension("rs");
    if !folder.join("mod.rs").exists() && beside.exists() {
        files.push((
            "mod.rs".to_owned(),
            fs::read_to_string(beside).expect("UTF-8 source"),
        ));
    }
    let mut graph = ModuleGraph::of(&files, crate_path);
    for place in graph.edges.values_mut().flat_map(BTreeMap::values_mut) {
        *place = format!("{dir}/{place}");
    }
    graph
}

/// The import cycles among the modules of `dir`, whose module is `crate_path`:
/// one per knot of modules that use each other, as `[a, b, ..., a]` (a uses
/// b, ...); empty when the modules are layered. For instance
/// `module_cycles("src/sot/translator", "crate::sot::translator")`.
fn module_cycles(dir: &str, crate_path: &str) -> Vec<Vec<String>> {
    module_graph(dir, crate_path).cycles()
}

/// Fails listing each import cycle among the modules of `dir`, with where each of its uses is.
fn assert_no_import_cycle(dir: &str, crate_path: &str) {
    let cycles = module_cycles(dir, crate_path);
    if cycles.is_empty() {
        return;
    }
    let graph = module_graph(dir, crate_path);
    let listed: Vec<String> = cycles
        .iter()
        .zip(graph.knots())
        .map(|(cycle, knot)| {
            let knot: Vec<&str> = knot.iter().map(String::as_str).collect();
            format!(
                "  {}\n{}\n    (modules that all use one another: {})",
                cycle.join(" -> "),
                graph.explain(cycle),
                knot.join(", ")
            )
        })
        .collect();
    panic!(
        "import cycles among the modules of {dir} (a -> b: a uses b); move the items that \
         close each cycle to the module they belong to, or to a new one below both:\n{}",
        listed.join("\n")
    );
}

#[test]
fn hookapi_has_no_import_cycle() {
    // The graph is read from the sources: a use the layering needs is found.
    let graph = module_graph("src/hookapi", "crate::hookapi");
    assert!(
        graph.uses("dispatch", "registry") && graph.uses("mod", "registry"),
        "the module graph of src/hookapi misses known uses: {:?}",
        graph.edges
    );
    assert_no_import_cycle("src/hookapi", "crate::hookapi");
}

/// The checker on sources made up here: what counts as a use, and a cycle it reports.
#[test]
fn the_cycle_checker_reads_uses_and_finds_cycles() {
    let file = |name: &str, text: &str| (name.to_owned(), text.to_owned());
    let files = [
        // Declaring children is no use of them; re-exporting one's item is.
        file("mod.rs", "mod a;\nmod b;\nmod c;\nmod d;\nmod t;\npub use a::A;\n"),
        // A unit-test module is not read.
        file(
            "a.rs",
            "use super::b::B;\npub struct A;\n#[cfg(test)]\nmod tests {\n    use super::*;\n    use crate::m::c::C;\n}\n",
        ),
        // Comments and strings are not read; a path in code is.
        file(
            "b.rs",
            "// use super::c;\n/// [`super::d`]\nconst S: &str = \"super::d::X\";\npub struct B(crate::m::a::A);\n",
        ),
        // Nested groups; `self` in a group; an alias; a visibility path is no use.
        file("c.rs", "use super::{a::A as _, b::{self}};\npub(in crate::m) struct C;\n"),
        // An item of the directory's module (`mod`); `super` from an inline module.
        file(
            "d.rs",
            "use super::A;\nmod inner {\n    pub fn f() { super::super::t::g() }\n}\n",
        ),
        // A folder module is one module: uses among its files are not counted.
        file("t/mod.rs", "mod x;\nuse x::X;\n"),
        file(
            "t/x.rs",
            "pub struct X;\npub fn g() {\n    let _ = super::super::c::C;\n    let _: &'static str = r#\"crate::m::b\"#;\n}\n",
        ),
    ];
    let graph = ModuleGraph::of(&files, "crate::m");
    let edges: Vec<String> = graph
        .edges
        .iter()
        .flat_map(|(from, to)| to.keys().map(move |to| format!("{from} -> {to}")))
        .collect();
    assert_eq!(
        edges,
        ["a -> b", "b -> a", "c -> a", "c -> b", "d -> mod", "d -> t", "mod -> a", "t -> c"]
    );
    assert_eq!(graph.cycles(), [["a", "b", "a"]]);
    assert_eq!(
        graph.explain(&graph.cycles()[0]),
        "    a -> b: a.rs:1\n    b -> a: b.rs:4"
    );

    let ring = [
        file("mod.rs", "mod x;\nmod y;\nmod z;\n"),
        file("x.rs", "use crate::m::y;\n"),
        file("y.rs", "fn f() {\n    super::z::g();\n}\n"),
        file("z.rs", "use super::{x};\nfn g() {}\n"),
    ];
    assert_eq!(
        ModuleGraph::of(&ring, "crate::m").cycles(),
        [["x", "y", "z", "x"]]
    );
}

#[test]
fn sot_has_no_import_cycle() {
    let graph = module_graph("src/sot/translator", "crate::sot::translator");
    assert!(
        graph.uses("translate", "vm") && graph.uses("vm", "model"),
        "the module graph of src/sot/translator misses known uses: {:?}",
        graph.edges
    );
    for (dir, module) in [
        ("src/sot", "crate::sot"),
        ("src/sot/translator", "crate::sot::translator"),
        ("src/sot/translator/vm", "crate::sot::translator::vm"),
        ("src/sot/translator/vm/ops", "crate::sot::translator::vm::ops"),
        ("src/sot/translator/codegen", "crate::sot::translator::codegen"),
        ("src/sot/translator/guard", "crate::sot::translator::guard"),
        ("src/sot/translator/model", "crate::sot::translator::model"),
    ] {
        assert_no_import_cycle(dir, module);
    }
}

/// The translator's layers, lowest first (docs/design.md, "The translator's layers"): a
/// module uses only modules of the layers before its own.
const TRANSLATOR_LAYERS: &[&[&str]] = &[
    &["pyutil", "code_pool", "cost"],
    &["guard"],
    &["model"],
    &["cache", "declared"],
    &["session"],
    &["fetch", "backend"],
    &["kinds"],
    &["vm"],
    &["codegen"],
    &["compile"],
    &["translation"],
    &["breaks", "resumed"],
    &["translate"],
    &["hook"],
    &["python"],
    &["mod"],
];

#[test]
fn the_translators_layers_point_one_way() {
    let graph = module_graph("src/sot/translator", "crate::sot::translator");
    let layer_of = |module: &str| TRANSLATOR_LAYERS.iter().position(|layer| layer.contains(&module));
    let mut wrong = Vec::new();
    for (from, uses) in &graph.edges {
        let Some(from_layer) = layer_of(from) else {
            wrong.push(format!("{from}: in no layer of TRANSLATOR_LAYERS"));
            continue;
        };
        for (to, place) in uses {
            match layer_of(to) {
                Some(to_layer) if to_layer < from_layer => {}
                Some(_) => wrong.push(format!("{from} -> {to} ({place}): not a layer below")),
                None => wrong.push(format!("{to}: in no layer of TRANSLATOR_LAYERS")),
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "the translator's layers point the wrong way:\n{}",
        wrong.join("\n")
    );
}

/// Inside the VM, the opcode table (`vm/ops`) uses the rest of the VM; the rest never names it
/// (`Vm::step` is its one entry, a method).
#[test]
fn only_the_opcode_table_knows_opcode_handlers() {
    let graph = module_graph("src/sot/translator/vm", "crate::sot::translator::vm");
    let users: Vec<String> = graph
        .edges
        .iter()
        .filter(|(from, uses)| from.as_str() != "ops" && uses.contains_key("ops"))
        .map(|(from, uses)| format!("{from} ({})", uses["ops"]))
        .collect();
    assert!(
        users.is_empty(),
        "VM modules that name the opcode table: {users:?}"
    );
}

/// No source file a newcomer cannot read: every Rust and C file under src/ and crates/ is at
/// most this long.
const MAX_SOURCE_LINES: usize = 1_500;

#[test]
fn no_source_file_is_over_the_line_limit() {
    let mut files = sources("src", &["rs", "c", "h"]);
    files.extend(sources("crates", &["rs", "c", "h"]));
    let long: Vec<String> = files
        .iter()
        .filter(|(_, text)| text.lines().count() > MAX_SOURCE_LINES)
        .map(|(path, text)| format!("{}: {} lines", path.display(), text.lines().count()))
        .collect();
    assert!(
        long.is_empty(),
        "source files over {MAX_SOURCE_LINES} lines (split them by concern):\n{}",
        long.join("\n")
    );
}

/// Functions longer than this say, in a comment just above them, why they must be one.
const MAX_FUNCTION_LINES: usize = 200;

/// Each function's name, where it starts and how many lines it spans (from `fn` to its
/// closing brace, at the `fn`'s indentation, as rustfmt writes them).
fn functions(text: &str) -> Vec<(String, usize, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut found = Vec::new();
    for (start, line) in lines.iter().enumerate() {
        let code = line.trim_start();
        let indent = &line[..line.len() - code.len()];
        let after_qualifiers = [
            "pub ",
            "pub(crate) ",
            "pub(super) ",
            "const ",
            "unsafe ",
            "async ",
            "extern \"C\" ",
        ]
        .iter()
        .fold(code, |rest, qualifier| {
            rest.strip_prefix(qualifier).unwrap_or(rest)
        });
        let after_qualifiers = after_qualifiers
            .strip_prefix("pub(in ")
            .and_then(|rest| rest.split_once(") "))
            .map_or(after_qualifiers, |(_, rest)| rest);
        let Some(signature) = after_qualifiers.strip_prefix("fn ") else {
            continue;
        };
        let name: String = signature
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        // A declaration without a body (a trait's) ends with `;` before any `{` line.
        let body = lines[start..]
            .iter()
            .position(|l| l.ends_with('{') || l.ends_with(';'))
            .filter(|at| lines[start + at].ends_with('{'));
        if body.is_none() {
            continue;
        }
        let closing = format!("{indent}}}");
        if let Some(end) = lines[start..].iter().position(|l| *l == closing) {
            found.push((name, start, end + 1));
        }
    }
    found
}

#[test]
fn no_function_is_too_long_without_saying_why() {
    let mut files = sources("src", &["rs"]);
    files.extend(sources("crates", &["rs"]));
    let mut long = Vec::new();
    for (path, text) in &files {
        let lines: Vec<&str> = text.lines().collect();
        for (name, start, length) in functions(text) {
            let says_why = lines[..start]
                .iter()
                .rev()
                .take_while(|l| l.trim_start().starts_with("//") || l.trim_start().starts_with("#["))
                .any(|l| l.contains("must be one"));
            if length > MAX_FUNCTION_LINES && !says_why {
                long.push(format!(
                    "{}:{}: {name} ({length} lines)",
                    path.display(),
                    start + 1
                ));
            }
        }
    }
    assert!(
        long.is_empty(),
        "functions over {MAX_FUNCTION_LINES} lines without a comment saying why they must be one:\n{}",
        long.join("\n")
    );
}

#[test]
fn the_function_length_check_measures_bodies_not_declarations() {
    let text = "trait T {\n    fn declared(&self);\n}\n\nfn f() {\n    let x = 1;\n}\n\n    pub(in crate::m) fn g(\n        a: u8,\n    ) -> u8 {\n        a\n    }\n";
    assert_eq!(functions(text), [("f".to_owned(), 4, 3), ("g".to_owned(), 8, 5)]);
}
