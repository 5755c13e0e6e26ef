//! The black box: a process that dies without writing its log (SIGKILL, a segfault, `abort`, a
//! stack overflow) leaves its window in its crash box, which `fdr_format::crash_box::recover`
//! (what `fdr recover` and the next start run) turns into a log holding every call that ended
//! and the calls open at the death. And a recording started from `FDR_OPTIONS` loses no other
//! thread's calls while it starts. Each case runs this test binary again as a child process.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use fdr_format::crash_box;
use fdr_format::{FnKind, Reason};
use fdr_runtime::{testing, CallGuard};
use fdr_testkit::desc;
use fdr_testkit::logs::{decode, read_log, DecodedLog};
use fdr_testkit::recording::every_call;

desc!(WORK, "crash::work");
desc!(OUTER, "crash::outer");
desc!(HANG, "crash::hang");
desc!(CRASH, "crash::crash");
desc!(ROUTED, "crash::routed");

const THREADS: usize = 4;
const CALLS: usize = 500;

fn child(test: &str, options: &str) -> Command {
    let mut c = fdr_testkit::child::command(test);
    c.env("FDR_OPTIONS", options)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

fn scratch(name: &str) -> PathBuf {
    fdr_testkit::logs::scratch(&format!("crash-{name}"))
}

/// `FDR_OPTIONS` that keep every call, with `extra` (any key but `threshold_us`) added.
fn options(dir: &Path, extra: &str) -> String {
    kept_over(dir, "threshold_us=0", extra)
}

/// `FDR_OPTIONS` with `threshold` (empty: the default) and `extra`.
fn kept_over(dir: &Path, threshold: &str, extra: &str) -> String {
    format!(
        "{threshold} buffer_count=64 out={} crash_dir={} {extra}",
        dir.join("app.fdr").display(),
        dir.display()
    )
}

/// Every thread makes `CALLS` calls of `work` inside `outer`, then all wait inside `hang`.
fn work_then_hang(ready: impl FnOnce()) -> ! {
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(THREADS + 1));
    for _ in 0..THREADS {
        let b = barrier.clone();
        std::thread::spawn(move || {
            {
                let _o = CallGuard::enter(&OUTER);
                for _ in 0..CALLS {
                    drop(CallGuard::enter(&WORK));
                }
            }
            let _h = CallGuard::enter(&HANG);
            b.wait();
            loop {
                std::thread::sleep(std::time::Duration::from_secs(10));
            }
        });
    }
    barrier.wait();
    ready();
    loop {
        std::thread::sleep(std::time::Duration::from_secs(10));
    }
}

#[test]
#[ignore = "a child process of the crash tests"]
fn child_hangs() {
    if !fdr_testkit::child::spawned() {
        return;
    }
    work_then_hang(|| println!("ready"));
}

#[test]
#[ignore = "a child process of the crash tests"]
fn child_segfaults() {
    if !fdr_testkit::child::spawned() {
        return;
    }
    work_then_hang(|| {
        let _c = CallGuard::enter(&CRASH);
        // SAFETY: none: the point is the segfault.
        unsafe { std::ptr::null_mut::<u64>().write_volatile(1) };
    });
}

#[test]
#[ignore = "a child process of the crash tests"]
fn child_aborts() {
    if !fdr_testkit::child::spawned() {
        return;
    }
    work_then_hang(|| {
        let _c = CallGuard::enter(&CRASH);
        std::process::abort();
    });
}

#[inline(never)]
fn deeper(n: u64) -> u64 {
    let frame = [n; 512];
    std::hint::black_box(&frame);
    if n == u64::MAX {
        return 0;
    }
    deeper(n + 1) + std::hint::black_box(frame[3])
}

#[test]
#[ignore = "a child process of the crash tests"]
fn child_overflows() {
    if !fdr_testkit::child::spawned() {
        return;
    }
    work_then_hang(|| {
        let _c = CallGuard::enter(&CRASH);
        std::hint::black_box(deeper(0));
    });
}

