//! The `fdr explain` report: per call explained, a first line that says it all
//! ([`summary`], which `fdr info` repeats), the culprit's line, then the call, its usual, the
//! way down to the culprit, and where the time went (text); or one JSON object per call. For a
//! crash, the stack of the thread that died and what the other threads had open.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::Write;

use clap::ValueEnum;

use crate::commands::explain::{
    CallsOf, Crash, Explained, Explanation, OpenStack, Step, Usual, UsualFrom, Verdict, Where,
};
use crate::escape::{json_string, shown};
use crate::limits::MAX_CALLS_UNDER_ONE;
use crate::model::names::Names;
use crate::model::tasks::TaskWaits;
use crate::render::calls::{await_json, awaited, split_line, thousands};
use crate::render::labels::{relative, thread_label};
use crate::render::reason::{death, died};
use crate::units::{human, lasted, TickRate};

/// Output format of `fdr explain`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum ExplainFormat {
    /// A few lines per call: the verdict first, then the figures behind it.
    Text,
    /// One JSON object (an array of them with --function).
    Json,
}

/// Await sites listed per task in text, longest first.
const SITES_SHOWN: usize = 3;

/// What the report names things with.
struct Ctx<'a> {
    e: &'a Explained,
    names: Names,
    clock: TickRate,
}

impl Ctx<'_> {
    fn tid(&self, thread: u32) -> i32 {
        self.e
            .plan
            .threads
            .get(thread as usize)
            .map_or(0, |t| t.tid)
    }

    fn waits(&self, s: &Step) -> Option<&TaskWaits> {
        s.task.and_then(|t| self.e.awaits.by_task.get(&t))
    }
}

/// Writes `e` in `format`.
pub(crate) fn write(
    e: &Explained,
    format: ExplainFormat,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let c = Ctx {
        e,
        names: Names::new(&e.plan.info),
        clock: TickRate::new(e.plan.info.header.cycle_frequency),
    };
    let mut o = String::new();
    match format {
        ExplainFormat::Text => text(&c, &mut o),
        ExplainFormat::Json => json(&c, &mut o),
    }
    out.write_all(o.as_bytes())
}

/// `app::handle`, or `app::get_quote task 7`: a step's name, escaped for a terminal.
fn name(names: &Names, s: &Step) -> String {
    let f = shown(&names.function(s.function)).into_owned();
    match s.task {
        Some(t) => format!("{f} task {t}"),
        None => f,
    }
}

/// `52.0 µs`, `≥ 1.20 s` for one still running.
fn took(s: &Step) -> String {
    lasted(s.duration_ns, s.open)
}

/// `usually 52.0 µs`, or why there is no usual.
fn usually(s: &Step, baseline: bool) -> String {
    let u = &s.usual;
    match (u.of, u.from) {
        (0, UsualFrom::Window) if s.task.is_some() => "its only task in the window".into(),
        (0, UsualFrom::Window) => "its only call in the window".into(),
        (0, UsualFrom::Baseline) if baseline => "not in the baseline".into(),
        (0, UsualFrom::Baseline) => "no usual".into(),
        _ => format!("usually {}", human(u.ns)),
    }
}

fn pct(x: f64) -> String {
    format!("{}%", (x * 100.0).round() as u64)
}

/// `app::query ×50 (50.0 ms in all, usually 1.00 ms each)`, `app::fetch (5.00 ms, usually
/// 5.00 ms)`: the calls of one function a call made.
fn calls_of(names: &Names, c: &CallsOf) -> String {
    let f = shown(&names.function(c.function)).into_owned();
    let usual = match c.usual.of {
        0 => "no usual".to_string(),
        _ => format!("usually {}", human(c.usual.ns)),
    };
    if c.calls == 1 {
        format!("{f} ({}, {usual})", human(c.duration_ns))
    } else {
        format!(
            "{f} \u{d7}{} ({} in all, {usual} each)",
            thousands(c.calls),
            human(c.duration_ns)
        )
    }
}

