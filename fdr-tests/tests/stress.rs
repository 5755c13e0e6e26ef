//! Snapshots while 8 threads record, start and exit.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use fdr_runtime::{testing, CallGuard, Config, Mode};
use fdr_testkit::desc;
use fdr_testkit::logs::{decode, DecodedLog, Rec};
use fdr_testkit::recording::every_call;

desc!(OUTER, "stress::outer");
desc!(INNER, "stress::inner");
desc!(LEAF, "stress::leaf");

type Counters = Arc<Mutex<HashMap<i32, Arc<AtomicU64>>>>;

fn tid() -> i32 {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::syscall(libc::SYS_gettid) as i32 }
}

/// An async function whose tasks are ready at their first poll.
#[fdr::instrument_fdr]
async fn short_task(x: u32) -> u32 {
    std::hint::black_box(x)
}

/// An outer call around an inner call around `leaves` leaf calls (and with `tasks`, a task
/// polled to its end and one dropped unpolled, each erased whole when short). The inner call
/// lasts at least 400 ns (3 us with tasks), so with the ring tests' 300 ns threshold (2 us) the
/// leaves are erased and the outer and inner calls kept, in debug and release builds alike.
#[inline(never)]
fn one_call(leaves: u32, tasks: bool) {
    let _o = CallGuard::enter(&OUTER);
    {
        let _i = CallGuard::enter(&INNER);
        let began = std::time::Instant::now();
        for _ in 0..leaves {
            let _l = CallGuard::enter(&LEAF);
            std::hint::black_box(());
        }
        if tasks {
            let waker = fdr_testkit::futures::noop_waker();
            let mut fut = std::pin::pin!(short_task(leaves));
            let ready = fut
                .as_mut()
                .poll(&mut std::task::Context::from_waker(&waker));
            assert_eq!(ready, std::task::Poll::Ready(leaves));
            drop(short_task(leaves));
        }
        while began.elapsed() < Duration::from_nanos(if tasks { 3000 } else { 400 }) {
            std::hint::spin_loop();
        }
    }
}

/// Runs `waves` short-lived threads in each of 8 slots, each making `calls` calls; returns
/// when all are done.
fn workers(
    waves: usize,
    calls: u64,
    tasks: bool,
    counters: Counters,
) -> Vec<std::thread::JoinHandle<()>> {
    (0..8)
        .map(|slot| {
            let counters = Arc::clone(&counters);
            std::thread::spawn(move || {
                for wave in 0..waves {
                    let counters = Arc::clone(&counters);
                    std::thread::Builder::new()
                        .name(format!("w{slot}.{wave}"))
                        .spawn(move || {
                            let done = Arc::new(AtomicU64::new(0));
                            counters.lock().unwrap().insert(tid(), Arc::clone(&done));
                            for i in 0..calls {
                                one_call((i % 4) as u32, tasks);
                                done.fetch_add(1, Ordering::Release);
                            }
                        })
                        .unwrap()
                        .join()
                        .unwrap();
                }
            })
        })
        .collect()
}

/// Walks each thread's records with a shadow stack. Every exit must close the innermost open
/// call, except exits with nothing open, which close calls opened before the window; an outer
/// call whose entry is in the window holds exactly one inner call (which is never erased), so a
/// record lost, doubled or left behind by a rewind inside a window shows. Returns the number of
/// complete outer calls per thread, and how many exits had nothing open.
fn check_nesting(log: &DecodedLog) -> (HashMap<i32, u64>, u64) {
    let mut complete = HashMap::new();
    let mut unopened = 0;
    let task_fn = log
        .functions
        .iter()
        .find(|f| f.name.ends_with("::short_task"))
        .map(|f| f.id);
    for tid in log.tids() {
        // Per open call: its id and how many inner calls it holds.
        let mut stack: Vec<(u32, u32)> = Vec::new();
        let mut n = 0;
        // Tasks created in the window and not ended yet; tasks ended.
        let mut open_tasks = HashSet::new();
        let mut ended_tasks = HashSet::new();
        for r in log.thread_records(tid) {
            match r {
                // A task's records: created once, ended once, after its creation if that is in
                // the window. A poll kept (the thread preempted in it) is followed by its event.
                Rec::Task(kind, _, task, _) => {
                    if kind == fdr_format::TaskKind::Created {
                        assert!(
                            open_tasks.insert(task) && !ended_tasks.contains(&task),
                            "thread {tid}: task {task} created twice"
                        );
                    } else {
                        open_tasks.remove(&task);
                        assert!(
                            ended_tasks.insert(task),
                            "thread {tid}: task {task} ended twice"
                        );
                    }
                }
                Rec::Polled(..) => {}
                Rec::Enter(id, _) => {
                    if id == INNER.id() {
                        if let Some(top) = stack.last_mut() {
                            top.1 += 1;
                        }
                    }
                    stack.push((id, 0));
                }
                Rec::Exit(id, _) => match stack.pop() {
                    Some((top, inner)) => {
                        assert_eq!(top, id, "thread {tid}: exit of {id} closes {top}");
                        if id == OUTER.id() {
                            assert_eq!(
                                inner, 1,
                                "thread {tid}: an outer call holds {inner} inner calls"
                            );
                            n += 1;
                        }
                    }
                    None => unopened += 1,
                },
                Rec::Cpu(..) | Rec::Wrap(..) => {}
                // With culling on, the leaf, erased every time, is culled after a long run of
                // erased calls (sooner in a release build); the calls around it never are.
                Rec::Cull(_, id, _, _) => assert!(
                    id == LEAF.id() || Some(id) == task_fn,
                    "thread {tid}: function {id} culled"
                ),
                other => panic!("unexpected record {other:?}"),
            }
        }
        complete.insert(tid, n);
    }
    (complete, unopened)
}

