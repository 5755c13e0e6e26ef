//! The list of culled functions that `info` and `account` print.

use std::fmt::Write as _;

use crate::escape::shown;
use crate::limits::MAX_CULL_EVENTS;
use crate::model::culls::Culls;
use crate::model::names::Names;
use crate::render::labels::{relative, thread_label};
use crate::units::TickRate;

/// The list `info` and `account` print: one line per period, indented, then a count of the
/// events left out. `tids` gives each thread index's id; times are relative to `origin`.
pub(crate) fn lines(
    culls: &Culls,
    names: &Names,
    clock: &TickRate,
    tids: &[i32],
    origin: u64,
) -> Vec<String> {
    let at = |(tsc, thread): (u64, u32)| {
        let tid = tids.get(thread as usize).copied().unwrap_or(0);
        format!(
            "{} by {}",
            relative(tsc, origin, clock),
            thread_label(names, tid)
        )
    };
    let mut out = Vec::new();
    for p in culls.periods() {
        let mut line = format!("  {}: culled ", shown(&names.function(p.id)));
        match p.culled {
            Some(c) => line.push_str(&format!("at {}", at(c))),
            None => line.push_str("before the window"),
        }
        match p.restored {
            Some(r) => {
                let _ = write!(line, ", restored at {}", at(r));
            }
            None => line.push_str(", still culled at the end of the log"),
        }
        out.push(line);
    }
    if culls.more() > 0 {
        out.push(format!(
            "  ({} more cull events not listed: fdr lists at most {MAX_CULL_EVENTS})",
            culls.more()
        ));
    }
    out
}
