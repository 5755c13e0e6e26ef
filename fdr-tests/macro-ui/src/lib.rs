//! The trybuild tests of `#[instrument_fdr]`'s and `fdr_scope!`'s diagnostics
//! (`tests/macro_ui.rs`, cases in `ui/`). Nothing to use: the package exists so that trybuild's
//! test project depends on `fdr` alone.
