//! Exact record sequences, driven by the injected clock.

use std::time::Duration;

use fdr_runtime::hooks::{enter, enter_args, exit, tail_exit};
use fdr_runtime::{CallGuard, Config, Mode};
use fdr_tests::{desc, record_log, testing, Rec};

desc!(OUTER, "seq::outer");
desc!(INNER, "seq::inner");
desc!(LEAF, "seq::leaf");

fn config() -> Config {
    Config::default()
        .buffer_size(4096)
        .buffer_count(4)
        .mode(Mode::Fill)
}

#[test]
fn a_plain_call_is_an_entry_and_an_exit() {
    let log = record_log(config(), || {
        testing::advance(10);
        enter(&OUTER);
        testing::advance(25);
        exit(&OUTER);
    });
    let [tid] = log.tids()[..] else {
        panic!("{:?}", log.tids())
    };
    let o = OUTER.id();
    assert_eq!(
        log.thread_records(tid),
        vec![Rec::Cpu(0, 1010), Rec::Enter(o, 0), Rec::Exit(o, 25)]
    );
    assert_eq!(log.name(o), Some("seq::outer"));
    assert_eq!(log.header.cycle_frequency, 1_000_000_000);
    assert_eq!(log.blocks[0].pid, 1);
}

#[test]
fn nested_calls_keep_their_order_and_deltas() {
    let log = record_log(config(), || {
        let _o = CallGuard::enter(&OUTER);
        testing::advance(3);
        {
            let _i = CallGuard::enter(&INNER);
            testing::advance(4);
            {
                let _l = CallGuard::enter(&LEAF);
                testing::advance(5);
            }
            testing::advance(6);
        }
        testing::advance(7);
    });
    let (o, i, l) = (OUTER.id(), INNER.id(), LEAF.id());
    assert_eq!(
        log.thread_records(log.tids()[0]),
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
    let log = record_log(config(), || {
        enter(&OUTER);
        testing::advance(100);
        testing::set_cpu(3);
        enter(&INNER);
        testing::advance(50);
        exit(&INNER);
        testing::set_cpu(1);
        testing::advance(1);
        exit(&OUTER);
    });
    let (o, i) = (OUTER.id(), INNER.id());
    assert_eq!(
        log.thread_records(log.tids()[0]),
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
    let log = record_log(config(), || {
        enter(&OUTER);
        testing::advance(u64::from(u32::MAX)); // still fits
        enter(&INNER);
        testing::advance(1 << 32); // does not
        exit(&INNER);
        testing::advance(2);
        exit(&OUTER);
    });
    let (o, i) = (OUTER.id(), INNER.id());
    let t = 1000 + u64::from(u32::MAX);
    assert_eq!(
        log.thread_records(log.tids()[0]),
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
    let log = record_log(config(), || {
        enter(&OUTER);
        testing::advance(2);
        tail_exit(&OUTER);
        enter(&LEAF);
        testing::advance(9);
        exit(&LEAF);
    });
    let (o, l) = (OUTER.id(), LEAF.id());
    assert_eq!(
        log.thread_records(log.tids()[0]),
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
    let log = record_log(config(), || {
        testing::advance(1);
        enter_args(&OUTER, &[7, u64::MAX]);
        testing::advance(4);
        exit(&OUTER);
    });
    let o = OUTER.id();
    assert_eq!(
        log.thread_records(log.tids()[0]),
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
    let log = record_log(config().threshold(Duration::from_secs(1)), || {
        enter_args(&OUTER, &[1]);
        testing::advance(1);
        exit(&OUTER);
        enter(&INNER);
        testing::advance(1);
        exit(&INNER);
    });
    let o = OUTER.id();
    assert_eq!(
        log.thread_records(log.tids()[0]),
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
    let log = record_log(config().threshold(Duration::from_nanos(10)), || {
        enter(&OUTER);
        testing::advance(1);
        enter(&INNER); // 9 ticks: erased
        testing::advance(9);
        exit(&INNER);
        testing::advance(1);
        enter(&LEAF); // 10 ticks: kept
        testing::advance(10);
        exit(&LEAF);
        testing::advance(1);
        exit(&OUTER);
    });
    let (o, l) = (OUTER.id(), LEAF.id());
    // The erased call's time stays in the next delta: the leaf starts 11 ticks after outer.
    assert_eq!(
        log.thread_records(log.tids()[0]),
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
    let log = record_log(config().threshold(Duration::from_nanos(100)), || {
        enter(&OUTER);
        testing::advance(1);
        tail_exit(&OUTER); // outer tail-calls inner
        enter(&INNER);
        testing::advance(1);
        enter(&LEAF);
        testing::advance(1);
        exit(&LEAF); // erased
        exit(&INNER); // erased, and with it the outer pair
    });
    assert_eq!(log.thread_records(log.tids()[0]), vec![Rec::Cpu(0, 1000)]);
}

#[test]
fn a_long_tail_pair_pins_itself() {
    let log = record_log(config().threshold(Duration::from_nanos(100)), || {
        enter(&OUTER);
        testing::advance(200);
        tail_exit(&OUTER);
        enter(&INNER);
        testing::advance(1);
        exit(&INNER); // erased; the pair from 200 ticks ago stays
    });
    let o = OUTER.id();
    assert_eq!(
        log.thread_records(log.tids()[0]),
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
