//! Fixture logs and helpers shared by the integration tests.
#![allow(dead_code)]

pub mod child;
pub mod fuzz_check;
pub mod fxt;
pub mod xml;

use std::path::{Path, PathBuf};

use fdr_format::{ClockSource, Mode, RunInfo};
use fdr_testkit::synth::LogBuilder;

/// 2^33 ticks: far enough to need a TSCWrap record.
pub const FAR: u64 = 1 << 33;

fn run_info(program: &str) -> RunInfo {
    RunInfo {
        clock: ClockSource::Injected,
        ticks_per_second: 1_000_000_000,
        mode: Mode::Ring,
        threshold_ns: 5000,
        threshold_ticks: 5000,
        buffer_size: 65536,
        buffer_count: 8,
        pid: 1,
        program: program.to_string(),
        ..RunInfo::default()
    }
}

/// Two threads at 1 GHz (ticks are nanoseconds): nested calls, logged arguments, a tail call, a
/// CPU migration, a TSC wrap, an id missing from the table, a call open at the end, and a
/// thread whose calls span two blocks.
pub fn basic_log() -> Vec<u8> {
    basic_log_with_gap(FAR)
}

/// [`basic_log`] with `gap` ticks instead of [`FAR`] before thread 12's last call (0: no TSC
/// wrap, and no call so long that it hides the others in a flame graph).
pub fn basic_log_with_gap(gap: u64) -> Vec<u8> {
    let mut log = LogBuilder::new(1_000_000_000);
    log.run(run_info("demo"));
    log.function(1, "app::main", &[]);
    log.function(2, "app::parse", &["len", "flags"]);
    log.function(3, "app::Worker::step", &[]);
    log.function(4, "<app::Cache as app::Store>::get", &[]);
    log.function(5, "app::tail_caller", &[]);
    log.function(6, "app::tail_callee", &[]);
    log.thread(11, "main");
    log.thread(12, "worker");
    let mut b = log.block(11, 0, 1000);
    b.enter(1, 1000);
    b.enter_args(2, 1100, &[42, 7]);
    b.exit(2, 1600);
    b.enter(3, 1700);
    b.enter(4, 1800);
    b.exit(4, 1900);
    b.cpu(1, 2000);
    b.enter(4, 2100);
    b.exit(4, 2400);
    b.exit(3, 2500);
    b.enter(5, 2600);
    b.tail_exit(5, 2700);
    b.enter(6, 2700);
    b.exit(6, 3000);
    b.enter(99, 3100);
    b.exit(99, 3200);
    b.finish();
    let mut b = log.block(12, 2, 1500);
    b.enter(3, 1500);
    b.enter(4, 1600);
    b.exit(4, 1650);
    b.exit(3, 2000);
    b.enter(3, 2100);
    b.enter(4, gap + 2200);
    b.exit(4, gap + 2300);
    b.finish();
    let mut b = log.block(11, 1, 3300);
    b.enter(3, 3300);
    b.exit(3, 3400);
    b.exit(1, 4000);
    b.finish();
    log.finish()
}

/// The spans of [`basic_log`]: (tid, name, start ns, end ns), each thread's in order of start.
pub fn basic_spans() -> Vec<(i32, &'static str, u64, u64)> {
    let get = "<app::Cache as app::Store>::get";
    vec![
        (11, "app::main", 1000, 4000),
        (11, "app::parse", 1100, 1600),
        (11, "app::Worker::step", 1700, 2500),
        (11, get, 1800, 1900),
        (11, get, 2100, 2400),
        (11, "app::tail_caller", 2600, 2700),
        (11, "app::tail_callee", 2700, 3000),
        (11, "#99", 3100, 3200),
        (11, "app::Worker::step", 3300, 3400),
        (12, "app::Worker::step", 1500, 2000),
        (12, get, 1600, 1650),
        (12, "app::Worker::step", 2100, FAR + 2300),
        (12, get, FAR + 2200, FAR + 2300),
    ]
}

/// A ring window that opens in the middle of a stack: thread 21's first records are exits of
/// calls whose entries were overwritten, and it ends with two calls still open.
pub fn midstack_log() -> Vec<u8> {
    midstack_log_led_by(0)
}

