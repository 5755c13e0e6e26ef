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
        syn::Item::Mod(m) => &mut m.attrs,
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

/// Below tracing's `#[instrument]`, an `async fn` is expanded in two halves: the first rewrites
/// its awaits and writes `deferred_task` under `#[instrument]`, the second (after it) makes the
/// function the plain one returning its task. The second half's snapshot is of the first's
/// output with `#[instrument]` taken off as if it had run and changed nothing else.
#[test]
fn the_half_after_tracing_instrument_matches_its_snapshot() {
    let source = std::fs::read_to_string(snapshot_dir().join("async_tracing.rs")).unwrap();
    let (attr, item) = split(&source);
    let first: syn::ItemFn = syn::parse2(expand::instrument(attr, item, true)).unwrap();
    let mut item = first.clone();
    item.attrs
        .retain(|a| a.path().segments.last().unwrap().ident != "instrument");
    let index = item
        .attrs
        .iter()
        .position(|a| a.path().segments.last().unwrap().ident == "deferred_task")
        .expect("the first half writes deferred_task");
    assert_eq!(index, item.attrs.len() - 1, "below every other attribute");
    let attr = item.attrs.remove(index);
    let syn::Meta::List(list) = attr.meta else {
        panic!("deferred_task takes arguments")
    };
    let second = expand::deferred(list.tokens, item.into_token_stream()).to_string();
    if let Err(e) = check("async_tracing.deferred.rs", &rustfmt(&second)) {
        panic!("{e}");
    }
}

/// What `deferred_task` was not written by the first half is refused, and the item kept.
#[test]
fn a_deferred_task_written_by_hand_is_an_error_beside_the_item() {
    let item: TokenStream = "async fn f() {}".parse().unwrap();
    for attr in ["", "x", "{} [1]", "{} (a) b"] {
        let out = expand::deferred(attr.parse().unwrap(), item.clone()).to_string();
        assert!(out.starts_with("async fn f () { }"), "{attr:?}: {out}");
        assert!(
            out.contains("is written by `#[instrument_fdr]`"),
            "{attr:?}: {out}"
        );
    }
    let sync: TokenStream = "fn f() {}".parse().unwrap();
    let out = expand::deferred("{}".parse().unwrap(), sync).to_string();
    assert!(out.contains("should have kept it an `async fn`"), "{out}");
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
        // An annotated block or module loses the inner `#[instrument_fdr(...)]` it reads (its
        // functions', and a `skip` on an item of a module), which would otherwise expand again
        // on their own; everything else is the input.
        let mut expected: syn::Item = syn::parse2(item).unwrap();
        syn::visit_mut::VisitMut::visit_item_mut(&mut ReadByTheAttribute, &mut expected);
        assert_eq!(
            out.to_string(),
            expected.into_token_stream().to_string(),
            "{name}"
        );
    }
}

/// Removes the `#[instrument_fdr(...)]` that an annotation reads inside its item.
struct ReadByTheAttribute;

fn is_ours(attr: &syn::Attribute) -> bool {
    attr.path().segments.last().unwrap().ident == "instrument_fdr"
}

impl ReadByTheAttribute {
    /// Whether an `impl` block, trait or module inside an annotated module is left to its own
    /// attribute (true), after removing a `skip`.
    fn left_alone(attrs: &mut Vec<syn::Attribute>) -> bool {
        let own: Vec<String> = attrs
            .iter()
            .filter(|a| is_ours(a))
            .map(|a| a.to_token_stream().to_string())
            .collect();
        attrs.retain(|a| !(is_ours(a) && a.to_token_stream().to_string().contains("skip")));
        !own.is_empty()
    }
}

