//! `fdr convert --format chrome`: Chrome trace-event JSON.
//!
//! One complete (`X`) event per call whose entry and exit are in the log, written at its exit
//! (viewers sort events by time; a file in exit order is half the size of `B`/`E` pairs), and
//! a `B`/`E` pair for a call whose entry is inferred, `ts` and `dur` in microseconds from the
//! earliest window start (three decimals: nanosecond precision), `M` events naming the process
//! and the threads. Logged arguments become the event's `args`; an inferred entry carries
//! `"inferred_start": true` on its `B`, a call closed at the window's end `"open_at_end": true`.
//! Each async task is an async slice (`b` and `e` events of category `task` whose `id` is the
//! task's id, on the threads that created and ended it) from its creation to its completion
//! (`"cancelled": true` when it was dropped first), over its polls' `B`/`E` slices; each wait
//! of a task at an await site is an async slice inside it (`await FILE:LINE:COLUMN`, same
//! category and id, from the poll that found the future pending to the end of the wait, with
//! `function`, `polls` and `dropped` in `args`), and each wake-up that led to a poll a flow
//! (`s` on the waking thread when the waker was called, `f` bound to the poll it asked for,
//! category `wake`, with `task` and `scheduled_ns`; none when the waking thread is unknown).
//! A task made or awaited in another (see [`fdr_format::tasks::TaskParents`]) has an async
//! instant (`n`) at its creation on its own track, `in FUNCTION task ID`, with `parent_task`
//! and `parent` in `args`.

use std::io::Write;
use std::ops::ControlFlow;

use fdr_format::awaits::{TaskAwait, TaskWake, Ties};
use fdr_format::sink::{
    AwaitSeen, Close, Enter, Exit, LinkSeen, PollSeen, Sink, TaskSeen, WokenSeen, GO_ON,
};
use fdr_format::tasks::{ParentFound, ParentsFound};
use fdr_format::TaskKind;

use crate::escape::json_string;
use crate::limits::MAX_CHROME_JSON_BYTES;
use crate::model::engine::Plan;
use crate::model::names::{Names, Slots};
use crate::model::tasks::Tasks;
use crate::units::TickRate;
use crate::CliError;

fn json(s: &str) -> String {
    json_string(s)
}

/// The timeline writer: the [`Sink`] the replay goes into.
pub(crate) struct Chrome<'a> {
    out: &'a mut dyn Write,
    dest: &'a str,
    names: Names,
    slots: Slots,
    /// JSON-quoted function names by slot.
    quoted: Vec<String>,
    /// `"pid":P,"tid":T` by thread index.
    ids: Vec<String>,
    clock: TickRate,
    origin: u64,
    line: String,
    tasks: Tasks,
    ties: Ties,
    /// The log's threads' ids, by index, and the pid a waking thread outside them is shown in.
    tids: Vec<i32>,
    pid: i32,
    /// Flows (wake-ups) written so far: the next one's id.
    flows: u64,
    parents: ParentsFound,
}

impl Chrome<'_> {
    fn ts(&mut self, tsc: u64) {
        let ns = self.clock.ns(tsc.saturating_sub(self.origin));
        use std::fmt::Write as _;
        let _ = write!(self.line, "{}.{:03}", ns / 1000, ns % 1000);
    }

    fn name(&mut self, id: u32) -> Result<usize, CliError> {
        let s = self.slots.slot(id)?;
        if s == self.quoted.len() {
            self.quoted.push(json(&self.names.function(id)));
        }
        Ok(s)
    }

    fn emit(&mut self) -> Result<(), CliError> {
        self.line.push_str("},\n");
        let r = self.out.write_all(self.line.as_bytes());
        self.line.clear();
        r.map_err(|e| CliError::io(self.dest, "cannot write the output", e))
    }
}

