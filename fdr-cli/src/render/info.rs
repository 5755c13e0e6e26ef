//! The `fdr info` report, one function per part: the file and its clock, the recording's
//! settings and losses, why the log was written, the records and the window, the functions,
//! the threads, their windows, the culled functions, what the cost budget did and, with
//! max_age, sizing help. For a crash box, what the box says of its process first
//! ([`write_box`]).

use std::fmt::Write as _;
use std::io::Write;

use fdr_format::crash_box::{state, Calibration, Liveness};
use fdr_format::events::ThreadStats;
use fdr_format::{ClockSource, Mode, Reason, RunInfo};

use crate::commands::info::{BoxSummary, LogSummary};
use crate::escape::shown;
use crate::model::names::Names;
use crate::model::thin_window::thin_window;
use crate::model::trigger::fired;
use crate::render::{budget, culls, reason};
use crate::units::{human, TickRate};

/// What the parts need besides the summary.
struct Ctx<'a> {
    s: &'a LogSummary,
    names: Names,
    clock: TickRate,
    /// Threads with calls in the log.
    recording: Vec<&'a ThreadStats>,
    /// Time zero: the earliest window start of `recording`.
    origin: u64,
}

fn bytes(n: u64) -> String {
    fdr_format::units::bytes_text(n)
}

/// Prints the summary; a log a trigger wrote ends with `explained`, the first line of `fdr
/// explain` (its call against its usual, and where its excess is).
pub(crate) fn write(
    s: &LogSummary,
    explained: Option<&str>,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let recording: Vec<&ThreadStats> = s
        .threads
        .iter()
        .filter(|t| t.function_records > 0)
        .collect();
    let c = Ctx {
        s,
        names: Names::new(&s.info),
        clock: TickRate::new(s.info.header.cycle_frequency),
        origin: recording.iter().map(|t| t.first_tsc).min().unwrap_or(0),
        recording,
    };
    let mut o = String::new();
    file(&c, &mut o);
    recording_settings(&c, &mut o);
    reason(&c, &mut o);
    records(&c, &mut o);
    functions(&c, &mut o);
    threads(&c, &mut o);
    windows(&c, &mut o);
    culled(&c, &mut o);
    cost_budget(&c, &mut o);
    if let Some(r) = s.info.run.as_ref().filter(|r| r.max_age_ns > 0) {
        let _ = writeln!(o, "{}", sizing(r, &c.recording, &c.clock));
    }
    if let Some(line) = explained {
        let _ = writeln!(o, "explain     {line}");
    }
    out.write_all(o.as_bytes())
}

/// Prints what a crash box says of its process, then the summary of the log recovered from it.
pub(crate) fn write_box(b: &BoxSummary, out: &mut dyn Write) -> std::io::Result<()> {
    let i = &b.info;
    let mut o = String::new();
    let _ = writeln!(o, "crash box   {} ({} bytes)", b.name, b.len);
    let prog = if i.program.is_empty() {
        "(unnamed)".into()
    } else {
        shown(&i.program)
    };
    let _ = writeln!(o, "program     {prog}, pid {}", i.pid);
    let st = match i.state {
        state::LAYING_OUT => "being laid out".to_string(),
        state::RECORDING => "recording".to_string(),
        state::CLOSED => "closed: the process wrote its final log (nothing to recover)".to_string(),
        n => format!("unknown ({n})"),
    };
    let _ = writeln!(o, "state       {st}");
    let how = match (b.liveness, i.state) {
        (Liveness::Alive, _) => format!(
            "still recording: process {} is running (`fdr recover` leaves its box alone)",
            i.pid
        ),
        (Liveness::Gone, state::CLOSED) => "gone, after writing its final log".to_string(),
        (Liveness::Gone, _) => i.death(),
    };
    let _ = writeln!(o, "process     {how}");
    let _ = writeln!(
        o,
        "out         {} (where `fdr recover` writes its log)",
        shown(&i.out.to_string_lossy())
    );
    let cal = match i.calibration {
        Calibration::Final => "calibrated by the process",
        Calibration::Pairs => "from the two clock readings the process left (it died calibrating)",
        Calibration::Estimate => {
            "the estimate taken at start (the process died before calibrating)"
        }
    };
    let _ = writeln!(
        o,
        "calibration {} ticks/s ({:.3} GHz), {cal}",
        i.ticks_per_second,
        i.ticks_per_second as f64 / 1e9
    );
    let _ = writeln!(
        o,
        "buffers     {} of {} hold records ({} each)",
        i.buffers_used,
        i.buffer_count,
        bytes(i.buffer_size)
    );
    let _ = writeln!(o, "functions   {} in the box's table", i.functions);
    let _ = writeln!(
        o,
        "\nthe log recovered from it, in memory (what `fdr recover` writes):"
    );
    out.write_all(o.as_bytes())?;
    write(&b.log, None, out)
}

