//! Every misuse of `#[instrument_fdr]` and `fdr_scope!` is a compile error that says what to
//! write instead, at the exact span. The expected messages are in `fdr-tests/macro-ui/ui/*.stderr`;
//! regenerate them with `TRYBUILD=overwrite` after changing a message, and read them.

#[test]
fn misuse_is_a_clear_compile_error() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("ui/*.rs");
}

/// Correct uses compile without a warning under `#![deny(warnings)]`, and run.
#[test]
fn correct_use_warns_nothing() {
    let cases = trybuild::TestCases::new();
    cases.pass("ui/pass/*.rs");
}
