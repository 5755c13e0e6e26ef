//! A simple, robust timing loop for the quick table: the best of several runs of `n` calls.
//!
//! The minimum over runs discards the runs that another process or an interrupt slowed down;
//! on a shared machine it is the most repeatable figure a few seconds can give. Single-thread
//! runs are timed with the process's CPU clock, which stops while other processes have the CPU
//! but counts every thread of this one (a peer's background collector included); two-thread
//! runs with each thread's CPU clock, and count the thread's voluntary context switches, which
//! would show waiting that the CPU clock does not.

use std::hint::black_box;
use std::io;
use std::sync::Barrier;
use std::time::{Duration, Instant};

/// How long one timed run lasts, about.
pub const RUN_TIME: Duration = Duration::from_millis(10);
/// Timed runs per row; the fastest is kept.
pub const RUNS: usize = 15;

fn cpu_clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec to write into; the clock ids passed are constants Linux
    // has known since 2.6.12.
    let rc = unsafe { libc::clock_gettime(clock, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime({clock}) failed");
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// CPU time this thread has run, in nanoseconds.
///
/// ```
/// let a = fdr_benches::timing::thread_cpu_ns();
/// fdr_benches::workload::run_plain(100_000);
/// assert!(fdr_benches::timing::thread_cpu_ns() > a);
/// ```
pub fn thread_cpu_ns() -> u64 {
    cpu_clock_ns(libc::CLOCK_THREAD_CPUTIME_ID)
}

/// CPU time all threads of this process have run, in nanoseconds.
///
/// ```
/// let a = fdr_benches::timing::process_cpu_ns();
/// fdr_benches::workload::run_plain(100_000);
/// assert!(fdr_benches::timing::process_cpu_ns() > a);
/// ```
pub fn process_cpu_ns() -> u64 {
    cpu_clock_ns(libc::CLOCK_PROCESS_CPUTIME_ID)
}

/// Nanoseconds of this process's CPU time per call of one run of `f(n)`.
///
/// ```
/// assert!(fdr_benches::timing::once(&mut fdr_benches::workload::run_plain, 1000) > 0.0);
/// ```
pub fn once(f: &mut impl FnMut(u64) -> u64, n: u64) -> f64 {
    let t = process_cpu_ns();
    black_box(f(black_box(n)));
    (process_cpu_ns() - t) as f64 / n as f64
}

/// Nanoseconds of this thread's CPU time per call of one run of `f(n)`: what a peer that hands
/// work to a background thread costs the recording thread alone.
///
/// ```
/// assert!(fdr_benches::timing::once_thread(&mut fdr_benches::workload::run_plain, 1000) > 0.0);
/// ```
pub fn once_thread(f: &mut impl FnMut(u64) -> u64, n: u64) -> f64 {
    let t = thread_cpu_ns();
    black_box(f(black_box(n)));
    (thread_cpu_ns() - t) as f64 / n as f64
}

/// The number of calls that takes about [`RUN_TIME`], found by doubling from 1000.
///
/// ```
/// let n = fdr_benches::timing::calls_per_run(&mut fdr_benches::workload::run_plain);
/// assert!(n >= 1000);
/// ```
pub fn calls_per_run(f: &mut impl FnMut(u64) -> u64) -> u64 {
    // The first calls may pay for one-time setup (a peer allocating its buffers).
    black_box(f(black_box(1000)));
    let mut n = 1000u64;
    loop {
        let t = Instant::now();
        black_box(f(black_box(n)));
        let took = t.elapsed();
        if took >= RUN_TIME / 8 || n >= 1 << 32 {
            let scale = RUN_TIME.as_secs_f64() / took.as_secs_f64().max(1e-9);
            return ((n as f64 * scale) as u64).max(1000);
        }
        n *= 2;
    }
}

/// The best nanoseconds per call over `runs` runs of `n` calls, after one untimed run.
///
/// ```
/// let ns = fdr_benches::timing::best_of(&mut fdr_benches::workload::run_plain, 10_000, 3);
/// assert!(ns > 0.0);
/// ```
pub fn best_of(f: &mut impl FnMut(u64) -> u64, n: u64, runs: usize) -> f64 {
    black_box(f(black_box(n)));
    (0..runs).map(|_| once(f, n)).fold(f64::INFINITY, f64::min)
}

/// [`calls_per_run`], then [`best_of`] [`RUNS`] runs.
pub fn measure(mut f: impl FnMut(u64) -> u64) -> f64 {
    let n = calls_per_run(&mut f);
    best_of(&mut f, n, RUNS)
}

/// Pins the calling thread to one CPU.
///
/// ```
/// use fdr_benches::timing::{current_cpu, pin_to_cpu};
/// // CPU 0 may be outside this process's allowed set (a cpuset); then pinning must fail.
/// if pin_to_cpu(0).is_ok() {
///     assert_eq!(current_cpu(), Some(0));
/// }
/// assert!(pin_to_cpu(100_000).is_err());
/// ```
pub fn pin_to_cpu(cpu: usize) -> io::Result<()> {
    // SAFETY: `cpu_set_t` is a plain bit array for which all zeroes is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    if cpu >= 8 * std::mem::size_of::<libc::cpu_set_t>() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("cpu {cpu} is beyond what a cpu_set_t can name"),
        ));
    }
    // SAFETY: `cpu` is within the set (checked above); `CPU_SET` only writes into `set`.
    unsafe { libc::CPU_SET(cpu, &mut set) };
    // SAFETY: pid 0 is the calling thread; `set` is a valid, initialized set of the size given.
    let rc = unsafe { libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// The CPU the calling thread runs on, if the system says.
pub fn current_cpu() -> Option<usize> {
    // SAFETY: sched_getcpu has no arguments and no memory effects.
    let cpu = unsafe { libc::sched_getcpu() };
    usize::try_from(cpu).ok()
}

/// CPUs this process may run on.
pub fn available_cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// What one thread of [`two_threads`] measured.
#[derive(Clone, Copy, Debug)]
pub struct ThreadRun {
    /// Best CPU nanoseconds of this thread per call.
    pub cpu_ns: f64,
    /// Best wall-clock nanoseconds per call (inflated when other processes ran on its CPU).
    pub wall_ns: f64,
    /// Voluntary context switches during the timed runs: nonzero means the thread blocked,
    /// waiting for something (the other thread, a lock), which its CPU time does not show.
    pub blocked: u64,
}

/// Voluntary context switches of the calling thread so far: how often it blocked.
///
/// ```
/// let before = fdr_benches::timing::voluntary_switches();
/// std::thread::sleep(std::time::Duration::from_millis(1));
/// assert!(fdr_benches::timing::voluntary_switches() > before);
/// ```
pub fn voluntary_switches() -> u64 {
    // SAFETY: all zeroes is a valid `rusage`; getrusage only writes into it.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: RUSAGE_THREAD asks about the calling thread; `ru` is valid for writes.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    if rc == 0 {
        ru.ru_nvcsw as u64
    } else {
        0
    }
}

