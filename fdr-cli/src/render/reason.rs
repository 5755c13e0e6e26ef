//! Why a log was written, as the commands show it: the reason record and, for a trigger, the
//! call that fired it; for a crash, how the process died.

use fdr_format::events::LogInfo;
use fdr_format::{Ending, Reason, ReasonInfo};

use crate::escape::shown;
use crate::model::names::Names;
use crate::model::trigger::fired;
use crate::render::labels::{relative, thread_label};
use crate::units::{human, TickRate};

/// The call that fired a trigger, in words: `slow call of app::handle on thread 11 (main),
/// started at +1.20 ms, lasted 52.0 ms`. Times are relative to `origin`; names are escaped for
/// a terminal.
pub(crate) fn describe_call(
    r: &ReasonInfo,
    names: &Names,
    clock: &TickRate,
    origin: u64,
) -> String {
    let f = shown(&names.function(r.function)).into_owned();
    let thread = thread_label(names, r.tid);
    let start = relative(r.start_tsc, origin, clock);
    let d = human(clock.ns(r.duration_ticks));
    let call = match r.reason {
        Reason::StillRunning => format!(
            "call still running past its limit: {f} on {thread}, started at {start}, running for {d}"
        ),
        Reason::LongPoll => format!(
            "long poll: a poll of {f} on {thread}, started at {start}, ran {d}, keeping the thread from every other task"
        ),
        Reason::LongPollRunning => format!(
            "poll still running past the long-poll limit: {f} on {thread}, started at {start}, running for {d}, keeping the thread from every other task"
        ),
        _ => format!("slow call of {f} on {thread}, started at {start}, lasted {d}"),
    };
    // Logs written before the limit was recorded have none.
    let call = match (r.limit_ticks, r.p99_ticks) {
        (0, _) => call,
        (limit, 0) => format!("{call} (limit {})", human(clock.ns(limit))),
        (limit, p99) => format!(
            "{call} (limit {}, learned from the function's p99 of {})",
            human(clock.ns(limit)),
            human(clock.ns(p99))
        ),
    };
    // Over the whole call from its thread's context switches; else only for calls the
    // watchdog saw running long. 0 is worth saying too: the call was slow on the CPU, not
    // descheduled.
    match (r.cpu_wait_ns, r.off_cpu_ns) {
        (Some(w), Some(off)) => {
            let ran = clock.ns(r.duration_ticks).saturating_sub(w + off);
            format!(
                "{call}; it ran {}, waited for a CPU {}, was off the CPU {}",
                human(ran),
                human(w),
                human(off)
            )
        }
        (Some(0), None) => format!("{call}; its thread did not wait for a CPU"),
        (Some(w), None) => format!(
            "{call}; its thread waited for a CPU for {} of it at least (descheduled)",
            human(w)
        ),
        (None, _) => call,
    }
}

/// For a log recovered from a crash box ([`Reason::Crash`]), how its process ended:
/// `SIGSEGV (segmentation fault) at address 0x10 on thread 7`, that no handler ran (SIGKILL,
/// the OOM killer), an `exec`, ...; `None` for other reasons.
pub(crate) fn death(r: &ReasonInfo) -> Option<String> {
    (r.reason == Reason::Crash).then(|| fdr_format::crash_box::describe_ending(r))
}

/// Whether the way a recovered log's process ended is a death (a signal, a kill) rather than an
/// end that is no crash (`exec`, a forked child's `_exit`).
pub(crate) fn died(r: &ReasonInfo) -> bool {
    !matches!(
        r.ending,
        Ending::Exec | Ending::ForkedChild | Ending::AfterFork
    )
}

/// The line `fdr account` and `fdr stack` print above their table when a trigger wrote the log.
pub(crate) fn header(
    info: &LogInfo,
    names: &Names,
    clock: &TickRate,
    origin: u64,
) -> Option<String> {
    fired(info).map(|r| format!("triggered by {}", describe_call(r, names, clock, origin)))
}

