//! What the cost budget did (`budget=PERCENT`), as `info` and `account` print it: the budget
//! and the recorder's estimate of its own cost, and the functions it stopped timing, from when
//! to when. Times are relative to time zero of the outputs, as the culled functions' are.

use fdr_format::BudgetInfo;

use crate::escape::shown;
use crate::model::budget::Untimed;
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
    out.push(format!(
        "untimed     {} by the budget: no call of theirs was recorded while untimed",
        match ids.len() {
            1 => "1 function".to_string(),
            n => format!("{n} functions"),
        }
    ));
    for s in &b.untimed {
        out.push(format!(
            "  {}: {} ({} calls/s when stopped)",
            function(names, s.function),
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
        out.push(format!(
            "  {}: {}{}",
            shown(&names.function(u.id)),
            spans.join(", "),
            if called(u.id) {
                ""
            } else {
                " (no call of it in the table)"
            }
        ));
    }
    out
}