/// Runs `f` on two threads pinned to CPUs 0 and 1 at the same time: both threads start each of
/// the `runs` runs of `n` calls together, after one untimed run.
///
/// ```
/// use fdr_benches::timing::{available_cpus, two_threads};
/// let r = two_threads(fdr_benches::workload::run_plain, 10_000, 2);
/// if available_cpus() >= 2 {
///     let [a, b] = r.unwrap();
///     assert!(a.cpu_ns > 0.0 && b.wall_ns > 0.0);
///     assert_eq!(a.blocked + b.blocked, 0, "plain calls never wait");
/// }
/// ```
pub fn two_threads(f: fn(u64) -> u64, n: u64, runs: usize) -> io::Result<[ThreadRun; 2]> {
    let barrier = Barrier::new(2);
    let results = std::thread::scope(|s| {
        let handles = [0usize, 1].map(|cpu| {
            let barrier = &barrier;
            s.spawn(move || -> io::Result<ThreadRun> {
                // Take part in every run even if pinning failed, so the other thread is not
                // left waiting at the barrier; the error is reported afterwards.
                let pinned = pin_to_cpu(cpu);
                let f = f;
                black_box(f(black_box(n)));
                let mut r = ThreadRun {
                    cpu_ns: f64::INFINITY,
                    wall_ns: f64::INFINITY,
                    blocked: 0,
                };
                for _ in 0..runs {
                    barrier.wait();
                    let switches = voluntary_switches();
                    let (wall, cpu) = (Instant::now(), thread_cpu_ns());
                    black_box(f(black_box(n)));
                    let cpu = thread_cpu_ns() - cpu;
                    let wall = wall.elapsed().as_nanos() as f64;
                    r.blocked += voluntary_switches() - switches;
                    r.cpu_ns = r.cpu_ns.min(cpu as f64 / n as f64);
                    r.wall_ns = r.wall_ns.min(wall / n as f64);
                }
                pinned.map(|()| r)
            })
        });
        handles.map(|h| h.join().expect("a benchmark thread panicked"))
    });
    let [a, b] = results;
    Ok([a?, b?])
}
