//! The black box where services run: restarted after a crash with the same options, in
//! containers that share a crash directory, stopped by SIGTERM, handling faults of their own,
//! forking and exec'ing, next to files another user put in `/dev/shm`. Each case runs this test
//! binary again as a child process (two of them in PID namespaces of their own), and checks what
//! a person on call finds afterwards: one log per death, named so that nothing replaces it, the
//! death named as it happened, nothing left behind, nothing hung.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use fdr_format::crash_box;
use fdr_format::{FnKind, Reason};
use fdr_runtime::{testing, CallGuard};
use fdr_testkit::desc;
use fdr_testkit::logs::{decode, logs_in, read_log, DecodedLog};

desc!(WORK, "deploy::work");
desc!(OUTER, "deploy::outer");
desc!(HANG, "deploy::hang");
desc!(CRASH, "deploy::crash");

const THREADS: usize = 3;
const CALLS: usize = 200;

fn scratch(name: &str) -> PathBuf {
    fdr_testkit::logs::scratch(&format!("deploy-{name}"))
}

/// `FDR_OPTIONS` that keep every call, log to `dir/app.fdr` and keep the box in `dir`.
fn options(dir: &Path, extra: &str) -> String {
    format!(
        "threshold_us=0 buffer_count=64 out={} crash_dir={} {extra}",
        dir.join("app.fdr").display(),
        dir.display()
    )
}

fn child(test: &str, options: &str) -> Command {
    let mut c = fdr_testkit::child::command(test);
    c.env("FDR_OPTIONS", options)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

/// Signals a shell leaves ignored in the programs it starts in the background (SIGINT, SIGQUIT)
/// are given their default action back, as a service's would have: what is ignored is not a
/// way to die.
fn default_signals() {
    for sig in [libc::SIGINT, libc::SIGQUIT, libc::SIGHUP, libc::SIGTERM] {
        // SAFETY: restores the default action of a signal; no handler of ours is involved.
        unsafe { libc::signal(sig, libc::SIG_DFL) };
    }
}

/// Every worker makes `CALLS` calls of `work` inside `outer`, then all wait inside `hang`.
fn workers() {
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
                std::thread::sleep(Duration::from_secs(10));
            }
        });
    }
    barrier.wait();
}

fn forever() -> ! {
    loop {
        std::thread::sleep(Duration::from_secs(10));
    }
}

#[test]
#[ignore = "a child process of the deployment tests"]
fn child_works_then_hangs() {
    if !fdr_testkit::child::spawned() {
        return;
    }
    default_signals();
    workers();
    println!("ready");
    forever();
}

#[test]
#[ignore = "a child process of the deployment tests"]
fn child_works_then_exits() {
    if !fdr_testkit::child::spawned() {
        return;
    }
    for _ in 0..10 {
        drop(CallGuard::enter(&WORK));
    }
}

#[test]
#[ignore = "a child process of the deployment tests"]
fn child_works_then_exits_when_told() {
    if !fdr_testkit::child::spawned() {
        return;
    }
    workers();
    println!("ready");
    let mut line = String::new();
    std::io::stdin().read_line(&mut line).unwrap();
}

#[test]
#[ignore = "a child process of the deployment tests"]
fn child_works_then_segfaults() {
    if !fdr_testkit::child::spawned() {
        return;
    }
    workers();
    let _c = CallGuard::enter(&CRASH);
    // SAFETY: none: the point is the segfault.
    unsafe { std::ptr::null_mut::<u64>().write_volatile(1) };
}

/// What the `fdr` command prints for `args` (its errors too).
fn fdr(args: &[&str]) -> String {
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let mut out = Vec::new();
    let r = fdr_cli::run(&args, &mut out);
    let mut s = String::from_utf8_lossy(&out).into_owned();
    if let Err(e) = r {
        s.push_str(&e.to_string());
    }
    s
}

fn program() -> String {
    std::env::current_exe()
        .unwrap()
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned()
}

/// A name a box of this program's process `pid` could have (one without a tag, as fdr named
/// boxes before it gave them one, which it still reads).
fn named_like_a_box(pid: i32) -> String {
    format!("fdr-{}-{pid}.box", crash_box::file_safe(&program()))
}

/// The boxes in `dir` (any name fdr gives one).
fn boxes_in(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| crash_box::pid_of(n, None).is_some())
        })
        .collect();
    v.sort();
    v
}

/// The one box of process `pid` in `dir`.
fn box_of(dir: &Path, pid: u32) -> PathBuf {
    let mine: Vec<PathBuf> = boxes_in(dir)
        .into_iter()
        .filter(|p| {
            crash_box::pid_of(p.file_name().unwrap().to_str().unwrap(), None) == Some(pid as i32)
        })
        .collect();
    assert_eq!(mine.len(), 1, "boxes of {pid}: {mine:?}");
    mine[0].clone()
}

/// Waits for the child's line that ends with "ready" and returns it.
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
            c.stdout = Some(out.into_inner());
            return line;
        }
    }
}