/// How the culprit's excess is made up, as the end of a line.
fn verdict_words(names: &Names, culprit: &Step, v: &Verdict) -> String {
    let task = culprit.task.is_some();
    match v {
        Verdict::NoExcess => "no slower than usual".into(),
        Verdict::Own(share) if task => format!(
            "{} of the excess is in the task itself, not in a task made or awaited in it",
            pct(*share)
        ),
        Verdict::Own(share) => format!(
            "{} of the excess is {}'s own time",
            pct(*share),
            shown(&names.function(culprit.function))
        ),
        Verdict::UsualCalls { share, top } => {
            let calls: Vec<String> = top.iter().map(|c| calls_of(names, c)).collect();
            format!(
                "{} of the excess is in calls it made that took their usual time (calls it does \
                 not usually make, or more of them){}{}",
                pct(*share),
                if calls.is_empty() { "" } else { ": " },
                calls.join(", ")
            )
        }
        Verdict::Shared {
            own,
            usual_calls,
            top,
        } => {
            let parts: Vec<String> = top
                .iter()
                .map(|(s, share)| format!("{} {}", name(names, s), pct(*share)))
                .collect();
            let mut rest = Vec::new();
            if *own > 0.0 {
                rest.push(format!("its own time {}", pct(*own)));
            }
            if *usual_calls > 0.0 {
                rest.push(format!(
                    "calls that took their usual time {}",
                    pct(*usual_calls)
                ));
            }
            format!(
                "the excess is shared among {}: {}{}",
                if task {
                    "the tasks made or awaited in it"
                } else {
                    "its callees"
                },
                if parts.is_empty() {
                    "none holds any".to_string()
                } else {
                    parts.join(", ")
                },
                if rest.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", rest.join(", "))
                }
            )
        }
        Verdict::Unseen { calls, ns } => format!(
            "the excess may be in the {} calls it made past fdr's limit of {} kept under one call \
             ({} in all), which are not followed",
            thousands(*calls),
            thousands(MAX_CALLS_UNDER_ONE as u64),
            human(*ns)
        ),
        Verdict::NoTree => {
            "its entry is before the window, so the calls it made are not in the log".into()
        }
        Verdict::TaskBeforeWindow => "it is a task created before the window: its polls, waits \
                                      and the tasks made in it are not all in the log"
            .into(),
    }
}

/// The first line of an explanation: the call, its duration against its usual, and where its
/// excess is. `app::handle: 20.3 ms, usually 1.20 ms; 98% of the excess is in app::lookup
/// (20.1 ms, usually 52.0 µs)`.
pub(crate) fn summary(x: &Explanation, names: &Names, baseline: bool) -> String {
    let call = x.call();
    let culprit = x.culprit();
    let head = format!(
        "{}: {}, {}",
        name(names, call),
        took(call),
        usually(call, baseline)
    );
    if x.path.len() > 1 {
        return format!(
            "{head}; {} of the excess is in {} ({}, {})",
            pct(x.share),
            name(names, culprit),
            took(culprit),
            usually(culprit, baseline)
        );
    }
    format!("{head}; {}", verdict_words(names, culprit, &x.verdict))
}

/// The culprit's line, when it is not the call: `app::lookup: 20.1 ms, usually 52.0 µs; 99% of
/// the excess is app::lookup's own time`.
fn culprit_line(x: &Explanation, names: &Names, baseline: bool) -> Option<String> {
    (x.path.len() > 1).then(|| {
        let c = x.culprit();
        format!(
            "{}: {}, {}; {}",
            name(names, c),
            took(c),
            usually(c, baseline),
            verdict_words(names, c, &x.verdict)
        )
    })
}

fn text(c: &Ctx<'_>, o: &mut String) {
    if let Some(k) = &c.e.crash {
        crash_text(c, k, o);
        return;
    }
    if c.e.items.is_empty() {
        let _ = writeln!(
            o,
            "no call of a function matching {} in the log",
            shown(c.e.listed.as_deref().unwrap_or(""))
        );
        return;
    }
    for (i, x) in c.e.items.iter().enumerate() {
        if i > 0 {
            o.push('\n');
        }
        item_text(c, x, o);
    }
}

