//! `FDR_OPTIONS` turns recording on with no code change: from the first instrumented call, with
//! a snapshot written on panic and the whole log at exit. Each case runs this test binary again
//! as a child process with the variable set.

use std::path::{Path, PathBuf};
use std::process::Output;

use fdr_format::FnKind;
use fdr_runtime::CallGuard;
use fdr_testkit::desc;
use fdr_testkit::logs::{read_log, DecodedLog};
use fdr_testkit::recording::every_call;

desc!(WORK, "auto::work");
desc!(DOOMED, "auto::doomed");

fn run_child(test: &str, options: &str) -> Output {
    fdr_testkit::child::command(test)
        .env("FDR_OPTIONS", options)
        .output()
        .unwrap()
}

fn scratch(name: &str) -> PathBuf {
    fdr_testkit::logs::scratch(&format!("autostart-{name}"))
}

fn read(path: &Path) -> DecodedLog {
    read_log(path)
}

#[test]
#[ignore = "a child process of fdr_options_records_with_no_code_change"]
fn child_without_start() {
    if !fdr_testkit::child::spawned() {
        return;
    }
    drop(CallGuard::enter(&WORK));
    let caught = std::panic::catch_unwind(|| {
        let _g = CallGuard::enter(&DOOMED);
        panic!("deliberate");
    });
    assert!(caught.is_err());
    // The panic hook has just written a snapshot of its own (auto-1.fdr), beside the log that
    // exit writes.
}

#[test]
fn fdr_options_records_with_no_code_change() {
    let dir = scratch("ok");
    let out = dir.join("auto.fdr");
    let child = run_child(
        "child_without_start",
        &format!(
            "buffer_count=8 mode=fill threshold_us=0 out={}",
            out.display()
        ),
    );
    let stderr = String::from_utf8_lossy(&child.stderr);
    assert!(child.status.success(), "child failed: {stderr}");
    assert!(
        stderr.contains(&format!("fdr: wrote {}", out.display())),
        "{stderr}"
    );

    let (w, d) = (WORK.id(), DOOMED.id());
    assert!(
        stderr.contains(&format!("fdr: wrote {}", dir.join("auto-1.fdr").display())),
        "{stderr}"
    );
    let at_panic = read(&dir.join("auto-1.fdr"));
    assert_eq!(
        at_panic.reason.as_ref().unwrap().reason,
        fdr_format::Reason::Panic
    );
    assert!(at_panic.run.snapshot);
    let tid = at_panic.tids()[0];
    // When the panic hook ran, the doomed call had not unwound yet.
    assert_eq!(
        at_panic.calls(tid),
        vec![(FnKind::Enter, w), (FnKind::Exit, w), (FnKind::Enter, d)]
    );
    let last = read(&out);
    assert!(!last.run.snapshot);
    assert_eq!(
        last.calls(tid),
        vec![
            (FnKind::Enter, w),
            (FnKind::Exit, w),
            (FnKind::Enter, d),
            (FnKind::Exit, d)
        ],
        "the exit recorded while unwinding is in the log written at exit"
    );
    assert_eq!(last.run.mode, fdr_format::Mode::Fill);
    std::fs::remove_dir_all(dir).ok();
}

#[test]
#[ignore = "a child process of a_bad_fdr_options_value_names_the_key"]
fn child_with_bad_options() {
    if !fdr_testkit::child::spawned() {
        return;
    }
    drop(CallGuard::enter(&WORK));
    assert!(fdr_runtime::recorder().is_none());
}

#[test]
fn a_bad_fdr_options_value_names_the_key() {
    let dir = scratch("bad");
    let out = dir.join("never.fdr");
    let child = run_child(
        "child_with_bad_options",
        &format!("buffer_size=lots out={}", out.display()),
    );
    let stderr = String::from_utf8_lossy(&child.stderr);
    assert!(child.status.success(), "{stderr}");
    assert!(
        stderr.contains("bad option `buffer_size`: expected a number of bytes, found `lots`"),
        "{stderr}"
    );
    assert!(stderr.contains("recording stays off"), "{stderr}");
    assert!(!out.exists());
    std::fs::remove_dir_all(dir).ok();
}

