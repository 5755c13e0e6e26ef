//! `fdr recover` and `fdr info` on crash boxes built byte by byte as a recorder leaves them
//! (`fdr_testkit::crash_box`): the log written where the process would have written it,
//! with the exact calls, the open ones open and the death said; a running process's box left
//! untouched; a closed box removed; corrupt boxes refused with a clean error, never a panic.

mod common;

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use common::{fdr, temp_dir};
use fdr_format::crash_box::{self, at, state};
use fdr_testkit::crash_box::{BoxBuilder, OWNED};
use serde_json::Value;

/// A pid no process has (Linux's largest is 2^22).
const GONE: i32 = 2_000_000_000;

/// Serializes the tests that change the process's environment or current directory.
static PROCESS: Mutex<()> = Mutex::new(());

/// The box of `crashy`, process `pid`, which would have written `out`: at 1 GHz,
///
/// - thread 11 (`main`), buffer 0 (retired): `app::main` entered at 1000; `app::handle`
///   [1100, 1500] calling `app::parse` [1200, 1300]; `app::handle` [1600, 2000] calling
///   `app::parse` [1700, 1800];
/// - thread 11, buffer 1 (owned, being written): `app::handle` entered at 2100, `app::parse` at
///   2200, and the process died: `app::main`, `app::handle` and `app::parse` are open;
/// - thread 12 (`worker`), its only buffer (owned): `app::handle` [1500, 1900], then entered at
///   2000; its exit at 2300 was written but its length not published: that call is open.
///
/// So `app::handle` has 3 calls that returned and 2 open, `app::parse` 2 and 1, `app::main` 0
/// and 1. The process took SIGSEGV at 0xdeadbeef on thread 11, at 2500.
fn crashed(pid: i32, out: &Path) -> BoxBuilder {
    let mut b = BoxBuilder::new("crashy", pid, out);
    b.function(1, "app::main");
    b.function(2, "app::handle");
    b.function(3, "app::parse");
    b.thread(11, "main");
    b.thread(12, "worker");
    b.crash(11, 0xdead_beef, 11, 2500);
    b.alive_tsc = 2400;
    let mut buf = b.buffer(11, 0, 1000);
    buf.enter(1, 1000);
    buf.enter(2, 1100);
    buf.enter(3, 1200);
    buf.exit(3, 1300);
    buf.exit(2, 1500);
    buf.enter(2, 1600);
    buf.enter(3, 1700);
    buf.exit(3, 1800);
    buf.exit(2, 2000);
    buf.finish();
    let mut buf = b.buffer(12, 0, 1500);
    buf.enter(2, 1500);
    buf.exit(2, 1900);
    buf.enter(2, 2000);
    buf.exit(2, 2300);
    let published = fdr_format::BLOCK_PREAMBLE_WORDS + 3;
    buf.finish_as(OWNED, Some(published));
    let mut buf = b.buffer(11, 1, 2100);
    buf.enter(2, 2100);
    buf.enter(3, 2200);
    buf.finish_as(OWNED, None);
    b
}

/// Writes `b` as `dir/fdr-PROGRAM-PID.box`.
fn write_box(dir: &Path, b: &BoxBuilder) -> PathBuf {
    let p = dir.join(b.file_name());
    std::fs::write(&p, b.finish()).unwrap();
    p
}