/// [`midstack_log`] whose leading block belongs to `tid` and is dated at tick 10, long before
/// the window, as the runtime writes it (it gives the leading block to its first thread).
pub fn midstack_log_led_by(tid: i32) -> Vec<u8> {
    let mut log = LogBuilder::new(1_000_000_000);
    if tid != 0 {
        log.leading_block(tid, 10);
    }
    log.run(RunInfo {
        snapshot: true,
        buffers_recycled: 3,
        ..run_info("ring")
    });
    log.function(1, "app::main", &[]);
    log.function(3, "app::Worker::step", &[]);
    log.function(4, "app::get", &[]);
    log.thread(21, "ring-thread");
    let mut b = log.block(21, 0, 5000);
    b.enter(4, 5100);
    b.exit(4, 5200);
    b.exit(3, 5300);
    b.enter(4, 5400);
    b.exit(4, 5500);
    b.exit(1, 6000);
    b.enter(3, 6200);
    b.enter(4, 6300);
    b.finish();
    log.finish()
}

/// The spans of [`midstack_log`], with (inferred start, open at end) flags.
pub fn midstack_spans() -> Vec<(i32, &'static str, u64, u64, bool, bool)> {
    vec![
        (21, "app::main", 5000, 6000, true, false),
        (21, "app::Worker::step", 5000, 5300, true, false),
        (21, "app::get", 5100, 5200, false, false),
        (21, "app::get", 5400, 5500, false, false),
        (21, "app::Worker::step", 6200, 6300, false, true),
        (21, "app::get", 6300, 6300, false, true),
    ]
}