/// Waits at most `limit` for the child; kills it and fails past that.
fn wait_within(c: &mut Child, limit: Duration, what: &str) -> ExitStatus {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(s) = c.try_wait().unwrap() {
            return s;
        }
        if Instant::now() > deadline {
            let _ = c.kill();
            let _ = c.wait();
            panic!("{what}: still running after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn stderr_of(c: &mut Child) -> String {
    let mut s = String::new();
    if let Some(mut e) = c.stderr.take() {
        use std::io::Read;
        let _ = e.read_to_string(&mut s);
    }
    s
}

/// The logs in `dir` with their decoded contents.
fn logs(dir: &Path) -> Vec<(PathBuf, DecodedLog)> {
    logs_in(dir)
        .into_iter()
        .map(|p| {
            let l = read_log(&p);
            (p, l)
        })
        .collect()
}

/// The logs in `dir` recovered from a box of process `pid`.
fn recovered_of(dir: &Path, pid: u32) -> Vec<(PathBuf, DecodedLog)> {
    logs(dir)
        .into_iter()
        .filter(|(_, l)| {
            l.reason.as_ref().is_some_and(|r| r.reason == Reason::Crash) && l.run.pid == pid as i32
        })
        .collect()
}

/// Each worker's calls: `outer` with `CALLS` calls of `work`, then `hang`, open.
fn check_workers(log: &DecodedLog) {
    let (w, o, h) = (WORK.id(), OUTER.id(), HANG.id());
    let mut want = vec![(FnKind::Enter, o)];
    for _ in 0..CALLS {
        want.push((FnKind::Enter, w));
        want.push((FnKind::Exit, w));
    }
    want.push((FnKind::Exit, o));
    want.push((FnKind::Enter, h));
    let workers = log
        .tids()
        .into_iter()
        .filter(|&t| log.calls(t).first() == Some(&(FnKind::Enter, o)))
        .inspect(|&t| assert_eq!(log.calls(t), want, "thread {t}"))
        .count();
    assert_eq!(workers, THREADS, "{:?}", log.tids());
}

/// A child of `test` killed by SIGKILL once ready: its pid.
fn killed(test: &str, options: &str) -> u32 {
    let mut c = child(test, options).spawn().unwrap();
    wait_ready(&mut c);
    c.kill().unwrap();
    c.wait().unwrap();
    c.id()
}

#[test]
fn a_restart_after_a_crash_writes_its_own_log_beside_the_recovered_one() {
    let dir = scratch("restart");
    let opts = options(&dir, "");
    let dead = killed("child_works_then_hangs", &opts);
    // The restarted service: the same options, a clean exit.
    let next = child("child_works_then_exits", &opts).output().unwrap();
    let stderr = String::from_utf8_lossy(&next.stderr);
    assert!(next.status.success(), "{stderr}");
    let recovered = recovered_of(&dir, dead);
    assert_eq!(recovered.len(), 1, "{:?}", logs_in(&dir));
    let (path, log) = &recovered[0];
    assert_ne!(path, &dir.join("app.fdr"));
    assert_eq!(path.extension().unwrap(), "fdr");
    assert!(
        stderr.contains(&path.display().to_string()),
        "the start says where: {stderr}"
    );
    check_workers(log);
    // The restarted process's own log, at its own path.
    let own = read_log(&dir.join("app.fdr"));
    assert_eq!(own.reason.unwrap().reason, Reason::Exit);
    assert!(boxes_in(&dir).is_empty(), "{:?}", boxes_in(&dir));
}

/// `test` run as the first process of a PID namespace of its own, with its own `/proc`; `None`
/// (and why, printed) where this machine cannot make one (not root, no `unshare`).
fn in_own_pid_namespace(test: &str, options: &str) -> Option<Command> {
    let probe = Command::new("unshare")
        .args(["--pid", "--fork", "--mount-proc", "true"])
        .output();
    match probe {
        Ok(o) if o.status.success() => {}
        Ok(o) => {
            eprintln!(
                "skipped: `unshare --pid --fork --mount-proc` fails here (needs root): {}",
                String::from_utf8_lossy(&o.stderr).trim()
            );
            return None;
        }
        Err(e) => {
            eprintln!("skipped: no `unshare` command ({e})");
            return None;
        }
    }
    let inner = child(test, options);
    let mut c = Command::new("unshare");
    // --kill-child: a test that gives up on its child (a timeout) kills the namespace with it.
    c.args(["--pid", "--fork", "--mount-proc", "--kill-child", "--"])
        .arg(inner.get_program())
        .args(inner.get_args());
    for (k, v) in inner.get_envs() {
        match v {
            Some(v) => c.env(k, v),
            None => c.env_remove(k),
        };
    }
    c.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    Some(c)
}

#[test]
#[cfg_attr(
    fdr_emulated,
    ignore = "qemu-user ends a program on a fatal signal by sending the signal to itself, which the first process of a PID namespace ignores: such a process cannot die of its segfault under qemu"
)]
fn two_pid_namespaces_sharing_a_crash_directory_keep_their_boxes_apart() {
    let dir = scratch("namespaces");
    let a_opts = options(&dir, "").replace("app.fdr", "a.fdr");
    let b_opts = options(&dir, "").replace("app.fdr", "b.fdr");
    let Some(mut a) = in_own_pid_namespace("child_works_then_exits_when_told", &a_opts) else {
        return;
    };
    let mut a = a.spawn().unwrap();
    wait_ready(&mut a);
    assert_eq!(boxes_in(&dir).len(), 1);
    let a_box = boxes_in(&dir)[0].clone();
    assert_eq!(
        crash_box::pid_of(a_box.file_name().unwrap().to_str().unwrap(), None),
        Some(1),
        "the process is its namespace's first"
    );
    // B, also process 1 in a namespace of its own, starts beside A's box and dies.
    let mut b = in_own_pid_namespace("child_works_then_segfaults", &b_opts)
        .unwrap()
        .spawn()
        .unwrap();
    wait_within(&mut b, Duration::from_secs(60), "B");
    let b_stderr = stderr_of(&mut b);
    assert!(
        !b_stderr.contains("recovered"),
        "B took A's running box for a dead one: {b_stderr}"
    );
    assert!(a_box.exists(), "A's box is A's");
    let boxes = boxes_in(&dir);
    assert_eq!(boxes.len(), 2, "{boxes:?}");
    let b_box = boxes.iter().find(|p| **p != a_box).unwrap().clone();

    // `fdr recover` outside both namespaces: B's box becomes B's log, A's is left alone.
    let said = fdr(&["recover", dir.to_str().unwrap()]);
    assert!(a_box.exists(), "a running process's box was taken: {said}");
    assert!(!b_box.exists(), "{said}");
    assert!(said.contains("left alone"), "{said}");
    let b_log: Vec<_> = logs(&dir)
        .into_iter()
        .filter(|(_, l)| l.reason.as_ref().is_some_and(|r| r.reason == Reason::Crash))
        .collect();
    assert_eq!(b_log.len(), 1, "{said}");
    assert_eq!(b_log[0].1.reason.as_ref().unwrap().signal, libc::SIGSEGV);
    check_workers(&b_log[0].1);

    // A exits cleanly: its log, and its own box (not another's) removed.
    a.stdin.take().unwrap().write_all(b"go\n").unwrap();
    let status = wait_within(&mut a, Duration::from_secs(60), "A");
    assert!(status.success(), "{}", stderr_of(&mut a));
    let a_log = read_log(&dir.join("a.fdr"));
    assert_eq!(a_log.reason.unwrap().reason, Reason::Exit);
    assert!(boxes_in(&dir).is_empty(), "{:?}", boxes_in(&dir));
}

