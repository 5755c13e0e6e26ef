//! The command never destroys its input or an existing output, never panics on its arguments,
//! never sends a log's names to the terminal raw, and reports what a log lost or got wrong:
//! outputs written over the input, failed conversions, non-UTF-8 paths, hostile names, threads
//! that dropped everything, time running backwards.

mod common;

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use common::child::run_fdr;
use common::xml::check_well_formed;
use common::{basic_log, basic_log_with_gap, fdr, temp_dir, write_log};
use fdr_format::reader::{Reader, Record};
use fdr_format::{Extension, RunInfo, ThreadInfo};
use fdr_testkit::synth::LogBuilder;

/// The files in `dir`, sorted.
fn listing(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

const WRITERS: [&[&str]; 5] = [
    &["convert", "--format", "chrome"],
    &["convert", "--format", "fxt"],
    &["flame"],
    &["flame", "--chart"],
    &["view"],
];

#[test]
fn convert_and_flame_refuse_to_write_over_their_input_however_it_is_spelled() {
    let dir = temp_dir("own-input");
    let log = write_log(&dir, "a.fdr", &basic_log_with_gap(0));
    let original = std::fs::read(&log).unwrap();
    std::fs::create_dir(dir.join("sub")).unwrap();
    std::fs::hard_link(&log, dir.join("link.fdr")).unwrap();
    std::os::unix::fs::symlink(&log, dir.join("sym.fdr")).unwrap();
    let spellings = [
        log.clone(),
        format!("{}/sub/../a.fdr", dir.display()),
        format!("{}/./a.fdr", dir.display()),
        dir.join("link.fdr").to_string_lossy().into_owned(),
        dir.join("sym.fdr").to_string_lossy().into_owned(),
    ];
    let before = listing(&dir);
    for out in &spellings {
        for cmd in WRITERS {
            let mut args = cmd.to_vec();
            args.extend([log.as_str(), "-o", out.as_str()]);
            let e = fdr(&args).expect_err("writing over the input must be refused");
            assert_eq!(
                e.to_string(),
                format!(
                    "fdr: {out}: the output is the input log {log}; \
                     writing it would destroy the log (choose another output path)"
                ),
                "{args:?}"
            );
            assert_eq!(e.exit_code(), 2);
            assert_eq!(
                std::fs::read(&log).unwrap(),
                original,
                "{args:?} changed the input"
            );
        }
    }
    // The same through the binary, and the input passed as the hard link.
    let link = dir.join("link.fdr");
    let r = run_fdr(
        &[
            OsStr::new("convert"),
            link.as_os_str(),
            OsStr::new("--format"),
            OsStr::new("chrome"),
            OsStr::new("-o"),
            OsStr::new(&log),
        ],
        &dir,
    );
    assert_eq!(r.code, Some(2), "{r:?}");
    assert!(r.stderr.contains("the output is the input log"), "{r:?}");
    assert_eq!(std::fs::read(&log).unwrap(), original);
    // No temporary files left behind.
    assert_eq!(listing(&dir), before);
}

#[test]
fn a_failed_convert_leaves_an_existing_output_untouched_and_no_temporary_file() {
    let dir = temp_dir("failed-output");
    let mut cut = basic_log();
    cut.truncate(cut.len() - 4);
    let bad = write_log(&dir, "cut.fdr", &cut);
    let missing = dir.join("missing.fdr").to_string_lossy().into_owned();
    let out = dir.join("out.file");
    for cmd in WRITERS {
        for input in [&bad, &missing] {
            std::fs::write(&out, b"precious").unwrap();
            let before = listing(&dir);
            let mut args = cmd.to_vec();
            args.extend([input.as_str(), "-o", out.to_str().unwrap()]);
            let e = fdr(&args).expect_err("a cut log cannot be converted");
            assert!(e.to_string().starts_with(&format!("fdr: {input}: ")), "{e}");
            assert_eq!(std::fs::read(&out).unwrap(), b"precious", "{args:?}");
            assert_eq!(listing(&dir), before, "{args:?} left files behind");
        }
    }
    // A good log replaces the output, and only the output appears.
    let good = write_log(&dir, "good.fdr", &basic_log_with_gap(0));
    for cmd in WRITERS {
        std::fs::write(&out, b"precious").unwrap();
        let before = listing(&dir);
        let mut args = cmd.to_vec();
        args.extend([good.as_str(), "-o", out.to_str().unwrap()]);
        fdr(&args).unwrap();
        let written = std::fs::read(&out).unwrap();
        assert!(written.len() > 100 && written != b"precious", "{args:?}");
        assert_eq!(listing(&dir), before);
    }
    // A fresh output in another directory, written through a symlink's target.
    std::fs::create_dir(dir.join("d")).unwrap();
    let target = dir.join("d/target.json");
    std::fs::write(&target, b"old").unwrap();
    std::os::unix::fs::symlink(&target, dir.join("to-target.json")).unwrap();
    fdr(&[
        "convert",
        &good,
        "--format",
        "chrome",
        "-o",
        dir.join("to-target.json").to_str().unwrap(),
    ])
    .unwrap();
    assert!(std::fs::symlink_metadata(dir.join("to-target.json"))
        .unwrap()
        .file_type()
        .is_symlink());
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&target).unwrap()).unwrap();
    assert!(json["traceEvents"].is_array());
    assert_eq!(listing(&dir.join("d")), ["target.json"]);
}

