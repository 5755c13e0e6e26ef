//! What a recording is started with: its fixed setup, and the buffer pool made for it (in a
//! crash box when it keeps a window, with the recovery of earlier boxes beside it).

use std::path::Path;
use std::thread::JoinHandle;

use crate::buffers::pool::Pool;
use crate::platform::clock::Calibration;
use crate::{Config, Error};

/// Whether a recording with `config`, `threshold_ticks` and a profile or not culls functions.
pub(super) fn culls(config: &Config, threshold_ticks: u64, profiles: bool) -> bool {
    config.get_cull() && threshold_ticks > 0 && !profiles
}

/// What a recording was started with: fixed for its life, so its fields are plain data.
pub(crate) struct Setup {
    /// Tells this recording from earlier ones (gates, thread memberships).
    pub epoch: u64,
    pub config: Config,
    /// The buffer size in use (the configured one rounded down to whole words).
    pub buffer_size: usize,
    pub calibration: Calibration,
    pub threshold_ticks: u64,
    /// The pid the logs name.
    pub pid: i32,
    pub start_wall: (i64, u32),
    pub start_tsc: u64,
    pub program: String,
    /// A (counter, monotonic ns) pair read at start, from which the calibration is finished.
    pub cal_start: (u64, u64),
    /// The fork count when the session started: another value means a forked child.
    pub(super) forks: u64,
    /// The functions culled from the start, as the last recording of this build left them, and
    /// where this one leaves its own.
    pub learned_culls: crate::session::learned_culls::LearnedCulls,
}

impl Setup {
    /// The run record of a recording as it started: its settings and calibration, nothing counted
    /// yet (a log fills in its counters; a crash box keeps it as it is).
    pub(crate) fn run_info(&self, ticks_per_second: u64) -> fdr_format::RunInfo {
        let setup = self;
        let config = &setup.config;
        fdr_format::RunInfo {
            clock: setup.calibration.source,
            ticks_per_second,
            // The recording's calibration is finished over this window (see `Session::ticks_per_second`).
            calibration_ns: if setup.calibration.window.is_zero() {
                0
            } else {
                crate::platform::clock::CALIBRATION_WINDOW.as_nanos() as u64
            },
            mode: match config.get_mode() {
                crate::Mode::Ring | crate::Mode::Profile => fdr_format::Mode::Ring,
                crate::Mode::Fill => fdr_format::Mode::Fill,
            },
            threshold_ns: config.get_threshold().as_nanos().min(u128::from(u64::MAX)) as u64,
            threshold_ticks: setup.threshold_ticks,
            buffer_size: setup.buffer_size as u64,
            buffer_count: config.get_buffer_count() as u64,
            pid: setup.pid,
            start_unix_secs: setup.start_wall.0,
            start_unix_nanos: setup.start_wall.1,
            start_tsc: setup.start_tsc,
            program: setup.program.clone(),
            max_age_ns: config
                .get_max_age()
                .map_or(0, |a| a.as_nanos().min(u128::from(u64::MAX)) as u64),
            culled_at_start: setup.learned_culls.culled_at_start(),
            ..fdr_format::RunInfo::default()
        }
    }
}

/// The buffer pool: in a crash box when the recording keeps a window and `crash_dir` is not
/// off, else (or when the box cannot be made there, said once on stderr) in anonymous memory.
/// With a box, the recovery of what earlier processes of the program left, if there is any to
/// do, runs meanwhile on a thread of its own.
pub(super) fn make_pool(
    setup: &Setup,
    final_path: &Path,
) -> Result<(Pool, Option<JoinHandle<()>>), Error> {
    let config = &setup.config;
    // Profile mode writes no window: one buffer, for the records a hook may write before the
    // recording's flags reach it, and no box.
    if config.get_mode() == crate::Mode::Profile {
        return Ok((Pool::new(setup.buffer_size, 1, config.get_mode())?, None));
    }
    let count = config.get_buffer_count();
    let Some(dir) = config.get_crash_dir() else {
        return Ok((
            Pool::new(setup.buffer_size, count, config.get_mode())?,
            None,
        ));
    };
    let out = std::path::absolute(final_path).unwrap_or_else(|_| final_path.to_path_buf());
    let max = fdr_format::crash_box::MAX_OUT_PATH;
    let n = out.as_os_str().len();
    if n > max {
        return Err(Error::Config {
            key: "out".into(),
            message: format!(
                "{} is {n} bytes long; a crash box keeps the path of the log it recovers to,                  at most {max} bytes: give a shorter out, or crash_dir=off to record without a                  box",
                out.display()
            ),
        });
    }
    let recovery = crate::buffers::crash_box::recovery::Recovery {
        dir: dir.to_path_buf(),
        program: setup.program.clone(),
        out: out.clone(),
    }
    .start();
    let mut records = vec![
        fdr_format::Extension::Run(setup.run_info(setup.calibration.ticks_per_second)),
        fdr_format::Extension::Options(config.to_options()),
    ];
    records.extend(crate::tables::functions::records());
    // In a ring, the room of the first quarter megabyte of buffers is reserved now and the rest
    // by the background writer (`Pool::grow`; reserving 8 MiB of tmpfs takes 2.5 ms, a third of a
    // short program's start). A pool that fills keeps the first buffers whatever happens later,
    // so it reserves every one now.
    let ready = match config.get_mode() {
        crate::Mode::Ring => crate::buffers::pool::buffers_at_start(setup.buffer_size).min(count),
        _ => count,
    };
    let made = crate::buffers::crash_box::CrashBox::create(crate::buffers::crash_box::Setup {
        dir: &dir,
        program: &setup.program,
        out: &out,
        buffer_size: setup.buffer_size,
        buffer_count: count,
        ready,
        lead: fdr_format::crash_box::encode_lead(&records),
        header: crate::buffers::crash_box::HeaderFacts {
            // The process's own id, which names the box and tells whether it still runs (the
            // log's pid is 1 with the injected clock).
            pid: crate::platform::host::os_pid(),
            clock: fdr_format::crash_box::clock_code(setup.calibration.source),
            ticks_per_second: setup.calibration.ticks_per_second,
            cal_tsc0: setup.cal_start.0,
            cal_ns0: setup.cal_start.1,
            start_secs: setup.start_wall.0,
            start_nanos: setup.start_wall.1,
            start_tsc: setup.start_tsc,
            threshold_ns: config.get_threshold().as_nanos().min(u128::from(u64::MAX)) as u64,
            threshold_ticks: setup.threshold_ticks,
            max_age_ns: config
                .get_max_age()
                .map_or(0, |a| a.as_nanos().min(u128::from(u64::MAX)) as u64),
            // A forked child's box says whose: it usually ends with `_exit`, which no handler
            // sees.
            parent: (setup.forks > 0).then(crate::platform::parent_pid),
        },
    });
    let pool = match made {
        Ok(b) => Ok(Pool::in_box(
            b,
            setup.buffer_size,
            count,
            ready,
            config.get_mode(),
        )),
        Err(e) => {
            eprintln!(
                "fdr: no crash box in {} ({e}): the buffers are in the process's memory, so a \
                 crash leaves no window (give crash_dir=DIR with room for {} bytes, or \
                 crash_dir=off to keep this)",
                dir.display(),
                setup.buffer_size * count
            );
            Pool::new(setup.buffer_size, count, config.get_mode())
        }
    };
    match pool {
        Ok(p) => Ok((p, recovery)),
        Err(e) => {
            crate::buffers::crash_box::recovery::wait(recovery);
            Err(e)
        }
    }
}

pub(super) fn program_name() -> String {
    std::env::current_exe()
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_default()
}
