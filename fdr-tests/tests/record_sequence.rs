//! Exact record sequences, driven by the injected clock. Each scenario runs twice: through the
//! hooks under a recorder, and through the controller alone on a plain buffer (`both_ways`).

use std::time::Duration;

use fdr_runtime::hooks::{enter, exit};
use fdr_runtime::{testing, Config, Mode};
use fdr_testkit::desc;
use fdr_testkit::logs::{decode, Rec};
use fdr_testkit::recording::{both_ways, every_call, record_log, Drive, Hooks};

desc!(OUTER, "seq::outer");
desc!(INNER, "seq::inner");
desc!(LEAF, "seq::leaf");

fn config() -> Config {
    every_call()
        .buffer_size(4096)
        .buffer_count(4)
        .mode(Mode::Fill)
}

#[test]
fn a_plain_call_is_an_entry_and_an_exit() {
    let scenario = |d: &mut dyn Drive| {
        d.advance(10);
        d.enter(&OUTER);
        d.advance(25);
        d.exit(&OUTER);
    };
    let o = OUTER.id();
    let records = both_ways(config(), scenario);
    assert_eq!(
        records,
        vec![Rec::Cpu(0, 1010), Rec::Enter(o, 0), Rec::Exit(o, 25)]
    );
    let log = record_log(config(), || scenario(&mut Hooks));
    let [_tid] = log.tids()[..] else {
        panic!("{:?}", log.tids())
    };
    assert_eq!(log.name(o), Some("seq::outer"));
    assert_eq!(log.header.cycle_frequency, 1_000_000_000);
    assert_eq!(log.blocks[0].pid, 1);
}

#[test]
fn nested_calls_keep_their_order_and_deltas() {
    let records = both_ways(config(), |d| {
        d.enter(&OUTER);
        d.advance(3);
        d.enter(&INNER);
        d.advance(4);
        d.enter(&LEAF);
        d.advance(5);
        d.exit(&LEAF);
        d.advance(6);
        d.exit(&INNER);
        d.advance(7);
        d.exit(&OUTER);
    });
    let (o, i, l) = (OUTER.id(), INNER.id(), LEAF.id());
    assert_eq!(
        records,
        vec![
            Rec::Cpu(0, 1000),
            Rec::Enter(o, 0),
            Rec::Enter(i, 3),
            Rec::Enter(l, 4),
            Rec::Exit(l, 5),
            Rec::Exit(i, 6),
            Rec::Exit(o, 7),
        ]
    );
}

#[test]
fn migration_writes_a_new_cpu_record_and_a_zero_delta() {
    let records = both_ways(config(), |d| {
        d.enter(&OUTER);
        d.advance(100);
        d.set_cpu(3);
        d.enter(&INNER);
        d.advance(50);
        d.exit(&INNER);
        d.set_cpu(1);
        d.advance(1);
        d.exit(&OUTER);
    });
    let (o, i) = (OUTER.id(), INNER.id());
    assert_eq!(
        records,
        vec![
            Rec::Cpu(0, 1000),
            Rec::Enter(o, 0),
            Rec::Cpu(3, 1100),
            Rec::Enter(i, 0),
            Rec::Exit(i, 50),
            Rec::Cpu(1, 1151),
            Rec::Exit(o, 0),
        ]
    );
}

#[test]
fn a_jump_past_32_bits_writes_a_tsc_wrap() {
    let records = both_ways(config(), |d| {
        d.enter(&OUTER);
        d.advance(u64::from(u32::MAX)); // still fits
        d.enter(&INNER);
        d.advance(1 << 32); // does not
        d.exit(&INNER);
        d.advance(2);
        d.exit(&OUTER);
    });
    let (o, i) = (OUTER.id(), INNER.id());
    let t = 1000 + u64::from(u32::MAX);
    assert_eq!(
        records,
        vec![
            Rec::Cpu(0, 1000),
            Rec::Enter(o, 0),
            Rec::Enter(i, u32::MAX),
            Rec::Wrap(t + (1 << 32)),
            Rec::Exit(i, 0),
            Rec::Exit(o, 2),
        ]
    );
}