#[test]
fn a_non_utf8_path_is_an_error_or_a_log_never_a_panic() {
    let dir = temp_dir("non-utf8");
    let name = OsStr::from_bytes(b"\xff\xfe.fdr");
    let path = dir.join(name);
    let r = run_fdr(&[OsStr::new("info"), path.as_os_str()], &dir);
    assert_eq!(r.code, Some(1), "{r:?}");
    let shown = path.to_string_lossy();
    assert!(
        r.stderr
            .starts_with(&format!("fdr: {shown}: cannot open the log: ")),
        "{r:?}"
    );
    assert!(!r.stderr.contains("panicked"), "{r:?}");
    // A log by that name is read under its own name, not a lossy copy of it.
    std::fs::write(&path, basic_log()).unwrap();
    for cmd in ["info", "account", "stack", "dump"] {
        let r = run_fdr(&[OsStr::new(cmd), path.as_os_str()], &dir);
        r.assert_ok(cmd);
    }
    let out = dir.join(OsStr::from_bytes(b"\xfe.json"));
    let r = run_fdr(
        &[
            OsStr::new("convert"),
            path.as_os_str(),
            OsStr::new("--format"),
            OsStr::new("chrome"),
            OsStr::new("-o"),
            out.as_os_str(),
        ],
        &dir,
    );
    r.assert_ok("convert");
    assert!(std::fs::metadata(&out).unwrap().len() > 100);
    // A non-UTF-8 value where text is expected is a usage error.
    let r = run_fdr(
        &[
            OsStr::new("account"),
            path.as_os_str(),
            OsStr::new("--sort"),
            OsStr::from_bytes(b"\xff"),
        ],
        &dir,
    );
    assert_eq!(r.code, Some(2), "{r:?}");
    assert!(!r.stderr.contains("panicked"), "{r:?}");
}

/// A function name with a terminal title sequence, a bell, a newline that would forge a row,
/// XML's special characters, a C1 control (CSI) and a right-to-left override.
const EVIL_FN: &str = "evil\u{1b}]0;pwned\u{7}\nforged 1 2 3 row <b>&amp;\"q\"'s\u{9b}31m\u{202e}x";
/// The same as fdr shows it.
const EVIL_FN_SHOWN: &str =
    "evil\\x1b]0;pwned\\x07\\nforged 1 2 3 row <b>&amp;\"q\"'s\\u{9b}31m\\u{202e}x";
const EVIL_THREAD: &str = "t\u{1b}[31mred\r\nrow";
const EVIL_THREAD_SHOWN: &str = "t\\x1b[31mred\\r\\nrow";
const EVIL_PROGRAM: &str = "prog\u{1b}]2;title\u{7}";
const EVIL_PROGRAM_SHOWN: &str = "prog\\x1b]2;title\\x07";

fn evil_log() -> Vec<u8> {
    let mut log = LogBuilder::new(1_000_000_000);
    log.run(RunInfo {
        ticks_per_second: 1_000_000_000,
        pid: 1,
        program: EVIL_PROGRAM.into(),
        ..RunInfo::default()
    });
    log.function(1, EVIL_FN, &[]);
    log.function(2, "plain::callee", &[]);
    log.thread(11, EVIL_THREAD);
    let mut b = log.block(11, 0, 1000);
    b.enter(1, 1000);
    b.enter(2, 1100);
    b.exit(2, 1200);
    b.exit(1, 2000);
    b.finish();
    log.finish()
}