/// The file, its format and (without a run record) its clock.
fn file(c: &Ctx, s: &mut String) {
    let h = &c.s.info.header;
    let _ = writeln!(s, "file        {} ({} bytes)", c.s.name, c.s.len);
    let mut tsc_bits = Vec::new();
    if h.constant_tsc {
        tsc_bits.push("constant TSC");
    }
    if h.nonstop_tsc {
        tsc_bits.push("nonstop TSC");
    }
    let _ = writeln!(
        s,
        "format      XRay FDR version {}{}{}",
        h.version,
        if tsc_bits.is_empty() { "" } else { ", " },
        tsc_bits.join(", ")
    );
    if c.s.info.run.is_none() {
        let _ = writeln!(
            s,
            "clock       {} ticks/s ({:.3} GHz)",
            h.cycle_frequency,
            h.cycle_frequency as f64 / 1e9
        );
        let _ = writeln!(
            s,
            "recording   no fdr run record: settings and loss counters unknown (not written by fdr?)"
        );
    }
}

/// The run record: clock, program, settings, when it started, what the log is, what was lost.
fn recording_settings(c: &Ctx, s: &mut String) {
    let Some(r) = &c.s.info.run else {
        return;
    };
    let (info, h, clock) = (&c.s.info, &c.s.info.header, &c.clock);
    let ghz = h.cycle_frequency as f64 / 1e9;
    let src = match r.clock {
        ClockSource::Tsc => "timestamp counter (rdtscp)",
        ClockSource::Monotonic => "monotonic clock",
        ClockSource::Injected => "injected test clock",
        ClockSource::TscRseq => "timestamp counter (rdtsc, CPU number from rseq)",
        ClockSource::TscOsCpu => "timestamp counter (rdtsc, CPU number from the OS)",
        ClockSource::Cntvct => "generic timer (CNTVCT_EL0, CPU number from the OS)",
        ClockSource::CntvctRseq => "generic timer (CNTVCT_EL0, CPU number from rseq)",
    };
    let cal = if r.calibration_ns > 0 {
        format!(", calibrated over {}", human(r.calibration_ns))
    } else {
        String::new()
    };
    let _ = writeln!(
        s,
        "clock       {src}, {} ticks/s ({ghz:.3} GHz){cal}",
        h.cycle_frequency
    );
    let prog = if r.program.is_empty() {
        "(unnamed)".into()
    } else {
        shown(&r.program)
    };
    let _ = writeln!(s, "program     {prog}, pid {}", r.pid);
    let _ = writeln!(
        s,
        "recording   {} mode, {} buffers of {}, threshold {} ({} ticks)",
        match r.mode {
            Mode::Ring => "ring",
            Mode::Fill => "fill",
        },
        r.buffer_count,
        bytes(r.buffer_size),
        human(r.threshold_ns),
        r.threshold_ticks
    );
    if let Some(o) = &info.options {
        let _ = writeln!(s, "options     {}", shown(o));
    }
    let _ = writeln!(
        s,
        "started     {}",
        crate::render::dates::describe(
            r.start_unix_secs,
            r.start_unix_nanos,
            crate::render::dates::local_offset(r.start_unix_secs)
        )
    );
    let crashed = info
        .reason
        .as_ref()
        .is_some_and(|x| x.reason == Reason::Crash);
    let _ = writeln!(
        s,
        "log         {}, {} after recording started",
        if crashed {
            "recovered from the crash box of a process that died"
        } else if r.snapshot {
            "snapshot taken while recording went on"
        } else {
            "final log written when recording stopped"
        },
        human(clock.ns(r.end_tsc.saturating_sub(r.start_tsc)))
    );
    let _ = writeln!(
        s,
        "lost        {} records dropped (no free buffer), {} buffers recycled by the ring, \
                 {} buffers missed while copying",
        r.records_dropped, r.buffers_recycled, r.buffers_missed
    );
    if let Some(why) = why_dropped(r, &info.threads) {
        let _ = writeln!(s, "            {why}");
    }
    if let Some(line) = calls_not_recorded(r) {
        let _ = writeln!(s, "{line}");
    }
    if r.culled_at_start > 0 {
        let _ = writeln!(
            s,
            "            {} culled from the start: the last run of this build ended with {} \
             culled (cull_memory; probes restore any that became slow)",
            if r.culled_at_start == 1 {
                "1 function".to_string()
            } else {
                format!("{} functions", r.culled_at_start)
            },
            if r.culled_at_start == 1 { "it" } else { "them" }
        );
    }
}

