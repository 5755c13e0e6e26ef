//! Writes annotated copies of a crate's sources: finds every function with a body by parsing the
//! file with `syn` (positions from `proc-macro2`'s span locations) and inserts an attribute
//! before it, or before its `impl` block or trait, as text, so the rest of the file stays byte
//! for byte what its authors wrote.

use std::path::Path;

use syn::spanned::Spanned;
use syn::{Attribute, ImplItem, Item, Signature, TraitItem};

/// How a crate is annotated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Way {
    /// Pristine.
    None,
    /// `#[fdr::instrument_fdr]` on every function with a body, each its own: the strictest
    /// case, no compile-time rule leaves anything out.
    Each,
    /// The documented bulk rule: `#[fdr::instrument_fdr]` on every `impl` block and every
    /// trait with provided methods (trivial methods left out by the macro), and on each free
    /// function.
    Bulk,
    /// `#[tracing::instrument(skip_all)]` on every function with a body.
    Tracing,
    /// `#[fastrace::trace]` on every function with a body.
    Fastrace,
}

impl Way {
    /// Every way, in table order.
    pub const ALL: [Way; 5] = [Way::None, Way::Each, Way::Bulk, Way::Tracing, Way::Fastrace];

    /// Its name in paths and tables.
    pub fn name(self) -> &'static str {
        match self {
            Way::None => "none",
            Way::Each => "each",
            Way::Bulk => "bulk",
            Way::Tracing => "tracing",
            Way::Fastrace => "fastrace",
        }
    }

    fn attribute(self) -> &'static str {
        match self {
            Way::None => "",
            Way::Each | Way::Bulk => "#[::fdr::instrument_fdr]",
            Way::Tracing => "#[::tracing::instrument(skip_all)]",
            Way::Fastrace => "#[::fastrace::trace]",
        }
    }
}

/// Where to insert what, as (line, column) of the annotated item's first token.
type Insertions = Vec<(usize, usize)>;

/// `src` annotated `way`, and how many attributes were inserted. With `slow`, the body of the
/// function whose name is `slow` (last path segment, for example `parse_group`) starts with
/// `slow_call` (a statement), for the check that a slow call of a culled function is caught.
pub fn annotate(
    src: &str,
    way: Way,
    slow: Option<(&str, &str)>,
) -> Result<(String, usize), String> {
    let file = syn::parse_file(src).map_err(|e| format!("{e} at {:?}", e.span().start()))?;
    let mut at = Insertions::new();
    let mut bodies = Vec::new();
    for item in &file.items {
        visit(item, way, &mut at, slow.map(|s| s.0), &mut bodies);
    }
    let mut inserts: Vec<(usize, String)> = at
        .iter()
        .map(|&(line, col)| (offset(src, line, col), format!("{} ", way.attribute())))
        .collect();
    if let Some((_, stmt)) = slow {
        for &(line, col) in &bodies {
            // Just after the body's opening brace.
            inserts.push((offset(src, line, col) + 1, format!(" {stmt} ")));
        }
    }
    inserts.sort_by_key(|b| std::cmp::Reverse(b.0));
    let mut out = src.to_string();
    for (off, text) in &inserts {
        out.insert_str(*off, text);
    }
    Ok((out, at.len()))
}

/// Byte offset of 1-based `line`, 0-based character `col`.
fn offset(src: &str, line: usize, col: usize) -> usize {
    let start: usize = src.split_inclusive('\n').take(line - 1).map(str::len).sum();
    let text = &src[start..];
    text.char_indices()
        .nth(col)
        .map_or(src.len(), |(i, _)| start + i)
}

fn start_of(span: proc_macro2::Span) -> (usize, usize) {
    let s = span.start();
    (s.line, s.column)
}

fn is_test(attrs: &[Attribute]) -> bool {
    attrs.iter().any(|a| {
        let p = a.path();
        p.is_ident("test")
            || (p.is_ident("cfg")
                && a.meta
                    .require_list()
                    .is_ok_and(|l| l.tokens.to_string().contains("test")))
    })
}

/// A signature the attribute takes: not `const` (a `const fn` cannot record), not a test.
fn takes(sig: &Signature, attrs: &[Attribute]) -> bool {
    sig.constness.is_none() && !is_test(attrs)
}

