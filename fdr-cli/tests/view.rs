//! `fdr view`: the page, in a real browser. Headless Chromium (Debian's `chromium`, which
//! `scripts/test` installs) loads each page from its file with the network off, driven over the
//! DevTools protocol by `tests/view_check.py`; the tests assert on what it reports: no script
//! error, no request but the page's own, the reason, the threads and the slowest call in the DOM,
//! a real mouse click on a call's slice that opens its tree, a screenshot that is not blank, and
//! names from the log shown as text, never run as HTML.
//!
//! Without chromium (or python3) the tests fail, saying what to install: they never skip.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::{awaits_log, fdr, tasks_log, temp_dir, triggered_log, write_log};
use fdr_format::{ClockSource, Mode, RunInfo};
use fdr_runtime::{testing, CallGuard};
use fdr_testkit::synth::LogBuilder;
use serde_json::Value;

/// Chromium, from PATH.
fn chromium() -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    for dir in std::env::split_paths(&path) {
        for name in ["chromium", "chromium-browser"] {
            let p = dir.join(name);
            if p.is_file() {
                return p;
            }
        }
    }
    panic!(
        "the fdr view tests need Chromium: no `chromium` or `chromium-browser` on PATH \
         (scripts/test installs Debian's: apt-get install chromium)"
    );
}

/// What the browser saw of `page`; with `click`, after hovering and clicking the widest slice
/// of that function.
fn look(page: &Path, click: Option<&str>) -> Value {
    look_with(page, click, &[])
}

