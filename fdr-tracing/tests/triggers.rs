//! Slow-call triggers fire from spans as from `#[instrument_fdr]` calls, by the configuration's
//! patterns, whether the span's callsite was first used before the recorder started or after,
//! while other threads keep recording spans.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use fdr_format::Reason;
use fdr_tests::{every_call, read_log, scratch, testing, wait_for_logs};
use tracing::{info_span, Dispatch};
use tracing_subscriber::layer::SubscriberExt;

fn dispatch() -> Dispatch {
    Dispatch::new(tracing_subscriber::registry().with(fdr_tracing::layer()))
}

/// A span that lasts `d`, from the callsite `slow_before` or `slow_after` (one callsite each:
/// every `info_span!` is a callsite of its own).
fn slow_span(d: &Dispatch, before: bool, sleep: Duration) {
    tracing::dispatcher::with_default(d, || {
        if before {
            let _s = info_span!("slow_before").entered();
            std::thread::sleep(sleep);
        } else {
            let _s = info_span!("slow_after").entered();
            std::thread::sleep(sleep);
        }
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

fn fires(before: bool) {
    let _turn = testing::exclusive();
    let d = dispatch();
    let span = if before { "slow_before" } else { "slow_after" };
    if before {
        // The callsite's first span comes before the recorder: it is named already at start.
        slow_span(&d, true, Duration::ZERO);
    }
    let dir = scratch(span);
    let rec = fdr_runtime::start(
        every_call()
            .trigger("triggers::slow_*", Duration::from_millis(20))
            .out(dir.join("app.fdr")),
    )
    .unwrap();
    let beside = Beside::start(&d);
    slow_span(&d, before, Duration::from_millis(60));
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
    fires(false);
}

#[test]
fn a_slow_span_fires_the_trigger_its_pattern_names_when_first_used_before_start() {
    fires(true);
}
