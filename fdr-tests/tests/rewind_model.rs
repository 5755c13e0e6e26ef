//! Rewind against a reference model: random call trees with random durations and thresholds.
//!
//! The model works on the call tree, not on a record stream, and knows nothing of the runtime's
//! counters. It states seed 000's rules (XRay's flight recorder) as properties of a call:
//!
//! - A call is erased when it lasted less than the threshold, had no logged arguments, and every
//!   call inside it was erased.
//! - A function that left through a tail call is erased together with the chain it started
//!   when everything it did before the tail call was erased, the tail-called function was erased
//!   and the whole chain, from its entry to the exit that ended the chain, lasted less than the
//!   threshold.
//! - A call that contains a tail chain (before its own tail call, if it makes one) is kept: XRay
//!   counts the entries a rewind may still erase, resets that count when it writes a tail exit,
//!   and erasing the chain does not bring it back, so the calls around the chain stay.
//!
//! The runtime's records, decoded back to absolute time, must equal what the model keeps.

use std::time::Duration;

use fdr_format::FnKind;
use fdr_runtime::hooks::{enter, enter_args, exit, tail_exit};
use fdr_runtime::{testing, Config, FnDesc, Mode};
use fdr_testkit::desc;
use fdr_testkit::logs::Rec;
use fdr_testkit::recording::record_log;
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

/// What the model keeps of a call (with its chain), and whether it was erased whole.
struct Kept {
    events: Vec<Event>,
    erased: bool,
    /// The time of the exit that ended the call, or its chain.
    end: u64,
}

/// True for a call that leaves through a tail call.
fn is_tail(node: &Node) -> bool {
    matches!(node.how, How::Tail) && !node.children.is_empty()
}

/// The reference: what survives of `node` entered at `start`, by the rules above.
fn model(node: &Node, start: u64, threshold: u64) -> Kept {
    let args = matches!(node.how, How::Args);
    let entry = Event {
        kind: if args {
            FnKind::EnterArgs
        } else {
            FnKind::Enter
        },
        f: node.f,
        t: start,
    };
    let mut t = start + node.pre;
    let tail = is_tail(node);
    let before_tail = node.children.len() - usize::from(tail);
    let mut inside = Vec::new();
    let mut all_erased = true;
    let mut holds_a_chain = false;
    for (child, gap) in node.children[..before_tail].iter().zip(&node.gaps) {
        let k = model(child, t, threshold);
        all_erased &= k.erased;
        holds_a_chain |= is_tail(child);
        inside.extend(k.events);
        t = k.end + gap;
    }
    let short = |end: u64| end - start < threshold;
    if tail {
        let exit = Event {
            kind: FnKind::TailExit,
            f: node.f,
            t,
        };
        let chain = model(&node.children[before_tail], t, threshold);
        let erased = !args && all_erased && !holds_a_chain && chain.erased && short(chain.end);
        let mut events = Vec::new();
        if !erased {
            events.push(entry);
            events.extend(inside);
            events.push(exit);
            events.extend(chain.events);
        }
        return Kept {
            events,
            erased,
            end: chain.end,
        };
    }
    let exit = Event {
        kind: FnKind::Exit,
        f: node.f,
        t,
    };
    let erased = !args && all_erased && !holds_a_chain && short(t);
    let mut events = Vec::new();
    if !erased {
        events.push(entry);
        events.extend(inside);
        events.push(exit);
    }
    Kept {
        events,
        erased,
        end: t,
    }
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
            Rec::Task(..)
            | Rec::Polled(..)
            | Rec::Cull(..)
            | Rec::Link(..)
            | Rec::Await(..)
            | Rec::Woken(..) => {
                panic!("no tasks or culling here")
            }
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
        prop_assert_eq!(got, model(&root, 1000, threshold).events);
    }
}

#[test]
fn the_model_erases_what_the_rules_say() {
    // A guard against a model that keeps or erases everything: one short call inside a long
    // one, then a long one that tail-calls a short one.
    let leaf = |f, pre| Node {
        f,
        how: How::Plain,
        pre,
        gaps: vec![],
        children: vec![],
    };
    let root = Node {
        f: 0,
        how: How::Plain,
        pre: 10,
        gaps: vec![88],
        children: vec![leaf(1, 2)],
    };
    let e = |kind, f, t| Event { kind, f, t };
    assert_eq!(
        model(&root, 0, 5).events,
        vec![e(FnKind::Enter, 0, 0), e(FnKind::Exit, 0, 100)]
    );
    assert_eq!(model(&root, 0, 0).events.len(), 4);
    let chain = Node {
        f: 2,
        how: How::Tail,
        pre: 1,
        gaps: vec![0],
        children: vec![leaf(3, 1)],
    };
    assert!(model(&chain, 0, 3).erased);
    assert_eq!(
        model(&chain, 0, 2).events,
        vec![e(FnKind::Enter, 2, 0), e(FnKind::TailExit, 2, 1)]
    );
    // The call around an erased chain stays.
    let around = Node {
        f: 0,
        how: How::Plain,
        pre: 0,
        gaps: vec![0],
        children: vec![chain],
    };
    assert_eq!(model(&around, 0, 100).events.len(), 2);
}