/// Where `fdr recover` writes the log of process `pid` that would have written `out`: beside
/// it, under a name no later log of the program takes.
fn recovered(out: &Path, pid: i32) -> PathBuf {
    crash_box::recovered_name(out, pid, 1)
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// `fdr account --format json` of `log`: function name to (count, open).
fn counts(log: &Path) -> Vec<(String, u64, u64)> {
    let json = fdr(&["account", "--format", "json", "--sort", "id", s(log)]).unwrap();
    let rows: Vec<Value> = serde_json::from_str(&json).unwrap();
    rows.iter()
        .map(|r| {
            (
                r["function"].as_str().unwrap().to_string(),
                r["count"].as_u64().unwrap(),
                r["open"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn a_dead_process_s_box_becomes_its_log_with_the_exact_calls_and_is_removed() {
    let dir = temp_dir("recover-basic");
    let out = dir.join("logs/crashy.fdr");
    std::fs::create_dir_all(out.parent().unwrap()).unwrap();
    let bx = write_box(&dir, &crashed(GONE, &out));
    let said = fdr(&["recover", s(&bx)]).unwrap();
    let out = recovered(&out, GONE);
    assert_eq!(
        said,
        format!(
            "wrote {}: process {GONE} (crashy) SIGSEGV (segmentation fault) at address \
             0xdeadbeef on thread 11\n",
            out.display()
        )
    );
    assert!(!bx.exists(), "the box is removed");
    assert!(
        out.exists(),
        "the log is beside where the process would have written its own"
    );
    let names: Vec<_> = std::fs::read_dir(out.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        names,
        ["crashy.recovered-2000000000.fdr"],
        "no temporary file left"
    );

    fdr(&["dump", "--verify", s(&out)]).expect("the recovered log is well formed");
    assert_eq!(
        counts(&out),
        [
            ("app::main".to_string(), 0, 1),
            ("app::handle".to_string(), 3, 2),
            ("app::parse".to_string(), 2, 1),
        ]
    );

    // The calls open at the death are open at the log's end; the slowest is main's.
    let json = fdr(&["calls", "--format", "json", s(&out)]).unwrap();
    let calls: Vec<Value> = serde_json::from_str(&json).unwrap();
    let main = &calls[0];
    assert_eq!(
        (&main["function"], &main["open_at_end"], &main["thread"]),
        (
            &Value::from("app::main"),
            &Value::from(true),
            &Value::from(11)
        )
    );
    let last = main["children"].as_array().unwrap().last().unwrap();
    assert_eq!(
        (&last["function"], &last["open_at_end"], &last["start_ns"]),
        (
            &Value::from("app::handle"),
            &Value::from(true),
            &Value::from(1100)
        )
    );
    assert_eq!(last["children"][0]["function"], "app::parse");
    assert_eq!(last["children"][0]["open_at_end"], true);
    let worker: Vec<&Value> = calls.iter().filter(|c| c["thread"] == 12).collect();
    assert!(
        worker
            .iter()
            .any(|c| c["start_ns"] == 1000 && c["open_at_end"] == true),
        "the worker's call whose exit was not published is open: {worker:?}"
    );
    let text = fdr(&["calls", s(&out)]).unwrap();
    assert!(text.contains("open: still running when the window was written"));

    let info = fdr(&["info", s(&out)]).unwrap();
    assert!(
        info.contains(
            "reason      the process ended without writing its log; recovered from its crash box\n"
        ),
        "{info}"
    );
    assert!(
        info.contains(
            "died        SIGSEGV (segmentation fault) at address 0xdeadbeef on thread 11\n"
        ),
        "{info}"
    );
    assert!(
        info.contains("program     crashy, pid 2000000000\n"),
        "{info}"
    );
    assert!(
        info.contains("log         recovered from the crash box of a process that died"),
        "{info}"
    );
}

#[test]
fn a_process_killed_without_a_handler_is_said_so() {
    let dir = temp_dir("recover-killed");
    let out = dir.join("killed.fdr");
    let mut b = crashed(GONE, &out);
    b.crash(0, 0, 0, 0);
    let bx = write_box(&dir, &b);
    let said = fdr(&["recover", s(&dir)]).unwrap();
    let out = recovered(&out, GONE);
    assert_eq!(
        said,
        format!(
            "wrote {}: process {GONE} (crashy) killed: no handler ran (SIGKILL, the OOM killer)\n",
            out.display()
        )
    );
    assert!(!bx.exists());
    let info = fdr(&["info", s(&out)]).unwrap();
    assert!(
        info.contains("died        killed: no handler ran (SIGKILL, the OOM killer)\n"),
        "{info}"
    );
    // Still the same calls: the open ones end where the process was last seen alive.
    assert_eq!(counts(&out)[1], ("app::handle".to_string(), 3, 2));
}

#[test]
fn a_taken_name_gets_a_number_and_keep_leaves_the_box() {
    let dir = temp_dir("recover-numbered");
    let out = dir.join("crashy.fdr");
    // The program's own log (a restart's, say) is never the recovered log's name.
    std::fs::write(&out, b"a later log").unwrap();
    let bx = write_box(&dir, &crashed(GONE, &out));
    let box_bytes = std::fs::read(&bx).unwrap();
    let said = fdr(&["recover", "--keep", s(&bx)]).unwrap();
    let first = recovered(&out, GONE);
    assert!(
        said.starts_with(&format!("wrote {}: process", first.display())),
        "{said}"
    );
    assert_eq!(
        std::fs::read(&bx).unwrap(),
        box_bytes,
        "--keep leaves the box"
    );
    assert_eq!(std::fs::read(&out).unwrap(), b"a later log");
    let said = fdr(&["recover", s(&bx)]).unwrap();
    let second = crash_box::recovered_name(&out, GONE, 2);
    assert_eq!(second, dir.join("crashy.recovered-2000000000-2.fdr"));
    assert!(
        said.starts_with(&format!("wrote {}: process", second.display())),
        "{said}"
    );
    assert!(!bx.exists());
    assert_eq!(
        std::fs::read(&first).unwrap(),
        std::fs::read(&second).unwrap()
    );
}

#[test]
fn output_names_the_log_of_a_single_box() {
    let dir = temp_dir("recover-output");
    let bx = write_box(&dir, &crashed(GONE, &dir.join("crashy.fdr")));
    let chosen = dir.join("chosen.fdr");
    let said = fdr(&["recover", "-o", s(&chosen), s(&bx)]).unwrap();
    assert!(
        said.starts_with(&format!("wrote {}: process", chosen.display())),
        "{said}"
    );
    assert!(!dir.join("crashy.fdr").exists());
    assert_eq!(counts(&chosen)[2], ("app::parse".to_string(), 2, 1));
    // Two boxes: -o cannot name both logs.
    write_box(&dir, &crashed(GONE, &dir.join("a.fdr")));
    write_box(&dir, &crashed(GONE - 1, &dir.join("b.fdr")));
    let e = fdr(&["recover", "-o", s(&chosen), s(&dir)]).unwrap_err();
    assert_eq!(e.exit_code(), 2, "{e}");
    assert!(e.to_string().contains("-o/--output names one log"), "{e}");
    assert!(!dir.join("a.fdr").exists() && !dir.join("b.fdr").exists());
}

#[test]
fn a_running_process_s_box_is_left_alone_and_untouched() {
    let dir = temp_dir("recover-alive");
    let out = dir.join("alive.fdr");
    let me = std::process::id() as i32;
    let mut b = crashed(me, &out);
    b.crash(0, 0, 0, 0);
    b.proc_start = crash_box::process_start(me).expect("this process's start time");
    b.boot_id = crash_box::boot_id();
    let bx = write_box(&dir, &b);
    let before = std::fs::read(&bx).unwrap();
    let modified = std::fs::metadata(&bx).unwrap().modified().unwrap();
    for args in [vec!["recover", s(&dir)], vec!["recover", s(&bx)]] {
        let said = fdr(&args).unwrap();
        assert_eq!(
            said,
            format!("left alone: {} (process {me} is running)\n", bx.display())
        );
    }
    assert_eq!(std::fs::read(&bx).unwrap(), before);
    assert_eq!(
        std::fs::metadata(&bx).unwrap().modified().unwrap(),
        modified
    );
    assert!(!out.exists());
    let names: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
    assert_eq!(names.len(), 1, "nothing written beside the box");
    let info = fdr(&["info", s(&bx)]).unwrap();
    assert!(
        info.contains(&format!(
            "process     still recording: process {me} is running"
        )),
        "{info}"
    );
    assert_eq!(std::fs::read(&bx).unwrap(), before, "info changes nothing");
}

#[test]
fn a_pid_reused_by_a_later_process_or_another_boot_is_not_the_box_s_process() {
    let dir = temp_dir("recover-reused");
    let me = std::process::id() as i32;
    let start = crash_box::process_start(me).unwrap();
    // The same pid, another start time: a process that had this pid before.
    let mut b = crashed(me, &dir.join("reused.fdr"));
    b.proc_start = start + 1;
    let bx = write_box(&dir, &b);
    let said = fdr(&["recover", s(&bx)]).unwrap();
    assert!(said.starts_with("wrote "), "{said}");
    assert!(!bx.exists());
    // The same process start, another boot.
    let mut b = crashed(me, &dir.join("rebooted.fdr"));
    b.proc_start = start;
    b.boot_id = [0xab; 16];
    let bx = write_box(&dir, &b);
    let said = fdr(&["recover", s(&bx)]).unwrap();
    assert!(said.starts_with("wrote "), "{said}");
    assert!(recovered(&dir.join("rebooted.fdr"), me).exists());
}

#[test]
fn a_closed_box_is_removed_silently() {
    let dir = temp_dir("recover-closed");
    let mut b = crashed(GONE, &dir.join("closed.fdr"));
    b.state = state::CLOSED;
    let bx = write_box(&dir, &b);
    assert_eq!(fdr(&["recover", s(&dir)]).unwrap(), "");
    assert!(!bx.exists());
    assert!(!dir.join("closed.fdr").exists());
}

#[test]
fn no_box_says_where_it_looked() {
    let dir = temp_dir("recover-none");
    std::fs::write(dir.join("other.box"), b"not named as a box").unwrap();
    std::fs::write(dir.join("fdr-notes.txt"), b"nor this").unwrap();
    assert_eq!(
        fdr(&["recover", s(&dir)]).unwrap(),
        format!("no crash box in {}\n", dir.display())
    );
}

#[test]
fn without_a_path_the_default_directory_and_an_unwritable_out_falls_back_here() {
    let _lock = PROCESS.lock().unwrap_or_else(|e| e.into_inner());
    let dir = temp_dir("recover-default");
    let runtime = dir.join("runtime");
    let here = dir.join("here");
    std::fs::create_dir_all(&runtime).unwrap();
    std::fs::create_dir_all(&here).unwrap();
    // The process would have written into a directory that is gone since.
    let gone = dir.join("gone/crashy.fdr");
    let bx = write_box(&runtime, &crashed(GONE, &gone));
    let cwd = std::env::current_dir().unwrap();
    let xdg = std::env::var_os("XDG_RUNTIME_DIR");
    std::env::set_var("XDG_RUNTIME_DIR", &runtime);
    std::env::set_current_dir(&here).unwrap();
    let said = fdr(&["recover"]);
    std::env::set_current_dir(cwd).unwrap();
    match xdg {
        Some(x) => std::env::set_var("XDG_RUNTIME_DIR", x),
        None => std::env::remove_var("XDG_RUNTIME_DIR"),
    }
    let said = said.unwrap();
    let lines: Vec<&str> = said.lines().collect();
    assert_eq!(lines.len(), 2, "{said}");
    assert!(
        lines[0].starts_with(&format!(
            "cannot write {} (",
            recovered(&gone, GONE).display()
        )),
        "{said}"
    );
    let here_log = recovered(&here.join("crashy.fdr"), GONE);
    assert!(
        lines[1].starts_with(&format!("wrote {}: process", here_log.display())),
        "{said}"
    );
    assert!(here_log.exists());
    assert!(!bx.exists());
}

/// The byte offsets of `b`'s layout fields, read back from its bytes.
fn field(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap())
}

fn set(bytes: &mut [u8], at: usize, v: u64) {
    bytes[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

#[test]
fn corrupt_boxes_are_named_with_why_and_the_others_still_recovered() {
    let dir = temp_dir("recover-corrupt");
    let good = crashed(GONE, &dir.join("good.fdr"));
    let bytes = good.finish();
    let write = |pid: i32, b: &[u8]| {
        let p = dir.join(format!("fdr-crashy-{pid}.box"));
        std::fs::write(&p, b).unwrap();
        p
    };
    let short = write(1_000_000_001, &bytes[..bytes.len() / 2]);
    let magic = write(1_000_000_002, b"FDR-BUX\x01 and then nothing of a box");
    let mut past = bytes.clone();
    set(&mut past, at::BUFFER_COUNT, 1 << 40);
    let past = write(1_000_000_003, &past);
    let ok = write_box(&dir, &good);
    let e = fdr(&["recover", s(&dir)]).unwrap_err();
    assert_eq!(e.exit_code(), 1);
    let msg = e.to_string();
    let lines: Vec<&str> = msg.lines().collect();
    assert_eq!(lines.len(), 3, "{msg}");
    for (line, bx, why) in [
        (lines[0], &short, "cut short"),
        (lines[1], &magic, "not an fdr crash box"),
        (lines[2], &past, "does not fit"),
    ] {
        assert!(
            line.starts_with(&format!(
                "fdr: {}: cannot recover this crash box: ",
                bx.display()
            )),
            "{line}"
        );
        assert!(line.contains(why), "{line}");
        assert!(bx.exists(), "a box that cannot be recovered is kept");
    }
    assert!(!ok.exists(), "the good box was recovered");
    assert!(recovered(&dir.join("good.fdr"), GONE).exists());
    // A path that is not there is an error too.
    let e = fdr(&["recover", s(&dir.join("fdr-none-1.box"))]).unwrap_err();
    assert!(e.to_string().contains("cannot read it"), "{e}");
}

#[test]
fn damage_anywhere_in_a_box_is_an_error_or_a_log_never_a_panic() {
    let dir = temp_dir("recover-damage");
    let good = crashed(GONE, &dir.join("unused.fdr")).finish();
    let words_offset = field(&good, at::WORDS_OFFSET) as usize;
    let slots_offset = field(&good, at::SLOTS_OFFSET) as usize;
    let lead = field(&good, at::LEAD_OFFSET) as usize + field(&good, at::LEAD_CAPACITY) as usize;
    let bx = dir.join("fdr-damaged-1.box");
    let log = dir.join("damaged.fdr");
    let mut places: Vec<usize> = (0..264).step_by(4).collect();
    places.extend((slots_offset..slots_offset + 3 * 64).step_by(4));
    places.extend((words_offset..words_offset + 160).step_by(8));
    places.extend((lead..lead + 64).step_by(4));
    places.push(lead + field(&good, at::LEAD_LEN + 8) as usize - 2);
    let mut recovered = 0;
    for &at in &places {
        for v in [0u32, 0xffff_ffff, 0x7fff_fff1] {
            let mut b = good.clone();
            b[at..at + 4].copy_from_slice(&v.to_le_bytes());
            std::fs::write(&bx, &b).unwrap();
            let _ = fdr(&["info", s(&bx)]);
            match fdr(&["recover", "--keep", "-o", s(&log), s(&bx)]) {
                Ok(said) if said.starts_with("wrote ") => {
                    recovered += 1;
                    for cmd in ["info", "account", "calls", "replay"] {
                        fdr(&[cmd, s(&log)])
                            .unwrap_or_else(|e| panic!("{cmd} of a log recovered: {e}"));
                    }
                }
                Ok(said) => assert!(said.starts_with("left alone") || said.is_empty()),
                Err(e) => assert_eq!(e.exit_code(), 1, "{e}"),
            }
        }
    }
    assert!(recovered > places.len(), "most damage is recovered around");
    // Slot lengths past their buffer are cut at it.
    let mut b = good.clone();
    for k in 0..3 {
        b[slots_offset + 64 * k..slots_offset + 64 * k + 4]
            .copy_from_slice(&u32::MAX.to_le_bytes());
    }
    std::fs::write(&bx, &b).unwrap();
    fdr(&["recover", "--keep", "-o", s(&log), s(&bx)]).unwrap();
    fdr(&["account", s(&log)]).unwrap();
}

/// Found by the `recover` fuzz target: a sign-of-life period near `u64::MAX` overflowed the
/// grace added to it (a panic in debug builds). Every field after the log path, at values a
/// hostile or torn box holds, reads as an error or a box, and what recovers is a log.
#[test]
fn hostile_values_in_the_later_header_fields_are_read_without_a_panic() {
    let dir = temp_dir("recover-hostile-fields");
    let mut good = crashed(GONE, &dir.join("unused.fdr"));
    good.alive_period_ns = 1_000_000;
    let good = good.finish();
    let bx = dir.join("fdr-hostile-1.box");
    let log = dir.join("hostile.fdr");
    let mut read = 0;
    for at in (at::PID_NS..at::FORKED_TSC + 8).step_by(4) {
        for v in [u64::MAX, u64::MAX - 99_999_999, 1 << 63, 0x7fff_ffff] {
            let mut b = good.clone();
            set(&mut b, at, v);
            if let Ok(r) = crash_box::recover(&b) {
                read += 1;
                let _ = r.info.death();
                let mut dec = fdr_format::events::EventDecoder::new(&r.log[..]).unwrap();
                dec.for_each(|_, _| Ok::<(), fdr_format::FormatError>(()))
                    .unwrap_or_else(|e| panic!("field at {at} = {v:#x}: {e}"));
            }
            std::fs::write(&bx, &b).unwrap();
            let _ = fdr(&["info", s(&bx)]);
            if let Ok(said) = fdr(&["recover", "--keep", "-o", s(&log), s(&bx)]) {
                if said.starts_with("wrote ") {
                    fdr(&["info", s(&log)]).unwrap();
                }
            }
        }
    }
    assert!(read > 0, "later fields are notes: the box is still read");
}

/// Found by the `recover` fuzz target: a table holding its own reason record (or a second run
/// record) overrode the one the recovery writes, and the recovered log said "call still
/// running past its limit" of a process that died.
#[test]
fn a_box_s_table_cannot_say_how_its_process_ended() {
    use fdr_format::{Extension, Reason, ReasonInfo, RunInfo};
    let dir = temp_dir("recover-table-reason");
    let out = dir.join("told.fdr");
    let mut b = crashed(GONE, &out);
    b.record(Extension::Reason(ReasonInfo {
        reason: Reason::StillRunning,
        ..ReasonInfo::default()
    }));
    b.record(Extension::Run(RunInfo {
        pid: 4242,
        ..RunInfo::default()
    }));
    let r = crash_box::recover(&b.finish()).unwrap();
    let mut dec = fdr_format::events::EventDecoder::new(&r.log[..]).unwrap();
    dec.for_each(|_, _| Ok::<(), fdr_format::FormatError>(()))
        .unwrap();
    let reason = dec.info().reason.clone().unwrap();
    assert_eq!(reason.reason, Reason::Crash);
    assert_eq!(reason.signal, 11);
    assert_eq!(dec.info().run.as_ref().unwrap().pid, GONE);
    let bx = write_box(&dir, &b);
    fdr(&["recover", s(&bx)]).unwrap();
    let said = fdr(&["info", s(&recovered(&out, GONE))]).unwrap();
    assert!(said.contains("SIGSEGV"), "{said}");
    assert!(!said.contains("still running"), "{said}");
}

#[test]
fn info_reads_a_box_as_it_is() {
    let dir = temp_dir("recover-info");
    let out = dir.join("crashy.fdr");
    let mut b = crashed(GONE, &out);
    b.calibrated = false;
    let bx = write_box(&dir, &b);
    let before = std::fs::read(&bx).unwrap();
    let info = fdr(&["info", s(&bx)]).unwrap();
    for want in [
        format!("crash box   {} ({} bytes)\n", bx.display(), before.len()),
        format!("program     crashy, pid {GONE}\n"),
        "state       recording\n".to_string(),
        "process     SIGSEGV (segmentation fault) at address 0xdeadbeef on thread 11\n".to_string(),
        format!(
            "out         {} (where `fdr recover` writes its log)\n",
            out.display()
        ),
        "calibration 1000000000 ticks/s (1.000 GHz), the estimate taken at start".to_string(),
        "buffers     3 of 8 hold records (1 KiB each)\n".to_string(),
        "functions   3 in the box's table\n".to_string(),
        format!("file        {}, recovered in memory (", bx.display()),
        "died        SIGSEGV (segmentation fault) at address 0xdeadbeef on thread 11\n".to_string(),
        "records     14 function records\n".to_string(),
        "threads     2\n".to_string(),
    ] {
        assert!(info.contains(&want), "no {want:?} in\n{info}");
    }
    assert_eq!(std::fs::read(&bx).unwrap(), before);
    assert!(!out.exists(), "info writes nothing");
    // The other commands refuse a box and say what reads it.
    let e = fdr(&["account", s(&bx)]).unwrap_err();
    assert!(e.to_string().contains("`fdr recover`"), "{e}");
    // A corrupt box: a clean error from info too.
    std::fs::write(&bx, &before[..5000]).unwrap();
    let e = fdr(&["info", s(&bx)]).unwrap_err();
    assert_eq!(e.exit_code(), 1);
    assert!(e.to_string().contains("cut short"), "{e}");
}

#[test]
fn the_command_exits_non_zero_after_recovering_what_it_can() {
    let dir = temp_dir("recover-exit");
    let good = write_box(&dir, &crashed(GONE, &dir.join("good.fdr")));
    let bad = dir.join("fdr-bad-5.box");
    std::fs::write(&bad, b"FDR-BOX\x01").unwrap();
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_fdr"))
        .args(["recover", s(&dir)])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let stdout = String::from_utf8(o.stdout).unwrap();
    let stderr = String::from_utf8(o.stderr).unwrap();
    assert!(stdout.starts_with("wrote "), "{stdout}");
    assert!(
        stderr.starts_with(&format!(
            "fdr: {}: cannot recover this crash box: ",
            bad.display()
        )),
        "{stderr}"
    );
    assert!(!good.exists() && bad.exists());
}

/// A box made under the lock protocol ([`crash_box::flags::LOCKED`]) by `pid`, of this boot and
/// PID namespace.
fn locked(pid: i32, out: &Path) -> BoxBuilder {
    let mut b = crashed(pid, out);
    b.flags = crash_box::flags::LOCKED;
    b.boot_id = crash_box::boot_id();
    b.pid_ns = crash_box::pid_namespace().unwrap_or(0);
    b
}

/// Holds an exclusive lock on `path`, as the box's running process does, until dropped.
fn hold(path: &Path) -> std::fs::File {
    use std::os::unix::io::AsRawFd;
    let f = std::fs::File::open(path).unwrap();
    // SAFETY: flock on a descriptor this File owns.
    let taken = unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    assert_eq!(taken, 0);
    f
}

#[test]
fn a_box_whose_process_holds_its_lock_is_left_alone_whatever_its_pid_says() {
    let dir = temp_dir("recover-held");
    // A pid no process here has: a box in another PID namespace, or any box whose pid means
    // nothing here. Its lock says it runs.
    let b = locked(GONE, &dir.join("held.fdr"));
    let bx = write_box(&dir, &b);
    let before = std::fs::read(&bx).unwrap();
    let lock = hold(&bx);
    let said = fdr(&["recover", s(&dir)]).unwrap();
    assert_eq!(
        said,
        format!(
            "left alone: {} (process {GONE} is running, or another recovery has the box)\n",
            bx.display()
        )
    );
    assert_eq!(std::fs::read(&bx).unwrap(), before);
    assert!(!recovered(&dir.join("held.fdr"), GONE).exists());
    let info = fdr(&["info", s(&bx)]).unwrap();
    assert!(info.contains("still recording"), "{info}");
    // Its process ends: the lock goes with it, and the box is recovered.
    drop(lock);
    let said = fdr(&["recover", s(&dir)]).unwrap();
    assert!(said.starts_with("wrote "), "{said}");
    assert!(!bx.exists());
}

#[test]
fn a_box_of_another_pid_namespace_is_judged_by_its_lock_not_its_pid() {
    let dir = temp_dir("recover-namespace");
    // This process's own pid and start, but another namespace's: the process here with that
    // pid is not the box's. Its lock is free: it is gone.
    let me = std::process::id() as i32;
    let mut b = locked(me, &dir.join("other-ns.fdr"));
    b.proc_start = crash_box::process_start(me).unwrap();
    b.pid_ns = 0xdead_beef;
    let bx = write_box(&dir, &b);
    let said = fdr(&["recover", s(&dir)]).unwrap();
    assert!(said.starts_with("wrote "), "{said}");
    assert!(said.contains("SIGSEGV"), "{said}");
    assert!(!bx.exists());
}

#[test]
fn a_box_whose_process_lives_on_as_another_program_was_ended_by_exec() {
    let dir = temp_dir("recover-exec");
    // Its lock is free, but its process (this one: same pid, start, boot and namespace) runs
    // and does not map it: it replaced its program.
    let me = std::process::id() as i32;
    let mut b = locked(me, &dir.join("execed.fdr"));
    b.crash(0, 0, 0, 0);
    b.proc_start = crash_box::process_start(me).unwrap();
    let bx = write_box(&dir, &b);
    let said = fdr(&["recover", s(&dir)]).unwrap();
    assert!(said.contains("replaced its program by exec"), "{said}");
    assert!(!said.contains("killed"), "{said}");
    let log = recovered(&dir.join("execed.fdr"), me);
    let info = fdr(&["info", s(&log)]).unwrap();
    assert!(
        info.contains("ended       replaced its program by exec"),
        "{info}"
    );
    assert!(!bx.exists());
}

#[test]
fn what_is_named_like_a_box_but_is_no_file_of_this_user_is_skipped_without_hanging() {
    let dir = temp_dir("recover-hostile");
    let fifo = dir.join("fdr-crashy-1000000011.box");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: makes a FIFO at a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let link = dir.join("fdr-crashy-1000000012.box");
    std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
    let ok = write_box(&dir, &crashed(GONE, &dir.join("ok.fdr")));
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_fdr"))
        .args(["recover", s(&dir)])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            child.kill().unwrap();
            panic!("fdr recover hangs on a FIFO or a link named like a box");
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let out = child.wait_with_output().unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{said}");
    assert!(
        said.contains(&format!(
            "skipped: {} (a FIFO, not a crash box)",
            fifo.display()
        )),
        "{said}"
    );
    assert!(
        said.contains(&format!(
            "skipped: {} (a symbolic link, not a crash box (links are not followed))",
            link.display()
        )),
        "{said}"
    );
    assert!(!ok.exists(), "the box beside them was recovered: {said}");
    assert!(fifo.exists() && link.exists());
}

#[test]
fn another_user_s_box_is_skipped() {
    // SAFETY: geteuid only answers.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: giving a file to another user needs root");
        return;
    }
    let dir = temp_dir("recover-other-user");
    let bx = write_box(&dir, &crashed(GONE, &dir.join("theirs.fdr")));
    std::os::unix::fs::chown(&bx, Some(65534), Some(65534)).unwrap();
    let said = fdr(&["recover", s(&dir)]).unwrap();
    assert_eq!(
        said,
        format!(
            "skipped: {} (a file of another user (uid 65534))\n",
            bx.display()
        )
    );
    assert!(bx.exists());
}

#[test]
fn two_recoveries_at_once_write_one_log_per_box() {
    let dir = temp_dir("recover-race");
    // Under qemu-user a process spawned from a test process with threads now and then hangs
    // before its exec (qemu's own locks, held across the fork): fewer spawns there.
    let rounds = if std::env::var_os("FDR_TEST_EMULATOR").is_some() {
        3
    } else {
        20
    };
    for round in 0..rounds {
        let boxes: Vec<(i32, PathBuf)> = (0..6)
            .map(|i| {
                let pid = GONE - 100 * round - i;
                let b = locked(pid, &dir.join("raced.fdr"));
                (pid, write_box(&dir, &b))
            })
            .collect();
        let racers: Vec<std::process::Child> = (0..3)
            .map(|_| {
                std::process::Command::new(env!("CARGO_BIN_EXE_fdr"))
                    .args(["recover", s(&dir)])
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::null())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for r in racers {
            r.wait_with_output().unwrap();
        }
        for (pid, bx) in &boxes {
            assert!(!bx.exists(), "round {round}");
            let logs: Vec<_> = std::fs::read_dir(&dir)
                .unwrap()
                .flatten()
                .filter(|e| {
                    e.file_name()
                        .to_string_lossy()
                        .starts_with(&format!("raced.recovered-{pid}"))
                })
                .map(|e| e.file_name())
                .collect();
            assert_eq!(logs.len(), 1, "round {round}, process {pid}: {logs:?}");
        }
    }
    let left: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .filter(|n| n.to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

/// Counts each thread's heap: what a recovery allocates, whatever else the process does
/// meanwhile (the tests of this binary run side by side).
struct Counting;

thread_local! {
    static NOW: std::cell::Cell<isize> = const { std::cell::Cell::new(0) };
    static PEAK: std::cell::Cell<isize> = const { std::cell::Cell::new(0) };
}

fn count(delta: isize) {
    let _ = NOW.try_with(|n| {
        n.set(n.get() + delta);
        let _ = PEAK.try_with(|p| p.set(p.get().max(n.get())));
    });
}

// SAFETY: every call is handed to the system allocator as it came; the counters are the
// calling thread's own cells, which allocate nothing.
unsafe impl std::alloc::GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        count(layout.size() as isize);
        // SAFETY: as the caller's contract.
        unsafe { std::alloc::System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        count(-(layout.size() as isize));
        // SAFETY: as the caller's contract.
        unsafe { std::alloc::System.dealloc(ptr, layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: std::alloc::Layout) -> *mut u8 {
        count(layout.size() as isize);
        // SAFETY: as the caller's contract.
        unsafe { std::alloc::System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new: usize) -> *mut u8 {
        count(new as isize - layout.size() as isize);
        // SAFETY: as the caller's contract.
        unsafe { std::alloc::System.realloc(ptr, layout, new) }
    }
}

#[global_allocator]
static HEAP: Counting = Counting;

/// The most heap the calling thread held above what it held before, while `f` ran.
fn peak_heap(f: impl FnOnce()) -> usize {
    let base = NOW.with(|n| n.get());
    PEAK.with(|p| p.set(base));
    f();
    (PEAK.with(|p| p.get()) - base).max(0) as usize
}

#[test]
fn a_large_sparse_box_is_read_as_far_as_it_was_written() {
    let dir = temp_dir("recover-sparse");
    // 25,000 buffers of 64 KiB (1.6 GB) of which three were written: recovering it reads those.
    let mut b = crashed(GONE, &dir.join("sparse.fdr"));
    b.buffer_size = 65536;
    b.buffer_count = 25_000;
    let bx = dir.join(b.file_name());
    b.write_sparse(&bx).unwrap();
    drop(b);
    assert!(std::fs::metadata(&bx).unwrap().len() > 1_600_000_000);
    let mut said = String::new();
    let heap = peak_heap(|| said = fdr(&["recover", s(&bx)]).unwrap());
    assert!(said.starts_with("wrote "), "{said}");
    // The slots (1.6 MB of them, read a thousand at a time), the three buffers and the log.
    assert!(heap < 4 << 20, "fdr recover's heap: {heap} bytes");
    assert_eq!(
        counts(&recovered(&dir.join("sparse.fdr"), GONE))[1],
        ("app::handle".to_string(), 3, 2)
    );
}

#[test]
fn a_process_that_ended_and_waits_to_be_collected_is_dead_not_exec_d() {
    let dir = temp_dir("recover-zombie");
    // A process that ends and is not waited for yet (its parent is this test): a zombie, with
    // its pid and start still in /proc.
    let mut child = std::process::Command::new("sleep")
        .arg("0.2")
        .spawn()
        .unwrap();
    let pid = child.id() as i32;
    let start = crash_box::process_start(pid).unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .unwrap()
        .contains(") Z ")
    {
        assert!(std::time::Instant::now() < deadline, "never a zombie");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let mut b = locked(pid, &dir.join("zombie.fdr"));
    b.crash(0, 0, 0, 0);
    b.proc_start = start;
    write_box(&dir, &b);
    let said = fdr(&["recover", s(&dir)]).unwrap();
    child.wait().unwrap();
    assert!(said.contains("killed: no handler ran"), "{said}");
    assert!(!said.contains("exec"), "{said}");
}
