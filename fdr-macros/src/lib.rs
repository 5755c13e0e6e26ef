//! Placeholder: the macros land with issue 3.
use proc_macro::TokenStream;

/// Instruments a function (placeholder: returns the item unchanged).
#[proc_macro_attribute]
pub fn instrument_fdr(_args: TokenStream, item: TokenStream) -> TokenStream {
    item
}

/// Records the enclosing block (placeholder: expands to nothing).
#[proc_macro]
pub fn fdr_scope(_input: TokenStream) -> TokenStream {
    TokenStream::new()
}
