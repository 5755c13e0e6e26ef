//! A log's window as a [`Window`]: what the runtime's exporter sends after it writes a window,
//! and what any program holding a log's bytes can send. The calls are those of
//! [`fdr_format::window::calls`], which are `fdr calls --format json`'s and `fdr export`'s: a
//! span starts at the window origin's Unix time plus the call's `start_ns` and lasts its
//! `duration_ns`. After them, one span per async task, its life from creation to completion,
//! under the call that created it; a poll the log ties to its task (the polls that were kept)
//! hangs under the task's life instead of its caller.

use fdr_format::units::ticks_to_ns;
use fdr_format::window::{calls_with, WindowCalls, WindowLimits};
use fdr_format::{FormatError, Reason, ReasonInfo};

use crate::spans::{Call, Wait, Window, WindowReason};

/// What a log does not say about the process that wrote it, or what the sender wants instead.
///
/// ```
/// let a = fdr_otlp::convert::About { service_name: "app".into(), ..Default::default() };
/// assert_eq!(a.sequence, 0);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct About {
    /// `service.name`; empty: the program's file name from the log (`unknown_service` when the
    /// log has none).
    pub service_name: String,
    /// `host.name`; empty: left out.
    pub host_name: String,
    /// Which window of the process this is: see [`Window::sequence`]. 0: the log's end
    /// timestamp, which tells two windows of one process apart.
    pub sequence: u64,
    /// A W3C `traceparent` to join; `None`: the trace the window's slow call ran in, if the
    /// log says (see [`traceparent_of`]).
    pub traceparent: Option<String>,
    /// More resource attributes (`OTEL_RESOURCE_ATTRIBUTES`): see [`Window::resource`].
    pub resource: Vec<(String, String)>,
}

/// The window `log` holds, every call a [`Call`], within `limits`.
///
/// ```
/// use fdr_otlp::convert::{window, About};
/// let log = fdr_format::FileHeader::default().encode();
/// let w = window(&log, &About::default(), &Default::default())?;
/// assert!(w.calls.is_empty());
/// assert_eq!(w.service_name, "unknown_service");
/// # Ok::<(), fdr_format::FormatError>(())
/// ```
pub fn window(log: &[u8], about: &About, limits: &WindowLimits) -> Result<Window, FormatError> {
    Ok(convert(&calls_with(log, limits)?, about))
}

/// The trigger that wrote a window, when one did: a slow call or one still running, whose
/// function the log names.
fn fired(r: &ReasonInfo) -> bool {
    matches!(r.reason, Reason::SlowCall | Reason::StillRunning) && r.function != 0
}

/// Why a window was written, as its root spans say it: `r` in words, the function of the call
/// that fired named by `name`, ticks turned into nanoseconds at `ticks_per_second`. The runtime's
/// exporter and `fdr export` both say it this way. `None` when the log does not say why.
///
/// ```
/// use fdr_format::{Reason, ReasonInfo};
/// let r = ReasonInfo { reason: Reason::SlowCall, function: 3, tid: 1, duration_ticks: 200, ..Default::default() };
/// let w = fdr_otlp::convert::reason_of(&r, |f| format!("f{f}"), 2_000_000_000).unwrap();
/// assert_eq!((w.kind.as_str(), w.function.as_deref(), w.duration_ns), ("slow call", Some("f3"), Some(100)));
/// assert_eq!(w.cpu_wait_ns, None); // not measured
/// let r = ReasonInfo { cpu_wait_ns: Some(2_500_000), ..r };
/// assert_eq!(fdr_otlp::convert::reason_of(&r, |f| format!("f{f}"), 2_000_000_000).unwrap().cpu_wait_ns, Some(2_500_000));
/// ```
pub fn reason_of(
    r: &ReasonInfo,
    name: impl Fn(u32) -> String,
    ticks_per_second: u64,
) -> Option<WindowReason> {
    let kind = match r.reason {
        Reason::Unknown => return None,
        Reason::SlowCall => "slow call",
        Reason::StillRunning => "still running",
        Reason::Signal => "signal",
        Reason::Panic => "panic",
        Reason::Exit => "exit",
        Reason::Api => "api",
        Reason::Crash => "crash",
        Reason::LongPoll => "long poll",
        Reason::LongPollRunning => "long poll running",
    };
    let call = fired(r).then_some(r);
    Some(WindowReason {
        kind: kind.to_string(),
        function: call.map(|c| name(c.function)),
        limit_ns: call.and_then(|c| c.limit_ns(ticks_per_second)),
        duration_ns: call.map(|c| ticks_to_ns(c.duration_ticks, ticks_per_second)),
        cpu_wait_ns: call.and_then(|c| c.cpu_wait_ns),
        off_cpu_ns: call.and_then(|c| c.off_cpu_ns),
    })
}

