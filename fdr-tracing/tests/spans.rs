//! Spans recorded through the layer and through the standalone subscriber: exact records for
//! sync spans, spans entered again, `Instrumented` futures, a span that moves between threads,
//! a span never closed, fields and events, and spans mixed with `#[instrument_fdr]` functions;
//! and, for the layer, a span a filter disables.
//!
//! Each scenario runs under each (the `layer`, `layer_skipping` and `subscriber` modules): every `info_span!` is
//! a callsite of its own, and what a callsite learned (that its spans are tasks) stays with it,
//! so each module has its own callsites, named after the module.

use std::future::Future;

use fdr_format::TaskKind;
use fdr_tests::{every_call, record_log, Log, Rec};
use tracing::{info_span, Dispatch, Instrument};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::Layer;

/// A thread's calls, by name: `+name` for an entry, `-name` for an exit, `+name(a, b)` for an
/// entry with arguments.
fn calls(log: &Log, tid: i32) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for r in log.thread_records(tid) {
        let name = |id| log.name(id).unwrap_or("?").to_string();
        match r {
            Rec::Enter(id, _) => out.push(format!("+{}", name(id))),
            Rec::EnterArgs(id, _) => out.push(format!("+{}()", name(id))),
            Rec::Exit(id, _) => out.push(format!("-{}", name(id))),
            Rec::Arg(a) => {
                let last = out.last_mut().expect("an argument after an entry");
                let sep = if last.ends_with("()") { "" } else { ", " };
                last.insert_str(last.len() - 1, &format!("{sep}{a}"));
            }
            _ => {}
        }
    }
    out
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

#[fdr::instrument_fdr]
fn native(depth: u32) {
    if depth > 0 {
        let _s = info_span!("inside").entered();
        native(depth - 1);
    }
}

