//! Spans recorded through the layer: exact records for sync spans, `Instrumented` futures, a
//! span that moves between threads, a span never closed, a span a filter disables, and spans
//! mixed with `#[instrument_fdr]` functions.

use std::future::Future;

use fdr_format::{FnKind, TaskKind};
use fdr_tests::{every_call, record_log, Log, Rec};
use tracing::{info_span, Dispatch, Instrument};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::Layer;

fn dispatch() -> Dispatch {
    Dispatch::new(tracing_subscriber::registry().with(fdr_tracing::layer()))
}

/// The function id the log's table gives `name`.
fn id(log: &Log, name: &str) -> u32 {
    log.functions
        .iter()
        .find(|f| f.name == name)
        .unwrap_or_else(|| panic!("{name} not in {:?}", log.functions))
        .id
}

/// A thread's calls, by name: `+name` for an entry, `-name` for an exit.
fn calls(log: &Log, tid: i32) -> Vec<String> {
    log.calls(tid)
        .into_iter()
        .map(|(k, id)| {
            let sign = if k == FnKind::Enter { "+" } else { "-" };
            format!("{sign}{}", log.name(id).unwrap_or("?"))
        })
        .collect()
}

/// A thread's task events: (kind, function name, task id).
fn tasks(log: &Log, tid: i32) -> Vec<(TaskKind, String, u64)> {
    log.thread_records(tid)
        .into_iter()
        .filter_map(|r| match r {
            Rec::Task(k, id, task, _) => Some((k, log.name(id).unwrap_or("?").to_string(), task)),
            _ => None,
        })
        .collect()
}

/// The one thread of a log (under the injected clock, threads go by small ids of their own).
fn only_thread(log: &Log) -> i32 {
    let tids = log.tids();
    assert_eq!(tids.len(), 1, "{tids:?}");
    tids[0]
}

#[test]
fn sync_spans_are_calls_nested_as_entered_and_their_lives_are_tasks() {
    let d = dispatch();
    let log = record_log(every_call(), || {
        tracing::dispatcher::with_default(&d, || {
            let outer = info_span!("outer");
            let _o = outer.enter();
            for _ in 0..3 {
                let _i = info_span!("inner").entered();
            }
        });
    });
    assert_eq!(
        calls(&log, only_thread(&log)),
        [
            "+spans::outer",
            "+spans::inner",
            "-spans::inner",
            "+spans::inner",
            "-spans::inner",
            "+spans::inner",
            "-spans::inner",
            "-spans::outer",
        ]
    );
    let t = tasks(&log, only_thread(&log));
    let kinds: Vec<(TaskKind, &str)> = t.iter().map(|(k, n, _)| (*k, n.as_str())).collect();
    assert_eq!(
        kinds,
        [
            (TaskKind::Created, "spans::outer"),
            (TaskKind::Created, "spans::inner"),
            (TaskKind::Completed, "spans::inner"),
            (TaskKind::Created, "spans::inner"),
            (TaskKind::Completed, "spans::inner"),
            (TaskKind::Created, "spans::inner"),
            (TaskKind::Completed, "spans::inner"),
            (TaskKind::Completed, "spans::outer"),
        ]
    );
    // Each created task is completed once, by its own id.
    assert_eq!(t[1].2, t[2].2);
    assert_ne!(t[2].2, t[3].2);
    assert_eq!(t[0].2, t[7].2);
    assert!(id(&log, "spans::inner") != id(&log, "spans::outer"));
}

/// Pending once, then ready.
struct YieldOnce(bool);

impl std::future::Future for YieldOnce {
    type Output = ();
    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<()> {
        if self.0 {
            return std::task::Poll::Ready(());
        }
        self.0 = true;
        cx.waker().wake_by_ref();
        std::task::Poll::Pending
    }
}

#[test]
fn an_instrumented_future_is_a_task_whose_calls_are_its_polls() {
    let d = dispatch();
    let log = record_log(every_call(), || {
        tracing::dispatcher::with_default(&d, || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .build()
                .unwrap();
            rt.block_on(
                async {
                    YieldOnce(false).await;
                    YieldOnce(false).await;
                }
                .instrument(info_span!("request")),
            );
        });
    });
    // Three polls, and the drop of the future, which tracing's `Instrumented` runs inside
    // its span.
    assert_eq!(
        calls(&log, only_thread(&log)),
        ["+spans::request", "-spans::request"].repeat(4)
    );
    let t = tasks(&log, only_thread(&log));
    assert_eq!(t.len(), 2, "{t:?}");
    assert_eq!((t[0].0, t[1].0), (TaskKind::Created, TaskKind::Completed));
    assert_eq!(t[0].2, t[1].2);
}

