//! The recorder's lifecycle under pressure: `finish`, snapshots, exit, fork and signals raced
//! against threads that keep recording, starting and exiting. Each test here was written against
//! a failure of the first version (a crash, a hang, a lost or empty log) and fails on it.

use std::process::Output;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use fdr_format::Reason;
use fdr_runtime::{testing, CallGuard, Config, Error, Mode};
use fdr_testkit::desc;
use fdr_testkit::logs::{decode, read_log, scratch};
use fdr_testkit::recording::every_call;

desc!(MID, "life::mid");
desc!(LEAF, "life::leaf");
desc!(HANDLER, "life::handler");

/// One call that makes four leaf calls.
#[inline(never)]
fn mid() {
    let _g = CallGuard::enter(&MID);
    for _ in 0..4 {
        drop(CallGuard::enter(&LEAF));
    }
}

/// Threads that call `mid` until told to stop.
struct Busy {
    stop: Arc<AtomicBool>,
    handles: Vec<std::thread::JoinHandle<()>>,
}

impl Busy {
    /// Returns once every thread has made its first call.
    fn start(threads: usize) -> Busy {
        let stop = Arc::new(AtomicBool::new(false));
        let (ready, all_ready) = mpsc::channel();
        let handles = (0..threads)
            .map(|_| {
                let stop = Arc::clone(&stop);
                let ready = ready.clone();
                std::thread::spawn(move || {
                    mid();
                    ready.send(()).unwrap();
                    while !stop.load(Ordering::Relaxed) {
                        mid();
                    }
                })
            })
            .collect();
        for _ in 0..threads {
            all_ready.recv().unwrap();
        }
        Busy { stop, handles }
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for h in self.handles.drain(..) {
            let _ = h.join();
        }
    }
}