fn visit(
    item: &Item,
    way: Way,
    at: &mut Insertions,
    slow: Option<&str>,
    bodies: &mut Vec<(usize, usize)>,
) {
    let mut body = |name: &syn::Ident, block: &syn::Block| {
        if slow.is_some_and(|s| name == s) {
            bodies.push(start_of(block.brace_token.span.open()));
        }
    };
    match item {
        Item::Fn(f) if takes(&f.sig, &f.attrs) => {
            body(&f.sig.ident, &f.block);
            if way != Way::None {
                at.push(start_of(f.span()));
            }
        }
        Item::Impl(i) if !is_test(&i.attrs) => {
            let fns: Vec<_> = i
                .items
                .iter()
                .filter_map(|m| match m {
                    ImplItem::Fn(f) => Some(f),
                    _ => None,
                })
                .collect();
            for f in &fns {
                if takes(&f.sig, &f.attrs) {
                    body(&f.sig.ident, &f.block);
                }
            }
            match way {
                Way::None => {}
                Way::Bulk => {
                    if fns.iter().any(|f| takes(&f.sig, &f.attrs)) {
                        at.push(start_of(i.span()));
                    }
                }
                _ => at.extend(
                    fns.iter()
                        .filter(|f| takes(&f.sig, &f.attrs))
                        .map(|f| start_of(f.span())),
                ),
            }
        }
        Item::Trait(t) if !is_test(&t.attrs) => {
            let provided: Vec<_> = t
                .items
                .iter()
                .filter_map(|m| match m {
                    TraitItem::Fn(f) if f.default.is_some() && takes(&f.sig, &f.attrs) => Some(f),
                    _ => None,
                })
                .collect();
            for f in &provided {
                if let Some(b) = &f.default {
                    body(&f.sig.ident, b);
                }
            }
            match way {
                Way::None => {}
                Way::Bulk => {
                    if !provided.is_empty() {
                        at.push(start_of(t.span()));
                    }
                }
                _ => at.extend(provided.iter().map(|f| start_of(f.span()))),
            }
        }
        Item::Mod(m) if !is_test(&m.attrs) => {
            if let Some((_, items)) = &m.content {
                for i in items {
                    visit(i, way, at, slow, bodies);
                }
            }
        }
        _ => {}
    }
}

/// Annotates every `.rs` file under `dir` in place; returns the attributes inserted.
pub fn annotate_dir(dir: &Path, way: Way, slow: Option<(&str, &str)>) -> Result<usize, String> {
    let mut n = 0;
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()
        .map_err(|e| e.to_string())?;
    entries.sort();
    for p in entries {
        if p.is_dir() {
            n += annotate_dir(&p, way, slow)?;
        } else if p.extension().is_some_and(|e| e == "rs") {
            let src = std::fs::read_to_string(&p).map_err(|e| format!("{}: {e}", p.display()))?;
            let (out, k) =
                annotate(&src, way, slow).map_err(|e| format!("{}: {e}", p.display()))?;
            std::fs::write(&p, out).map_err(|e| format!("{}: {e}", p.display()))?;
            n += k;
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SRC: &str = "pub fn a() -> u32 { 1 }\nconst fn b() {}\nstruct S;\nimpl S {\n    #[inline]\n    pub fn m(&self) {}\n    const fn k() {}\n}\ntrait T {\n    fn req(&self);\n    fn prov(&self) { self.req() }\n}\n#[cfg(test)]\nmod tests { fn t() {} }\nmod inner { fn x() { let _ = 1; } }\n";

    #[test]
    fn each_annotates_every_function_with_a_body_but_const_and_tests() {
        let (out, n) = annotate(SRC, Way::Each, None).unwrap();
        assert_eq!(n, 4);
        assert_eq!(
            out,
            "#[::fdr::instrument_fdr] pub fn a() -> u32 { 1 }\nconst fn b() {}\nstruct S;\nimpl S {\n    #[::fdr::instrument_fdr] #[inline]\n    pub fn m(&self) {}\n    const fn k() {}\n}\ntrait T {\n    fn req(&self);\n    #[::fdr::instrument_fdr] fn prov(&self) { self.req() }\n}\n#[cfg(test)]\nmod tests { fn t() {} }\nmod inner { #[::fdr::instrument_fdr] fn x() { let _ = 1; } }\n"
        );
    }

    #[test]
    fn bulk_annotates_blocks_and_free_functions() {
        let (out, n) = annotate(SRC, Way::Bulk, None).unwrap();
        assert_eq!(n, 4);
        assert!(out.contains("#[::fdr::instrument_fdr] impl S {"), "{out}");
        assert!(out.contains("#[::fdr::instrument_fdr] trait T {"), "{out}");
        assert!(out.contains("#[::fdr::instrument_fdr] fn x()"), "{out}");
    }

    #[test]
    fn a_slow_call_goes_first_in_the_named_body() {
        let (out, _) = annotate(SRC, Way::None, Some(("m", "slow();"))).unwrap();
        assert!(out.contains("pub fn m(&self) { slow(); }"), "{out}");
    }
}