/// Characters a terminal acts on: C0 and C1 controls, DEL, and bidirectional overrides.
fn dangerous(c: char) -> bool {
    (c.is_control() && c != '\n') || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

fn assert_safe(what: &str, s: &str) {
    if let Some(c) = s.chars().find(|&c| dangerous(c)) {
        panic!("{what}: raw U+{:04X} in\n{s}", c as u32);
    }
}

#[test]
fn names_from_a_log_are_escaped_in_every_text_output_and_the_svg_is_valid_xml() {
    let dir = temp_dir("hostile-names");
    let log = write_log(&dir, "evil.fdr", &evil_log());
    let l = log.as_str();

    let info = fdr(&["info", l]).unwrap();
    assert_safe("info", &info);
    assert!(
        info.contains(&format!("program     {EVIL_PROGRAM_SHOWN}, pid 1\n")),
        "{info}"
    );
    assert!(info.contains(&format!("  {EVIL_THREAD_SHOWN}\n")), "{info}");

    let text = fdr(&["account", "--sort", "id", l]).unwrap();
    assert_safe("account", &text);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines.len(),
        3,
        "header and two rows, no forged row:\n{text}"
    );
    assert!(lines[1].ends_with(&format!("  {EVIL_FN_SHOWN}")), "{text}");

    let csv = fdr(&["account", "--format", "csv", "--sort", "id", l]).unwrap();
    assert_safe("csv", &csv);
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 3, "{csv}");
    let quoted = EVIL_FN_SHOWN.replace('"', "\"\"");
    assert_eq!(
        lines[1],
        format!("\"{quoted}\",1,1,1000,1000,1000,1000,1000,1000,900,src/lib.rs,1,0,0")
    );

    let json = fdr(&["account", "--format", "json", "--sort", "id", l]).unwrap();
    assert_safe("json", &json);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v[0]["function"], EVIL_FN, "JSON keeps the name exactly");

    let stack = fdr(&["stack", l]).unwrap();
    assert_safe("stack", &stack);
    assert_eq!(stack.lines().count(), 3, "{stack}");
    assert!(stack.contains(&format!("  {EVIL_FN_SHOWN}\n")), "{stack}");

    let folded = fdr(&["stack", "--format", "folded", l]).unwrap();
    assert_safe("folded", &folded);
    let shown = EVIL_FN_SHOWN.replace(';', ":");
    assert_eq!(
        folded,
        format!("{shown} 900\n{shown};plain::callee 100\n"),
        "one line per path"
    );

    let dump = fdr(&["dump", "--verify", l]).unwrap();
    assert_safe("dump", &dump);
    assert!(
        dump.contains(&format!("id=1 delta=0 tsc=1000  {EVIL_FN_SHOWN}\n")),
        "{dump}"
    );

    let chrome = fdr(&["convert", l, "--format", "chrome", "-o", "-"]).unwrap();
    assert_safe("chrome", &chrome);
    let v: serde_json::Value = serde_json::from_str(&chrome).unwrap();
    let names: Vec<&str> = v["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["args"]["name"].as_str())
        .collect();
    assert_eq!(
        names,
        [EVIL_PROGRAM, EVIL_THREAD],
        "Chrome JSON keeps names exactly"
    );

    let calls = fdr(&["calls", l]).unwrap();
    assert_safe("calls", &calls);
    assert!(calls.contains(&format!("  {EVIL_FN_SHOWN}\n")), "{calls}");
    assert!(calls.contains(&format!("({EVIL_THREAD_SHOWN})")), "{calls}");
    let json = fdr(&["calls", "--format", "json", l]).unwrap();
    assert_safe("calls json", &json);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v[0]["function"], EVIL_FN, "JSON keeps the name exactly");
    let replay = fdr(&["replay", l]).unwrap();
    assert_safe("replay", &replay);
    assert!(
        replay.contains(&format!("| {EVIL_FN_SHOWN}() {{\n")),
        "{replay}"
    );
    let diff = fdr(&["diff", l, l]).unwrap();
    assert_safe("diff", &diff);
    assert_eq!(diff.lines().count(), 4, "header, two rows, a note: {diff}");
    let e = fdr(&["account", l, "--thread", "a\u{1b}[2Jb"]).unwrap_err();
    assert_safe("thread filter error", &e.to_string());

    for chart in [false, true] {
        let svg_path = dir.join("evil.svg");
        let mut args = vec!["flame", l, "-o", svg_path.to_str().unwrap()];
        if chart {
            args.push("--chart");
        }
        fdr(&args).unwrap();
        let svg = std::fs::read_to_string(&svg_path).unwrap();
        check_well_formed(&svg).unwrap_or_else(|e| panic!("chart {chart}: {e}"));
        assert_safe("svg", &svg);
        assert!(
            // `;` separates frames: names show it as `:`.
            svg.contains("evil\\x1b]0:pwned\\x07\\nforged 1 2 3 row &lt;b&gt;&amp;amp:&quot;q&quot;&apos;s\\u{9b}31m\\u{202e}x"),
            "chart {chart}"
        );
    }
}

