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
/// Goes on a free function, a method, an `async fn` (below); or on many functions at once: an
/// `impl` block (its methods), a trait (its methods with a default body), an inline module
/// `mod name { ... }` (its functions, and the `impl` blocks, traits and inline modules in it, by
/// the same rules).
///
/// # `async fn`: tasks
///
/// Each call of an annotated `async fn` is a task, with a process-unique id. Its future is made
/// when the function is called, and the log holds:
///
/// - per task: its creation, at the call; its completion, when a poll returns the value; or its
///   cancellation, when the future is dropped before completing, including a future never
///   polled at all. `fdr account` gives each async function's task latency, from creation to
///   completion or cancellation, beside its polls;
/// - per poll: an entry and an exit, on the thread that polls it, as for a call.
///
/// To make the future at the call, the attribute writes the `async fn` as the plain function
/// rustc lowers it to, `fn f(..) -> impl Future<Output = T>` returning an `async move` block, and
/// keeps what the `async fn` meant: the future captures every lifetime of the signature, takes
/// every argument in at the call (used or not, `_` included, and all of `self`), drops them when
/// it is dropped or at the end of the body in the `async fn`'s order, and its body is checked
/// against `T`. Documentation therefore shows the function as `fn .. -> impl Future<..>`. A
/// trait method with an `async fn` default body works the same, and an annotated `async fn`
/// implements a trait's `async fn` or its `fn .. -> impl Future<Output = T> + Send`. The plain
/// function is marked `#[inline]` (unless it has an inline attribute of its own), as rustc's
/// lowering is in effect, so that its future is made where it is awaited rather than copied
/// there: a future is as big as everything its body holds across an `.await`.
///
/// With `log_args`, the arguments are read at the call and recorded on the first poll's entry;
/// the call is a task as any other.
///
/// Below an attribute macro that still has to see an `async fn` (`#[tokio::main]` written after
/// `#[instrument_fdr]` on the function, `#[async_trait]` after it on the block), the function
/// stays an `async fn`: it is a task as well, but its task begins at its first poll. Any
/// attribute after `#[instrument_fdr]` but the compiler's inert ones (`inline`, `must_use`,
/// `doc`, `cfg`, lint levels, tool attributes...) is taken for such a macro. tracing's
/// `#[instrument]` (or `#[tracing::instrument]`) is the exception: it keeps an `async fn` one,
/// so the attribute rewrites the awaits first and finishes after it has run, and the function
/// is a task from its call, inside which tracing's span is entered, as with no other attribute.
///
/// ```
/// #[fdr::instrument_fdr]
/// async fn lookup(key: &str) -> usize {
///     key.len()
/// }
///
/// let fut = lookup("k"); // a task of `lookup` is created here, at the call
/// drop(fut); // and cancelled here: dropped before completing, with no poll
/// ```
///
/// Options:
/// - `name = "..."`: the name in logs, instead of the derived `crate::module::function`,
///   `crate::module::Type::method` or `<crate::module::Type as crate::module::Trait>::method`.
/// - `log_args` (every parameter bound to a plain name) or `log_args(a, b)`: record these
///   arguments as 64-bit values through `fdr::LogArg`.
/// - `tail`: the body ends with a call; record the exit just before it, as a tail exit.
/// - `trigger = "50ms"`: a call that lasts longer than this writes a snapshot. The limit is a
///   duration (`5us`, `1.5ms`, `2s`, `1m`) above zero.
/// - `trigger = "auto"` (or `"auto:k=5"`): the limit is learned, 3 (or k) times the running p99
///   of the function's own calls, once 1,000 calls are seen, and never under 50 µs.
/// - `always`: inside an annotated block or module, record this function even if its body
///   cannot take long (below). On a block or module, do so for all of them. On a function
///   annotated alone it changes nothing.
/// - `skip`: inside an annotated block or module, leave this function (or this `impl` block,
///   trait or module of an annotated module) out.
///
/// `name`, `log_args(a, b)`, `tail` and `trigger` go on one function, not on a block or module;
/// a module takes no `log_args` at all.
///
/// # Annotating many functions at once
///
/// Annotating everything should not make every accessor pay for two clock reads, so an
/// annotated block or module leaves out the functions whose body cannot take long, as XRay's
/// instruction threshold does. A body cannot take long when it contains none of:
///
/// - a function or method call, except a call of a capitalised path such as `Some(x)`,
///   `Ok(v)`, `Self(n)` or `Kind::Leaf(n)`, which Rust's naming conventions make a tuple struct
///   or variant constructor;
/// - a loop (`loop`, `while`, `for`, an array repeat `[x; n]`);
/// - a macro invocation (a macro can hide calls and loops);
/// - `.await`, `yield` or a `try` block;
/// - indexing `a[i]` (a call of `Index::index`, a lookup for a map) or the `?` operator (a call
///   of `From::from`);
///
/// including inside closures and `async` blocks in the body. Literals, paths, field access,
/// references, dereferences, casts, struct and tuple construction, ranges, assignments, `let`,
/// `if`, `match`, and the arithmetic, comparison and logical operators are all such a body can
/// have. The check reads syntax, not types: an operator overloaded on your type runs your
/// `Add::add` (or `PartialEq::eq`, `Deref::deref`, a `Drop`), which is recorded where you
/// annotate it.
///
/// A function annotated on its own is always recorded, whatever its body: alone, or inside an
/// annotated block or module with its own `#[instrument_fdr(...)]` (other than `skip`), such
/// as `#[instrument_fdr(always)]` or `#[instrument_fdr(log_args)]`. Inside a module, an `impl`
/// block, trait or module with an `#[instrument_fdr(...)]` of its own is left to that
/// attribute, and its options; a `const fn` is never recorded; a module in a file of its own
/// (`mod name;`) cannot be seen and is left as it is (annotate the items in its file).
///
/// ```
/// #[fdr::instrument_fdr]
/// fn parse(input: &str) -> Result<u32, std::num::ParseIntError> {
///     input.trim().parse()
/// }
///
/// #[fdr::instrument_fdr(log_args(n), trigger = "50ms")]
/// fn fib(n: u64) -> u64 {
///     if n < 2 { n } else { fib(n - 1) + fib(n - 2) }
/// }
///
/// struct Parser {
///     pos: u32,
/// }
///
/// #[fdr::instrument_fdr]
/// impl Parser {
///     // Calls: recorded.
///     fn run(&self, s: &str) -> u32 {
///         parse(s).unwrap_or(0) + self.pos
///     }
///     // Cannot take long: left out.
///     fn pos(&self) -> u32 {
///         self.pos
///     }
///     // Cannot take long, kept in.
///     #[instrument_fdr(always)]
///     fn reset(&mut self) {
///         self.pos = 0;
///     }
///     // Left out.
///     #[instrument_fdr(skip)]
///     fn hot(&self) -> u32 {
///         self.pos.count_ones()
///     }
/// }
///
/// #[fdr::instrument_fdr]
/// mod lexer {
///     // Recorded.
///     pub fn count(s: &str) -> usize {
///         s.split_whitespace().filter(|w| is_word(w.as_bytes()[0])).count()
///     }
///     // Cannot take long: left out.
///     pub fn is_word(first: u8) -> bool {
///         first != b'#'
///     }
/// }
///
/// let mut parser = Parser { pos: 1 };
/// assert_eq!(parser.run("12"), 13);
/// assert_eq!(parser.pos() + parser.hot(), 2);
/// parser.reset();
/// assert_eq!(fib(10), 55);
/// assert_eq!(lexer::count("a # b"), 2);
/// ```
#[proc_macro_attribute]
pub fn instrument_fdr(args: TokenStream, item: TokenStream) -> TokenStream {
    expand::instrument(args.into(), item.into(), cfg!(feature = "enable")).into()
}

/// Not an API: the second half of `#[instrument_fdr]` on an `async fn` below tracing's
/// `#[instrument]`, which the first half writes (as `fdr::__private_v1::deferred_task`) under
/// that attribute, so that it runs once `#[instrument]` has.
#[doc(hidden)]
#[proc_macro_attribute]
pub fn deferred_task(args: TokenStream, item: TokenStream) -> TokenStream {
    expand::deferred(args.into(), item.into()).into()
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