#[test]
#[cfg_attr(
    fdr_emulated,
    ignore = "qemu-user ends a program on a fatal signal by sending the signal to itself, which the first process of a PID namespace ignores: such a process cannot die of its segfault under qemu"
)]
fn a_box_made_in_another_namespace_with_this_process_s_pid_is_not_this_process_s() {
    // Another namespace's process 1 died; this test's own recording starts beside its box, which
    // it must recover as another process's (not skip as its own, nor delete at its exit).
    let dir = scratch("not-mine");
    let Some(mut b) = in_own_pid_namespace("child_works_then_segfaults", &options(&dir, "")) else {
        return;
    };
    let mut b = b.spawn().unwrap();
    wait_within(&mut b, Duration::from_secs(60), "B");
    let dead = boxes_in(&dir);
    assert_eq!(dead.len(), 1);
    let next = child(
        "child_works_then_exits",
        &options(&dir, "").replace("app.fdr", "n.fdr"),
    )
    .output()
    .unwrap();
    assert!(
        next.status.success(),
        "{}",
        String::from_utf8_lossy(&next.stderr)
    );
    assert!(boxes_in(&dir).is_empty(), "{:?}", boxes_in(&dir));
    let crashed: Vec<_> = logs(&dir)
        .into_iter()
        .filter(|(_, l)| l.reason.as_ref().is_some_and(|r| r.reason == Reason::Crash))
        .collect();
    assert_eq!(crashed.len(), 1);
    assert_eq!(crashed[0].1.reason.as_ref().unwrap().signal, libc::SIGSEGV);
}

#[test]
fn racing_restarts_recover_each_box_exactly_once() {
    let dir = scratch("race");
    let opts = options(&dir, "buffer_count=16");
    for round in 0..10 {
        let dead = killed("child_works_then_hangs", &opts);
        let racers: Vec<Child> = (0..3)
            .map(|_| child("child_works_then_exits", &opts).spawn().unwrap())
            .collect();
        for mut r in racers {
            let s = wait_within(&mut r, Duration::from_secs(60), "a restart");
            assert!(s.success(), "round {round}: {}", stderr_of(&mut r));
        }
        let recovered = recovered_of(&dir, dead);
        assert_eq!(
            recovered.len(),
            1,
            "round {round}: {:?}",
            recovered.iter().map(|r| &r.0).collect::<Vec<_>>()
        );
        check_workers(&recovered[0].1);
        assert!(boxes_in(&dir).is_empty(), "round {round}");
    }
}

/// Runs `child_works_then_hangs`, sends it `sig` once ready, and returns its exit status and its
/// box's path.
fn stopped_by(name: &str, sig: i32) -> (ExitStatus, PathBuf, PathBuf) {
    let dir = scratch(name);
    let mut c = child("child_works_then_hangs", &options(&dir, ""))
        .spawn()
        .unwrap();
    wait_ready(&mut c);
    // SAFETY: signals the child this test started.
    assert_eq!(unsafe { libc::kill(c.id() as i32, sig) }, 0);
    let status = wait_within(&mut c, Duration::from_secs(60), name);
    (status, box_of(&dir, c.id()), dir)
}

#[test]
fn terminating_signals_are_named_and_the_exit_status_is_unchanged() {
    for (sig, name) in [
        (libc::SIGTERM, "SIGTERM"),
        (libc::SIGINT, "SIGINT"),
        (libc::SIGHUP, "SIGHUP"),
        (libc::SIGQUIT, "SIGQUIT"),
        (libc::SIGUSR2, "SIGUSR2"),
    ] {
        let (status, bx, _) = stopped_by(&format!("signal-{sig}"), sig);
        assert_eq!(status.signal(), Some(sig), "{name}: {status:?}");
        let r = crash_box::recover(&std::fs::read(&bx).unwrap()).unwrap();
        assert_eq!(r.info.signal, sig, "{name}: {}", r.info.death());
        assert!(r.info.death().starts_with(name), "{}", r.info.death());
        let log = decode(&r.log[..]).unwrap();
        assert_eq!(log.reason.as_ref().unwrap().signal, sig);
        check_workers(&log);
    }
}

#[test]
fn sigkill_is_still_said_to_run_no_handler() {
    let (status, bx, _) = stopped_by("sigkill", libc::SIGKILL);
    assert_eq!(status.signal(), Some(libc::SIGKILL));
    let r = crash_box::recover(&std::fs::read(&bx).unwrap()).unwrap();
    assert_eq!(r.info.signal, 0);
    assert!(
        r.info.death().starts_with("killed: no handler ran"),
        "{}",
        r.info.death()
    );
    // No handler said when: the death came after the log's end (the last sign of life) and
    // before the next sign of life was due, a second at most.
    let log = decode(&r.log[..]).unwrap();
    let within = log.reason.unwrap().end_within_ns;
    assert!((1..=1_000_000_000).contains(&within), "{within}");
}

