//! What culling learned is kept for the next run of the same build (`cull_memory`): each case
//! runs this test binary again as a child recording from `FDR_OPTIONS` in a directory of its
//! own (its crash directory), so the runs share a build and a memory file as a user's runs do.
//!
//! The real clock times the calls, so the threshold is 50 ms: a short call stays under it on a
//! loaded machine and under qemu, where a recorded call costs tens of microseconds (at 5 µs,
//! probes there found short calls slow and restored them). One case runs at a time.

use std::path::{Path, PathBuf};

use fdr_format::CullKind;
use fdr_testkit::logs::{read_log, scratch, DecodedLog, Rec};

/// A call far shorter than the threshold: erased, then culled.
#[fdr::instrument_fdr]
fn short(x: u64) -> u64 {
    std::hint::black_box(x.wrapping_mul(31))
}

/// The same function grown slow (set by the case through `FDR_TEST_SLOW_US`).
#[fdr::instrument_fdr]
fn sometimes_slow(x: u64) -> u64 {
    if let Some(us) = std::env::var("FDR_TEST_SLOW_US")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        std::thread::sleep(std::time::Duration::from_micros(us));
    }
    std::hint::black_box(x.wrapping_mul(31))
}

/// A descriptor named while the recording runs, as `tracing` callsites are.
static LATE_NAME: std::sync::OnceLock<fdr_runtime::Named> = std::sync::OnceLock::new();

fn late_info() -> &'static fdr_runtime::Named {
    LATE_NAME.get().unwrap_or(&fdr_runtime::Named::UNNAMED)
}

#[fdr_runtime::linkme::distributed_slice(fdr_runtime::FUNCTIONS)]
#[linkme(crate = fdr_runtime::linkme)]
static LATE: fdr_runtime::FnDesc =
    fdr_runtime::FnDesc::named(late_info, fdr_runtime::FnKindTag::Scope);

/// The child: `FDR_TEST_CALLS` calls of each function, then the exit writer writes the log.
/// With `FDR_TEST_LATE`, `LATE` is named once the recording runs, and called as often.
#[test]
#[ignore = "a child process of the cull_memory tests"]
fn child_calls() {
    if !fdr_testkit::child::spawned() {
        return;
    }
    let n: u64 = std::env::var("FDR_TEST_CALLS").unwrap().parse().unwrap();
    let late = std::env::var_os("FDR_TEST_LATE").is_some();
    let mut sum = 0;
    if late {
        // A first call starts the recording (from `FDR_OPTIONS`).
        sum = short(0);
        LATE_NAME
            .set(fdr_runtime::Named {
                name: "cull_memory::late",
                file: file!(),
                line: line!(),
                args: &[],
            })
            .unwrap();
        fdr_runtime::hooks::named(&LATE);
    }
    for i in 0..n {
        sum = sum.wrapping_add(short(i)).wrapping_add(sometimes_slow(i));
        if late {
            drop(fdr_runtime::CallGuard::enter(&LATE));
        }
    }
    std::hint::black_box(sum);
}

/// A function named while the recording runs (a `tracing` callsite) has no name when the next
/// run starts: what the last run learned of it waits for its name, and the rest of the memory
/// applies meanwhile. (Before, such a function made the whole file apply to nothing, so a
/// program of `tracing` spans learned every culled callsite again on every run.)
#[test]
fn a_function_named_while_recording_starts_the_next_run_culled_once_named() {
    let dir = scratch("cull-memory-late");
    let late = [("FDR_TEST_LATE", "1")];
    let (first, _) = run(&dir, "first", "", 20_000, &late);
    assert_eq!(culls_of(&first, "::late")[0], CullKind::Culled);
    let memory = std::fs::read_to_string(memory_file(&dir)).unwrap();
    assert!(memory.contains(" culled cull_memory::late\n"), "{memory}");
    let (second, _) = run(&dir, "second", "", 20_000, &late);
    // The two named at build time start culled; the late one is culled as it is named.
    assert_eq!(second.run.culled_at_start, 2);
    assert_eq!(culls_of(&second, "::short"), []);
    assert_eq!(culls_of(&second, "::late"), []);
    // Besides the probes' calls, only the first call of short (it started the recording).
    assert_only_probes_and_the_first_call_timed(&second);
    std::fs::remove_dir_all(dir).ok();
}

