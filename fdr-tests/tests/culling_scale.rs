//! The culling state of a program with 50,000 instrumented functions and 1,000 threads: 4 bytes
//! per function and a fixed 1 KiB per thread, the table of counts in each thread-local, whatever
//! the number of functions (a table sized by the function table would be 200 KB per thread here,
//! 200 MB in all), checked on the process's resident memory with the threads alive.

use std::time::Duration;

use fdr_runtime::{testing, CallGuard, Config, FnDesc, Mode};
use fdr_testkit::logs::{decode, Rec};

macro_rules! tens {
    ($inner:ident) => {
        mod x0 {
            $inner!();
        }
        mod x1 {
            $inner!();
        }
        mod x2 {
            $inner!();
        }
        mod x3 {
            $inner!();
        }
        mod x4 {
            $inner!();
        }
        mod x5 {
            $inner!();
        }
        mod x6 {
            $inner!();
        }
        mod x7 {
            $inner!();
        }
        mod x8 {
            $inner!();
        }
        mod x9 {
            $inner!();
        }
    };
}
macro_rules! one {
    () => {
        fdr_testkit::desc!(F, concat!(module_path!(), "::f"));
    };
}
macro_rules! e1 {
    () => {
        tens!(one);
    };
}
macro_rules! e2 {
    () => {
        tens!(e1);
    };
}
macro_rules! e3 {
    () => {
        tens!(e2);
    };
}
macro_rules! e4 {
    () => {
        tens!(e3);
    };
}
mod many {
    mod y0 {
        e4!();
    }
    mod y1 {
        e4!();
    }
    mod y2 {
        e4!();
    }
    mod y3 {
        e4!();
    }
    mod y4 {
        e4!();
    }
}

/// The process's resident memory, in bytes (`VmRSS`).
fn rss() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let kb = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<usize>().ok())
        .expect("VmRSS");
    kb * 1024
}

#[test]
fn fifty_thousand_functions_and_a_thousand_threads_keep_1_2_mb_of_culling_state() {
    let fs: Vec<&'static FnDesc> = (1..)
        .map_while(fdr_runtime::function)
        .filter(|f| f.name().starts_with("culling_scale::many::"))
        .collect();
    assert_eq!(fs.len(), 50_000);
    let _turn = testing::exclusive();
    let rec = fdr_runtime::start(
        Config::default()
            .buffer_size(4096)
            .buffer_count(1100)
            .mode(Mode::Fill)
            .threshold(Duration::from_secs(1))
            // Learns from nothing, not from what the last run of this test left.
            .cull_memory(false)
            .cull_after(2),
    )
    .expect("start");
    let rss_before = rss();
    // 1,000 threads alive at once, each calling 50 functions of its own and 50 shared ones.
    // Its own first, while no other thread calls them: thread 0's own are the shared ones, which
    // the others would otherwise cull before it made a call, and a thread that never records
    // never joins (the count below was 999 in 2 runs of 6 under load).
    let barrier = std::sync::Barrier::new(1000);
    let seen = std::sync::Mutex::new(None);
    std::thread::scope(|s| {
        for t in 0..1000 {
            let (fs, barrier, seen) = (&fs, &barrier, &seen);
            s.spawn(move || {
                for i in 0..50 {
                    drop(CallGuard::enter(fs[t * 50 + i]));
                }
                barrier.wait();
                for f in &fs[..50] {
                    drop(CallGuard::enter(f));
                    drop(CallGuard::enter(f));
                }
                barrier.wait();
                if t == 0 {
                    let stats = fdr_runtime::recorder().expect("running").stats();
                    let functions = (1..).map_while(fdr_runtime::function).count();
                    *seen.lock().unwrap() = Some((stats, functions, rss()));
                }
                // Checked after the threads end: a failed check here would leave the others
                // waiting at this barrier for ever.
                barrier.wait();
            });
        }
    });
    let (stats, functions, rss_at) = seen.into_inner().unwrap().expect("thread 0 looked");
    assert_eq!(stats.threads, 1000);
    assert!(functions >= 50_000);
    // What the process holds with the 1,000 threads alive, each having recorded 100 calls of
    // 50,000 functions: their stacks and thread-locals (tens of KB each) and the buffers they
    // took; a table of counts sized by the function table would add 200 KB per thread, 200 MB.
    // (Not under qemu-user, which keeps about 280 KB of its own per thread that ever ran.)
    let grown = rss_at.saturating_sub(rss_before);
    assert!(
        cfg!(fdr_emulated) || grown < 100 << 20,
        "{} MB more resident with 1,000 threads ({} bytes of culling state by the runtime's count)",
        grown >> 20,
        stats.culling_bytes
    );
    // The shared functions were erased twice on each thread: all culled (a run of 2, which a
    // thread reaches by itself); no function called once is, though the counts of the others
    // add up to its run as they leave their slots.
    let mut bytes = Vec::new();
    rec.finish_to(&mut bytes).expect("finish");
    let log = decode(&bytes[..]).expect("decode");
    let mut culled = std::collections::BTreeSet::new();
    for tid in log.tids() {
        for r in log.thread_records(tid) {
            if let Rec::Cull(fdr_format::CullKind::Culled, id, _, _) = r {
                culled.insert(id);
            }
        }
    }
    let shared: std::collections::BTreeSet<u32> = fs[..50].iter().map(|f| f.id()).collect();
    assert_eq!(culled, shared);
}