impl syn::visit_mut::VisitMut for ReadByTheAttribute {
    fn visit_item_mut(&mut self, item: &mut syn::Item) {
        let left_alone = match item {
            syn::Item::Fn(f) => {
                f.attrs.retain(|a| !is_ours(a));
                return;
            }
            syn::Item::Impl(i) => Self::left_alone(&mut i.attrs),
            syn::Item::Trait(t) => Self::left_alone(&mut t.attrs),
            syn::Item::Mod(m) => Self::left_alone(&mut m.attrs),
            _ => return,
        };
        if left_alone {
            return;
        }
        match item {
            syn::Item::Impl(i) => {
                for member in &mut i.items {
                    if let syn::ImplItem::Fn(f) = member {
                        f.attrs.retain(|a| !is_ours(a));
                    }
                }
            }
            syn::Item::Trait(t) => {
                for member in &mut t.items {
                    if let syn::TraitItem::Fn(f) = member {
                        f.attrs.retain(|a| !is_ours(a));
                    }
                }
            }
            syn::Item::Mod(m) => syn::visit_mut::visit_item_mod_mut(self, m),
            _ => {}
        }
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
        ("skip", "fn f() {}", "`skip` only applies inside"),
        (
            "always, skip",
            "fn f() {}",
            "`always` and `skip` contradict",
        ),
        ("trigger = \"5\"", "fn f() {}", "has no unit"),
        (
            "trigger = \"0ms\"",
            "fn f() {}",
            "zero would fire on every call",
        ),
        (
            "trigger = \"auto:k=0.5\"",
            "fn f() {}",
            "is not a number from 1 to 1000",
        ),
        (
            "trigger = \"auto:5\"",
            "fn f() {}",
            "is not a learned limit",
        ),
        ("trigger = \"1ms\"", "impl S {}", "put it on the method"),
        ("trigger = \"1ms\"", "mod m {}", "put it on the function"),
        ("log_args", "mod m {}", "put it on the function"),
        ("", "const fn f() {}", "cannot record a `const fn`"),
        ("", "struct S;", "not on a struct"),
        ("", "static S: u8 = 0;", "not on a static"),
        ("", "mod m;", "needs an inline module"),
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
        ("", "mod m;", "mod m;"),
        (
            "name = \"x\"",
            "mod m { fn a() { b() } }",
            "mod m { fn a() { b() } }",
        ),
        // Inside a module: the functions' own attributes and `skip`s are read by the module and
        // removed; an item with an attribute of its own keeps it, to expand itself.
        (
            "",
            "mod m {
                #[instrument_fdr(log_args(z))] fn a(n: u32) {}
                #[instrument_fdr] impl S { #[instrument_fdr(skip)] fn s(&self) {} }
                #[instrument_fdr(skip)] impl T { #[instrument_fdr] fn t(&self) {} }
                impl U { #[instrument_fdr(always)] fn u(&self) {} }
                mod inner { #[instrument_fdr(skip)] fn v() {} }
            }",
            "mod m {
                fn a(n: u32) {}
                #[instrument_fdr] impl S { #[instrument_fdr(skip)] fn s(&self) {} }
                impl T { #[instrument_fdr] fn t(&self) {} }
                impl U { fn u(&self) {} }
                mod inner { fn v() {} }
            }",
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

/// Each function of an annotated module is checked, nested blocks and modules included.
#[test]
fn every_wrong_function_of_a_module_is_reported() {
    let item = "mod m {
        #[instrument_fdr(log_args(z))] fn a(n: u32) {}
        fn ok() {}
        impl S { #[instrument_fdr(tail)] fn b(&self) {} }
        mod inner { #[instrument_fdr(skip, trigger = \"1s\")] fn c() { d() } }
        #[instrument_fdr(skip, always)] impl T {}
    }";
    for enabled in [true, false] {
        let out = expand::instrument(TokenStream::new(), item.parse().unwrap(), enabled);
        let out = out.to_string();
        assert_eq!(out.matches("compile_error").count(), 3, "{out}");
        assert!(out.contains("`z` is not a parameter of `a`"), "{out}");
        assert!(out.contains("`tail` needs the body"), "{out}");
        assert!(
            out.contains("`skip` leaves this function uninstrumented, so `trigger = \\\"1s\\\"`"),
            "{out}"
        );
        // An item with an attribute of its own that does not parse is left to that attribute,
        // which reports its own error when it expands.
        assert!(
            out.contains("# [instrument_fdr (skip , always)] impl T"),
            "{out}"
        );
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
