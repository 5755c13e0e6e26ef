//! A progress bar on stderr for long inputs, and nothing otherwise.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Inputs smaller than this finish before a bar would be worth drawing.
const MIN_BYTES: u64 = 64 << 20;

/// Progress through one or more passes over a log, drawn as a bar: the model's
/// [`crate::model::engine::Report`].
pub(crate) struct Progress {
    bar: Option<ProgressBar>,
    len: u64,
}

impl Progress {
    /// A bar over `passes` reads of a `len`-byte file, shown only when stderr is a terminal and
    /// the file is large.
    pub(crate) fn new(len: u64, passes: u64) -> Progress {
        if len < MIN_BYTES || !std::io::stderr().is_terminal() {
            return Progress::hidden();
        }
        let bar = ProgressBar::with_draw_target(
            Some(len * passes),
            ProgressDrawTarget::stderr_with_hz(10),
        );
        if let Ok(style) =
            ProgressStyle::with_template("{spinner} {bytes}/{total_bytes} {wide_bar} {eta}")
        {
            bar.set_style(style);
        }
        Progress {
            bar: Some(bar),
            len,
        }
    }

    /// No bar.
    pub(crate) fn hidden() -> Progress {
        Progress { bar: None, len: 0 }
    }

    /// Pass `pass` (from 0) has reached byte `offset`.
    #[inline]
    pub(crate) fn at(&self, pass: u64, offset: u64) {
        if let Some(b) = &self.bar {
            b.set_position(pass * self.len + offset);
        }
    }

    /// Removes the bar.
    pub(crate) fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

impl crate::model::engine::Report for Progress {
    fn at(&self, pass: u64, offset: u64) {
        Progress::at(self, pass, offset);
    }
}

#[cfg(test)]
mod tests_from_docs {
    //! The examples of this module's items, run as tests (the module is the crate's own; an
    //! example may leave a binding or an import unused, as a documentation example does).
    #![allow(unused_imports, unused_variables)]

    #[test]
    fn progress() {
        use crate::progress::Progress;
        let p = Progress::hidden();
        p.at(0, 100); // does nothing when hidden
        p.finish();
    }
}
