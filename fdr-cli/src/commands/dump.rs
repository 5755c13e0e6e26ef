//! `fdr dump`: every record, one per line ([`crate::render::dump`]), optionally checking the
//! block grammar.

use fdr_format::reader::{Reader, Record};
use fdr_format::verify::{Backwards, BlockVerifier, TimeCheck};
use fdr_format::{FileHeader, FormatError};

use crate::model::input::Log;
use crate::CliError;

/// What a dump is written to ([`crate::render::dump::Printer`] writes the lines).
pub(crate) trait Dumper {
    /// The file header.
    fn header(&mut self, h: &FileHeader) -> std::io::Result<()>;
    /// The record at byte offset `at`.
    fn record(&mut self, at: u64, rec: &Record<'_>) -> std::io::Result<()>;
    /// After the record at `at`, a thread's time ran backwards.
    fn backwards(&mut self, at: u64, b: &Backwards) -> std::io::Result<()>;
    /// The whole log follows the block grammar.
    fn verified(&mut self, records: u64, blocks: u64, backwards: u64) -> std::io::Result<()>;
    /// Everything written so far is out.
    fn flush(&mut self) -> std::io::Result<()>;
}

/// Prints the records of `log`; with `verify`, stops at the first record that breaks the block
/// grammar, and adds a warning line after each record where a thread's time runs backwards (a
/// warning only: timestamp counters of different CPUs can disagree a little, so the log is
/// still valid; durations across such a point are shown as 0).
pub(crate) fn run(log: &Log, verify: bool, out: &mut dyn Dumper) -> Result<(), CliError> {
    let name = log.name().to_string();
    let file = log.file()?;
    let input = |err: FormatError| CliError::Input {
        path: name.clone(),
        err,
    };
    let w = |e: std::io::Error| CliError::io("<output>", "writing the dump", e);
    let mut r = Reader::new(std::io::BufReader::with_capacity(1 << 16, file)).map_err(input)?;
    out.header(r.header()).map_err(w)?;
    let mut v = BlockVerifier::new();
    let mut time = TimeCheck::default();
    let (mut records, mut blocks, mut backwards) = (0u64, 0u64, 0u64);
    loop {
        let (at, rec) = match r.next_record() {
            Ok(Some(x)) => x,
            Ok(None) => break,
            Err(e) => {
                let _ = out.flush();
                return Err(input(e));
            }
        };
        records += 1;
        if let Record::BufferExtents { .. } = rec {
            blocks += 1;
        }
        out.record(at, &rec).map_err(w)?;
        if verify {
            if let Err(e) = v.record(at, &rec) {
                let _ = out.flush();
                return Err(input(e));
            }
            if let Some(b) = time.record(&rec) {
                backwards += 1;
                out.backwards(at, &b).map_err(w)?;
            }
        }
    }
    if verify {
        if let Err(e) = v.finish(r.offset(), r.block_left()) {
            let _ = out.flush();
            return Err(input(e));
        }
        out.verified(records, blocks, backwards).map_err(w)?;
    }
    out.flush().map_err(w)
}

#[cfg(test)]
mod tests_from_docs {
    //! The examples of this module's items, run as tests (the module is the crate's own; an
    //! example may leave a binding or an import unused, as a documentation example does).
    #![allow(unused_imports, unused_variables)]

    // Compiled, not run: it reads a log that is not there.
    #[allow(dead_code)]
    fn run() -> Result<(), crate::CliError> {
        use crate::{commands::dump::run, model::input::Log, render::dump::Printer};
        let mut out = std::io::stdout();
        run(
            &Log::open("app.fdr".as_ref())?,
            true,
            &mut Printer::new(&mut out),
        )?;
        Ok::<(), crate::CliError>(())
    }
}
