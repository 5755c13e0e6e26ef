//! The expansion of `#[instrument_fdr]` and `fdr_scope!`, on `proc_macro2` tokens.
//!
//! Kept apart from the `proc_macro` entry points so that tests can run it on token input
//! (`fdr-tests/tests/macro_expand.rs` includes this module by path and compares the output
//! with the snapshots in `fdr-tests/expand/`). Every function here takes `enabled` (the `enable`
//! feature) as an argument instead of reading it, so both modes can be tested from one build.

mod function;
mod item;
mod name;
mod options;
mod scope;

use proc_macro2::TokenStream;

/// Expands `#[instrument_fdr(attr)] item`.
///
/// With `enabled` false the arguments are still checked, then `item` comes back unchanged.
pub fn instrument(attr: TokenStream, item: TokenStream, enabled: bool) -> TokenStream {
    item::instrument(attr, item, enabled).unwrap_or_else(syn::Error::into_compile_error)
}

/// Expands `fdr_scope!(input)`.
pub fn scope(input: TokenStream, enabled: bool) -> TokenStream {
    scope::expand(input, enabled).unwrap_or_else(syn::Error::into_compile_error)
}
