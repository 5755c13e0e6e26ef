//! Waits at await sites: each `.await` of an instrumented `async fn` whose future returns
//! `Pending` is recorded once it is passed (or dropped), with its site's place in the function
//! table and the ticks from the poll that found it pending to the one that passed it. Driven by
//! hand on the injected clock (1 tick = 1 ns), so every wait is exact.

use std::future::Future;
use std::pin::{pin, Pin};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use fdr_format::{AwaitEvent, FunctionKind, TaskKind};
use fdr_runtime::testing;
use fdr_testkit::futures::poll_once;
use fdr_testkit::logs::{DecodedLog, Rec};
use fdr_testkit::recording::{every_call, MockSession};

/// A future that is pending until its gate opens.
#[derive(Clone, Default)]
struct Gate(Arc<AtomicBool>);

impl Gate {
    fn open(&self) {
        self.0.store(true, Ordering::SeqCst);
    }
    /// An unannotated future, as a client library's is.
    fn wait(&self) -> GateWait {
        GateWait(Arc::clone(&self.0))
    }
}

struct GateWait(Arc<AtomicBool>);

impl Future for GateWait {
    type Output = ();
    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
        if self.0.load(Ordering::SeqCst) {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}

/// Where the line of this file holding `marker` is, and the column where `expr` begins on it:
/// `tests/awaits.rs:LINE:COLUMN`, as the function table says it.
fn site_of(marker: &str, expr: &str) -> (u32, u32) {
    let source = include_str!("awaits.rs");
    let (i, line) = source
        .lines()
        .enumerate()
        .find(|(_, l)| l.contains(marker) && !l.contains("site_of"))
        .unwrap_or_else(|| panic!("{marker} in the source"));
    let column = line.find(expr).expect("the expression on its line") + 1;
    (i as u32 + 1, column as u32)
}

#[fdr::instrument_fdr]
async fn handle(gate: Gate) -> u32 {
    testing::advance(10);
    std::future::ready(()).await; // ready at once
    gate.wait().await; // the slow await
    testing::advance(5);
    1
}

/// The await events of the log's one thread, with their time.
fn awaits(log: &DecodedLog) -> Vec<(u64, AwaitEvent)> {
    let tids = log.tids();
    assert_eq!(tids.len(), 1, "one thread");
    let mut t = 0u64;
    let mut out = Vec::new();
    for r in log.thread_records(tids[0]) {
        t = r.time_after(t);
        if let Rec::Await(a, _) = r {
            out.push((t, a));
        }
    }
    out
}

/// The await sites of the function table, as (id, function name, line, column).
fn sites(log: &DecodedLog) -> Vec<(u32, String, u32, u32)> {
    log.functions
        .iter()
        .filter(|f| f.kind == FunctionKind::Await && f.file.ends_with("awaits.rs"))
        .map(|f| (f.id, f.name.clone(), f.line, f.column))
        .collect()
}

fn site_id(log: &DecodedLog, (line, column): (u32, u32)) -> u32 {
    sites(log)
        .into_iter()
        .find(|s| (s.2, s.3) == (line, column))
        .unwrap_or_else(|| panic!("a site at {line}:{column} in {:?}", sites(log)))
        .0
}

fn fn_id(log: &DecodedLog, name: &str) -> u32 {
    log.functions
        .iter()
        .find(|f| f.name.ends_with(name) && f.kind == FunctionKind::Async)
        .unwrap_or_else(|| panic!("{name} in the table"))
        .id
}

/// `fdr calls --format json --function FUNCTION` of `bytes`: the task objects.
fn task_objects(bytes: &[u8], function: &str) -> Vec<serde_json::Value> {
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let path = std::env::temp_dir().join(format!(
        "fdr-awaits-{}-{}.fdr",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::write(&path, bytes).unwrap();
    let mut out = Vec::new();
    let args = [
        "calls",
        "--format",
        "json",
        "--function",
        function,
        &path.to_string_lossy(),
    ];
    fdr_cli::run(&args.map(String::from), &mut out).unwrap();
    std::fs::remove_file(&path).ok();
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    v.as_array()
        .unwrap()
        .iter()
        .filter(|c| c.get("task").is_some())
        .cloned()
        .collect()
}

#[test]
fn a_slow_await_is_timed_from_the_pending_poll_to_the_poll_that_passes_it() {
    let session = MockSession::start(every_call());
    let gate = Gate::default();
    let mut fut = pin!(handle(gate.clone()));
    // The first poll (at 1000) runs 10 ticks and finds the gate shut: the wait begins at 1010.
    assert_eq!(poll_once(fut.as_mut()), Poll::Pending);
    testing::advance(500);
    // Woken for nothing: still shut.
    assert_eq!(poll_once(fut.as_mut()), Poll::Pending);
    testing::advance(300);
    gate.open();
    // Passed at 1810: 800 ticks after it began, found pending by two polls.
    assert_eq!(poll_once(fut.as_mut()), Poll::Ready(1));
    let bytes = session.finish_bytes();
    let log = fdr_testkit::logs::decode(&bytes[..]).unwrap();

    let slow = site_of("// the slow await", "gate.wait()");
    let ready = site_of("// ready at once", "std::future::ready");
    // Both sites are in the table, named after the function; only the slow one waited.
    let names: Vec<String> = sites(&log)
        .into_iter()
        .filter(|s| (s.2, s.3) == slow || (s.2, s.3) == ready)
        .map(|s| s.1)
        .collect();
    assert_eq!(names.len(), 2, "{:?}", sites(&log));
    assert!(names.iter().all(|n| n.ends_with("::handle")), "{names:?}");
    assert_eq!(
        awaits(&log),
        [(
            1810,
            AwaitEvent {
                site: site_id(&log, slow),
                function: fn_id(&log, "::handle"),
                waited: 800,
                polls: 2,
                dropped: false,
            }
        )]
    );

    // `fdr calls` lists it under the task, where the file says it is.
    let tasks = task_objects(&bytes, "handle");
    assert_eq!(tasks.len(), 1, "{tasks:?}");
    let at = format!("fdr-tests/tests/awaits.rs:{}:{}", slow.0, slow.1);
    assert_eq!(
        tasks[0]["awaits"],
        serde_json::json!([{"at": at, "waited_ns": 800, "polls": 2, "start_ns": 10, "dropped": false}]),
        "{}",
        tasks[0]
    );
}

#[fdr::instrument_fdr]
async fn in_a_loop(gates: Vec<Gate>) -> u32 {
    let mut n = 0;
    for gate in gates {
        gate.wait().await; // each round
        n += 1;
    }
    n
}

#[test]
fn an_await_in_a_loop_records_each_wait_in_order() {
    let session = MockSession::start(every_call());
    let gates: Vec<Gate> = (0..3).map(|_| Gate::default()).collect();
    let mut fut = pin!(in_a_loop(gates.clone()));
    // Rounds wait 100, 200 and 300 ticks: each poll but the first passes a round's gate and
    // finds the next one shut.
    for (gate, wait) in gates.iter().zip([100, 200, 300]) {
        assert_eq!(poll_once(fut.as_mut()), Poll::Pending);
        testing::advance(wait);
        gate.open();
    }
    assert_eq!(poll_once(fut.as_mut()), Poll::Ready(3));
    let bytes = session.finish_bytes();
    let log = fdr_testkit::logs::decode(&bytes[..]).unwrap();
    let waits: Vec<(u64, u64)> = awaits(&log)
        .into_iter()
        .map(|(t, a)| (t, a.waited))
        .collect();
    assert_eq!(waits, [(1100, 100), (1300, 200), (1600, 300)]);
    let tasks = task_objects(&bytes, "in_a_loop");
    let waited: Vec<u64> = tasks[0]["awaits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["waited_ns"].as_u64().unwrap())
        .collect();
    assert_eq!(waited, [100, 200, 300], "{}", tasks[0]);
}

#[test]
fn a_task_dropped_while_it_waits_records_the_wait_as_dropped() {
    let session = MockSession::start(every_call());
    let gate = Gate::default();
    let mut fut = Box::pin(handle(gate.clone()));
    assert_eq!(poll_once(fut.as_mut()), Poll::Pending);
    testing::advance(250);
    drop(fut);
    let bytes = session.finish_bytes();
    let log = fdr_testkit::logs::decode(&bytes[..]).unwrap();
    let slow = site_of("// the slow await", "gate.wait()");
    assert_eq!(
        awaits(&log),
        [(
            1260,
            AwaitEvent {
                site: site_id(&log, slow),
                function: fn_id(&log, "::handle"),
                waited: 250,
                polls: 1,
                dropped: true,
            }
        )]
    );
    // The task's cancellation comes first, and the wait is tied to it.
    let tids = log.tids();
    let kinds: Vec<&str> = log
        .thread_records(tids[0])
        .into_iter()
        .filter_map(|r| match r {
            Rec::Task(TaskKind::Cancelled, ..) => Some("cancelled"),
            Rec::Await(..) => Some("await"),
            _ => None,
        })
        .collect();
    assert_eq!(kinds, ["cancelled", "await"]);
    let tasks = task_objects(&bytes, "handle");
    assert_eq!(tasks[0]["cancelled"], true);
    assert_eq!(tasks[0]["awaits"][0]["waited_ns"], 250, "{}", tasks[0]);
    assert_eq!(tasks[0]["awaits"][0]["dropped"], true, "{}", tasks[0]);
}

#[test]
fn a_wait_shorter_than_the_threshold_records_nothing() {
    let session = MockSession::start(every_call().threshold(std::time::Duration::from_nanos(100)));
    let gates: Vec<Gate> = (0..2).map(|_| Gate::default()).collect();
    let mut fut = pin!(in_a_loop(gates.clone()));
    // The first wait is 40 ticks, under the threshold; the second 400.
    for (gate, wait) in gates.iter().zip([40, 400]) {
        assert_eq!(poll_once(fut.as_mut()), Poll::Pending);
        testing::advance(wait);
        gate.open();
    }
    assert_eq!(poll_once(fut.as_mut()), Poll::Ready(2));
    let log = session.finish();
    let waits: Vec<u64> = awaits(&log).into_iter().map(|(_, a)| a.waited).collect();
    assert_eq!(waits, [400]);
}

#[test]
fn awaits_ready_at_once_record_nothing_and_read_no_clock() {
    static READS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    fn count() {
        READS.fetch_add(1, Ordering::Relaxed);
    }
    let session = MockSession::start(every_call());
    let gate = Gate::default();
    gate.open();
    let mut fut = pin!(handle(gate));
    testing::on_clock_read(Some(count));
    assert_eq!(poll_once(fut.as_mut()), Poll::Ready(1));
    testing::on_clock_read(None);
    // The poll's entry and exit only.
    assert_eq!(READS.load(Ordering::Relaxed), 2);
    let log = session.finish();
    assert_eq!(awaits(&log), []);
}

#[fdr::instrument_fdr]
async fn first_of(a: Gate, b: Gate) -> u32 {
    tokio::select! {
        biased;
        _ = a.wait() => 1,
        _ = b.wait() => { 2 } // the branches
    }
}

#[test]
fn a_select_records_the_branch_that_won_and_the_ones_it_dropped() {
    let session = MockSession::start(every_call());
    let (a, b) = (Gate::default(), Gate::default());
    let mut fut = pin!(first_of(a.clone(), b.clone()));
    assert_eq!(poll_once(fut.as_mut()), Poll::Pending);
    testing::advance(400);
    b.open();
    assert_eq!(poll_once(fut.as_mut()), Poll::Ready(2));
    let bytes = session.finish_bytes();
    let log = fdr_testkit::logs::decode(&bytes[..]).unwrap();
    let site_a = site_id(&log, site_of("_ = a.wait() => 1", "a.wait()"));
    let site_b = site_id(&log, site_of("// the branches", "b.wait()"));
    let function = fn_id(&log, "::first_of");
    let wait = |site, polls, dropped| AwaitEvent {
        site,
        function,
        waited: 400,
        polls,
        dropped,
    };
    // The winner passes; the select then drops the loser, still waiting (biased, it was
    // polled first, and found pending twice), in the same poll.
    assert_eq!(
        awaits(&log),
        [
            (1400, wait(site_b, 1, false)),
            (1400, wait(site_a, 2, true))
        ]
    );
    let tasks = task_objects(&bytes, "first_of");
    let dropped: Vec<bool> = tasks[0]["awaits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["dropped"].as_bool().unwrap())
        .collect();
    assert_eq!(dropped, [false, true], "{}", tasks[0]);
}

#[fdr::instrument_fdr]
async fn both_of(a: Gate, b: Gate) -> u32 {
    let ((), ()) = tokio::join!(a.wait(), b.wait()); // joined
    3
}

#[test]
fn a_join_records_each_future_s_wait() {
    let session = MockSession::start(every_call());
    let (a, b) = (Gate::default(), Gate::default());
    let mut fut = pin!(both_of(a.clone(), b.clone()));
    assert_eq!(poll_once(fut.as_mut()), Poll::Pending);
    testing::advance(100);
    a.open();
    assert_eq!(poll_once(fut.as_mut()), Poll::Pending);
    testing::advance(200);
    b.open();
    assert_eq!(poll_once(fut.as_mut()), Poll::Ready(3));
    let log = session.finish();
    let site_a = site_id(&log, site_of("// joined", "a.wait()"));
    let site_b = site_id(&log, site_of("// joined", "b.wait()"));
    let got: Vec<(u64, u32, u64, u32)> = awaits(&log)
        .into_iter()
        .map(|(t, a)| (t, a.site, a.waited, a.polls))
        .collect();
    assert_eq!(got, [(1100, site_a, 100, 1), (1300, site_b, 300, 2)]);
}

#[fdr::instrument_fdr]
async fn fetch(rx: tokio::sync::oneshot::Receiver<u32>) -> (u32, std::time::Duration) {
    let before = std::time::Instant::now();
    let v = rx.await.unwrap(); // from another thread
    (v, before.elapsed())
}

#[test]
fn on_tokio_a_wait_for_another_thread_is_within_what_the_task_measured() {
    let _turn = testing::exclusive();
    let rec = fdr_runtime::start(every_call()).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let (tx, rx) = tokio::sync::oneshot::channel();
    let sender = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(20));
        tx.send(7).unwrap();
    });
    let (v, measured) = rt.block_on(fetch(rx));
    sender.join().unwrap();
    assert_eq!(v, 7);
    let mut bytes = Vec::new();
    rec.finish_to(&mut bytes).unwrap();
    let log = fdr_testkit::logs::decode(&bytes[..]).unwrap();
    let tasks = task_objects(&bytes, "fetch");
    assert_eq!(tasks.len(), 1, "{tasks:?}");
    let waits = tasks[0]["awaits"].as_array().unwrap();
    assert_eq!(waits.len(), 1, "{}", tasks[0]);
    let (line, column) = site_of("// from another thread", "rx");
    assert_eq!(
        waits[0]["at"],
        format!("fdr-tests/tests/awaits.rs:{line}:{column}")
    );
    // Woken once, by the send; the wait lies inside what the task measured around the await.
    assert_eq!(waits[0]["polls"], 1);
    let waited = waits[0]["waited_ns"].as_u64().unwrap();
    assert!(
        waited > 0 && u128::from(waited) <= measured.as_nanos(),
        "waited {waited} ns, measured {measured:?}"
    );
    assert!(
        sites(&log).iter().all(|s| s.1.contains("::")),
        "{:?}",
        sites(&log)
    );
}

// ---------------------------------------------------------------------------------------------
// Wake-ups: a woken task's next poll records when it was woken and by which thread.

/// A future that keeps the waker of each poll (counting the clones it had to make) and is
/// pending until it is fired, which wakes the waker kept.
#[derive(Clone, Default)]
struct Signal(Arc<std::sync::Mutex<SignalState>>);

#[derive(Default)]
struct SignalState {
    fired: bool,
    waker: Option<Waker>,
    clones: u32,
}

impl Signal {
    fn fire(&self) {
        let w = {
            let mut s = self.0.lock().unwrap();
            s.fired = true;
            s.waker.take()
        };
        if let Some(w) = w {
            w.wake();
        }
    }
    fn wait(&self) -> SignalWait {
        SignalWait(self.clone())
    }
    fn clones(&self) -> u32 {
        self.0.lock().unwrap().clones
    }
}

struct SignalWait(Signal);

impl Future for SignalWait {
    type Output = ();
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let mut s = (self.0).0.lock().unwrap();
        if s.fired {
            return Poll::Ready(());
        }
        // As a channel keeps its receiver's waker: replaced only by one that would not wake
        // the same task.
        if !s.waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
            s.waker = Some(cx.waker().clone());
            s.clones += 1;
        }
        Poll::Pending
    }
}

