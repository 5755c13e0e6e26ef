//! `fdr convert --format fxt`: the Fuchsia trace format, which Perfetto imports.
//!
//! Every record is a run of little-endian 64-bit words whose first word is a header: bits 0-3
//! the record type, bits 4-15 the size in words. The file starts with the magic-number
//! metadata record and an initialization record giving the tick rate, the recording clock's;
//! timestamps are ticks since the log's earliest window start.
//! Names are interned with string records (ids 1 to 32767, inline strings after that) and
//! threads with thread records (ids 1 to 255, inline pid/tid after that). Kernel-object
//! records name the process and each thread (with the `process` koid argument Perfetto uses
//! to attach a thread to its process). Calls are duration-begin and duration-end events;
//! logged arguments are unsigned 64-bit arguments of the begin event; an inferred entry has
//! the argument `inferred_start = 1`, a call closed at the window's end `open_at_end = 1`.
//! Each async task is an async begin and an async end event (category `task`, correlation id
//! the task's id) from its creation to its completion (`cancelled = 1` when it was dropped
//! first), on the threads that created and ended it. Each wait of a task at an await site is
//! an async slice of the same category and id inside it (`await FILE:LINE:COLUMN`, from the
//! poll that found the future pending to the end of the wait; arguments `polls`, and
//! `dropped = 1` for a wait ended by dropping the task), and each wake-up that led to a poll a
//! flow (category `wake`, name `wake`): a flow begin on the waking thread when the waker was
//! called, a flow end at the start of the poll (arguments `task`, `scheduled_ns`); none when
//! the waking thread is unknown. A task made or awaited in another (see
//! [`fdr_format::tasks::TaskParents`]) has an async instant at its creation (same category and
//! id, name `in FUNCTION task ID`, argument `parent_task`).

use std::collections::HashMap;
use std::io::Write;
use std::ops::ControlFlow;

use fdr_format::awaits::{TaskAwait, TaskWake, Ties};
use fdr_format::sink::{
    AwaitSeen, Close, Enter, Exit, LinkSeen, PollSeen, Sink, TaskSeen, WokenSeen, GO_ON,
};
use fdr_format::tasks::{ParentFound, ParentsFound};
use fdr_format::TaskKind;

use crate::model::engine::Plan;
use crate::model::names::{Names, Slots};
use crate::model::tasks::Tasks;
use crate::render::chrome::{pid_of, process_name};
use crate::units::TickRate;
use crate::CliError;

/// The magic-number record: metadata type 4 (trace info), info type 0, magic 0x16547846.
pub(crate) const MAGIC: u64 = 0x0016_5478_4604_0010;
/// Record types.
const REC_METADATA: u64 = 0;
const REC_INIT: u64 = 1;
const REC_STRING: u64 = 2;
const REC_THREAD: u64 = 3;
const REC_EVENT: u64 = 4;
const REC_KOBJ: u64 = 7;
/// Event types.
const EV_INSTANT: u64 = 0;
const EV_BEGIN: u64 = 2;
const EV_END: u64 = 3;
const EV_ASYNC_BEGIN: u64 = 5;
const EV_ASYNC_INSTANT: u64 = 6;
const EV_ASYNC_END: u64 = 7;
const EV_FLOW_BEGIN: u64 = 8;
const EV_FLOW_END: u64 = 10;
/// Argument types.
const ARG_U32: u64 = 2;
const ARG_U64: u64 = 4;
const ARG_KOID: u64 = 8;
/// Kernel object types (Zircon's numbering).
const OBJ_PROCESS: u64 = 1;
const OBJ_THREAD: u64 = 2;
/// Longest string kept; the length field has 15 bits.
const MAX_STR: usize = 32_000;
const MAX_STRING_ID: u16 = 0x7fff;
const MAX_THREAD_ID: u16 = 0xff;

/// A string as an event refers to it: an interned id, or inline bytes.
#[derive(Clone, Debug)]
enum StrRef {
    Id(u16),
    Inline(Vec<u8>),
}

