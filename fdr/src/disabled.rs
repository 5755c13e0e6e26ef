//! The API with recording compiled out (no `enable` feature): the same items, which check what
//! they are given and record nothing. The runtime's engine is not even compiled, so nothing of
//! it is linked.

use std::io::Write;
use std::path::Path;

use fdr_runtime::{Config, Error, Stats};

/// Checks `config`, so that a bad configuration fails in every build, and starts nothing.
#[inline]
pub fn start(config: Config) -> Result<Recorder, Error> {
    config.validate()?;
    Ok(Recorder)
}

/// No recorder runs without the feature.
#[inline]
pub fn recorder() -> Option<Recorder> {
    None
}

/// A recorder that never records: every write succeeds and writes nothing.
#[derive(Clone)]
pub struct Recorder;

impl Recorder {
    #[inline]
    pub fn snapshot<W: Write + ?Sized>(&self, _out: &mut W) -> Result<(), Error> {
        Ok(())
    }

    #[inline]
    pub fn write_snapshot(&self, _path: impl AsRef<Path>) -> Result<(), Error> {
        Ok(())
    }

    #[inline]
    pub fn finish(&self, _path: impl AsRef<Path>) -> Result<(), Error> {
        Ok(())
    }

    #[inline]
    pub fn finish_to<W: Write + ?Sized>(&self, _out: &mut W) -> Result<(), Error> {
        Ok(())
    }

    #[inline]
    pub fn profile_to<W: Write + ?Sized>(&self, _out: &mut W) -> Result<(), Error> {
        Ok(())
    }

    #[inline]
    pub fn write_profile(&self, _path: impl AsRef<Path>) -> Result<(), Error> {
        Ok(())
    }

    #[inline]
    pub fn is_recording(&self) -> bool {
        false
    }

    #[inline]
    pub fn stats(&self) -> Stats {
        Stats::default()
    }
}

/// Nothing is recorded, so no trace is joined.
pub struct TraceScope;

#[inline]
pub fn join_trace(_traceparent: &str) -> TraceScope {
    TraceScope
}
