//! The module table at the top of `src/lib.rs` is true: every module of the crate is in it,
//! once, and every `crate::` path in a module's code names a module in a row below its own. So
//! the crate has no module cycle, the model never reaches for a command or a renderer, and a
//! command never prints through a renderer. An import that goes up, or sideways within a row,
//! fails here with both modules and the line.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

#[path = "../../fdr-runtime/tests/common/module_table.rs"]
mod module_table;

use module_table::{code, row_of, rows};

/// Every `.rs` file under `dir` with its module path (`model/filter.rs` is `model::filter`,
/// `model/mod.rs` is `model`, `testing/synth.rs` is `testing::synth`).
fn files(src: &Path, dir: &Path, out: &mut Vec<(String, PathBuf)>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            files(src, &p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            let rel = p.strip_prefix(src).unwrap().with_extension("");
            let mut parts: Vec<String> = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if parts.last().is_some_and(|l| l == "mod") {
                parts.pop();
            }
            out.push((parts.join("::"), p));
        }
    }
}

/// The paths of a use tree starting at `s` (just after `crate::`): `a::b::C`, `a::{b, c::D}`
/// and nested groups, flattened; `self` in a group names the group's path.
fn paths(s: &str) -> Vec<String> {
    fn tree(s: &[u8], i: &mut usize, base: &str, out: &mut Vec<String>) {
        let mut path = base.to_string();
        loop {
            while *i < s.len() && s[*i].is_ascii_whitespace() {
                *i += 1;
            }
            if *i < s.len() && s[*i] == b'{' {
                *i += 1;
                loop {
                    tree(s, i, &path, out);
                    while *i < s.len() && s[*i].is_ascii_whitespace() {
                        *i += 1;
                    }
                    match s.get(*i) {
                        Some(b',') => *i += 1,
                        Some(b'}') => {
                            *i += 1;
                            return;
                        }
                        _ => return,
                    }
                    while *i < s.len() && s[*i].is_ascii_whitespace() {
                        *i += 1;
                    }
                    if s.get(*i) == Some(&b'}') {
                        *i += 1;
                        return;
                    }
                }
            }
            let start = *i;
            while *i < s.len() && (s[*i].is_ascii_alphanumeric() || s[*i] == b'_') {
                *i += 1;
            }
            let ident = std::str::from_utf8(&s[start..*i]).unwrap();
            if ident != "self" && !ident.is_empty() {
                if !path.is_empty() {
                    path.push_str("::");
                }
                path.push_str(ident);
            }
            if s[*i..].starts_with(b"::") {
                *i += 2;
                continue;
            }
            out.push(path);
            return;
        }
    }
    let mut out = Vec::new();
    tree(s.as_bytes(), &mut 0, "", &mut out);
    out
}

/// The module of the table a path names: its longest prefix in `row_of`; items the crate root
/// re-exports are named for the module that defines them.
fn module_of<'a>(path: &str, row_of: &'a BTreeMap<String, usize>) -> Option<&'a str> {
    if path == "CliError" {
        return row_of.get_key_value("error").map(|(k, _)| k.as_str());
    }
    let parts: Vec<&str> = path.split("::").collect();
    (1..=parts.len())
        .rev()
        .map(|n| parts[..n].join("::"))
        .find_map(|p| row_of.get_key_value(&p).map(|(k, _)| k.as_str()))
}

/// `text` with the paths through a folder imported bare (`use crate::commands;`, then
/// `commands::info::summary`) written as the `crate::` paths they are, so that they are checked.
fn through_bare(text: String, row_of: &BTreeMap<String, usize>) -> String {
    let mut bare = Vec::new();
    for line in text.lines() {
        let Some(rest) = line.trim().strip_prefix("use crate::") else {
            continue;
        };
        for p in paths(rest) {
            if module_of(&p, row_of).is_none() && row_of.keys().any(|m| m.starts_with(&p)) {
                bare.push(p.rsplit("::").next().unwrap_or(&p).to_string());
            }
        }
    }
    bare.iter().fold(text, |t, folder| {
        let pat = format!("{folder}::");
        let mut out = String::with_capacity(t.len());
        let mut rest = t.as_str();
        while let Some(i) = rest.find(&pat) {
            out.push_str(&rest[..i]);
            // Not when it is already the tail of a path (`crate::commands::`, `x::commands::`).
            let tail = rest[..i]
                .chars()
                .last()
                .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':');
            if !tail {
                out.push_str("crate::");
            }
            out.push_str(&pat);
            rest = &rest[i + pat.len()..];
        }
        out.push_str(rest);
        out
    })
}

