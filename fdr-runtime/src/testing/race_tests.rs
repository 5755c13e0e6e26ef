//! Recording and snapshotting at once, and a hook re-entered in the middle of a record, small
//! enough for Miri: its data-race detector checks the protocol between writers and snapshots
//! (relaxed word stores, published lengths, rewind counters, generations), and its aliasing model
//! checks that a re-entered hook makes no second `&mut` to the thread's state. Run with
//! `cargo +nightly miri test -p fdr-runtime --features testing`.

use std::time::Duration;

use fdr_format::reader::{Reader, Record};
use fdr_format::FnKind;

use crate::hooks::{enter, exit};
use crate::tables::functions::FnDesc;
use crate::{testing, Config, FnKindTag, Mode};

#[linkme::distributed_slice(crate::FUNCTIONS)]
#[linkme(crate = linkme)]
static OUTER: FnDesc = FnDesc::new("race::outer", file!(), line!(), FnKindTag::Function, &[]);
#[linkme::distributed_slice(crate::FUNCTIONS)]
#[linkme(crate = linkme)]
static LEAF: FnDesc = FnDesc::new("race::leaf", file!(), line!(), FnKindTag::Function, &[]);

/// Function records of a log, per block, as (kind, id), with each block's thread id.
fn blocks(log: &[u8]) -> Vec<(i32, Vec<(FnKind, u32)>)> {
    let mut r = Reader::new(log).expect("header");
    let mut out: Vec<(i32, Vec<(FnKind, u32)>)> = Vec::new();
    let mut first = true;
    while let Some((_, rec)) = r.next_record().expect("record") {
        match rec {
            Record::NewBuffer { tid } => {
                if !first {
                    out.push((tid, Vec::new()));
                }
                first = false;
            }
            Record::Function { id, kind, .. } => out.last_mut().expect("block").1.push((kind, id)),
            _ => {}
        }
    }
    out
}

/// Checks a log's invariants: per thread, every exit closes the innermost open call (or one
/// opened before the window), and an erased leaf survives only at a block's edges: its entry as
/// a block's last record (its exit then lands in the next block), its exit as a block's first.
fn check(log: &[u8]) -> usize {
    let blocks = blocks(log);
    let mut stacks: std::collections::HashMap<i32, Vec<u32>> = Default::default();
    for (tid, recs) in &blocks {
        let stack = stacks.entry(*tid).or_default();
        for (i, &(kind, id)) in recs.iter().enumerate() {
            if id == LEAF.id() {
                let edge = (kind == FnKind::Enter && i + 1 == recs.len())
                    || (kind == FnKind::Exit && i == 0);
                assert!(
                    edge,
                    "thread {tid}: a short leaf kept inside a block: {recs:?}"
                );
            }
            match kind {
                FnKind::Enter => stack.push(id),
                FnKind::Exit => {
                    if let Some(top) = stack.pop() {
                        assert_eq!(top, id, "thread {tid}: {recs:?}");
                    }
                }
                other => panic!("unexpected {other:?}"),
            }
        }
    }
    blocks.len()
}

#[test]
fn snapshots_race_writers_and_rewinds_without_data_races() {
    let _turn = testing::exclusive();
    testing::use_mock_clock(1_000_000_000);
    let iterations = if cfg!(miri) { 60 } else { 20_000 };
    let rec = crate::start(
        Config::default()
            .buffer_size(256)
            .buffer_count(6)
            .threshold(Duration::from_nanos(5))
            .mode(Mode::Ring),
    )
    .unwrap();
    let workers: Vec<_> = (0..2)
        .map(|t| {
            std::thread::spawn(move || {
                testing::set_thread_id(10 + t);
                for _ in 0..iterations {
                    enter(&OUTER);
                    testing::advance(10);
                    enter(&LEAF);
                    testing::advance(1); // erased: shorter than the threshold
                    exit(&LEAF);
                    testing::advance(10);
                    exit(&OUTER);
                }
            })
        })
        .collect();
    for _ in 0..3 {
        let mut log = Vec::new();
        rec.snapshot(&mut log).unwrap();
        check(&log);
    }
    for w in workers {
        w.join().unwrap();
    }
    let mut log = Vec::new();
    rec.finish_to(&mut log).unwrap();
    assert!(check(&log) > 0);
    testing::use_real_clock();
}

#[test]
fn a_hook_reentered_inside_a_record_records_nothing_and_aliases_nothing() {
    fn handler() {
        // Runs inside the clock read of the interrupted record, as a signal handler could.
        enter(&LEAF);
        exit(&LEAF);
    }
    let _turn = testing::exclusive();
    testing::use_mock_clock(1_000_000_000);
    testing::set_time(100);
    let rec = crate::start(
        Config::default()
            .threshold(Duration::ZERO)
            .buffer_size(256)
            .buffer_count(2)
            .mode(Mode::Fill),
    )
    .unwrap();
    enter(&OUTER);
    testing::on_clock_read(Some(handler));
    testing::advance(5);
    enter(&OUTER);
    exit(&OUTER);
    testing::on_clock_read(None);
    exit(&OUTER);
    let mut log = Vec::new();
    rec.finish_to(&mut log).unwrap();
    testing::use_real_clock();
    let blocks = blocks(&log);
    let o = OUTER.id();
    assert_eq!(
        blocks[0].1,
        vec![
            (FnKind::Enter, o),
            (FnKind::Enter, o),
            (FnKind::Exit, o),
            (FnKind::Exit, o)
        ]
    );
}
