//! A crash box reserves the room of its first quarter megabyte of buffers at start and the rest
//! later (the background writer, or a thread that needs a buffer first): nothing recorded is lost
//! meanwhile, and a file system with no room for the rest leaves a smaller ring, never a lost
//! record or a crash.

use fdr_runtime::{testing, CallGuard, Config, Mode};
use fdr_testkit::desc;
use fdr_testkit::logs::{decode, scratch, DecodedLog};

desc!(WORK, "pool_growth::work");

/// Buffers of 4 KiB: 64 of them are reserved at start (a quarter megabyte), of 384.
const AT_START: usize = 64;
const BUFFER: usize = 4096;
const COUNT: usize = 384;

fn config(dir: &std::path::Path) -> Config {
    Config::default()
        .threshold(std::time::Duration::ZERO)
        .buffer_size(BUFFER)
        .buffer_count(COUNT)
        .crash_dir(dir)
        .mode(Mode::Ring)
}

/// Calls that fill about `buffers` buffers (an entry and an exit record of 8 bytes each, and
/// each block's preamble); the tests check how many blocks they filled.
fn calls_for(buffers: usize) -> usize {
    buffers * (BUFFER - 128) / 16
}

fn run(dir: &std::path::Path, calls: usize) -> (fdr_runtime::Stats, DecodedLog) {
    let rec = fdr_runtime::start(config(dir)).unwrap();
    for _ in 0..calls {
        let _g = CallGuard::enter(&WORK);
        std::hint::black_box(());
    }
    let stats = rec.stats();
    let mut out = Vec::new();
    rec.finish_to(&mut out).unwrap();
    (stats, decode(&out[..]).unwrap())
}

fn work_calls(log: &DecodedLog) -> usize {
    let tid = log.tids()[0];
    log.calls(tid)
        .iter()
        .filter(|(k, id)| *k == fdr_format::FnKind::Enter && *id == WORK.id())
        .count()
}

#[test]
fn buffers_past_the_first_are_reserved_by_the_threads_that_need_them() {
    let _turn = testing::exclusive();
    let dir = scratch("growth-threads");
    // The writer reserves nothing: every buffer past the 64th is reserved by the recording
    // thread when it needs one. A ring that recycled instead would drop the oldest calls.
    testing::pause_growth(true);
    let calls = calls_for(COUNT - 20);
    let (stats, log) = run(&dir, calls);
    testing::pause_growth(false);
    assert!(
        log.blocks.len() > 300,
        "past the first {AT_START}: {}",
        log.blocks.len()
    );
    assert_eq!(stats.records_dropped, 0);
    assert_eq!(
        stats.buffers_recycled, 0,
        "a fresh buffer goes before a used one"
    );
    assert_eq!(
        work_calls(&log),
        calls,
        "every call of the run is in the window"
    );
}

#[test]
fn a_box_that_cannot_grow_records_in_the_buffers_it_has() {
    let _turn = testing::exclusive();
    let dir = scratch("growth-full");
    testing::fail_reservations(true);
    let calls = calls_for(COUNT - 20);
    let (stats, log) = run(&dir, calls);
    testing::fail_reservations(false);
    // A ring of the 64 reserved buffers: the oldest calls were recycled, none dropped, and the
    // window holds the newest calls, each whole.
    assert_eq!(
        log.blocks.len(),
        AT_START,
        "the reserved buffers, each holding a block"
    );
    assert_eq!(stats.records_dropped, 0);
    assert!(stats.buffers_recycled > 0, "{stats:?}");
    let kept = work_calls(&log);
    assert!(kept > 0 && kept < calls, "{kept} of {calls}");
}

#[test]
fn threads_taking_buffers_race_the_writer_reserving_them_and_lose_nothing() {
    let _turn = testing::exclusive();
    let dir = scratch("growth-race");
    let per_thread = calls_for(80);
    for round in 0..10 {
        let rec = fdr_runtime::start(config(&dir)).unwrap();
        // Four threads fill 320 buffers between them while the writer reserves the 320 past
        // the first 64, from the moment the recording starts.
        let tids: Vec<i32> = (0..4)
            .map(|_| {
                std::thread::spawn(move || {
                    for _ in 0..per_thread {
                        let _g = CallGuard::enter(&WORK);
                        std::hint::black_box(());
                    }
                    // SAFETY: gettid has no preconditions.
                    unsafe { libc::syscall(libc::SYS_gettid) as i32 }
                })
            })
            .collect::<Vec<_>>()
            .into_iter()
            .map(|t| t.join().unwrap())
            .collect();
        let stats = rec.stats();
        let mut out = Vec::new();
        rec.finish_to(&mut out).unwrap();
        let log = decode(&out[..]).unwrap();
        assert_eq!(stats.records_dropped, 0, "round {round}");
        assert_eq!(stats.buffers_recycled, 0, "round {round}");
        for tid in tids {
            let calls = log
                .calls(tid)
                .iter()
                .filter(|(k, id)| *k == fdr_format::FnKind::Enter && *id == WORK.id())
                .count();
            assert_eq!(calls, per_thread, "round {round}, thread {tid}");
        }
    }
}