#[test]
#[ignore = "a child process of the_first_call_that_finds_nothing_recording_records_no_exit"]
fn child_starting_inside_its_first_call() {
    if !fdr_testkit::child::spawned() {
        return;
    }
    // The process's first hook: it reads FDR_OPTIONS (unset), which starts nothing.
    let main = CallGuard::enter(&WORK);
    let rec = fdr_runtime::start(every_call()).expect("start");
    drop(CallGuard::enter(&DOOMED));
    drop(main);
    let out = std::env::var("FDR_TEST_OUT").unwrap();
    rec.finish_to(&mut std::fs::File::create(out).unwrap())
        .expect("finish");
}

/// Like `main` annotated and starting the recorder itself: the first call of the process finds
/// nothing recording (after reading `FDR_OPTIONS`), so its exit is not recorded either, though a
/// recorder runs by then.
#[test]
fn the_first_call_that_finds_nothing_recording_records_no_exit() {
    let dir = scratch("first");
    let out = dir.join("first.fdr");
    let child = fdr_testkit::child::command("child_starting_inside_its_first_call")
        .env_remove("FDR_OPTIONS")
        .env("FDR_TEST_OUT", &out)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&child.stderr);
    assert!(child.status.success(), "child failed: {stderr}");
    let log = read(&out);
    let d = DOOMED.id();
    assert_eq!(
        log.calls(log.tids()[0]),
        vec![(FnKind::Enter, d), (FnKind::Exit, d)]
    );
    std::fs::remove_dir_all(dir).ok();
}

#[test]
#[ignore = "a child process of fdr_options_mode_profile_writes_a_profile_at_exit_and_on_panic"]
fn child_profiling() {
    if !fdr_testkit::child::spawned() {
        return;
    }
    // The process's first hook reads FDR_OPTIONS: that call is profiled too.
    let outer = CallGuard::enter(&WORK);
    for _ in 0..3 {
        drop(CallGuard::enter(&DOOMED));
    }
    drop(outer);
    let caught = std::panic::catch_unwind(|| {
        let _g = CallGuard::enter(&WORK);
        panic!("deliberate");
    });
    assert!(caught.is_err());
}

#[test]
fn fdr_options_mode_profile_writes_a_profile_at_exit_and_on_panic() {
    use fdr_format::profile::Profile;
    let dir = scratch("profile");
    let out = dir.join("auto.fdrprof");
    let child = run_child(
        "child_profiling",
        &format!("mode=profile out={}", out.display()),
    );
    let stderr = String::from_utf8_lossy(&child.stderr);
    assert!(child.status.success(), "child failed: {stderr}");
    let read = |p: &Path| {
        let bytes = std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}; {stderr}", p.display()));
        Profile::decode(&bytes).unwrap()
    };
    // (function, parent's function, count, open) of every node.
    let rows = |p: &Profile| {
        let t = &p.trees[0];
        t.nodes
            .iter()
            .map(|n| {
                let parent = n.parent.map(|i| t.nodes[i as usize].function);
                (n.function, parent, n.count, n.open)
            })
            .collect::<Vec<_>>()
    };
    let (w, d) = (WORK.id(), DOOMED.id());
    // At the panic, the second call of WORK had not unwound: it is open.
    let at_panic = read(&dir.join("auto-1.fdrprof"));
    assert_eq!(rows(&at_panic), [(w, None, 1, 1), (d, Some(w), 3, 0)]);
    let at_exit = read(&out);
    assert_eq!(rows(&at_exit), [(w, None, 2, 0), (d, Some(w), 3, 0)]);
    assert_eq!(at_exit.function_name(w), Some("auto::work"));
    std::fs::remove_dir_all(dir).ok();
}

