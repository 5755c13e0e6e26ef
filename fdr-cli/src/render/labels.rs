//! The labels every renderer puts on calls: a thread as `thread 11 (main)`, and a time relative
//! to the window's start (time zero of the outputs) as `+1.20 ms`.

use crate::escape::shown;
use crate::model::names::Names;
use crate::units::{human, TickRate};

/// `+1.20 ms` (or `-3.00 µs` before `origin`): a timestamp relative to time zero of the outputs.
pub(crate) fn relative(tsc: u64, origin: u64, clock: &TickRate) -> String {
    if tsc >= origin {
        format!("+{}", human(clock.ns(tsc - origin)))
    } else {
        format!("-{}", human(clock.ns(origin - tsc)))
    }
}

/// `thread 11 (main)`, or `thread 11` when it had no name; escaped for a terminal.
pub(crate) fn thread_label(names: &Names, tid: i32) -> String {
    if names.has_thread_name(tid) {
        format!("thread {tid} ({})", shown(&names.thread(tid)))
    } else {
        format!("thread {tid}")
    }
}

#[cfg(test)]
mod tests_from_docs {
    //! The examples of this module's items, run as tests (the module is the crate's own; an
    //! example may leave a binding or an import unused, as a documentation example does).
    #![allow(unused_imports, unused_variables)]

    #[test]
    fn relative() {
        use crate::render::labels::relative;
        use crate::units::TickRate;
        let c = TickRate::new(1_000_000_000);
        assert_eq!(relative(1_500, 1_000, &c), "+500 ns");
        assert_eq!(relative(1_000, 4_000, &c), "-3.00 µs");
    }

    #[test]
    fn thread_label() {
        use crate::model::names::Names;
        assert_eq!(
            crate::render::labels::thread_label(&Names::default(), 11),
            "thread 11"
        );
    }
}
