//! What the expansions of `#[instrument_fdr]` and `fdr_scope!` name, as
//! `::fdr::__private_v1::...`. Not a public API: a contract with the `fdr-macros` released
//! beside this crate, whose `expand/private.rs` names this module. The name carries the
//! contract's version: when an item here changes, both go to `__private_v2`, so that mismatched
//! crates fail to resolve the path instead of compiling against the wrong items.

use std::marker::PhantomData;

pub use fdr_macros::deferred_task;
pub use fdr_runtime::hooks::{enter, enter_args, exit, tail_exit, Awaited, TaskStart};
pub use fdr_runtime::linkme;
pub use fdr_runtime::{CallGuard, FnDesc, FnKindTag, Instrumented, LogArg, FUNCTIONS};
pub use std::sync::atomic::AtomicU8;

/// One argument on its way to `LogArg::fdr_arg`. `N` is a marker type named after the parameter,
/// so that a type that cannot be logged is reported with the parameter's name.
///
/// The expansion calls `(&ArgProbe::<_, x>::new(&x)).fdr_arg()`. Method lookup tries
/// [`ViaLogArg`] first (receiver `&ArgProbe`), which applies when the type implements `LogArg`;
/// otherwise it finds [`ViaFallback`] one auto-reference later, whose bound
/// `N: Unloggable<T>` fails with the message of [`Unloggable`].
///
/// ```
/// use fdr::__private_v1::{ArgProbe, ViaFallback as _, ViaLogArg as _};
/// enum n {}
/// let n = 7u32;
/// assert_eq!((&ArgProbe::<_, n>::new(&n)).fdr_arg(), 7);
/// ```
pub struct ArgProbe<'a, T: ?Sized, N> {
    value: &'a T,
    name: PhantomData<N>,
}

impl<'a, T: ?Sized, N> ArgProbe<'a, T, N> {
    /// Wraps the argument `value`.
    #[inline(always)]
    pub fn new(value: &'a T) -> Self {
        ArgProbe {
            value,
            name: PhantomData,
        }
    }
}

/// The path taken when the argument's type implements [`LogArg`].
pub trait ViaLogArg {
    /// The argument's 64 bits.
    fn fdr_arg(&self) -> u64;

    /// The argument's 64 bits and the kind of value its type records ([`LogArg::KIND`], a
    /// constant: the expansion notes it in the descriptor once, see
    /// [`FnDesc::note_arg_kinds`]).
    fn fdr_arg_kinded(&self) -> (u64, fdr_runtime::ArgKind);
}

impl<T: LogArg + ?Sized, N> ViaLogArg for ArgProbe<'_, T, N> {
    #[inline(always)]
    fn fdr_arg(&self) -> u64 {
        self.value.fdr_arg()
    }

    #[inline(always)]
    fn fdr_arg_kinded(&self) -> (u64, fdr_runtime::ArgKind) {
        (self.value.fdr_arg(), T::KIND)
    }
}

/// The path taken when it does not: never callable, it exists to fail with a clear message.
pub trait ViaFallback<T: ?Sized, N> {
    /// Fails to compile with the message of [`Unloggable`].
    fn fdr_arg(&self) -> u64
    where
        N: Unloggable<T>;

    /// Fails to compile with the message of [`Unloggable`].
    fn fdr_arg_kinded(&self) -> (u64, fdr_runtime::ArgKind)
    where
        N: Unloggable<T>;
}

impl<T: ?Sized, N> ViaFallback<T, N> for &ArgProbe<'_, T, N> {
    fn fdr_arg(&self) -> u64
    where
        N: Unloggable<T>,
    {
        unreachable!("Unloggable has no implementations")
    }

    fn fdr_arg_kinded(&self) -> (u64, fdr_runtime::ArgKind)
    where
        N: Unloggable<T>,
    {
        unreachable!("Unloggable has no implementations")
    }
}

/// Implemented by nothing: the bound that reports an argument whose type does not implement
/// [`LogArg`]. `Self` is the marker named after the argument, so the message can name it.
#[diagnostic::on_unimplemented(
    message = "argument `{Self}` cannot be logged: `{T}` does not implement `fdr::LogArg`",
    label = "`{T}` does not implement `fdr::LogArg`",
    note = "implement `fdr::LogArg` for `{T}` (one method, `fn fdr_arg(&self) -> u64`); or, for a type of another crate (an extractor such as `Path<u64>`), bind its value with a pattern and log that (`Path(id): Path<u64>` binds `id`); or leave `{Self}` out: `log_args(...)` lists the arguments to log"
)]
pub trait Unloggable<T: ?Sized> {}

/// The return type of a function pointer type. The future of an `async fn` that returns `!` has
/// `Output = <fn() -> ! as Returns>::Output`: stable Rust names `!` only as a return type.
///
/// ```
/// use fdr::__private_v1::Returns;
/// fn ever() -> impl std::future::Future<Output = <fn() -> ! as Returns>::Output> {
///     async { loop {} }
/// }
/// let _ = ever();
/// ```
pub trait Returns {
    /// The return type.
    type Output;
}

impl<T> Returns for fn() -> T {
    type Output = T;
}

/// The type name of a value's type; for a function item, the function's full path. A function
/// annotated alone names itself through a function nested in it that calls this (see
/// [`FnDesc::nested`]).
///
/// ```
/// fn here() {}
/// assert!(fdr::__private_v1::type_name_of(here).ends_with("::here"));
/// ```
pub fn type_name_of<T>(_: T) -> &'static str {
    std::any::type_name::<T>()
}