#[test]
#[ignore = "a child process of the crash tests"]
fn child_loops() {
    if !fdr_testkit::child::spawned() {
        return;
    }
    // The recording starts here, before "ready".
    drop(CallGuard::enter(&WORK));
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(THREADS + 1));
    for _ in 0..THREADS {
        let b = barrier.clone();
        std::thread::spawn(move || {
            b.wait();
            loop {
                let _o = CallGuard::enter(&OUTER);
                for _ in 0..10 {
                    drop(CallGuard::enter(&WORK));
                }
            }
        });
    }
    barrier.wait();
    println!("ready");
    loop {
        std::thread::sleep(std::time::Duration::from_secs(10));
    }
}

#[test]
#[ignore = "a child process of the crash tests"]
fn child_starts_and_exits() {
    if !fdr_testkit::child::spawned() {
        return;
    }
    drop(CallGuard::enter(&WORK));
}

fn program() -> String {
    std::env::current_exe()
        .unwrap()
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned()
}

/// The box of process `pid` in `dir` (its name has a tag after the pid; a name without one,
/// as fdr named boxes before, is still a box's).
fn box_of(dir: &Path, pid: u32) -> PathBuf {
    let found: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| crash_box::pid_of(n, Some(&program())))
                == Some(pid as i32)
        })
        .collect();
    match found.as_slice() {
        [one] => one.clone(),
        [] => dir.join(format!(
            "fdr-{}-{pid}.box",
            crash_box::file_safe(&program())
        )),
        more => panic!("{more:?}"),
    }
}

/// Waits for the child's line that ends with "ready" (after the test harness's own lines) and
/// returns it.
fn wait_ready(c: &mut Child) -> String {
    let mut out = BufReader::new(c.stdout.take().unwrap());
    let mut line = String::new();
    loop {
        line.clear();
        assert_ne!(
            out.read_line(&mut line).unwrap(),
            0,
            "the child ended first"
        );
        if line.trim_end().ends_with("ready") {
            // Kept open: a child that writes more must not meet a closed pipe.
            c.stdout = Some(out.into_inner());
            return line;
        }
    }
}

fn recover(path: &Path) -> (crash_box::BoxInfo, DecodedLog, Vec<u8>) {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let r = crash_box::recover(&bytes).unwrap();
    let log = decode(&r.log[..]).unwrap();
    (r.info, log, r.log)
}

/// Each worker's calls: `outer` with `CALLS` calls of `work` in it, then `hang`, open.
fn check_workers(log: &DecodedLog) {
    let (w, o, h) = (WORK.id(), OUTER.id(), HANG.id());
    let mut workers = 0;
    for tid in log.tids() {
        let calls = log.calls(tid);
        if calls.first() != Some(&(FnKind::Enter, o)) {
            continue;
        }
        workers += 1;
        let mut want = vec![(FnKind::Enter, o)];
        for _ in 0..CALLS {
            want.push((FnKind::Enter, w));
            want.push((FnKind::Exit, w));
        }
        want.push((FnKind::Exit, o));
        want.push((FnKind::Enter, h));
        assert_eq!(calls, want, "thread {tid}");
    }
    assert_eq!(workers, THREADS, "{:?}", log.tids());
}

/// llvm-xray verifies the recovered log `log` (written to `dir` for it).
fn llvm_xray_verifies(log: &[u8], dir: &Path) {
    let path = dir.join("verify.fdr");
    std::fs::write(&path, log).unwrap();
    fdr_testkit::llvm_xray::verify(&path);
}

#[test]
fn sigkill_leaves_a_box_with_every_call_and_the_open_ones() {
    let dir = scratch("kill");
    let mut c = child("child_hangs", &options(&dir, "")).spawn().unwrap();
    wait_ready(&mut c);
    let pid = c.id();
    let path = box_of(&dir, pid);
    assert!(path.exists(), "no box at {}", path.display());
    // A live process's box says it is alive, and is left alone.
    let info = crash_box::read_info(&std::fs::read(&path).unwrap()).unwrap();
    assert_eq!(crash_box::liveness(&info), crash_box::Liveness::Alive);
    c.kill().unwrap();
    c.wait().unwrap();
    let (info, log, bytes) = recover(&path);
    assert_eq!(crash_box::liveness(&info), crash_box::Liveness::Gone);
    assert_eq!(info.pid, pid as i32);
    assert_eq!(info.signal, 0);
    assert!(info.death().contains("no handler ran"), "{}", info.death());
    assert_eq!(info.out, dir.join("app.fdr"));
    let reason = log.reason.clone().unwrap();
    assert_eq!(reason.reason, Reason::Crash);
    assert_eq!(log.name(WORK.id()), Some("crash::work"));
    check_workers(&log);
    llvm_xray_verifies(&bytes, &dir);
}

