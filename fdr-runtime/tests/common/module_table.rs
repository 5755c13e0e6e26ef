//! Reading a crate's module table: the `| modules | ... |` table at the top of its `lib.rs`,
//! whose rows list modules that may only use modules in rows below. Shared by the runtime's
//! `tests/layers.rs` and the `fdr` command's `tests/modules.rs` (included by path).

/// The rows of the `| modules | ... |` table in `lib`'s `//!` comment, top first: the names
/// (or paths) in each row's first cell.
pub fn rows(lib: &str) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    let mut in_table = false;
    for line in lib.lines() {
        let Some(doc) = line.strip_prefix("//!") else {
            if in_table {
                break;
            }
            continue;
        };
        let doc = doc.trim();
        if doc.starts_with("| modules |") {
            in_table = true;
            continue;
        }
        if !in_table || doc.starts_with("|---") {
            continue;
        }
        if !doc.starts_with('|') {
            break;
        }
        let first = doc.trim_start_matches('|').split('|').next().unwrap_or("");
        let names: Vec<String> = first
            .split(',')
            .map(|n| n.trim().trim_matches('`').to_string())
            .filter(|n| !n.is_empty())
            .collect();
        rows.push(names);
    }
    rows
}

/// Each module's row (0: the top), checking that no module is in the table twice.
pub fn row_of(rows: &[Vec<String>]) -> std::collections::BTreeMap<String, usize> {
    let mut row_of = std::collections::BTreeMap::new();
    for (i, row) in rows.iter().enumerate() {
        for m in row {
            assert!(
                row_of.insert(m.clone(), i).is_none(),
                "`{m}` is twice in the table"
            );
        }
    }
    row_of
}

/// The code of a module without comments and without its `#[cfg(test)] mod tests`.
pub fn code(src: &str) -> String {
    let src = match src.find("#[cfg(test)]\nmod tests") {
        Some(i) => &src[..i],
        None => src,
    };
    src.lines()
        .map(|l| match l.find("//") {
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}