impl StrRef {
    fn field(&self) -> u64 {
        match self {
            StrRef::Id(i) => u64::from(*i),
            StrRef::Inline(b) => 0x8000 | b.len() as u64,
        }
    }
    fn words(&self) -> usize {
        match self {
            StrRef::Id(_) => 0,
            StrRef::Inline(b) => b.len().div_ceil(8),
        }
    }
}

fn cut(s: &str) -> &[u8] {
    let mut end = s.len().min(MAX_STR);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s.as_bytes()[..end]
}

/// Writes FXT records into a byte buffer that is flushed as it fills.
struct Writer<'a> {
    out: &'a mut dyn Write,
    dest: &'a str,
    buf: Vec<u8>,
    strings: HashMap<String, u16>,
    next_string: u16,
}

impl Writer<'_> {
    #[inline]
    fn word(&mut self, w: u64) {
        self.buf.extend_from_slice(&w.to_le_bytes());
    }

    fn bytes_padded(&mut self, b: &[u8]) {
        self.buf.extend_from_slice(b);
        let pad = (8 - b.len() % 8) % 8;
        self.buf.extend_from_slice(&[0u8; 8][..pad]);
    }

    #[inline]
    fn maybe_flush(&mut self) -> Result<(), CliError> {
        if self.buf.len() >= 1 << 16 {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), CliError> {
        let r = self.out.write_all(&self.buf);
        self.buf.clear();
        r.map_err(|e| CliError::io(self.dest, "cannot write the output", e))
    }

    /// The reference for `s`, writing a string record the first time while ids last.
    fn string(&mut self, s: &str) -> StrRef {
        if s.is_empty() {
            return StrRef::Id(0);
        }
        if let Some(&i) = self.strings.get(s) {
            return StrRef::Id(i);
        }
        let b = cut(s);
        if self.next_string > MAX_STRING_ID {
            return StrRef::Inline(b.to_vec());
        }
        let id = self.next_string;
        self.next_string += 1;
        self.strings.insert(s.to_string(), id);
        let size = 1 + b.len().div_ceil(8) as u64;
        self.word(REC_STRING | (size << 4) | (u64::from(id) << 16) | ((b.len() as u64) << 32));
        self.bytes_padded(b);
        StrRef::Id(id)
    }

    fn inline_str(&mut self, r: &StrRef) {
        if let StrRef::Inline(b) = r {
            let b = b.clone();
            self.bytes_padded(&b);
        }
    }
}

/// Per thread: the thread reference (1-255) or the inline pid/tid koids.
#[derive(Clone, Copy)]
struct ThreadRef {
    id: u16,
    pid: u64,
    tid: u64,
}

/// The timeline writer: the [`Sink`] the replay goes into.
pub(crate) struct Fxt<'a> {
    w: Writer<'a>,
    names: Names,
    slots: Slots,
    fn_names: Vec<StrRef>,
    threads: Vec<ThreadRef>,
    category: StrRef,
    inferred: StrRef,
    open: StrRef,
    origin: u64,
    task_category: StrRef,
    cancelled: StrRef,
    tasks: Tasks,
    ties: Ties,
    /// The log's threads' ids, by index, and the pid a waking thread outside them is shown in.
    tids: Vec<i32>,
    pid: u64,
    /// Flows (wake-ups) written so far: the next one's id.
    flows: u64,
    clock: TickRate,
    parents: ParentsFound,
}