static TERMS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

extern "C" fn count_term(_: i32) {
    TERMS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
}

/// The previous SIGTERM action a handler installed after fdr's chains to, as signal-hook (and
/// so tokio's `signal`) does.
static mut CHAINED: std::mem::MaybeUninit<libc::sigaction> = std::mem::MaybeUninit::zeroed();

extern "C" fn count_term_and_chain(sig: i32, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    TERMS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    // SAFETY: written once before this handler was installed.
    let prev = unsafe { (*std::ptr::addr_of!(CHAINED)).assume_init() };
    if prev.sa_sigaction == libc::SIG_DFL || prev.sa_sigaction == libc::SIG_IGN {
        return;
    }
    // SAFETY: the previous handler, called as its flags say, as signal-hook calls it.
    unsafe {
        if prev.sa_flags & libc::SA_SIGINFO != 0 {
            let f: extern "C" fn(i32, *mut libc::siginfo_t, *mut libc::c_void) =
                std::mem::transmute(prev.sa_sigaction);
            f(sig, info, ctx);
        } else {
            let f: extern "C" fn(i32) = std::mem::transmute(prev.sa_sigaction);
            f(sig);
        }
    }
}

fn wait_for_term_then_report() {
    while TERMS.load(std::sync::atomic::Ordering::SeqCst) == 0 {
        std::thread::sleep(Duration::from_millis(1));
    }
    println!("terminated ready");
}

#[test]
#[ignore = "a child process of the deployment tests"]
fn child_handles_sigterm_itself_and_exits() {
    if !fdr_testkit::child::spawned() {
        return;
    }
    default_signals();
    // The program's own handler, there before fdr starts.
    // SAFETY: a plain handler that only counts.
    unsafe { libc::signal(libc::SIGTERM, count_term as *const () as libc::sighandler_t) };
    workers();
    println!("ready");
    wait_for_term_then_report();
}

#[test]
#[ignore = "a child process of the deployment tests"]
fn child_chains_sigterm_after_fdr_and_exits() {
    if !fdr_testkit::child::spawned() {
        return;
    }
    default_signals();
    workers();
    // Installed after fdr's handlers, chaining to whatever was there (fdr's), as signal-hook
    // does for tokio's `signal::ctrl_c` and `SignalKind::terminate`.
    // SAFETY: the previous action is saved before the new handler that reads it exists.
    unsafe {
        libc::sigaction(
            libc::SIGTERM,
            std::ptr::null(),
            (*std::ptr::addr_of_mut!(CHAINED)).as_mut_ptr(),
        );
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = count_term_and_chain as *const () as usize;
        action.sa_flags = libc::SA_SIGINFO;
        libc::sigemptyset(&mut action.sa_mask);
        libc::sigaction(libc::SIGTERM, &action, std::ptr::null_mut());
    }
    println!("ready");
    wait_for_term_then_report();
}

#[test]
#[ignore = "a child process of the deployment tests"]
fn child_handles_sigterm_and_goes_on() {
    if !fdr_testkit::child::spawned() {
        return;
    }
    default_signals();
    // SAFETY: a plain handler that only counts.
    unsafe { libc::signal(libc::SIGTERM, count_term as *const () as libc::sighandler_t) };
    workers();
    println!("ready");
    wait_for_term_then_report();
    forever();
}