#[test]
fn a_span_polled_on_two_threads_has_its_calls_on_each_and_one_task() {
    let d = dispatch();
    let log = record_log(every_call(), || {
        let waker = std::task::Waker::noop();
        let mut cx = std::task::Context::from_waker(waker);
        let mut fut = tracing::dispatcher::with_default(&d, || {
            let mut fut = Box::pin(YieldOnce(false).instrument(info_span!("moved")));
            assert!(fut.as_mut().poll(&mut cx).is_pending());
            fut
        });
        let d2 = d.clone();
        std::thread::spawn(move || {
            tracing::dispatcher::with_default(&d2, || {
                let waker = std::task::Waker::noop();
                let mut cx = std::task::Context::from_waker(waker);
                assert!(fut.as_mut().poll(&mut cx).is_ready());
                drop(fut);
            });
        })
        .join()
        .unwrap();
    });
    // The thread that polled first, then the other.
    let (a, b) = (log.tids()[0], log.tids()[1]);
    assert_eq!(calls(&log, a), ["+spans::moved", "-spans::moved"]);
    // The second poll, and the drop inside the span.
    assert_eq!(calls(&log, b), ["+spans::moved", "-spans::moved"].repeat(2));
    let (ta, tb) = (tasks(&log, a), tasks(&log, b));
    assert_eq!(ta.len(), 1, "{ta:?}");
    assert_eq!(tb.len(), 1, "{tb:?}");
    assert_eq!((ta[0].0, tb[0].0), (TaskKind::Created, TaskKind::Completed));
    assert_eq!(ta[0].2, tb[0].2);
}

#[test]
fn a_span_never_closed_is_a_task_still_open() {
    let d = dispatch();
    let log = record_log(every_call(), || {
        tracing::dispatcher::with_default(&d, || {
            let span = info_span!("leaked");
            span.in_scope(|| {});
            std::mem::forget(span);
        });
    });
    assert_eq!(
        calls(&log, only_thread(&log)),
        ["+spans::leaked", "-spans::leaked"]
    );
    let t = tasks(&log, only_thread(&log));
    assert_eq!(t.len(), 1, "{t:?}");
    assert_eq!(t[0].0, TaskKind::Created);
}

#[test]
fn a_span_a_filter_disables_is_not_recorded() {
    let filtered = fdr_tracing::layer().with_filter(tracing_subscriber::filter::filter_fn(|m| {
        m.name() != "noisy"
    }));
    let d = Dispatch::new(tracing_subscriber::registry().with(filtered));
    let log = record_log(every_call(), || {
        tracing::dispatcher::with_default(&d, || {
            let _k = info_span!("kept").entered();
            let _n = info_span!("noisy").entered();
        });
    });
    assert_eq!(
        calls(&log, only_thread(&log)),
        ["+spans::kept", "-spans::kept"]
    );
    assert!(log.functions.iter().all(|f| f.name != "spans::noisy"));
    assert_eq!(tasks(&log, only_thread(&log)).len(), 2);
}

#[fdr::instrument_fdr]
fn native(depth: u32) {
    if depth > 0 {
        let _s = info_span!("inside").entered();
        native(depth - 1);
    }
}

#[test]
fn spans_and_instrumented_functions_make_one_call_tree() {
    let d = dispatch();
    let log = record_log(every_call(), || {
        tracing::dispatcher::with_default(&d, || {
            let _o = info_span!("outside").entered();
            native(2);
        });
    });
    assert_eq!(
        calls(&log, only_thread(&log)),
        [
            "+spans::outside",
            "+spans::native",
            "+spans::inside",
            "+spans::native",
            "+spans::inside",
            "+spans::native",
            "-spans::native",
            "-spans::inside",
            "-spans::native",
            "-spans::inside",
            "-spans::native",
            "-spans::outside",
        ]
    );
}
