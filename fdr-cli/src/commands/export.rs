//! `fdr export`: a log's window as OpenTelemetry spans, one per call (of every thread, behind
//! the filters), sent to an OTLP/HTTP collector or written as one protobuf
//! `ExportTraceServiceRequest` ([`fdr_otlp`] converts and sends).
//!
//! The calls are those `fdr calls --format json` lists, from the same replay with the same
//! plan: a span's start is the window start's Unix time plus the call's `start_ns`, its end
//! that start plus the call's `duration_ns`. The window start's Unix time comes from the log's
//! run record (the wall clock when recording started, plus the ticks from then to the window
//! start) or, in a log without one, from the wall-clock marker of the block that opened the
//! earliest window. The log is read twice (the plan, then the calls); the calls are held in
//! memory, at most [`MAX_CALLS`].

use std::collections::HashMap;

use fdr_format::events::ThreadStats;
use fdr_format::TaskKind;
use fdr_otlp::client::Client;
use fdr_otlp::log::TracedCall;
use fdr_otlp::retry::{RetryPolicy, SendReport};
use fdr_otlp::spans::{each_request, encode, Call, Window, WindowReason};

use crate::model::call::{Close, Frame, Sink, TaskEvent};
use crate::model::filter::Filter;
use crate::model::input::Log;
use crate::model::names::Names;
use crate::model::pass::{plan, replay};
use crate::model::replay::{log_end, Plan};
use crate::model::tasks::{TaskSpan, Tasks};
use crate::progress::Progress;
use crate::units::Clock;
use crate::CliError;

/// The most calls one export holds (each becomes a span): past it, the command stops with an
/// error that suggests a filter (`--thread`, `--from`/`--to`, `--function`, `--min`). Memory
/// is about 200 bytes per call, and a request being encoded.
///
/// ```
/// assert_eq!(fdr_cli::commands::export::MAX_CALLS, 2_097_152);
/// ```
pub const MAX_CALLS: usize = 1 << 21;

/// What `fdr export` puts in the resource and the trace, besides what the log says.
///
/// ```
/// let o = fdr_cli::commands::export::Options::default();
/// assert!(o.service_name.is_none());
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// `service.name`; default: the program's file name from the log.
    pub service_name: Option<String>,
    /// `host.name`; default: none (a log does not say which machine wrote it).
    pub host_name: Option<String>,
    /// A W3C `traceparent` whose trace the spans join.
    pub traceparent: Option<String>,
    /// More resource attributes (`OTEL_RESOURCE_ATTRIBUTES`).
    pub resource: Vec<(String, String)>,
}

/// No parent.
const NONE: u32 = u32::MAX;

/// One call as the replay gives it.
struct Rec {
    thread: u32,
    id: u32,
    start: u64,
    end: u64,
    parent: u32,
    inferred: bool,
    open: bool,
    args: Vec<u64>,
    /// The task this poll served, when the log says.
    task: Option<u64>,
}

/// Every call, with its caller: the index of the call below it on its thread's stack.
#[derive(Default)]
struct Collect {
    calls: Vec<Rec>,
    /// Per thread index, the open calls' indices from the bottom of the stack.
    stacks: Vec<Vec<u32>>,
    /// The async tasks' two ends, matched.
    tasks: Tasks,
    /// The tasks whose both ends were read, with the call that created each.
    spans: Vec<(TaskSpan, Option<u32>)>,
    /// Tasks waiting for their end: the call open on the creating thread at the creation.
    created_in: HashMap<u64, u32>,
    /// Per thread index, the call of the thread's last exit, while nothing else came after.
    last_exit: Vec<Option<u32>>,
}

impl Collect {
    fn push(
        &mut self,
        thread: u32,
        depth: usize,
        f: &Frame,
        args: &[u64],
    ) -> Result<u32, CliError> {
        if self.calls.len() >= MAX_CALLS {
            return Err(too_many());
        }
        let t = thread as usize;
        if t >= self.stacks.len() {
            self.stacks.resize_with(t + 1, Vec::new);
        }
        let stack = &mut self.stacks[t];
        stack.truncate(depth);
        let parent = stack.last().copied().unwrap_or(NONE);
        let i = self.calls.len() as u32;
        self.calls.push(Rec {
            thread,
            id: f.id,
            start: f.start,
            end: f.start,
            parent,
            inferred: f.inferred,
            open: false,
            args: args.to_vec(),
            task: None,
        });
        stack.push(i);
        Ok(i)
    }
}

