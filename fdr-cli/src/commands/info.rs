//! `fdr info`: what a log holds, and what was lost while recording it. One pass gathers the
//! log's tables, the function ids its records use and its cull events;
//! [`crate::render::info`] prints them. Given a crash box, what the box says of its process,
//! then the same of the log `fdr recover` would make of it, recovered in memory.

use std::io::Read;

use fdr_format::crash_box::{self, BoxInfo, Liveness, Source};
use fdr_format::events::{EventDecoder, EventKind, LogInfo, ThreadStats};

use crate::model::culls::Culls;
use crate::model::engine::Report;
use crate::model::input::Log;
use crate::model::names::Slots;
use crate::CliError;

/// What `fdr info` shows.
#[derive(Debug)]
pub(crate) struct LogSummary {
    /// The log's name as given.
    pub name: String,
    /// Its size in bytes.
    pub len: u64,
    /// Header and tables.
    pub info: LogInfo,
    /// Threads, with complete windows.
    pub threads: Vec<ThreadStats>,
    /// The function ids the records use.
    pub called: Vec<u32>,
    /// Cull events.
    pub culls: Culls,
}

/// Reads `log` once.
pub(crate) fn summary(log: &Log, progress: &dyn Report) -> Result<LogSummary, CliError> {
    summary_of(log.decoder()?, log.name(), log.len(), progress)
}

/// [`summary`] of the log `dec` reads, named `name`, of `len` bytes.
fn summary_of<R: Read>(
    mut dec: EventDecoder<R>,
    name: &str,
    len: u64,
    progress: &dyn Report,
) -> Result<LogSummary, CliError> {
    let name = name.to_string();
    let mut called = Slots::default();
    let mut culls = Culls::default();
    let mut n: u32 = 0;
    let r = dec.for_each(|e, at| {
        match e.kind {
            EventKind::Enter { id }
            | EventKind::EnterArgs { id }
            | EventKind::Exit { id }
            | EventKind::TailExit { id } => {
                called.slot(id)?;
            }
            EventKind::Cull { kind, id, .. } => culls.event(e.thread, e.tsc, kind, id),
            _ => {}
        }
        n = n.wrapping_add(1);
        if n & 0xfffff == 0 {
            progress.at(0, at);
        }
        Ok::<(), CliError>(())
    });
    r.map_err(|e| e.in_log(&name))?;
    Ok(LogSummary {
        name,
        len,
        info: dec.info().clone(),
        threads: dec.threads().to_vec(),
        called: called.ids().to_vec(),
        culls,
    })
}

/// What `fdr info` shows of a crash box.
#[derive(Debug)]
pub(crate) struct BoxSummary {
    /// The box's name as given.
    pub name: String,
    /// Its size in bytes.
    pub len: u64,
    /// What its header and tables say.
    pub info: BoxInfo,
    /// Whether its process runs.
    pub liveness: Liveness,
    /// The log recovered from it (in memory), as [`summary`] sees it.
    pub log: LogSummary,
}

/// Reads the crash box `source` (named `name`: its header, tables, slots and what its process
/// wrote) and the log it recovers to, in memory; nothing is written, and the box is not taken.
/// Whether its process runs is told by its lock when the box has one and is `file`, else by its
/// pid.
pub(crate) fn box_summary<S: Source + ?Sized>(
    name: &str,
    source: &S,
    file: Option<&std::fs::File>,
    progress: &dyn Report,
) -> Result<BoxSummary, CliError> {
    let input = |err| CliError::Input {
        path: name.to_string(),
        err,
    };
    let r = crash_box::recover_from(source, false).map_err(input)?;
    // A box with a lock is its running process's while the lock is held; an older one, while
    // a process with its pid and start runs.
    let running = match file {
        Some(f) if r.info.flags & crash_box::flags::LOCKED != 0 => crash_box::is_held(f),
        _ => crash_box::liveness(&r.info) == Liveness::Alive,
    };
    let dec = EventDecoder::new(&r.log[..]).map_err(input)?;
    let log = summary_of(
        dec,
        &format!("{name}, recovered in memory"),
        r.log.len() as u64,
        progress,
    )?;
    Ok(BoxSummary {
        name: name.to_string(),
        len: source.size(),
        liveness: if running {
            Liveness::Alive
        } else {
            Liveness::Gone
        },
        info: r.info,
        log,
    })
}

#[cfg(test)]
mod tests_from_docs {
    //! The examples of this module's items, run as tests (the module is the crate's own; an
    //! example may leave a binding or an import unused, as a documentation example does).
    #![allow(unused_imports, unused_variables)]

    use crate::model::engine::Silent;

    // Compiled, not run: it reads a log that is not there.
    #[allow(dead_code)]
    fn summary() -> Result<(), crate::CliError> {
        use crate::{commands::info::summary, model::input::Log, progress::Progress};
        let s = summary(&Log::open("app.fdr".as_ref())?, &Silent)?;
        println!("{} threads", s.threads.len());
        Ok::<(), crate::CliError>(())
    }

    #[test]
    fn box_summary() {
        use crate::{commands::info::box_summary, progress::Progress};
        use fdr_testkit::crash_box::BoxBuilder;
        let mut b = BoxBuilder::new("app", 2_000_000_000, "/tmp/app.fdr");
        b.function(1, "app::main");
        let mut buf = b.buffer(7, 0, 1_000);
        buf.enter(1, 1_000);
        buf.finish();
        let path = std::env::temp_dir().join(format!("fdr-box-summary-{}", std::process::id()));
        std::fs::write(&path, b.finish()).unwrap();
        let len = std::fs::metadata(&path).unwrap().len();
        let source =
            fdr_format::crash_box::FileSource::new(std::fs::File::open(&path).unwrap(), len);
        let s = box_summary("app.box", &source, Some(source.file()), &Silent).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert_eq!(
            (s.info.functions, s.log.threads[0].function_records),
            (1, 1)
        );
    }
}