impl Fxt<'_> {
    fn name(&mut self, id: u32) -> Result<StrRef, CliError> {
        let s = self.slots.slot(id)?;
        if s == self.fn_names.len() {
            let n = self.names.function(id).into_owned();
            let r = self.w.string(&n);
            self.fn_names.push(r);
        }
        Ok(self.fn_names[s].clone())
    }

    /// One duration event with `args` as (name, type, value) triples.
    fn event(
        &mut self,
        kind: u64,
        thread: u32,
        func: u32,
        tsc: u64,
        args: &[(StrRef, u64, u64)],
    ) -> Result<(), CliError> {
        let name = self.name(func)?;
        let t = self.threads[thread as usize];
        let cat = self.category.clone();
        self.record(kind, t, &cat, &name, tsc, args, None)
    }

    /// One event record of type `kind` (with `extra`, the id word of async events, after the
    /// arguments).
    #[allow(clippy::too_many_arguments)]
    fn record(
        &mut self,
        kind: u64,
        t: ThreadRef,
        category: &StrRef,
        name: &StrRef,
        tsc: u64,
        args: &[(StrRef, u64, u64)],
        extra: Option<u64>,
    ) -> Result<(), CliError> {
        let mut size = 2 + name.words() + category.words() + usize::from(extra.is_some());
        if t.id == 0 {
            size += 2;
        }
        for (n, ty, _) in args {
            size += n.words() + if *ty == ARG_U32 { 1 } else { 2 };
        }
        let header = REC_EVENT
            | ((size as u64) << 4)
            | (kind << 16)
            | ((args.len() as u64) << 20)
            | (u64::from(t.id) << 24)
            | (category.field() << 32)
            | (name.field() << 48);
        self.w.word(header);
        self.w.word(tsc.saturating_sub(self.origin));
        if t.id == 0 {
            self.w.word(t.pid);
            self.w.word(t.tid);
        }
        self.w.inline_str(category);
        self.w.inline_str(name);
        for (n, ty, v) in args {
            let words = n.words() as u64 + if *ty == ARG_U32 { 1 } else { 2 };
            if *ty == ARG_U32 {
                self.w
                    .word(ty | (words << 4) | (n.field() << 16) | (v << 32));
                self.w.inline_str(n);
            } else {
                self.w.word(ty | (words << 4) | (n.field() << 16));
                self.w.inline_str(n);
                self.w.word(*v);
            }
        }
        if let Some(x) = extra {
            self.w.word(x);
        }
        self.w.maybe_flush()
    }
}

impl Fxt<'_> {
    /// An async begin or end event of `task` on thread index `thread`.
    fn async_event(
        &mut self,
        kind: u64,
        thread: u32,
        func: u32,
        task: u64,
        tsc: u64,
        args: &[(StrRef, u64, u64)],
    ) -> Result<(), CliError> {
        let name = self.name(func)?;
        let t = self.threads[thread as usize];
        let cat = self.task_category.clone();
        self.record(kind, t, &cat, &name, tsc, args, Some(task))
    }

    /// A wait of a task: an async slice inside the task's.
    fn await_slice(&mut self, a: &TaskAwait) -> Result<(), CliError> {
        let name = self
            .w
            .string(&format!("await {}", self.names.site(a.event.site)));
        let t = self.threads[a.thread as usize];
        let cat = self.task_category.clone();
        let polls = self.w.string("polls");
        let mut args = vec![(polls, ARG_U64, u64::from(a.event.polls))];
        if a.event.dropped {
            args.push((self.w.string("dropped"), ARG_U32, 1));
        }
        let start = a.start();
        self.record(EV_ASYNC_BEGIN, t, &cat, &name, start, &args, Some(a.task))?;
        self.record(EV_ASYNC_END, t, &cat, &name, a.end, &[], Some(a.task))
    }

    /// A wake-up: a flow from the waking thread, when it is known, to the poll it led to.
    fn wake_flow(&mut self, w: &TaskWake) -> Result<(), CliError> {
        let waker = w.event.waker_tid;
        if waker == 0 {
            return Ok(());
        }
        let from = match self.tids.iter().position(|&t| t == waker) {
            Some(t) => self.threads[t],
            None => ThreadRef {
                id: 0,
                pid: self.pid,
                tid: u64::from(waker as u32),
            },
        };
        let (cat, name) = (self.w.string("wake"), self.w.string("wake"));
        let id = self.flows;
        self.flows += 1;
        self.record(
            EV_FLOW_BEGIN,
            from,
            &cat,
            &name,
            w.event.woken_at,
            &[],
            Some(id),
        )?;
        let args = [
            (self.w.string("task"), ARG_U64, w.task),
            (
                self.w.string("scheduled_ns"),
                ARG_U64,
                self.clock.ns(w.scheduled()),
            ),
        ];
        let to = self.threads[w.thread as usize];
        self.record(EV_FLOW_END, to, &cat, &name, w.end, &args, Some(id))
    }

    /// A task's parent, found: an async instant at its creation.
    fn parent_mark(&mut self, f: &ParentFound) -> Result<(), CliError> {
        let function = self.names.function(f.parent_function);
        let name = self.w.string(&format!("in {function} task {}", f.parent));
        let t = self.threads[f.thread as usize];
        let cat = self.task_category.clone();
        let args = [(self.w.string("parent_task"), ARG_U64, f.parent)];
        self.record(
            EV_ASYNC_INSTANT,
            t,
            &cat,
            &name,
            f.created,
            &args,
            Some(f.task),
        )
    }

    /// The ends of the tasks cut by the window, once the log is read (`end`: the log's end).
    fn finish_tasks(&mut self, end: u64) -> Result<(), CliError> {
        for t in std::mem::take(&mut self.tasks).finish(end) {
            if t.inferred {
                let a = [(self.inferred.clone(), ARG_U32, 1)];
                let (th, f) = (t.start_thread, t.function);
                self.async_event(EV_ASYNC_BEGIN, th, f, t.task, t.start, &a)?;
            }
            if t.open {
                let a = [(self.open.clone(), ARG_U32, 1)];
                let (th, f) = (t.end_thread, t.function);
                self.async_event(EV_ASYNC_END, th, f, t.task, t.end, &a)?;
            }
        }
        Ok(())
    }
}