/// Why the log was written; for a log recovered from a crash box, how its process died.
fn reason(c: &Ctx, s: &mut String) {
    let info = &c.s.info;
    if let Some(r) = info.reason.as_ref().filter(|r| r.reason == Reason::Crash) {
        let _ = writeln!(s, "reason      {}", Reason::Crash.describe());
        let label = if reason::died(r) { "died" } else { "ended" };
        let _ = writeln!(s, "{label:<11} {}", reason::death(r).unwrap_or_default());
        if r.end_within_ns > 0 {
            let _ = writeln!(
                s,
                "when        within {} after the log's end: its last sign of life (it gave one \
                 at least that often)",
                human(r.end_within_ns)
            );
        }
        return;
    }
    if let Some(r) = &info.reason {
        let why = match fired(info) {
            Some(call) => reason::describe_call(call, &c.names, &c.clock, c.origin),
            None => r.reason.describe().to_string(),
        };
        let _ = writeln!(
            s,
            "reason      {why}; {} suppressed",
            plural(r.suppressed, "trigger")
        );
        if r.cpu_wait_suppressed > 0 {
            let _ = writeln!(
                s,
                "            {} past a learned limit only because their thread waited for a CPU: not written (the host's doing, not the function's)",
                plural(r.cpu_wait_suppressed, "call")
            );
        }
    }
}

/// Blocks, records, what the window holds, its time span, and time running backwards.
fn records(c: &Ctx, s: &mut String) {
    let (info, threads, clock, origin) = (&c.s.info, &c.s.threads, &c.clock, c.origin);
    let end = c.recording.iter().map(|t| t.last_tsc).max().unwrap_or(0);
    let blocks: u64 = threads.iter().map(|t| t.blocks).sum();
    let records: u64 = threads.iter().map(|t| t.function_records).sum();
    let _ = writeln!(s, "blocks      {blocks}");
    let _ = writeln!(s, "records     {records} function records");
    if let Some(line) = info.run.as_ref().and_then(|r| thin_window(r, records)) {
        let _ = writeln!(s, "window      {line}");
    }
    let _ = writeln!(
        s,
        "time span   {} (earliest window start to latest record)",
        human(clock.ns(end.saturating_sub(origin)))
    );
    let backwards: u64 = threads.iter().map(|t| t.backwards).sum();
    let first = threads
        .iter()
        .filter_map(|t| t.first_backwards.map(|(at, by)| (at, by, t.tid)))
        .min();
    if let Some((at, by, tid)) = first {
        let (times, points) = if backwards == 1 {
            ("1 time".to_string(), "this point")
        } else {
            (format!("{backwards} times"), "these points")
        };
        let _ = writeln!(
            s,
            "warning     time runs backwards {times} (first at byte offset {at} on thread {tid}, \
             by {}); durations across {points} are shown as 0",
            human(clock.ns(by))
        );
    }
}

/// The function table against the ids the records use.
fn functions(c: &Ctx, s: &mut String) {
    let info = &c.s.info;
    let mut missing: Vec<u32> =
        c.s.called
            .iter()
            .copied()
            .filter(|&id| c.names.info(id).is_none())
            .collect();
    missing.sort_unstable();
    let missing_note = match missing.len() {
        0 => String::new(),
        n => {
            let listed: Vec<String> = missing.iter().take(8).map(|id| format!("#{id}")).collect();
            format!(
                " ({n} not in the table: {}{})",
                listed.join(", "),
                if n > 8 { ", ..." } else { "" }
            )
        }
    };
    let _ = writeln!(
        s,
        "functions   {} in the table, {} seen in records{missing_note}",
        info.functions.len(),
        c.s.called.len()
    );
    if info.foreign_events > 0 {
        let _ = writeln!(
            s,
            "other       {} custom or typed events not written by fdr",
            info.foreign_events
        );
    }
}

