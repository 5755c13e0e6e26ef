//! What the cost budget did (`budget=PERCENT`), as `info` and `account` print it: the budget
//! and the recorder's estimate of its own cost, and the functions it stopped timing, from when
//! to when. Times are relative to time zero of the outputs, as the culled functions' are.

use fdr_format::BudgetInfo;

use crate::escape::shown;
use crate::model::budget::{Stopped, Untimed};
use crate::model::names::Names;
use crate::render::labels::relative;
use crate::units::{human_count, human_ps, percent_ppm, TickRate};

/// What `account` appends to the name of a function the budget untimed during the window.
pub(crate) const UNTIMED_MARK: &str = "[untimed by budget]";

/// A function's name as `info` lists it: `function #ID` for an id not in the table.
fn function(names: &Names, id: u32) -> String {
    if names.info(id).is_some() {
        shown(&names.function(id)).into_owned()
    } else {
        format!("function #{id}")
    }
}

/// What a span stopped, as `info` and `account` name it: the function; `NAME, its waits at
/// FILE:LINE:COL`; `NAME, its wake-ups`.
fn subject(names: &Names, s: Stopped) -> String {
    match s {
        Stopped::Calls(id) => function(names, id),
        Stopped::Waits(site) => format!(
            "{}, its waits at {}",
            function(names, site),
            shown(&names.site(site))
        ),
        Stopped::Wakes(id) => format!("{}, its wake-ups", function(names, id)),
    }
}

/// `3 functions`, `the waits at 2 await sites`, `the wake-ups of 1 async function`, joined.
fn counted(kinds: &[Stopped]) -> String {
    let count = |f: fn(&Stopped) -> bool| kinds.iter().filter(|k| f(k)).count();
    let plural = |n: usize, one: &str, many: &str| {
        if n == 1 {
            format!("1 {one}")
        } else {
            format!("{n} {many}")
        }
    };
    let mut parts = Vec::new();
    let calls = count(|k| matches!(k, Stopped::Calls(_)));
    if calls > 0 {
        parts.push(plural(calls, "function", "functions"));
    }
    let waits = count(|k| matches!(k, Stopped::Waits(_)));
    if waits > 0 {
        parts.push(format!(
            "the waits at {}",
            plural(waits, "await site", "await sites")
        ));
    }
    let wakes = count(|k| matches!(k, Stopped::Wakes(_)));
    if wakes > 0 {
        parts.push(format!(
            "the wake-ups of {}",
            plural(wakes, "async function", "async functions")
        ));
    }
    match parts.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
        None => String::new(),
    }
}

/// `from +1.20 s to +3.55 s`, `from +4.00 s to the end of the log`.
fn span(from: u64, to: Option<u64>, clock: &TickRate, origin: u64) -> String {
    match to {
        Some(to) => format!(
            "from {} to {}",
            relative(from, origin, clock),
            relative(to, origin, clock)
        ),
        None => format!(
            "from {} to the end of the log",
            relative(from, origin, clock)
        ),
    }
}

/// `info`'s lines: the budget and the estimates, then each span a function was untimed, one
/// a line, oldest first, and how many older ones the record left out.
pub(crate) fn info_lines(
    b: &BudgetInfo,
    names: &Names,
    clock: &TickRate,
    origin: u64,
) -> Vec<String> {
    let estimate = if b.looks == 0 {
        "no estimate (the budget looks ten times a second, and had not yet looked)".to_string()
    } else {
        format!(
            "the recorder's estimate {} over the run (last look {}, highest {})",
            percent_ppm(b.overall_ppm),
            percent_ppm(b.estimate_ppm),
            percent_ppm(b.peak_ppm)
        )
    };
    let mut out = vec![format!(
        "cost budget {} of CPU: {estimate}, a timed call {}",
        percent_ppm(b.budget_ppm),
        human_ps(b.call_cost_ps)
    )];
    if b.looks > 0 && b.estimate_ppm > b.budget_ppm {
        // What a reader asks first: why it stayed over. What is left is what the budget may not
        // stop, or the writer's own time, which stopping functions does not lower.
        out.push(
            "            over the budget at the last look: what it still timed it may not stop (a \
             thread's outermost calls, functions with a trigger or logged arguments) or was the \
             writer's own time; a larger budget= or fewer annotated functions lowers it"
                .into(),
        );
    }
    if b.untimed.is_empty() && b.spans_dropped == 0 {
        out.push("untimed     none: the budget stopped timing no function".into());
        return out;
    }
    let mut ids: Vec<u32> = b.untimed.iter().map(|s| s.function).collect();
    ids.sort_unstable();
    ids.dedup();
    let kinds: Vec<Stopped> = ids.iter().map(|&id| Stopped::in_log(names, id)).collect();
    let details = kinds.iter().any(|k| !matches!(k, Stopped::Calls(_)));
    out.push(format!(
        "untimed     {} by the budget: {}",
        counted(&kinds),
        if details {
            "none of these was recorded while stopped (where only a function's waits or \
             wake-ups were, its polls were timed)"
        } else {
            "no call of theirs was recorded while untimed"
        }
    ));
    for s in &b.untimed {
        let what = Stopped::in_log(names, s.function);
        let unit = match what {
            Stopped::Calls(_) => "calls",
            Stopped::Waits(_) => "waits",
            Stopped::Wakes(_) => "wake-ups",
        };
        out.push(format!(
            "  {}: {} ({} {unit}/s when stopped)",
            subject(names, what),
            span(s.from_tsc, s.to_tsc, clock, origin),
            human_count(s.calls_per_second)
        ));
    }
    if b.spans_dropped > 0 {
        out.push(format!(
            "  ({} older {} not listed: the recorder keeps only the newest for its log)",
            b.spans_dropped,
            if b.spans_dropped == 1 {
                "span"
            } else {
                "spans"
            },
        ));
    }
    out
}

/// `account`'s footnote to [`UNTIMED_MARK`]: the functions untimed during the window, one a
/// line with when; `called(id)` tells whether the table counted any call of `id`.
pub(crate) fn account_lines(
    untimed: &[Untimed],
    called: impl Fn(u32) -> bool,
    names: &Names,
    clock: &TickRate,
    origin: u64,
) -> Vec<String> {
    if untimed.is_empty() {
        return Vec::new();
    }
    let mut out = vec![format!(
        "{UNTIMED_MARK}: calls not timed, to keep the recorder within its cost budget (see fdr \
         info), so missing from the counts:"
    )];
    for u in untimed {
        let spans: Vec<String> = u
            .spans
            .iter()
            .map(|&(from, to)| span(from, to, clock, origin))
            .collect();
        let what = Stopped::in_log(names, u.id);
        let note = match what {
            Stopped::Calls(id) if !called(id) => " (no call of it in the table)",
            Stopped::Calls(_) => "",
            Stopped::Waits(_) => " (its polls are counted; these waits were not recorded)",
            Stopped::Wakes(_) => " (its polls are counted; when its tasks were woken was not)",
        };
        // A function as the table names it (`#ID` for one not in it).
        let named = match what {
            Stopped::Calls(id) => shown(&names.function(id)).into_owned(),
            _ => subject(names, what),
        };
        out.push(format!("  {named}: {}{note}", spans.join(", ")));
    }
    out
}
