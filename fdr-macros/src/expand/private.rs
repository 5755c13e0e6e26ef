//! The path of the module in `fdr` that expansions call into.
//!
//! What an expansion names in `fdr` is a contract between two crates released together, not a
//! public API, so the module's name carries the contract's version: an `fdr` and an
//! `fdr-macros` that disagree on it fail to build with "could not find `__private_v1` in `fdr`"
//! instead of miscompiling. Change the contract (a renamed item, a new argument), and the
//! version goes up here and in `fdr/src/lib.rs`, which declares the module.

use proc_macro2::{Span, TokenStream};
use quote::quote_spanned;

/// `::fdr::__private_v1`, resolved at the macro's call site.
pub fn path() -> TokenStream {
    path_at(Span::call_site())
}

/// `::fdr::__private_v1` at `span`, for code whose errors point into the user's tokens.
pub fn path_at(span: Span) -> TokenStream {
    quote_spanned!(span=> ::fdr::__private_v1)
}