/// A fresh directory for one test's files.
pub fn temp_dir(test: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("fdr-cli-tests-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("create a temp dir");
    d
}

/// Writes `bytes` to `dir/name` and returns the path as a string.
pub fn write_log(dir: &Path, name: &str, bytes: &[u8]) -> String {
    let p = dir.join(name);
    std::fs::write(&p, bytes).expect("write a fixture");
    p.to_string_lossy().into_owned()
}

/// Runs `fdr` with `args`, returning what it printed. Local times are UTC (`TZ=UTC`), so that
/// outputs compare on any machine.
pub fn fdr(args: &[&str]) -> Result<String, fdr_cli::CliError> {
    static UTC: std::sync::Once = std::sync::Once::new();
    UTC.call_once(|| std::env::set_var("TZ", "UTC"));
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let mut out = Vec::new();
    fdr_cli::run(&args, &mut out)?;
    // FXT is binary; everything else is UTF-8 and compared as text.
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// Compares `actual` with `tests/golden/<name>`; `FDR_BLESS=1` rewrites the file instead.
pub fn golden(name: &str, actual: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name);
    if std::env::var_os("FDR_BLESS").is_some() {
        std::fs::write(&path, actual).expect("write golden file");
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|_| {
        panic!(
            "missing golden file {}; run with FDR_BLESS=1",
            path.display()
        )
    });
    if expected != actual {
        panic!(
            "output differs from {} (FDR_BLESS=1 rewrites it)\n--- expected\n{expected}\n--- actual\n{actual}",
            path.display()
        );
    }
}

/// A snapshot written by a slow-call trigger: `app::handle` on thread 11 took 3.6 µs from +200 ns
/// (3 triggers suppressed before it), in a recording that keeps 1 ms by age with a pool of four
/// 256-byte buffers; thread 11's window covers 4 µs in two blocks, thread 12's 1 µs in one.
pub fn triggered_log() -> Vec<u8> {
    triggered_log_with(|r| r)
}

/// [`triggered_log`] with its reason record as `edit` makes it.
pub fn triggered_log_with(
    edit: impl FnOnce(fdr_format::ReasonInfo) -> fdr_format::ReasonInfo,
) -> Vec<u8> {
    use fdr_format::{Reason, ReasonInfo};
    let mut log = LogBuilder::new(1_000_000_000);
    log.leading_block(11, 500);
    log.run(RunInfo {
        snapshot: true,
        buffer_size: 256,
        buffer_count: 4,
        max_age_ns: 1_000_000,
        ..run_info("server")
    });
    log.reason(edit(ReasonInfo {
        reason: Reason::SlowCall,
        function: 2,
        tid: 11,
        start_tsc: 1200,
        duration_ticks: 3600,
        suppressed: 3,
        ..ReasonInfo::default()
    }));
    log.function(1, "app::serve", &[]);
    log.function(2, "app::handle", &[]);
    log.function(3, "app::query", &[]);
    log.thread(11, "main");
    log.thread(12, "pool");
    let mut b = log.block(11, 0, 1000);
    b.enter(1, 1000);
    b.enter(2, 1200);
    b.enter(3, 1300);
    b.exit(3, 2300);
    b.finish();
    let mut b = log.block(12, 1, 1500);
    b.enter(3, 1500);
    b.exit(3, 2500);
    b.finish();
    let mut b = log.block(11, 0, 2400);
    b.enter(3, 2400);
    b.exit(3, 4000);
    b.exit(2, 4800);
    b.exit(1, 5000);
    b.finish();
    log.finish()
}

/// Async tasks of `app::request` (id 2, an async fn) called by `app::serve` (id 1) on thread
/// 11, polled on threads 11 and 12 (at 1 GHz, ticks are nanoseconds). Thread 12's block comes
/// first in the file, so some ends are read before their creations.
///
/// - task 100: created on 11 at 1100, polled there [1100, 1200] and on 12 [2000, 2100],
///   completed on 12 at 2100 (moved between threads): 1000 ns;
/// - task 101: created on 11 at 1300, polled [1300, 1350], cancelled on 11 at 1600: 300 ns;
/// - task 99: created before the window, polled on 12 [1600, 1700] and completed there at
///   1700; thread 12's window starts at 1500: 200 ns, inferred;
/// - task 102: created on 11 at 2500, polled [2500, 2550], never completed; the log ends at
///   3000: 500 ns, open at the end.
pub fn tasks_log() -> Vec<u8> {
    use fdr_format::{FunctionKind, TaskKind};
    let mut log = LogBuilder::new(1_000_000_000);
    log.leading_block(12, 500);
    log.run(run_info("tasks"));
    log.function(1, "app::serve", &[]);
    log.function_of_kind(2, "app::request", &[], FunctionKind::Async);
    log.function(3, "app::io", &[]);
    log.thread(11, "main");
    log.thread(12, "worker");
    let mut b = log.block(12, 1, 1500);
    b.enter(2, 1600);
    b.enter(3, 1620);
    b.exit(3, 1680);
    b.exit(2, 1700);
    b.task(TaskKind::Completed, 2, 99, 1700);
    b.enter(2, 2000);
    b.exit(2, 2100);
    b.task(TaskKind::Completed, 2, 100, 2100);
    b.finish();
    let mut b = log.block(11, 0, 1000);
    b.enter(1, 1000);
    b.task(TaskKind::Created, 2, 100, 1100);
    b.enter(2, 1100);
    b.exit(2, 1200);
    b.task(TaskKind::Created, 2, 101, 1300);
    b.enter(2, 1300);
    b.exit(2, 1350);
    b.task(TaskKind::Cancelled, 2, 101, 1600);
    b.finish();
    let mut b = log.block(11, 0, 2400);
    b.task(TaskKind::Created, 2, 102, 2500);
    b.enter(2, 2500);
    b.exit(2, 2550);
    b.exit(1, 3000);
    b.finish();
    log.finish()
}

/// A request that waited (issue 58), at 1 GHz (ticks are nanoseconds), as the runtime writes
/// it: await events inside the poll that passed the await, wake events right after the entry of
/// the poll a wake-up asked for, a poll event after each kept poll's exit.
///
/// Functions: `app::serve` (1), the async fns `app::get_quote` (2) and
/// `app::downstream_discount` (3); await sites 10 (`src/app.rs:20:9`) and 11
/// (`src/app.rs:24:13`) of `get_quote`, 12 (`src/app.rs:40:5`) of `downstream_discount`.
///
/// Thread 11 (`worker`): task 7 of `get_quote`, created at 1000, polled 1000-1050 (inside it,
/// task 8 of `downstream_discount` is created at 1010 and polled 1010-1030); woken at 1800 by
/// thread 12, polled 2000-2100 (task 8 polled inside, 2010-2040, passing site 12 after 980 and
/// completing; task 7 passes site 10 at 2045 after 1000); woken at 2500 by thread 0, polled
/// 2600-2700, passing site 11 at 2650 after 450 in 2 polls, and completed at 2700.
/// Thread 12 (`io`): task 9 of `get_quote`, created at 3000, polled 3000-3010, dropped at 3310
/// while it waited at site 10 (300). Hostile events are inside task 9's poll: a wake-up dated
/// after the poll began (5000), an await event of an unknown site (99) with `u32::MAX` polls,
/// and a wake event of an unknown function (98).
pub fn awaits_log() -> Vec<u8> {
    awaits_log_with(None)
}

/// [`awaits_log`], written for `reason` (a trigger on one of its tasks or polls).
pub fn awaits_log_with(reason: Option<fdr_format::ReasonInfo>) -> Vec<u8> {
    use fdr_format::{AwaitEvent, FunctionKind, TaskKind, WakeEvent};
    let wait = |site, function, waited, polls, dropped| AwaitEvent {
        site,
        function,
        waited,
        polls,
        dropped,
    };
    let mut log = LogBuilder::new(1_000_000_000);
    log.leading_block(11, 900);
    log.run(run_info("awaits"));
    if let Some(r) = reason {
        log.reason(r);
    }
    log.function(1, "app::serve", &[]);
    log.function_of_kind(2, "app::get_quote", &[], FunctionKind::Async);
    log.function_of_kind(3, "app::downstream_discount", &[], FunctionKind::Async);
    log.await_site(10, "app::get_quote", "src/app.rs", 20, 9);
    log.await_site(11, "app::get_quote", "src/app.rs", 24, 13);
    log.await_site(12, "app::downstream_discount", "src/app.rs", 40, 5);
    log.thread(11, "worker");
    log.thread(12, "io");
    let mut b = log.block(11, 0, 1000);
    b.task(TaskKind::Created, 2, 7, 1000);
    b.enter(2, 1000);
    b.task(TaskKind::Created, 3, 8, 1010);
    b.enter(3, 1010);
    b.exit(3, 1030);
    b.polled(3, 8, 1030);
    b.exit(2, 1050);
    b.polled(2, 7, 1050);
    b.enter(2, 2000);
    b.woken(
        WakeEvent {
            function: 2,
            woken_at: 1800,
            waker_tid: 12,
        },
        2000,
    );
    b.enter(3, 2010);
    b.awaited(wait(12, 3, 980, 1, false), 2010);
    b.exit(3, 2040);
    b.polled(3, 8, 2040);
    b.task(TaskKind::Completed, 3, 8, 2040);
    b.awaited(wait(10, 2, 1000, 1, false), 2045);
    b.exit(2, 2100);
    b.polled(2, 7, 2100);
    b.enter(2, 2600);
    b.woken(
        WakeEvent {
            function: 2,
            woken_at: 2500,
            waker_tid: 0,
        },
        2600,
    );
    b.awaited(wait(11, 2, 450, 2, false), 2650);
    b.exit(2, 2700);
    b.polled(2, 7, 2700);
    b.task(TaskKind::Completed, 2, 7, 2700);
    b.finish();
    let mut b = log.block(12, 1, 3000);
    b.task(TaskKind::Created, 2, 9, 3000);
    b.enter(2, 3000);
    b.woken(
        WakeEvent {
            function: 2,
            woken_at: 5000,
            waker_tid: 12,
        },
        3000,
    );
    b.awaited(wait(99, 2, 5, u32::MAX, false), 3001);
    b.woken(
        WakeEvent {
            function: 98,
            woken_at: 2990,
            waker_tid: 77,
        },
        3002,
    );
    b.exit(2, 3010);
    b.polled(2, 9, 3010);
    b.task(TaskKind::Cancelled, 2, 9, 3310);
    b.awaited(wait(10, 2, 300, 1, true), 3310);
    b.finish();
    log.finish()
}

/// Culled functions (issue 14), at 1 GHz: `app::len` (2) is culled by thread 11 at 2000 and
/// restored by thread 12 at 6000; `app::lower` (3) is culled by thread 12 at 3000 and still
/// culled at the end; `app::upper` (4) was culled before the window and is restored by thread
/// 11 at 4000. `app::main` (1) is never culled.
pub fn culled_log() -> Vec<u8> {
    use fdr_format::CullKind;
    let mut log = LogBuilder::new(1_000_000_000);
    log.run(RunInfo {
        calls_erased: 120_000,
        probes: 7_800,
        ..run_info("culled")
    });
    log.function(1, "app::main", &[]);
    log.function(2, "app::len", &[]);
    log.function(3, "app::lower", &[]);
    log.function(4, "app::upper", &[]);
    log.thread(11, "main");
    log.thread(12, "worker");
    let mut b = log.block(11, 0, 1000);
    b.enter(1, 1000);
    b.enter(2, 1100);
    b.exit(2, 1150);
    b.cull(CullKind::Culled, 2, 10_000, 2000);
    b.enter(4, 3500);
    b.exit(4, 3900);
    b.cull(CullKind::Restored, 4, 0, 4000);
    b.enter(2, 5000);
    b.exit(2, 5100);
    b.exit(1, 7000);
    b.finish();
    let mut b = log.block(12, 1, 2500);
    b.cull(CullKind::Culled, 3, 10_000, 3000);
    b.enter(3, 3200);
    b.exit(3, 3300);
    b.enter(2, 5900);
    b.exit(2, 6000);
    b.cull(CullKind::Restored, 2, 0, 6000);
    b.finish();
    log.finish()
}