#[test]
fn a_program_s_own_sigterm_handler_still_decides() {
    for test in [
        "child_handles_sigterm_itself_and_exits",
        "child_chains_sigterm_after_fdr_and_exits",
    ] {
        let dir = scratch(test);
        let mut c = child(test, &options(&dir, "")).spawn().unwrap();
        wait_ready(&mut c);
        // SAFETY: signals the child this test started.
        unsafe { libc::kill(c.id() as i32, libc::SIGTERM) };
        let status = wait_within(&mut c, Duration::from_secs(60), test);
        assert!(status.success(), "{test}: {status:?} {}", stderr_of(&mut c));
        let log = read_log(&dir.join("app.fdr"));
        assert_eq!(log.reason.unwrap().reason, Reason::Exit, "{test}");
        assert!(boxes_in(&dir).is_empty(), "{test}");
    }
    // Handled, then killed later (a grace period that ran out): the death is the kill.
    let dir = scratch("handled-then-killed");
    let mut c = child("child_handles_sigterm_and_goes_on", &options(&dir, ""))
        .spawn()
        .unwrap();
    wait_ready(&mut c);
    // SAFETY: signals the child this test started.
    unsafe { libc::kill(c.id() as i32, libc::SIGTERM) };
    wait_ready(&mut c);
    // The program's handler ran on some thread; once fdr's handler around it returned, the box
    // notes the signal as handled (a kill that came first would find it still marked).
    let bx = box_of(&dir, c.id());
    let word = |bytes: &[u8], at: usize| i32::from_le_bytes(bytes[at..at + 4].try_into().unwrap());
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let bytes = std::fs::read(&bx).unwrap();
        if word(&bytes, crash_box::at::HANDLED_SIGNAL) == libc::SIGTERM
            && word(&bytes, crash_box::at::CRASH_SIGNAL) == 0
        {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the handled SIGTERM was never noted"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    c.kill().unwrap();
    c.wait().unwrap();
    let r = crash_box::recover(&std::fs::read(bx).unwrap()).unwrap();
    assert_eq!(r.info.signal, 0, "{}", r.info.death());
    assert!(
        r.info.death().starts_with("killed: no handler ran"),
        "{}",
        r.info.death()
    );
}

static FIXED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

extern "C" fn fix_fault(_: i32, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
    // SAFETY: the faulting page is the one the child made inaccessible; it becomes writable.
    unsafe {
        let page = ((*info).si_addr() as usize) & !4095;
        libc::mprotect(
            page as *mut libc::c_void,
            4096,
            libc::PROT_READ | libc::PROT_WRITE,
        );
    }
    FIXED.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
}

/// Installs the program's own fault handler (before fdr starts), starts the workers, then
/// faults once on a page the handler makes writable.
fn survive_a_segfault() {
    // A fault handler of the program's own (a JIT's, a GC's), there before fdr starts.
    // SAFETY: the action is zeroed then filled in; the handler only calls mprotect.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = fix_fault as *const () as usize;
        action.sa_flags = libc::SA_SIGINFO;
        libc::sigemptyset(&mut action.sa_mask);
        libc::sigaction(libc::SIGSEGV, &action, std::ptr::null_mut());
    }
    workers();
    // SAFETY: a fresh private page with no access, written once: the handler makes it writable.
    unsafe {
        let p = libc::mmap(
            std::ptr::null_mut(),
            4096,
            libc::PROT_NONE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        assert_ne!(p, libc::MAP_FAILED);
        p.cast::<u64>().write_volatile(7);
    }
    assert_eq!(FIXED.load(std::sync::atomic::Ordering::SeqCst), 1);
}

#[test]
#[ignore = "a child process of the deployment tests"]
fn child_survives_a_segfault_then_aborts() {
    if !fdr_testkit::child::spawned() {
        return;
    }
    survive_a_segfault();
    // Later, a death of another kind.
    let _c = CallGuard::enter(&CRASH);
    std::process::abort();
}

#[test]
#[ignore = "a child process of the deployment tests"]
fn child_survives_a_segfault_then_hangs() {
    if !fdr_testkit::child::spawned() {
        return;
    }
    survive_a_segfault();
    println!("ready");
    forever();
}

#[test]
fn a_segfault_the_program_survives_then_a_kill_is_named_the_kill() {
    let dir = scratch("survived-killed");
    let dead = killed("child_survives_a_segfault_then_hangs", &options(&dir, ""));
    let r = crash_box::recover(&std::fs::read(box_of(&dir, dead)).unwrap()).unwrap();
    assert_eq!(r.info.signal, 0, "{}", r.info.death());
    assert!(
        r.info.death().starts_with("killed: no handler ran"),
        "{}",
        r.info.death()
    );
    assert!(
        r.info
            .death()
            .ends_with("SIGSEGV came before and the program handled it"),
        "{}",
        r.info.death()
    );
}

#[test]
fn a_segfault_the_program_survives_does_not_name_a_later_death() {
    let dir = scratch("survived");
    let mut c = child("child_survives_a_segfault_then_aborts", &options(&dir, ""))
        .spawn()
        .unwrap();
    let status = wait_within(&mut c, Duration::from_secs(60), "the child");
    assert_eq!(
        status.signal(),
        Some(libc::SIGABRT),
        "{}",
        stderr_of(&mut c)
    );
    let r = crash_box::recover(&std::fs::read(box_of(&dir, c.id())).unwrap()).unwrap();
    assert_eq!(r.info.signal, libc::SIGABRT, "{}", r.info.death());
    let log = decode(&r.log[..]).unwrap();
    assert_eq!(
        log.calls(r.info.crash_tid).last(),
        Some(&(FnKind::Enter, CRASH.id()))
    );
}

#[test]
#[ignore = "a child process of the deployment tests"]
fn child_forks_a_worker_that_ends_with_underscore_exit() {
    if !fdr_testkit::child::spawned() {
        return;
    }
    drop(CallGuard::enter(&WORK));
    // SAFETY: the child only records and calls _exit.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0);
    if pid == 0 {
        {
            let _o = CallGuard::enter(&OUTER);
            for _ in 0..CALLS {
                drop(CallGuard::enter(&WORK));
            }
        }
        // SAFETY: ends the forked child without the parent's exit handlers, as forked workers
        // end.
        unsafe { libc::_exit(0) };
    }
    let mut status = 0;
    // SAFETY: waits for the child just forked.
    unsafe { libc::waitpid(pid, &mut status, 0) };
    assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
    println!("forked {pid} ready");
}

#[test]
#[cfg_attr(
    fdr_emulated,
    ignore = "qemu-user (7.2) aborts in a child forked from a process with threads once the child starts a thread"
)]
fn a_forked_child_that_ends_with_underscore_exit_is_not_called_killed() {
    let dir = scratch("fork-exit");
    let out = child(
        "child_forks_a_worker_that_ends_with_underscore_exit",
        &options(&dir, ""),
    )
    .output()
    .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let forked: u32 = stdout
        .split("forked ")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    // What the forked worker left is said as what it was: `fdr recover` names its end.
    let said = fdr(&["recover", dir.to_str().unwrap()]);
    let line = said
        .lines()
        .find(|l| l.contains(&format!("process {forked} ")))
        .unwrap_or_else(|| panic!("{said}"));
    assert!(!line.contains("killed"), "{line}");
    assert!(line.contains("_exit"), "{line}");
}

