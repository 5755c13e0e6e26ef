//! The expansion of `#[instrument_fdr]` and `fdr_scope!`, on `proc_macro2` tokens.
//!
//! The attribute is handled in two steps. Validation (`item.rs`, `function.rs`, on the options
//! of `options.rs`, leaving out what `trivial.rs` finds cannot take long) checks the annotation against the item and decides everything about its
//! recording, into the typed model of `model.rs`; expansion (`emit.rs`, with `async_fn.rs`
//! writing an `async fn` as the plain `fn` that returns its future) turns that model into
//! code and cannot fail. Validation runs in both modes, so a wrong annotation fails every build.
//!
//! Kept apart from the `proc_macro` entry points so that tests can run it on token input
//! (`fdr-macros/tests/expansion.rs` includes this module by path and compares the output with
//! the snapshots in `fdr-tests/expand/`). Every function here takes `enabled` (the `enable`
//! feature) as an argument instead of reading it, so both modes can be tested from one build.

mod async_fn;
mod awaits;
mod emit;
mod function;
mod item;
mod model;
mod name;
mod options;
mod private;
mod scope;
mod trivial;

use proc_macro2::TokenStream;

/// Expands `#[instrument_fdr(attr)] item`.
///
/// With `enabled` false the arguments are still checked, then `item` comes back as written. A
/// wrong annotation gives its error beside the item as written, so that the code using the item
/// compiles and the error is the only one.
pub fn instrument(attr: TokenStream, item: TokenStream, enabled: bool) -> TokenStream {
    match item::annotated(attr, item.clone()) {
        Ok(annotated) if enabled => emit::annotated(annotated),
        Ok(_) => item::as_written(item),
        Err(error) => {
            let mut out = item::as_written(item);
            out.extend(error.into_compile_error());
            out
        }
    }
}

/// Expands `#[deferred_task(attr)] item`, the second half of an `#[instrument_fdr]` on an
/// `async fn` that tracing's `#[instrument]` had to see first (`emit::deferred`). Only ever
/// written by the first half, which runs in the enabled mode alone.
pub fn deferred(attr: TokenStream, item: TokenStream) -> TokenStream {
    match emit::deferred(attr, item.clone()) {
        Ok(expanded) => expanded,
        Err(error) => {
            let mut out = item;
            out.extend(error.into_compile_error());
            out
        }
    }
}

/// Expands `fdr_scope!(input)`.
pub fn scope(input: TokenStream, enabled: bool) -> TokenStream {
    scope::expand(input, enabled).unwrap_or_else(syn::Error::into_compile_error)
}