/// Takes snapshots while `workers` record; returns the final log and the complete outer calls
/// the snapshots held, all together.
fn snapshots_while_recording(
    config: Config,
    waves: usize,
    calls: u64,
    fill: bool,
    tasks: bool,
) -> (DecodedLog, u64) {
    let _turn = testing::exclusive();
    let rec = fdr_runtime::start(config).unwrap();
    let counters: Counters = Arc::default();
    let handles = workers(waves, calls, tasks, Arc::clone(&counters));
    let mut snapshots = 0;
    let mut in_snapshots = 0;
    // At least 50 snapshots, and more for as long as the workers run.
    while snapshots < 50 || !handles.iter().all(|h| h.is_finished()) {
        let before: HashMap<i32, u64> = counters
            .lock()
            .unwrap()
            .iter()
            .map(|(&t, c)| (t, c.load(Ordering::Acquire)))
            .collect();
        let mut bytes = Vec::new();
        rec.snapshot(&mut bytes).unwrap();
        let log = decode(&bytes[..]).unwrap_or_else(|e| panic!("snapshot {snapshots}: {e}"));
        let (complete, unopened) = check_nesting(&log);
        in_snapshots += complete.values().sum::<u64>();
        // No thread has more complete calls in a snapshot than it had made when the snapshot
        // ended (but for the one whose exit was recorded and not yet counted): a buffer copied
        // twice, or a recycled one read as new, would.
        let after: HashMap<i32, u64> = counters
            .lock()
            .unwrap()
            .iter()
            .map(|(&t, c)| (t, c.load(Ordering::Acquire)))
            .collect();
        for (t, &got) in &complete {
            // The thread may have been preempted between its outer call's exit and counting it,
            // for as long as the snapshot took (seen beside a CI run): one call more.
            let done = after.get(t).copied().unwrap_or(0);
            assert!(
                got <= done + 1,
                "thread {t}: {got} calls in the snapshot, {done} made"
            );
        }
        if fill {
            // Nothing was recycled: no window starts mid-stack, and every call that had
            // returned before the snapshot began is in it.
            assert_eq!(unopened, 0);
            for (t, n) in before {
                let got = complete.get(&t).copied().unwrap_or(0);
                assert!(
                    got >= n,
                    "thread {t}: {n} calls done before the snapshot, {got} in it"
                );
            }
        }
        snapshots += 1;
        if fill {
            std::thread::sleep(Duration::from_millis(2));
        }
    }
    for h in handles {
        h.join().unwrap();
    }
    let mut bytes = Vec::new();
    rec.finish_to(&mut bytes).unwrap();
    let log = decode(&bytes[..]).unwrap();
    if fill {
        let (complete, unopened) = check_nesting(&log);
        assert_eq!(unopened, 0);
        let counters = counters.lock().unwrap();
        assert_eq!(counters.len(), 8 * waves);
        for (t, c) in counters.iter() {
            assert_eq!(
                complete.get(t).copied(),
                Some(c.load(Ordering::Acquire)),
                "thread {t}"
            );
        }
        assert_eq!(log.run.records_dropped, 0);
    }
    (log, in_snapshots)
}

/// Waves of threads and calls per thread are divided by this under qemu-user, where every
/// record is an emulated `getcpu` system call: the same races, fewer of them.
const SCALE: usize = if cfg!(fdr_emulated) { 2 } else { 1 };

#[test]
fn fill_snapshots_are_complete_and_valid() {
    let waves = 4 / SCALE;
    let (log, _) = snapshots_while_recording(
        every_call()
            .buffer_size(64 * 1024)
            .buffer_count(512)
            .mode(Mode::Fill),
        waves,
        3000 / SCALE as u64,
        true,
        false,
    );
    assert_eq!(log.threads.len(), 8 * waves);
}

#[test]
fn ring_snapshots_with_rewinds_are_valid() {
    ring_snapshots(false);
}

#[test]
fn ring_snapshots_with_tasks_erased_whole_are_valid() {
    // Taking back a task's creation record undoes a record below the stable length: a copy
    // that raced it must fall back to the lowered one.
    ring_snapshots(true);
}