/// Why the log was written, in one sentence: the call that fired a trigger
/// ([`describe_call`]), how a crashed process ended ([`death`]), else the reason record's words;
/// `None` for a log without a reason record.
pub(crate) fn sentence(
    info: &LogInfo,
    names: &Names,
    clock: &TickRate,
    origin: u64,
) -> Option<String> {
    let r = info.reason.as_ref()?;
    Some(match (death(r), fired(info)) {
        (Some(d), _) => format!("{}: {d}", r.reason.describe()),
        (None, Some(call)) => describe_call(call, names, clock, origin),
        (None, None) => r.reason.describe().to_string(),
    })
}

/// The name of the instant event `fdr convert` puts on the triggering call's thread:
/// `trigger: slow call app::handle` (unescaped: JSON and FXT keep names exactly).
pub(crate) fn instant_name(r: &ReasonInfo, names: &Names) -> String {
    format!(
        "trigger: {} {}",
        r.reason.describe(),
        names.function(r.function)
    )
}

#[cfg(test)]
mod tests_from_docs {
    //! The examples of this module's items, run as tests (the module is the crate's own; an
    //! example may leave a binding or an import unused, as a documentation example does).
    #![allow(unused_imports, unused_variables)]

    #[test]
    fn describe_call() {
        use crate::model::names::Names;
        use crate::render::reason::describe_call;
        use crate::units::TickRate;
        use fdr_format::{Ending, Reason, ReasonInfo};
        let r = ReasonInfo {
            reason: Reason::StillRunning,
            function: 4,
            tid: 9,
            start_tsc: 2_000,
            duration_ticks: 3_000_000,
            ..ReasonInfo::default()
        };
        assert_eq!(
            describe_call(&r, &Names::default(), &TickRate::new(1_000_000_000), 1_000),
            "call still running past its limit: #4 on thread 9, started at +1.00 µs, running for 3.00 ms"
        );
        // With the limit in force, learned (`trigger = "auto"`) from the function's p99.
        let r = ReasonInfo {
            reason: Reason::SlowCall,
            limit_ticks: 61_437,
            p99_ticks: 20_479,
            ..r
        };
        assert!(
            describe_call(&r, &Names::default(), &TickRate::new(1_000_000_000), 1_000).ends_with(
                "lasted 3.00 ms (limit 61.4 µs, learned from the function's p99 of 20.5 µs)"
            )
        );
        // With the time its thread waited for a CPU while the watchdog watched the call.
        let r = ReasonInfo {
            cpu_wait_ns: Some(2_500_000),
            ..r
        };
        assert!(
            describe_call(&r, &Names::default(), &TickRate::new(1_000_000_000), 1_000).ends_with(
                "; its thread waited for a CPU for 2.50 ms of it at least (descheduled)"
            )
        );
        // Over the whole call, from its thread's context switches: where all of it went.
        let r = ReasonInfo {
            off_cpu_ns: Some(300_000),
            ..r
        };
        assert!(
            describe_call(&r, &Names::default(), &TickRate::new(1_000_000_000), 1_000)
                .ends_with("; it ran 200 µs, waited for a CPU 2.50 ms, was off the CPU 300 µs")
        );
    }

    #[test]
    fn death() {
        use crate::render::reason::death;
        use fdr_format::{Ending, Reason, ReasonInfo};
        let r = ReasonInfo {
            reason: Reason::Crash,
            signal: 6,
            tid: 3,
            ..ReasonInfo::default()
        };
        assert_eq!(death(&r).unwrap(), "SIGABRT (abort) on thread 3");
        assert!(death(&ReasonInfo::default()).is_none());
    }

    #[test]
    fn instant_name() {
        use crate::model::names::Names;
        use crate::render::reason::instant_name;
        use fdr_format::{Ending, Reason, ReasonInfo};
        let r = ReasonInfo {
            reason: Reason::SlowCall,
            function: 4,
            ..ReasonInfo::default()
        };
        assert_eq!(instant_name(&r, &Names::default()), "trigger: slow call #4");
    }
}