/// This process's box in `dir` (the one box there of its pid).
fn box_path(dir: &std::path::Path) -> std::path::PathBuf {
    let exe = std::env::current_exe().unwrap();
    let program = exe.file_name().unwrap().to_string_lossy().into_owned();
    let me = std::process::id() as i32;
    let found: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| fdr_format::crash_box::pid_of(n, Some(&program)))
                == Some(me)
        })
        .collect();
    assert_eq!(found.len(), 1, "{found:?}");
    found[0].clone()
}

/// The room the file system gave the box so far, in bytes.
fn allocated(path: &std::path::Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).unwrap().blocks() * 512
}

#[test]
fn a_ring_grows_a_megabyte_ahead_of_the_buffers_used() {
    let _turn = testing::exclusive();
    let dir = scratch("growth-ahead");
    // 8 MiB of buffers: a program that fills a few of them reserves a megabyte and a quarter,
    // not the whole ring; one that fills 1,500 gets them all fresh, none recycled or dropped.
    let rec = fdr_runtime::start(config(&dir).buffer_count(2048)).unwrap();
    {
        let _g = CallGuard::enter(&WORK);
    }
    let path = box_path(&dir);
    // The writer grows the pool at its start, then only when asked: however long it had, it
    // stopped a megabyte ahead. The box holds its head too (the slots, 128 KiB for 2,048
    // buffers, and the lead areas): under 2 MiB in all, where the whole ring would be 8.
    std::thread::sleep(std::time::Duration::from_millis(300));
    let early = allocated(&path);
    assert!(early < 2 << 20, "{early} bytes reserved for one call");
    let calls = calls_for(1500);
    for _ in 0..calls {
        let _g = CallGuard::enter(&WORK);
        std::hint::black_box(());
    }
    let stats = rec.stats();
    assert!(allocated(&path) >= 1500 * BUFFER as u64);
    let mut out = Vec::new();
    rec.finish_to(&mut out).unwrap();
    let log = decode(&out[..]).unwrap();
    assert_eq!(stats.records_dropped, 0);
    assert_eq!(stats.buffers_recycled, 0);
    assert_eq!(work_calls(&log), calls + 1);
}

#[test]
fn a_table_that_cannot_be_rewritten_stays_the_first_until_there_is_room() {
    let _turn = testing::exclusive();
    let dir = scratch("growth-lead");
    // The lead areas' room past the first table is reserved by the first rewrite (the writer's,
    // when a thread or a name is new): while that fails the box keeps the table it started with,
    // whole, and the rewrite is tried again when there is room.
    testing::fail_reservations(true);
    let rec = fdr_runtime::start(config(&dir)).unwrap();
    std::thread::Builder::new()
        .name("lead-named".into())
        .spawn(|| {
            let _g = CallGuard::enter(&WORK);
        })
        .unwrap()
        .join()
        .unwrap();
    let path = box_path(&dir);
    let named = |log: &DecodedLog| log.threads.iter().any(|t| t.name == "lead-named");
    let read = || {
        let r = fdr_format::crash_box::recover(&std::fs::read(&path).unwrap()).unwrap();
        (r.info.threads, decode(&r.log[..]).unwrap())
    };
    // The writer looks every 10 ms: twenty looks later, still the first table (no threads in
    // it), though the thread is named all the same, from its buffer's slot.
    std::thread::sleep(std::time::Duration::from_millis(200));
    let (in_table, log) = read();
    testing::fail_reservations(false);
    assert_eq!(log.name(WORK.id()), Some("pool_growth::work"));
    assert_eq!(in_table, 0);
    assert!(named(&log), "{:?}", log.threads);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while read().0 == 0 {
        assert!(std::time::Instant::now() < deadline, "the table never grew");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(named(&read().1));
    rec.finish_to(&mut std::io::sink()).unwrap();
}
