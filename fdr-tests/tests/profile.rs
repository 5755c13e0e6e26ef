//! Profile mode, driven exactly by the injected clock (1 GHz: a tick is a nanosecond, each thread
//! its own time): counts, totals and self times of a known call tree, recursion, tail calls, a
//! panic unwinding through three frames, calls open when written, histogram quantiles, the node
//! limit, merging threads, and profiles written while threads record, start and exit.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use fdr::{Config, Mode};
use fdr_format::profile::{Node, Profile, Tree};
use fdr_runtime::{testing, CallGuard};
use fdr_testkit::desc;
use fdr_testkit::logs::{read_log, scratch};
use fdr_testkit::recording::every_call;

#[fdr::instrument_fdr]
fn main_work() {
    testing::advance(5);
    step(10, true);
    step(20, false);
    leaf(7);
    testing::advance(3);
}

#[fdr::instrument_fdr]
fn step(ns: u64, inner: bool) {
    testing::advance(ns);
    if inner {
        leaf(2);
    }
}

#[fdr::instrument_fdr]
fn leaf(ns: u64) {
    testing::advance(ns);
}

#[fdr::instrument_fdr]
fn recurse(depth: u32) {
    testing::advance(1);
    if depth > 0 {
        recurse(depth - 1);
    }
}

desc!(TAILER, "profile::tailer");

/// Ends its frame with a tail call of `leaf`, which then runs as its caller's.
fn tailer() {
    let g = CallGuard::enter(&TAILER);
    testing::advance(4);
    g.tail();
    leaf(6);
}

#[fdr::instrument_fdr]
fn outer_panics() {
    testing::advance(1);
    middle_panics();
}

#[fdr::instrument_fdr]
fn middle_panics() {
    testing::advance(1);
    inner_panics();
}

#[fdr::instrument_fdr]
fn inner_panics() {
    testing::advance(1);
    panic!("deliberate");
}

/// Starts a profiling recorder on the injected clock, runs `body` and returns the profile
/// written by `profile_to` (before `finish`, so that open calls are still open).
fn profile_of(config: Config, body: impl FnOnce(&fdr::Recorder)) -> Profile {
    let _turn = testing::exclusive();
    testing::use_mock_clock(1_000_000_000);
    testing::set_time(1_000);
    let rec = fdr::start(config).unwrap();
    body(&rec);
    let mut bytes = Vec::new();
    rec.profile_to(&mut bytes).unwrap();
    rec.finish_to(&mut std::io::sink()).unwrap();
    testing::use_real_clock();
    Profile::decode(&bytes).unwrap()
}

fn profile_mode() -> Config {
    Config::default().mode(Mode::Profile)
}

/// Each node as `(path of short names, count, total, self)`.
fn rows(p: &Profile, t: &Tree) -> Vec<(String, u64, u64, u64)> {
    t.nodes
        .iter()
        .map(|n| (path(p, t, n), n.count, n.total, n.self_ticks))
        .collect()
}

fn path(p: &Profile, t: &Tree, n: &Node) -> String {
    let name = short(p.function_name(n.function).unwrap_or("?"));
    match n.parent {
        Some(i) => format!("{} > {name}", path(p, t, &t.nodes[i as usize])),
        None => name.to_string(),
    }
}

fn short(name: &str) -> &str {
    name.rsplit("::").next().unwrap_or(name)
}

fn node<'a>(p: &Profile, t: &'a Tree, want: &str) -> &'a Node {
    t.nodes
        .iter()
        .find(|n| path(p, t, n) == want)
        .unwrap_or_else(|| panic!("no node {want} in {:?}", rows(p, t)))
}

#[test]
fn a_known_call_tree_has_exact_counts_totals_and_self_times() {
    let p = profile_of(profile_mode(), |_| main_work());
    assert_eq!(p.trees.len(), 1);
    let t = &p.trees[0];
    assert_eq!(
        rows(&p, t),
        [
            ("main_work".to_string(), 1, 47, 47 - 12 - 20 - 7),
            ("main_work > step".into(), 2, 32, 30),
            ("main_work > step > leaf".into(), 1, 2, 2),
            ("main_work > leaf".into(), 1, 7, 7),
        ]
    );
    let step = node(&p, t, "main_work > step");
    assert_eq!((step.min, step.max, step.hist.count()), (12, 20, 2));
    assert_eq!((p.lost, p.flags), (0, 0));
    assert_eq!(p.ticks_per_second, 1_000_000_000);
}