fn finish_races_recording_threads(mode: Mode) {
    let _turn = testing::exclusive();
    let dir = scratch(&format!("finish-{mode:?}"));
    for round in 0..50 {
        let rec =
            fdr_runtime::start(every_call().buffer_size(4096).buffer_count(16).mode(mode)).unwrap();
        let busy = Busy::start(8);
        std::thread::sleep(Duration::from_millis(3));
        let path = dir.join(format!("{round}.fdr"));
        rec.finish(&path)
            .unwrap_or_else(|e| panic!("round {round}: {e}"));
        drop(busy);
        let log = read_log(&path);
        assert!(!log.run.snapshot);
        assert!(
            !log.blocks.is_empty(),
            "round {round}: no blocks: {:?} {:?}",
            log.run,
            log.threads
        );
        log.assert_nests();
    }
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn finish_races_eight_recording_threads_in_ring_mode() {
    finish_races_recording_threads(Mode::Ring);
}

#[test]
fn finish_races_eight_recording_threads_in_fill_mode() {
    finish_races_recording_threads(Mode::Fill);
}

#[test]
fn finish_and_snapshot_racing_to_one_path_leave_the_final_log() {
    let _turn = testing::exclusive();
    let dir = scratch("same-path");
    let path = dir.join("one.fdr");
    for round in 0..200 {
        let rec = fdr_runtime::start(every_call().buffer_size(4096).buffer_count(8)).unwrap();
        mid();
        let snap = {
            let rec = rec.clone();
            let path = path.clone();
            std::thread::spawn(move || {
                mid();
                rec.write_snapshot(&path)
            })
        };
        rec.finish(&path)
            .unwrap_or_else(|e| panic!("round {round}: finish: {e}"));
        let snap = snap.join().unwrap();
        assert!(
            matches!(snap, Ok(()) | Err(Error::NotRecording)),
            "round {round}: {snap:?}"
        );
        let log = read_log(&path);
        assert!(
            !log.run.snapshot,
            "round {round}: a snapshot replaced the final log"
        );
        log.assert_nests();
    }
    let leftovers: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(leftovers, vec![std::ffi::OsString::from("one.fdr")]);
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn a_failed_finish_keeps_the_data_for_a_retry() {
    let _turn = testing::exclusive();
    let dir = scratch("retry");
    let rec = fdr_runtime::start(every_call().buffer_count(4).mode(Mode::Fill)).unwrap();
    mid();
    let bad = dir.join("missing-dir").join("x.fdr");
    let err = rec.finish(&bad).unwrap_err();
    assert!(matches!(err, Error::Io { .. }), "{err}");
    assert!(err.to_string().contains("missing-dir"), "{err}");
    // Recording stopped with the failed finish: this call is not in the log.
    mid();
    let good = dir.join("x.fdr");
    rec.finish(&good).unwrap();
    let log = read_log(&good);
    let tid = log.tids()[0];
    let (m, l) = (MID.id(), LEAF.id());
    let mut expected = vec![(fdr_format::FnKind::Enter, m)];
    for _ in 0..4 {
        expected.push((fdr_format::FnKind::Enter, l));
        expected.push((fdr_format::FnKind::Exit, l));
    }
    expected.push((fdr_format::FnKind::Exit, m));
    assert_eq!(log.calls(tid), expected);
    // Once written, it is done.
    assert!(matches!(rec.finish(&good), Err(Error::NotRecording)));
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn a_failing_writer_does_not_lose_the_recording() {
    let _turn = testing::exclusive();
    let rec = fdr_runtime::start(every_call().buffer_count(4).mode(Mode::Fill)).unwrap();
    mid();
    struct Broken;
    impl std::io::Write for Broken {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(std::io::Error::other("disk full"))
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    assert!(matches!(rec.finish_to(&mut Broken), Err(Error::Io { .. })));
    assert!(!rec.is_recording());
    let mut bytes = Vec::new();
    rec.finish_to(&mut bytes).unwrap();
    let log = decode(&bytes[..]).unwrap();
    assert_eq!(log.calls(log.tids()[0]).len(), 10);
}

#[test]
fn finish_does_not_wait_for_a_stalled_snapshot_writer() {
    let _turn = testing::exclusive();
    let rec = fdr_runtime::start(every_call().buffer_count(4)).unwrap();
    mid();
    // A snapshot whose writer stalls until released.
    let (release, stalled) = mpsc::channel::<()>();
    let (started, writing) = mpsc::channel::<()>();
    struct Stall(mpsc::Receiver<()>, Option<mpsc::Sender<()>>);
    impl std::io::Write for Stall {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            if let Some(s) = self.1.take() {
                s.send(()).unwrap();
                let _ = self.0.recv();
            }
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let snap = {
        let rec = rec.clone();
        std::thread::spawn(move || rec.snapshot(&mut Stall(stalled, Some(started))))
    };
    writing.recv().unwrap();
    let (done, finished) = mpsc::channel();
    {
        let rec = rec.clone();
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let r = rec.finish_to(&mut bytes).map(|()| bytes);
            let _ = done.send(r);
        });
    }
    let bytes = finished
        .recv_timeout(Duration::from_secs(10))
        .expect("finish is still waiting for the stalled snapshot after 10 s")
        .unwrap();
    let log = decode(&bytes[..]).unwrap();
    assert_eq!(log.calls(log.tids()[0]).len(), 10);
    release.send(()).unwrap();
    snap.join().unwrap().unwrap();
}

#[test]
fn out_is_checked_when_recording_starts() {
    let _turn = testing::exclusive();
    let dir = scratch("out");
    for (out, why) in [
        (dir.join("nowhere").join("x.fdr"), "nowhere"),
        (dir.clone(), "directory"),
    ] {
        let err = match fdr_runtime::start(every_call().buffer_count(2).out(&out)) {
            Err(e) => e,
            Ok(r) => {
                r.finish_to(&mut std::io::sink()).unwrap();
                panic!("{} was accepted", out.display());
            }
        };
        match &err {
            Error::Config { key, message } => {
                assert_eq!(key, "out");
                assert!(message.contains(why), "{message}");
            }
            e => panic!("{e}"),
        }
    }
    // A writable place passes and leaves nothing behind.
    let rec = fdr_runtime::start(every_call().buffer_count(2).out(dir.join("ok.fdr"))).unwrap();
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
    rec.finish_to(&mut std::io::sink()).unwrap();
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn the_thread_registry_forgets_threads_whose_data_is_gone() {
    let _turn = testing::exclusive();
    let rec = fdr_runtime::start(
        every_call()
            .buffer_size(4096)
            .buffer_count(8)
            .mode(Mode::Ring),
    )
    .unwrap();
    // qemu-user (7.2) keeps about 280 KB of every thread that ever ran, 28 GB for 100,000 (a C
    // program that starts and joins threads shows it): under it, 2,000 threads, still 250 times
    // the buffers a thread may keep in the registry.
    let n = if cfg!(fdr_emulated) { 2_000 } else { 100_000 };
    for _ in 0..n / 100 {
        let handles: Vec<_> = (0..100).map(|_| std::thread::spawn(mid)).collect();
        for h in handles {
            h.join().unwrap();
        }
    }
    // Only threads that still have a buffer in the pool are remembered.
    let stats = rec.stats();
    assert!(stats.threads <= 8, "{stats:?}");
    let mut bytes = Vec::new();
    rec.finish_to(&mut bytes).unwrap();
    let log = decode(&bytes[..]).unwrap();
    assert!(log.threads.len() <= 8, "{} threads", log.threads.len());
    assert!(log.run.buffers_recycled > n / 2, "{:?}", log.run);
    for tid in log.tids() {
        assert!(log.threads.iter().any(|t| t.tid == tid), "thread {tid}");
    }
}

#[test]
fn the_log_reports_the_buffer_size_and_threshold_it_used() {
    let _turn = testing::exclusive();
    let rec = fdr_runtime::start(
        Config::default()
            .buffer_size(1001)
            .buffer_count(2)
            .threshold(Duration::from_secs(u64::MAX / 1_000_000)),
    )
    .unwrap();
    let mut bytes = Vec::new();
    rec.finish_to(&mut bytes).unwrap();
    let log = decode(&bytes[..]).unwrap();
    assert_eq!(log.header.buffer_size, 1000);
    assert_eq!(log.run.buffer_size, 1000);
    assert_eq!(log.run.threshold_ns, u64::MAX);
}

#[test]
fn a_recording_without_triggers_leaves_the_kernel_s_switch_hooks_alone() {
    // No thread opens a switch ring without a trigger, so nothing turns the kernel's hooks on
    // (`where_time_went.rs` has the recording with one).
    let _turn = testing::exclusive();
    let rec = fdr_runtime::start(every_call().buffer_count(2)).unwrap();
    let mut threads = Vec::new();
    for _ in 0..4 {
        threads.push(std::thread::spawn(|| {
            for _ in 0..100 {
                mid();
            }
        }));
    }
    for t in threads {
        t.join().unwrap();
    }
    let held = testing::switch_hooks_held();
    rec.finish_to(&mut std::io::sink()).unwrap();
    assert!(!held);
    assert_eq!(testing::switch_rings_open(), 0);
}

// Child processes: exit with busy threads, fork, and a signal handler's first call.

fn run_child(test: &str, options: Option<&str>) -> Output {
    let mut cmd = fdr_testkit::child::command(test);
    if let Some(o) = options {
        cmd.env("FDR_OPTIONS", o);
    }
    cmd.output().unwrap()
}

#[test]
#[ignore = "a child process of exit_with_busy_threads_writes_a_valid_log"]
fn child_exits_while_threads_record() {
    if !fdr_testkit::child::spawned() {
        return;
    }
    use std::sync::atomic::{AtomicUsize, Ordering};
    static RECORDING: AtomicUsize = AtomicUsize::new(0);
    // The first call starts recording (and sets up the exit writer).
    mid();
    // Threads that never stop: the process exits under them, once each has recorded (on a
    // loaded machine a thread may otherwise not run at all before the exit).
    for _ in 0..8 {
        std::thread::spawn(|| {
            mid();
            RECORDING.fetch_add(1, Ordering::SeqCst);
            loop {
                mid();
            }
        });
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while RECORDING.load(Ordering::SeqCst) < 8 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
    std::thread::sleep(Duration::from_millis(10));
}

#[test]
fn exit_with_busy_threads_writes_a_valid_log() {
    let dir = scratch("exit");
    // Under qemu-user a child spawned while the test process's threads run now and then hangs
    // before its exec (the emulator's own fork, CI's aarch64 stage once sat there for ten
    // minutes): a few runs there, where the exit path is the same code.
    let runs = if cfg!(fdr_emulated) { 3 } else { 20 };
    for run in 0..runs {
        let out = dir.join(format!("{run}.fdr"));
        let child = run_child(
            "child_exits_while_threads_record",
            Some(&format!("buffer_size=4096 out={}", out.display())),
        );
        let stderr = String::from_utf8_lossy(&child.stderr);
        assert!(child.status.success(), "run {run}: {stderr}");
        let log = read_log(&out);
        assert!(!log.run.snapshot);
        log.assert_nests();
        assert!(log.tids().len() >= 2, "run {run}: {:?}", log.tids());
    }
    let names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(names.is_empty(), "temporary files left: {names:?}");
    std::fs::remove_dir_all(dir).ok();
}

#[test]
#[ignore = "a child process of panics_racing_the_exit_writer_leave_the_final_log"]
fn child_panics_while_exiting() {
    if !fdr_testkit::child::spawned() {
        return;
    }
    mid();
    std::panic::set_hook({
        // Keep stderr short: the fdr hook chained in front of this one still runs.
        let quiet: Box<dyn Fn(&std::panic::PanicHookInfo<'_>) + Send + Sync> = Box::new(|_| {});
        let fdr_hook = std::panic::take_hook();
        Box::new(move |info| {
            fdr_hook(info);
            quiet(info);
        })
    });
    for _ in 0..8 {
        std::thread::spawn(|| loop {
            let _ = std::panic::catch_unwind(|| {
                mid();
                panic!("deliberate");
            });
        });
    }
    std::thread::sleep(Duration::from_millis(20));
}

#[test]
fn panics_racing_the_exit_writer_leave_the_final_log() {
    let dir = scratch("panic-exit");
    for run in 0..20 {
        let out = dir.join(format!("{run}.fdr"));
        let child = run_child(
            "child_panics_while_exiting",
            Some(&format!("buffer_size=4096 out={}", out.display())),
        );
        let stderr = String::from_utf8_lossy(&child.stderr);
        assert!(child.status.success(), "run {run}: {stderr}");
        let log = read_log(&out);
        assert!(
            !log.run.snapshot,
            "run {run}: a panic snapshot replaced the final log"
        );
        log.assert_nests();
    }
    std::fs::remove_dir_all(dir).ok();
}

#[test]
#[ignore = "a child process of a_panic_log_is_kept_beside_the_exit_log"]
fn child_panics_once_then_exits() {
    if !fdr_testkit::child::spawned() {
        return;
    }
    mid();
    let fdr_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        // The fdr hook chained in front still writes; the default message stays out of stderr.
        fdr_hook(info);
    }));
    let _ = std::thread::spawn(|| {
        mid();
        panic!("deliberate");
    })
    .join();
    mid();
}

#[test]
fn a_panic_log_is_kept_beside_the_exit_log() {
    for (template, panic_name, final_name) in [
        ("app.fdr", "app-1.fdr", "app.fdr"),
        ("app-{n}.fdr", "app-1.fdr", "app-final.fdr"),
    ] {
        let dir = scratch("panic-then-exit");
        let child = run_child(
            "child_panics_once_then_exits",
            Some(&format!("out={}", dir.join(template).display())),
        );
        let stderr = String::from_utf8_lossy(&child.stderr);
        assert!(child.status.success(), "{template}: {stderr}");
        let mut files: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        files.sort();
        let mut want = vec![panic_name.to_string(), final_name.to_string()];
        want.sort();
        assert_eq!(files, want, "{template}: {stderr}");
        let panic_log = read_log(&dir.join(panic_name));
        assert_eq!(panic_log.reason.unwrap().reason, Reason::Panic);
        assert!(panic_log.run.snapshot);
        let final_log = read_log(&dir.join(final_name));
        assert_eq!(final_log.reason.unwrap().reason, Reason::Exit);
        assert!(!final_log.run.snapshot);
        std::fs::remove_dir_all(dir).ok();
    }
}

#[test]
#[ignore = "a child process of fdr_options_overridden_by_start_say_so"]
fn child_starts_its_own_recorder() {
    if !fdr_testkit::child::spawned() {
        return;
    }
    let config = if std::env::var_os("CHILD_FROM_ENV").is_some() {
        Config::from_env().unwrap().unwrap()
    } else {
        every_call()
    };
    let rec = fdr_runtime::start(config).unwrap();
    mid();
    rec.finish_to(&mut std::io::sink()).unwrap();
}

#[test]
fn fdr_options_overridden_by_start_say_so() {
    let said = "fdr: FDR_OPTIONS is set, but the program starts its own recorder (fdr::start), \
                whose configuration is used; FDR_OPTIONS=\"threshold_us=7\" is ignored (pass \
                fdr::Config::from_env() to fdr::start to honour it)\n";
    for (from_env, warned) in [(false, true), (true, false)] {
        let mut cmd = fdr_testkit::child::command("child_starts_its_own_recorder");
        cmd.env("FDR_OPTIONS", "threshold_us=7");
        if from_env {
            cmd.env("CHILD_FROM_ENV", "1");
        }
        let out = cmd.output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        assert_eq!(
            stderr.matches(said).count(),
            usize::from(warned),
            "{stderr}"
        );
    }
}

#[test]
fn arguments_too_large_for_any_buffer_are_counted_as_such() {
    let _turn = testing::exclusive();
    // 256 bytes: 32 words, 10 of them the preamble; 20 arguments need 41.
    let rec = fdr_runtime::start(
        every_call()
            .buffer_size(256)
            .buffer_count(2)
            .mode(Mode::Fill),
    )
    .unwrap();
    fdr_runtime::hooks::enter_args(&MID, &[7; 20]);
    fdr_runtime::hooks::exit(&MID);
    let mut bytes = Vec::new();
    rec.finish_to(&mut bytes).unwrap();
    let log = decode(&bytes[..]).unwrap();
    assert_eq!(log.run.args_dropped, 20);
    assert_eq!(log.run.records_dropped, 0);
    let m = MID.id();
    assert_eq!(
        log.calls(log.tids()[0]),
        vec![
            (fdr_format::FnKind::EnterArgs, m),
            (fdr_format::FnKind::Exit, m)
        ]
    );
}

fn gettid() -> i32 {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::syscall(libc::SYS_gettid) as i32 }
}

#[test]
#[ignore = "a child process of a_forked_child_records_as_its_own_process"]
fn child_forks() {
    if !fdr_testkit::child::spawned() {
        return;
    }
    mid();
    let parent_tid = gettid();
    // SAFETY: the child only records, writes a few bytes to a file and exits; the test process
    // runs its tests on this one thread.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0);
    if pid == 0 {
        mid();
        mid();
        let out = std::env::var("FORK_TIDS").unwrap();
        std::fs::write(
            out,
            format!("{} {} {}", std::process::id(), gettid(), parent_tid),
        )
        .unwrap();
        // A normal exit, which runs the exit writer.
        std::process::exit(0);
    }
    let mut status = 0;
    // SAFETY: waits for the child just forked.
    unsafe { libc::waitpid(pid, &mut status, 0) };
    assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
    mid();
}

#[test]
#[cfg_attr(
    fdr_emulated,
    ignore = "qemu-user (7.2) aborts in a child forked from a process with threads once the child starts a thread (cpu_exec: assertion cpu == current_cpu); a C program of ten lines does the same"
)]
fn a_forked_child_records_as_its_own_process() {
    let dir = scratch("fork");
    let out = dir.join("app.fdr");
    let ids = dir.join("ids");
    let child = fdr_testkit::child::command("child_forks")
        .env(
            "FDR_OPTIONS",
            format!("mode=fill threshold_us=0 out={}", out.display()),
        )
        .env("FORK_TIDS", &ids)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&child.stderr);
    assert!(child.status.success(), "{stderr}");
    let ids = std::fs::read_to_string(&ids).unwrap();
    let ids: Vec<i32> = ids.split(' ').map(|s| s.parse().unwrap()).collect();
    let (child_pid, child_tid, parent_tid) = (ids[0], ids[1], ids[2]);

    // The parent's log: its own pid and thread, the calls before and after the fork.
    let parent = read_log(&out);
    assert_ne!(parent.run.pid, child_pid);
    assert_eq!(parent.tids(), vec![parent_tid]);
    assert!(parent.blocks.iter().all(|b| b.pid == parent.run.pid));
    assert_eq!(parent.calls(parent_tid).len(), 20);

    // The child's log: next to it, named with the child's pid, holding only the child's calls.
    let child_out = dir.join(format!("app.{child_pid}.fdr"));
    let child = read_log(&child_out);
    assert_eq!(child.run.pid, child_pid);
    assert_eq!(child.tids(), vec![child_tid]);
    assert!(child.blocks.iter().all(|b| b.pid == child_pid));
    assert_eq!(child.calls(child_tid).len(), 20);
    std::fs::remove_dir_all(dir).ok();
}