impl Collect {
    /// Something other than an exit came on `thread`: a poll event no longer speaks of it.
    fn forget_exit(&mut self, thread: u32) {
        if let Some(e) = self.last_exit.get_mut(thread as usize) {
            *e = None;
        }
    }
}

fn too_many() -> CliError {
    CliError::limit(format!(
        "the window holds more than {MAX_CALLS} calls, fdr export's limit for one export: \
         export a part of it (--thread, --from/--to, --function or --min)"
    ))
}

impl Sink for Collect {
    fn task(&mut self, thread: u32, tsc: u64, window: u64, ev: TaskEvent) -> Result<(), CliError> {
        self.forget_exit(thread);
        let task = ev.task;
        let created = ev.kind == TaskKind::Created;
        let top = self
            .stacks
            .get(thread as usize)
            .and_then(|s| s.last())
            .copied();
        match (self.tasks.event(thread, tsc, window, ev)?, created) {
            // Created after its end was read: made in the call open now.
            (Some(span), true) => self.spans.push((span, top)),
            (Some(span), false) => {
                let parent = self.created_in.remove(&task);
                self.spans.push((span, parent));
            }
            // Waiting for its end (a later creation of the same id replaces it, as in Tasks).
            (None, true) => match top {
                Some(i) => {
                    self.created_in.insert(task, i);
                }
                None => {
                    self.created_in.remove(&task);
                }
            },
            (None, false) => {}
        }
        if self.spans.len() > MAX_CALLS {
            return Err(too_many());
        }
        Ok(())
    }

    fn enter(
        &mut self,
        thread: u32,
        depth: usize,
        f: &Frame,
        args: &[u64],
    ) -> Result<(), CliError> {
        self.forget_exit(thread);
        self.push(thread, depth, f, args).map(|_| ())
    }

    fn polled(&mut self, thread: u32, id: u32, task: u64) -> Result<(), CliError> {
        let last = self.last_exit.get(thread as usize).copied().flatten();
        if let Some(r) = last.and_then(|i| self.calls.get_mut(i as usize)) {
            if r.id == id {
                r.task = Some(task);
            }
        }
        Ok(())
    }

    fn exit(
        &mut self,
        thread: u32,
        depth: usize,
        f: &Frame,
        end: u64,
        how: Close,
        args: &[u64],
    ) -> Result<(), CliError> {
        let t = thread as usize;
        let known = self
            .stacks
            .get(t)
            .and_then(|s| s.get(depth))
            .copied()
            .filter(|&i| {
                let r = &self.calls[i as usize];
                r.id == f.id && r.start == f.start
            });
        // With a plan every exit has had its entry; a call without one is taken as it comes.
        let i = match known {
            Some(i) => i,
            None => self.push(thread, depth, f, args)?,
        };
        let r = &mut self.calls[i as usize];
        r.end = end;
        r.open = how == Close::WindowEnd;
        r.inferred |= f.inferred;
        if let Some(s) = self.stacks.get_mut(t) {
            s.truncate(depth);
        }
        if t >= self.last_exit.len() {
            self.last_exit.resize(t + 1, None);
        }
        self.last_exit[t] = Some(i);
        Ok(())
    }
}

/// The window start's Unix time, nanoseconds: the run record's wall clock at the start of
/// recording plus the ticks from then to `p.origin`; without a run record, the wall-clock
/// marker of the block that opened the earliest window (microseconds).
///
/// ```
/// use fdr_cli::commands::export::window_start_unix_ns;
/// use fdr_cli::model::replay::Plan;
/// use fdr_format::RunInfo;
/// let mut p = Plan { origin: 1_500, ..Plan::default() };
/// p.info.header.cycle_frequency = 1_000_000_000;
/// p.info.run = Some(RunInfo { start_unix_secs: 1_700_000_000, start_unix_nanos: 7, start_tsc: 1_000,
///                             ..RunInfo::default() });
/// assert_eq!(window_start_unix_ns(&p), 1_700_000_000_000_000_507);
/// ```
pub fn window_start_unix_ns(p: &Plan) -> u64 {
    let clock = Clock::new(p.info.header.cycle_frequency);
    let ns = match &p.info.run {
        Some(r) => {
            let start =
                i128::from(r.start_unix_secs) * 1_000_000_000 + i128::from(r.start_unix_nanos);
            let delta = if p.origin >= r.start_tsc {
                i128::from(clock.ns(p.origin - r.start_tsc))
            } else {
                -i128::from(clock.ns(r.start_tsc - p.origin))
            };
            start + delta
        }
        None => {
            let first = p
                .threads
                .iter()
                .filter(|t| t.function_records > 0)
                .min_by_key(|t| t.first_tsc);
            first.map_or(0, |t: &ThreadStats| {
                i128::from(t.walltime.0) * 1_000_000_000 + i128::from(t.walltime.1) * 1_000
            })
        }
    };
    ns.clamp(0, i128::from(u64::MAX)) as u64
}

