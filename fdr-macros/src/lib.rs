//! The `#[instrument_fdr]` attribute and the `fdr_scope!` macro of [fdr].
//!
//! Use them through the `fdr` crate, which re-exports both. They expand into calls to
//! `fdr`'s runtime only when the `enable` feature is on (the facade's `enable` feature turns it
//! on); without it, the attribute checks its arguments and returns the function untouched, and
//! `fdr_scope!` expands to nothing.
//!
//! [fdr]: https://docs.rs/fdr

mod expand;

use proc_macro::TokenStream;

/// Records every call of a function: its entry, and its exit however it is left (return, `?`,
/// early `return`, panic).
///
/// Goes on a free function, a method, an `impl` block (every method inside; a method marked
/// `#[instrument_fdr(skip)]` is left out), a trait (every method with a default body), and on
/// `async fn`, whose every poll is recorded as a call on the thread that polls it.
///
/// Options:
/// - `name = "..."`: the name in logs, instead of the derived `crate::module::function`,
///   `crate::module::Type::method` or `<crate::module::Type as crate::module::Trait>::method`.
/// - `log_args` (every parameter bound to a plain name) or `log_args(a, b)`: record these
///   arguments as 64-bit values through `fdr::LogArg`.
/// - `tail`: the body ends with a call; record the exit just before it, as a tail exit.
/// - `skip`: on a method of an annotated `impl` block, leave it out.
///
/// ```
/// #[fdr::instrument_fdr]
/// fn parse(input: &str) -> Result<u32, std::num::ParseIntError> {
///     input.trim().parse()
/// }
///
/// #[fdr::instrument_fdr(log_args(n))]
/// fn fib(n: u64) -> u64 {
///     if n < 2 { n } else { fib(n - 1) + fib(n - 2) }
/// }
///
/// struct Parser;
///
/// #[fdr::instrument_fdr]
/// impl Parser {
///     fn run(&self, s: &str) -> u32 {
///         parse(s).unwrap_or(0)
///     }
///     #[instrument_fdr(skip)]
///     fn hot(&self) -> u32 {
///         1
///     }
/// }
/// assert_eq!(Parser.run("12"), 12);
/// assert_eq!(fib(10), 55);
/// ```
#[proc_macro_attribute]
pub fn instrument_fdr(args: TokenStream, item: TokenStream) -> TokenStream {
    expand::instrument(args.into(), item.into(), cfg!(feature = "enable")).into()
}

/// Records the rest of the enclosing block as a call named `module::name`, where `module` is the
/// path of the module it is written in.
///
/// ```
/// fn handle(request: &[u8]) -> usize {
///     let header = {
///         fdr::fdr_scope!("parse_header");
///         request.iter().take_while(|b| **b != b'\n').count()
///     };
///     request.len() - header
/// }
/// assert_eq!(handle(b"GET\nbody"), 5);
/// ```
#[proc_macro]
pub fn fdr_scope(input: TokenStream) -> TokenStream {
    expand::scope(input.into(), cfg!(feature = "enable")).into()
}
