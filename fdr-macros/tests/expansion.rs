//! Expansion snapshots of both modes: what `#[instrument_fdr]` and `fdr_scope!` turn code into,
//! compared with the files in `fdr-tests/expand/`.
//!
//! Each `NAME.rs` there is an input: an item whose first attribute is `#[instrument_fdr(...)]`
//! (or, for `scope.rs`, the input of `fdr_scope!`). Its expansion with the `enable` feature is
//! `NAME.enabled.rs`, without it `NAME.disabled.rs`, both formatted with `rustfmt`. The macro's
//! logic is included here by path, since a proc-macro crate exports nothing else, and both modes
//! are run from one build because it takes the mode as an argument.
//!
//! After an intended change, regenerate with `FDR_BLESS=1 cargo test -p fdr-macros --test
//! expansion` and read the diff.

#[path = "../src/expand/mod.rs"]
#[allow(dead_code)]
mod expand;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use proc_macro2::TokenStream;
use quote::ToTokens;

fn snapshot_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fdr-tests/expand")
}

/// Splits a case into the attribute's arguments and the item it is on.
fn split(source: &str) -> (TokenStream, TokenStream) {
    let mut item: syn::Item = syn::parse_str(source).expect("a case is one item");
    let attrs = match &mut item {
        syn::Item::Fn(f) => &mut f.attrs,
        syn::Item::Impl(i) => &mut i.attrs,
        syn::Item::Trait(t) => &mut t.attrs,
        _ => panic!("unsupported case item"),
    };
    let index = attrs
        .iter()
        .position(|a| a.path().is_ident("instrument_fdr"))
        .expect("a case has #[instrument_fdr]");
    let attr = attrs.remove(index);
    let args = match attr.meta {
        syn::Meta::Path(_) => TokenStream::new(),
        syn::Meta::List(list) => list.tokens,
        syn::Meta::NameValue(_) => panic!("bad case attribute"),
    };
    (args, item.into_token_stream())
}

