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
use fdr_testkit::logs::{DecodedLog, Rec};
use fdr_testkit::recording::{every_call, record_log};
use tracing::{info_span, Dispatch, Instrument};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::Layer;

/// A thread's calls, by name: `+name` for an entry, `-name` for an exit, `+name(a, b)` for an
/// entry with arguments.
fn calls(log: &DecodedLog, tid: i32) -> Vec<String> {
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
fn tasks(log: &DecodedLog, tid: i32) -> Vec<(TaskKind, String, u64)> {
    log.thread_records(tid)
        .into_iter()
        .filter_map(|r| match r {
            Rec::Task(k, id, task, _) => Some((k, log.name(id).unwrap_or("?").to_string(), task)),
            _ => None,
        })
        .collect()
}

/// The one thread of a log (under the injected clock, threads go by small ids of their own).
fn only_thread(log: &DecodedLog) -> i32 {
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
                    for _ in 0..2 {
                        let outer = info_span!("outer");
                        let _o = outer.enter();
                        for _ in 0..3 {
                            let _i = info_span!("inner").entered();
                        }
                    }
                });
            });
            let t = only_thread(&log);
            let [i, o] = [pair("inner"), pair("outer")];
            assert_eq!(
                calls(&log, t),
                [o[0], i[0], i[1], i[0], i[1], i[0], i[1], o[1]].repeat(2)
            );
            // A callsite's spans are tasks until one of them is closed after a single entry: the
            // first `outer` and the first `inner` (made before either callsite had shown what its
            // spans are) are tasks, the first `inner` inside the first `outer`'s task. Entered
            // once, right after they were made, they taught their callsites: the later spans are
            // calls, not tasks.
            let recs: Vec<String> = log
                .thread_records(t)
                .into_iter()
                .filter_map(|r| match r {
                    Rec::Task(k, id, task, _) => {
                        Some(format!("{k:?} {} {task}", log.name(id).unwrap()))
                    }
                    Rec::Link(l, _) => Some(format!(
                        "{:?} {} {} of {} {}",
                        l.kind,
                        log.name(l.id).unwrap(),
                        l.task,
                        log.name(l.other_id).unwrap(),
                        l.other_task
                    )),
                    Rec::Enter(id, _) => Some(format!("+{}", log.name(id).unwrap())),
                    Rec::Exit(id, _) => Some(format!("-{}", log.name(id).unwrap())),
                    _ => None,
                })
                .collect();
            let k = tasks(&log, t);
            assert_eq!(k.len(), 4, "{k:?}");
            let (to, ti) = (k[0].2, k[1].2);
            let (outer, inner) = (n("outer"), n("inner"));
            let mut expect = vec![
                format!("Created {outer} {to}"),
                format!("+{outer}"),
                format!("Created {inner} {ti}"),
                format!("Parent {inner} {ti} of {outer} {to}"),
                format!("+{inner}"),
                format!("-{inner}"),
                format!("Completed {inner} {ti}"),
            ];
            expect.extend([i[0], i[1], i[0], i[1], o[1]].map(String::from));
            expect.push(format!("Completed {outer} {to}"));
            expect.extend([o[0], i[0], i[1], i[0], i[1], i[0], i[1], o[1]].map(String::from));
            assert_eq!(recs, expect);
        }

        #[test]
        fn task_spans_link_to_their_parent_task_and_to_the_task_they_follow() {
            let d = dispatch();
            let log = record_log(every_call(), || {
                tracing::dispatcher::with_default(&d, || {
                    let request = || info_span!("request");
                    let fetch = || info_span!("fetch");
                    let retry = |p: &tracing::Span| info_span!(parent: p, "retry");
                    let plain = || info_span!("plain");
                    // A span entered once, right after it was made, and closed: the callsite's
                    // spans are calls from then on (this first one is a task: its callsite had
                    // shown nothing yet).
                    plain().in_scope(|| {});

                    let first = request();
                    // Made inside the request: its parent by context.
                    let f = first.in_scope(fetch);
                    // Made outside, with the request as its parent.
                    let r = retry(&first);
                    let second = request();
                    second.follows_from(&first);
                    // A span that is not a task (entered once, right away) links nothing.
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
            assert_eq!(
                names,
                [n("plain"), n("request"), n("fetch"), n("retry"), n("request")]
            );
            let task = |i: usize| created[i + 1].1;
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
        fn a_span_entered_again_is_a_task_from_its_callsites_first_span_on() {
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
            // Each span is a task, from its creation (before its first entry) to its close
            // (after its last exit): the first too, made before its callsite had shown anything.
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
                ["created", "+", "-", "+", "-", "completed"].repeat(2)
            );
            let k = tasks(&log, t);
            assert_eq!(k.len(), 4, "{k:?}");
            assert!(k.iter().all(|(_, name, _)| *name == n("again")));
            assert_eq!((k[0].2, k[2].2), (k[1].2, k[3].2));
            assert_ne!(k[0].2, k[2].2);
        }

        #[test]
        fn a_callsite_that_showed_calls_makes_tasks_once_a_span_is_entered_again() {
            let d = dispatch();
            let log = record_log(every_call(), || {
                tracing::dispatcher::with_default(&d, || {
                    let mixed = || info_span!("mixed");
                    // Entered once and closed: a task (the callsite had shown nothing), which
                    // teaches the callsite that its spans are calls.
                    mixed().in_scope(|| {});
                    // Made while the callsite's spans were calls: its creation was not recorded,
                    // so it stays calls; entered again, it makes the callsite's spans tasks.
                    let kept = mixed();
                    kept.in_scope(|| {});
                    kept.in_scope(|| {});
                    drop(kept);
                    // Made since: tasks, whether entered once or more.
                    mixed().in_scope(|| {});
                    let again = mixed();
                    again.in_scope(|| {});
                    again.in_scope(|| {});
                });
            });
            let t = only_thread(&log);
            assert_eq!(calls(&log, t), pair("mixed").repeat(6));
            let recs: Vec<&str> = log
                .thread_records(t)
                .into_iter()
                .filter_map(|r| match r {
                    Rec::Task(TaskKind::Created, ..) => Some("created"),
                    Rec::Task(TaskKind::Completed, ..) => Some("completed"),
                    Rec::Enter(..) => Some("+"),
                    Rec::Exit(..) => Some("-"),
                    _ => None,
                })
                .collect();
            #[rustfmt::skip]
            let expect = [
                "created", "+", "-", "completed",
                "+", "-", "+", "-",
                "created", "+", "-", "completed",
                "created", "+", "-", "+", "-", "completed",
            ];
            assert_eq!(recs, expect);
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
            // Each future is a task, the first too: its callsite had shown nothing at its
            // creation, and its second poll showed a future.
            let k = tasks(&log, t);
            assert_eq!(k.len(), 4, "{k:?}");
            let kinds: Vec<TaskKind> = k.iter().map(|e| e.0).collect();
            assert_eq!(
                kinds,
                [TaskKind::Created, TaskKind::Completed].repeat(2)
            );
            assert_eq!((k[0].2, k[2].2), (k[1].2, k[3].2));
            assert_ne!(k[0].2, k[2].2);
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
            // Each span is one task, made on the first thread and closed on its own (the first
            // too: its callsite had shown nothing when it was made).
            let (ta, tb1, tb2) = (tasks(&log, a), tasks(&log, b1), tasks(&log, b2));
            assert_eq!(ta.len(), 2, "{ta:?}");
            assert_eq!((tb1.len(), tb2.len()), (1, 1), "{tb1:?} {tb2:?}");
            assert_eq!((ta[0].0, ta[1].0), (TaskKind::Created, TaskKind::Created));
            assert_eq!((tb1[0].0, tb2[0].0), (TaskKind::Completed, TaskKind::Completed));
            assert_eq!((ta[0].2, ta[1].2), (tb1[0].2, tb2[0].2));
        }

        /// How many times the sleeps of `req` and of `db` were not over when polled.
        static PENDING: [std::sync::atomic::AtomicUsize; 2] =
            [const { std::sync::atomic::AtomicUsize::new(0) }; 2];

        /// Sleeps 1 ms, counting in `PENDING[which]` each poll that finds it not over: once,
        /// unless the thread was held up for a millisecond between the sleep's start and its
        /// first poll.
        async fn sleep_1ms(which: usize) {
            let sleep = tokio::time::sleep(std::time::Duration::from_millis(1));
            let mut sleep = std::pin::pin!(sleep);
            std::future::poll_fn(|cx| {
                let polled = sleep.as_mut().poll(cx);
                if polled.is_pending() {
                    PENDING[which].fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
                polled
            })
            .await
        }

        /// Waits 1 ms, as a database would.
        #[tracing::instrument]
        async fn db(i: u64) {
            sleep_1ms(1).await;
        }

        /// Waits 1 ms, then awaits `db(i)`.
        #[tracing::instrument]
        async fn req(i: u64) {
            sleep_1ms(0).await;
            db(i).await;
        }

        // Issue 40: the first burst of requests after a start, spans of callsites that never
        // had a span entered twice, all made before any is entered again.
        #[test]
        fn a_first_burst_of_concurrent_async_spans_are_tasks_with_all_their_polls() {
            use tracing::instrument::WithSubscriber;
            let d = dispatch();
            let log = record_log(every_call(), || {
                let rt = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(2)
                    .enable_time()
                    .build()
                    .unwrap();
                rt.block_on(async {
                    let handles: Vec<_> = (0..20)
                        .map(|i| tokio::spawn(req(i).with_subscriber(d.clone())))
                        .collect();
                    for h in handles {
                        h.await.unwrap();
                    }
                });
                drop(rt);
            });
            let (req, db) = (n("req"), n("db"));
            let (mut created, mut ended) = (Vec::new(), Vec::new());
            let (mut entries, mut exits) = ([0; 2], [0; 2]);
            // Entries right after their span's creation (first polls), exits right before its
            // end (the drop, which `Instrumented` runs inside the span).
            let (mut first_polls, mut last_exits) = ([0; 2], [0; 2]);
            let mut links = Vec::new();
            let which = |id: u32| match log.name(id) {
                Some(name) if name == req => 0,
                Some(name) if name == db => 1,
                other => panic!("a record of {other:?}"),
            };
            for t in log.tids() {
                let recs: Vec<Rec> = log
                    .thread_records(t)
                    .into_iter()
                    .filter(|r| !matches!(r, Rec::Cpu(..) | Rec::Wrap(_) | Rec::Other(_)))
                    .collect();
                for (k, r) in recs.iter().enumerate() {
                    let before = k.checked_sub(1).map(|b| &recs[b]);
                    match r {
                        Rec::Task(TaskKind::Created, id, task, _) => {
                            created.push((which(*id), *task));
                            // The first poll follows, after the link to the parent task.
                            let next = recs[k + 1..].iter().find(|r| !matches!(r, Rec::Link(..)));
                            if let Some(Rec::Enter(e, _)) = next {
                                if e == id {
                                    first_polls[which(*id)] += 1;
                                }
                            }
                        }
                        Rec::Task(kind, id, task, _) => {
                            assert_eq!(*kind, TaskKind::Completed, "{}", log.name(*id).unwrap());
                            ended.push((which(*id), *task));
                            if let Some(Rec::Exit(e, _)) = before {
                                if e == id {
                                    last_exits[which(*id)] += 1;
                                }
                            }
                        }
                        Rec::Enter(id, _) => entries[which(*id)] += 1,
                        Rec::Exit(id, _) => exits[which(*id)] += 1,
                        Rec::Link(l, _) => links.push(*l),
                        other => panic!("unexpected {other:?}"),
                    }
                }
            }
            let count = |v: &[(usize, u64)], f: usize| v.iter().filter(|(w, _)| *w == f).count();
            // Every span is a task, created and completed once.
            assert_eq!(
                [count(&created, 0), count(&ended, 0), count(&created, 1), count(&ended, 1)],
                [20, 20, 20, 20],
                "req created, req completed, db created, db completed"
            );
            created.sort_unstable();
            ended.sort_unstable();
            assert_eq!(created, ended, "each task created once and completed once");
            let mut ids: Vec<u64> = created.iter().map(|(_, t)| *t).collect();
            ids.dedup();
            assert_eq!(ids.len(), 40);
            // Each span's first poll, one more after each time it was pending (a `req` is
            // pending while its sleep or its `db` is), and its drop: three polls and the drop of
            // each `req`, two polls and the drop of each `db` when each sleep is pending once.
            let [p_req, p_db] = PENDING
                .each_ref()
                .map(|p| p.load(std::sync::atomic::Ordering::Relaxed));
            let expect = [20 + p_req + p_db + 20, 20 + p_db + 20];
            assert_eq!((entries, exits), (expect, expect), "pending {p_req} {p_db}");
            // No poll outside its task: each span's first poll comes right after its creation
            // and its last exit right before its end, on the thread that made and ended it.
            assert_eq!((first_polls, last_exits), ([20, 20], [20, 20]));
            // Each `db` task's parent is the `req` task it ran in.
            assert_eq!(links.len(), 20, "{links:?}");
            for l in &links {
                assert_eq!(l.kind, fdr_format::LinkKind::Parent);
                assert_eq!(which(l.id), 1);
                assert_eq!(which(l.other_id), 0);
                assert!(created.contains(&(1, l.task)) && created.contains(&(0, l.other_task)));
            }
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
            // The first span's task ends at its close; the second's never does.
            let k = tasks(&log, t);
            let kinds: Vec<TaskKind> = k.iter().map(|e| e.0).collect();
            assert_eq!(
                kinds,
                [TaskKind::Created, TaskKind::Completed, TaskKind::Created]
            );
            assert_eq!(k[0].2, k[1].2);
            assert_ne!(k[1].2, k[2].2);
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
