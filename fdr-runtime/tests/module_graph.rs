//! The runtime's modules depend on each other one way: the graph of their `crate::` references
//! (outside test code) has no cycle. A new reference that closes one fails here, naming it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Each top-level module of `src` and the other modules its non-test code names.
fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    let mut dirs = vec![src.clone()];
    while let Some(dir) = dirs.pop() {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                files.push(p);
            }
        }
    }
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in &files {
        let rel = f.strip_prefix(&src).unwrap();
        let module = rel
            .iter()
            .next()
            .unwrap()
            .to_string_lossy()
            .replace(".rs", "");
        if module == "lib" || module == "race_tests" {
            continue;
        }
        let text = std::fs::read_to_string(f).unwrap();
        let code = text.split("#[cfg(test)]").next().unwrap_or("");
        let deps = g.entry(module.clone()).or_default();
        for (i, _) in code.match_indices("crate::") {
            let name: String = code[i + 7..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            deps.insert(name);
        }
        for (i, _) in code.match_indices("use crate::{") {
            let list = &code[i + 12..];
            let list = &list[..list.find('}').unwrap_or(0)];
            for item in list.split(',') {
                let name = item.trim().split("::").next().unwrap_or("").to_string();
                deps.insert(name);
            }
        }
        deps.remove(&module);
    }
    let known: BTreeSet<String> = g.keys().cloned().collect();
    for deps in g.values_mut() {
        deps.retain(|d| known.contains(d));
    }
    g
}

#[test]
fn the_runtime_modules_depend_one_way() {
    let g = graph();
    assert!(g.len() > 20, "found only {:?}", g.keys());
    // Depth-first search for a back edge.
    fn visit(
        m: &str,
        g: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        path: &mut Vec<String>,
    ) {
        state.insert(m.to_string(), 1);
        path.push(m.to_string());
        for d in &g[m] {
            match state.get(d) {
                Some(1) => panic!("a cycle: {} -> {d}", path.join(" -> ")),
                Some(_) => {}
                None => visit(d, g, state, path),
            }
        }
        path.pop();
        state.insert(m.to_string(), 2);
    }
    let mut state = BTreeMap::new();
    for m in g.keys() {
        if !state.contains_key(m) {
            visit(m, &g, &mut state, &mut Vec::new());
        }
    }
}
