//! Reading is streaming (issue 12): `calls --top 10` and `replay` take no more memory on a log
//! four times larger, and every command reads standard input for `-`. Each run is a child
//! process whose peak memory the kernel reports.

mod common;

use std::io::Write;
use std::process::{Command, Stdio};

use common::child::run_fdr;
use common::{basic_log, temp_dir, write_log};
use fdr_testkit::synth::LogBuilder;

/// About `records` function records on four threads in 64 KiB blocks, calls nested up to 8
/// deep over 200 functions, as `genlog` writes them.
fn big_log(records: u64) -> Vec<u8> {
    let mut log = LogBuilder::new(3_000_000_000);
    for id in 1..=200 {
        log.function(id, &format!("bench::module{}::function_{id}", id % 7), &[]);
    }
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut rng = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut stacks: Vec<Vec<u32>> = vec![Vec::new(); 4];
    let mut times = [1_000_000u64; 4];
    let mut written = 0;
    while written < records {
        for t in 0..4 {
            let mut b = log.block(100 + t as i32, 0, times[t]);
            for _ in 0..8000 {
                let r = rng();
                times[t] += 20 + (r >> 40) % 3000;
                let depth = stacks[t].len();
                if depth == 0 || (depth < 8 && (r >> 8) % 100 < 52 - depth as u64 * 4) {
                    let id = 1 + (r >> 16) as u32 % 200;
                    b.enter(id, times[t]);
                    stacks[t].push(id);
                } else {
                    b.exit(stacks[t].pop().unwrap(), times[t]);
                }
            }
            b.finish();
            written += 8000;
        }
    }
    log.finish()
}

#[test]
fn calls_and_replay_memory_does_not_grow_with_the_log() {
    let dir = temp_dir("streaming");
    let small = dir.join("small.fdr");
    let large = dir.join("large.fdr");
    std::fs::write(&small, big_log(200_000)).unwrap();
    std::fs::write(&large, big_log(800_000)).unwrap();
    for cmd in [&["calls", "--top", "10"][..], &["replay"]] {
        let peak = |log: &std::path::Path| {
            let mut args: Vec<&std::ffi::OsStr> = cmd.iter().map(std::ffi::OsStr::new).collect();
            args.insert(1, log.as_os_str());
            let r = run_fdr(&args, &dir);
            r.assert_ok(&format!("{cmd:?}"));
            assert!(!r.stdout.is_empty());
            r.peak_rss
        };
        let (a, b) = (peak(&small), peak(&large));
        assert!(
            b < a + (4 << 20) && b < 100 << 20,
            "{cmd:?}: peak {} KiB on 200,000 records, {} KiB on 800,000",
            a >> 10,
            b >> 10
        );
    }
}

#[test]
fn every_command_reads_standard_input_for_dash() {
    let dir = temp_dir("stdin");
    let log = write_log(&dir, "basic.fdr", &basic_log());
    let bytes = std::fs::read(&log).unwrap();
    let run = |args: &[&str], input: Option<&[u8]>| {
        let mut child = Command::new(env!("CARGO_BIN_EXE_fdr"))
            .args(args)
            .env("TZ", "UTC")
            .stdin(if input.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let pid = child.id();
        if let Some(b) = input {
            // A child that has what it needs (or fails first, a usage error) may exit before
            // reading everything: a broken pipe here is not the test's concern, its output is.
            let _ = child.stdin.take().unwrap().write_all(b);
        }
        let o = child.wait_with_output().unwrap();
        // The copy of standard input is gone.
        let leftover = std::fs::read_dir(std::env::temp_dir())
            .unwrap()
            .filter_map(|e| e.ok())
            .any(|e| {
                e.file_name()
                    .to_string_lossy()
                    .starts_with(&format!(".fdr-stdin-{pid}-"))
            });
        assert!(!leftover, "{args:?} left its copy of standard input");
        o
    };
    for cmd in [
        &["info"][..],
        &["dump", "--verify"],
        &["account", "--format", "json"],
        &["stack"],
        &["calls"],
        &["replay"],
        &["convert", "--format", "chrome", "-o", "-"],
        &["flame", "-o", "-"],
    ] {
        fn with<'a>(cmd: &[&'a str], l: &'a str) -> Vec<&'a str> {
            let mut a = cmd.to_vec();
            a.insert(1, l);
            a
        }
        let with = |l| with(cmd, l);
        let from_file = run(&with(&log), None);
        let from_stdin = run(&with("-"), Some(&bytes));
        assert!(from_stdin.status.success(), "{cmd:?}: {:?}", from_stdin);
        let a = String::from_utf8_lossy(&from_file.stdout).replace(&log, "-");
        let b = String::from_utf8_lossy(&from_stdin.stdout).into_owned();
        // info names the file and its size the same way.
        assert_eq!(a, b, "{cmd:?}");
    }
    let diff = run(&["diff", "-", &log], Some(&bytes));
    assert!(diff.status.success());
    let e = run(&["account", "-"], Some(b"not a log"));
    assert_eq!(e.status.code(), Some(1));
    let err = String::from_utf8_lossy(&e.stderr);
    assert!(err.starts_with("fdr: -: at byte offset "), "{err}");
    let e = run(&["diff", "-", "-"], Some(&bytes));
    assert_eq!(e.status.code(), Some(2));
}

#[test]
fn a_log_that_is_a_pipe_is_read_once_like_standard_input() {
    use std::os::unix::ffi::OsStrExt;
    let dir = temp_dir("pipe-in");
    let log = write_log(&dir, "basic.fdr", &basic_log());
    let fifo = dir.join("log.pipe");
    let c = std::ffi::CString::new(fifo.as_os_str().as_bytes()).unwrap();
    // SAFETY: `c` is a valid NUL-terminated path that outlives the call.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let bytes = std::fs::read(&log).unwrap();
    let writer = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::write(fifo, bytes).unwrap())
    };
    // `stack` reads the log twice: from the copy.
    let got = common::fdr(&["stack", fifo.to_str().unwrap()]).unwrap();
    writer.join().unwrap();
    assert_eq!(got, common::fdr(&["stack", &log]).unwrap());
}