/// Runs a child that dies by itself, and checks its box: the death named, the crashing call
/// open, the workers' calls whole.
fn dies(test: &str, signal: i32) {
    let dir = scratch(test);
    let c = child(test, &options(&dir, "")).spawn().unwrap();
    let pid = c.id();
    let out = c.wait_with_output().unwrap();
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(
        out.status.signal(),
        Some(if signal == libc::SIGSEGV && test == "child_overflows" {
            libc::SIGABRT
        } else {
            signal
        }),
        "{test}: {:?} {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let (info, log, bytes) = recover(&box_of(&dir, pid));
    assert_eq!(info.signal, signal, "{test}: {}", info.death());
    let reason = log.reason.clone().unwrap();
    assert_eq!((reason.reason, reason.signal), (Reason::Crash, signal));
    // The thread the signal was caught on is the one whose call crashed, open at the end.
    assert_eq!(
        log.calls(info.crash_tid).last(),
        Some(&(FnKind::Enter, CRASH.id())),
        "{test}: the crashing call is open at the end of thread {}",
        info.crash_tid
    );
    // fdr explain says which thread died in which call, and what the others had open.
    let recovered =
        std::env::temp_dir().join(format!("fdr-explain-{}-{test}.fdr", std::process::id()));
    std::fs::write(&recovered, &bytes).unwrap();
    let mut explained = Vec::new();
    fdr_cli::run(
        &["explain", recovered.to_str().unwrap(), "--format", "json"],
        &mut explained,
    )
    .unwrap();
    std::fs::remove_file(&recovered).ok();
    let e: serde_json::Value = serde_json::from_slice(&explained).unwrap();
    assert_eq!(e["thread"], info.crash_tid, "{test}: {e}");
    assert_eq!(e["function"], log.name(CRASH.id()).unwrap(), "{test}: {e}");
    assert_eq!(e["open_at_end"], true, "{test}: {e}");
    let others = e["threads"].as_array().unwrap();
    let hanging = others
        .iter()
        .filter(|t| {
            t["stack"].as_array().is_some_and(|s| {
                s.len() == 1 && s[0]["function"] == "crash::hang" && s[0]["open_at_end"] == true
            })
        })
        .count();
    assert_eq!(hanging, THREADS, "{test}: the workers' open calls: {e}");
    if signal == libc::SIGSEGV && test == "child_segfaults" {
        assert_eq!(info.address, 0, "a write through a null pointer");
    }
    if test == "child_overflows" {
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("has overflowed its stack"),
            "Rust's own message is still printed"
        );
        assert!(
            info.death().starts_with(&format!(
                "stack overflow on thread {} (SIGSEGV at address",
                info.crash_tid
            )),
            "{}",
            info.death()
        );
    } else {
        // A caught signal says when it came.
        assert_eq!(reason.end_within_ns, 0);
    }
    check_workers(&log);
    llvm_xray_verifies(&bytes, &dir);
}

#[test]
fn a_segfault_is_named_with_its_address() {
    dies("child_segfaults", libc::SIGSEGV);
}

#[test]
fn an_abort_is_named() {
    dies("child_aborts", libc::SIGABRT);
}

#[test]
fn a_stack_overflow_is_a_segfault_and_rust_still_says_so() {
    dies("child_overflows", libc::SIGSEGV);
}

