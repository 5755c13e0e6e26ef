//! Counters of a recording.

/// Counters of a recording so far.
///
/// ```
/// let s = fdr_runtime::Stats::default();
/// assert_eq!(s.records_dropped, 0);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Stats {
    /// Threads that have recorded.
    pub threads: usize,
    /// Records that could not be written for lack of a buffer (Fill mode).
    pub records_dropped: u64,
    /// Buffers overwritten with newer data (Ring mode).
    pub buffers_recycled: u64,
    /// Bytes of culling state for the program's functions and the threads recording now: 4 per
    /// function and 1 KiB per thread.
    pub culling_bytes: usize,
    /// Windows sent to the OpenTelemetry collector and accepted ([`Config::otlp_endpoint`]; a
    /// window without calls counts without a request).
    ///
    /// [`Config::otlp_endpoint`]: crate::Config::otlp_endpoint
    pub windows_sent: u64,
    /// Windows meant for the collector that were dropped: the queue was full, the collector
    /// did not accept them within the retry budget, or the recording ended first.
    pub windows_dropped: u64,
    /// The recorder's estimate of its own cost so far, in millionths of the process's CPU time
    /// since the cost budget's first look ([`Config::budget`]; `None` without a budget, or
    /// before its second look).
    ///
    /// [`Config::budget`]: crate::Config::budget
    pub cost_estimate_ppm: Option<u32>,
    /// Functions the cost budget does not time now, counting each await site whose waits and
    /// each `async fn` whose wake-ups it does not record now (a task's root keeps its polls).
    pub untimed_by_budget: usize,
}
