//! Rewind against a reference model: random call trees with random durations and thresholds.
//! The model works on a plain list of (kind, function, absolute time) with the erase rules
//! spelled out; the runtime's records, decoded back to absolute time, must equal it.

use std::time::Duration;

use fdr_format::FnKind;
use fdr_runtime::hooks::{enter, enter_args, exit, tail_exit};
use fdr_runtime::{Config, FnDesc, Mode};
use fdr_tests::{desc, record_log, testing, Rec};
use proptest::prelude::*;

desc!(F0, "model::f0");
desc!(F1, "model::f1");
desc!(F2, "model::f2");
desc!(F3, "model::f3");

fn function(i: usize) -> &'static FnDesc {
    [&F0, &F1, &F2, &F3][i]
}

#[derive(Clone, Debug)]
enum How {
    Plain,
    Args,
    Tail,
}

#[derive(Clone, Debug)]
struct Node {
    f: usize,
    how: How,
    pre: u64,
    gaps: Vec<u64>,
    children: Vec<Node>,
}

fn tree() -> impl Strategy<Value = Node> {
    let leaf = (0..4usize, 0..40u64).prop_map(|(f, pre)| Node {
        f,
        how: How::Plain,
        pre,
        gaps: vec![],
        children: vec![],
    });
    leaf.prop_recursive(5, 40, 4, |inner| {
        (
            0..4usize,
            prop_oneof![6 => Just(How::Plain), 1 => Just(How::Args), 2 => Just(How::Tail)],
            0..40u64,
            prop::collection::vec((inner, 0..40u64), 0..4),
        )
            .prop_map(|(f, how, pre, kids)| {
                let (children, gaps) = kids.into_iter().unzip();
                Node {
                    f,
                    how,
                    pre,
                    gaps,
                    children,
                }
            })
    })
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Event {
    kind: FnKind,
    f: usize,
    t: u64,
}

/// The hook calls a run of `node` makes, with their times.
fn events(node: &Node, t: &mut u64, out: &mut Vec<Event>) {
    let entry = if matches!(node.how, How::Args) {
        FnKind::EnterArgs
    } else {
        FnKind::Enter
    };
    out.push(Event {
        kind: entry,
        f: node.f,
        t: *t,
    });
    *t += node.pre;
    let tail = matches!(node.how, How::Tail) && !node.children.is_empty();
    for (i, (child, gap)) in node.children.iter().zip(&node.gaps).enumerate() {
        if tail && i + 1 == node.children.len() {
            out.push(Event {
                kind: FnKind::TailExit,
                f: node.f,
                t: *t,
            });
            events(child, t, out);
            return;
        }
        events(child, t, out);
        *t += gap;
    }
    out.push(Event {
        kind: FnKind::Exit,
        f: node.f,
        t: *t,
    });
}

/// The reference: what survives, as (kind, function, time).
fn model(events: &[Event], threshold: u64) -> Vec<Event> {
    let mut out: Vec<Event> = Vec::new();
    let mut enters = 0;
    let mut tails = 0;
    for &e in events {
        match e.kind {
            FnKind::Enter => {
                out.push(e);
                enters += 1;
            }
            FnKind::EnterArgs => {
                out.push(e);
                enters = 0;
                tails = 0;
            }
            FnKind::TailExit => {
                out.push(e);
                tails = if enters > 0 { tails + 1 } else { 0 };
                enters = 0;
            }
            FnKind::Exit => {
                let last = out.last().copied();
                let erasable = enters > 0
                    && matches!(last, Some(l) if l.kind == FnKind::Enter && l.f == e.f
                        && e.t - l.t < threshold);
                if !erasable {
                    out.push(e);
                    enters = 0;
                    tails = 0;
                    continue;
                }
                out.pop();
                enters -= 1;
                if enters == 0 {
                    while tails > 0 {
                        let n = out.len();
                        let pair = n >= 2
                            && out[n - 1].kind == FnKind::TailExit
                            && out[n - 2].kind == FnKind::Enter
                            && out[n - 1].f == out[n - 2].f;
                        if pair && e.t - out[n - 2].t < threshold {
                            out.truncate(n - 2);
                            tails -= 1;
                        } else {
                            tails = 0;
                        }
                    }
                }
            }
        }
    }
    out
}

/// The runtime's records for thread `tid`, back in absolute time.
fn absolute(records: &[Rec]) -> Vec<Event> {
    let ids: Vec<u32> = (0..4).map(|i| function(i).id()).collect();
    let f = |id: u32| ids.iter().position(|&x| x == id).expect("known id");
    let mut t = 0u64;
    let mut out = Vec::new();
    for r in records {
        let (kind, id, d) = match *r {
            Rec::Cpu(_, tsc) | Rec::Wrap(tsc) => {
                t = tsc;
                continue;
            }
            Rec::Arg(_) => continue,
            Rec::Enter(id, d) => (FnKind::Enter, id, d),
            Rec::EnterArgs(id, d) => (FnKind::EnterArgs, id, d),
            Rec::Exit(id, d) => (FnKind::Exit, id, d),
            Rec::Tail(id, d) => (FnKind::TailExit, id, d),
            Rec::Other(ref s) => panic!("unexpected record {s}"),
        };
        t += u64::from(d);
        out.push(Event { kind, f: f(id), t });
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn rewind_matches_the_model(root in tree(), threshold in 0..80u64) {
        let mut trace = Vec::new();
        let mut t = 1000;
        events(&root, &mut t, &mut trace);
        let config = Config::default()
            .buffer_size(1 << 20)
            .buffer_count(2)
            .mode(Mode::Fill)
            .threshold(Duration::from_nanos(threshold));
        let log = record_log(config, || {
            for e in &trace {
                testing::set_time(e.t);
                let d = function(e.f);
                match e.kind {
                    FnKind::Enter => enter(d),
                    FnKind::EnterArgs => enter_args(d, &[e.t]),
                    FnKind::Exit => exit(d),
                    FnKind::TailExit => tail_exit(d),
                }
            }
        });
        let got = log.tids().first().map(|&tid| absolute(&log.thread_records(tid))).unwrap_or_default();
        prop_assert_eq!(got, model(&trace, threshold));
    }
}

#[test]
fn the_model_erases_what_the_rules_say() {
    // A guard against a model that keeps or erases everything: one short call inside a long one.
    let e = |kind, f, t| Event { kind, f, t };
    let trace = [
        e(FnKind::Enter, 0, 0),
        e(FnKind::Enter, 1, 10),
        e(FnKind::Exit, 1, 12),
        e(FnKind::Exit, 0, 100),
    ];
    assert_eq!(model(&trace, 5), vec![trace[0], trace[3]]);
    assert_eq!(model(&trace, 0), trace.to_vec());
}
