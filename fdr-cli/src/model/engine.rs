//! The replay as the command runs it: [`fdr_format::replay`] (the one engine that turns
//! records into calls, with its rules) over a log, with the command's errors and progress bar,
//! and what a first pass learns to open each thread's inferred calls when its window starts
//! ([`Plan`]).
//!
//! [`crate::model::pass`] runs it over a log behind a filter, in one reader or several.

use std::io::Read;

use fdr_format::events::{EventDecoder, LogInfo, ThreadStats};
use fdr_format::replay::{replay, Replay, ReplayError};
use fdr_format::sink::Sink;
use fdr_format::FormatError;

/// Where a pass over a log reports how far it got: the command's progress bar, or nothing
/// ([`Silent`]). The model is handed one, and never draws.
pub(crate) trait Report: Sync {
    /// Pass `pass` (from 0) has reached byte `offset` of the log.
    fn at(&self, pass: u64, offset: u64);
}

/// No report.
pub(crate) struct Silent;

impl Report for Silent {
    fn at(&self, _: u64, _: u64) {}
}

use crate::CliError;

/// What a first pass learned: the frames open when each thread's window started, and the
/// log's tables.
#[derive(Clone, Debug, Default)]
pub(crate) struct Plan {
    /// Per thread index, the functions of the calls open when its window started, from the
    /// bottom of the stack up ([`fdr_format::first_pass`]).
    pub initial: Vec<Vec<u32>>,
    /// Time zero of outputs: the earliest window start of a thread with calls that pass the
    /// filters (from the start of the time range), else of any thread with calls.
    pub origin: u64,
    /// Header and tables.
    pub info: LogInfo,
    /// Threads, with complete windows.
    pub threads: Vec<ThreadStats>,
    /// Per thread index: some of its calls pass the filters (the threads outputs show).
    pub shown: Vec<bool>,
    /// Calls that pass the filters.
    pub calls: u64,
}

impl Plan {
    /// True if thread index `t` has calls that pass the filters.
    pub(crate) fn shows(&self, t: usize) -> bool {
        self.shown.get(t).copied().unwrap_or(false)
    }
}

/// A decoded log's tables and threads.
#[derive(Clone, Debug)]
pub(crate) struct Decoded {
    /// Header and tables.
    pub info: LogInfo,
    /// Threads, with complete windows.
    pub threads: Vec<ThreadStats>,
}

pub(super) fn input(path: &str) -> impl Fn(FormatError) -> CliError + '_ {
    move |err| CliError::Input {
        path: path.to_string(),
        err,
    }
}

/// Replays the log `dec` reads, whatever its input, into `sink`, whose errors become the
/// command's; `path` names it in errors. With a plan, the calls open when each thread's window
/// started are entered then. (No sink of the command stops a replay early.)
pub(crate) fn replay_decoder<R: Read, S: Sink<Error = E>, E>(
    mut dec: EventDecoder<R>,
    path: &str,
    sink: &mut S,
    plan: Option<&Plan>,
    progress: &dyn Report,
    pass: u64,
) -> Result<Decoded, CliError>
where
    CliError: From<E>,
{
    let at = |offset| progress.at(pass, offset);
    let how = Replay {
        initial: plan.map_or(&[][..], |p| &p.initial[..]),
        progress: Some(&at),
    };
    replay(&mut dec, sink, &how).map_err(|e| failed(e, path))?;
    Ok(Decoded {
        info: dec.info().clone(),
        threads: dec.threads().to_vec(),
    })
}

/// A replay's error as the command's, naming the log `path`.
fn failed<E>(e: ReplayError<E>, path: &str) -> CliError
where
    CliError: From<E>,
{
    match e {
        ReplayError::Log(e) => input(path)(e),
        ReplayError::Sink { error, .. } => CliError::from(error).in_log(path),
    }
}

#[cfg(test)]
mod tests_from_docs {
    //! The examples of this module's items, run as tests (the module is the crate's own; an
    //! example may leave a binding or an import unused, as a documentation example does).
    #![allow(unused_imports, unused_variables)]

    use crate::CliError;

    #[test]
    fn report() -> Result<(), CliError> {
        use crate::model::engine::{replay_decoder, Report};
        use fdr_format::events::EventDecoder;
        use fdr_format::sink::Ignore;
        use fdr_testkit::synth::LogBuilder;
        use std::sync::Mutex;

        /// Every report it is handed.
        struct Heard(Mutex<Vec<(u64, u64)>>);
        impl Report for Heard {
            fn at(&self, pass: u64, offset: u64) {
                self.0.lock().unwrap().push((pass, offset));
            }
        }
        let mut log = LogBuilder::new(1_000_000_000);
        let mut b = log.block(1, 0, 100);
        b.enter(8, 200);
        b.exit(8, 260);
        b.finish();
        let bytes = log.finish();
        let heard = Heard(Mutex::new(Vec::new()));
        let dec = EventDecoder::new(&bytes[..]).unwrap();
        replay_decoder(dec, "mem", &mut Ignore, None, &heard, 3)?;
        // A log this short is reported once, at its end, as the pass it was told.
        assert_eq!(heard.0.into_inner().unwrap(), [(3, bytes.len() as u64)]);
        Ok(())
    }

    #[test]
    fn replay_decoder() -> Result<(), CliError> {
        use crate::model::engine::replay_decoder;
        use crate::model::engine::Silent;
        use crate::CliError;
        use fdr_format::events::EventDecoder;
        use fdr_format::sink::{Exit, Sink, GO_ON};
        use fdr_testkit::synth::LogBuilder;
        use std::convert::Infallible;
        use std::ops::ControlFlow;

        struct Durations(Vec<(u32, u64, bool)>);
        impl Sink for Durations {
            type Error = Infallible;
            fn exit(&mut self, e: &Exit<'_>) -> Result<ControlFlow<()>, Infallible> {
                let f = e.frame;
                self.0.push((f.id, e.end - f.start, f.inferred));
                Ok(GO_ON)
            }
        }
        let mut log = LogBuilder::new(1_000_000_000);
        let mut b = log.block(1, 0, 100);
        b.exit(7, 150); // entered before the window: inferred entry at 100
        b.enter(8, 200);
        b.exit(8, 260);
        b.finish();
        let bytes = log.finish();
        let mut d = Durations(Vec::new());
        replay_decoder(
            EventDecoder::new(&bytes[..]).unwrap(),
            "mem",
            &mut d,
            None,
            &Silent,
            0,
        )?;
        assert_eq!(d.0, [(7, 50, true), (8, 60, false)]);
        Ok::<(), CliError>(())
    }
}