#[test]
fn recursion_is_a_path_per_depth() {
    let p = profile_of(profile_mode(), |_| recurse(3));
    let t = &p.trees[0];
    assert_eq!(
        rows(&p, t),
        [
            ("recurse".to_string(), 1, 4, 1),
            ("recurse > recurse".into(), 1, 3, 1),
            ("recurse > recurse > recurse".into(), 1, 2, 1),
            ("recurse > recurse > recurse > recurse".into(), 1, 1, 1),
        ]
    );
}

#[test]
fn a_tail_call_runs_as_its_callers_call() {
    let p = profile_of(profile_mode(), |_| {
        let _g = CallGuard::enter(&TAILER_CALLER);
        tailer();
    });
    let t = &p.trees[0];
    assert_eq!(
        rows(&p, t),
        [
            ("tail_caller".to_string(), 1, 10, 0),
            ("tail_caller > tailer".into(), 1, 4, 4),
            ("tail_caller > leaf".into(), 1, 6, 6),
        ]
    );
}

desc!(TAILER_CALLER, "profile::tail_caller");

#[test]
fn a_panic_unwinding_through_three_frames_ends_each_call_once() {
    let p = profile_of(profile_mode(), |_| {
        let caught = std::panic::catch_unwind(outer_panics);
        assert!(caught.is_err());
        // After the unwinding, a call is a root again.
        leaf(5);
    });
    let t = &p.trees[0];
    assert_eq!(
        rows(&p, t),
        [
            ("outer_panics".to_string(), 1, 3, 1),
            ("outer_panics > middle_panics".into(), 1, 2, 1),
            (
                "outer_panics > middle_panics > inner_panics".into(),
                1,
                1,
                1
            ),
            ("leaf".into(), 1, 5, 5),
        ]
    );
}

desc!(OPEN, "profile::open");

#[test]
fn a_call_open_when_the_profile_is_written_is_marked_open_with_its_time_so_far() {
    let mut guard = None;
    let p = profile_of(profile_mode(), |_| {
        guard = Some(CallGuard::enter(&OPEN));
        leaf(10);
        testing::advance(15);
    });
    drop(guard);
    let t = &p.trees[0];
    let open = node(&p, t, "open");
    assert_eq!((open.count, open.open, open.open_ticks), (0, 1, 25));
    assert_eq!(node(&p, t, "open > leaf").count, 1);
}

#[test]
fn quantiles_of_a_known_distribution_are_within_a_sixteenth() {
    let p = profile_of(profile_mode(), |_| {
        for i in 1..=1000u64 {
            leaf(i * 1000);
        }
    });
    let leaf = node(&p, &p.trees[0], "leaf");
    assert_eq!(leaf.count, 1000);
    assert_eq!((leaf.min, leaf.max), (1000, 1_000_000));
    assert_eq!(leaf.total, 1000 * 1001 / 2 * 1000);
    for (q, want) in [(0.5, 500_000.0), (0.9, 900_000.0), (0.99, 990_000.0)] {
        let got = leaf.hist.quantile(q) as f64;
        assert!(
            (got - want).abs() <= want / 16.0,
            "p{q}: {got}, want {want}"
        );
    }
}

#[test]
fn past_the_node_limit_deeper_calls_fold_into_their_parent_exactly() {
    let p = profile_of(profile_mode().profile_nodes(10), |_| {
        for _ in 0..3 {
            recurse(49);
        }
    });
    let t = &p.trees[0];
    // 10 nodes, one per depth; the 40 calls below the tenth fold into it, three times.
    assert_eq!(t.nodes.len(), 10);
    assert!(t.nodes.iter().all(|n| n.count == 3));
    let deepest = t.nodes.last().unwrap();
    assert_eq!(deepest.folded, 3 * 40);
    // Their time is the deepest node's self time; totals stay exact.
    assert_eq!(deepest.total, 3 * 41);
    assert_eq!(deepest.self_ticks, 3 * 41);
    assert_eq!(t.nodes[0].total, 3 * 50);
}