/// Where the explanation's usual comes from, in words.
fn usual_text(c: &Ctx<'_>, s: &Step) -> String {
    let u: &Usual = &s.usual;
    let f = shown(&c.names.function(s.function)).into_owned();
    let what = if s.task.is_some() { "task" } else { "call" };
    let (file, profile) = match &c.e.baseline {
        Some((n, p)) => (shown(n).into_owned(), *p),
        None => (String::new(), false),
    };
    let no_task_latency = if s.task.is_some() && profile {
        " (a profile keeps no task latency)"
    } else {
        ""
    };
    match (u.of, u.from) {
        (0, UsualFrom::Window) => format!(
            "none: no other {what} of {f} in the window{no_task_latency}, so its whole time \
             counts as excess"
        ),
        (0, UsualFrom::Baseline) => {
            format!("none: {f} is not in {file}, so its whole time counts as excess")
        }
        (1, UsualFrom::Window) => format!(
            "{}: the only other {what} of {f} in the window{no_task_latency}",
            human(u.ns)
        ),
        (n, UsualFrom::Window) => format!(
            "{}: the median of the {} other {what}s of {f} in the window{no_task_latency}",
            human(u.ns),
            thousands(n)
        ),
        (1, UsualFrom::Baseline) if profile => {
            format!(
                "{}: the only call of {f} in the profile {file}",
                human(u.ns)
            )
        }
        (n, UsualFrom::Baseline) if profile => format!(
            "{}: the p50 of the {} calls of {f} in the profile {file}",
            human(u.ns),
            thousands(n)
        ),
        (1, UsualFrom::Baseline) => format!("{}: the only {what} of {f} in {file}", human(u.ns)),
        (n, UsualFrom::Baseline) => format!(
            "{}: the median of the {} {what}s of {f} in {file}",
            human(u.ns),
            thousands(n)
        ),
    }
}

/// The call's line: its thread, its start, how long it took, whether it fired the trigger.
fn call_text(c: &Ctx<'_>, x: &Explanation) -> String {
    let s = x.call();
    let p = &c.e.plan;
    let mut line = format!(
        "{} on {}, {} at {}",
        name(&c.names, s),
        thread_label(&c.names, c.tid(s.thread)),
        if s.task.is_some() {
            "created"
        } else {
            "started"
        },
        relative(s.start, p.origin, &c.clock)
    );
    if s.inferred {
        line.push_str(" (before the window: its start)");
    }
    let span = s.task.and_then(|_| c.waits(s)).and_then(|w| w.span);
    let _ = match span {
        _ if s.open => write!(line, ", still running at the end: {}", took(s)),
        Some(t) if t.cancelled => write!(line, ", dropped after {}", took(s)),
        Some(_) => write!(line, ", completed after {}", took(s)),
        None => write!(line, ", lasted {}", took(s)),
    };
    if x.trigger {
        if let Some(r) = &p.info.reason {
            let _ = write!(line, "; it fired the trigger ({}", r.reason.describe());
            if r.limit_ticks > 0 {
                let _ = write!(line, ", limit {}", human(c.clock.ns(r.limit_ticks)));
            }
            line.push(')');
        }
    }
    line
}

/// Where the time went, as the reason record measured it; `None` when there is nothing to say
/// (a task that did not fire the trigger: its split says it).
fn where_text(w: &Where, task: bool) -> Option<String> {
    Some(match *w {
        Where::Whole {
            running_ns,
            cpu_wait_ns,
            off_cpu_ns,
        } => format!(
            "on a CPU {}, waiting for a CPU {}, off the CPU {} (blocked: a syscall, a lock, a \
             sleep, a page fault)",
            human(running_ns),
            human(cpu_wait_ns),
            human(off_cpu_ns)
        ),
        Where::CpuWaitAtLeast(w) => format!(
            "waiting for a CPU {} at least (counted from when fdr's watchdog saw the call \
             running long); on and off the CPU not measured",
            human(w)
        ),
        _ if task => return None,
        Where::NotMeasured => "not measured: the log's reason record holds no measure (the call \
                               ended before fdr's watchdog looked, on a system without per-thread \
                               context-switch counts; or one without scheduler statistics, such \
                               as macOS; or a log from an fdr before the measure)"
            .into(),
        Where::NotTheTrigger => "not measured: fdr measures the time on and off the CPU of the \
                                 call that fired a trigger only"
            .into(),
        Where::TaskNotMeasured => "not measured for a task's latency, whose polls may run on \
                                   several threads between its waits (fdr measures it for a slow \
                                   call and a long poll)"
            .into(),
    })
}