/// One run: `options` added to an `out` in `dir` and `dir` as the crash directory. Returns the
/// log and what the child said on stderr.
fn run(
    dir: &Path,
    name: &str,
    options: &str,
    calls: u64,
    env: &[(&str, &str)],
) -> (DecodedLog, String) {
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let out = dir.join(format!("{name}.fdr"));
    let mut c = fdr_testkit::child::command("child_calls");
    c.env(
        "FDR_OPTIONS",
        format!(
            "out={} crash_dir={} threshold_us=50000 cull_after=1000 {options}",
            out.display(),
            dir.display()
        ),
    )
    .env("FDR_TEST_CALLS", calls.to_string());
    for (k, v) in env {
        c.env(k, v);
    }
    let o = c.output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{name}: {stderr}");
    (read_log(&out), stderr)
}

fn id_of(log: &DecodedLog, name: &str) -> u32 {
    log.functions
        .iter()
        .find(|f| f.name.ends_with(name))
        .unwrap_or_else(|| panic!("{name} in the table"))
        .id
}

/// A run that started with every function it called culled timed only its probes' calls (64
/// each) and its first call, which started the recording.
fn assert_only_probes_and_the_first_call_timed(log: &DecodedLog) {
    assert!(
        log.run.calls_erased <= log.run.probes * 64 + 1,
        "only probes' calls were timed: {:?}",
        log.run
    );
}

/// The cull events of function `name` in `log`: (kind, run).
fn culls_of(log: &DecodedLog, name: &str) -> Vec<CullKind> {
    let id = id_of(log, name);
    log.blocks
        .iter()
        .flat_map(|b| &b.records)
        .filter_map(|r| match r {
            Rec::Cull(kind, f, _, _) if *f == id => Some(*kind),
            _ => None,
        })
        .collect()
}

/// The kept calls of function `name` in `log` (each an entry in the window).
fn kept_calls(log: &DecodedLog, name: &str) -> usize {
    let id = id_of(log, name);
    log.blocks
        .iter()
        .flat_map(|b| &b.records)
        .filter(|r| matches!(r, Rec::Enter(f, _) if *f == id))
        .count()
}

fn memory_file(dir: &Path) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    dir.join(format!(
        "fdr-{}.culls",
        exe.file_name().unwrap().to_string_lossy()
    ))
}

/// The first run learns; the second starts where it ended: both functions culled before their
/// first call, so every call it timed was a probe's, and no cull event (nothing changed).
#[test]
fn the_next_run_of_the_build_starts_with_what_the_last_one_culled() {
    let dir = scratch("cull-memory-next");
    let (first, _) = run(&dir, "first", "", 20_000, &[]);
    assert_eq!(first.run.culled_at_start, 0);
    assert_eq!(culls_of(&first, "::short")[0], CullKind::Culled);
    let memory = std::fs::read_to_string(memory_file(&dir)).unwrap();
    assert!(memory.starts_with("fdr culls 1\nbuild id:"), "{memory}");
    assert!(
        memory.contains("threshold_ns 50000000\ncull_after 1000\n"),
        "{memory}"
    );
    assert!(memory.contains(" cull_memory::short\n"), "{memory}");
    assert!(
        memory.contains(" cull_memory::sometimes_slow\n"),
        "{memory}"
    );
    // Each function learned over 1,000 erased calls at least.
    assert!(first.run.calls_erased >= 2 * 1000, "{:?}", first.run);

    let (second, _) = run(&dir, "second", "", 20_000, &[]);
    assert_eq!(second.run.culled_at_start, 2);
    assert_eq!(culls_of(&second, "::short"), []);
    assert_eq!(culls_of(&second, "::sometimes_slow"), []);
    // Besides the probes' calls, only the first: it started the recording (from
    // `FDR_OPTIONS`, in its hook), which records it whatever its function's flags say.
    assert_only_probes_and_the_first_call_timed(&second);
    std::fs::remove_dir_all(dir).ok();
}

/// A function called fewer times in a run than `cull_after` (1,000) is culled in a later run, as
/// it would be in one long one: its run of erased calls goes on from where the last run left it.
#[test]
fn runs_of_erased_calls_go_on_from_one_run_to_the_next() {
    // A call that a stall of 50 ms kept (seen once under qemu on a loaded CI machine: the run
    // of `short` was 345, not 600) starts its function's run over: such a first run is tried
    // again, in a directory of its own, up to three times.
    let mut tries = 0;
    let (dir, first) = loop {
        let dir = scratch("cull-memory-runs");
        let (first, _) = run(&dir, "first", "", 600, &[]);
        let kept = ["::short", "::sometimes_slow"]
            .iter()
            .map(|name| kept_calls(&first, name))
            .sum::<usize>();
        tries += 1;
        if kept == 0 || tries == 3 {
            break (dir, first);
        }
        std::fs::remove_dir_all(dir).ok();
    };
    assert_eq!(culls_of(&first, "::short"), []);
    let memory = std::fs::read_to_string(memory_file(&dir)).unwrap();
    // All 600: the test's thread (libtest runs each test on one) exited before the exit writer
    // ran, and a thread that leaves hands in what it counted.
    let run_of = |name: &str| -> u32 {
        let line = memory
            .lines()
            .find(|l| l.ends_with(name))
            .unwrap_or_else(|| panic!("{name} in {memory}"));
        line.split(' ').nth(1).unwrap().parse().unwrap()
    };
    assert_eq!(run_of(" cull_memory::short"), 600, "{memory}");
    assert_eq!(run_of(" cull_memory::sometimes_slow"), 600, "{memory}");
    let (second, _) = run(&dir, "second", "", 600, &[]);
    assert_eq!(second.run.culled_at_start, 0);
    assert_eq!(culls_of(&second, "::short"), [CullKind::Culled]);
    assert_eq!(culls_of(&second, "::sometimes_slow"), [CullKind::Culled]);
    std::fs::remove_dir_all(dir).ok();
}

