//! What a session hands its outputs: the window (its buffers copied, cut by age, with the run
//! record, reason, options, functions and threads of the moment) and the profile as it stands.
//! The outputs take these and never the session.

use std::sync::atomic::Ordering;

use fdr_format::profile::Profile;
use fdr_format::{Extension, FileHeader, LeadStart, ReasonInfo, ThreadInfo};

use crate::buffers::copy;
use crate::output::age_cut;
use crate::output::log_parts::LogParts;
use crate::output::profile_file::{self, ProfileRun};
use crate::session::Session;
use crate::{platform::clock, tables::functions, Error};

impl Session {
    /// The window as it stands, in the parts a log is written from: a snapshot while recording
    /// goes on (`snapshot`), or the final one; `reason` says why it is taken.
    pub(crate) fn log_parts(&self, snapshot: bool, mut reason: ReasonInfo) -> LogParts {
        let mut copied = copy::copy_pool(self.pool());
        let end_tsc = clock::now().0;
        // Read once: before the calibration window has passed, each reading is a new
        // measurement.
        let ticks_per_second = self.ticks_per_second();
        let setup = self.setup();
        if let Some(age) = setup.config.get_max_age() {
            let ticks = fdr_format::units::duration_to_ticks(age, ticks_per_second);
            age_cut::keep_newer(&mut copied, end_tsc.saturating_sub(ticks));
        }
        reason.suppressed = self.triggers().suppressed.load(Ordering::Relaxed);
        reason.cpu_wait_suppressed = self.triggers().cpu_wait_suppressed.load(Ordering::Relaxed);
        let header = FileHeader {
            constant_tsc: true,
            nonstop_tsc: setup.calibration.source.is_counter(),
            cycle_frequency: ticks_per_second,
            buffer_size: setup.buffer_size as u64,
            ..FileHeader::default()
        };
        let mut run = setup.run_info(ticks_per_second);
        run.end_tsc = end_tsc;
        run.snapshot = snapshot;
        run.records_dropped = self.threads().dropped_total();
        run.buffers_recycled = self.pool().recycled.load(Ordering::Relaxed);
        run.buffers_missed = copied.missed;
        run.args_dropped = self.counters().args_dropped();
        run.calls_unattached = self.counters().unattached();
        run.calls_erased = self.pool().erased_total();
        run.probes = self.counters().probes();
        let mut records = vec![
            Extension::Run(run),
            Extension::Reason(reason),
            Extension::Options(setup.config.to_options()),
        ];
        records.extend(self.budget_info().map(Extension::Budget));
        records.extend(functions::records());
        for t in self.threads().threads() {
            records.push(Extension::Thread(ThreadInfo {
                tid: t.tid,
                name: t.name,
                records_dropped: t.dropped,
            }));
        }
        let start = LeadStart {
            tid: copied.blocks.first().map_or(0, |b| b.tid),
            pid: setup.pid,
            start_secs: setup.start_wall.0,
            start_nanos: setup.start_wall.1,
            start_tsc: setup.start_tsc,
        };
        LogParts {
            header,
            start,
            records,
            copied,
        }
    }

    /// The profile as it stands ([`Error::NotProfiling`] for a recording that keeps none).
    pub(crate) fn profile(&self) -> Result<Profile, Error> {
        let Some(profiles) = self.profiles() else {
            return Err(Error::NotProfiling);
        };
        let setup = self.setup();
        let run = ProfileRun {
            ticks_per_second: setup.calibration.ticks_per_second,
            start_wall: setup.start_wall,
            start_tsc: setup.start_tsc,
            pid: setup.pid,
            program: &setup.program,
            per_thread: setup.config.get_profile_threads(),
        };
        Ok(profile_file::profile(profiles, &run))
    }
}