#[test]
#[ignore = "a child process of the deployment tests"]
fn child_works_then_execs_itself() {
    if !fdr_testkit::child::spawned() {
        return;
    }
    workers();
    use std::os::unix::process::CommandExt;
    // Not `child::command`: the program execs itself as it is, with its environment
    // (FDR_OPTIONS, and the mark of a spawned child, said again here).
    let e = Command::new(std::env::current_exe().unwrap())
        .args([
            "child_works_then_exits",
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(fdr_testkit::child::VAR, "1")
        .exec();
    panic!("exec: {e}");
}

#[test]
fn a_program_that_execs_itself_does_not_recover_its_own_window_as_a_crash() {
    let dir = scratch("exec");
    let out = child("child_works_then_execs_itself", &options(&dir, ""))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.contains("killed"), "{stderr}");
    let crashed: Vec<PathBuf> = logs(&dir)
        .into_iter()
        .filter(|(_, l)| l.reason.as_ref().is_some_and(|r| r.reason == Reason::Crash))
        .map(|(p, _)| p)
        .collect();
    // The window before the exec is kept, and says it ended at an exec.
    assert_eq!(crashed.len(), 1, "{stderr}");
    for p in &crashed {
        let info = fdr(&["info", p.to_str().unwrap()]);
        assert!(!info.contains("killed"), "{}: {info}", p.display());
        assert!(info.contains("exec"), "{}: {info}", p.display());
    }
    assert!(boxes_in(&dir).is_empty(), "{:?}", boxes_in(&dir));
}

#[test]
fn a_fifo_or_a_link_named_like_a_box_is_skipped_without_hanging() {
    let dir = scratch("hostile");
    let fifo = dir.join(named_like_a_box(4_000_001));
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: makes a FIFO at a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let link = dir.join(named_like_a_box(4_000_002));
    std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
    let mut c = child("child_works_then_exits", &options(&dir, ""))
        .spawn()
        .unwrap();
    let status = wait_within(&mut c, Duration::from_secs(30), "a start beside a FIFO");
    let stderr = stderr_of(&mut c);
    assert!(status.success(), "{stderr}");
    assert!(dir.join("app.fdr").exists(), "the child recorded: {stderr}");
    assert!(fifo.exists() && link.exists(), "{stderr}");
    assert_eq!(
        std::fs::read_link(&link).unwrap(),
        Path::new("/dev/zero"),
        "untouched"
    );
}

#[test]
#[ignore = "a child process of the deployment tests"]
fn child_works_then_reports_its_peak_memory() {
    if !fdr_testkit::child::spawned() {
        return;
    }
    for _ in 0..10 {
        drop(CallGuard::enter(&WORK));
    }
    // The final log waits for the recovery the start began.
    fdr_runtime::recorder()
        .unwrap()
        .finish_to(&mut std::io::sink())
        .unwrap();
    // This process's own peak (not the parent's, which a child's resource usage starts from).
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let peak = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .unwrap()
        .trim()
        .trim_end_matches(" kB")
        .to_string();
    println!("peak {peak} ready");
}

#[test]
fn a_large_sparse_box_is_recovered_in_memory_that_follows_what_was_written() {
    let dir = scratch("sparse");
    // 1.6 GB of buffers, a few of them written.
    let big = options(&dir, "buffer_size=65536 buffer_count=25000");
    let dead = killed("child_works_then_hangs", &big);
    let size = std::fs::metadata(box_of(&dir, dead)).unwrap().len();
    assert!(size > 1_600_000_000, "{size}");
    let mut next = child(
        "child_works_then_reports_its_peak_memory",
        &options(&dir, ""),
    )
    .spawn()
    .unwrap();
    let line = wait_ready(&mut next);
    let peak: u64 = line
        .split("peak ")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(wait_within(&mut next, Duration::from_secs(60), "the restart").success());
    // The restarted program's own peak resident memory, recovery included (reading the box
    // whole took twice its size).
    assert!(
        peak < 200 * 1024,
        "the restart's peak resident memory: {peak} KiB"
    );
    let recovered = recovered_of(&dir, dead);
    assert_eq!(recovered.len(), 1);
    check_workers(&recovered[0].1);
}

#[test]
fn leftovers_of_dead_processes_are_cleaned_at_start() {
    let dir = scratch("leftovers");
    let new_box = dir.join(format!(".fdr-{}-4000003.box.new", program()));
    std::fs::write(&new_box, vec![0u8; 8192]).unwrap();
    let tmp = dir.join("app.fdr.4000004.0.tmp");
    std::fs::write(&tmp, b"half a log").unwrap();
    let recovered_tmp = dir.join("app.fdr.4000005.recovered.tmp");
    std::fs::write(&recovered_tmp, b"half a recovered log").unwrap();
    // Not ours: another program's temporary file with a name of its own.
    let other = dir.join("notes.txt.tmp");
    std::fs::write(&other, b"keep").unwrap();
    let out = child("child_works_then_exits", &options(&dir, ""))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!new_box.exists());
    assert!(!tmp.exists());
    assert!(!recovered_tmp.exists());
    assert!(other.exists());
}

#[test]
#[ignore = "a child process of the deployment tests"]
fn child_fills_the_pool_then_hangs() {
    if !fdr_testkit::child::spawned() {
        return;
    }
    for _ in 0..20_000 {
        drop(CallGuard::enter(&WORK));
    }
    println!("ready");
    forever();
}

#[test]
fn a_pool_that_filled_says_how_much_it_dropped_as_of_the_death() {
    let dir = scratch("fill");
    let opts = format!(
        "threshold_us=0 mode=fill buffer_size=4096 buffer_count=4 out={} crash_dir={} cull=off",
        dir.join("app.fdr").display(),
        dir.display()
    );
    let dead = killed("child_fills_the_pool_then_hangs", &opts);
    let r = crash_box::recover(&std::fs::read(box_of(&dir, dead)).unwrap()).unwrap();
    let log = decode(&r.log[..]).unwrap();
    let kept: usize = log.tids().iter().map(|&t| log.calls(t).len()).sum();
    assert!(kept > 0 && kept < 40_000, "{kept}");
    assert_eq!(
        kept as u64 + log.run.records_dropped,
        40_000,
        "every record made is kept or counted as dropped"
    );
}

#[test]
#[ignore = "a child process of the deployment tests"]
fn child_starts_a_thread_then_hangs() {
    if !fdr_testkit::child::spawned() {
        return;
    }
    drop(CallGuard::enter(&WORK));
    std::thread::sleep(Duration::from_millis(200));
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("late-worker".into())
        .spawn(move || {
            let _h = CallGuard::enter(&HANG);
            tx.send(()).unwrap();
            forever();
        })
        .unwrap();
    rx.recv().unwrap();
    println!("ready");
    forever();
}