#[test]
fn eight_threads_with_different_paths_merge_into_exact_totals() {
    let p = profile_of(profile_mode(), |_| {
        let threads: Vec<_> = (0..8u64)
            .map(|i| {
                std::thread::spawn(move || {
                    testing::set_time(1_000);
                    for _ in 0..=i {
                        step(100 * (i + 1), i % 2 == 0);
                    }
                    recurse(i as u32);
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
    });
    let t = &p.trees[0];
    let step = node(&p, t, "step");
    // Thread i makes i + 1 calls of 100 (i + 1) ns, plus 2 ns of leaf when i is even.
    let calls: u64 = (0..8).map(|i| i + 1).sum();
    let time: u64 = (0..8u64)
        .map(|i| (i + 1) * (100 * (i + 1) + if i % 2 == 0 { 2 } else { 0 }))
        .sum();
    assert_eq!((step.count, step.total), (calls, time));
    assert_eq!(node(&p, t, "step > leaf").count, 1 + 3 + 5 + 7);
    // recurse(i) on thread i: depth d is reached by the threads with i >= d.
    let mut chain = "recurse".to_string();
    for d in 0..8u64 {
        assert_eq!(node(&p, t, &chain).count, 8 - d, "{chain}");
        chain.push_str(" > recurse");
    }
}

#[test]
fn per_thread_profiles_keep_each_thread_and_the_exited_ones_apart() {
    let p = profile_of(profile_mode().profile_threads(true), |_| {
        for ns in [3, 50] {
            std::thread::spawn(move || {
                testing::set_time(0);
                if ns == 3 {
                    leaf(ns);
                } else {
                    step(ns, false);
                }
            })
            .join()
            .unwrap();
        }
        leaf(1);
    });
    assert_eq!(p.flags, fdr_format::profile::PER_THREAD);
    // Live: the test's thread. Exited: both spawned ones, merged under tid 0.
    assert_eq!(p.trees.len(), 2);
    let me = &p.trees[0];
    assert_ne!(me.tid, 0);
    assert_eq!(rows(&p, me), [("leaf".to_string(), 1, 1, 1)]);
    let exited = &p.trees[1];
    assert_eq!((exited.tid, exited.name.as_str()), (0, "exited threads"));
    let mut got = rows(&p, exited);
    got.sort();
    assert_eq!(
        got,
        [("leaf".to_string(), 1, 3, 3), ("step".into(), 1, 50, 50)]
    );
}

#[test]
fn a_profile_beside_the_window_has_the_same_calls_as_profile_mode() {
    let config = every_call().profile(true);
    assert!(config.profiles());
    let beside = profile_of(config, |_| main_work());
    let alone = profile_of(profile_mode(), |_| main_work());
    assert_eq!(
        rows(&beside, &beside.trees[0]),
        rows(&alone, &alone.trees[0])
    );
    assert_eq!(rows(&alone, &alone.trees[0]).len(), 4);
}

#[test]
fn a_recording_without_a_profile_says_so() {
    let _turn = testing::exclusive();
    let rec = fdr::start(Config::default()).unwrap();
    let e = rec.profile_to(&mut Vec::new()).unwrap_err();
    assert!(matches!(e, fdr::Error::NotProfiling), "{e}");
    assert!(e.to_string().contains("profile=on"), "{e}");
    rec.finish_to(&mut std::io::sink()).unwrap();
}

#[test]
fn finish_writes_the_profile_in_profile_mode_and_beside_the_log_otherwise() {
    let dir = scratch("profile-finish");
    for (config, log, profile) in [
        (profile_mode(), None, "p.fdr"),
        (Config::default().profile(true), Some("p.fdr"), "p.fdrprof"),
    ] {
        let _turn = testing::exclusive();
        let rec = fdr::start(config).unwrap();
        leaf(0);
        rec.finish(dir.join("p.fdr")).unwrap();
        let bytes = std::fs::read(dir.join(profile)).unwrap();
        let p = Profile::decode(&bytes).unwrap();
        assert_eq!(node(&p, &p.trees[0], "leaf").count, 1);
        if let Some(log) = log {
            let log = read_log(&dir.join(log));
            assert!(!log.tids().is_empty());
        }
        std::fs::remove_dir_all(&dir).ok();
        std::fs::create_dir_all(&dir).unwrap();
    }
    std::fs::remove_dir_all(dir).ok();
}

/// Profiles written many times while threads record, start and exit, in profile mode and beside
/// a ring: every one decodes, and after the threads are done the totals are exact.
#[test]
fn profiles_written_while_threads_record_start_and_exit() {
    for config in [profile_mode(), every_call().profile(true).buffer_count(64)] {
        let _turn = testing::exclusive();
        let rec = fdr::start(config).unwrap();
        let done = Arc::new(AtomicBool::new(false));
        let workers: Vec<_> = (0..4)
            .map(|_| {
                let done = Arc::clone(&done);
                std::thread::spawn(move || {
                    let mut calls = 0u64;
                    let mut rounds = 0;
                    while !done.load(Ordering::Relaxed) || rounds < 3 {
                        // Short-lived threads too: each round's calls are on a new thread.
                        let n = std::thread::spawn(|| {
                            for _ in 0..500 {
                                step(0, true);
                            }
                            500
                        })
                        .join()
                        .unwrap();
                        calls += n;
                        for _ in 0..500 {
                            leaf(0);
                        }
                        rounds += 1;
                    }
                    calls
                })
            })
            .collect();
        // The exited threads' calls are merged as they go: a later profile never has fewer.
        let mut last = 0;
        for _ in 0..50 {
            let mut bytes = Vec::new();
            rec.profile_to(&mut bytes).unwrap();
            let p = Profile::decode(&bytes).unwrap();
            let t = &p.trees[0];
            let steps = t
                .nodes
                .iter()
                .filter(|n| {
                    p.function_name(n.function)
                        .is_some_and(|f| short(f) == "step")
                })
                .map(|n| n.count)
                .sum::<u64>();
            assert!(steps >= last, "{steps} calls after {last}");
            last = steps;
        }
        done.store(true, Ordering::Relaxed);
        let step_calls: u64 = workers.into_iter().map(|w| w.join().unwrap()).sum();
        let mut bytes = Vec::new();
        rec.profile_to(&mut bytes).unwrap();
        rec.finish_to(&mut std::io::sink()).unwrap();
        let p = Profile::decode(&bytes).unwrap();
        let t = &p.trees[0];
        assert_eq!(node(&p, t, "step").count, step_calls);
        assert_eq!(node(&p, t, "step > leaf").count, step_calls);
        assert_eq!(node(&p, t, "leaf").count, step_calls);
    }
}

#[test]
fn the_snapshot_signal_writes_a_profile_in_profile_mode_and_one_beside_the_window_otherwise() {
    let dir = scratch("profile-signal");
    for (config, exts) in [
        (profile_mode(), vec!["fdrprof"]),
        (Config::default().profile(true), vec!["fdr", "fdrprof"]),
    ] {
        let _turn = testing::exclusive();
        let ext = exts[0];
        let rec = fdr::start(
            config
                .out(dir.join(format!("s.{ext}")))
                .snapshot_on_signal(fdr::Signal::Usr2),
        )
        .unwrap();
        step(0, true);
        // SAFETY: the recorder handles SIGUSR2: its handler only wakes the background writer.
        unsafe { libc::raise(libc::SIGUSR2) };
        // Snapshot numbers count over the process: find the files by their extensions.
        let written = || {
            let mut e: Vec<String> = std::fs::read_dir(&dir)
                .unwrap()
                .filter_map(|f| {
                    let p = f.ok()?.path();
                    let name = p.file_name()?.to_str()?.to_string();
                    (!name.contains(".tmp")).then(|| p.extension()?.to_str().map(String::from))?
                })
                .collect();
            e.sort();
            e
        };
        for _ in 0..500 {
            if written() == exts {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        rec.finish_to(&mut std::io::sink()).unwrap();
        assert_eq!(written(), exts);
        let profile = std::fs::read_dir(&dir)
            .unwrap()
            .map(|f| f.unwrap().path())
            .find(|p| p.extension().is_some_and(|e| e == "fdrprof"))
            .unwrap();
        let profile = Profile::decode(&std::fs::read(profile).unwrap()).unwrap();
        assert_eq!(node(&profile, &profile.trees[0], "step > leaf").count, 1);
        std::fs::remove_dir_all(&dir).ok();
        std::fs::create_dir_all(&dir).unwrap();
    }
    std::fs::remove_dir_all(dir).ok();
}

/// Pending once, then ready: two polls.
struct YieldOnce(bool);

impl Future for YieldOnce {
    type Output = ();
    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<()> {
        if self.0 {
            return std::task::Poll::Ready(());
        }
        self.0 = true;
        std::task::Poll::Pending
    }
}

#[fdr::instrument_fdr]
async fn polled_twice() {
    testing::advance(4);
    YieldOnce(false).await;
    leaf(6);
}

#[test]
fn an_async_fn_counts_its_polls_as_calls() {
    let p = profile_of(profile_mode(), |_| {
        let waker = std::task::Waker::noop();
        let mut cx = std::task::Context::from_waker(waker);
        let mut fut = std::pin::pin!(polled_twice());
        assert!(fut.as_mut().poll(&mut cx).is_pending());
        testing::advance(100);
        assert!(fut.as_mut().poll(&mut cx).is_ready());
    });
    let t = &p.trees[0];
    // Two polls: 4 ns, then 6 ns in leaf; the 100 ns between them is no poll's.
    assert_eq!(
        rows(&p, t),
        [
            ("polled_twice".to_string(), 2, 10, 4),
            ("polled_twice > leaf".into(), 1, 6, 6),
        ]
    );
}
