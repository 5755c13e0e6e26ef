//! The module table at the top of `src/lib.rs` is true: every top-level module (a folder, or a
//! file of its own) is in it, once, and every `crate::` path in a folder's files names a folder
//! in a row below its own, directly or through a name the root re-exports. A new import that
//! goes up (or sideways within a row) fails here with the two folders and the line. Within a
//! folder, files use each other freely.

use std::collections::BTreeMap;
use std::path::Path;

#[path = "common/module_table.rs"]
mod module_table;

use module_table::{code, row_of, rows};

/// The modules `lib.rs` declares.
fn declared(lib: &str) -> Vec<String> {
    lib.lines()
        .filter_map(|l| {
            let l = l.trim();
            let l = l.strip_prefix("pub ").unwrap_or(l);
            let l = l.strip_prefix("mod ")?;
            l.strip_suffix(';').map(str::to_string)
        })
        .collect()
}

/// The items `lib.rs` re-exports from its modules (`pub use config::{Config, Mode};`,
/// `pub use tables::functions::FnDesc;`), by the name they have at the crate's root, with the
/// top-level module each comes from: a `crate::Config` in a module's code uses `config`.
fn reexports(lib: &str, modules: &BTreeMap<String, usize>) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut rest = lib;
    while let Some(i) = rest.find("pub use ") {
        rest = &rest[i + "pub use ".len()..];
        let end = rest.find(';').unwrap_or(rest.len());
        let stmt = &rest[..end];
        rest = &rest[end..];
        let Some((module, _)) = stmt.split_once("::") else {
            continue;
        };
        if !modules.contains_key(module.trim()) {
            continue;
        }
        // The names: inside the braces, or the path's last segment.
        let items = match stmt.find('{') {
            Some(open) => &stmt[open + 1..],
            None => stmt.rsplit("::").next().unwrap_or(""),
        };
        for item in items.trim_matches(|c| c == '{' || c == '}').split(',') {
            // `memory as culling_memory`: the root name is the last word.
            let name = item.trim_matches(|c: char| c == '}' || c.is_whitespace());
            let name = name.split_whitespace().last().unwrap_or("");
            let name = name.rsplit("::").next().unwrap_or(name);
            if !name.is_empty() && name != "*" {
                out.insert(name.to_string(), module.trim().to_string());
            }
        }
    }
    out
}

/// Every module named by a `crate::` path in `code`, with the line it is on: `crate::x::..`,
/// `crate::x` and the members of `use crate::{a, b::c}`; a name the crate's root re-exports
/// counts as its module (`crate::Config` is `config`).
fn uses(code: &str, modules: &BTreeMap<String, usize>) -> Vec<(String, usize)> {
    uses_through(code, modules, &BTreeMap::new())
}

fn uses_through(
    code: &str,
    modules: &BTreeMap<String, usize>,
    roots: &BTreeMap<String, String>,
) -> Vec<(String, usize)> {
    let module_of = |name: &str| -> Option<String> {
        if modules.contains_key(name) {
            Some(name.to_string())
        } else {
            roots.get(name).cloned()
        }
    };
    let mut out = Vec::new();
    for (n, line) in code.lines().enumerate() {
        let mut rest = line;
        while let Some(i) = rest.find("crate::") {
            rest = &rest[i + "crate::".len()..];
            if rest.starts_with('{') {
                // A group may span lines: take it from the whole code.
                let start = code.lines().take(n).map(|l| l.len() + 1).sum::<usize>()
                    + (line.len() - rest.len())
                    + 1;
                let end = code[start..].find('}').map_or(code.len(), |e| start + e);
                for part in code[start..end].split(',') {
                    let name: String = part
                        .trim()
                        .chars()
                        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                        .collect();
                    if let Some(m) = module_of(&name) {
                        out.push((m, n + 1));
                    }
                }
                continue;
            }
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if let Some(m) = module_of(&name) {
                out.push((m, n + 1));
            }
        }
    }
    out
}