/// What [`trace_of`] needs to know of a call.
#[derive(Clone, Copy, Debug)]
pub struct TracedCall<'a> {
    /// Its function's id in the log.
    pub function: u32,
    /// Its thread's id.
    pub tid: i32,
    /// When it started and ended, in ticks.
    pub start_tsc: u64,
    /// See `start_tsc`.
    pub end_tsc: u64,
    /// Still running when the log ends.
    pub open: bool,
    /// Its caller's index in the same list, if the caller is in it.
    pub parent: Option<usize>,
    /// Its logged arguments (a marker's trace context).
    pub args: &'a [u64],
}

/// The trace a window's slow call ran in (see [`traceparent_of`]), over any list of calls:
/// `view` says what each is, `marker` whether a function is
/// [`fdr_format::trace_context::MARKER`].
///
/// ```
/// use fdr_format::{Reason, ReasonInfo};
/// use fdr_otlp::convert::{trace_of, TracedCall};
/// let tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
/// let args = fdr_format::trace_context::encode(tp).unwrap();
/// let marker = TracedCall { function: 1, tid: 7, start_tsc: 10, end_tsc: 90, open: false, parent: None, args: &args };
/// let slow = TracedCall { function: 2, start_tsc: 20, end_tsc: 80, parent: Some(0), args: &[], ..marker };
/// let r = ReasonInfo { reason: Reason::SlowCall, function: 2, tid: 7, start_tsc: 21, ..Default::default() };
/// assert_eq!(trace_of(&r, &[marker, slow], |c| *c, |f| f == 1).as_deref(), Some(tp));
/// ```
pub fn trace_of<T>(
    r: &ReasonInfo,
    calls: &[T],
    view: impl Fn(&T) -> TracedCall<'_>,
    marker: impl Fn(u32) -> bool,
) -> Option<String> {
    if !fired(r) {
        return None;
    }
    // The call that fired: of that function on that thread, running at the trigger's start
    // (which the trigger read from the clock itself, a little after the entry's record), the
    // latest to start if several are (recursion: the innermost).
    let fired = calls
        .iter()
        .map(&view)
        .enumerate()
        .filter(|(_, c)| {
            c.function == r.function
                && c.tid == r.tid
                && c.start_tsc <= r.start_tsc
                && (c.open || c.end_tsc >= r.start_tsc)
        })
        .max_by_key(|(i, c)| (c.start_tsc, *i))
        .map(|(i, _)| i)?;
    let mut at = Some(fired);
    while let Some(i) = at {
        let c = view(&calls[i]);
        if marker(c.function) {
            return fdr_format::trace_context::decode(c.args);
        }
        at = c.parent.filter(|&p| p < i);
    }
    None
}

/// The window `w` (of a log already read), every call a [`Call`].
///
/// ```
/// let w = fdr_otlp::convert::convert(&Default::default(), &Default::default());
/// assert_eq!(w.pid, 0);
/// ```
pub fn convert(w: &WindowCalls, about: &About) -> Window {
    let base = w.origin_unix_ns.unwrap_or(0);
    let mut calls: Vec<Call> = w
        .calls
        .iter()
        .map(|c| {
            let start = base.saturating_add(c.start_ns);
            Call {
                function: w.function_name(c.function).into_owned(),
                tid: c.thread,
                thread_name: w.thread_name(c.thread).to_string(),
                start_unix_ns: start,
                end_unix_ns: start.saturating_add(c.duration_ns),
                parent: c.parent,
                open: c.open_at_end,
                inferred_start: c.inferred_start,
                args: c
                    .args
                    .iter()
                    .enumerate()
                    .map(|(i, &v)| (w.arg_name(c.function, i).into_owned(), v))
                    .collect(),
                task: c.task,
                life: false,
                cancelled: false,
                waits: Vec::new(),
            }
        })
        .collect();
    let lives = calls.len();
    // Each task's waits go on its life (the first, should a hostile log hold the id twice).
    let mut waits: std::collections::HashMap<u64, Vec<Wait>> = std::collections::HashMap::new();
    for a in &w.awaits {
        waits.entry(a.task).or_default().push(Wait {
            at: a.at.clone(),
            start_unix_ns: base.saturating_add(a.start_ns),
            waited_ns: a.waited_ns,
            polls: a.polls,
            dropped: a.dropped,
        });
    }
    // Each task's life after the calls, under the call that created it.
    calls.extend(w.tasks.iter().map(|t| {
        let start = base.saturating_add(t.start_ns);
        Call {
            function: w.function_name(t.function).into_owned(),
            tid: t.thread,
            thread_name: w.thread_name(t.thread).to_string(),
            start_unix_ns: start,
            end_unix_ns: start.saturating_add(t.duration_ns),
            parent: t.parent,
            open: t.open_at_end,
            inferred_start: t.inferred_start,
            args: Vec::new(),
            task: Some(t.task),
            life: true,
            cancelled: t.cancelled,
            waits: waits.remove(&t.task).unwrap_or_default(),
        }
    }));
    // A poll that served a task of the window hangs under the task's life (the first, should
    // a hostile log hold the id twice).
    let mut life_of = std::collections::HashMap::new();
    for (i, t) in w.tasks.iter().enumerate() {
        life_of.entry(t.task).or_insert(lives + i);
    }
    let (polls, lives_of) = calls.split_at_mut(lives);
    for (c, wc) in polls.iter_mut().zip(&w.calls) {
        if let Some(&i) = c.task.and_then(|t| life_of.get(&t)) {
            c.parent = Some(i);
            // A poll that completes its task ends at the same tick as the task's life (the
            // completion takes the poll's exit time); their nanoseconds, each rounded from its
            // own start and duration, may differ by one: the poll does not end after its task.
            let life = &lives_of[i - lives];
            if wc.end_tsc == w.tasks[i - lives].end_tsc {
                c.end_unix_ns = c.end_unix_ns.min(life.end_unix_ns);
            }
        }
    }
    let (program, pid, end_tsc) = w
        .run
        .as_ref()
        .map_or(("", 0, 0), |r| (r.program.as_str(), r.pid, r.end_tsc));
    let program = program.rsplit('/').next().unwrap_or("").to_string();
    let service_name = if !about.service_name.is_empty() {
        about.service_name.clone()
    } else if !program.is_empty() {
        program.clone()
    } else {
        "unknown_service".to_string()
    };
    let traceparent = about
        .traceparent
        .clone()
        .or_else(|| traceparent_of(w).map(|t| t.to_string()));
    Window {
        service_name,
        host_name: about.host_name.clone(),
        pid: u32::try_from(pid).unwrap_or(0),
        program,
        fdr_version: env!("CARGO_PKG_VERSION").to_string(),
        start_unix_ns: base,
        sequence: if about.sequence != 0 {
            about.sequence
        } else {
            end_tsc
        },
        reason: w
            .reason
            .as_ref()
            .and_then(|r| reason_of(r, |f| w.function_name(f).into_owned(), w.ticks_per_second)),
        traceparent,
        resource: about.resource.clone(),
        calls,
    }
}

