//! Logs the runtime writes are valid XRay FDR v5 logs: llvm-xray verifies them, and its
//! accounting agrees with ours.

use std::collections::BTreeMap;
use std::path::PathBuf;

use fdr_runtime::hooks::{enter, enter_args, exit, tail_exit};
use fdr_runtime::{testing, Mode};
use fdr_testkit::desc;
use fdr_testkit::logs::{decode, Rec};
use fdr_testkit::recording::every_call;

desc!(A, "interop::a");
desc!(B, "interop::b");
desc!(C, "interop::c");

#[fdr_runtime::linkme::distributed_slice(fdr_runtime::FUNCTIONS)]
#[linkme(crate = fdr_runtime::linkme)]
static T: fdr_runtime::FnDesc = fdr_runtime::FnDesc::new(
    "interop::task",
    file!(),
    line!(),
    fdr_runtime::FnKindTag::Async,
    &[],
);

/// One task that completes at its first poll and one dropped unpolled: task events of every
/// kind in the thread's blocks; and two tasks tied by a link event (32 bytes of payload).
fn tasks() {
    use fdr_runtime::hooks::{task_created, task_ended, task_linked};
    let parent = task_created(&T);
    let child = task_created(&T);
    task_linked(&T, child, fdr_runtime::hooks::LinkKind::Parent, &T, parent);
    task_ended(&T, child, true);
    task_ended(&T, parent, true);
    use std::future::Future;
    let mut done = std::pin::pin!(fdr_runtime::Instrumented::new(&T, async { 1 }));
    struct Noop;
    impl std::task::Wake for Noop {
        fn wake(self: std::sync::Arc<Self>) {}
    }
    let waker = std::task::Waker::from(std::sync::Arc::new(Noop));
    let mut cx = std::task::Context::from_waker(&waker);
    assert!(done.as_mut().poll(&mut cx).is_ready());
    drop(fdr_runtime::Instrumented::new(&T, async { 2 }));
}

/// Records a workload on several threads with every kind of record, returns the log's path.
fn write_log(name: &str, with_tails: bool) -> PathBuf {
    let _turn = testing::exclusive();
    testing::use_mock_clock(2_500_000_000);
    let start = 5_000;
    testing::set_time(start);
    let rec = fdr_runtime::start(
        every_call()
            .buffer_size(512)
            .buffer_count(64)
            .mode(Mode::Fill),
    )
    .unwrap();
    // Every thread starts at the same time as the recorder: llvm-xray's `account` processes
    // threads in hash order and rejects any record older than the first one it saw, so only a
    // log whose threads all start at the earliest time is order-proof for it.
    let work = move |_seed: u64| {
        testing::set_time(start);
        for i in 0..40u64 {
            enter(&A);
            testing::advance(10 + i);
            for j in 0..(i % 3) {
                enter_args(&B, &[i, j]);
                testing::advance(5);
                if with_tails && j == 1 {
                    tail_exit(&B);
                    enter(&C);
                    testing::advance(3);
                    exit(&C);
                } else {
                    enter(&C);
                    testing::advance(2);
                    exit(&C);
                    exit(&B);
                }
            }
            if i == 10 {
                testing::advance(1 << 33);
            }
            if i == 20 {
                testing::set_cpu(1);
            }
            if i == 5 {
                tasks();
            }
            testing::advance(7);
            exit(&A);
        }
    };
    let threads: Vec<_> = (1..4)
        .map(|s| std::thread::spawn(move || work(s)))
        .collect();
    work(0);
    for t in threads {
        t.join().unwrap();
    }
    let path = std::env::temp_dir().join(format!("fdr-interop-{}-{name}.fdr", std::process::id()));
    rec.finish(&path).unwrap();
    testing::use_real_clock();
    path
}

#[test]
fn llvm_xray_verifies_our_logs() {
    let path = write_log("verify", true);
    let dump = fdr_testkit::llvm_xray::verify(&path);
    // Metadata of every kind we write shows up in llvm-xray's own reading.
    for needle in [
        "Custom Event",
        "Call Argument",
        "TSC Wrap",
        "CPU: id = 1",
        "Function Tail Exit",
    ] {
        assert!(dump.contains(needle), "no {needle} in fdr-dump output");
    }
    // Among the custom events it verified: link events, four times (one per thread).
    let log = decode(&std::fs::read(&path).unwrap()[..]).unwrap();
    let links = log
        .blocks
        .iter()
        .flat_map(|b| &b.records)
        .filter(|r| matches!(r, Rec::Link(..)))
        .count();
    assert_eq!(links, 4);
    std::fs::remove_file(path).ok();
}

#[test]
fn llvm_xray_account_counts_what_we_count() {
    let path = write_log("account", false);
    let bytes = std::fs::read(&path).unwrap();
    let log = decode(&bytes[..]).unwrap();
    let mut ours: BTreeMap<u32, u64> = BTreeMap::new();
    for b in &log.blocks {
        for r in &b.records {
            if let Rec::Exit(id, _) = r {
                *ours.entry(*id).or_default() += 1;
            }
        }
    }
    let out = fdr_testkit::llvm_xray::command()
        .args(["account", "-format=csv"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{} {}",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let theirs: BTreeMap<u32, u64> = text
        .lines()
        .skip(1)
        .map(|l| {
            let mut f = l.split(',');
            (
                f.next().unwrap().parse().unwrap(),
                f.next().unwrap().parse().unwrap(),
            )
        })
        .collect();
    assert_eq!(theirs, ours);
    // 4 threads x 40 calls of a; b and c once per (i % 3) of each.
    let per_thread_b: u64 = (0..40u64).map(|i| i % 3).sum();
    assert_eq!(ours[&A.id()], 160);
    assert_eq!(ours[&T.id()], 4, "one poll of one task per thread");
    assert_eq!(ours[&B.id()], 4 * per_thread_b);
    assert_eq!(ours[&C.id()], 4 * per_thread_b);
    std::fs::remove_file(path).ok();
}
