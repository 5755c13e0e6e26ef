//! `fdr::tokio::hooks`: tokio's runtime hooks, recorded. In every build, a worker parked is in a
//! call of `tokio::worker::parked`; built with `--cfg tokio_unstable` (a CI stage of its own),
//! every task is a task of its spawn location, with its polls.

use std::time::Duration;

use fdr_runtime::testing;
use fdr_testkit::logs::{decode, DecodedLog};
use fdr_testkit::recording::every_call;

/// Runs `body` on a current-thread runtime with fdr's hooks, recording every call; the log.
fn recorded(body: impl std::future::Future<Output = ()>) -> DecodedLog {
    let _turn = testing::exclusive();
    let rec = fdr_runtime::start(every_call()).unwrap();
    let mut builder = tokio::runtime::Builder::new_current_thread();
    builder.enable_time();
    fdr::tokio::hooks(&mut builder);
    let rt = builder.build().unwrap();
    rt.block_on(body);
    drop(rt);
    let mut bytes = Vec::new();
    rec.finish_to(&mut bytes).unwrap();
    decode(&bytes[..]).unwrap()
}

fn id_named(log: &DecodedLog, name: &str) -> Option<u32> {
    log.functions.iter().find(|f| f.name == name).map(|f| f.id)
}

#[test]
fn a_worker_waiting_for_a_timer_is_parked_between_its_polls() {
    let log = recorded(async {
        tokio::time::sleep(Duration::from_millis(20)).await;
    });
    let parked = id_named(&log, "tokio::worker::parked").expect("in the table");
    // The runtime's only thread parked while the timer ran, and came back: every park it
    // entered, it left.
    let tid = log.tids()[0];
    let calls = log.calls(tid);
    let enters = calls
        .iter()
        .filter(|&&(k, f)| k == fdr_format::FnKind::Enter && f == parked)
        .count();
    let exits = calls
        .iter()
        .filter(|&&(k, f)| k == fdr_format::FnKind::Exit && f == parked)
        .count();
    assert!(enters >= 1, "{calls:?}");
    assert_eq!(enters, exits);
}

/// A task polled twice: it yields once.
#[cfg(tokio_unstable)]
async fn yields_once(i: u32) -> u32 {
    tokio::task::yield_now().await;
    i
}

#[cfg(tokio_unstable)]
#[test]
fn every_task_is_a_task_of_its_spawn_location_with_exact_counts() {
    use fdr_format::{FunctionKind, TaskKind};
    use fdr_testkit::logs::Rec;

    let log = recorded(async {
        let mut handles = Vec::new();
        for i in 0..5u32 {
            handles.push(tokio::spawn(yields_once(i))); // five
        }
        for i in 0..3u32 {
            handles.push(tokio::spawn(async move { i })); // three
        }
        for h in handles {
            h.await.unwrap();
        }
    });
    let source = include_str!("tokio_hooks.rs");
    let site = |marker: &str| {
        let (n, line) = source
            .lines()
            .enumerate()
            .find(|(_, l)| l.contains(marker) && l.contains("spawn"))
            .unwrap();
        let column = line.find("tokio::spawn").unwrap() + 1;
        format!(
            "tokio::spawn at fdr-tests/tests/tokio_hooks.rs:{}:{column}",
            n + 1
        )
    };
    let mut created = std::collections::HashMap::<u32, usize>::new();
    let mut ended = std::collections::HashMap::<u32, usize>::new();
    let mut polls = std::collections::HashMap::<u32, usize>::new();
    for tid in log.tids() {
        for r in log.thread_records(tid) {
            match r {
                Rec::Task(TaskKind::Created, f, task, _) => {
                    assert!(task >> 63 == 1, "tokio's ids have the top bit set");
                    *created.entry(f).or_default() += 1;
                }
                Rec::Task(TaskKind::Completed, f, _, _) => *ended.entry(f).or_default() += 1,
                Rec::Polled(f, _, _) => *polls.entry(f).or_default() += 1,
                _ => {}
            }
        }
    }
    for (marker, n, kept_polls) in [("// five", 5, 10), ("// three", 3, 3)] {
        let name = site(marker);
        let f = id_named(&log, &name).unwrap_or_else(|| {
            panic!(
                "{name} in {:?}",
                log.functions.iter().map(|f| &f.name).collect::<Vec<_>>()
            )
        });
        assert_eq!(
            log.functions.iter().find(|x| x.id == f).unwrap().kind,
            FunctionKind::Async
        );
        assert_eq!(created.get(&f), Some(&n), "{name}");
        assert_eq!(ended.get(&f), Some(&n), "{name}");
        // A task that yields once is polled twice.
        assert_eq!(polls.get(&f).copied().unwrap_or(0), kept_polls, "{name}");
    }
}
