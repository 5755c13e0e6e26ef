//! `fdr replay`: the time-ordered call graph, one line per entry and exit, as uftrace's
//! `replay` shows it.
//!
//! ```text
//! #   DURATION      TID | FUNCTION
//!               [    11] | app::main() { *
//!     500 ns    [    11] |   app::parse();
//!               [    11] |   app::Worker::step() {
//!     100 ns    [    11] |     app::get();
//!     800 ns    [    11] |   } /* app::Worker::step */
//! ```
//!
//! A poll of an async task is followed by the task it served and the tasks made or awaited in
//! it (their polls are nested in it, or they were created in it: see
//! [`fdr_format::tasks::TaskParents`]): `/* task 7; made or awaited in it: task 8 */`.
//!
//! A call is one line when it made no call (its entry is held until the thread's next event
//! says whether one follows). Each thread's window is shown whole, one thread after another:
//! after a first pass (the plan), each thread is replayed on its own, the decoder seeking over
//! the other threads' blocks. Memory is the replay's: a frame per open call.

use std::collections::HashSet;
use std::fmt::Write as _;
use std::io::Write;
use std::ops::ControlFlow;

use fdr_format::sink::{Close, Enter, Exit, Frame, LinkSeen, PollSeen, Sink, TaskSeen, GO_ON};
use fdr_format::tasks::TaskParents;
use fdr_format::LinkKind;

use crate::escape::shown;
use crate::limits::{MAX_LINKED_TASKS, MAX_REPLAY_POLLS, MAX_SHOWN_FRAMES};
use crate::model::engine::Plan;
use crate::model::names::{Names, Slots};
use crate::model::task_polls::TreePolls;
use crate::model::thin_window;
use crate::render::labels::thread_label;
use crate::render::reason;
use crate::units::{write_human, TickRate};
use crate::CliError;

const SPACES: &str = "                                                                ";

/// `n` spaces.
fn indent(line: &mut String, mut n: usize) {
    while n > 0 {
        let k = n.min(SPACES.len());
        line.push_str(&SPACES[..k]);
        n -= k;
    }
}

/// The printer of one thread's lines: the [`Sink`] a thread's replay goes into.
pub(crate) struct Lines<'a> {
    out: &'a mut dyn Write,
    names: &'a Names,
    clock: TickRate,
    /// Escaped function names by slot.
    slots: Slots,
    labels: Vec<String>,
    /// An entry not written yet: (depth, frame).
    held: Option<(usize, Frame)>,
    /// The held entry's logged arguments.
    held_args: Vec<u64>,
    line: String,
    /// `[   tid] | `.
    prefix: String,
    scratch: String,
    marks: Marks,
    /// The depth of the next entry: the calls open on the thread.
    depth: usize,
    /// The tasks made or awaited in each poll of the thread.
    parents: TaskParents,
    /// With `--task`: the entry offsets of the polls to show, alone.
    only: Option<&'a HashSet<u64>>,
    /// The depth of the poll being shown, with `only`.
    showing: Option<usize>,
    /// The poll shown last has just exited: its poll event, next, is shown too.
    tie_next: bool,
}

/// Which marks appeared, for the notes at the end.
#[derive(Clone, Copy, Default)]
struct Marks {
    inferred: bool,
    open: bool,
    deep: bool,
}