/// With `otlp_endpoint`, the panic's window goes to the collector (instead of a file with
/// `otlp_only`) before the process exits; the log at exit is still written.
#[test]
fn fdr_options_sends_the_panic_window_to_the_collector() {
    use fdr_otlp::proto::{any_value::Value, ExportTraceServiceRequest};
    use prost::Message;
    let dir = scratch("otlp");
    let out = dir.join("auto.fdr");
    let c = fdr_testkit::collector::OtlpCollector::start(&[]);
    let child = run_child(
        "child_without_start",
        &format!(
            "buffer_count=8 threshold_us=0 otlp_endpoint={} otlp_only=on service_name=auto-test \
             out={}",
            c.url,
            out.display()
        ),
    );
    let stderr = String::from_utf8_lossy(&child.stderr);
    assert!(child.status.success(), "child failed: {stderr}");
    assert!(
        stderr.contains(&format!("fdr: queued a window for {}", c.url)),
        "{stderr}"
    );
    // Sent instead of written; the exit log is there.
    assert!(!dir.join("auto-1.fdr").exists(), "{stderr}");
    read(&out);
    let bodies = c.accepted();
    assert_eq!(bodies.len(), 1, "{stderr}");
    let r = ExportTraceServiceRequest::decode(&bodies[0][..]).unwrap();
    let spans: Vec<_> = r.resource_spans[0].scope_spans[0].spans.iter().collect();
    let attr = |s: &fdr_otlp::proto::Span, k: &str| {
        s.attributes
            .iter()
            .find(|a| a.key == k)
            .and_then(|a| a.value.clone())
            .and_then(|v| v.value)
    };
    let doomed = spans
        .iter()
        .find(|s| s.name == "auto::doomed")
        .expect("the call that panicked");
    assert_eq!(attr(doomed, "fdr.open"), Some(Value::BoolValue(true)));
    assert_eq!(
        attr(doomed, "fdr.reason"),
        Some(Value::StringValue("panic".into()))
    );
    let work: Vec<_> = spans.iter().filter(|s| s.name == "auto::work").collect();
    assert_eq!(work.len(), 1);
    assert!(attr(work[0], "fdr.open").is_none());
    let resource = r.resource_spans[0].resource.as_ref().unwrap();
    let service = resource
        .attributes
        .iter()
        .find(|a| a.key == "service.name")
        .and_then(|a| a.value.clone())
        .and_then(|v| v.value);
    assert_eq!(service, Some(Value::StringValue("auto-test".into())));
    std::fs::remove_dir_all(dir).ok();
}

#[test]
#[ignore = "a child process of a_collector_that_is_down_is_said_once_on_stderr"]
fn child_snapshots_for_a_dead_collector() {
    if !fdr_testkit::child::spawned() {
        return;
    }
    drop(CallGuard::enter(&WORK));
    let rec = fdr_runtime::recorder().expect("FDR_OPTIONS started a recorder");
    for _ in 0..3 {
        rec.snapshot(&mut std::io::sink()).unwrap();
    }
    // Each window is tried once (no retry budget) and dropped; exit waits for them at most
    // OTLP_FLUSH.
    let until = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while rec.stats().windows_dropped < 3 && std::time::Instant::now() < until {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    println!("dropped {}", rec.stats().windows_dropped);
}

/// A collector that is not there costs the windows, counted, and one line on stderr.
#[test]
fn a_collector_that_is_down_is_said_once_on_stderr() {
    let dir = scratch("otlp-down");
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let child = run_child(
        "child_snapshots_for_a_dead_collector",
        &format!(
            "buffer_count=8 threshold_us=0 otlp_endpoint=http://127.0.0.1:{port} \
             otlp_retry_for=0s otlp_timeout=1s out={}",
            dir.join("down.fdr").display()
        ),
    );
    let stderr = String::from_utf8_lossy(&child.stderr);
    let stdout = String::from_utf8_lossy(&child.stdout);
    assert!(child.status.success(), "child failed: {stderr}");
    assert!(stdout.contains("dropped 3"), "{stdout}");
    let said: Vec<&str> = stderr.lines().filter(|l| l.contains("dropped")).collect();
    assert_eq!(said.len(), 1, "{stderr}");
    assert!(
        said[0].contains(&format!("http://127.0.0.1:{port}")) && said[0].contains("fdr::stats()"),
        "{stderr}"
    );
    std::fs::remove_dir_all(dir).ok();
}