#[test]
#[ignore = "a child process of a_forked_child_of_a_program_that_started_its_recorder_records_its_own"]
fn child_forks_while_recording() {
    if !fdr_testkit::child::spawned() {
        return;
    }
    let rec = fdr_runtime::start(every_call()).unwrap();
    mid();
    // SAFETY: the child only records, checks its own log and exits; the test process runs its
    // tests on this one thread.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0);
    if pid == 0 {
        // The parent's recording is not the child's: nothing records here until it starts one.
        mid();
        assert!(!rec.is_recording());
        let own = fdr_runtime::start(every_call()).unwrap();
        mid();
        mid();
        let mut bytes = Vec::new();
        own.finish_to(&mut bytes).unwrap();
        let log = decode(&bytes[..]).unwrap();
        let calls = log.calls(log.tids()[0]).len();
        // SAFETY: ends the child without running the parent's exit handlers or test harness.
        unsafe { libc::_exit(if calls == 20 { 0 } else { 1 }) };
    }
    let mut status = 0;
    // SAFETY: waits for the child just forked.
    unsafe { libc::waitpid(pid, &mut status, 0) };
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "the child did not record exactly its two calls after its own start"
    );
    mid();
    let mut bytes = Vec::new();
    rec.finish_to(&mut bytes).unwrap();
    let log = decode(&bytes[..]).unwrap();
    assert_eq!(log.calls(log.tids()[0]).len(), 20);
}