#[test]
fn a_thread_started_just_before_the_death_is_named() {
    let dir = scratch("late-thread");
    let dead = killed("child_starts_a_thread_then_hangs", &options(&dir, ""));
    let r = crash_box::recover(&std::fs::read(box_of(&dir, dead)).unwrap()).unwrap();
    let log = decode(&r.log[..]).unwrap();
    let hung: Vec<i32> = log
        .tids()
        .into_iter()
        .filter(|&t| log.calls(t) == [(FnKind::Enter, HANG.id())])
        .collect();
    assert_eq!(hung.len(), 1);
    let named = log.threads.iter().find(|t| t.tid == hung[0]);
    assert_eq!(
        named.map(|t| t.name.as_str()),
        Some("late-worker"),
        "{:?}",
        log.threads
    );
}

#[test]
fn an_out_path_too_long_for_a_box_is_an_error_at_start() {
    let dir = scratch("long-out");
    let mut deep = dir.clone();
    while deep.as_os_str().len() < 2100 {
        deep.push("a-directory-with-a-rather-long-name-to-make-the-path-long");
    }
    std::fs::create_dir_all(&deep).unwrap();
    let opts = format!(
        "out={} crash_dir={}",
        deep.join("app.fdr").display(),
        dir.display()
    );
    let out = child("child_works_then_exits", &opts).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("2048"), "{stderr}");
    assert!(stderr.contains("out"), "{stderr}");
    assert!(boxes_in(&dir).is_empty());
    assert!(!deep.join("app.fdr").exists());
}

#[test]
fn other_users_boxes_are_not_reported_at_start() {
    // SAFETY: geteuid only answers.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: giving a file to another user needs root");
        return;
    }
    let dir = scratch("other-user");
    let theirs = dir.join(named_like_a_box(4_000_006));
    std::fs::write(&theirs, b"FDR-BOX\x01 someone else's").unwrap();
    std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).unwrap();
    let out = child("child_works_then_exits", &options(&dir, ""))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(dir.join("app.fdr").exists(), "the child recorded: {stderr}");
    assert!(!stderr.contains("4000006"), "{stderr}");
    assert!(theirs.exists());
}

#[test]
fn a_removal_is_said_only_when_it_happened() {
    let dir = scratch("removal");
    // Nine that cannot be recovered, the oldest of them a directory (it cannot be removed as a
    // file is): more than the eight kept.
    for i in 0..9u64 {
        let p = dir.join(named_like_a_box(4_100_000 + i as i32));
        if i == 0 {
            std::fs::create_dir(&p).unwrap();
            std::fs::write(p.join("inside"), b"x").unwrap();
        } else {
            std::fs::write(&p, b"not a crash box").unwrap();
        }
        let when = std::time::UNIX_EPOCH + Duration::from_secs(1_700_000_000 + i);
        let f = std::fs::File::open(&p).unwrap();
        f.set_modified(when).unwrap();
    }
    let out = child("child_works_then_exits", &options(&dir, ""))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(dir.join("app.fdr").exists(), "the child recorded: {stderr}");
    assert!(!stderr.contains("removed the"), "{stderr}");
    assert_eq!(boxes_in(&dir).len(), 9, "{stderr}");
}

#[test]
#[ignore = "a child process of the deployment tests"]
fn child_records_while_its_recovery_is_held() {
    if !fdr_testkit::child::spawned() {
        return;
    }
    testing::hold_recovery(true);
    // The first call starts the recording, and its recovery of the box left beside it, which
    // waits: a first call that waited for it would never return.
    workers();
    drop(CallGuard::enter(&WORK));
    println!("recorded ready");
    testing::hold_recovery(false);
}

#[test]
fn the_first_call_of_a_restarted_program_does_not_wait_for_its_recovery() {
    let dir = scratch("not-waiting");
    let opts = options(&dir, "");
    let dead = killed("child_works_then_hangs", &opts);
    let mut c = child("child_records_while_its_recovery_is_held", &opts)
        .spawn()
        .unwrap();
    let status = wait_within(&mut c, Duration::from_secs(60), "a restart");
    let stderr = stderr_of(&mut c);
    assert!(status.success(), "{stderr}");
    // Recovered all the same, before the process went.
    let recovered = recovered_of(&dir, dead);
    assert_eq!(recovered.len(), 1, "{stderr}");
    check_workers(&recovered[0].1);
    let own = read_log(&dir.join("app.fdr"));
    check_workers(&own);
}

#[test]
#[ignore = "a child process of the deployment tests"]
fn child_works_then_daemonizes() {
    if !fdr_testkit::child::spawned() {
        return;
    }
    workers();
    // SAFETY: daemon forks; the parent half ends with `_exit`, the child goes on here.
    assert_eq!(unsafe { libc::daemon(1, 1) }, 0);
    drop(CallGuard::enter(&WORK));
    println!("daemon {} ready", std::process::id());
    // The test harness ran this on a thread of its own, now the daemon's only one: returning
    // would end the thread, and the process with it, without the exit handlers.
    std::process::exit(0);
}