#[test]
fn tail_exits_are_recorded_before_the_tail_call() {
    let records = both_ways(config(), |d| {
        d.enter(&OUTER);
        d.advance(2);
        d.tail(&OUTER);
        d.enter(&LEAF);
        d.advance(9);
        d.exit(&LEAF);
    });
    let (o, l) = (OUTER.id(), LEAF.id());
    assert_eq!(
        records,
        vec![
            Rec::Cpu(0, 1000),
            Rec::Enter(o, 0),
            Rec::Tail(o, 2),
            Rec::Enter(l, 0),
            Rec::Exit(l, 9),
        ]
    );
}

#[test]
fn arguments_follow_their_entry() {
    let records = both_ways(config(), |d| {
        d.advance(1);
        d.enter_args(&OUTER, &[7, u64::MAX]);
        d.advance(4);
        d.exit(&OUTER);
    });
    let o = OUTER.id();
    assert_eq!(
        records,
        vec![
            Rec::Cpu(0, 1001),
            Rec::EnterArgs(o, 0),
            Rec::Arg(7),
            Rec::Arg(u64::MAX),
            Rec::Exit(o, 4),
        ]
    );
}

#[test]
fn calls_with_arguments_are_never_erased() {
    let records = both_ways(config().threshold(Duration::from_secs(1)), |d| {
        d.enter_args(&OUTER, &[1]);
        d.advance(1);
        d.exit(&OUTER);
        d.enter(&INNER);
        d.advance(1);
        d.exit(&INNER);
    });
    let o = OUTER.id();
    assert_eq!(
        records,
        vec![
            Rec::Cpu(0, 1000),
            Rec::EnterArgs(o, 0),
            Rec::Arg(1),
            Rec::Exit(o, 1)
        ]
    );
}

#[test]
fn short_calls_are_erased_and_long_ones_kept() {
    let records = both_ways(config().threshold(Duration::from_nanos(10)), |d| {
        d.enter(&OUTER);
        d.advance(1);
        d.enter(&INNER); // 9 ticks: erased
        d.advance(9);
        d.exit(&INNER);
        d.advance(1);
        d.enter(&LEAF); // 10 ticks: kept
        d.advance(10);
        d.exit(&LEAF);
        d.advance(1);
        d.exit(&OUTER);
    });
    let (o, l) = (OUTER.id(), LEAF.id());
    // The erased call's time stays in the next delta: the leaf starts 11 ticks after outer.
    assert_eq!(
        records,
        vec![
            Rec::Cpu(0, 1000),
            Rec::Enter(o, 0),
            Rec::Enter(l, 11),
            Rec::Exit(l, 10),
            Rec::Exit(o, 1),
        ]
    );
}

#[test]
fn rewinding_repeats_up_the_stack_and_through_tail_pairs() {
    let records = both_ways(config().threshold(Duration::from_nanos(100)), |d| {
        d.enter(&OUTER);
        d.advance(1);
        d.tail(&OUTER); // outer tail-calls inner
        d.enter(&INNER);
        d.advance(1);
        d.enter(&LEAF);
        d.advance(1);
        d.exit(&LEAF); // erased
        d.exit(&INNER); // erased, and with it the outer pair
    });
    assert_eq!(records, vec![Rec::Cpu(0, 1000)]);
}

#[test]
fn a_long_tail_pair_pins_itself() {
    let records = both_ways(config().threshold(Duration::from_nanos(100)), |d| {
        d.enter(&OUTER);
        d.advance(200);
        d.tail(&OUTER);
        d.enter(&INNER);
        d.advance(1);
        d.exit(&INNER); // erased; the pair from 200 ticks ago stays
    });
    let o = OUTER.id();
    assert_eq!(
        records,
        vec![Rec::Cpu(0, 1000), Rec::Enter(o, 0), Rec::Tail(o, 200)]
    );
}

