//! Small crafted logs of named shapes (`genlog --shape NAME`): fuzzing seeds and the
//! reconstruction tests' inputs. `deep` (a recursion N deep), `ring` (the same seen from a ring
//! window: exits only), `siblings` (one caller of N different functions), `functions` (N
//! functions with huge ids), `hostile` (names with terminal escapes, newlines and XML
//! characters, arguments, tail calls), `backwards` (time running backwards, a thread that lost
//! everything), `args` (calls with many logged arguments), `tasks` (async tasks moving between
//! threads, cancelled, created before the window), `culled` (cull and restore events, and a
//! trigger's reason record).

use fdr_format::{
    CullKind, Extension, FunctionKind, LinkKind, Mode, Reason, ReasonInfo, RunInfo, TaskKind,
    TaskLink, ThreadInfo,
};

use crate::synth::LogBuilder;

/// A small crafted log of the shape `name` with size `n`, or `None` for an unknown name.
///
/// ```
/// let log = fdr_testkit::shapes::shape("deep", 10).unwrap();
/// assert!(log.len() > 32);
/// assert!(fdr_testkit::shapes::shape("nonsense", 1).is_none());
/// ```
pub fn shape(name: &str, n: u32) -> Option<Vec<u8>> {
    let mut log = LogBuilder::new(1_000_000_000);
    log.run(RunInfo {
        ticks_per_second: 1_000_000_000,
        pid: 1,
        mode: Mode::Ring,
        program: format!("genlog-{name}"),
        ..RunInfo::default()
    });
    let n64 = u64::from(n);
    match name {
        "deep" | "ring" => {
            log.function(1, "deep::recurse", &[]);
            log.function(2, "deep::leaf", &[]);
            let mut b = log.block(7, 0, 1000);
            let mut t = 1000;
            if name == "deep" {
                for _ in 0..n {
                    b.enter(1, t);
                    t += 10;
                }
            }
            b.enter(2, t);
            b.exit(2, t + 10);
            for _ in 0..n {
                t += 10;
                b.exit(1, t + 10);
            }
            b.finish();
        }
        "siblings" => {
            log.function(1, "app::main", &[]);
            let mut b = log.block(7, 0, 0);
            b.enter(1, 0);
            for i in 0..n64 {
                b.enter(10 + i as u32, 5 * i + 1);
                b.exit(10 + i as u32, 5 * i + 4);
            }
            b.exit(1, 5 * n64 + 1);
            b.finish();
        }
        "functions" => {
            let mut b = log.block(7, 0, 0);
            for i in 0..n {
                let t = 2000 * u64::from(i);
                b.enter((1 << 27) + i, t);
                b.exit((1 << 27) + i, t + 1000 + u64::from(i));
            }
            b.finish();
        }
        "hostile" => {
            log.function(
                1,
                "evil\u{1b}]0;pwned\u{7}\nforged <b>&amp;\"q\"'s\u{9b}\u{202e}",
                &["a\nb"],
            );
            log.function(2, "semi;colon", &[]);
            log.function(3, "tail::callee", &[]);
            log.thread(11, "t\u{1b}[31m\r\nrow");
            let mut b = log.block(11, 0, 1000);
            for k in 0..n64.max(1) {
                let t = 1000 + k * 1000;
                b.enter_args(1, t, &[k, u64::MAX]);
                b.enter(2, t + 100);
                b.cpu(1, t + 150);
                b.tail_exit(2, t + 200);
                b.enter(3, t + 200);
                b.exit(3, t + 300);
                b.exit(1, t + 900);
            }
            b.enter(1, 1000 + n64 * 1000);
            b.finish();
        }
        "backwards" => {
            log.function(1, "app::f", &[]);
            log.thread(11, "main");
            log.extension(&Extension::Thread(ThreadInfo {
                tid: 13,
                name: "lost".into(),
                records_dropped: 500,
            }));
            let mut b = log.block(11, 0, 1000);
            b.enter(1, 1000);
            b.cpu(1, 400);
            b.exit(1, 500);
            b.enter(1, 450);
            b.exit(1, 700);
            b.finish();
            let mut b = log.block(11, 1, 600);
            b.enter(1, 650);
            b.exit(1, 660);
            b.finish();
        }
        "args" => {
            log.function(1, "app::with_args", &["a", "b", "c"]);
            let mut b = log.block(7, 0, 0);
            for k in 0..n64.max(1) {
                let args: Vec<u64> = (0..(k % 70)).collect();
                b.enter_args(1, k * 100, &args);
                b.exit(1, k * 100 + 50);
            }
            b.finish();
        }
        "tasks" => {
            // N tasks of an async fn, created on one thread and polled and completed or
            // cancelled on another; the first ones created before the window.
            log.function_of_kind(1, "app::request", &[], FunctionKind::Async);
            log.function(2, "app::serve", &[]);
            let mut b = log.block(7, 0, 1000);
            b.enter(2, 1000);
            for k in 0..n64 {
                if k >= 3 {
                    b.task(TaskKind::Created, 1, k, 1000 + 10 * k);
                    // Each task made inside the one before (a parent link), every third one
                    // also following from the one before that.
                    let link = |kind, other_task| TaskLink {
                        kind,
                        id: 1,
                        task: k,
                        other_id: 1,
                        other_task,
                    };
                    b.link(link(LinkKind::Parent, k - 1), 1000 + 10 * k);
                    if k % 3 == 0 {
                        b.link(link(LinkKind::FollowsFrom, k - 2), 1000 + 10 * k);
                    }
                }
            }
            b.exit(2, 1000 + 10 * n64 + 5);
            b.finish();
            let mut b = log.block(8, 1, 1000);
            for k in 0..n64 {
                let t = 1000 + 10 * n64 + 100 * k;
                b.enter(1, t + 10);
                b.exit(1, t + 20);
                let kind = if k % 5 == 4 {
                    TaskKind::Cancelled
                } else {
                    TaskKind::Completed
                };
                b.task(kind, 1, k, t + 30);
            }
            b.finish();
        }
        "culled" => {
            // Functions culled and restored in turn by two threads, with a trigger's reason.
            log.reason(ReasonInfo {
                reason: Reason::SlowCall,
                function: 1,
                tid: 7,
                start_tsc: 1000,
                duration_ticks: 100 * n64,
                suppressed: 2,
                limit_ticks: 50 * n64,
                p99_ticks: 0,
                ..ReasonInfo::default()
            });
            log.function(1, "app::main", &[]);
            log.function(2, "app::len", &[]);
            let mut b = log.block(7, 0, 1000);
            b.enter(1, 1000);
            for k in 0..n64 {
                let t = 1000 + 100 * k;
                b.enter(2, t + 10);
                b.exit(2, t + 20);
                let kind = if k % 2 == 0 {
                    CullKind::Culled
                } else {
                    CullKind::Restored
                };
                b.cull(kind, 2, k, t + 30);
            }
            b.exit(1, 1000 + 100 * n64);
            b.finish();
        }
        _ => return None,
    }
    Some(log.finish())
}
