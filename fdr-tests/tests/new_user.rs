//! What a new user meets putting fdr in a web service, written the way such a service is
//! (handlers that take their arguments through extractors, `&str` keys, a trigger given by a
//! short name in `FDR_OPTIONS`): each case is what the README promises them.

use std::process::{Command, Stdio};
use std::time::Duration;

use fdr::instrument_fdr;
use fdr_format::args::ArgKind;
use fdr_format::Reason;
use fdr_testkit::logs::{decode, logs_in, read_log, scratch};
use fdr_testkit::recording::every_call;

/// Extractors as a web framework has them: another crate's types, which the handler
/// destructures in its parameters.
struct Path<T>(T);
struct Query<T>(T);

#[instrument_fdr(log_args(id))]
fn item(Path(id): Path<u64>) -> u64 {
    id * 2
}

#[instrument_fdr(log_args)]
fn search(Query((q, page)): Query<(i32, u8)>, Path(user): Path<&str>) -> usize {
    user.len() + usize::from(page) + q.unsigned_abs() as usize
}

#[instrument_fdr(log_args)]
async fn quote(Path(symbol): Path<String>, Query(n): Query<u32>) -> usize {
    symbol.len() + n as usize
}

mod svc {
    #[fdr::instrument_fdr]
    pub fn get_quote(ms: u64) -> u64 {
        std::thread::sleep(std::time::Duration::from_millis(ms));
        ms
    }
}

/// Runs a future to its end on this thread.
fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(f)
}

fn record(f: impl FnOnce()) -> Vec<u8> {
    let _one_recorder = fdr_runtime::testing::exclusive();
    fdr_runtime::testing::use_mock_clock(1_000_000_000);
    let rec = fdr::start(every_call()).expect("start");
    f();
    let mut log = Vec::new();
    rec.finish_to(&mut log).expect("finish");
    fdr_runtime::testing::use_real_clock();
    log
}

/// What the `fdr` command prints for `args`.
fn fdr(args: &[&str]) -> String {
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let mut out = Vec::new();
    fdr_cli::run(&args, &mut out).unwrap_or_else(|e| panic!("{e}"));
    String::from_utf8(out).unwrap()
}

#[test]
fn the_names_a_parameter_pattern_binds_are_logged_as_their_kinds_read() {
    let bytes = record(|| {
        item(Path(21));
        search(Query((-3, 2)), Path("alice"));
        search(Query((7, 0)), Path("a rather long user name"));
        block_on(quote(Path("ACME".to_string()), Query(5)));
    });
    let log = decode(&bytes[..]).unwrap();
    let f = |suffix: &str| {
        log.functions
            .iter()
            .find(|f| f.name.ends_with(suffix))
            .unwrap_or_else(|| panic!("{suffix}: {:?}", log.functions))
            .clone()
    };
    assert_eq!(f("::item").args, ["id"]);
    assert_eq!(f("::search").args, ["q", "page", "user"]);
    assert_eq!(
        f("::search").arg_kinds,
        [ArgKind::Signed, ArgKind::Unsigned, ArgKind::Text]
    );
    assert_eq!(f("::quote").args, ["symbol", "n"]);
    assert_eq!(f("::quote").arg_kinds, [ArgKind::Text, ArgKind::Unsigned]);
    // As the person on call reads them.
    let dir = scratch("new-user-args");
    let path = dir.join("args.fdr");
    std::fs::write(&path, &bytes).unwrap();
    let replay = fdr(&["replay", path.to_str().unwrap()]);
    for want in [
        "item(id=21)",
        "search(q=-3, page=2, user=\"alice\")",
        "search(q=7, page=0, user=\"a rathe…\" (23 bytes))",
        "quote(symbol=\"ACME\", n=5)",
    ] {
        assert!(replay.contains(want), "{want} in\n{replay}");
    }
}