#[test]
#[cfg_attr(
    fdr_emulated,
    ignore = "qemu-user (7.2) aborts in a child forked from a process with threads once the child starts a thread (cpu_exec: assertion cpu == current_cpu); a C program of ten lines does the same"
)]
fn a_forked_child_of_a_program_that_started_its_recorder_records_its_own() {
    let child = run_child("child_forks_while_recording", None);
    let stderr = String::from_utf8_lossy(&child.stderr);
    assert!(child.status.success(), "{stderr}");
}

static ARMED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_usr1(_: libc::c_int) {
    if ARMED.load(Ordering::Relaxed) {
        drop(CallGuard::enter(&HANDLER));
    }
}

#[test]
#[ignore = "a child process of a_signal_handlers_first_call_inside_the_api_does_not_deadlock"]
fn child_signals_threads_inside_the_api() {
    if !fdr_testkit::child::spawned() {
        return;
    }
    // SAFETY: installs a handler that only records (which must be safe anywhere).
    unsafe {
        libc::signal(
            libc::SIGUSR1,
            on_usr1 as extern "C" fn(libc::c_int) as libc::sighandler_t,
        )
    };
    let rec = fdr_runtime::start(every_call().buffer_count(64)).unwrap();
    ARMED.store(true, Ordering::Relaxed);
    for _ in 0..200 {
        let stop = Arc::new(AtomicBool::new(false));
        let (tx, rx) = mpsc::channel();
        let t = {
            let rec = rec.clone();
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                // SAFETY: pthread_self has no preconditions.
                tx.send(unsafe { libc::pthread_self() } as u64).unwrap();
                // Inside the API, over and over, without having recorded yet.
                while !stop.load(Ordering::Relaxed) {
                    std::hint::black_box(rec.stats());
                }
            })
        };
        let thread = rx.recv().unwrap() as libc::pthread_t;
        for _ in 0..20 {
            // SAFETY: the thread is alive until `stop` is set and it is joined.
            unsafe { libc::pthread_kill(thread, libc::SIGUSR1) };
            std::thread::sleep(Duration::from_micros(50));
        }
        stop.store(true, Ordering::Relaxed);
        t.join().unwrap();
    }
    let mut bytes = Vec::new();
    rec.finish_to(&mut bytes).unwrap();
    decode(&bytes[..]).unwrap();
    println!("child done");
}