impl Chrome<'_> {
    /// A `b` or `e` event of the async slice of `task`; `args` is the inside of an `args`
    /// object, or empty.
    fn async_event(
        &mut self,
        ph: char,
        thread: u32,
        func: u32,
        task: u64,
        tsc: u64,
        args: &str,
    ) -> Result<(), CliError> {
        let s = self.name(func)?;
        let q = std::mem::take(&mut self.quoted[s]);
        let r = self.async_named(ph, thread, &q, task, tsc, args);
        self.quoted[s] = q;
        r
    }

    /// A `b` or `e` event named `quoted` (a JSON string) on the async track of `task`.
    fn async_named(
        &mut self,
        ph: char,
        thread: u32,
        quoted: &str,
        task: u64,
        tsc: u64,
        args: &str,
    ) -> Result<(), CliError> {
        self.line.push_str(&format!("{{\"ph\":\"{ph}\",\"name\":"));
        self.line.push_str(quoted);
        self.line
            .push_str(&format!(",\"cat\":\"task\",\"id\":\"0x{task:x}\",\"ts\":"));
        self.ts(tsc);
        self.line.push(',');
        self.line.push_str(&self.ids[thread as usize]);
        if !args.is_empty() {
            self.line.push_str(",\"args\":{");
            self.line.push_str(args);
            self.line.push('}');
        }
        self.emit()
    }

    /// A wait of a task: an async slice inside the task's.
    fn await_slice(&mut self, a: &TaskAwait) -> Result<(), CliError> {
        let name = json(&format!("await {}", self.names.site(a.event.site)));
        let args = format!(
            "\"function\":{},\"polls\":{},\"dropped\":{}",
            json(&self.names.function(a.event.function)),
            a.event.polls,
            a.event.dropped
        );
        self.async_named('b', a.thread, &name, a.task, a.start(), &args)?;
        self.async_named('e', a.thread, &name, a.task, a.end, "")
    }

    /// A wake-up: a flow from the waking thread, when it is known, to the poll it led to.
    fn wake_flow(&mut self, w: &TaskWake) -> Result<(), CliError> {
        let waker = w.event.waker_tid;
        if waker == 0 {
            return Ok(());
        }
        let from = match self.tids.iter().position(|&t| t == waker) {
            Some(t) => self.ids[t].clone(),
            None => format!("\"pid\":{},\"tid\":{waker}", self.pid),
        };
        let id = self.flows;
        self.flows += 1;
        self.line.push_str(&format!(
            "{{\"ph\":\"s\",\"name\":\"wake\",\"cat\":\"wake\",\"id\":{id},\"ts\":"
        ));
        self.ts(w.event.woken_at);
        self.line.push(',');
        self.line.push_str(&from);
        self.emit()?;
        self.line.push_str(&format!(
            "{{\"ph\":\"f\",\"bp\":\"e\",\"name\":\"wake\",\"cat\":\"wake\",\"id\":{id},\"ts\":"
        ));
        self.ts(w.end);
        self.line.push(',');
        self.line.push_str(&self.ids[w.thread as usize]);
        let scheduled = self.clock.ns(w.scheduled());
        self.line.push_str(&format!(
            ",\"args\":{{\"task\":{},\"scheduled_ns\":{scheduled}}}",
            w.task
        ));
        self.emit()
    }

    /// A task's parent, found: an instant at its creation on its track.
    fn parent_mark(&mut self, f: &ParentFound) -> Result<(), CliError> {
        let function = self.names.function(f.parent_function);
        let name = json(&format!("in {function} task {}", f.parent));
        let args = format!(
            "\"parent_task\":{},\"parent\":{}",
            f.parent,
            json(&function)
        );
        self.async_named('n', f.thread, &name, f.task, f.created, &args)
    }

    /// The ends of the tasks cut by the window, once the log is read (`end`: the log's end).
    fn finish_tasks(&mut self, end: u64) -> Result<(), CliError> {
        for t in std::mem::take(&mut self.tasks).finish(end) {
            if t.inferred {
                let a = "\"inferred_start\":true";
                self.async_event('b', t.start_thread, t.function, t.task, t.start, a)?;
            }
            if t.open {
                let a = "\"open_at_end\":true";
                self.async_event('e', t.end_thread, t.function, t.task, t.end, a)?;
            }
        }
        Ok(())
    }
}

