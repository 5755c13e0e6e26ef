//! Slow-call triggers fire from spans as from `#[instrument_fdr]` calls, by the configuration's
//! patterns, whether the span's callsite was first used before the recorder started or after,
//! while other threads keep recording spans; snapshots taken while threads record spans are
//! whole. Through the layer (and, for snapshots, the layer that skips spans it would not
//! record) and through the standalone subscriber.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use fdr_format::Reason;
use fdr_runtime::testing;
use fdr_testkit::logs::{decode, read_log, scratch, wait_for_logs, Rec};
use fdr_testkit::recording::every_call;
use tracing::{info_span, Dispatch};
use tracing_subscriber::layer::SubscriberExt;

/// The layer on a registry, or the standalone subscriber.
fn dispatch(subscriber: bool) -> Dispatch {
    match subscriber {
        false => Dispatch::new(tracing_subscriber::registry().with(fdr_tracing::layer())),
        true => Dispatch::new(fdr_tracing::subscriber()),
    }
}

/// A span that lasts `d`, from a callsite of its own for each case (every `info_span!` is a
/// callsite of its own, and a callsite is named once).
fn slow_span(d: &Dispatch, before: bool, subscriber: bool, sleep: Duration) {
    tracing::dispatcher::with_default(d, || {
        let _s = match (before, subscriber) {
            (true, false) => info_span!("slow_before").entered(),
            (false, false) => info_span!("slow_after").entered(),
            (true, true) => info_span!("slow_sub_before").entered(),
            (false, true) => info_span!("slow_sub_after").entered(),
        };
        std::thread::sleep(sleep);
    });
}

/// Threads that enter and exit spans until dropped.
struct Beside(Arc<AtomicBool>, Vec<std::thread::JoinHandle<()>>);

impl Beside {
    fn start(d: &Dispatch) -> Beside {
        let stop = Arc::new(AtomicBool::new(false));
        let handles = (0..2)
            .map(|_| {
                let (stop, d) = (Arc::clone(&stop), d.clone());
                std::thread::spawn(move || {
                    tracing::dispatcher::with_default(&d, || {
                        while !stop.load(Ordering::Relaxed) {
                            let _s = info_span!("beside").entered();
                        }
                    })
                })
            })
            .collect();
        Beside(stop, handles)
    }
}

impl Drop for Beside {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
        for h in self.1.drain(..) {
            let _ = h.join();
        }
    }
}