/// Every scenario, for one way of recording (`dispatch()`), in a module of its own.
macro_rules! scenarios {
    () => {
        use super::*;

        /// `name` as the log calls a span of this module.
        fn n(name: &str) -> String {
            format!("{}::{name}", module_path!())
        }

        /// `+n(name)` and `-n(name)`.
        fn pair(name: &str) -> [&'static str; 2] {
            let leak = |s: String| -> &'static str { Box::leak(s.into_boxed_str()) };
            [leak(format!("+{}", n(name))), leak(format!("-{}", n(name)))]
        }

        #[test]
        fn sync_spans_are_calls_nested_as_entered() {
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
            let t = only_thread(&log);
            let [i, o] = [pair("inner"), pair("outer")];
            assert_eq!(
                calls(&log, t),
                [o[0], i[0], i[1], i[0], i[1], i[0], i[1], o[1]]
            );
            // Entered once, right after they were made: calls, not tasks.
            assert_eq!(tasks(&log, t), []);
        }

        #[test]
        fn task_spans_link_to_their_parent_task_and_to_the_task_they_follow() {
            let d = dispatch();
            let log = record_log(every_call(), || {
                tracing::dispatcher::with_default(&d, || {
                    let request = || info_span!("request");
                    let fetch = || info_span!("fetch");
                    let retry = |p: &tracing::Span| info_span!(parent: p, "retry");
                    // A span of each callsite entered twice: their later spans are tasks.
                    let teach = |s: tracing::Span| {
                        s.in_scope(|| {});
                        s.in_scope(|| {});
                    };
                    teach(request());
                    teach(fetch());
                    teach(retry(&tracing::Span::none()));

                    let first = request();
                    // Made inside the request: its parent by context.
                    let f = first.in_scope(fetch);
                    // Made outside, with the request as its parent.
                    let r = retry(&first);
                    let second = request();
                    second.follows_from(&first);
                    // A span that is not a task (entered once, right away) links nothing.
                    let plain = || info_span!("plain");
                    plain().in_scope(|| first.in_scope(|| plain().in_scope(|| {})));
                    drop((f, r, second));
                });
            });
            let t = only_thread(&log);
            let created: Vec<(String, u64)> = tasks(&log, t)
                .into_iter()
                .filter(|(k, ..)| *k == TaskKind::Created)
                .map(|(_, name, task)| (name, task))
                .collect();
            let names: Vec<&str> = created.iter().map(|(n, _)| n.as_str()).collect();
            assert_eq!(names, [n("request"), n("fetch"), n("retry"), n("request")]);
            let task = |i: usize| created[i].1;
            let links: Vec<(String, u64, fdr_format::LinkKind, String, u64)> = log
                .thread_records(t)
                .into_iter()
                .filter_map(|r| match r {
                    Rec::Link(l, _) => Some((
                        log.name(l.id).unwrap_or("?").to_string(),
                        l.task,
                        l.kind,
                        log.name(l.other_id).unwrap_or("?").to_string(),
                        l.other_task,
                    )),
                    _ => None,
                })
                .collect();
            use fdr_format::LinkKind::{FollowsFrom, Parent};
            assert_eq!(
                links,
                [
                    (n("fetch"), task(1), Parent, n("request"), task(0)),
                    (n("retry"), task(2), Parent, n("request"), task(0)),
                    (n("request"), task(3), FollowsFrom, n("request"), task(0)),
                ]
            );
        }

        #[test]
        fn a_span_entered_again_makes_its_callsite_record_tasks() {
            let d = dispatch();
            let log = record_log(every_call(), || {
                tracing::dispatcher::with_default(&d, || {
                    for _ in 0..2 {
                        let span = info_span!("again");
                        span.in_scope(|| {});
                        span.in_scope(|| {});
                    }
                });
            });
            let t = only_thread(&log);
            assert_eq!(calls(&log, t), pair("again").repeat(4));
            // The first span taught the callsite; the second is a task, from its creation
            // (before its first entry) to its close (after its last exit).
            let recs: Vec<String> = log
                .thread_records(t)
                .into_iter()
                .filter_map(|r| match r {
                    Rec::Task(TaskKind::Created, ..) => Some("created".into()),
                    Rec::Task(TaskKind::Completed, ..) => Some("completed".into()),
                    Rec::Enter(..) => Some("+".into()),
                    Rec::Exit(..) => Some("-".into()),
                    _ => None,
                })
                .collect();
            assert_eq!(
                recs,
                [
                    "+",
                    "-",
                    "+",
                    "-",
                    "created",
                    "+",
                    "-",
                    "+",
                    "-",
                    "completed"
                ]
            );
            let k = tasks(&log, t);
            assert_eq!(k[0].1, n("again"));
            assert_eq!(k[0].2, k[1].2);
        }

        #[test]
        fn instrumented_futures_are_tasks_whose_calls_are_their_polls() {
            let d = dispatch();
            let log = record_log(every_call(), || {
                tracing::dispatcher::with_default(&d, || {
                    let rt = tokio::runtime::Builder::new_current_thread()
                        .build()
                        .unwrap();
                    for _ in 0..2 {
                        rt.block_on(
                            async {
                                YieldOnce(false).await;
                                YieldOnce(false).await;
                            }
                            .instrument(info_span!("request")),
                        );
                    }
                });
            });
            let t = only_thread(&log);
            // Three polls each, and the drop of the future, which tracing's `Instrumented`
            // runs inside its span.
            assert_eq!(calls(&log, t), pair("request").repeat(8));
            // The first future's second poll taught the callsite: the second future is a task.
            let k = tasks(&log, t);
            assert_eq!(k.len(), 2, "{k:?}");
            assert_eq!((k[0].0, k[1].0), (TaskKind::Created, TaskKind::Completed));
            assert_eq!(k[0].2, k[1].2);
        }

        #[test]
        fn a_span_polled_on_two_threads_has_its_calls_on_each_and_one_task() {
            let d = dispatch();
            let log = record_log(every_call(), || {
                for _ in 0..2 {
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
                }
            });
            // The thread that polled first, then the two others.
            let tids = log.tids();
            assert_eq!(tids.len(), 3, "{tids:?}");
            let (a, b1, b2) = (tids[0], tids[1], tids[2]);
            assert_eq!(calls(&log, a), pair("moved").repeat(2));
            // The second poll, and the drop inside the span.
            assert_eq!(calls(&log, b1), pair("moved").repeat(2));
            assert_eq!(calls(&log, b2), pair("moved").repeat(2));
            // The first span, polled on another thread, taught the callsite: the second span
            // is one task, made on the first thread and closed on its own.
            assert_eq!(tasks(&log, b1), []);
            let (ta, tb) = (tasks(&log, a), tasks(&log, b2));
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
                    for leak in [false, true] {
                        let span = info_span!("leaked");
                        span.in_scope(|| {});
                        span.in_scope(|| {});
                        if leak {
                            std::mem::forget(span);
                        }
                    }
                });
            });
            let t = only_thread(&log);
            assert_eq!(calls(&log, t), pair("leaked").repeat(4));
            let k = tasks(&log, t);
            assert_eq!(k.len(), 1, "{k:?}");
            assert_eq!(k[0].0, TaskKind::Created);
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
            let (o, nat, ins) = (
                pair("outside"),
                ["+spans::native", "-spans::native"],
                ["+spans::inside", "-spans::inside"],
            );
            assert_eq!(
                calls(&log, only_thread(&log)),
                [
                    o[0], nat[0], ins[0], nat[0], ins[0], nat[0], nat[1], ins[1], nat[1], ins[1],
                    nat[1], o[1],
                ]
            );
        }

        #[test]
        fn fields_are_the_first_entrys_arguments_and_events_are_calls_with_theirs() {
            let d = fields_dispatch();
            let log = record_log(every_call(), || {
                tracing::dispatcher::with_default(&d, || {
                    let span = info_span!(
                        "with_fields",
                        id = 7u64,
                        delta = -2i64,
                        ok = true,
                        user = "ada",
                        later = tracing::field::Empty
                    );
                    span.record("later", 3u64);
                    span.in_scope(|| tracing::info!(n = 5u64, "hello"));
                    span.in_scope(|| {});
                });
            });
            let t = only_thread(&log);
            let f = log
                .functions
                .iter()
                .find(|f| f.name == n("with_fields"))
                .unwrap();
            assert_eq!(f.args, ["id", "delta", "ok", "user", "later"]);
            let event = log
                .functions
                .iter()
                .find(|f| f.name.starts_with(&n("event ")))
                .unwrap_or_else(|| panic!("no event in {:?}", log.functions));
            assert!(event.name.contains("spans.rs:"), "{}", event.name);
            assert_eq!(event.args, ["message", "n"]);
            let hello = fdr_tracing::text_value("hello");
            let ada = fdr_tracing::text_value("ada");
            let e = &event.name;
            let w = n("with_fields");
            assert_eq!(
                calls(&log, t),
                [
                    format!("+{w}(7, {}, 1, {ada}, 3)", -2i64 as u64),
                    format!("+{e}({hello}, 5)"),
                    format!("-{e}"),
                    format!("-{w}"),
                    format!("+{w}"),
                    format!("-{w}"),
                ]
            );
        }

        // Spans are skipped where `SKIPS` (the subscriber; the layer when asked): a layer that
        // disables a span disables it for every layer, so by default the layer lets the registry
        // make it, for the others, and records the same.
        #[test]
        fn a_culled_callsite_makes_no_spans_until_a_probe_finds_one_slow() {
            let d = dispatch();
            let config = fdr::Config::default().cull_after(50);
            let mut made = Vec::new();
            let log = record_log(config, || {
                tracing::dispatcher::with_default(&d, || {
                    // Every span lasts 0 ns on the injected clock: erased, then culled.
                    let mut short = |slow: bool| {
                        let span = info_span!("short");
                        made.push(!span.is_disabled());
                        let _e = span.entered();
                        if slow {
                            fdr_runtime::testing::advance(20_000);
                        }
                    };
                    for _ in 0..60 {
                        short(false);
                    }
                    // A probe lets the next calls through; the first is slow: restored.
                    fdr_runtime::testing::probe_culled();
                    short(true);
                    for _ in 0..3 {
                        short(false);
                    }
                });
            });
            // The 50th erased call culled the callsite: the spans after it were not made.
            let expect: Vec<bool> = (0..64).map(|i| !(SKIPS && (50..60).contains(&i))).collect();
            assert_eq!(made, expect);
            let t = only_thread(&log);
            let culls: Vec<(fdr_format::CullKind, String)> = log
                .thread_records(t)
                .into_iter()
                .filter_map(|r| match r {
                    Rec::Cull(k, id, ..) => Some((k, log.name(id).unwrap_or("?").to_string())),
                    _ => None,
                })
                .collect();
            assert_eq!(
                culls,
                [
                    (fdr_format::CullKind::Culled, n("short")),
                    (fdr_format::CullKind::Restored, n("short"))
                ]
            );
            // The slow call is kept; the short ones after it are erased again.
            assert_eq!(calls(&log, t), pair("short"));
        }
    };
}