/// A task's waits at await sites summed by site, longest first: (site, ticks, waits).
fn by_site(w: &TaskWaits) -> Vec<(u32, u64, u64)> {
    let mut sites: HashMap<u32, (u64, u64)> = HashMap::new();
    for a in &w.listed {
        let e = sites.entry(a.event.site).or_default();
        e.0 = e.0.saturating_add(a.event.waited);
        e.1 += 1;
    }
    let mut v: Vec<(u32, u64, u64)> = sites.into_iter().map(|(s, (t, n))| (s, t, n)).collect();
    v.sort_by_key(|&(site, t, _)| (std::cmp::Reverse(t), site));
    v
}

/// `src/app.rs:20:9 1.00 µs, src/app.rs:24:13 450 ns (2 waits)`: the longest waits by site.
fn sites_text(c: &Ctx<'_>, w: &TaskWaits) -> Option<String> {
    let sites = by_site(w);
    if sites.is_empty() {
        return None;
    }
    let mut parts: Vec<String> = sites
        .iter()
        .take(SITES_SHOWN)
        .map(|&(site, t, n)| {
            format!(
                "{} {}{}",
                shown(&c.names.site(site)),
                human(c.clock.ns(t)),
                if n > 1 {
                    format!(" ({} waits)", thousands(n))
                } else {
                    String::new()
                }
            )
        })
        .collect();
    if sites.len() > SITES_SHOWN {
        parts.push(format!("{} more sites", sites.len() - SITES_SHOWN));
    }
    if w.more > 0 {
        parts.push(format!(
            "{} more waits, {}",
            thousands(w.more),
            human(c.clock.ns(w.more_ticks))
        ));
    }
    Some(parts.join(", "))
}

fn item_text(c: &Ctx<'_>, x: &Explanation, o: &mut String) {
    let baseline = c.e.baseline.is_some();
    let _ = writeln!(o, "{}", summary(x, &c.names, baseline));
    if let Some(l) = culprit_line(x, &c.names, baseline) {
        let _ = writeln!(o, "{l}");
    }
    let call = x.call();
    let _ = writeln!(o, "  call      {}", call_text(c, x));
    let _ = writeln!(o, "  usual     {}", usual_text(c, call));
    if x.verdict == Verdict::NoExcess {
        let _ = writeln!(o, "  excess    none");
    } else if x.path.len() == 1 {
        let _ = writeln!(o, "  excess    {}", human(call.excess_ns));
    } else {
        let _ = writeln!(
            o,
            "  excess    {}, followed down through the {} that holds more than half of it:",
            human(call.excess_ns),
            if call.task.is_some() {
                "task made or awaited in it"
            } else {
                "callee"
            }
        );
        let _ = writeln!(
            o,
            "            {:>10} {:>10} {:>10} {:>6}",
            "time", "usual", "excess", "share"
        );
        for (depth, s) in x.path.iter().enumerate() {
            let share = if call.excess_ns == 0 {
                0.0
            } else {
                (s.excess_ns as f64 / call.excess_ns as f64).min(1.0)
            };
            let _ = writeln!(
                o,
                "            {:>10} {:>10} {:>10} {:>6}  {:indent$}{}",
                took(s),
                if s.usual.of == 0 {
                    "-".to_string()
                } else {
                    human(s.usual.ns)
                },
                human(s.excess_ns),
                pct(share),
                "",
                name(&c.names, s),
                indent = depth * 2
            );
        }
    }
    if call.task.is_some() {
        task_text(c, call, 2, o);
        if x.path.len() > 1 {
            let culprit = x.culprit();
            if culprit.task.is_some() {
                let _ = writeln!(o, "  culprit   {}:", name(&c.names, culprit));
                task_text(c, culprit, 4, o);
            }
        }
        if let Some(w) = where_text(&x.time, true) {
            let _ = writeln!(o, "  measured  {w}");
        }
    } else if let Some(w) = where_text(&x.time, false) {
        // A call still running was measured up to when the trigger fired.
        let measured = match x.time {
            Where::Whole {
                running_ns,
                cpu_wait_ns,
                off_cpu_ns,
            } => running_ns + cpu_wait_ns + off_cpu_ns,
            _ => call.duration_ns,
        };
        let part = if measured < call.duration_ns {
            format!(
                ", in the first {} (when the trigger fired)",
                human(measured)
            )
        } else {
            String::new()
        };
        let _ = writeln!(o, "  time      {w}{part}");
    }
}

