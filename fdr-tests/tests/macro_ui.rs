//! Every misuse of `#[instrument_fdr]` and `fdr_scope!` is a compile error that says what to
//! write instead, at the exact span. The expected messages are in `fdr-tests/ui/*.stderr`;
//! regenerate them with `TRYBUILD=overwrite` after changing a message, and read them.

#[test]
fn misuse_is_a_clear_compile_error() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("ui/*.rs");
}
