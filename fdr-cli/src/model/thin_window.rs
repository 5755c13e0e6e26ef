//! A thin window, in words: whether a window is empty or most calls were erased, which `info`
//! and the end of every text report say, naming the threshold and how to keep more.

use fdr_format::events::{LogInfo, ThreadStats};

use crate::units::human;

/// What to say of a window that holds nothing, or much less than was called, because calls
/// shorter than the threshold were erased: says so, names the threshold and how to keep more.
/// `None` when the window holds calls and fewer were erased than kept (or the log does not
/// say). `info` prints it; the analysing commands' text outputs end with it (see [`note`]).
pub(crate) fn thin_window(r: &fdr_format::RunInfo, function_records: u64) -> Option<String> {
    let keep_more = "threshold_us=0 in FDR_OPTIONS, or Config::threshold(Duration::ZERO), keeps \
                     every call";
    let threshold = human(r.threshold_ns);
    if function_records == 0 {
        if r.calls_erased == 0 {
            return Some("empty: no call was recorded".to_string());
        }
        return Some(format!(
            "empty: no call lasted the threshold ({threshold}), and shorter ones are erased as \
             they return ({} erased); {keep_more}",
            r.calls_erased
        ));
    }
    // Two records (entry and exit) per kept call.
    let kept = function_records / 2;
    (r.calls_erased > 10 * kept.max(1)).then(|| {
        format!(
            "most calls were erased: {} shorter than the threshold ({threshold}) against about \
             {kept} kept; {keep_more}",
            r.calls_erased
        )
    })
}

/// [`thin_window`] for a log a pass has read, as the last line of a text report: `note: the
/// window is empty: ...` or `note: in this window, most calls were erased: ...`.
pub(crate) fn note(info: &LogInfo, threads: &[ThreadStats]) -> Option<String> {
    let records: u64 = threads.iter().map(|t| t.function_records).sum();
    let says = thin_window(info.run.as_ref()?, records)?;
    Some(if says.starts_with("empty") {
        format!("note: the window is {says}")
    } else {
        format!("note: in this window, {says}")
    })
}

#[cfg(test)]
mod tests_from_docs {
    //! The examples of this module's items, run as tests (the module is the crate's own; an
    //! example may leave a binding or an import unused, as a documentation example does).
    #![allow(unused_imports, unused_variables)]

    #[test]
    fn thin_window() {
        let run = fdr_format::RunInfo {
            threshold_ns: 5_000,
            calls_erased: 1_000,
            ..Default::default()
        };
        let says = crate::model::thin_window::thin_window(&run, 0).unwrap();
        assert!(
            says.starts_with("empty: no call lasted the threshold (5.00 µs)"),
            "{says}"
        );
        assert_eq!(crate::model::thin_window::thin_window(&run, 400), None);
    }
}