impl Sink for Chrome<'_> {
    type Error = CliError;

    fn awaited(&mut self, a: &AwaitSeen) -> Result<ControlFlow<()>, CliError> {
        if let Some(a) = self.ties.awaited(a) {
            self.await_slice(&a)?;
        }
        Ok(GO_ON)
    }

    fn woken(&mut self, w: &WokenSeen) -> Result<ControlFlow<()>, CliError> {
        self.ties.woken(w);
        Ok(GO_ON)
    }

    fn link(&mut self, l: &LinkSeen) -> Result<ControlFlow<()>, CliError> {
        if let Some(f) = self.parents.link(l) {
            self.parent_mark(&f)?;
        }
        Ok(GO_ON)
    }

    fn polled(&mut self, p: &PollSeen) -> Result<ControlFlow<()>, CliError> {
        for f in self.parents.polled(p) {
            self.parent_mark(&f)?;
        }
        let (waits, wakes) = self.ties.polled(p);
        for w in &wakes {
            self.wake_flow(w)?;
        }
        for a in &waits {
            self.await_slice(a)?;
        }
        Ok(GO_ON)
    }

    fn task(&mut self, t: &TaskSeen) -> Result<ControlFlow<()>, CliError> {
        let (thread, tsc, ev) = (t.thread, t.tsc, t.event);
        self.tasks.event(thread, tsc, t.window, ev)?;
        self.ties.task(t);
        self.parents.task(t);
        match ev.kind {
            TaskKind::Created => self.async_event('b', thread, ev.id, ev.task, tsc, ""),
            TaskKind::Completed => self.async_event('e', thread, ev.id, ev.task, tsc, ""),
            TaskKind::Cancelled => {
                self.async_event('e', thread, ev.id, ev.task, tsc, "\"cancelled\":true")
            }
        }?;
        Ok(GO_ON)
    }

    fn enter(&mut self, e: &Enter<'_>) -> Result<ControlFlow<()>, CliError> {
        let f = e.frame;
        self.parents.enter(e.thread, e.depth);
        // A call whose begin is known is one complete event, written at its end.
        if !f.inferred {
            return Ok(GO_ON);
        }
        self.head('B', f.id, f.start, e.thread)?;
        self.args(f.id, e.args, "\"inferred_start\":true");
        self.emit()?;
        Ok(GO_ON)
    }

    fn exit(&mut self, e: &Exit<'_>) -> Result<ControlFlow<()>, CliError> {
        let Exit {
            thread,
            frame: f,
            end,
            how,
            args,
            ..
        } = *e;
        self.ties.exit(thread, f.id);
        self.parents.exit(thread, e.depth);
        let mark = match how {
            Close::WindowEnd => "\"open_at_end\":true",
            Close::Unwound => "\"closed_by_caller_exit\":true",
            Close::Exit | Close::TailExit => "",
        };
        if f.inferred {
            self.head('E', f.id, end, thread)?;
            self.args(f.id, &[], mark);
            self.emit()?;
            return Ok(GO_ON);
        }
        self.head('X', f.id, f.start, thread)?;
        let start_ns = self.clock.ns(f.start.saturating_sub(self.origin));
        let dur = self
            .clock
            .ns(end.saturating_sub(self.origin))
            .saturating_sub(start_ns);
        use std::fmt::Write as _;
        let _ = write!(self.line, ",\"dur\":{}.{:03}", dur / 1000, dur % 1000);
        self.args(f.id, args, mark);
        self.emit()?;
        Ok(GO_ON)
    }
}

impl Chrome<'_> {
    /// The start of an event of phase `ph` for function `id` at `tsc` on `thread`.
    fn head(&mut self, ph: char, id: u32, tsc: u64, thread: u32) -> Result<(), CliError> {
        let s = self.name(id)?;
        self.line.push_str("{\"ph\":\"");
        self.line.push(ph);
        self.line.push_str("\",\"name\":");
        let q = std::mem::take(&mut self.quoted[s]);
        self.line.push_str(&q);
        self.quoted[s] = q;
        self.line.push_str(",\"cat\":\"fdr\",\"ts\":");
        self.ts(tsc);
        self.line.push(',');
        self.line.push_str(&self.ids[thread as usize]);
        Ok(())
    }

    /// The `args` object: the logged arguments of `id`, then `mark` (fdr's flags, or empty);
    /// nothing when both are empty.
    fn args(&mut self, id: u32, args: &[u64], mark: &str) {
        if args.is_empty() && mark.is_empty() {
            return;
        }
        self.line.push_str(",\"args\":{");
        for (i, v) in args.iter().enumerate() {
            if i > 0 {
                self.line.push(',');
            }
            let n = json(&self.names.arg(id, i));
            use std::fmt::Write as _;
            // A number stays one; other kinds (text, a float, a flag) as they read.
            match self.names.arg_kind(id, i) {
                fdr_format::args::ArgKind::Unsigned => {
                    let _ = write!(self.line, "{n}:{v}");
                }
                kind => {
                    let _ = write!(self.line, "{n}:{}", json(&kind.show(*v)));
                }
            }
        }
        if !mark.is_empty() {
            if !args.is_empty() {
                self.line.push(',');
            }
            self.line.push_str(mark);
        }
        self.line.push('}');
    }
}

/// The pid a thread's events are shown under: its blocks' `Pid`, else the run's.
pub(crate) fn pid_of(p: &Plan, thread: usize) -> i32 {
    match p.threads.get(thread) {
        Some(t) if t.pid != 0 => t.pid,
        _ => p.info.run.as_ref().map_or(0, |r| r.pid),
    }
}

/// The process name: the run's program name, else `pid <pid>`.
pub(crate) fn process_name(p: &Plan, pid: i32) -> String {
    match &p.info.run {
        Some(r) if !r.program.is_empty() => r.program.clone(),
        _ => format!("pid {pid}"),
    }
}

/// About how many bytes of Chrome JSON `calls` calls take, their names `name_bytes` long on
/// average: one complete event each, about 85 bytes besides the name.
pub(crate) fn estimate(calls: u64, name_bytes: u64) -> u64 {
    calls.saturating_mul(85 + name_bytes)
}