/// The threads, with their records and losses, and those the log names but that have no
/// records in it.
fn threads(c: &Ctx, s: &mut String) {
    let (info, threads, clock, origin, names) =
        (&c.s.info, &c.s.threads, &c.clock, c.origin, &c.names);
    let recording = &c.recording;
    // Threads the log names (with their loss counters) but that have no records in it: they
    // lost everything, or their buffers were all recycled.
    let mut silent: Vec<(i32, u64, u64)> = Vec::new();
    for x in &info.threads {
        if recording.iter().any(|t| t.tid == x.tid) {
            continue;
        }
        match silent.iter_mut().find(|s| s.0 == x.tid) {
            Some(s) => s.2 = s.2.saturating_add(x.records_dropped),
            None => {
                let blocks = threads
                    .iter()
                    .find(|t| t.tid == x.tid)
                    .map_or(0, |t| t.blocks);
                silent.push((x.tid, blocks, x.records_dropped));
            }
        }
    }
    let _ = writeln!(s, "threads     {}", recording.len() + silent.len());
    if !recording.is_empty() || !silent.is_empty() {
        let _ = writeln!(
            s,
            "  {:>8}  {:>6}  {:>9}  {:>7}  {:>11}  {:>11}  name",
            "tid", "blocks", "records", "dropped", "from", "to"
        );
        for t in recording.iter() {
            let dropped = info
                .threads
                .iter()
                .filter(|x| x.tid == t.tid)
                .fold(0u64, |n, x| n.saturating_add(x.records_dropped));
            let mut extra = String::new();
            if t.cpu_changes > 0 {
                extra.push_str(&format!(", {} CPU changes", t.cpu_changes));
            }
            if t.tsc_wraps > 0 {
                extra.push_str(&format!(", {} TSC wraps", t.tsc_wraps));
            }
            let _ = writeln!(
                s,
                "  {:>8}  {:>6}  {:>9}  {:>7}  {:>11}  {:>11}  {}{}",
                t.tid,
                t.blocks,
                t.function_records,
                dropped,
                format!("+{}", human(clock.ns(t.first_tsc.saturating_sub(origin)))),
                format!("+{}", human(clock.ns(t.last_tsc.saturating_sub(origin)))),
                shown(&names.thread(t.tid)),
                extra
            );
        }
        for &(tid, blocks, dropped) in &silent {
            let _ = writeln!(
                s,
                "  {:>8}  {:>6}  {:>9}  {:>7}  {:>11}  {:>11}  {}, no records in the log",
                tid,
                blocks,
                0,
                dropped,
                "-",
                "-",
                shown(&names.thread(tid)),
            );
        }
    }
}

/// How much time each thread's buffers held, at what rate they filled.
fn windows(c: &Ctx, s: &mut String) {
    let (clock, names) = (&c.clock, &c.names);
    if c.recording.is_empty() {
        return;
    }
    let _ = writeln!(
        s,
        "windows     the time each thread's window covers, and the rate its records took"
    );
    let _ = writeln!(
        s,
        "  {:>8}  {:>9}  {:>11}  {:>11}  name",
        "tid", "covers", "bytes", "rate"
    );
    for t in &c.recording {
        let ns = clock.ns(t.last_tsc.saturating_sub(t.first_tsc));
        let _ = writeln!(
            s,
            "  {:>8}  {:>9}  {:>11}  {:>11}  {}",
            t.tid,
            human(ns),
            t.window_bytes,
            rate(t.window_bytes, ns),
            shown(&names.thread(t.tid)),
        );
    }
}

/// The culled functions.
fn culled(c: &Ctx, s: &mut String) {
    let culls = &c.s.culls;
    if !culls.is_empty() {
        let n = culls.functions();
        let _ = writeln!(
            s,
            "culled      {}: while culled, a call was recorded only when a probe let it through",
            if n == 1 {
                "1 function".to_string()
            } else {
                format!("{n} functions")
            }
        );
        let tids: Vec<i32> = c.s.threads.iter().map(|t| t.tid).collect();
        for l in culls::lines(culls, &c.names, &c.clock, &tids, c.origin) {
            let _ = writeln!(s, "{l}");
        }
    }
}

/// What the cost budget did, when the recording had one: its estimates and the functions it
/// untimed. Times count from time zero, as the culled functions' do (from the start of
/// recording when no thread recorded a call).
fn cost_budget(c: &Ctx, s: &mut String) {
    let Some(b) = &c.s.info.budget else {
        return;
    };
    let origin = match (&c.s.info.run, c.recording.is_empty()) {
        (Some(r), true) => r.start_tsc,
        _ => c.origin,
    };
    for l in budget::info_lines(b, &c.names, &c.clock, origin) {
        let _ = writeln!(s, "{l}");
    }
}

/// Bytes per second, in the units `bytes` uses: `56.0 MiB/s`; `-` over no time.
fn rate(bytes: u64, ns: u64) -> String {
    if ns == 0 {
        return "-".into();
    }
    let per_s = bytes as f64 * 1e9 / ns as f64;
    let (v, unit) = if per_s >= f64::from(1u32 << 30) {
        (per_s / f64::from(1u32 << 30), "GiB/s")
    } else if per_s >= f64::from(1u32 << 20) {
        (per_s / f64::from(1u32 << 20), "MiB/s")
    } else if per_s >= 1024.0 {
        (per_s / 1024.0, "KiB/s")
    } else {
        (per_s, "B/s")
    };
    format!("{v:.1} {unit}")
}