/// The code of top-level `module` (its file, or every file of its folder), each file without
/// comments and tests (see [`code`]), with each path that climbs to the crate's root through
/// `super::` written as `crate::` (a top-level module's `super::x` is `crate::x`; a file one
/// folder down, `super::super::x`).
fn source(src: &Path, module: &str) -> String {
    let flat = src.join(format!("{module}.rs"));
    let dir = src.join(module);
    if flat.exists() {
        let mut all = to_root(&code(&std::fs::read_to_string(&flat).unwrap()), 0);
        // Submodules of `module.rs` live in `module/`.
        if dir.is_dir() {
            all.push_str(&read_dir(&dir, 1));
        }
        return all;
    }
    read_dir(&dir, 1)
}

/// The code of `dir`'s files, whose modules are `depth` levels under the crate's top-level
/// modules (`mod.rs` one less, being its directory's module). A file's tests are cut from that
/// file alone: the files after it are still read.
fn read_dir(dir: &Path, depth: usize) -> String {
    let mut all = String::new();
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            all.push_str(&read_dir(&p, depth + 1));
        } else if p.extension().is_some_and(|e| e == "rs") {
            let d = if p.file_name().is_some_and(|n| n == "mod.rs") {
                depth - 1
            } else {
                depth
            };
            all.push_str(&to_root(&code(&std::fs::read_to_string(&p).unwrap()), d));
            all.push('\n');
        }
    }
    all
}

/// `code` of a module `depth` levels under a top-level one, with `super::` climbing to the
/// crate's root written `crate::`.
fn to_root(code: &str, depth: usize) -> String {
    code.replace(&"super::".repeat(depth + 1), "crate::")
}