fn child(test: &str, options: &str) -> Command {
    let mut c = fdr_testkit::child::command(test);
    c.env("FDR_OPTIONS", options)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

#[test]
#[ignore = "a child process of the new-user tests"]
fn child_serves_a_slow_quote() {
    if !fdr_testkit::child::spawned() {
        return;
    }
    svc::get_quote(1);
    svc::get_quote(30);
    // The background writer writes the trigger's snapshot; a process that ends at once may end
    // first (its final log holds the call all the same).
    std::thread::sleep(Duration::from_millis(300));
}

#[test]
#[ignore = "a child process of the new-user tests"]
fn child_calls_nothing_instrumented() {
    if !fdr_testkit::child::spawned() {
        return;
    }
    println!("started");
    std::thread::sleep(Duration::from_millis(50));
}

#[test]
fn a_trigger_given_by_its_short_name_fires_and_the_log_says_how_it_was_configured() {
    let dir = scratch("new-user-short-trigger");
    let out = child(
        "child_serves_a_slow_quote",
        &format!(
            "out={} trigger=get_quote:20ms crash_dir=off",
            dir.join("svc.fdr").display()
        ),
    )
    .output()
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    // One line says recording started, and where the log goes.
    assert_eq!(
        stderr.matches("fdr: recording (FDR_OPTIONS): ").count(),
        1,
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "the log goes to {}",
            dir.join("svc.fdr").display()
        )),
        "{stderr}"
    );
    assert!(!stderr.contains("matches no function"), "{stderr}");
    let logs = logs_in(&dir);
    let fired: Vec<_> = logs
        .iter()
        .map(|p| read_log(p))
        .filter(|l| l.reason.as_ref().unwrap().reason == Reason::SlowCall)
        .collect();
    assert_eq!(fired.len(), 1, "{logs:?} {stderr}");
    let options = fired[0].options.clone().unwrap();
    assert!(options.contains("trigger=get_quote:20ms"), "{options}");
    let info = fdr(&["info", dir.join("svc.fdr").to_str().unwrap()]);
    assert!(
        info.contains("options     mode=ring buffer_size=16384 buffer_count=512"),
        "{info}"
    );
    assert!(info.contains("trigger=get_quote:20ms"), "{info}");
}

#[test]
fn a_trigger_that_matches_no_function_says_so_at_start_with_the_closest_name() {
    let dir = scratch("new-user-typo");
    let out = child(
        "child_serves_a_slow_quote",
        &format!(
            "out={} trigger=svc::getquote:20ms crash_dir=off",
            dir.join("svc.fdr").display()
        ),
    )
    .output()
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let line = stderr
        .lines()
        .find(|l| l.contains("matches no function"))
        .unwrap_or_else(|| panic!("{stderr}"));
    assert!(
        line.starts_with(
            "fdr: trigger svc::getquote matches no function of this program; did you mean \
             new_user::svc::get_quote?"
        ),
        "{line}"
    );
    assert_eq!(stderr.matches("matches no function").count(), 1);
}

#[test]
fn a_bad_option_is_said_when_the_program_starts_not_at_its_first_call() {
    let out = child("child_calls_nothing_instrumented", "buffer_size=12")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    // No instrumented call ran, and the option is reported all the same, once.
    assert_eq!(
        stderr.matches("bad option `buffer_size`").count(),
        1,
        "{stderr}"
    );
    assert!(stderr.contains("recording stays off"), "{stderr}");
    assert!(!stderr.contains("fdr: recording (FDR_OPTIONS)"), "{stderr}");
}

#[test]
fn the_librarys_own_marker_is_in_a_log_only_once_it_ran() {
    let without = decode(
        &record(|| {
            item(Path(1));
        })[..],
    )
    .unwrap();
    assert!(
        !without
            .functions
            .iter()
            .any(|f| f.name == fdr_format::trace_context::MARKER),
        "{:?}",
        without.functions
    );
    let with = decode(
        &record(|| {
            let _t = fdr::join_trace("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
            item(Path(1));
        })[..],
    )
    .unwrap();
    assert!(with
        .functions
        .iter()
        .any(|f| f.name == fdr_format::trace_context::MARKER));
}