#[test]
fn sigkill_at_random_instants_leaves_whole_records() {
    let dir = scratch("random");
    let (w, o) = (WORK.id(), OUTER.id());
    // Every call kept, in a ring and filling the buffers; and culled at the default threshold.
    let modes = [
        ("threshold_us=0", ""),
        ("threshold_us=0", "mode=fill"),
        ("", ""),
    ];
    for round in 0..18u64 {
        let (threshold, extra) = modes[round as usize % modes.len()];
        let options = kept_over(&dir, threshold, &format!("buffer_count=16 {extra}"));
        let mut c = child("child_loops", &options).spawn().unwrap();
        wait_ready(&mut c);
        std::thread::sleep(std::time::Duration::from_micros(
            round * 1_777 % 20_000 + 100,
        ));
        c.kill().unwrap();
        c.wait().unwrap();
        let path = box_of(&dir, c.id());
        let (_, log, bytes) = recover(&path);
        std::fs::remove_file(&path).unwrap();
        let mut calls = 0;
        for tid in log.tids() {
            // Each thread's calls nest: within the window, `work` only inside `outer`.
            let mut depth = 0i32;
            for (kind, id) in log.calls(tid) {
                calls += 1;
                match (kind, id) {
                    (FnKind::Enter | FnKind::Exit, i) if i == o => {}
                    (FnKind::Enter, i) if i == w => depth += 1,
                    (FnKind::Exit, i) if i == w => depth -= 1,
                    other => panic!("round {round} ({options}): unexpected {other:?}"),
                }
                assert!(
                    (-1..=1).contains(&depth),
                    "round {round} ({options}): depth {depth}"
                );
            }
        }
        // The call that started the recording, before "ready", at least.
        assert!(calls > 0, "round {round} ({options}): nothing recovered");
        llvm_xray_verifies(&bytes, &dir);
    }
}

#[test]
fn the_next_start_recovers_the_box_and_a_clean_exit_removes_its_own() {
    let dir = scratch("next");
    let mut c = child("child_hangs", &options(&dir, "")).spawn().unwrap();
    wait_ready(&mut c);
    let dead = c.id();
    c.kill().unwrap();
    c.wait().unwrap();
    assert!(box_of(&dir, dead).exists());
    let next = child(
        "child_starts_and_exits",
        &format!(
            "out={} crash_dir={}",
            dir.join("next.fdr").display(),
            dir.display()
        ),
    )
    .output()
    .unwrap();
    let stderr = String::from_utf8_lossy(&next.stderr);
    assert!(next.status.success(), "{stderr}");
    // Beside the log the dead process would have written, under a name no later log of the
    // program replaces.
    let recovered = crash_box::recovered_name(&dir.join("app.fdr"), dead as i32, 1);
    assert!(
        stderr.contains(&format!("wrote {}", recovered.display())),
        "{stderr}"
    );
    assert!(
        !box_of(&dir, dead).exists(),
        "the dead process's box is gone"
    );
    let log = read_log(&recovered);
    assert_eq!(log.reason.unwrap().reason, Reason::Crash);
    check_workers(&read_log(&recovered));
    // The second process wrote its own log at exit and removed its box.
    assert!(dir.join("next.fdr").exists());
    let boxes: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".box"))
        .collect();
    assert!(boxes.is_empty(), "{boxes:?}");
}

#[test]
fn a_crash_dir_that_cannot_hold_the_box_falls_back_with_one_line() {
    let dir = scratch("fallback");
    let not_a_dir = dir.join("file");
    std::fs::write(&not_a_dir, b"x").unwrap();
    let out = child(
        "child_starts_and_exits",
        &format!(
            "out={} crash_dir={}",
            dir.join("app.fdr").display(),
            not_a_dir.display()
        ),
    )
    .output()
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(stderr.matches("no crash box in").count(), 1, "{stderr}");
    let log = read_log(&dir.join("app.fdr"));
    assert_eq!(log.reason.unwrap().reason, Reason::Exit);
}

#[test]
#[ignore = "a child process of the crash tests"]
fn child_forks_then_its_child_hangs() {
    if !fdr_testkit::child::spawned() {
        return;
    }
    // The recording starts here, in the parent.
    drop(CallGuard::enter(&WORK));
    // SAFETY: the child only records, prints a line and sleeps until it is killed.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0);
    if pid == 0 {
        {
            let _o = CallGuard::enter(&OUTER);
            for _ in 0..CALLS {
                drop(CallGuard::enter(&WORK));
            }
        }
        let _h = CallGuard::enter(&HANG);
        println!("forked {} ready", std::process::id());
        loop {
            std::thread::sleep(std::time::Duration::from_secs(10));
        }
    }
    let mut status = 0;
    // SAFETY: waits for the child just forked (the test kills it).
    unsafe { libc::waitpid(pid, &mut status, 0) };
    drop(CallGuard::enter(&WORK));
}