/// A task's split (running, awaiting, scheduled) and its longest waits by site, `indent`
/// spaces in.
fn task_text(c: &Ctx<'_>, s: &Step, indent: usize, o: &mut String) {
    let w = c.waits(s);
    let split = w.and_then(|w| split_line(w, &c.clock));
    let _ = writeln!(
        o,
        "{:indent$}{:<9} {}",
        "",
        "time",
        split.unwrap_or_else(|| "none of its polls, waits or wake-ups is in the log".into())
    );
    if let Some(sites) = w.and_then(|w| sites_text(c, w)) {
        let _ = writeln!(o, "{:indent$}{:<9} {sites}", "", "awaited");
    }
}

/// `app::main ≥ 4.00 ms > app::wait ≥ 1.00 ms`: a thread's open stack on one line.
fn stack_line(c: &Ctx<'_>, s: &OpenStack) -> String {
    let calls: Vec<String> = s
        .calls
        .iter()
        .map(|k| format!("{} {}", name(&c.names, k), took(k)))
        .collect();
    format!(
        "{}: {}",
        thread_label(&c.names, c.tid(s.thread)),
        calls.join(" > ")
    )
}

fn crash_text(c: &Ctx<'_>, k: &Crash, o: &mut String) {
    let _ = writeln!(o, "{}", crash_summary(c, k));
    let end = fdr_format::replay::log_end(&c.e.plan.info, &c.e.plan.threads);
    let at = relative(end, c.e.plan.origin, &c.clock);
    match &k.died {
        Some(d) => {
            let _ = writeln!(
                o,
                "  {} died with these calls open at the window's end ({at}), outermost first:",
                thread_label(&c.names, c.tid(d.thread))
            );
            for (depth, s) in d.calls.iter().enumerate() {
                let _ = writeln!(
                    o,
                    "    {:>10}  {:indent$}{}, {}",
                    took(s),
                    "",
                    name(&c.names, s),
                    usually(s, false),
                    indent = depth * 2
                );
            }
        }
        None if k.reason.tid != 0 => {
            let _ = writeln!(
                o,
                "  thread {} died with no call open in the window",
                k.reason.tid
            );
        }
        None => {
            let _ = writeln!(o, "  the log names no thread that died");
        }
    }
    if !k.others.is_empty() {
        let _ = writeln!(
            o,
            "  {} threads, their calls open at the end (outermost first):",
            if k.died.is_some() || k.reason.tid != 0 {
                "the other"
            } else {
                "the"
            }
        );
        for s in &k.others {
            let _ = writeln!(o, "    {}", stack_line(c, s));
        }
    }
    if k.idle > 0 {
        let _ = writeln!(
            o,
            "  {} other thread{} had no call open",
            thousands(k.idle as u64),
            if k.idle == 1 { "" } else { "s" }
        );
    }
}

/// The first line for a crash: how the process died, and the call its thread was in.
fn crash_summary(c: &Ctx<'_>, k: &Crash) -> String {
    let how = death(&k.reason).unwrap_or_default();
    let mut line = if died(&k.reason) {
        format!("the process died: {how}")
    } else {
        format!("the process ended: {how}")
    };
    if let Some(inner) = k.died.as_ref().and_then(|d| d.calls.last()) {
        let _ = write!(
            line,
            ", inside {} ({}, {})",
            name(&c.names, inner),
            took(inner),
            usually(inner, false)
        );
    }
    line
}

/// `null`, or the number.
fn opt(v: Option<u64>) -> String {
    v.map_or_else(|| "null".into(), |v| v.to_string())
}

fn float(v: f64) -> String {
    format!("{v}")
}