mod layer {
    const SKIPS: bool = false;
    fn dispatch() -> super::Dispatch {
        super::Dispatch::new(tracing_subscriber::registry().with(fdr_tracing::layer()))
    }
    fn fields_dispatch() -> super::Dispatch {
        super::Dispatch::new(
            tracing_subscriber::registry().with(fdr_tracing::layer().with_fields(true)),
        )
    }
    use tracing_subscriber::layer::SubscriberExt;
    scenarios!();
}

mod layer_skipping {
    const SKIPS: bool = true;
    fn dispatch() -> super::Dispatch {
        super::Dispatch::new(
            tracing_subscriber::registry().with(fdr_tracing::layer().with_skip_unrecorded(true)),
        )
    }
    fn fields_dispatch() -> super::Dispatch {
        super::Dispatch::new(
            tracing_subscriber::registry().with(
                fdr_tracing::layer()
                    .with_fields(true)
                    .with_skip_unrecorded(true),
            ),
        )
    }
    use tracing_subscriber::layer::SubscriberExt;
    scenarios!();
}

mod subscriber {
    const SKIPS: bool = true;
    fn dispatch() -> super::Dispatch {
        super::Dispatch::new(fdr_tracing::subscriber())
    }
    fn fields_dispatch() -> super::Dispatch {
        super::Dispatch::new(fdr_tracing::subscriber().with_fields(true))
    }
    scenarios!();
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
}