/// A function the last run culled that is slow now is restored by a probe, with its event, and
/// the run after that does not remember it.
#[test]
fn a_remembered_function_that_became_slow_is_restored_and_forgotten() {
    let dir = scratch("cull-memory-slow");
    run(&dir, "first", "", 20_000, &[]);
    // Four calls of 100 ms: the probe 10 ms in times the second.
    let (slow, _) = run(&dir, "slow", "", 4, &[("FDR_TEST_SLOW_US", "100000")]);
    assert_eq!(slow.run.culled_at_start, 2);
    assert_eq!(culls_of(&slow, "::sometimes_slow"), [CullKind::Restored]);
    assert_eq!(culls_of(&slow, "::short"), []);
    let memory = std::fs::read_to_string(memory_file(&dir)).unwrap();
    assert!(memory.contains(" culled cull_memory::short\n"), "{memory}");
    assert!(!memory.contains("sometimes_slow"), "{memory}");
    let (after, _) = run(&dir, "after", "", 100, &[]);
    assert_eq!(after.run.culled_at_start, 1);
    std::fs::remove_dir_all(dir).ok();
}

/// The memory is not used with `cull_memory=off`, under a lower threshold or a higher
/// `cull_after` than it was learned with, nor from another build; a damaged file is said on
/// stderr and replaced.
#[test]
fn a_memory_that_does_not_apply_is_not_used() {
    let dir = scratch("cull-memory-not");
    run(&dir, "first", "", 20_000, &[]);
    let learned = std::fs::read_to_string(memory_file(&dir)).unwrap();
    for (name, options) in [
        ("off", "cull_memory=off"),
        ("lower", "threshold_us=40000"),
        ("higher", "cull_after=2000"),
    ] {
        let (log, _) = run(&dir, name, options, 100, &[]);
        assert_eq!(log.run.culled_at_start, 0, "{name}");
        // The file is written again at the end (from what this run culled: nothing in 100 calls).
        std::fs::write(memory_file(&dir), &learned).unwrap();
    }
    let other_build = learned.replacen("build id:", "build id:00", 1);
    std::fs::write(memory_file(&dir), other_build).unwrap();
    let (log, stderr) = run(&dir, "other", "", 100, &[]);
    assert_eq!(log.run.culled_at_start, 0);
    assert!(!stderr.contains("ignored"), "{stderr}");

    std::fs::write(memory_file(&dir), "garbage\n").unwrap();
    let (log, stderr) = run(&dir, "damaged", "", 20_000, &[]);
    assert_eq!(log.run.culled_at_start, 0);
    assert!(
        stderr.contains(&format!(
            "fdr: ignored {} (the functions the last run culled, kept for this one): its first \
             line is not `fdr culls 1`; it is replaced when this recording ends",
            memory_file(&dir).display()
        )),
        "{stderr}"
    );
    let replaced = std::fs::read_to_string(memory_file(&dir)).unwrap();
    assert!(
        replaced.contains(" culled cull_memory::short\n"),
        "{replaced}"
    );
    std::fs::remove_dir_all(dir).ok();
}

/// `fdr info` says how many functions started culled.
#[test]
fn fdr_info_says_how_many_functions_started_culled() {
    let dir = scratch("cull-memory-info");
    run(&dir, "first", "", 20_000, &[]);
    run(&dir, "second", "", 100, &[]);
    let path = dir.join("second.fdr");
    let mut out = Vec::new();
    fdr_cli::run(&["info", path.to_str().unwrap()], &mut out).unwrap();
    let text = String::from_utf8_lossy(&out);
    assert!(
        text.contains(
            "2 functions culled from the start: the last run of this build ended with them \
             culled (cull_memory; probes restore any that became slow)"
        ),
        "{text}"
    );
    std::fs::remove_dir_all(dir).ok();
}