#[test]
fn a_signal_handlers_first_call_inside_the_api_does_not_deadlock() {
    let mut child = fdr_testkit::child::command("child_signals_threads_inside_the_api")
        .env_remove("FDR_OPTIONS")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let out = child.wait_with_output().unwrap();
            assert!(status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            assert!(String::from_utf8_lossy(&out.stdout).contains("child done"));
            return;
        }
        if std::time::Instant::now() > deadline {
            child.kill().ok();
            panic!("the child is deadlocked: a signal handler's first call waited on fdr's lock");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

// Profile mode under the same pressure.

/// `(function name, count)` of the merged tree's nodes of a profile that must decode.
fn profile_counts(bytes: &[u8]) -> Vec<(String, u64)> {
    let p = fdr_format::profile::Profile::decode(bytes).unwrap();
    let t = p.merged();
    t.nodes
        .iter()
        .map(|n| (p.function_name(n.function).unwrap().to_string(), n.count))
        .collect()
}

/// Calls of `name` over every path of `counts`.
fn calls_of(counts: &[(String, u64)], name: &str) -> u64 {
    counts.iter().filter(|(n, _)| n == name).map(|c| c.1).sum()
}

fn finish_races_profiling_threads(config: fn() -> Config) {
    let _turn = testing::exclusive();
    let dir = scratch("finish-profile");
    for round in 0..50 {
        let rec = fdr_runtime::start(config()).unwrap();
        let busy = Busy::start(8);
        std::thread::sleep(Duration::from_millis(3));
        let mut now = Vec::new();
        rec.profile_to(&mut now).unwrap();
        profile_counts(&now);
        let path = dir.join(format!("{round}.fdr"));
        rec.finish(&path)
            .unwrap_or_else(|e| panic!("round {round}: {e}"));
        drop(busy);
        let profile = if config().get_mode() == Mode::Profile {
            path
        } else {
            read_log(&path).assert_nests();
            path.with_extension("fdrprof")
        };
        let counts = profile_counts(&std::fs::read(&profile).unwrap());
        let mids = calls_of(&counts, "life::mid");
        // Every thread made its first call before `finish`.
        assert!(mids >= 8, "round {round}: {counts:?}");
    }
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn finish_races_eight_profiling_threads_in_profile_mode() {
    finish_races_profiling_threads(|| Config::default().mode(Mode::Profile));
}

#[test]
fn finish_races_eight_profiling_threads_beside_a_ring() {
    finish_races_profiling_threads(|| {
        every_call()
            .buffer_size(4096)
            .buffer_count(16)
            .profile(true)
    });
}

#[test]
fn exit_with_busy_threads_writes_a_valid_profile() {
    let dir = scratch("exit-profile");
    for run in 0..10 {
        let out = dir.join(format!("{run}.fdrprof"));
        let child = run_child(
            "child_exits_while_threads_record",
            Some(&format!("mode=profile out={}", out.display())),
        );
        let stderr = String::from_utf8_lossy(&child.stderr);
        assert!(child.status.success(), "run {run}: {stderr}");
        let counts = profile_counts(&std::fs::read(&out).unwrap());
        let mids = calls_of(&counts, "life::mid");
        assert!(mids >= 9, "run {run}: {counts:?}");
    }
    std::fs::remove_dir_all(dir).ok();
}

#[test]
#[cfg_attr(
    fdr_emulated,
    ignore = "qemu-user (7.2) aborts in a child forked from a process with threads once the child starts a thread (cpu_exec: assertion cpu == current_cpu); a C program of ten lines does the same"
)]
fn a_forked_child_profiles_as_its_own_process() {
    let dir = scratch("fork-profile");
    let out = dir.join("app.fdrprof");
    let ids = dir.join("ids");
    let child = fdr_testkit::child::command("child_forks")
        .env("FDR_OPTIONS", format!("mode=profile out={}", out.display()))
        .env("FORK_TIDS", &ids)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&child.stderr);
    assert!(child.status.success(), "{stderr}");
    let ids = std::fs::read_to_string(&ids).unwrap();
    let child_pid: u32 = ids.split(' ').next().unwrap().parse().unwrap();
    // Each process its own calls: two of mid, eight of leaf under them.
    let want = [("life::mid".to_string(), 2), ("life::leaf".to_string(), 8)];
    for path in [out.clone(), dir.join(format!("app.{child_pid}.fdrprof"))] {
        let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(profile_counts(&bytes), want, "{}", path.display());
    }
    std::fs::remove_dir_all(dir).ok();
}