/// Why the window was written, in the words the runtime's exporter uses.
fn reason(p: &Plan, names: &Names, clock: &Clock) -> Option<WindowReason> {
    let r = p.info.reason.as_ref()?;
    fdr_otlp::log::reason_of(r, |f| names.function(f).into_owned(), clock.freq())
}

/// The trace the slow call ran in: the context of the innermost `fdr::join_trace` marker
/// among its callers (`fdr_otlp::log::trace_of`, on this command's calls).
fn joined_trace(p: &Plan, names: &Names, calls: &[Rec]) -> Option<String> {
    let r = p.info.reason.as_ref()?;
    let tid = |t: u32| p.threads.get(t as usize).map_or(0, |t| t.tid);
    fdr_otlp::log::trace_of(
        r,
        calls,
        |c| TracedCall {
            function: c.id,
            tid: tid(c.thread),
            start_tsc: c.start,
            end_tsc: c.end,
            open: c.open,
            parent: (c.parent != NONE).then_some(c.parent as usize),
            args: &c.args,
        },
        |f| names.function(f) == fdr_format::trace_context::MARKER,
    )
}

/// The file name of a program path.
fn file_name(program: &str) -> &str {
    program.rsplit('/').next().unwrap_or(program)
}

/// The window of `log` behind `filter`, every call a [`Call`], ready for [`fdr_otlp`].
///
/// ```no_run
/// use fdr_cli::commands::export::{window, Options};
/// use fdr_cli::model::{filter::Filter, input::Log};
/// use fdr_cli::progress::Progress;
/// let log = Log::open("app.fdr".as_ref())?;
/// let w = window(&log, &Filter::none(), &Options::default(), &Progress::hidden())?;
/// println!("{} calls", w.calls.len());
/// # Ok::<(), fdr_cli::CliError>(())
/// ```
pub fn window(
    log: &Log,
    filter: &Filter,
    opts: &Options,
    progress: &Progress,
) -> Result<Window, CliError> {
    let p = plan(log, filter, progress)?;
    if p.calls > MAX_CALLS as u64 {
        return Err(too_many().in_log(log.name()));
    }
    let mut c = Collect::default();
    replay(log, &mut c, Some(&p), filter, progress, 1)?;
    let end = log_end(&p.info, &p.threads);
    let mut tasks = std::mem::take(&mut c.spans);
    for t in std::mem::take(&mut c.tasks).finish(end) {
        let parent = if t.open {
            c.created_in.get(&t.task).copied()
        } else {
            None
        };
        tasks.push((t, parent));
    }
    let tid = |t: u32| p.threads.get(t as usize).map_or(0, |t| t.tid);
    // By id, and the same id twice (a hostile log) in the order fdr_format::window gives.
    tasks.sort_unstable_by_key(|(t, parent)| {
        (
            t.task,
            t.start,
            t.end,
            tid(t.start_thread),
            tid(t.end_thread),
            t.function,
            t.cancelled,
            t.inferred,
            t.open,
            *parent,
        )
    });
    let names = Names::new(&p.info);
    let clock = Clock::new(p.info.header.cycle_frequency);
    let base = window_start_unix_ns(&p);
    let mut functions: HashMap<u32, String> = HashMap::new();
    let mut threads: HashMap<u32, (i32, String)> = HashMap::new();
    let calls = c
        .calls
        .iter()
        .map(|r| {
            let function = functions
                .entry(r.id)
                .or_insert_with(|| names.function(r.id).into_owned())
                .clone();
            let (tid, thread_name) = threads
                .entry(r.thread)
                .or_insert_with(|| {
                    let tid = p.threads.get(r.thread as usize).map_or(0, |t| t.tid);
                    let name = if names.has_thread_name(tid) {
                        names.thread(tid)
                    } else {
                        String::new()
                    };
                    (tid, name)
                })
                .clone();
            // As `fdr calls --format json`: start_ns from time zero, duration_ns.
            let start = base.saturating_add(clock.ns(r.start.saturating_sub(p.origin)));
            let end = start.saturating_add(clock.ns(r.end.saturating_sub(r.start)));
            Call {
                function,
                tid,
                thread_name,
                start_unix_ns: start,
                end_unix_ns: end,
                parent: (r.parent != NONE).then_some(r.parent as usize),
                open: r.open,
                inferred_start: r.inferred,
                args: r
                    .args
                    .iter()
                    .enumerate()
                    .map(|(i, &v)| (names.arg(r.id, i), v))
                    .collect(),
                task: r.task,
                life: false,
                cancelled: false,
            }
        })
        .collect::<Vec<Call>>();
    let lives = calls.len();
    // Each task's life after the calls, under the call that created it (as fdr_otlp::log).
    let thread_of = |t: u32| {
        let tid = p.threads.get(t as usize).map_or(0, |t| t.tid);
        let name = if names.has_thread_name(tid) {
            names.thread(tid)
        } else {
            String::new()
        };
        (tid, name)
    };
    let mut calls = calls;
    calls.extend(tasks.iter().map(|(t, parent)| {
        let (tid, thread_name) = thread_of(t.start_thread);
        let start = base.saturating_add(clock.ns(t.start.saturating_sub(p.origin)));
        Call {
            function: names.function(t.function).into_owned(),
            tid,
            thread_name,
            start_unix_ns: start,
            end_unix_ns: start.saturating_add(clock.ns(t.end.saturating_sub(t.start))),
            parent: parent.map(|i| i as usize),
            open: t.open,
            inferred_start: t.inferred,
            args: Vec::new(),
            task: Some(t.task),
            life: true,
            cancelled: t.cancelled,
        }
    }));
    // A poll that served a task of the window hangs under the task's life (as fdr_otlp::log).
    let mut life_of = HashMap::new();
    for (i, (t, _)) in tasks.iter().enumerate() {
        life_of.entry(t.task).or_insert(lives + i);
    }
    for c in &mut calls[..lives] {
        if let Some(&i) = c.task.and_then(|t| life_of.get(&t)) {
            c.parent = Some(i);
        }
    }
    let run = p.info.run.as_ref();
    let program = run.map_or("", |r| file_name(&r.program)).to_string();
    let pid = run
        .map(|r| r.pid)
        .filter(|&pid| pid > 0)
        .or_else(|| p.threads.iter().map(|t| t.pid).find(|&pid| pid > 0))
        .unwrap_or(0);
    Ok(Window {
        service_name: opts.service_name.clone().unwrap_or_else(|| {
            if program.is_empty() {
                "unknown_service".to_string()
            } else {
                program.clone()
            }
        }),
        host_name: opts.host_name.clone().unwrap_or_default(),
        pid: u32::try_from(pid).unwrap_or(0),
        program,
        fdr_version: env!("CARGO_PKG_VERSION").to_string(),
        start_unix_ns: base,
        // When the log was taken: two windows of one process differ in it.
        sequence: run.map_or(0, |r| r.end_tsc),
        reason: reason(&p, &names, &clock),
        traceparent: opts
            .traceparent
            .clone()
            .or_else(|| joined_trace(&p, &names, &c.calls)),
        resource: opts.resource.clone(),
        calls,
    })
}