/// A step's keys (no braces).
fn step_keys(c: &Ctx<'_>, s: &Step) -> String {
    format!(
        "\"function\": {}, \"id\": {}, \"task\": {}, \"thread\": {}, \"start_ns\": {}, \
         \"duration_ns\": {}, \"open_at_end\": {}, \"inferred_start\": {}, \"usual_ns\": {}, \
         \"usual_of\": {}, \"excess_ns\": {}",
        json_string(&c.names.function(s.function)),
        s.function,
        opt(s.task),
        c.tid(s.thread),
        c.clock.ns(s.start.saturating_sub(c.e.plan.origin)),
        s.duration_ns,
        s.open,
        s.inferred,
        s.usual.ns,
        s.usual.of,
        s.excess_ns
    )
}

/// The calls of one function a call made, as JSON.
fn calls_of_json(c: &Ctx<'_>, k: &CallsOf) -> String {
    format!(
        "{{\"function\": {}, \"id\": {}, \"calls\": {}, \"duration_ns\": {}, \"usual_ns\": {}, \
         \"usual_of\": {}}}",
        json_string(&c.names.function(k.function)),
        k.function,
        k.calls,
        k.duration_ns,
        k.usual.ns,
        k.usual.of
    )
}

fn item_json(c: &Ctx<'_>, x: &Explanation) -> String {
    let call = x.call();
    let culprit = x.culprit();
    let root_share = |s: &Step| {
        if call.excess_ns == 0 {
            0.0
        } else {
            (s.excess_ns as f64 / call.excess_ns as f64).min(1.0)
        }
    };
    let path: Vec<String> = x
        .path
        .iter()
        .map(|s| {
            format!(
                "{{{}, \"share\": {}}}",
                step_keys(c, s),
                float(root_share(s))
            )
        })
        .collect();
    let with_share =
        |s: &Step, share: f64| format!("{{{}, \"share\": {}}}", step_keys(c, s), float(share));
    let (verdict, own, usual_share, shared, usual_calls) = match &x.verdict {
        Verdict::NoExcess => ("no_excess", None, None, Vec::new(), Vec::new()),
        Verdict::Own(s) => ("own_time", Some(*s), None, Vec::new(), Vec::new()),
        Verdict::UsualCalls { share, top } => (
            "usual_calls",
            None,
            Some(*share),
            Vec::new(),
            top.iter().map(|k| calls_of_json(c, k)).collect(),
        ),
        Verdict::Shared {
            own,
            usual_calls,
            top,
        } => (
            "shared",
            Some(*own),
            Some(*usual_calls),
            top.iter().map(|(s, share)| with_share(s, *share)).collect(),
            Vec::new(),
        ),
        Verdict::Unseen { .. } => ("unseen_calls", None, None, Vec::new(), Vec::new()),
        Verdict::NoTree => ("not_followed", None, None, Vec::new(), Vec::new()),
        Verdict::TaskBeforeWindow => ("task_before_window", None, None, Vec::new(), Vec::new()),
    };
    let (running, wait, off, measured) = match x.time {
        Where::Whole {
            running_ns,
            cpu_wait_ns,
            off_cpu_ns,
        } => (
            Some(running_ns),
            Some(cpu_wait_ns),
            Some(off_cpu_ns),
            "whole_call",
        ),
        Where::CpuWaitAtLeast(w) => (None, Some(w), None, "cpu_wait_at_least"),
        Where::NotMeasured => (None, None, None, "not_measured"),
        Where::NotTheTrigger => (None, None, None, "not_the_trigger"),
        Where::TaskNotMeasured => (None, None, None, "not_measured_for_a_task"),
    };
    let usual_from = match (&c.e.baseline, call.usual.from) {
        (_, UsualFrom::Window) => "\"window\"".to_string(),
        (Some((name, _)), UsualFrom::Baseline) => json_string(name),
        (None, UsualFrom::Baseline) => "null".into(),
    };
    let mut o = format!(
        "{{{}, \"usual_from\": {usual_from}, \"trigger\": {}, \"culprit\": {}, \"culprit_id\": {}, \
         \"culprit_task\": {}, \"culprit_duration_ns\": {}, \"culprit_usual_ns\": {}, \
         \"culprit_excess_ns\": {}, \"share\": {}, \"verdict\": \"{verdict}\", \"own_share\": {}, \
         \"usual_calls_share\": {}, \"shared\": [{}], \"usual_calls\": [{}], \"path\": [{}], \
         \"measured\": \"{measured}\"",
        step_keys(c, call),
        x.trigger,
        json_string(&c.names.function(culprit.function)),
        culprit.function,
        opt(culprit.task),
        culprit.duration_ns,
        culprit.usual.ns,
        culprit.excess_ns,
        float(x.share),
        own.map_or_else(|| "null".into(), float),
        usual_share.map_or_else(|| "null".into(), float),
        shared.join(", "),
        usual_calls.join(", "),
        path.join(", "),
    );
    let _ = write!(
        o,
        ", \"cpu_wait_ns\": {}, \"off_cpu_ns\": {}",
        opt(wait),
        opt(off)
    );
    match c.waits(call).filter(|_| call.task.is_some()) {
        Some(w) => {
            let waits: Vec<String> = w
                .listed
                .iter()
                .map(|a| await_json(a, &c.names, &c.clock, c.e.plan.origin))
                .collect();
            let _ = write!(
                o,
                ", \"running_ns\": {}, \"polls\": {}, \"awaited_ns\": {}, \"wake_ups\": {}, \
                 \"scheduled_ns\": {}, \"awaits\": [{}]}}",
                c.clock.ns(w.running),
                w.polls,
                c.clock.ns(awaited(w)),
                w.wakes,
                c.clock.ns(w.scheduled),
                waits.join(", ")
            );
        }
        None => {
            let _ = write!(
                o,
                ", \"running_ns\": {}, \"polls\": null, \"awaited_ns\": null, \"wake_ups\": null, \
                 \"scheduled_ns\": null, \"awaits\": null}}",
                opt(running)
            );
        }
    }
    o
}

