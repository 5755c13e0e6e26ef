//! What every driver shares: the configuration named by `MODE`, the recorder or peer it sets up,
//! and the CPU time of the workload, printed as `cpu_ns=N check=H` (the check is a hash of the
//! results, the same in every configuration).
//!
//! | `MODE` | what runs |
//! |---|---|
//! | `plain` | the pristine crate (or an annotated one with no recorder: the cost compiled in) |
//! | `zero` | fdr, threshold 0: every call kept |
//! | `default` | fdr, `Config::default()`: 5 µs, culling on (starting from the functions the last `default` run of the build culled) |
//! | `nobudget` | `default` with the cost budget off (`budget=off`): what it recorded before the budget |
//! | `budget0.5` | `default` with a budget of 0.5 % |
//! | `estimate` | `default` with a budget of 100 %, which it never reaches: its estimate, with no function untimed |
//! | `fresh` | `default` learning from nothing (`cull_memory(false)`): a first run |
//! | `nocull` | fdr, 5 µs, culling off |
//! | `nobox` | `default` with the buffer pool in anonymous memory, not the crash box |
//! | `profile` | fdr's profile mode: call trees, no window |
//! | `default+profile` | the default window and a profile beside it (culling off) |
//! | `check` | `default` with a pool of 8,192 buffers (128 MiB), which holds a whole run |
//! | `tracing` | `tracing` with the cheapest subscriber that keeps the data (`fdr_benches::peers::tracing_mem`) |
//! | `tracing-null` | `tracing` with a subscriber that keeps nothing (`fdr_benches::peers::tracing_null`): `tracing`'s own cost |
//! | `tracing-sub` | `tracing` into fdr's recorder (default configuration) through `fdr_tracing::subscriber()` |
//! | `tracing-layer` | the same through `fdr_tracing::layer()` on `tracing-subscriber`'s registry |
//! | `tracing-layer-skip` | the same with `with_skip_unrecorded(true)`: the spans fdr would not record are not made |
//! | `tracing-registry` | `tracing-subscriber`'s registry alone, nothing recorded: what the layer's registry costs |
//! | `fastrace` | `fastrace` with a reporter that discards (`fdr_benches::peers::fastrace_discard`), a root span per item |
//!
//! A service driver (`mini_redis.rs`) uses only the configurations and the clocks here, and adds
//! its own modes (triggers on its handler).
//!
//! `OUT=PATH` writes fdr's log there at the end; `THRESHOLD_US=N` sets the recorder's threshold
//! (see [`config`]).

/// CPU time of the whole process so far (user + system, every thread: a recorder's or a peer's
/// background thread is charged too), in nanoseconds.
pub fn cpu_ns() -> u64 {
    rusage_ns(libc::RUSAGE_SELF)
}

/// CPU time of the calling thread so far (user + system), in nanoseconds.
#[allow(dead_code)] // The service driver's.
pub fn thread_cpu_ns() -> u64 {
    rusage_ns(libc::RUSAGE_THREAD)
}

/// User CPU time of the whole process so far (every thread), in nanoseconds: what a recorder
/// running in the process costs shows here; the kernel's time, which moves with how the
/// network batches a loopback service's requests, does not.
#[allow(dead_code)] // The service driver's.
pub fn user_cpu_ns() -> (u64, u64) {
    (user_ns(libc::RUSAGE_SELF), user_ns(libc::RUSAGE_THREAD))
}

fn user_ns(who: libc::c_int) -> u64 {
    // SAFETY: getrusage fills the zeroed struct it is given.
    let u = unsafe {
        let mut u: libc::rusage = std::mem::zeroed();
        libc::getrusage(who, &mut u);
        u
    };
    u.ru_utime.tv_sec as u64 * 1_000_000_000 + u.ru_utime.tv_usec as u64 * 1000
}

fn rusage_ns(who: libc::c_int) -> u64 {
    // SAFETY: getrusage fills the zeroed struct it is given.
    let u = unsafe {
        let mut u: libc::rusage = std::mem::zeroed();
        libc::getrusage(who, &mut u);
        u
    };
    let ns = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1000;
    ns(u.ru_utime) + ns(u.ru_stime)
}

/// The recorder's configuration `MODE` names (see the table above), `None` for no recorder.
/// `THRESHOLD_US=N` sets its threshold: under callgrind, whose slowdown (about 50 x) makes
/// every call look slow, a threshold scaled by it keeps and erases what the default keeps and
/// erases at full speed, so that instruction counts price the configuration.
#[cfg(feature = "fdr")]
pub fn config(mode: &str) -> Option<fdr::Config> {
    let config = named_config(mode)?;
    Some(match std::env::var("THRESHOLD_US") {
        Ok(us) => config.threshold(std::time::Duration::from_micros(
            us.parse().expect("THRESHOLD_US: a whole number of microseconds"),
        )),
        Err(_) => config,
    })
}