#[test]
fn the_subscriber_records_only_spans_at_its_level() {
    let d = Dispatch::new(fdr_tracing::subscriber().with_max_level(tracing::Level::INFO));
    let log = record_log(every_call(), || {
        tracing::dispatcher::with_default(&d, || {
            let _k = info_span!("shown").entered();
            let _n = tracing::debug_span!("hidden").entered();
            // The current span is the one recorded, for the spans made inside it.
            assert_eq!(
                tracing::Span::current().metadata().map(|m| m.name()),
                Some("shown")
            );
        });
    });
    assert_eq!(
        calls(&log, only_thread(&log)),
        ["+spans::shown", "-spans::shown"]
    );
    assert!(log.functions.iter().all(|f| f.name != "spans::hidden"));
}

/// A span with a `traceparent` field (the W3C header a request carries) runs its calls inside
/// that trace: the layer records `fdr::join_trace` with the context as its arguments, nested in
/// the span's call, open while the span is entered. An invalid value records nothing.
#[test]
fn the_layer_joins_the_trace_a_span_field_names() {
    const TP: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let d = Dispatch::new(tracing_subscriber::registry().with(fdr_tracing::layer()));
    let log = record_log(every_call(), || {
        tracing::dispatcher::with_default(&d, || {
            let header = TP.to_string();
            let span = info_span!("request", traceparent = %header);
            {
                let _e = span.enter();
                let _inner = info_span!("handler").entered();
            }
            let _bad = info_span!("request", traceparent = "not a trace").entered();
        });
    });
    let words = fdr_format::trace_context::encode(TP).unwrap();
    let marker = format!(
        "+fdr::join_trace({}, {}, {}, {})",
        words[0], words[1], words[2], words[3]
    );
    assert_eq!(
        calls(&log, only_thread(&log)),
        [
            "+spans::request".to_string(),
            marker,
            "+spans::handler".into(),
            "-spans::handler".into(),
            "-fdr::join_trace".into(),
            "-spans::request".into(),
            "+spans::request".into(),
            "-spans::request".into(),
        ]
    );
}
