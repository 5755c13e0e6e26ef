#![deny(warnings)]
//! The instrumented code is warning-free under `-D warnings` for bodies written on one line,
//! which the expansion once put in braces the compiler took for the user's (`unused_braces`):
//! this file does not compile if any expansion warns.

// Kept on one line each, as written: rustfmt would spread the bodies over lines.
#[rustfmt::skip]
mod shapes {
    pub struct S(pub u32);

    #[fdr::instrument_fdr]
    pub fn one() -> u32 { 1 }

    #[fdr::instrument_fdr]
    pub fn unit() {}

    #[fdr::instrument_fdr]
    pub fn call(x: u32) -> u32 { one() + x }

    #[fdr::instrument_fdr]
    impl S {
        pub fn get(&self) -> u32 { self.0 }
        pub fn calls(&self) -> u32 { one() }
        #[fdr::instrument_fdr(always)]
        pub fn always(&self) -> u32 { self.0 }
    }

    #[fdr::instrument_fdr(tail)]
    pub fn tail(x: u32) -> u32 { call(x) }

    #[fdr::instrument_fdr(tail)]
    pub fn tail_return(x: u32) -> u32 { return call(x); }

    #[fdr::instrument_fdr]
    pub async fn asynchronous(x: u32) -> u32 { x }

    #[fdr::instrument_fdr(log_args)]
    pub fn args(x: u32) -> u32 { x }

    #[fdr::instrument_fdr]
    // SAFETY: the pointer is made from a reference, valid for the read.
    pub fn unsafe_block(x: &u32) -> u32 { unsafe { *(x as *const u32) } }

    #[fdr::instrument_fdr]
    pub fn ret(x: u32) -> u32 { return x; }

    #[fdr::instrument_fdr]
    pub fn lit() -> &'static str { "x" }

    #[fdr::instrument_fdr]
    pub fn if_expr(x: bool) -> u32 { if x { 1 } else { 2 } }

    #[fdr::instrument_fdr]
    pub fn match_expr(x: Option<u32>) -> u32 { match x { Some(v) => v + 1, None => 0 } }

    #[fdr::instrument_fdr]
    pub fn looping(n: u32) -> u32 { let mut i = 0; while i < n { i += 1; } i }
}

use shapes::*;

#[test]
fn one_line_bodies_compile_without_warnings_and_keep_their_values() {
    let s = S(4);
    assert_eq!(
        (
            one(),
            call(2),
            s.get(),
            s.calls(),
            s.always(),
            tail(1),
            tail_return(1)
        ),
        (1, 3, 4, 1, 4, 2, 2)
    );
    unit();
    assert_eq!((args(5), unsafe_block(&6), ret(7), lit()), (5, 6, 7, "x"));
    assert_eq!((if_expr(false), match_expr(Some(8)), looping(3)), (2, 9, 3));
    drop(asynchronous(9));
}