/// The window as one protobuf `ExportTraceServiceRequest` holding every span.
///
/// ```
/// use fdr_otlp::spans::Window;
/// let bytes = fdr_cli::commands::export::request_bytes(&Window::default());
/// assert!(!bytes.is_empty());
/// ```
pub fn request_bytes(w: &Window) -> Vec<u8> {
    let r = each_request(w, 0)
        .next()
        .expect("a window makes at least one request");
    encode(&r)
}

/// Sends the window through `client`, at most `max_spans` spans per request, with retries per
/// `policy`.
///
/// ```no_run
/// use fdr_otlp::{client::{Client, Transport}, endpoint::Endpoint, retry::RetryPolicy, spans::Window};
/// let client = Client::new(&Transport::new(Endpoint::parse("http://localhost:4318")?))?;
/// let r = fdr_cli::commands::export::send(&Window::default(), &client, 10_000,
///                                         &RetryPolicy::default())?;
/// println!("{} spans sent", r.spans);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn send(
    w: &Window,
    client: &Client,
    max_spans: usize,
    policy: &RetryPolicy,
) -> Result<SendReport, CliError> {
    let total = each_request(w, max_spans).len();
    let url = client.endpoint().to_string();
    fdr_otlp::retry::send(client, each_request(w, max_spans), policy).map_err(|e| {
        let mut what = e.error.to_string();
        if e.report.requests > 0 {
            what.push_str(&format!(
                " ({} of {total} requests, {} spans, were sent before)",
                e.report.requests, e.report.spans
            ));
        }
        CliError::Export {
            to: url.to_string(),
            what,
        }
    })
}