fn ring_snapshots(tasks: bool) {
    // Leaf calls are shorter than the threshold and get erased all the time, racing the copies;
    // tiny buffers are switched and recycled constantly while snapshots run back to back.
    let threshold = Duration::from_nanos(if tasks { 2000 } else { 300 });
    let (log, in_snapshots) = snapshots_while_recording(
        // Without the cost budget: these loops record far more than 1 % of their CPU time, and
        // the budget would rightly untime the inner call (kept, with a timed caller), which
        // the nesting's check counts in every outer call.
        Config::default()
            .buffer_size(512)
            .buffer_count(48)
            .threshold(threshold)
            .mode(Mode::Ring)
            .budget(None),
        6 / SCALE,
        5_000 / SCALE as u64,
        false,
        tasks,
    );
    assert!(log.run.buffers_recycled > 0, "{:?}", log.run);
    // The window is full of calls (48 buffers of 512 bytes hold about 700 outer calls with their
    // inner ones), and the rewind erased the leaves: one is kept only when its thread was
    // preempted inside it. Without the rewind there would be 1.5 leaves per outer call.
    // Under qemu-user, where every record is slow, the tasks are kept too, with their polls:
    // about 30 words an outer call, a hundred of them in the window (88 in one CI run).
    let least = if tasks && cfg!(fdr_emulated) { 50 } else { 100 };
    let (complete, _) = check_nesting(&log);
    let outer: u64 = complete.values().sum();
    assert!(
        outer >= least,
        "{outer} complete outer calls in the final window"
    );
    // And so were the snapshots, taken while the threads recorded: 50 at least, each with
    // calls but perhaps the first ones.
    assert!(
        in_snapshots >= 50 * least,
        "{in_snapshots} complete outer calls in all the snapshots together"
    );
    // The rewind erased every short leaf and every short task: what the window holds of them
    // lasted the threshold at least (the thread was preempted in it), or could not be erased
    // for a reason the log shows (a CPU change between entry and exit; a task whose creation
    // opened a buffer, where it is stable). Judged by the log's own durations, not by how often
    // this machine preempts a thread.
    let threshold_ticks =
        (threshold.as_nanos() * u128::from(log.run.ticks_per_second) / 1_000_000_000) as u64;
    let (short_leaves, short_tasks, task_records) = short_kept(&log, threshold_ticks);
    assert_eq!(
        short_leaves, 0,
        "leaf calls shorter than the threshold kept: the rewind erases them"
    );
    assert_eq!(
        short_tasks, 0,
        "tasks shorter than the threshold kept whole: they are erased"
    );
    if !tasks {
        assert_eq!(task_records, 0);
    }
}

/// In `log`, per block: leaf calls kept with nothing between their entry and exit that lasted
/// less than `threshold` ticks; tasks created and ended with nothing between that lasted less
/// (but a creation that opened its block); and all task records. A 1% margin covers the rate
/// the log states against the one the recorder converted the threshold with.
fn short_kept(log: &DecodedLog, threshold: u64) -> (u64, u64, u64) {
    let short = |d: u64| d * 100 < threshold * 99;
    let (mut leaves, mut tasks, mut task_records) = (0, 0, 0);
    for b in &log.blocks {
        task_records += b
            .records
            .iter()
            .filter(|r| matches!(r, Rec::Task(..)))
            .count() as u64;
        for (i, pair) in b.records.windows(2).enumerate() {
            match (&pair[0], &pair[1]) {
                (Rec::Enter(a, _), Rec::Exit(z, d)) if *a == LEAF.id() && z == a => {
                    leaves += u64::from(short(u64::from(*d)));
                }
                (Rec::Task(fdr_format::TaskKind::Created, _, a, _), Rec::Task(_, _, z, d))
                    if a == z && !opens(&b.records[..i]) =>
                {
                    tasks += u64::from(short(*d as u64));
                }
                _ => {}
            }
        }
    }
    (leaves, tasks, task_records)
}

/// Whether a record after `before` opens its block: only the preamble's metadata precedes it.
fn opens(before: &[Rec]) -> bool {
    before
        .iter()
        .all(|r| matches!(r, Rec::Cpu(..) | Rec::Wrap(..)))
}

#[test]
fn a_second_concurrent_snapshot_gets_a_clear_error() {
    let _turn = testing::exclusive();
    let rec = fdr_runtime::start(every_call().buffer_count(2)).unwrap();
    struct Slow<'a>(&'a fdr_runtime::Recorder, Option<fdr_runtime::Error>);
    impl std::io::Write for Slow<'_> {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            if self.1.is_none() {
                // While this snapshot is being written, try another.
                self.1 = self.0.snapshot(&mut std::io::sink()).err();
            }
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut w = Slow(&rec, None);
    rec.snapshot(&mut w).unwrap();
    let err = w.1.expect("the inner snapshot must fail");
    assert!(matches!(err, fdr_runtime::Error::SnapshotInProgress));
    assert!(err.to_string().contains("only one runs at a time"), "{err}");
    rec.snapshot(&mut std::io::sink()).unwrap();
    rec.finish_to(&mut std::io::sink()).unwrap();
    assert!(matches!(
        rec.snapshot(&mut std::io::sink()),
        Err(fdr_runtime::Error::NotRecording)
    ));
}
