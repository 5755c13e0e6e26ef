//! The path of the module in `fdr` that expansions call into, named here only.

use proc_macro2::{Span, TokenStream};
use quote::quote_spanned;

/// `::fdr::__private`, resolved at the macro's call site.
pub fn path() -> TokenStream {
    path_at(Span::call_site())
}

/// `::fdr::__private` at `span`, for code whose errors point into the user's tokens.
pub fn path_at(span: Span) -> TokenStream {
    quote_spanned!(span=> ::fdr::__private)
}