fn rustfmt(code: &str) -> String {
    let mut child = Command::new("rustfmt")
        .args(["--edition", "2021", "--emit", "stdout"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("rustfmt runs (it ships with the toolchain: `rustup component add rustfmt`)");
    std::io::Write::write_all(child.stdin.as_mut().unwrap(), code.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "rustfmt rejected:\n{code}");
    String::from_utf8(out.stdout).unwrap()
}

/// Compares `actual` with the snapshot `name`, or writes it with `FDR_BLESS=1`.
fn check(name: &str, actual: &str) -> Result<(), String> {
    let path = snapshot_dir().join(name);
    if std::env::var_os("FDR_BLESS").is_some() {
        std::fs::write(&path, actual).unwrap();
        return Ok(());
    }
    let expected = std::fs::read_to_string(&path).map_err(|e| {
        format!(
            "{}: {e} (run with FDR_BLESS=1 to create it)",
            path.display()
        )
    })?;
    if expected == actual {
        Ok(())
    } else {
        Err(format!(
            "{name} differs from the snapshot\n--- expected\n{expected}\n--- actual\n{actual}"
        ))
    }
}

fn cases() -> Vec<(String, String)> {
    let mut cases: Vec<(String, String)> = std::fs::read_dir(snapshot_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_str().unwrap();
            name.ends_with(".rs") && name.matches('.').count() == 1
        })
        .map(|p| {
            let stem = p.file_stem().unwrap().to_str().unwrap().to_owned();
            (stem, std::fs::read_to_string(&p).unwrap())
        })
        .collect();
    cases.sort();
    assert!(
        cases.len() >= 8,
        "the snapshot cases are missing: {cases:?}"
    );
    cases
}

#[test]
fn expansions_match_the_snapshots() {
    let mut failures = Vec::new();
    for (name, source) in cases() {
        for enabled in [true, false] {
            let expanded = if name == "scope" {
                let input: TokenStream = source.parse().unwrap();
                // A statement macro: shown inside a function so that the snapshot is valid Rust.
                let body = expand::scope(input, enabled);
                format!("fn scope() {{ {body} }}")
            } else {
                let (attr, item) = split(&source);
                expand::instrument(attr, item, enabled).to_string()
            };
            let mode = if enabled { "enabled" } else { "disabled" };
            if let Err(e) = check(&format!("{name}.{mode}.rs"), &rustfmt(&expanded)) {
                failures.push(e);
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn without_the_feature_the_item_comes_back_token_for_token() {
    for (name, source) in cases() {
        if name == "scope" {
            let input: TokenStream = source.parse().unwrap();
            assert!(expand::scope(input, false).is_empty());
            continue;
        }
        let (attr, item) = split(&source);
        let out = expand::instrument(attr, item.clone(), false);
        // The annotated impl block loses its methods' inner `#[instrument_fdr(...)]`, which would
        // otherwise expand again on their own; everything else is the input.
        let expected = if name == "impl_block" {
            let mut imp: syn::ItemImpl = syn::parse2(item).unwrap();
            for it in &mut imp.items {
                if let syn::ImplItem::Fn(f) = it {
                    f.attrs
                        .retain(|a| a.path().segments.last().unwrap().ident != "instrument_fdr");
                }
            }
            imp.into_token_stream()
        } else {
            item
        };
        assert_eq!(out.to_string(), expected.to_string(), "{name}");
    }
}

#[test]
fn without_the_feature_mistakes_still_fail() {
    let bad = [
        ("log_arg", "fn f(x: u32) {}", "unknown option `log_arg`"),
        ("name = 5", "fn f() {}", "`name` takes a string literal"),
        ("tail, tail", "fn f() { g() }", "duplicate option `tail`"),
        (
            "log_args(y)",
            "fn f(x: u32) {}",
            "`y` is not a parameter of `f`",
        ),
        (
            "tail",
            "fn f() -> u32 { 1 + g() }",
            "`tail` needs the body to end with a call",
        ),
        ("skip", "fn f() {}", "`skip` only applies to a method"),
        ("", "const fn f() {}", "cannot record a `const fn`"),
        ("", "struct S;", "not on a struct"),
        ("", "static S: u8 = 0;", "not on a static"),
        ("", "mod m {}", "not on a module"),
    ];
    for (attr, item, message) in bad {
        let out = expand::instrument(attr.parse().unwrap(), item.parse().unwrap(), false);
        let out = out.to_string();
        assert!(
            out.contains("compile_error") && out.contains(message),
            "#[instrument_fdr({attr})] {item} gave {out}"
        );
    }
    for input in ["", "name", "5", "\"a\", \"b\""] {
        let out = expand::scope(input.parse().unwrap(), false).to_string();
        assert!(
            out.contains("compile_error") && out.contains("fdr_scope!"),
            "fdr_scope!({input}) gave {out}"
        );
    }
}

/// A wrong annotation must not take the item away: its users would fail too, burying the one
/// real error under "cannot find function". The item comes back as written, beside the error,
/// in both modes; inside a block, without the methods' own `#[instrument_fdr(...)]`, which
/// would otherwise expand (and fail) a second time.
#[test]
fn a_wrong_annotation_leaves_the_item_as_written_beside_its_error() {
    let bad = [
        ("log_args(y)", "fn f(x: u32) {}", "fn f(x: u32) {}"),
        (
            "tail",
            "fn f() -> u32 { 1 + g() }",
            "fn f() -> u32 { 1 + g() }",
        ),
        ("", "const fn f() {}", "const fn f() {}"),
        ("name = 5", "fn f() {}", "fn f() {}"),
        ("", "struct S;", "struct S;"),
        (
            "tail",
            "impl S { fn a(&self) {} }",
            "impl S { fn a(&self) {} }",
        ),
        (
            "",
            "impl S { fn a(&self) {} #[instrument_fdr(log_args(z))] fn b(&self, n: u32) {} }",
            "impl S { fn a(&self) {} fn b(&self, n: u32) {} }",
        ),
        (
            "",
            "trait T { #[instrument_fdr] fn a(&self); fn b(&self) {} }",
            "trait T { fn a(&self); fn b(&self) {} }",
        ),
    ];
    for enabled in [true, false] {
        for (attr, item, kept) in bad {
            let out = expand::instrument(attr.parse().unwrap(), item.parse().unwrap(), enabled);
            let (out, kept) = (
                out.to_string(),
                kept.parse::<TokenStream>().unwrap().to_string(),
            );
            let context =
                format!("#[instrument_fdr({attr})] {item} (enabled: {enabled}) gave {out}");
            let error = out.strip_prefix(&kept).expect(&context);
            assert!(
                error.trim_start().starts_with(":: core :: compile_error !"),
                "{context}"
            );
            assert_eq!(error.matches("compile_error").count(), 1, "{context}");
        }
    }
}

/// Each method of an annotated block is checked, so one build reports every wrong method.
#[test]
fn every_wrong_method_of_a_block_is_reported() {
    let item = "impl S {
        #[instrument_fdr(log_args(z))] fn a(&self, n: u32) {}
        fn ok(&self) {}
        #[instrument_fdr(tail)] fn b(&self) {}
    }";
    for enabled in [true, false] {
        let out = expand::instrument(TokenStream::new(), item.parse().unwrap(), enabled);
        let out = out.to_string();
        assert_eq!(out.matches("compile_error").count(), 2, "{out}");
        assert!(out.contains("`z` is not a parameter of `a`"), "{out}");
        assert!(
            out.contains("`tail` needs the body to end with a call"),
            "{out}"
        );
    }
}