#[test]
#[cfg_attr(
    fdr_emulated,
    ignore = "qemu-user (7.2) aborts in a child forked from a process with threads once the child starts a thread (cpu_exec: assertion cpu == current_cpu); a C program of ten lines does the same"
)]
fn a_forked_child_records_into_a_box_of_its_own() {
    let dir = scratch("fork");
    let mut c = child("child_forks_then_its_child_hangs", &options(&dir, ""))
        .spawn()
        .unwrap();
    let line = wait_ready(&mut c);
    // The harness's "test ... " may come first on the line.
    let forked: i32 = line
        .split("forked ")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let (parent_box, child_box) = (box_of(&dir, c.id()), box_of(&dir, forked as u32));
    assert!(parent_box.exists(), "{}", parent_box.display());
    assert!(child_box.exists(), "{}", child_box.display());
    // SAFETY: sends a signal to the forked child, which the parent waits for.
    assert_eq!(unsafe { libc::kill(forked, libc::SIGKILL) }, 0);
    let out = c.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // The parent exited cleanly: its log holds its own two calls, and its box is gone.
    assert!(!parent_box.exists());
    let parent = read_log(&dir.join("app.fdr"));
    let w = WORK.id();
    let want = [(FnKind::Enter, w), (FnKind::Exit, w)].repeat(2);
    assert_eq!(parent.calls(parent.tids()[0]), want);
    assert_eq!(parent.tids().len(), 1);

    // The child's box holds the child's calls only, and names its own log.
    let (info, log, bytes) = recover(&child_box);
    assert_eq!(info.pid, forked);
    assert_eq!(info.out, dir.join(format!("app.{forked}.fdr")));
    assert_eq!(log.tids().len(), 1);
    let (o, h) = (OUTER.id(), HANG.id());
    let mut want = vec![(FnKind::Enter, o)];
    want.extend([(FnKind::Enter, w), (FnKind::Exit, w)].repeat(CALLS));
    want.extend([(FnKind::Exit, o), (FnKind::Enter, h)]);
    assert_eq!(log.calls(log.tids()[0]), want);
    llvm_xray_verifies(&bytes, &dir);
}

#[test]
fn at_most_eight_boxes_that_cannot_be_recovered_are_kept() {
    let dir = scratch("cap");
    let boxes: Vec<PathBuf> = (0..11)
        .map(|i| {
            let path = box_of(&dir, 4_000_000 + i);
            std::fs::write(&path, b"not a crash box").unwrap();
            let when = std::time::UNIX_EPOCH
                + std::time::Duration::from_secs(1_700_000_000 + u64::from(i));
            std::fs::File::options()
                .write(true)
                .open(&path)
                .unwrap()
                .set_modified(when)
                .unwrap();
            path
        })
        .collect();
    let out = child("child_starts_and_exits", &options(&dir, ""))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(
        stderr.matches("fdr: could not recover").count(),
        11,
        "{stderr}"
    );
    assert!(
        stderr.contains("removed the 3 oldest of 11 crash boxes"),
        "{stderr}"
    );
    // The three oldest are gone, the eight newest kept; the process's own box went at exit.
    for (i, path) in boxes.iter().enumerate() {
        assert_eq!(path.exists(), i >= 3, "{}", path.display());
    }
    let left = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".box"))
        .count();
    assert_eq!(left, 8);
}

#[test]
fn a_box_is_named_by_its_process_and_left_alone_while_it_runs() {
    // With the injected clock a log names its process 1; the box is named by the real one, which
    // is how the next process of the same program tells a live box from a dead one's.
    let dir = scratch("alive");
    let _turn = testing::exclusive();
    testing::use_mock_clock(1_000_000_000);
    let out = dir.join("mine.fdr");
    let rec = fdr_runtime::start(every_call().crash_dir(&dir).out(&out)).unwrap();
    drop(CallGuard::enter(&WORK));
    let mine = box_of(&dir, std::process::id());
    assert!(mine.exists(), "no box at {}", mine.display());
    // Another process of this program starts and exits with the same crash directory.
    let next = child(
        "child_starts_and_exits",
        &format!(
            "out={} crash_dir={}",
            dir.join("next.fdr").display(),
            dir.display()
        ),
    )
    .output()
    .unwrap();
    let stderr = String::from_utf8_lossy(&next.stderr);
    assert!(next.status.success(), "{stderr}");
    assert!(
        dir.join("next.fdr").exists(),
        "the other process recorded: {stderr}"
    );
    assert!(!stderr.contains("recover"), "{stderr}");
    assert!(mine.exists(), "a running process's box was taken");
    assert!(!out.exists(), "nothing was written in this process's name");
    let mut bytes = Vec::new();
    rec.finish_to(&mut bytes).unwrap();
    testing::use_real_clock();
    assert!(!mine.exists(), "finish removes the box");
    assert_eq!(
        decode(&bytes[..]).unwrap().run.pid,
        1,
        "the log's pid is the injected one"
    );
}

