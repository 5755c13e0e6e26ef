//! A recording's profile written as a profile file (`fdr_format::profile`): to a writer, or to a
//! file renamed into place when whole. Reading the threads' tries takes the profile's own lock,
//! never a recording thread's time.

use std::io::Write;
use std::path::{Path, PathBuf};

use fdr_format::profile::{Profile, PER_THREAD};

use crate::session::Session;
use crate::{atomic_file, clock, function_table, Error};

/// The profile of `s` as it stands.
pub(crate) fn profile(s: &Session) -> Result<Profile, Error> {
    let Some(profiles) = s.profiles() else {
        return Err(Error::NotProfiling);
    };
    let setup = s.setup();
    let now = clock::now().0;
    let per_thread = setup.config.get_profile_threads();
    let read = profiles.read(now, per_thread);
    let mut used = vec![false; function_table::table().len() + 1];
    for t in &read.trees {
        for n in &t.nodes {
            if let Some(u) = used.get_mut(n.function as usize) {
                *u = true;
            }
        }
    }
    let functions = function_table::table()
        .iter()
        .enumerate()
        .filter(|&(i, _)| used[i + 1])
        .map(|(i, f)| (i as u32 + 1, f.name().into_owned()))
        .collect();
    let (secs, nanos) = setup.start_wall;
    Ok(Profile {
        flags: if per_thread { PER_THREAD } else { 0 },
        ticks_per_second: setup.calibration.ticks_per_second,
        start_unix_ns: (secs.max(0) as u64)
            .saturating_mul(1_000_000_000)
            .saturating_add(u64::from(nanos)),
        elapsed_ticks: now.saturating_sub(setup.start_tsc),
        lost: read.lost,
        pid: setup.pid as u32,
        program: setup.program.clone(),
        functions,
        trees: read.trees,
    })
}

/// The profile of `s` on `out`.
pub(crate) fn write<W: Write + ?Sized>(s: &Session, out: &mut W) -> Result<(), Error> {
    let bytes = profile(s)?.encode();
    out.write_all(&bytes)
        .and_then(|()| out.flush())
        .map_err(|source| Error::Io { path: None, source })
}

/// The profile of `s` in the file `path`, through a temporary file (`is_final`: synced, and it
/// wins over snapshots written to the same path).
pub(crate) fn write_file(s: &Session, path: &Path, is_final: bool) -> Result<(), Error> {
    if s.profiles().is_none() {
        return Err(Error::NotProfiling);
    }
    atomic_file::write(s.outputs().finals(), path, is_final, |f| write(s, f))
}

/// Where a recording that also keeps a window writes its profile beside the log `log`.
pub(crate) fn beside(log: &Path) -> PathBuf {
    log.with_extension("fdrprof")
}