#[test]
fn the_xml_checker_accepts_and_refuses_what_it_should() {
    check_well_formed(
        "<?xml version=\"1.0\"?><!DOCTYPE svg><svg a=\"1 &amp; 2\"><g><t>x &lt; y</t><r/></g>\
         <![CDATA[ a < b ]]></svg>",
    )
    .unwrap();
    for bad in [
        "<svg><g></svg>",
        "<svg>a < b</svg>",
        "<svg>a & b</svg>",
        "<svg a=1/>",
        "<svg>\u{1b}</svg>",
        "<svg>&#27;</svg>",
        "<svg/><svg/>",
    ] {
        assert!(check_well_formed(bad).is_err(), "{bad}");
    }
}

/// Thread 11 records, with time going backwards three times: a NewCPUId older than the record
/// before it (1000 -> 400), a TSCWrap older than the record before it (500 -> 450), and a block
/// that starts (600) before the thread's previous block ended (700). Thread 13 is in the thread
/// table, with 500 records dropped, but has no block: it lost everything.
fn backwards_log() -> Vec<u8> {
    let mut log = LogBuilder::new(1_000_000_000);
    log.run(RunInfo {
        ticks_per_second: 1_000_000_000,
        pid: 1,
        program: "back".into(),
        records_dropped: 500,
        ..RunInfo::default()
    });
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
    log.finish()
}

/// Offset of the first record of `log` for which `pick` is true.
fn offset_of(log: &[u8], pick: impl Fn(&Record<'_>) -> bool) -> u64 {
    let mut r = Reader::new(log).unwrap();
    while let Some((at, rec)) = r.next_record().unwrap() {
        if pick(&rec) {
            return at;
        }
    }
    panic!("no such record");
}

fn squeeze(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[test]
fn info_lists_a_thread_that_dropped_everything() {
    let dir = temp_dir("lost-thread");
    let log = write_log(&dir, "lost.fdr", &backwards_log());
    let info = fdr(&["info", &log]).unwrap();
    let lines: Vec<String> = info.lines().map(squeeze).collect();
    assert!(lines.contains(&"threads 2".to_string()), "{info}");
    assert!(
        lines.contains(&"13 0 0 500 - - lost, no records in the log".to_string()),
        "{info}"
    );
    assert!(
        lines.iter().any(|l| l.starts_with("11 2 6 0 +0 ns ")
            && l.ends_with(" main, 1 CPU changes, 1 TSC wraps")),
        "{info}"
    );
}

#[test]
fn time_running_backwards_is_warned_in_info_and_dump_verify() {
    let dir = temp_dir("backwards");
    let bytes = backwards_log();
    let log = write_log(&dir, "back.fdr", &bytes);
    let cpu_at = offset_of(&bytes, |r| matches!(r, Record::NewCpuId { tsc: 400, .. }));
    let wrap_at = offset_of(&bytes, |r| matches!(r, Record::TscWrap { tsc: 450 }));
    let block_at = offset_of(&bytes, |r| matches!(r, Record::NewCpuId { tsc: 600, .. }));

    let info = fdr(&["info", &log]).unwrap();
    assert!(
        info.contains(&format!(
            "warning     time runs backwards 3 times (first at byte offset {cpu_at} on thread 11, \
             by 600 ns); durations across these points are shown as 0\n"
        )),
        "{info}"
    );

    let dump =
        fdr(&["dump", "--verify", &log]).expect("backwards time is a warning, not a failure");
    let warnings: Vec<&str> = dump.lines().filter(|l| l.contains("  warning: ")).collect();
    assert_eq!(
        warnings,
        [
            format!("{cpu_at:>10}  warning: time runs backwards on thread 11, from tsc 1000 to 400 (600 ticks)"),
            format!("{wrap_at:>10}  warning: time runs backwards on thread 11, from tsc 500 to 450 (50 ticks)"),
            format!("{block_at:>10}  warning: time runs backwards on thread 11, from tsc 700 to 600 (100 ticks)"),
        ],
        "{dump}"
    );
    assert!(
        dump.ends_with(
            "follow the version 5 block grammar; time runs backwards 3 times (warnings above)\n"
        ),
        "{dump}"
    );
    // A log whose time only moves forward has no warning.
    let good = write_log(&dir, "good.fdr", &basic_log());
    assert!(!fdr(&["info", &good]).unwrap().contains("warning"));
    assert!(!fdr(&["dump", "--verify", &good])
        .unwrap()
        .contains("warning"));
}

#[test]
fn an_output_that_is_a_pipe_or_a_device_is_written_to_not_replaced() {
    // A named pipe stands for /dev/null and the like: a rename over it would replace it with a
    // regular file.
    use std::os::unix::fs::FileTypeExt;
    let dir = temp_dir("fifo-out");
    let log = write_log(&dir, "a.fdr", &basic_log_with_gap(0));
    let fifo = dir.join("out.pipe");
    let c = std::ffi::CString::new(fifo.as_os_str().as_bytes()).unwrap();
    // SAFETY: `c` is a valid NUL-terminated path that outlives the call.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    for cmd in WRITERS {
        // Both ends opened here, before the command runs: a reader that opened the pipe only
        // when its thread got to it could miss the command's write, should another test's child
        // (between its fork and its exec) hold a read end inherited from the previous round,
        // and then wait forever for a writer. The test's own write end keeps the reader from
        // seeing the end before the command has written; it is closed once the command is done.
        use std::io::Read;
        use std::os::unix::fs::OpenOptionsExt;
        use std::os::unix::io::AsRawFd;
        let mut rd = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&fifo)
            .unwrap();
        let keep = std::fs::OpenOptions::new().write(true).open(&fifo).unwrap();
        // SAFETY: `rd` is an open descriptor for the duration of both calls.
        unsafe {
            let flags = libc::fcntl(rd.as_raw_fd(), libc::F_GETFL);
            assert_eq!(
                libc::fcntl(rd.as_raw_fd(), libc::F_SETFL, flags & !libc::O_NONBLOCK),
                0
            );
        }
        let reader = std::thread::spawn(move || {
            let mut got = Vec::new();
            rd.read_to_end(&mut got).unwrap();
            got
        });
        let mut args = cmd.to_vec();
        args.insert(1, &log);
        args.extend(["-o", fifo.to_str().unwrap()]);
        fdr(&args).unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
        drop(keep);
        // Checked before joining: a reader of a pipe that was replaced would wait forever.
        let kind = std::fs::symlink_metadata(&fifo).unwrap().file_type();
        assert!(kind.is_fifo(), "{cmd:?}: the pipe is still a pipe");
        let got = reader.join().unwrap();
        assert!(!got.is_empty(), "{cmd:?} wrote through the pipe");
        assert_eq!(
            listing(&dir),
            ["a.fdr", "out.pipe"],
            "{cmd:?}: no temporary file"
        );
    }
}