#[test]
#[ignore = "a child process of the start race tests"]
fn child_races_to_start() {
    if !fdr_testkit::child::spawned() {
        return;
    }
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(8));
    let threads: Vec<_> = (0..8)
        .map(|_| {
            let b = barrier.clone();
            std::thread::spawn(move || {
                b.wait();
                for _ in 0..CALLS {
                    drop(CallGuard::enter(&WORK));
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
}

/// Runs `child_races_to_start` in ten processes, each started from `FDR_OPTIONS` with `options`
/// and an `out` in a fresh directory, and returns the paths they wrote.
fn race_to_start(name: &str, options: &str, ext: &str) -> Vec<PathBuf> {
    let dir = scratch(name);
    (0..10)
        .map(|round| {
            let out = dir.join(format!("race-{round}.{ext}"));
            let c = child(
                "child_races_to_start",
                &format!("{options} out={}", out.display()),
            )
            .output()
            .unwrap();
            assert!(c.status.success(), "{}", String::from_utf8_lossy(&c.stderr));
            out
        })
        .collect()
}

#[test]
fn eight_threads_racing_the_first_call_lose_nothing_in_ring_mode() {
    let w = WORK.id();
    for (round, out) in race_to_start("race-ring", "threshold_us=0 crash_dir=off", "fdr")
        .iter()
        .enumerate()
    {
        let log = read_log(out);
        let tids = log.tids();
        assert_eq!(tids.len(), 8, "round {round}");
        for tid in tids {
            let calls = log.calls(tid);
            assert_eq!(
                calls.iter().filter(|c| **c == (FnKind::Enter, w)).count(),
                CALLS,
                "round {round}, thread {tid}"
            );
            assert_eq!(calls.len(), 2 * CALLS, "round {round}, thread {tid}");
        }
        assert_eq!(log.run.calls_unattached, 0);
    }
}

#[test]
fn eight_threads_racing_the_first_call_lose_nothing_in_profile_mode() {
    for (round, out) in race_to_start("race-profile", "mode=profile", "fdrprof")
        .iter()
        .enumerate()
    {
        assert_eq!(
            profiled_calls(out, &WORK),
            8 * CALLS as u64,
            "round {round}"
        );
    }
}

#[test]
#[ignore = "a child process of the test below"]
fn child_enters_as_another_thread_starts_a_profile() {
    if !fdr_testkit::child::spawned() {
        return;
    }
    // The entry of ROUTED reads its flags (nothing yet: no hook has run) and takes the log's
    // path; before it joins, another thread's first hook reads `FDR_OPTIONS`, starts the
    // profile and sets ROUTED's flags. The exit then finds ROUTED profiled.
    fdr_runtime::testing::on_next_cold_path(|| {
        std::thread::spawn(|| drop(CallGuard::enter(&WORK)))
            .join()
            .unwrap();
    });
    drop(CallGuard::enter(&ROUTED));
}

#[test]
fn an_entry_routed_before_another_thread_starts_a_profile_is_profiled() {
    let dir = scratch("routed");
    let out = dir.join("routed.fdrprof");
    let c = child(
        "child_enters_as_another_thread_starts_a_profile",
        &format!("mode=profile out={}", out.display()),
    )
    .output()
    .unwrap();
    assert!(c.status.success(), "{}", String::from_utf8_lossy(&c.stderr));
    assert_eq!(profiled_calls(&out, &WORK), 1);
    assert_eq!(profiled_calls(&out, &ROUTED), 1);
}

/// The calls of `f` in the profile at `path`, on every thread and path.
fn profiled_calls(path: &Path, f: &'static fdr_runtime::FnDesc) -> u64 {
    let profile = fdr_format::profile::Profile::decode(&std::fs::read(path).unwrap()).unwrap();
    profile
        .trees
        .iter()
        .flat_map(|t| &t.nodes)
        .filter(|n| n.function == f.id())
        .map(|n| n.count)
        .sum()
}