/// Writes, to Chrome JSON `out` (`dest` names it in errors), the timeline that `replay` replays into it (the calls the plan `p` chose); `replay` returns when the log was taken; warns
/// on standard error when the output will be larger than [`MAX_CHROME_JSON_BYTES`].
pub(crate) fn write(
    p: &Plan,
    log_name: &str,
    out: &mut dyn Write,
    dest: &str,
    replay: &mut dyn FnMut(&mut Chrome<'_>) -> Result<u64, CliError>,
) -> Result<(), CliError> {
    let names_len = if p.info.functions.is_empty() {
        8
    } else {
        p.info
            .functions
            .iter()
            .map(|f| f.name.len() as u64)
            .sum::<u64>()
            / p.info.functions.len() as u64
    };
    let size = estimate(p.calls, names_len);
    if size > MAX_CHROME_JSON_BYTES {
        eprintln!(
            "fdr: warning: the Chrome JSON will be about {:.1} GiB, more than the {} GiB that \
             chrome://tracing and Perfetto's JSON importer handle; use --format fxt (Perfetto \
             reads it), or a filter (--thread, --function, --from/--to, --min)",
            size as f64 / f64::from(1u32 << 30),
            MAX_CHROME_JSON_BYTES >> 30
        );
    }
    let names = Names::new(&p.info);
    let werr = |e| CliError::io(dest, "cannot write the output", e);
    let ids: Vec<String> = (0..p.threads.len())
        .map(|t| format!("\"pid\":{},\"tid\":{}", pid_of(p, t), p.threads[t].tid))
        .collect();
    let mut head = String::from("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
    let mut pids: Vec<i32> = Vec::new();
    for (t, th) in p.threads.iter().enumerate() {
        if !p.shows(t) {
            continue;
        }
        let pid = pid_of(p, t);
        if !pids.contains(&pid) {
            pids.push(pid);
            head.push_str(&format!(
                "{{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":{pid},\"tid\":0,\"args\":{{\"name\":{}}}}},\n",
                json(&process_name(p, pid))
            ));
        }
        head.push_str(&format!(
            "{{\"ph\":\"M\",\"name\":\"thread_name\",{},\"args\":{{\"name\":{}}}}},\n",
            ids[t],
            json(&names.thread(th.tid))
        ));
    }
    out.write_all(head.as_bytes()).map_err(werr)?;
    let mut sink = Chrome {
        out,
        dest,
        names,
        slots: Slots::default(),
        quoted: Vec::new(),
        ids,
        clock: TickRate::new(p.info.header.cycle_frequency),
        origin: p.origin,
        line: String::with_capacity(256),
        tasks: Tasks::default(),
        ties: Ties::default(),
        tids: p.threads.iter().map(|t| t.tid).collect(),
        pid: pid_of(p, 0),
        flows: 0,
        parents: ParentsFound::new(crate::limits::MAX_LINKED_TASKS),
    };
    let end = replay(&mut sink)?;
    sink.finish_tasks(end).map_err(|e| e.in_log(log_name))?;
    if let Some(r) = crate::model::trigger::fired(&p.info) {
        // The moment the trigger fired, on the thread of the call that fired it.
        let t = p.threads.iter().position(|t| t.tid == r.tid);
        let pid = t.map_or_else(
            || p.info.run.as_ref().map_or(0, |x| x.pid),
            |t| pid_of(p, t),
        );
        let name = json(&crate::render::reason::instant_name(r, &sink.names));
        sink.line.push_str(&format!(
            "{{\"ph\":\"i\",\"s\":\"t\",\"name\":{name},\"cat\":\"trigger\",\"ts\":"
        ));
        sink.ts(r.start_tsc.saturating_add(r.duration_ticks));
        let clock = sink.clock;
        sink.line.push_str(&format!(
            ",\"pid\":{pid},\"tid\":{},\"args\":{{\"reason\":{},\"function\":{},\"start_ns\":{},\
             \"duration_ns\":{},\"suppressed\":{}}}",
            r.tid,
            json(r.reason.describe()),
            json(&sink.names.function(r.function)),
            clock.ns(r.start_tsc.saturating_sub(p.origin)),
            clock.ns(r.duration_ticks),
            r.suppressed
        ));
        sink.emit()?;
    }
    // A last metadata event closes the array without a trailing comma.
    let tail = format!(
        "{{\"ph\":\"M\",\"name\":\"process_labels\",\"pid\":{},\"tid\":0,\"args\":{{\"labels\":\"fdr\"}}}}\n]}}\n",
        pid_of(p, 0)
    );
    sink.out.write_all(tail.as_bytes()).map_err(werr)
}

#[cfg(test)]
mod tests_from_docs {
    //! The examples of this module's items, run as tests (the module is the crate's own; an
    //! example may leave a binding or an import unused, as a documentation example does).
    #![allow(unused_imports, unused_variables)]

    #[test]
    fn estimate() {
        assert_eq!(crate::render::chrome::estimate(1000, 15), 100_000);
    }
}