fn json(c: &Ctx<'_>, o: &mut String) {
    if let Some(k) = &c.e.crash {
        crash_json(c, k, o);
        return;
    }
    let items: Vec<String> = c.e.items.iter().map(|x| item_json(c, x)).collect();
    if c.e.listed.is_some() {
        if items.is_empty() {
            o.push_str("[]\n");
        } else {
            let _ = writeln!(o, "[\n  {}\n]", items.join(",\n  "));
        }
    } else {
        let _ = writeln!(o, "{}", items.first().map_or("null", String::as_str));
    }
}

fn stack_json(c: &Ctx<'_>, s: &OpenStack) -> String {
    let calls: Vec<String> = s
        .calls
        .iter()
        .map(|k| format!("{{{}}}", step_keys(c, k)))
        .collect();
    format!("[{}]", calls.join(", "))
}

fn crash_json(c: &Ctx<'_>, k: &Crash, o: &mut String) {
    let inner = k.died.as_ref().and_then(|d| d.calls.last());
    let others: Vec<String> = k
        .others
        .iter()
        .map(|s| {
            format!(
                "{{\"thread\": {}, \"stack\": {}}}",
                c.tid(s.thread),
                stack_json(c, s)
            )
        })
        .collect();
    let _ = writeln!(
        o,
        "{{\"reason\": {}, \"death\": {}, \"thread\": {}, \"function\": {}, \"duration_ns\": {}, \
         \"usual_ns\": {}, \"excess_ns\": {}, \"open_at_end\": {}, \"culprit\": null, \
         \"share\": null, \"running_ns\": null, \"cpu_wait_ns\": null, \"off_cpu_ns\": null, \
         \"stack\": {}, \"threads\": [{}], \"idle_threads\": {}}}",
        json_string(k.reason.reason.describe()),
        json_string(&death(&k.reason).unwrap_or_default()),
        if k.reason.tid == 0 {
            "null".to_string()
        } else {
            k.reason.tid.to_string()
        },
        inner.map_or_else(
            || "null".into(),
            |s| json_string(&c.names.function(s.function))
        ),
        opt(inner.map(|s| s.duration_ns)),
        opt(inner.map(|s| s.usual.ns)),
        opt(inner.map(|s| s.excess_ns)),
        inner.is_some(),
        k.died
            .as_ref()
            .map_or_else(|| "[]".into(), |d| stack_json(c, d)),
        others.join(", "),
        k.idle
    );
}