/// `1 trigger`, `3 triggers`.
fn plural(n: u64, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

/// Sizing help for a log kept by age: which threads' windows cover less than the age limit
/// (their oldest buffers were recycled first), and how many buffers the pool would have
/// needed to hold the whole age at each thread's observed rate (its window's bytes per second).
/// Why records were dropped, and what to set, when the log can tell: in fill mode the pool
/// filled up; in ring mode a thread finds no buffer only when every buffer is held by a
/// recording thread, that is with more threads recording at once than buffers.
fn why_dropped(r: &RunInfo, threads: &[fdr_format::ThreadInfo]) -> Option<String> {
    if r.records_dropped == 0 {
        return None;
    }
    let mut tids: Vec<i32> = threads.iter().map(|t| t.tid).collect();
    tids.sort_unstable();
    tids.dedup();
    let losing = {
        let mut v: Vec<i32> = threads
            .iter()
            .filter(|t| t.records_dropped > 0)
            .map(|t| t.tid)
            .collect();
        v.sort_unstable();
        v.dedup();
        v.len()
    };
    let memory = r.buffer_size.saturating_mul(r.buffer_count);
    Some(match r.mode {
        Mode::Fill => format!(
            "why: fill mode stops recording when all {} buffers are full; for a longer \
             recording raise buffer_count (or use mode=ring to keep the newest window)",
            r.buffer_count
        ),
        // Fewer threads than buffers: drops from a recording stopping under a thread.
        Mode::Ring if (tids.len() as u64) < r.buffer_count => return None,
        Mode::Ring => {
            let want = (tids.len() as u64)
                .saturating_mul(2)
                .max(r.buffer_count + 1);
            // The same memory, in whole KiB where buffers are that big.
            let raw = memory / want;
            let size = if raw >= 1024 {
                raw / 1024 * 1024
            } else {
                raw.max(256) / 8 * 8
            };
            format!(
                "why: {losing} of the {} threads found no buffer: each recording thread holds one \
                 of the pool's {} buffers (and needs a second to keep a ring), so threads past \
                 that record nothing. Set buffer_count to at least twice the threads that record \
                 at once, e.g. FDR_OPTIONS=\"buffer_count={want} buffer_size={size}\" for the same \
                 {} (or Config::buffer_count)",
                tids.len(),
                r.buffer_count,
                bytes(memory),
            )
        }
    })
}

fn sizing(r: &RunInfo, recording: &[&ThreadStats], clock: &TickRate) -> String {
    let age = r.max_age_ns;
    let short = recording
        .iter()
        .filter(|t| clock.ns(t.last_tsc.saturating_sub(t.first_tsc)) < age)
        .count();
    let head = format!(
        "max age     {} (logs keep each thread's last {0})",
        human(age)
    );
    if short == 0 {
        return format!("{head}: every thread's window covers it");
    }
    let size = r.buffer_size.max(1);
    // Per thread: bytes per second of its window times the age, in buffers, rounded up, and
    // at least the one buffer a recording thread always holds.
    let needed: u128 = recording
        .iter()
        .map(|t| {
            let ns = u128::from(clock.ns(t.last_tsc.saturating_sub(t.first_tsc)).max(1));
            let bytes = u128::from(t.window_bytes) * u128::from(age);
            bytes.div_ceil(ns * u128::from(size)).max(1)
        })
        .sum();
    format!(
        "{head}: {short} of {} threads' windows {} less; at the observed rates the pool would \
         need about {needed} buffers of {} (it has {})",
        recording.len(),
        if short == 1 { "covers" } else { "cover" },
        bytes(r.buffer_size),
        r.buffer_count
    )
}

/// What recording left out since it started, beside what the window holds: calls erased for
/// being shorter than the threshold, and how often culled functions were probed. `None` for a
/// log that counted neither (older logs, or threshold 0).
fn calls_not_recorded(r: &fdr_format::RunInfo) -> Option<String> {
    if r.calls_erased == 0 && r.probes == 0 {
        return None;
    }
    Some(format!(
        "calls       since recording started: {} erased (shorter than {}); culled functions \
         were probed {} times (calls of culled functions are skipped uncounted)",
        r.calls_erased,
        human(r.threshold_ns),
        r.probes
    ))
}