/// The trace the window's slow call ran in: the `traceparent` of the innermost marker call
/// ([`fdr_format::trace_context::MARKER`], made by `fdr::join_trace`) among the callers of the
/// call that fired the trigger (the call itself when it is a marker). `None` for a window not
/// written by a trigger, when that call is not in the window, or when no caller is a marker.
///
/// ```
/// assert_eq!(fdr_otlp::convert::traceparent_of(&Default::default()), None);
/// ```
pub fn traceparent_of(w: &WindowCalls) -> Option<String> {
    let r = w.reason.as_ref()?;
    fn view(c: &fdr_format::window::WindowCall) -> TracedCall<'_> {
        TracedCall {
            function: c.function,
            tid: c.thread,
            start_tsc: c.start_tsc,
            end_tsc: c.end_tsc,
            open: c.open_at_end,
            parent: c.parent,
            args: &c.args,
        }
    }
    let marker = |f: u32| w.function_name(f) == fdr_format::trace_context::MARKER;
    trace_of(r, &w.calls, view, marker)
}

#[cfg(test)]
mod tests {
    use super::*;
    use fdr_format::window::{WindowCall, WindowTask};

    #[test]
    fn a_poll_that_ends_at_its_tasks_last_tick_does_not_end_after_it() {
        // Both end at tick 31, but their nanoseconds were rounded from their own start and
        // duration: the poll starts at 3 and lasts 7 (ends at 10), the task starts at 0 and
        // lasts 9 (ends at 9).
        let w = WindowCalls {
            calls: vec![WindowCall {
                function: 1,
                thread: 7,
                start_ns: 3,
                duration_ns: 7,
                self_ns: 7,
                inferred_start: false,
                open_at_end: false,
                parent: None,
                args: Vec::new(),
                start_tsc: 10,
                end_tsc: 31,
                task: Some(42),
            }],
            tasks: vec![WindowTask {
                function: 1,
                task: 42,
                thread: 7,
                end_thread: 7,
                start_ns: 0,
                duration_ns: 9,
                inferred_start: false,
                open_at_end: false,
                cancelled: false,
                parent: None,
                start_tsc: 2,
                end_tsc: 31,
            }],
            ..WindowCalls::default()
        };
        let out = convert(&w, &About::default());
        let (poll, life) = (&out.calls[0], &out.calls[1]);
        assert!(life.life && poll.parent == Some(1));
        assert_eq!((poll.start_unix_ns, poll.end_unix_ns), (3, 9));
        assert_eq!((life.start_unix_ns, life.end_unix_ns), (0, 9));
        // A poll that ended before its task's last tick keeps its own end.
        let mut earlier = w.clone();
        earlier.calls[0].end_tsc = 30;
        assert_eq!(
            convert(&earlier, &About::default()).calls[0].end_unix_ns,
            10
        );
    }
}