#[test]
#[cfg_attr(
    fdr_emulated,
    ignore = "qemu-user (7.2) aborts in a child forked from a process with threads once the child starts a thread"
)]
fn the_parent_half_of_daemon_is_said_to_have_forked_then_ended() {
    let dir = scratch("daemon");
    let mut c = child("child_works_then_daemonizes", &options(&dir, ""))
        .spawn()
        .unwrap();
    let first = c.id() as i32;
    let line = wait_ready(&mut c);
    let status = wait_within(&mut c, Duration::from_secs(60), "daemon()'s parent half");
    assert!(status.success());
    let daemon: i32 = line
        .split("daemon ")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    // The daemon's own recording ends with its exit: its log, and no box of its own left.
    let own = dir.join(format!("app.{daemon}.fdr"));
    let deadline = Instant::now() + Duration::from_secs(60);
    while !own.exists() {
        assert!(Instant::now() < deadline, "the daemon wrote no log");
        std::thread::sleep(Duration::from_millis(10));
    }
    // The daemon writes its log before it waits for the recovery its start began: a recovery
    // that holds the first process's box still would make `fdr recover` leave it alone. The
    // daemon is not this test's child; it is gone once its process is (or is a zombie).
    let stat = format!("/proc/{daemon}/stat");
    while std::fs::read_to_string(&stat).is_ok_and(|s| {
        s.rsplit_once(") ")
            .is_some_and(|(_, rest)| !rest.starts_with('Z'))
    }) {
        assert!(Instant::now() < deadline, "the daemon did not end");
        std::thread::sleep(Duration::from_millis(10));
    }
    // The first process's box: recovered by the daemon's start (the same program) once the
    // first process was gone, or now.
    let said = fdr(&["recover", dir.to_str().unwrap()]);
    let recovered = recovered_of(&dir, first as u32);
    assert_eq!(recovered.len(), 1, "{said}");
    let info = fdr(&["info", recovered[0].0.to_str().unwrap()]);
    assert!(
        info.contains(&format!("right after forking process {daemon}")),
        "{info}"
    );
    assert!(!info.contains("killed"), "{info}");
}

#[test]
#[ignore = "a child process of the deployment tests"]
fn child_shuts_down_on_sigterm_with_tokio() {
    if !fdr_testkit::child::spawned() {
        return;
    }
    default_signals();
    // Recording starts first, as it does at a service's first instrumented call; tokio's
    // signal handling is set up after it, over fdr's handler, which it calls as the one before.
    workers();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        use tokio::signal::unix::{signal, SignalKind};
        let mut term = signal(SignalKind::terminate()).unwrap();
        let mut int = signal(SignalKind::interrupt()).unwrap();
        println!("ready");
        tokio::select! {
            _ = term.recv() => println!("terminate ready"),
            _ = int.recv() => println!("interrupt ready"),
        }
    });
    // A graceful shutdown: the exit writes the log.
}

#[test]
fn a_tokio_service_s_graceful_shutdown_on_sigterm_or_ctrl_c_still_runs() {
    for sig in [libc::SIGTERM, libc::SIGINT] {
        let dir = scratch(&format!("tokio-{sig}"));
        let mut c = child("child_shuts_down_on_sigterm_with_tokio", &options(&dir, ""))
            .spawn()
            .unwrap();
        wait_ready(&mut c);
        // SAFETY: signals the child this test started.
        unsafe { libc::kill(c.id() as i32, sig) };
        let status = wait_within(&mut c, Duration::from_secs(60), "the service");
        assert!(status.success(), "{sig}: {status:?} {}", stderr_of(&mut c));
        let log = read_log(&dir.join("app.fdr"));
        assert_eq!(log.reason.as_ref().unwrap().reason, Reason::Exit, "{sig}");
        check_workers(&log);
        assert!(boxes_in(&dir).is_empty(), "{sig}");
    }
}

#[test]
#[ignore = "a child process of the deployment tests"]
fn child_leaves_a_blocking_read_when_sigterm_interrupts_it() {
    if !fdr_testkit::child::spawned() {
        return;
    }
    default_signals();
    // The program's own handler, there before fdr starts, without SA_RESTART: SIGTERM makes
    // the blocking read below fail with EINTR, which is how the program leaves it to shut down.
    // SAFETY: the action is zeroed then filled in; the handler only counts.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = count_term as *const () as usize;
        libc::sigemptyset(&mut action.sa_mask);
        libc::sigaction(libc::SIGTERM, &action, std::ptr::null_mut());
    }
    workers();
    let mut fds = [0; 2];
    // SAFETY: a pipe whose write end nobody writes to.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    // SAFETY: gettid takes no arguments.
    println!("thread {} ready", unsafe {
        libc::syscall(libc::SYS_gettid)
    });
    let mut byte = 0u8;
    // SAFETY: reads one byte into a local from the pipe just made.
    let n = unsafe { libc::read(fds[0], (&mut byte as *mut u8).cast(), 1) };
    let interrupted = std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR);
    assert!(n == -1 && interrupted, "read: {n}");
    assert_eq!(TERMS.load(std::sync::atomic::Ordering::SeqCst), 1);
}

#[test]
fn a_program_s_handler_keeps_its_flags_so_sigterm_still_interrupts_a_blocking_call() {
    let dir = scratch("eintr");
    let mut c = child(
        "child_leaves_a_blocking_read_when_sigterm_interrupts_it",
        &options(&dir, ""),
    )
    .spawn()
    .unwrap();
    let line = wait_ready(&mut c);
    let tid: i64 = line
        .split("thread ")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    // Once it waits in the read (a signal that came before would find nothing to interrupt):
    // the kernel says where the thread sleeps (the same under qemu-user, whose thread makes the
    // host's read for the emulated one).
    let wchan = format!("/proc/{}/task/{tid}/wchan", c.id());
    let deadline = Instant::now() + Duration::from_secs(30);
    while !std::fs::read_to_string(&wchan).is_ok_and(|w| w.contains("pipe")) {
        assert!(Instant::now() < deadline, "the child never read");
        std::thread::sleep(Duration::from_millis(1));
    }
    // To the thread that reads (a signal sent to the process may go to any of its threads).
    // SAFETY: signals a thread of the child this test started.
    let sent = unsafe { libc::syscall(libc::SYS_tgkill, c.id() as i64, tid, libc::SIGTERM as i64) };
    assert_eq!(sent, 0);
    let status = wait_within(&mut c, Duration::from_secs(30), "a read SIGTERM interrupts");
    assert!(status.success(), "{status:?} {}", stderr_of(&mut c));
    assert_eq!(
        read_log(&dir.join("app.fdr")).reason.unwrap().reason,
        Reason::Exit
    );
}