impl Lines<'_> {
    /// Whether lines are written now: always, or with `only` inside a poll to show.
    fn shows(&self) -> bool {
        self.only.is_none() || self.showing.is_some()
    }

    fn label(&mut self, id: u32) -> Result<usize, CliError> {
        let s = self.slots.slot(id)?;
        if s == self.labels.len() {
            self.labels
                .push(shown(&self.names.function(id)).into_owned());
        }
        Ok(s)
    }

    /// The start of a line: the duration column (or blanks), the thread and the indentation.
    /// An open call's duration is its time so far, shown as a lower bound (`≥ 2.00 ms`).
    fn head(&mut self, dur: Option<u64>, depth: usize, open: bool) {
        self.line.clear();
        match dur {
            Some(ticks) => {
                // Right-aligned in 10 columns (units are one or two characters wide).
                let mut d = std::mem::take(&mut self.scratch);
                d.clear();
                if open {
                    d.push_str("\u{2265} ");
                }
                write_human(&mut d, self.clock.ns(ticks));
                // Count characters, not bytes: µ and ≥ take more than one byte.
                let width = d.chars().count();
                self.line.push_str(&SPACES[..10usize.saturating_sub(width)]);
                self.line.push_str(&d);
                self.line.push_str("    ");
                self.scratch = d;
            }
            None => self.line.push_str("              "),
        }
        self.line.push_str(&self.prefix);
        if depth > MAX_SHOWN_FRAMES {
            indent(&mut self.line, MAX_SHOWN_FRAMES * 2);
            let _ = write!(self.line, "[depth {depth}] ");
            self.marks.deep = true;
        } else {
            indent(&mut self.line, depth * 2);
        }
    }

    fn flush(&mut self) -> Result<(), CliError> {
        self.line.push('\n');
        self.out
            .write_all(self.line.as_bytes())
            .map_err(|e| CliError::io("<output>", "writing the report", e))
    }

    /// `(a=1, b=2)`: the held call's logged arguments, named from the function table.
    fn push_args(&mut self, id: u32) {
        self.line.push('(');
        for (i, v) in self.held_args.iter().enumerate() {
            if i > 0 {
                self.line.push_str(", ");
            }
            let _ = write!(
                self.line,
                "{}={}",
                shown(&self.names.arg(id, i)),
                shown(&self.names.arg_value(id, i, *v))
            );
        }
        self.line.push(')');
    }

    /// Writes a held entry as the opening line of a call that makes calls.
    fn open_held(&mut self) -> Result<(), CliError> {
        if let Some((depth, f)) = self.held.take() {
            let s = self.label(f.id)?;
            self.head(None, depth, false);
            self.line.push_str(&self.labels[s]);
            self.push_args(f.id);
            self.line.push_str(" {");
            if f.inferred {
                self.line.push_str(" *");
                self.marks.inferred = true;
            }
            self.flush()?;
        }
        Ok(())
    }

    fn close_marks(&mut self, how: Close) {
        match how {
            Close::Exit => {}
            Close::TailExit => self.line.push_str(" tail"),
            Close::Unwound => self.line.push_str(" unwound"),
            Close::WindowEnd => {
                self.line.push_str(" (open)");
                self.marks.open = true;
            }
        }
    }
}

impl Sink for Lines<'_> {
    type Error = CliError;

    fn enter(&mut self, e: &Enter<'_>) -> Result<ControlFlow<()>, CliError> {
        self.parents.enter(e.thread, e.depth);
        self.tie_next = false;
        if let (Some(only), None) = (self.only, self.showing) {
            if !only.contains(&e.frame.at) {
                self.depth = e.depth + 1;
                return Ok(GO_ON);
            }
            self.showing = Some(e.depth);
        }
        self.open_held()?;
        self.depth = e.depth + 1;
        self.held = Some((e.depth, *e.frame));
        self.held_args.clear();
        self.held_args.extend_from_slice(e.args);
        Ok(GO_ON)
    }

    fn exit(&mut self, e: &Exit<'_>) -> Result<ControlFlow<()>, CliError> {
        let (depth, f, end, how) = (e.depth, e.frame, e.end, e.how);
        self.parents.exit(e.thread, depth);
        self.depth = depth;
        self.tie_next = false;
        if !self.shows() {
            return Ok(GO_ON);
        }
        if self.showing == Some(depth) {
            self.showing = None;
            self.tie_next = true;
        }
        let dur = end.saturating_sub(f.start);
        let s = self.label(f.id)?;
        if matches!(self.held, Some((d, _)) if d == depth) {
            self.held = None;
            self.head(Some(dur), depth, how == Close::WindowEnd);
            self.line.push_str(&self.labels[s]);
            self.push_args(f.id);
            self.line.push(';');
            if f.inferred {
                self.line.push_str(" *");
                self.marks.inferred = true;
            }
        } else {
            self.open_held()?;
            self.head(Some(dur), depth, how == Close::WindowEnd);
            self.line.push_str("} /* ");
            self.line.push_str(&self.labels[s]);
            self.line.push_str(" */");
        }
        self.close_marks(how);
        self.flush()?;
        Ok(GO_ON)
    }

    fn task(&mut self, t: &TaskSeen) -> Result<ControlFlow<()>, CliError> {
        self.parents.task(t);
        self.tie_next = false;
        Ok(GO_ON)
    }

    /// The poll that just exited: `/* task 7; made or awaited in it: task 8, task 3 */`.
    fn polled(&mut self, p: &PollSeen) -> Result<ControlFlow<()>, CliError> {
        let children = self.parents.polled(p);
        if !self.shows() && !std::mem::take(&mut self.tie_next) {
            return Ok(GO_ON);
        }
        self.head(None, self.depth, false);
        let _ = write!(self.line, "/* task {}", p.task);
        for (i, c) in children.iter().enumerate() {
            let sep = if i == 0 {
                "; made or awaited in it:"
            } else {
                ","
            };
            let _ = write!(self.line, "{sep} task {c}");
        }
        self.line.push_str(" */");
        self.flush()?;
        Ok(GO_ON)
    }

    /// A task tied to another, where the thread made the link (inside the calls open then):
    /// `/* task 9 (app::fetch) made inside task 8 (app::request) */`.
    fn link(&mut self, l: &LinkSeen) -> Result<ControlFlow<()>, CliError> {
        let link = l.link;
        if !self.shows() {
            return Ok(GO_ON);
        }
        self.open_held()?;
        let (task, other) = (self.label(link.id)?, self.label(link.other_id)?);
        self.head(None, self.depth, false);
        let how = match link.kind {
            LinkKind::Parent => "made inside",
            LinkKind::FollowsFrom => "follows from",
        };
        let _ = write!(
            self.line,
            "/* task {} ({}) {how} task {} ({}) */",
            link.task, self.labels[task], link.other_task, self.labels[other]
        );
        self.flush()?;
        Ok(GO_ON)
    }
}

