//! The call that fired a trigger, from the reason record of the log's leading block.

use fdr_format::events::LogInfo;
use fdr_format::{Reason, ReasonInfo};

/// The reason record when a call fired a trigger (a slow call, or one still running past its
/// limit) and the record names the function; `None` for other reasons.
///
/// ```
/// use fdr_cli::model::trigger::fired;
/// use fdr_format::{events::LogInfo, Reason, ReasonInfo};
/// let mut info = LogInfo::default();
/// info.reason = Some(ReasonInfo { reason: Reason::Exit, ..ReasonInfo::default() });
/// assert!(fired(&info).is_none());
/// info.reason = Some(ReasonInfo { reason: Reason::SlowCall, function: 3, ..ReasonInfo::default() });
/// assert_eq!(fired(&info).unwrap().function, 3);
/// ```
pub fn fired(info: &LogInfo) -> Option<&ReasonInfo> {
    info.reason
        .as_ref()
        .filter(|r| matches!(r.reason, Reason::SlowCall | Reason::StillRunning) && r.function != 0)
}