#[cfg(feature = "fdr")]
fn named_config(mode: &str) -> Option<fdr::Config> {
    match mode {
        "zero" => Some(fdr::Config::default().threshold(std::time::Duration::ZERO)),
        "default" => Some(fdr::Config::default()),
        "nobudget" => Some(fdr::Config::default().budget(None)),
        "budget0.5" => Some(fdr::Config::default().budget(Some(0.5))),
        // The budget's estimate without its acts: a budget no recorder reaches.
        "estimate" => Some(fdr::Config::default().budget(Some(100.0))),
        "fresh" => Some(fdr::Config::default().cull_memory(false)),
        // The default with a pool that holds the whole run, so the check of the slow call
        // finds the culls and restores from its start; without the budget, which it does not
        // check: in a program asleep for most of each millisecond, recording costs a large share
        // of what little CPU time it spends, and a 1 % budget rightly untimes the function made
        // slow (regex-syntax's `char_at`, 11,000 erased calls a second), which the log says.
        "check" => Some(fdr::Config::default().buffer_count(8192).budget(None)),
        "nocull" => Some(fdr::Config::default().cull(false)),
        // The default with the buffer pool in anonymous memory instead of the crash box.
        "nobox" => Some(fdr::Config::default().crash_dir_off()),
        "profile" => Some(fdr::Config::default().mode(fdr::Mode::Profile)),
        "default+profile" => Some(fdr::Config::default().profile(true)),
        _ => None,
    }
}

/// Ends the recording: the log to `OUT` when it is set, else nowhere.
#[cfg(feature = "fdr")]
pub fn finish(rec: fdr::Recorder) {
    match std::env::var_os("OUT") {
        Some(out) => rec.finish(out).expect("write the log"),
        None => rec.finish_to(&mut std::io::sink()).expect("finish"),
    }
}

/// Runs `work` over `items`, `rounds` times, under the configuration `MODE` names. With the
/// `slow` feature, `first_slow` says when the injected slow call first slept: printed as
/// `first_slow_unix_ns`, wall-clock time, which the check compares with the log's.
pub fn main<T>(
    items: &[T],
    work: impl Fn(&T) -> u64,
    first_slow: fn() -> Option<std::time::Instant>,
) {
    let rounds: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(10);
    // Read by the builds with a recorder or a peer only.
    #[allow(unused_variables)]
    let mode = std::env::var("MODE").unwrap_or_else(|_| "plain".into());
    let (started, started_wall) = (std::time::Instant::now(), std::time::SystemTime::now());
    #[cfg(feature = "fdr")]
    let rec = config(&mode).map(|c| fdr::start(c).expect("start the recorder"));
    #[cfg(feature = "tracing")]
    if mode == "tracing" {
        fdr_benches::peers::tracing_mem::setup();
    }
    #[cfg(feature = "tracing")]
    if mode == "tracing-null" {
        fdr_benches::peers::tracing_null::setup();
    }
    #[cfg(feature = "tracing")]
    let spans = {
        use fdr_benches::peers::fdr_spans::{setup, Way};
        match mode.as_str() {
            "tracing-sub" => Some(setup(Way::Subscriber)),
            "tracing-layer" => Some(setup(Way::Layer)),
            "tracing-layer-skip" => Some(setup(Way::LayerSkipping)),
            "tracing-registry" => Some(setup(Way::Registry)),
            _ => None,
        }
    };
    #[cfg(feature = "fastrace")]
    if mode == "fastrace" {
        fdr_benches::peers::fastrace_discard::setup();
    }
    let start = cpu_ns();
    let mut check = 0u64;
    for _ in 0..rounds {
        for item in items {
            #[cfg(feature = "fastrace")]
            let _root = (mode == "fastrace").then(|| {
                let root = fastrace::prelude::Span::root(
                    "item",
                    fastrace::collector::SpanContext::random(),
                );
                let guard = root.set_local_parent();
                (root, guard)
            });
            check = check.rotate_left(5) ^ work(item);
        }
        // fastrace's collector holds the spans until a flush (its thread wakes once a second):
        // a flush per round keeps its memory bounded (3,000 rounds of regex-syntax held 28 GB).
        #[cfg(feature = "fastrace")]
        if mode == "fastrace" {
            fastrace::flush();
        }
    }
    #[cfg(feature = "fastrace")]
    if mode == "fastrace" {
        fastrace::flush();
    }
    let took = cpu_ns() - start;
    #[cfg(feature = "tracing")]
    if let Some(rec) = spans {
        rec.finish_to(&mut std::io::sink()).expect("finish");
    }
    #[cfg(feature = "fdr")]
    if let Some(rec) = rec {
        finish(rec);
    }
    println!("cpu_ns={took} check={check}");
    if let Some(first) = first_slow() {
        let wall = started_wall + first.duration_since(started);
        let unix = wall
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        println!("first_slow_unix_ns={}", unix.as_nanos());
    }
}
