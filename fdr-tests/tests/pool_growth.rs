//! A crash box reserves the room of its first megabyte of buffers at start and the rest later
//! (the background writer, or a thread that needs a buffer first): nothing recorded is lost
//! meanwhile, and a file system with no room for the rest leaves a smaller ring, never a lost
//! record or a crash.

use fdr_runtime::{testing, CallGuard, Config, Mode};
use fdr_tests::{decode, desc, scratch};

desc!(WORK, "pool_growth::work");

/// Buffers of 4 KiB: 256 of them are reserved at start (a megabyte), of 384.
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

fn run(dir: &std::path::Path, calls: usize) -> (fdr_runtime::Stats, fdr_tests::Log) {
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

fn work_calls(log: &fdr_tests::Log) -> usize {
    let tid = log.tids()[0];
    log.calls(tid)
        .iter()
        .filter(|(k, id)| *k == fdr_format::FnKind::Enter && *id == WORK.id())
        .count()
}

#[test]
fn buffers_past_the_first_megabyte_are_reserved_by_the_threads_that_need_them() {
    let _turn = testing::exclusive();
    let dir = scratch("growth-threads");
    // The writer reserves nothing: every buffer past the 256th is reserved by the recording
    // thread when it needs one. A ring that recycled instead would drop the oldest calls.
    testing::pause_growth(true);
    let calls = calls_for(COUNT - 20);
    let (stats, log) = run(&dir, calls);
    testing::pause_growth(false);
    assert!(
        log.blocks.len() > 300,
        "past the first 256: {}",
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
    // A ring of the 256 reserved buffers: the oldest calls were recycled, none dropped, and the
    // window holds the newest calls, each whole.
    assert_eq!(
        log.blocks.len(),
        256,
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
        // Four threads fill 320 buffers between them while the writer reserves the 128 past
        // the first megabyte, from the moment the recording starts.
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
