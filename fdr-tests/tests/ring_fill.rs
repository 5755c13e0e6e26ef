//! What each mode keeps when the pool runs out.

use fdr_runtime::hooks::{enter, exit};
use fdr_runtime::{testing, Mode};
use fdr_testkit::desc;
use fdr_testkit::logs::Rec;
use fdr_testkit::recording::{every_call, record_log};

desc!(CALL, "modes::call");

/// A 256-byte buffer holds the 10-word preamble and 22 function records.
const PER_BUFFER: u64 = 22;

fn calls(n: u64) {
    for _ in 0..n {
        enter(&CALL);
        testing::advance(1);
        exit(&CALL);
        testing::advance(1);
    }
}

#[test]
fn ring_keeps_the_newest_window() {
    let total = 200; // 400 records, far more than 4 buffers hold
    let log = record_log(
        every_call()
            .buffer_size(256)
            .buffer_count(4)
            .mode(Mode::Ring),
        || calls(total),
    );
    let tid = log.tids()[0];
    let recs = log.thread_records(tid);
    // Record k (0-based) lands in buffer k / 22. The last of the 400 records is in buffer 18,
    // so the window is buffers 15 to 18: records 330..400, the newest 70, in order.
    let records = 2 * total;
    let last_buffer = (records - 1) / PER_BUFFER;
    let first_kept = (last_buffer - 3) * PER_BUFFER;
    let id = CALL.id();
    let functions: Vec<&Rec> = recs.iter().filter(|r| !matches!(r, Rec::Cpu(..))).collect();
    assert_eq!(functions.len() as u64, records - first_kept);
    // Each block starts with a NewCPUId holding the full time of its first record, an entry:
    // record k = 22 b is the entry of call 11 b, made at 1000 + 2 * 11 b.
    let firsts: Vec<u64> = recs
        .iter()
        .filter_map(|r| match r {
            Rec::Cpu(_, t) => Some(*t),
            _ => None,
        })
        .collect();
    let expected: Vec<u64> = (last_buffer - 3..=last_buffer)
        .map(|b| 1000 + b * PER_BUFFER)
        .collect();
    assert_eq!(firsts, expected);
    for pair in functions.chunks(2) {
        assert!(matches!(pair, [Rec::Enter(a, _), Rec::Exit(b, 1)] if *a == id && *b == id));
    }
    assert_eq!(log.run.buffers_recycled, last_buffer + 1 - 4);
    assert_eq!(log.run.records_dropped, 0);
}

#[test]
fn fill_stops_when_full_and_counts_the_drops() {
    let total = 200;
    let log = record_log(
        every_call()
            .buffer_size(256)
            .buffer_count(4)
            .mode(Mode::Fill),
        || calls(total),
    );
    let tid = log.tids()[0];
    let recs = log.thread_records(tid);
    let kept = recs.iter().filter(|r| !matches!(r, Rec::Cpu(..))).count() as u64;
    assert_eq!(kept, 4 * PER_BUFFER);
    // The first records are the ones kept: the first block starts at the first call.
    assert_eq!(recs[0], Rec::Cpu(0, 1000));
    assert_eq!(log.run.records_dropped, 2 * total - kept);
    assert_eq!(log.threads[0].records_dropped, 2 * total - kept);
    assert_eq!(log.run.buffers_recycled, 0);
}

#[test]
fn a_thread_that_exits_keeps_its_data() {
    let log = record_log(
        every_call()
            .buffer_size(4096)
            .buffer_count(4)
            .mode(Mode::Ring),
        || {
            std::thread::spawn(|| {
                testing::set_thread_id(9);
                testing::set_time(0);
                calls(3);
            })
            .join()
            .unwrap();
        },
    );
    assert_eq!(log.tids(), vec![9]);
    assert_eq!(log.calls(9).len(), 6);
}
