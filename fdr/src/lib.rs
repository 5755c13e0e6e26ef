//! Placeholder facade; filled in with the runtime.
pub use fdr_macros::{fdr_scope, instrument_fdr};
pub use fdr_runtime::{Config, Error, LogArg, Mode};

#[doc(hidden)]
pub mod __private {
    pub use fdr_runtime::hooks::{enter, enter_args, exit, tail_exit};
    pub use fdr_runtime::linkme;
    pub use fdr_runtime::{CallGuard, FnDesc, FnKindTag, Instrumented, LogArg, FUNCTIONS};
}