#[test]
fn a_handler_that_interrupts_a_record_records_nothing() {
    fn handler() {
        // Runs inside the clock read of the interrupted record, as a signal handler could.
        enter(&LEAF);
        exit(&LEAF);
    }
    let log = record_log(config(), || {
        enter(&OUTER);
        testing::on_clock_read(Some(handler));
        testing::advance(5);
        enter(&INNER);
        exit(&INNER);
        testing::on_clock_read(None);
        exit(&OUTER);
    });
    let (o, i) = (OUTER.id(), INNER.id());
    assert_eq!(
        log.thread_records(log.tids()[0]),
        vec![
            Rec::Cpu(0, 1000),
            Rec::Enter(o, 0),
            Rec::Enter(i, 5),
            Rec::Exit(i, 0),
            Rec::Exit(o, 0),
        ]
    );
}

#[test]
fn every_thread_gets_its_own_blocks_and_keeps_them_after_exiting() {
    let log = record_log(config(), || {
        enter(&OUTER);
        std::thread::spawn(|| {
            testing::set_thread_id(77);
            testing::set_time(5);
            enter(&INNER);
            testing::advance(1);
            exit(&INNER);
        })
        .join()
        .unwrap();
        exit(&OUTER);
    });
    let i = INNER.id();
    assert_eq!(
        log.thread_records(77),
        vec![Rec::Cpu(0, 5), Rec::Enter(i, 0), Rec::Exit(i, 1)]
    );
    let names: Vec<i32> = log.threads.iter().map(|t| t.tid).collect();
    assert!(names.contains(&77), "{names:?}");
}

#[test]
fn a_full_buffer_continues_in_a_new_block_that_starts_with_the_cpu_and_time() {
    // 256 bytes: a 10-word preamble and 22 records per block.
    let records = both_ways(config().buffer_size(256).buffer_count(8), |d| {
        for _ in 0..12 {
            d.enter(&LEAF);
            d.advance(1);
            d.exit(&LEAF);
            d.advance(1);
        }
    });
    let l = LEAF.id();
    let mut expected = vec![Rec::Cpu(0, 1000), Rec::Enter(l, 0)];
    for k in 0..11 {
        expected.push(Rec::Exit(l, 1));
        if k < 10 {
            expected.push(Rec::Enter(l, 1));
        }
    }
    // Record 22 is the entry of call 11, at 1000 + 2 * 11, first of the second block.
    expected.extend([Rec::Cpu(0, 1022), Rec::Enter(l, 0), Rec::Exit(l, 1)]);
    assert_eq!(records, expected);
}

/// A guard's exit follows its entry: a call entered while nothing recorded records no exit, even
/// when a recorder starts during it and is still running when the call returns (before, the log
/// got an exit without its entry).
#[test]
fn a_call_entered_before_the_recorder_started_records_no_exit() {
    use fdr_runtime::CallGuard;
    let turn = testing::exclusive();
    // Settle `FDR_OPTIONS` (unset here) so that nothing records when the outer call begins.
    drop(CallGuard::enter(&LEAF));
    testing::use_mock_clock(1_000_000_000);
    testing::set_time(1_000);
    testing::set_cpu(0);
    let outer = CallGuard::enter(&OUTER);
    testing::advance(10);
    let rec = fdr_runtime::start(config()).expect("start");
    testing::advance(10);
    let inner = CallGuard::enter(&INNER);
    testing::advance(5);
    drop(inner);
    testing::advance(5);
    drop(outer);
    let mut bytes = Vec::new();
    rec.finish_to(&mut bytes).expect("finish");
    testing::use_real_clock();
    drop(turn);
    let log = decode(&bytes[..]).expect("decode");
    let i = INNER.id();
    assert_eq!(
        log.thread_records(log.tids()[0]),
        vec![Rec::Cpu(0, 1020), Rec::Enter(i, 0), Rec::Exit(i, 5)]
    );
}