#[test]
fn the_module_table_is_complete_and_no_module_uses_one_above_or_beside_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let lib = std::fs::read_to_string(src.join("lib.rs")).unwrap();
    let rows = rows(&lib);
    assert!(rows.len() > 5, "no module table found in src/lib.rs");
    let row_of = row_of(&rows);
    let mut declared = declared(&lib);
    declared.sort();
    declared.dedup();
    let listed: Vec<String> = row_of.keys().cloned().collect();
    assert_eq!(
        listed, declared,
        "the table in src/lib.rs must list exactly the modules lib.rs declares"
    );
    let roots = reexports(&lib, &row_of);
    let mut wrong = Vec::new();
    for (module, &row) in &row_of {
        let code = source(&src, module);
        for (used, line) in uses_through(&code, &row_of, &roots) {
            if used == *module {
                continue;
            }
            let used_row = row_of[&used];
            if used_row <= row {
                wrong.push(format!(
                    "`{module}` (row {}) uses `{used}` (row {}) at line {line} of its code",
                    row + 1,
                    used_row + 1
                ));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "imports that go up or sideways in the table of src/lib.rs:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn low_concerns_stay_below_the_ones_they_used_to_call() {
    // The edges that made the runtime a tangle, reversed: the recording path started recordings
    // (it now goes through the root's `START_FROM_ENV`); outputs took the whole session (they now
    // take the window it hands them); the function table named the trigger module for its flag.
    // These rows keep the direct edges forbidden: moving a folder back up to allow one fails here.
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let lib = std::fs::read_to_string(src.join("lib.rs")).unwrap();
    let row = row_of(&rows(&lib));
    for (low, high) in [
        ("record", "lifecycle"),
        ("output", "session"),
        ("output", "record"),
        ("tables", "trigger"),
        ("platform", "session"),
    ] {
        assert!(
            row[low] > row[high],
            "`{low}` must sit below `{high}` in the table of src/lib.rs"
        );
    }
}

#[test]
fn the_root_holds_no_code_but_the_seam_it_plugs() {
    // A module may use the root's own items without the table seeing it, so the root keeps only
    // module declarations, re-exports and the one seam that plugs a higher layer into a lower.
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let lib = code(&std::fs::read_to_string(src.join("lib.rs")).unwrap());
    let items: Vec<String> = lib
        .lines()
        .map(str::trim)
        .filter(|l| !l.starts_with("pub use ") && !l.starts_with("pub mod "))
        .filter_map(|l| {
            let l = l.strip_prefix("pub(crate) ").unwrap_or(l);
            let l = l.strip_prefix("pub ").unwrap_or(l);
            [
                "const ",
                "static ",
                "fn ",
                "struct ",
                "enum ",
                "impl ",
                "type ",
                "trait ",
                "macro_rules! ",
            ]
            .iter()
            .find_map(|k| l.strip_prefix(k))
            .map(|rest| {
                rest.chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect()
            })
        })
        .collect();
    assert_eq!(items, ["START_FROM_ENV"], "items defined in src/lib.rs");
}

#[test]
fn the_check_sees_an_upward_import() {
    // The checker itself: a module in a low row that names one above it is caught.
    let lib = "//! | modules | hold |\n//! |---|---|\n//! | `top` | a |\n//! | `low` | b |\n\nmod low;\nmod top;\n";
    let rows = rows(lib);
    assert_eq!(rows, vec![vec!["top".to_string()], vec!["low".to_string()]]);
    let modules: BTreeMap<String, usize> = [("top".to_string(), 0), ("low".to_string(), 1)].into();
    let code = code(
        "use crate::{top::X, other};\n// crate::low in a comment\nfn f() { crate::top::g() }\n",
    );
    assert_eq!(
        uses(&code, &modules),
        vec![("top".to_string(), 1), ("top".to_string(), 3)]
    );
    // Through a name the root re-exports, and through `super::` from a top-level module or a
    // submodule: the paths that slipped past before (`function_table -> config`,
    // `config -> error`).
    let roots = reexports("pub use top::{Thing, other as Renamed};\n", &modules);
    assert_eq!(roots["Thing"], "top");
    assert_eq!(roots["Renamed"], "top");
    let code = module_table::code(&format!(
        "use crate::{{Renamed, x}};\n{}\n{}\n",
        to_root("fn f() -> super::Thing {}", 0),
        to_root("use super::super::top::Y;", 1)
    ));
    assert_eq!(
        uses_through(&code, &modules, &roots),
        vec![
            ("top".to_string(), 1),
            ("top".to_string(), 2),
            ("top".to_string(), 3)
        ]
    );
}

#[test]
fn a_folder_is_read_whole_and_a_nested_reexport_counts_as_its_folder() {
    // A file's tests end that file's code, not the folder's: an upward import in the file after
    // one with tests is still seen (reading the folder as one text cut it at the first tests).
    let dir = std::env::temp_dir().join(format!("fdr-layers-{}", std::process::id()));
    let low = dir.join("low");
    std::fs::create_dir_all(&low).unwrap();
    std::fs::write(low.join("mod.rs"), "mod a;\nmod b;\n").unwrap();
    std::fs::write(
        low.join("a.rs"),
        "fn f() {}\n#[cfg(test)]\nmod tests {\n    use crate::top::T;\n}\n",
    )
    .unwrap();
    std::fs::write(low.join("b.rs"), "use super::super::top::U;\n").unwrap();
    let modules: BTreeMap<String, usize> = [("top".to_string(), 0), ("low".to_string(), 1)].into();
    let code = source(&dir, "low");
    std::fs::remove_dir_all(&dir).unwrap();
    let used = uses(&code, &modules);
    assert_eq!(used.len(), 1, "{code}");
    assert_eq!(used[0].0, "top");
    let roots = reexports(
        "pub use top::inner::{Thing, Other as Renamed};\npub use top::deep::One;\n",
        &modules,
    );
    assert_eq!(roots["Thing"], "top");
    assert_eq!(roots["Renamed"], "top");
    assert_eq!(roots["One"], "top");
}
