//! The functions the cost budget stopped timing (`budget=PERCENT`), from the log's budget
//! record: over budget, the recorder skips a function's calls, so the window is blind to them
//! from when it was untimed to when it was timed again. The record lists every span, oldest
//! first, within its 64 KiB; this finds the functions untimed during a time range.

use std::collections::HashMap;

use fdr_format::BudgetInfo;

/// What a budget span stopped: a function's calls, the waits at one of an `async fn`'s await
/// sites, or an `async fn`'s wake-ups (its polls stayed timed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stopped {
    /// The calls of this function.
    Calls(u32),
    /// The waits at this await site.
    Waits(u32),
    /// The wake-ups of this `async fn`.
    Wakes(u32),
}

impl Stopped {
    /// What span id `id` stopped, by the log's table (`is_site`: whether an id is an await
    /// site's).
    pub(crate) fn of(id: u32, is_site: impl Fn(u32) -> bool) -> Stopped {
        if id & fdr_format::BUDGET_WAKES_BIT != 0 {
            Stopped::Wakes(id & !fdr_format::BUDGET_WAKES_BIT)
        } else if is_site(id) {
            Stopped::Waits(id)
        } else {
            Stopped::Calls(id)
        }
    }

    /// What span id `id` stopped, by the log's table of functions.
    pub(crate) fn in_log(names: &crate::model::names::Names, id: u32) -> Stopped {
        Stopped::of(id, |id| {
            names
                .info(id)
                .is_some_and(|f| f.kind == fdr_format::FunctionKind::Await)
        })
    }

    /// The id of the table entry it names: the function, or the await site (named after its
    /// function).
    pub(crate) fn entry(self) -> u32 {
        match self {
            Stopped::Calls(id) | Stopped::Waits(id) | Stopped::Wakes(id) => id,
        }
    }
}

/// One function the budget untimed during a time range, with its spans there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Untimed {
    /// The function.
    pub id: u32,
    /// When it was untimed and when timed again (ticks; `None`: still untimed when the log was
    /// taken), in the record's order.
    pub spans: Vec<(u64, Option<u64>)>,
}

/// The functions of `budget` untimed at some point of `[from, to]` (ticks), in the order of
/// their first span there, each with its spans that reach into the range.
pub(crate) fn untimed_during(budget: &BudgetInfo, from: u64, to: u64) -> Vec<Untimed> {
    let mut out: Vec<Untimed> = Vec::new();
    let mut at: HashMap<u32, usize> = HashMap::new();
    for s in &budget.untimed {
        let ends = s.to_tsc.unwrap_or(u64::MAX);
        if s.from_tsc > to || ends < from {
            continue;
        }
        let i = *at.entry(s.function).or_insert_with(|| {
            out.push(Untimed {
                id: s.function,
                spans: Vec::new(),
            });
            out.len() - 1
        });
        out[i].spans.push((s.from_tsc, s.to_tsc));
    }
    out
}

#[cfg(test)]
mod tests_from_docs {
    //! The examples of this module's items, run as tests (the module is the crate's own; an
    //! example may leave a binding or an import unused, as a documentation example does).
    #![allow(unused_imports, unused_variables)]

    #[test]
    fn untimed_during() {
        use crate::model::budget::{untimed_during, Untimed};
        use fdr_format::{BudgetInfo, BudgetSpan};
        let span = |function, from_tsc, to_tsc| BudgetSpan {
            function,
            from_tsc,
            to_tsc,
            calls_per_second: 1_000,
        };
        let b = BudgetInfo {
            untimed: vec![
                span(1, 10, Some(20)),
                span(2, 50, Some(150)),
                span(1, 300, None),
                span(3, 500, Some(600)),
            ],
            ..BudgetInfo::default()
        };
        // 1's first span ended before the range; 3's started after it.
        assert_eq!(
            untimed_during(&b, 100, 400),
            [
                Untimed {
                    id: 2,
                    spans: vec![(50, Some(150))]
                },
                Untimed {
                    id: 1,
                    spans: vec![(300, None)]
                },
            ]
        );
        assert_eq!(untimed_during(&b, 0, u64::MAX).len(), 3);
    }
}