#[test]
fn the_module_table_is_complete_and_no_module_uses_one_above_or_beside_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let lib = std::fs::read_to_string(src.join("lib.rs")).unwrap();
    let rows = rows(&lib);
    assert!(rows.len() > 8, "no module table found in src/lib.rs");
    let row_of = row_of(&rows);
    let mut all = Vec::new();
    files(&src, &src, &mut all);
    // The crate root, the binary and the folders' mod.rs only declare modules.
    let declaring = ["lib", "main", "model", "commands", "render", "testing"];
    let mut checked = 0;
    for (module, path) in &all {
        if declaring.contains(&module.as_str()) {
            continue;
        }
        let own = module_of(module, &row_of).unwrap_or_else(|| {
            panic!(
                "`{module}` ({}) is not in the table in src/lib.rs",
                path.display()
            )
        });
        let own_row = row_of[own];
        let text = code(&std::fs::read_to_string(path).unwrap());
        let text = through_bare(text, &row_of);
        for (n, line) in text.lines().enumerate() {
            let mut at = 0;
            while let Some(i) = line[at..].find("crate::") {
                let start = at + i + "crate::".len();
                // A group may span lines: read the rest of the file from here.
                let offset: usize =
                    text.lines().take(n).map(|l| l.len() + 1).sum::<usize>() + start;
                for p in paths(&text[offset..]) {
                    let Some(used) = module_of(&p, &row_of) else {
                        continue;
                    };
                    if used == own {
                        continue;
                    }
                    checked += 1;
                    assert!(
                        row_of[used] > own_row,
                        "`{module}` uses `{used}` (line {}: {}), which is not in a row below its own \
                         in the table of src/lib.rs",
                        n + 1,
                        line.trim()
                    );
                }
                at = start;
            }
        }
    }
    assert!(
        checked > 100,
        "only {checked} uses checked: is the parser reading the code?"
    );
}

#[test]
fn the_model_knows_neither_the_command_line_nor_the_terminal() {
    // The model computes: clap (the command line) and indicatif (the progress bar, behind
    // `crate::progress`) are the runner's; a pass is handed something to report to.
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut all = Vec::new();
    files(&src, &src.join("model"), &mut all);
    assert!(all.len() > 10, "the model's files are found");
    for (module, path) in &all {
        let text = code(&std::fs::read_to_string(path).unwrap());
        for word in ["clap", "indicatif", "crate::progress", "crate::cli"] {
            assert!(
                !text.contains(word),
                "`{module}` names `{word}`: the model is computation only"
            );
        }
    }
}

#[test]
fn a_folder_imported_bare_is_followed() {
    let row_of: BTreeMap<String, usize> =
        [("commands::info".to_string(), 1), ("runner".to_string(), 0)].into();
    let text =
        "use crate::commands;\nfn f() { commands::info::summary(); crate::commands::info::x(); }";
    assert_eq!(
        through_bare(text.to_string(), &row_of),
        "use crate::commands;\nfn f() { crate::commands::info::summary(); crate::commands::info::x(); }"
    );
}

#[test]
fn use_trees_are_read_whole() {
    assert_eq!(paths("model::call::Frame;"), ["model::call::Frame"]);
    assert_eq!(
        paths("render::{culls, labels::{self, thread_label}};"),
        [
            "render::culls",
            "render::labels",
            "render::labels::thread_label"
        ]
    );
    assert_eq!(
        paths("model::engine::{\n    input, origin,\n};"),
        ["model::engine::input", "model::engine::origin"]
    );
}
