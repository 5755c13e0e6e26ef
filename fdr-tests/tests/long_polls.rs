//! A poll longer than the long-poll limit (`long_poll=`) is a trigger: it blocked its thread, an
//! executor's worker, and every task waiting for it. One that ends past the limit fires at its
//! exit (exact, on the injected clock); one still running fires from the watchdog while it runs.

use std::path::{Path, PathBuf};
use std::pin::pin;
use std::task::Poll;
use std::time::{Duration, Instant};

use fdr_format::Reason;
use fdr_runtime::testing;
use fdr_testkit::futures::poll_once;
use fdr_testkit::logs::{decode, DecodedLog};
use fdr_testkit::recording::{every_call, MockSession};

fn fresh_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("fdr-long-polls-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The snapshots in `dir` once there are `n` (or the deadline passed), decoded.
fn snapshots(dir: &Path, n: usize) -> Vec<DecodedLog> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "fdr"))
            .collect();
        if files.len() >= n || Instant::now() > deadline {
            files.sort();
            return files
                .iter()
                .map(|f| decode(&std::fs::read(f).unwrap()[..]).unwrap())
                .collect();
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// One poll, `ticks` long on the injected clock.
#[fdr::instrument_fdr]
async fn computes(ticks: u64) -> u64 {
    testing::advance(ticks);
    std::future::ready(()).await;
    ticks
}

#[test]
fn a_poll_past_the_limit_fires_at_its_exit_with_its_exact_length() {
    let dir = fresh_dir("exit");
    let session = MockSession::start(
        every_call()
            .out(dir.join("t.fdr"))
            .long_poll(Duration::from_nanos(300))
            .trigger_cooldown(Duration::from_nanos(1)),
    );
    // Within the limit: nothing. Past it (at 1000 + 200): fires.
    assert_eq!(poll_once(pin!(computes(200)).as_mut()), Poll::Ready(200));
    assert_eq!(poll_once(pin!(computes(500)).as_mut()), Poll::Ready(500));
    let logs = snapshots(&dir, 1);
    drop(session);
    assert_eq!(logs.len(), 1);
    let why = logs[0].reason.clone().unwrap();
    assert_eq!(why.reason, Reason::LongPoll);
    assert_eq!(
        logs[0]
            .name(why.function)
            .map(|n| n.ends_with("::computes")),
        Some(true)
    );
    assert_eq!((why.start_tsc, why.duration_ticks), (1200, 500));
    assert_eq!(why.limit_ticks, 300);
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn without_a_limit_no_poll_fires() {
    let dir = fresh_dir("off");
    let session = MockSession::start(
        every_call()
            .out(dir.join("t.fdr"))
            .long_poll(Duration::ZERO)
            .trigger_cooldown(Duration::from_nanos(1)),
    );
    assert_eq!(
        poll_once(pin!(computes(10_000_000_000)).as_mut()),
        Poll::Ready(10_000_000_000)
    );
    let bytes = session.finish_bytes();
    let log = decode(&bytes[..]).unwrap();
    assert!(log
        .options
        .as_deref()
        .is_some_and(|o| o.contains("long_poll=off")));
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0, "no snapshot");
    std::fs::remove_dir_all(dir).ok();
}

/// Blocks its poll (as a synchronous wait inside async code does) until a snapshot is in `dir`.
#[fdr::instrument_fdr]
async fn blocks_until_seen(dir: PathBuf) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if std::fs::read_dir(&dir).unwrap().count() > 0 {
            return true;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    false
}

#[test]
fn a_poll_that_blocks_its_worker_is_caught_while_it_still_runs() {
    let _turn = testing::exclusive();
    let dir = fresh_dir("running");
    let rec = fdr_runtime::start(
        every_call()
            .out(dir.join("t.fdr"))
            .long_poll(Duration::from_millis(30)),
    )
    .unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    // The poll returns only once the snapshot it caused is written.
    assert!(rt.block_on(blocks_until_seen(dir.clone())));
    let logs = snapshots(&dir, 1);
    rec.finish_to(&mut std::io::sink()).unwrap();
    let why = logs[0].reason.clone().unwrap();
    assert_eq!(why.reason, Reason::LongPollRunning);
    assert_eq!(
        logs[0]
            .name(why.function)
            .map(|n| n.ends_with("::blocks_until_seen")),
        Some(true)
    );
    // Reported once: its end, past the limit too, does not fire again.
    std::thread::sleep(Duration::from_millis(50));
    let files = std::fs::read_dir(&dir).unwrap().count();
    assert_eq!(files, 1);
    std::fs::remove_dir_all(dir).ok();
}

/// [`computes`] with its argument logged: its first poll's entry carries it, a record of its
/// own kind, which the long-poll timing must see as any entry.
#[fdr::instrument_fdr(log_args)]
async fn computes_logged(ticks: u64) -> u64 {
    testing::advance(ticks);
    std::future::ready(()).await;
    ticks
}

/// [`computes`] under a trigger of its own, which applies to its tasks: its polls are timed
/// against the long-poll limit all the same.
#[fdr::instrument_fdr]
async fn computes_triggered(ticks: u64) -> u64 {
    testing::advance(ticks);
    std::future::ready(()).await;
    ticks
}

/// The one snapshot a poll of `run` writes past a 300-tick limit, its reason checked.
fn one_long_poll(name: &str, suffix: &str, run: impl FnOnce()) {
    let dir = fresh_dir(name);
    let session = MockSession::start(
        every_call()
            .out(dir.join("t.fdr"))
            .long_poll(Duration::from_nanos(300))
            .trigger("*::computes_triggered", Duration::from_secs(3600))
            .trigger_cooldown(Duration::from_nanos(1)),
    );
    run();
    let logs = snapshots(&dir, 1);
    drop(session);
    assert_eq!(logs.len(), 1, "{name}: one snapshot");
    let why = logs[0].reason.clone().unwrap();
    assert_eq!(why.reason, Reason::LongPoll, "{name}");
    assert_eq!(
        logs[0].name(why.function).map(|n| n.ends_with(suffix)),
        Some(true),
        "{name}: {:?}",
        logs[0].name(why.function)
    );
    assert_eq!((why.start_tsc, why.duration_ticks), (1200, 500), "{name}");
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn a_first_poll_with_logged_arguments_is_timed_as_any() {
    one_long_poll("args", "::computes_logged", || {
        assert_eq!(
            poll_once(pin!(computes_logged(200)).as_mut()),
            Poll::Ready(200)
        );
        assert_eq!(
            poll_once(pin!(computes_logged(500)).as_mut()),
            Poll::Ready(500)
        );
    });
}

#[test]
fn an_async_fn_with_a_trigger_of_its_own_has_its_polls_timed_too() {
    one_long_poll("triggered", "::computes_triggered", || {
        assert_eq!(
            poll_once(pin!(computes_triggered(200)).as_mut()),
            Poll::Ready(200)
        );
        assert_eq!(
            poll_once(pin!(computes_triggered(500)).as_mut()),
            Poll::Ready(500)
        );
    });
}

/// Awaits [`computes`] after its own `ticks`: the inner poll runs inside this one's.
#[fdr::instrument_fdr]
async fn awaits_computes(ticks: u64, inner: u64) -> u64 {
    testing::advance(ticks);
    computes(inner).await
}

#[test]
fn a_nested_poll_past_the_limit_is_named_and_its_outer_poll_not_written_again() {
    // The outer poll (1000..1700) holds the inner one (1200..1700): the inner ends first,
    // past the limit, and fires; the outer ends past it by no clearly larger factor, so the
    // storm rule keeps it out.
    one_long_poll("nested", "::computes", || {
        assert_eq!(
            poll_once(pin!(awaits_computes(200, 500)).as_mut()),
            Poll::Ready(500)
        );
    });
}
