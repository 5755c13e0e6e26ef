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
mod tests {
    use indicatif::ProgressBar;

    use crate::progress::{Progress, MIN_BYTES};

    #[test]
    fn a_small_input_gets_no_bar() {
        assert!(Progress::new(MIN_BYTES - 1, 2).bar.is_none());
        let p = Progress::hidden();
        p.at(0, 100);
        p.finish();
        assert!(p.bar.is_none());
    }

    #[test]
    fn the_bar_counts_every_pass_before_this_one() {
        // A bar drawn nowhere, so that the test does not depend on stderr being a terminal.
        let p = Progress {
            bar: Some(ProgressBar::hidden()),
            len: 1_000,
        };
        p.at(0, 250);
        assert_eq!(p.bar.as_ref().unwrap().position(), 250);
        p.at(2, 7);
        assert_eq!(p.bar.as_ref().unwrap().position(), 2_007);
        p.finish();
        assert!(p.bar.as_ref().unwrap().is_finished());
    }
}