/// [`look`], with more arguments for `view_check.py` (`--await SITE`).
fn look_with(page: &Path, click: Option<&str>, more: &[&str]) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/view_check.py");
    let mut cmd = Command::new("python3");
    cmd.arg(&script).arg(page).arg("--chromium").arg(chromium());
    if let Some(f) = click {
        cmd.arg("--click").arg(f);
    }
    cmd.args(more);
    let shot = page.with_extension("png");
    cmd.arg("--screenshot").arg(&shot);
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run python3 {}: {e}", script.display()));
    assert!(
        out.status.success(),
        "view_check.py failed on {}:\n{}",
        page.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "view_check.py printed no JSON ({e}):\n{}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

/// Writes the page of `log` to `dir/name` with `fdr view -o`; returns its path and text.
fn view(log: &str, dir: &Path, name: &str) -> (PathBuf, String) {
    let page = dir.join(name);
    let p = page.to_string_lossy().into_owned();
    fdr(&["view", log, "-o", &p]).unwrap_or_else(|e| panic!("fdr view {log}: {e}"));
    let html = std::fs::read_to_string(&page).unwrap();
    (page, html)
}

/// The page loads nothing: no `src=` or `href=` to a network address, anywhere in the file.
fn assert_self_contained(html: &str) {
    let lower = html.to_ascii_lowercase();
    for attr in ["src=", "href=", "url(", "@import"] {
        for (at, _) in lower.match_indices(attr) {
            let rest = lower[at + attr.len()..].trim_start_matches(['"', '\'', ' ']);
            assert!(
                !rest.starts_with("http:")
                    && !rest.starts_with("https:")
                    && !rest.starts_with("//"),
                "the page refers to the network: {}",
                &html[at..(at + 80).min(html.len())]
            );
        }
    }
    assert!(
        html.contains("default-src 'none'"),
        "the page forbids loads"
    );
}

/// What every page must show: it loaded, ran without error, asked for nothing but itself, and
/// drew something.
fn assert_loaded(r: &Value, page: &Path) {
    assert_eq!(r["errors"], serde_json::json!([]), "script errors: {r}");
    let url = format!("file://{}", page.display());
    let requests: Vec<&str> = r["requests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(requests, [url.as_str()], "requests: {r}");
    assert_eq!(r["dom"]["ready"], "1", "the page did not finish: {r}");
    assert_eq!(r["dom"]["scripts"], 2, "{r}");
    assert_eq!(r["dom"]["injected"], 0, "{r}");
    let colours = r["screenshot"]["colours"].as_u64().unwrap();
    assert!(
        colours > 10,
        "the screenshot is (nearly) blank: {colours} colours"
    );
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_triggered_log_shows_why_its_threads_and_the_slow_call_whose_tree_a_click_opens() {
    let dir = temp_dir("view-trigger");
    let log = write_log(&dir, "trig.fdr", &triggered_log());
    let (page, html) = view(&log, &dir, "trig.html");
    assert_self_contained(&html);
    let r = look(&page, Some("app::handle"));
    assert_loaded(&r, &page);
    let dom = &r["dom"];
    assert_eq!(
        dom["reason"],
        "slow call of app::handle on thread 11 (main), started at +200 ns, lasted 3.60 µs"
    );
    assert_eq!(
        strings(&dom["threads"]),
        ["thread 11 (main)", "thread 12 (pool)"]
    );
    let slowest = strings(&dom["slowest"]);
    assert_eq!(
        slowest[..2],
        [
            "4.00 µsapp::serve  on thread 11 (main) at +0 ns, self 400 ns",
            "3.60 µsapp::handle  on thread 11 (main) at +200 ns, self 1.00 µs"
        ]
    );
    assert_eq!(
        strings(&dom["functions"]),
        ["app::serve", "app::handle", "app::query"]
    );
    // Hovering the slice names the call, its duration and its self time.
    let hover = r["hover"].as_str().expect("a tooltip over app::handle");
    assert!(
        hover
            .starts_with("app::handleduration 3.60 µs, self 1.00 µsat +200 ns on thread 11 (main)"),
        "{hover}"
    );
    // A click opens its tree: the two queries it made.
    let click = &r["click"];
    assert_eq!(click["hidden"], false, "{r}");
    assert_eq!(
        click["title"],
        "app::handle on thread 11 (main) at +200 ns: 3.60 µs (one of the slowest calls)"
    );
    let tree = click["tree"].as_str().unwrap();
    assert!(tree.contains("app::handle"), "{tree}");
    assert!(tree.contains("2 × app::query"), "{tree}");
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn async_tasks_are_drawn_above_their_polls() {
    let dir = temp_dir("view-tasks");
    let log = write_log(&dir, "tasks.fdr", &tasks_log());
    let (page, html) = view(&log, &dir, "tasks.html");
    assert_self_contained(&html);
    let r = look(&page, Some("app::request"));
    assert_loaded(&r, &page);
    let text = r["dom"]["text"].as_str().unwrap();
    // Thread 11 created three tasks in the window; task 99 was created before it, and is drawn
    // on thread 12, which completed it.
    assert!(
        text.contains("thread 11 (main): 4 calls in detail, 3 tasks"),
        "{text}"
    );
    assert!(
        text.contains("thread 12 (worker): 3 calls in detail, 1 task\n"),
        "{text}"
    );
    let hover = r["hover"].as_str().expect("a tooltip over a poll");
    assert!(hover.starts_with("app::requestduration 100 ns"), "{hover}");
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn waits_are_drawn_on_their_tasks_with_where_and_how_long_in_the_hover() {
    let dir = temp_dir("view-awaits");
    let log = write_log(&dir, "awaits.fdr", &awaits_log());
    let (page, html) = view(&log, &dir, "awaits.html");
    assert_self_contained(&html);
    let r = look_with(&page, None, &["--await", "src/app.rs:24:13"]);
    assert_loaded(&r, &page);
    let text = r["dom"]["text"].as_str().unwrap();
    // Thread 11 drew tasks 7 and 8 with their three waits; thread 12 task 9 with its two.
    assert!(
        text.contains("thread 11 (worker): 5 calls in detail, 2 tasks, 3 waits"),
        "{text}"
    );
    assert!(
        text.contains("thread 12 (io): 1 calls in detail, 1 task, 2 waits"),
        "{text}"
    );
    assert!(
        text.contains("orange: woken, waiting to be polled"),
        "{text}"
    );
    let hover = r["await_hover"].as_str().expect("a tooltip over the wait");
    assert_eq!(
        hover,
        "awaited src/app.rs:24:13for 450 ns, woken 2 timesby the task of app::get_quote, from \
         +1.20 \u{b5}s on thread 11 (worker)"
    );
    std::fs::remove_dir_all(dir).ok();
}

/// Names that would run or inject if a page wrote them as HTML, or end its data's element.
const HOSTILE: [&str; 3] = [
    "<script>alert(1)</script>",
    "</script><img src=x onerror=\"window.__fdr_pwned=1\">",
    "a<b>bold</b>&amp;<!--",
];

fn hostile_log() -> Vec<u8> {
    let mut log = LogBuilder::new(1_000_000_000);
    log.run(RunInfo {
        clock: ClockSource::Injected,
        ticks_per_second: 1_000_000_000,
        mode: Mode::Ring,
        pid: 1,
        program: "<svg onload=\"window.__fdr_pwned=1\">".to_string(),
        ..RunInfo::default()
    });
    for (i, name) in HOSTILE.iter().enumerate() {
        log.function(i as u32 + 1, name, &[]);
    }
    log.thread(7, "</script><b>thread</b>");
    let mut b = log.block(7, 0, 1000);
    b.enter(1, 1000);
    b.enter(2, 1100);
    b.enter(3, 1200);
    b.exit(3, 1300);
    b.exit(2, 1500);
    b.exit(1, 2000);
    b.finish();
    log.finish()
}

#[test]
fn hostile_names_are_shown_as_text() {
    let dir = temp_dir("view-hostile");
    let log = write_log(&dir, "hostile.fdr", &hostile_log());
    let (page, html) = view(&log, &dir, "hostile.html");
    assert_self_contained(&html);
    // The data cannot end its element: no name appears raw in the file.
    for name in HOSTILE {
        assert!(!html.contains(name), "{name} is in the page as it is");
    }
    assert!(!html.contains("<b>thread"));
    let r = look(&page, Some(HOSTILE[1]));
    assert_loaded(&r, &page);
    let text = r["dom"]["text"].as_str().unwrap();
    for name in HOSTILE {
        assert!(text.contains(name), "{name} is not shown as text");
    }
    assert_eq!(
        strings(&r["dom"]["threads"]),
        ["thread 7 (</script><b>thread</b>)"]
    );
    let title = r["click"]["title"].as_str().unwrap();
    assert!(title.starts_with(HOSTILE[1]), "{title}");
    std::fs::remove_dir_all(dir).ok();
}

fdr_testkit::desc_with_trigger!(VIEW_SLOW, "view::slow", 20_000_000);
fdr_testkit::desc!(VIEW_INSIDE, "view::inside");
fdr_testkit::desc!(VIEW_BESIDE, "view::beside");

/// A recording through the runtime, on the real clock: a call of `view::slow` (a 20 ms trigger)
/// that lasts 50 ms and calls `view::inside`, while two threads named `beside-1` and `beside-2`
/// call `view::beside` every 100 µs. Returns the snapshot the trigger wrote.
fn record_a_trigger(dir: &Path) -> PathBuf {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let _turn = testing::exclusive();
    let rec =
        fdr_runtime::start(fdr_testkit::recording::every_call().out(dir.join("app.fdr"))).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let beside: Vec<_> = (1..=2)
        .map(|k| {
            let stop = Arc::clone(&stop);
            std::thread::Builder::new()
                .name(format!("beside-{k}"))
                .spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        drop(CallGuard::enter(&VIEW_BESIDE));
                        std::thread::sleep(Duration::from_micros(100));
                    }
                })
                .unwrap()
        })
        .collect();
    std::thread::sleep(Duration::from_millis(5));
    {
        let _slow = CallGuard::enter(&VIEW_SLOW);
        drop(CallGuard::enter(&VIEW_INSIDE));
        std::thread::sleep(Duration::from_millis(50));
    }
    let files = fdr_testkit::logs::wait_for_logs(dir, 1);
    stop.store(true, Ordering::Relaxed);
    for t in beside {
        t.join().unwrap();
    }
    rec.finish_to(&mut std::io::sink()).unwrap();
    assert_eq!(files.len(), 1, "one snapshot: {files:?}");
    files[0].clone()
}

#[test]
fn a_recorded_trigger_is_found_on_its_thread_and_its_tree_opened() {
    let dir = temp_dir("view-recorded");
    let snapshot = record_a_trigger(&dir);
    let log = snapshot.to_string_lossy().into_owned();
    // Without -o, the page goes beside the log and its path is printed.
    let printed = fdr(&["view", &log]).unwrap();
    let page = PathBuf::from(format!("{log}.html"));
    assert_eq!(printed, format!("{}\n", page.display()));
    let html = std::fs::read_to_string(&page).unwrap();
    assert_self_contained(&html);
    let r = look(&page, Some("view::slow"));
    assert_loaded(&r, &page);
    let dom = &r["dom"];
    let reason = dom["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("slow call of view::slow on thread "),
        "{reason}"
    );
    assert!(reason.contains("(limit 20.0 ms)"), "{reason}");
    let threads = strings(&dom["threads"]);
    for name in ["beside-1", "beside-2"] {
        assert!(
            threads.iter().any(|t| t.ends_with(&format!("({name})"))),
            "{name} in {threads:?}"
        );
    }
    // The slowest call is the one that fired, with the duration `fdr calls` gives it.
    let calls = fdr(&["calls", "--top", "1", &log]).unwrap();
    let slowest = strings(&dom["slowest"]);
    assert!(slowest[0].contains("view::slow"), "{slowest:?}");
    let duration = slowest[0].split("view::slow").next().unwrap();
    assert!(
        calls.contains(duration) && calls.contains("view::slow"),
        "{duration:?} is not what fdr calls says:\n{calls}"
    );
    let click = &r["click"];
    assert_eq!(click["hidden"], false, "{r}");
    assert!(
        click["title"]
            .as_str()
            .unwrap()
            .starts_with("view::slow on thread "),
        "{click}"
    );
    assert!(
        click["tree"].as_str().unwrap().contains("view::inside"),
        "{click}"
    );
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn the_page_goes_beside_the_log_never_over_it() {
    let dir = temp_dir("view-paths");
    let log = write_log(&dir, "t.fdr", &triggered_log());
    let e = fdr(&["view", &log, "-o", &log]).unwrap_err();
    assert!(e.to_string().contains("would destroy the log"), "{e}");
    assert_eq!(std::fs::read(&log).unwrap(), triggered_log());
    let e = fdr(&["view", "-"]).unwrap_err();
    assert!(e.to_string().contains("give one with -o OUT.html"), "{e}");
    let help = fdr(&["view", "--help"]).unwrap();
    assert!(
        help.contains("At most 200000 calls are drawn in detail"),
        "{help}"
    );
    std::fs::remove_dir_all(dir).ok();
}