impl Sink for Fxt<'_> {
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
            TaskKind::Created => self.async_event(EV_ASYNC_BEGIN, thread, ev.id, ev.task, tsc, &[]),
            TaskKind::Completed => self.async_event(EV_ASYNC_END, thread, ev.id, ev.task, tsc, &[]),
            TaskKind::Cancelled => {
                let a = [(self.cancelled.clone(), ARG_U32, 1)];
                self.async_event(EV_ASYNC_END, thread, ev.id, ev.task, tsc, &a)
            }
        }?;
        Ok(GO_ON)
    }

    fn enter(&mut self, e: &Enter<'_>) -> Result<ControlFlow<()>, CliError> {
        let (thread, f, args) = (e.thread, e.frame, e.args);
        self.parents.enter(thread, e.depth);
        if args.is_empty() && !f.inferred {
            self.event(EV_BEGIN, thread, f.id, f.start, &[])?;
            return Ok(GO_ON);
        }
        let mut a = Vec::with_capacity(args.len() + 1);
        for (i, v) in args.iter().enumerate() {
            let n = self.names.arg(f.id, i);
            a.push((self.w.string(&n), ARG_U64, *v));
        }
        if f.inferred {
            a.push((self.inferred.clone(), ARG_U32, 1));
        }
        self.event(EV_BEGIN, thread, f.id, f.start, &a)?;
        Ok(GO_ON)
    }

    fn exit(&mut self, e: &Exit<'_>) -> Result<ControlFlow<()>, CliError> {
        let (thread, id, end) = (e.thread, e.frame.id, e.end);
        self.ties.exit(thread, id);
        self.parents.exit(thread, e.depth);
        if e.how == Close::WindowEnd {
            let a = [(self.open.clone(), ARG_U32, 1)];
            self.event(EV_END, thread, id, end, &a)?;
        } else {
            self.event(EV_END, thread, id, end, &[])?;
        }
        Ok(GO_ON)
    }
}

