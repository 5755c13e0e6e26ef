//! The call that fired a trigger, from the reason record of the log's leading block.

use fdr_format::events::LogInfo;
use fdr_format::{Reason, ReasonInfo};

/// The reason record when a call fired a trigger (a slow call, or one still running past its
/// limit; a long poll, ended or running) and the record names the function; `None` for other
/// reasons.
pub(crate) fn fired(info: &LogInfo) -> Option<&ReasonInfo> {
    info.reason.as_ref().filter(|r| {
        matches!(
            r.reason,
            Reason::SlowCall | Reason::StillRunning | Reason::LongPoll | Reason::LongPollRunning
        ) && r.function != 0
    })
}

#[cfg(test)]
mod tests_from_docs {
    //! The examples of this module's items, run as tests (the module is the crate's own; an
    //! example may leave a binding or an import unused, as a documentation example does).
    #![allow(unused_imports, unused_variables)]

    #[test]
    fn fired() {
        use crate::model::trigger::fired;
        use fdr_format::{events::LogInfo, Reason, ReasonInfo};
        let mut info = LogInfo {
            reason: Some(ReasonInfo {
                reason: Reason::Exit,
                ..ReasonInfo::default()
            }),
            ..LogInfo::default()
        };
        assert!(fired(&info).is_none());
        info.reason = Some(ReasonInfo {
            reason: Reason::SlowCall,
            function: 3,
            ..ReasonInfo::default()
        });
        assert_eq!(fired(&info).unwrap().function, 3);
    }
}
