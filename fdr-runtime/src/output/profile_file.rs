//! A recording's profile written as a profile file (`fdr_format::profile`): to a writer, or to a
//! file renamed into place when whole. Reading the threads' tries takes the profile's own lock,
//! never a recording thread's time.

use std::io::Write;
use std::path::{Path, PathBuf};

use fdr_format::profile::{Profile, PER_THREAD};

use crate::output::atomic_file::{self, Finals};
use crate::profile::merged::Profiles;
use crate::{platform::clock, tables::functions, Error};

/// What a profile file says of the recording around its trees.
pub(crate) struct ProfileRun<'a> {
    /// The counter's frequency.
    pub ticks_per_second: u64,
    /// The wall time the recording started at (seconds, nanoseconds since the Unix epoch).
    pub start_wall: (i64, u32),
    /// The counter when it started.
    pub start_tsc: u64,
    pub pid: i32,
    pub program: &'a str,
    /// One tree per thread rather than one merged.
    pub per_thread: bool,
}

/// The profile of `profiles` as it stands, with the functions its trees name.
pub(crate) fn profile(profiles: &Profiles, run: &ProfileRun<'_>) -> Profile {
    let now = clock::now().0;
    let read = profiles.read(now, run.per_thread);
    let mut used = vec![false; functions::table().len() + 1];
    for t in &read.trees {
        for n in &t.nodes {
            if let Some(u) = used.get_mut(n.function as usize) {
                *u = true;
            }
        }
    }
    let functions = functions::table()
        .iter()
        .enumerate()
        .filter(|&(i, _)| used[i + 1])
        .map(|(i, f)| (i as u32 + 1, f.name().into_owned()))
        .collect();
    let (secs, nanos) = run.start_wall;
    Profile {
        flags: if run.per_thread { PER_THREAD } else { 0 },
        ticks_per_second: run.ticks_per_second,
        start_unix_ns: (secs.max(0) as u64)
            .saturating_mul(1_000_000_000)
            .saturating_add(u64::from(nanos)),
        elapsed_ticks: now.saturating_sub(run.start_tsc),
        lost: read.lost,
        pid: run.pid as u32,
        program: run.program.to_string(),
        functions,
        trees: read.trees,
    }
}

/// `profile` on `out`.
pub(crate) fn write<W: Write + ?Sized>(profile: &Profile, out: &mut W) -> Result<(), Error> {
    let bytes = profile.encode();
    out.write_all(&bytes)
        .and_then(|()| out.flush())
        .map_err(|source| Error::Io { path: None, source })
}

/// `profile` in the file `path`, through a temporary file (`is_final`: synced, and it wins over
/// snapshots written to the same path, which `finals` remembers).
pub(crate) fn write_file(
    finals: &Finals,
    path: &Path,
    is_final: bool,
    profile: &Profile,
) -> Result<(), Error> {
    atomic_file::write(finals, path, is_final, |f| write(profile, f))
}

/// Where a recording that also keeps a window writes its profile beside the log `log`.
pub(crate) fn beside(log: &Path) -> PathBuf {
    log.with_extension("fdrprof")
}
