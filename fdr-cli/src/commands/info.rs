//! `fdr info`: what a log holds, and what was lost while recording it. One pass gathers the
//! log's tables, the function ids its records use and its cull events;
//! [`crate::render::info`] prints them.

use fdr_format::events::{EventKind, LogInfo, ThreadStats};

use crate::model::culls::Culls;
use crate::model::input::Log;
use crate::model::names::Slots;
use crate::progress::Progress;
use crate::CliError;

/// What `fdr info` shows.
#[derive(Debug)]
pub struct Summary {
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
///
/// ```no_run
/// use fdr_cli::{commands::info::summary, model::input::Log, progress::Progress};
/// let s = summary(&Log::open("app.fdr".as_ref())?, &Progress::hidden())?;
/// println!("{} threads", s.threads.len());
/// # Ok::<(), fdr_cli::CliError>(())
/// ```
pub fn summary(log: &Log, progress: &Progress) -> Result<Summary, CliError> {
    let name = log.name().to_string();
    let mut dec = log.decoder()?;
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
    Ok(Summary {
        name,
        len: log.len(),
        info: dec.info().clone(),
        threads: dec.threads().to_vec(),
        called: called.ids().to_vec(),
        culls,
    })
}