fn fires(before: bool, subscriber: bool) {
    let _turn = testing::exclusive();
    let d = dispatch(subscriber);
    let span = match (before, subscriber) {
        (true, false) => "slow_before",
        (false, false) => "slow_after",
        (true, true) => "slow_sub_before",
        (false, true) => "slow_sub_after",
    };
    if before {
        // The callsite's first span comes before the recorder: it is named already at start.
        slow_span(&d, true, subscriber, Duration::ZERO);
    }
    let dir = scratch(span);
    let rec = fdr_runtime::start(
        every_call()
            .trigger("triggers::slow_*", Duration::from_millis(20))
            .out(dir.join("app.fdr")),
    )
    .unwrap();
    let beside = Beside::start(&d);
    slow_span(&d, before, subscriber, Duration::from_millis(60));
    let files = wait_for_logs(&dir, 1);
    drop(beside);
    rec.finish_to(&mut std::io::sink()).unwrap();
    assert!(!files.is_empty(), "no snapshot for {span}");
    let log = read_log(&files[0]);
    let reason = log.reason.clone().expect("a reason record");
    assert_eq!(reason.reason, Reason::SlowCall);
    let name = log
        .functions
        .iter()
        .find(|f| f.id == reason.function)
        .map(|f| f.name.as_str());
    assert_eq!(name, Some(format!("triggers::{span}").as_str()));
    assert!(reason.duration_ticks as f64 / log.header.cycle_frequency as f64 >= 0.06);
    // The spans beside it are in the window, on other threads.
    assert!(log.functions.iter().any(|f| f.name == "triggers::beside"));
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_slow_span_fires_the_trigger_its_pattern_names_when_first_used_after_start() {
    fires(false, false);
}

#[test]
fn a_slow_span_fires_the_trigger_its_pattern_names_when_first_used_before_start() {
    fires(true, false);
}

#[test]
fn a_slow_span_of_the_subscriber_fires_when_first_used_after_start() {
    fires(false, true);
}

#[test]
fn a_slow_span_of_the_subscriber_fires_when_first_used_before_start() {
    fires(true, true);
}

/// Each thread's calls in a window: exits of calls entered before the window starts are
/// skipped; after that every exit closes the innermost call, and each `outer` holds exactly
/// one `inner`.
fn check_window(bytes: &[u8]) -> usize {
    let log = decode(bytes).expect("a snapshot decodes");
    let name = |id| {
        log.name(id)
            .unwrap_or("?")
            .rsplit("::")
            .next()
            .unwrap()
            .to_string()
    };
    let mut pairs = 0;
    for tid in log.tids() {
        let mut stack: Vec<(String, usize)> = Vec::new();
        for r in log.thread_records(tid) {
            match r {
                Rec::Enter(id, _) | Rec::EnterArgs(id, _) => {
                    if let Some(top) = stack.last_mut() {
                        top.1 += 1;
                    }
                    stack.push((name(id), 0));
                }
                Rec::Exit(id, _) => {
                    let Some((top, inner)) = stack.pop() else {
                        continue;
                    };
                    assert_eq!(
                        top,
                        name(id),
                        "thread {tid}: an exit that is not the innermost"
                    );
                    if top == "outer" {
                        assert_eq!(
                            inner, 1,
                            "thread {tid}: an outer span without its inner one"
                        );
                        pairs += 1;
                    }
                }
                _ => {}
            }
        }
    }
    pairs
}

fn snapshots_are_whole(d: Dispatch) {
    let _turn = testing::exclusive();
    let rec = fdr_runtime::start(every_call()).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let threads: Vec<_> = (0..2)
        .map(|_| {
            let (stop, done, d) = (Arc::clone(&stop), Arc::clone(&done), d.clone());
            std::thread::spawn(move || {
                // Threads that start and end while snapshots are taken.
                while !stop.load(Ordering::Relaxed) {
                    let d = d.clone();
                    std::thread::spawn(move || {
                        tracing::dispatcher::with_default(&d, || {
                            for _ in 0..200 {
                                let _o = info_span!("outer").entered();
                                let _i = info_span!("inner").entered();
                            }
                        })
                    })
                    .join()
                    .unwrap();
                    done.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    // The snapshots begin once threads record: on a loaded machine the spawners could otherwise
    // not have run at all before the last snapshot, and no window would hold a span.
    while done.load(Ordering::Relaxed) == 0 {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    let mut pairs = 0;
    for _ in 0..50 {
        let mut out = Vec::new();
        rec.snapshot(&mut out).unwrap();
        pairs += check_window(&out);
    }
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        t.join().unwrap();
    }
    let mut out = Vec::new();
    rec.finish_to(&mut out).unwrap();
    pairs += check_window(&out);
    assert!(pairs > 0, "no span recorded in any window");
}

#[test]
fn snapshots_while_threads_record_spans_through_the_layer_are_whole() {
    snapshots_are_whole(dispatch(false));
}

#[test]
fn snapshots_while_threads_record_spans_through_the_skipping_layer_are_whole() {
    let layer = fdr_tracing::layer().with_skip_unrecorded(true);
    snapshots_are_whole(Dispatch::new(tracing_subscriber::registry().with(layer)));
}

#[test]
fn snapshots_while_threads_record_spans_through_the_subscriber_are_whole() {
    snapshots_are_whole(dispatch(true));
}