/// A ring of 4 buffers with 6 threads recording at once: two found no buffer. `fdr info` says
/// why and what to set, with the same memory cut for twice the threads.
#[test]
fn info_says_why_threads_past_the_buffer_count_dropped_and_what_to_set() {
    let mut log = LogBuilder::new(1_000_000_000);
    log.run(RunInfo {
        ticks_per_second: 1_000_000_000,
        pid: 1,
        program: "server".into(),
        mode: fdr_format::Mode::Ring,
        buffer_count: 4,
        buffer_size: 16384,
        records_dropped: 900,
        ..RunInfo::default()
    });
    log.function(1, "app::handle", &[]);
    for tid in 20..26 {
        log.extension(&Extension::Thread(ThreadInfo {
            tid,
            name: format!("conn-{tid}"),
            records_dropped: if tid >= 24 { 450 } else { 0 },
        }));
    }
    for tid in 20..24 {
        let mut b = log.block(tid, 0, 1000);
        b.enter(1, 1000);
        b.exit(1, 2000);
        b.finish();
    }
    let dir = temp_dir("many-threads");
    let path = write_log(&dir, "many.fdr", &log.finish());
    let info = fdr(&["info", &path]).unwrap();
    let info = squeeze(&info);
    assert!(
        info.contains(
            "why: 2 of the 6 threads found no buffer: each recording thread holds one of the \
             pool's 4 buffers"
        ),
        "{info}"
    );
    // Twice the threads, the same 64 KiB.
    assert!(
        info.contains("FDR_OPTIONS=\"buffer_count=12 buffer_size=5120\" for the same 64 KiB"),
        "{info}"
    );

    // In fill mode the reason is the full pool.
    let mut log = LogBuilder::new(1_000_000_000);
    log.run(RunInfo {
        ticks_per_second: 1_000_000_000,
        mode: fdr_format::Mode::Fill,
        buffer_count: 4,
        buffer_size: 16384,
        records_dropped: 10,
        ..RunInfo::default()
    });
    let path = write_log(&dir, "fill.fdr", &log.finish());
    let info = squeeze(&fdr(&["info", &path]).unwrap());
    assert!(
        info.contains("why: fill mode stops recording when all 4 buffers are full"),
        "{info}"
    );
}