/// Writes, to FXT `out` (`dest` names it in errors), the timeline that `replay` replays into it (the calls the plan `p` chose); `replay` returns when the log was taken.
pub(crate) fn write(
    p: &Plan,
    log_name: &str,
    out: &mut dyn Write,
    dest: &str,
    replay: &mut dyn FnMut(&mut Fxt<'_>) -> Result<u64, CliError>,
) -> Result<(), CliError> {
    let names = Names::new(&p.info);
    let mut w = Writer {
        out,
        dest,
        buf: Vec::with_capacity(1 << 17),
        strings: HashMap::new(),
        next_string: 1,
    };
    w.word(MAGIC);
    // Provider info (metadata type 1, provider 0, name "fdr") and the section it opens (type 2).
    w.word(REC_METADATA | (2 << 4) | (1 << 16) | (3 << 52));
    w.bytes_padded(b"fdr");
    w.word(REC_METADATA | (1 << 4) | (2 << 16));
    w.word(REC_INIT | (2 << 4));
    w.word(p.info.header.cycle_frequency);
    let category = w.string("fdr");
    let inferred = w.string("inferred_start");
    let open = w.string("open_at_end");
    let process_arg = w.string("process");
    let task_category = w.string("task");
    let cancelled = w.string("cancelled");
    // Processes and threads: kernel objects for their names, thread records for references.
    let mut pids: Vec<i32> = Vec::new();
    let mut threads = Vec::with_capacity(p.threads.len());
    let mut next_thread: u16 = 1;
    for (t, th) in p.threads.iter().enumerate() {
        let pid = pid_of(p, t);
        let (pk, tk) = (u64::from(pid as u32), u64::from(th.tid as u32));
        if !p.shows(t) {
            threads.push(ThreadRef {
                id: 0,
                pid: pk,
                tid: tk,
            });
            continue;
        }
        if !pids.contains(&pid) {
            pids.push(pid);
            let n = w.string(&process_name(p, pid));
            w.word(
                REC_KOBJ | ((2 + n.words() as u64) << 4) | (OBJ_PROCESS << 16) | (n.field() << 24),
            );
            w.word(pk);
            w.inline_str(&n);
        }
        let n = w.string(&names.thread(th.tid));
        let pa = process_arg.clone();
        w.word(
            REC_KOBJ
                | ((4 + n.words() as u64 + pa.words() as u64) << 4)
                | (OBJ_THREAD << 16)
                | (n.field() << 24)
                | (1 << 40),
        );
        w.word(tk);
        w.inline_str(&n);
        w.word(ARG_KOID | ((2 + pa.words() as u64) << 4) | (pa.field() << 16));
        w.inline_str(&pa);
        w.word(pk);
        let id = if next_thread <= MAX_THREAD_ID {
            let id = next_thread;
            next_thread += 1;
            w.word(REC_THREAD | (3 << 4) | (u64::from(id) << 16));
            w.word(pk);
            w.word(tk);
            id
        } else {
            0
        };
        threads.push(ThreadRef {
            id,
            pid: pk,
            tid: tk,
        });
    }
    let mut sink = Fxt {
        w,
        names,
        slots: Slots::default(),
        fn_names: Vec::new(),
        threads,
        category,
        inferred,
        open,
        origin: p.origin,
        task_category,
        cancelled,
        tasks: Tasks::default(),
        ties: Ties::default(),
        tids: p.threads.iter().map(|t| t.tid).collect(),
        pid: u64::from(pid_of(p, 0) as u32),
        flows: 0,
        clock: TickRate::new(p.info.header.cycle_frequency),
        parents: ParentsFound::new(crate::limits::MAX_LINKED_TASKS),
    };
    let end = replay(&mut sink)?;
    sink.finish_tasks(end).map_err(|e| e.in_log(log_name))?;
    if let Some(r) = crate::model::trigger::fired(&p.info) {
        // The moment the trigger fired, on the thread of the call that fired it.
        let t = match p.threads.iter().position(|t| t.tid == r.tid) {
            Some(t) => sink.threads[t],
            None => ThreadRef {
                id: 0,
                pid: u64::from(p.info.run.as_ref().map_or(0, |x| x.pid) as u32),
                tid: u64::from(r.tid as u32),
            },
        };
        let name = sink
            .w
            .string(&crate::render::reason::instant_name(r, &sink.names));
        let cat = sink.w.string("trigger");
        let clock = TickRate::new(p.info.header.cycle_frequency);
        let args = [
            (
                sink.w.string("duration_ns"),
                ARG_U64,
                clock.ns(r.duration_ticks),
            ),
            (sink.w.string("suppressed"), ARG_U64, r.suppressed),
        ];
        let at = r.start_tsc.saturating_add(r.duration_ticks);
        sink.record(EV_INSTANT, t, &cat, &name, at, &args, None)?;
    }
    sink.w.flush()
}