/// Writes the replay of the threads `order` of the plan `p`: `each(t, lines)` replays thread
/// index `t` into the printer `lines`.
pub(crate) fn write(
    p: &Plan,
    order: &[usize],
    only: Option<(u64, &TreePolls)>,
    out: &mut dyn Write,
    each: &mut dyn FnMut(usize, &mut Lines<'_>) -> Result<(), CliError>,
) -> Result<(), CliError> {
    let names = Names::new(&p.info);
    let clock = TickRate::new(p.info.header.cycle_frequency);
    let w = |e| CliError::io("<output>", "writing the report", e);
    let mut out = std::io::BufWriter::with_capacity(1 << 16, out);
    if let Some(h) = reason::header(&p.info, &names, &clock, p.origin) {
        writeln!(out, "# {h}").map_err(w)?;
    }
    if let Some((root, tree)) = only {
        writeln!(
            out,
            "# task {root} and the tasks made or awaited in it: {} task(s) polled in the window, their polls alone",
            tree.tasks
        )
        .map_err(w)?;
    }
    writeln!(out, "#   DURATION      TID | FUNCTION").map_err(w)?;
    let mut marks = Marks::default();
    let order: Vec<usize> = match only {
        Some((_, tree)) => order
            .iter()
            .copied()
            .filter(|&t| tree.threads.contains(&(t as u32)))
            .collect(),
        None => order.to_vec(),
    };
    for (i, &t) in order.iter().enumerate() {
        let th = &p.threads[t];
        if i > 0 {
            writeln!(out, "#").map_err(w)?;
        }
        writeln!(out, "# {}", thread_label(&names, th.tid)).map_err(w)?;
        let mut lines = Lines {
            out: &mut out,
            names: &names,
            clock,
            slots: Slots::default(),
            labels: Vec::new(),
            held: None,
            held_args: Vec::new(),
            line: String::with_capacity(256),
            prefix: format!("[{:>6}] | ", th.tid),
            scratch: String::new(),
            marks,
            depth: 0,
            parents: TaskParents::new(MAX_LINKED_TASKS),
            only: only.map(|(_, tree)| &tree.at),
            showing: None,
            tie_next: false,
        };
        each(t, &mut lines)?;
        lines.open_held()?;
        marks = lines.marks;
    }
    match only {
        Some((root, tree)) if order.is_empty() => {
            writeln!(out, "no poll of task {root} in the window").map_err(w)?;
            if tree.left_out > 0 {
                writeln!(
                    out,
                    "({} polls past the first {MAX_REPLAY_POLLS} were not looked at)",
                    tree.left_out
                )
                .map_err(w)?;
            }
        }
        Some((_, tree)) if tree.left_out > 0 => {
            writeln!(
                out,
                "({} polls past the first {MAX_REPLAY_POLLS} were not looked at)",
                tree.left_out
            )
            .map_err(w)?;
        }
        _ if order.is_empty() => writeln!(out, "no calls").map_err(w)?,
        _ => {}
    }
    if marks.inferred {
        writeln!(
            out,
            "* entered before the recorded window: entry inferred at the window's start"
        )
        .map_err(w)?;
    }
    if marks.open {
        writeln!(
            out,
            "(open): still running when the window was written; \u{2265} its time so far"
        )
        .map_err(w)?;
    }
    if marks.deep {
        writeln!(
            out,
            "[depth N]: indentation stops at {MAX_SHOWN_FRAMES} levels; deeper lines say their depth"
        )
        .map_err(w)?;
    }
    if let Some(n) = thin_window::note(&p.info, &p.threads) {
        writeln!(out, "{n}").map_err(w)?;
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
    fn write() -> Result<(), crate::CliError> {
        use crate::commands::replay::{order, plan, thread};
        use crate::model::{filter::Filter, input::Log};
        use crate::progress::Progress;
        let (log, filter, progress) = (
            Log::open("app.fdr".as_ref())?,
            Filter::none(),
            Progress::hidden(),
        );
        let p = plan(&log, &filter, 1, &progress)?;
        crate::render::replay::write(
            &p,
            &order(&p),
            None,
            &mut std::io::stdout(),
            &mut |t, lines| thread(&log, &filter, &p, t, lines, &progress),
        )?;
        Ok::<(), crate::CliError>(())
    }
}