/// An executor's waker that counts its wakes.
#[derive(Default)]
struct Counting(std::sync::atomic::AtomicU32);

impl Wake for Counting {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[fdr::instrument_fdr]
async fn woken(signal: Signal) -> u32 {
    signal.wait().await; // woken
    2
}

/// The wake events of the log's one thread, with their time.
fn wakes(log: &DecodedLog) -> Vec<(u64, fdr_format::WakeEvent)> {
    let tids = log.tids();
    let mut t = 0u64;
    let mut out = Vec::new();
    for r in log.thread_records(tids[0]) {
        t = r.time_after(t);
        if let Rec::Woken(w, _) = r {
            out.push((t, w));
        }
    }
    out
}

#[test]
fn a_woken_task_s_next_poll_records_when_it_was_woken() {
    let session = MockSession::start(every_call());
    let signal = Signal::default();
    let executor = Arc::new(Counting::default());
    let waker = Waker::from(Arc::clone(&executor));
    let mut cx = Context::from_waker(&waker);
    let mut fut = pin!(woken(signal.clone()));
    // Pending at 1000, then pending again when polled for nothing at 1050.
    assert_eq!(fut.as_mut().poll(&mut cx), Poll::Pending);
    testing::advance(50);
    assert_eq!(fut.as_mut().poll(&mut cx), Poll::Pending);
    // Fired (woken) at 1100; polled 40 ticks later.
    testing::advance(50);
    signal.fire();
    assert_eq!(
        executor.0.load(Ordering::SeqCst),
        1,
        "the executor's waker is woken through the task's"
    );
    testing::advance(40);
    assert_eq!(fut.as_mut().poll(&mut cx), Poll::Ready(2));
    // The future kept one waker: the task lends the same one at every poll.
    assert_eq!(signal.clones(), 1);
    let bytes = session.finish_bytes();
    let log = fdr_testkit::logs::decode(&bytes[..]).unwrap();
    let tid = log.tids()[0];
    // `fdr calls` splits the task's latency: 40 ticks waiting, woken, to be polled.
    let tasks = task_objects(&bytes, "woken");
    assert_eq!(tasks.len(), 1, "{tasks:?}");
    assert_eq!(
        (&tasks[0]["scheduled_ns"], &tasks[0]["wake_ups"]),
        (&serde_json::json!(40), &serde_json::json!(1)),
        "{}",
        tasks[0]
    );
    assert_eq!(
        wakes(&log),
        [(
            1140,
            fdr_format::WakeEvent {
                function: fn_id(&log, "::woken"),
                woken_at: 1100,
                waker_tid: tid,
            }
        )]
    );
    // Inside the poll it speaks of, right after its entry; the wait passed after it.
    let story: Vec<&str> = log
        .thread_records(tid)
        .into_iter()
        .filter_map(|r| match r {
            Rec::Enter(..) => Some("enter"),
            Rec::Exit(..) => Some("exit"),
            Rec::Woken(..) => Some("woken"),
            Rec::Await(..) => Some("await"),
            Rec::Polled(..) => Some("polled"),
            _ => None,
        })
        .collect();
    assert_eq!(
        story,
        [
            "enter", "exit", "polled", "enter", "exit", "polled", "enter", "woken", "await",
            "exit", "polled"
        ]
    );
}

#[test]
fn a_task_polled_sooner_than_the_threshold_after_its_wake_records_no_wake() {
    let session = MockSession::start(every_call().threshold(std::time::Duration::from_nanos(100)));
    let signal = Signal::default();
    let mut fut = pin!(woken(signal.clone()));
    assert_eq!(poll_once(fut.as_mut()), Poll::Pending);
    testing::advance(5_000);
    signal.fire();
    testing::advance(40);
    assert_eq!(poll_once(fut.as_mut()), Poll::Ready(2));
    let log = session.finish();
    assert_eq!(wakes(&log), []);
}

#[fdr::instrument_fdr]
async fn waits_for(rx: tokio::sync::oneshot::Receiver<u32>) -> u32 {
    rx.await.unwrap()
}

#[test]
fn on_a_blocked_current_thread_runtime_the_wait_to_be_polled_is_the_block() {
    let _turn = testing::exclusive();
    let rec = fdr_runtime::start(every_call()).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let (tx, rx) = tokio::sync::oneshot::channel();
    let (sent_tx, sent_rx) = std::sync::mpsc::channel();
    let (blocker_end, sent_after) = rt.block_on(async move {
        let task = tokio::spawn(waits_for(rx));
        // Let the task begin to wait.
        tokio::task::yield_now().await;
        let sender = std::thread::spawn(move || {
            tx.send(7).unwrap();
            sent_tx.send(std::time::Instant::now()).unwrap();
        });
        // The runtime's only thread blocks (a synchronous wait inside a poll) until the send
        // woke the task, and 20 ms more: the task waits, ready, for the block to end.
        let sent_after = sent_rx.recv().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let blocker_end = std::time::Instant::now();
        sender.join().unwrap();
        assert_eq!(task.await.unwrap(), 7);
        (blocker_end, sent_after)
    });
    let mut bytes = Vec::new();
    rec.finish_to(&mut bytes).unwrap();
    let log = fdr_testkit::logs::decode(&bytes[..]).unwrap();
    let f = fn_id(&log, "::waits_for");
    let mut found = Vec::new();
    for tid in log.tids() {
        let mut t = 0u64;
        for r in log.thread_records(tid) {
            t = r.time_after(t);
            if let Rec::Woken(w, _) = r {
                if w.function == f {
                    found.push((tid, t.saturating_sub(w.woken_at), w.waker_tid));
                }
            }
        }
    }
    assert_eq!(found.len(), 1, "{found:?}");
    let (polled_on, scheduled, waker_tid) = found[0];
    assert_ne!(waker_tid, polled_on, "woken by the sender's thread");
    assert_ne!(waker_tid, 0);
    // The wake came before `sent_after`, the poll after `blocker_end`.
    // Two clocks compared (the log's counter, the test's `Instant`): a calibration within 1%,
    // and under qemu-user, whose emulated counter strays further, within half.
    let hz = log.run.ticks_per_second as f64;
    let at_least = blocker_end.duration_since(sent_after).as_secs_f64();
    let slack = if cfg!(fdr_emulated) { 0.5 } else { 0.99 };
    assert!(
        scheduled as f64 / hz >= at_least * slack,
        "scheduled {} s, the block lasted {at_least} s past the wake",
        scheduled as f64 / hz
    );
}
