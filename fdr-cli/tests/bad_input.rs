//! Bad input never panics: every truncation of a small log, random bit flips, foreign headers
//! and huge length fields give an error naming the file and the byte offset, or (when the damage
//! happens to leave a valid log) a normal result.

mod common;

use common::{basic_log, fdr, temp_dir, write_log};
use proptest::prelude::*;

/// Every command on `path`; returns the errors.
fn all_commands(path: &str) -> Vec<(String, fdr_cli::CliError)> {
    commands(path, &ALL)
}

const ALL: [&[&str]; 18] = [
    &["info"],
    &["dump", "--verify"],
    &["account"],
    &["account", "--by", "await", "--threads", "2"],
    &["account", "--format", "json", "--threads", "3"],
    &["stack", "--format", "folded"],
    &["convert", "--format", "chrome", "-o", "-"],
    &["convert", "--format", "fxt", "-o", "-"],
    &["flame", "--chart", "-o", "-"],
    &["flame", "-o", "-"],
    &["calls", "--format", "json", "--threads", "2"],
    &["replay"],
    &["replay", "--task", "1"],
    &[
        "account",
        "--from",
        "1us",
        "--to",
        "8s",
        "--min",
        "60ns",
        "--function",
        "*p*",
    ],
    &["calls", "--thread", "main", "--min", "1ns"],
    &["view", "-o", "-"],
    &[
        "explain",
        "--function",
        "*",
        "--top",
        "3",
        "--format",
        "json",
    ],
    &["explain", "--function", "*p*", "--threads", "2"],
];

/// One command per way of reading: raw records and grammar, one pass, two passes.
const READERS: [&[&str]; 4] = [
    &["dump", "--verify"],
    &["account"],
    &["stack", "--format", "folded"],
    &["convert", "--format", "fxt", "-o", "-"],
];

fn commands(path: &str, cmds: &[&[&str]]) -> Vec<(String, fdr_cli::CliError)> {
    let mut errs = Vec::new();
    for c in cmds {
        let mut args = c.to_vec();
        args.insert(1, path);
        if let Err(e) = fdr(&args) {
            errs.push((c.join(" "), e));
        }
    }
    errs
}

fn assert_located(path: &str, errs: &[(String, fdr_cli::CliError)]) {
    for (cmd, e) in errs {
        let msg = e.to_string();
        let located = msg.starts_with(&format!("fdr: {path}: at byte offset "));
        let empty =
            cmd.starts_with("flame") && msg == format!("fdr: {path}: the log has no calls to draw");
        // A damaged thread table may name no thread "main" any more.
        let no_thread = cmd.contains("--thread")
            && msg.starts_with(&format!(
                "fdr: {path}: no thread with calls matches --thread main"
            ));
        // ... nor a function that --function matches.
        let no_function = cmd.contains("--function")
            && msg.starts_with(&format!(
                "fdr: {path}: no function in the log matches --function"
            ));
        // ... nor times that reach --from (a flipped timestamp shortens the window).
        let no_time = cmd.contains("--from")
            && msg.starts_with(&format!("fdr: {path}: nothing was recorded from --from "));
        assert!(
            located || empty || no_thread || no_function || no_time,
            "{cmd}: {msg}"
        );
        assert_eq!(e.exit_code(), 1);
    }
}

/// Offsets where a block ends in [`basic_log`]: a cut there leaves a valid, shorter log.
fn block_ends(log: &[u8]) -> Vec<usize> {
    let mut ends = vec![32];
    let mut at = 32;
    while at + 16 <= log.len() {
        let size = u64::from_le_bytes(log[at + 1..at + 9].try_into().unwrap()) as usize;
        at += 16 + size;
        ends.push(at);
    }
    ends
}

#[test]
fn every_truncation_is_an_error_with_its_offset_or_a_shorter_valid_log() {
    let log = basic_log();
    let ends = block_ends(&log);
    assert_eq!(ends.last(), Some(&log.len()));
    let dir = temp_dir("truncations");
    for n in 0..log.len() {
        let path = write_log(&dir, "cut.fdr", &log[..n]);
        let errs = commands(&path, &READERS);
        assert_located(&path, &errs);
        if ends.contains(&n) {
            assert!(errs.is_empty(), "cut at block end {n}: {errs:?}");
        } else {
            assert_eq!(
                errs.len(),
                READERS.len(),
                "cut at {n} must fail every command: {errs:?}"
            );
        }
    }
}

#[test]
fn foreign_headers_are_refused() {
    let dir = temp_dir("headers");
    for (at, value, expect) in [
        (0, 1u8, "expected XRay FDR log version 5, found version 1"),
        (0, 3, "expected XRay FDR log version 5, found version 3"),
        (
            2,
            0,
            "expected XRay log type 1 (flight data recorder), found 0",
        ),
    ] {
        let mut log = basic_log();
        log[at] = value;
        let path = write_log(&dir, "h.fdr", &log);
        let errs = all_commands(&path);
        assert_eq!(errs.len(), ALL.len());
        for (_, e) in &errs {
            assert!(e.to_string().contains(expect), "{e}");
        }
    }
    let mut log = basic_log();
    log[8..16].copy_from_slice(&0u64.to_le_bytes());
    let path = write_log(&dir, "f.fdr", &log);
    let e = fdr(&["account", &path]).unwrap_err();
    assert_eq!(e.to_string(), format!("fdr: {path}: at byte offset 8: the header's cycle frequency is 0, so no time can be computed"));
    let path = write_log(
        &dir,
        "elf.fdr",
        b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0\x03\0>\0\x01\0\0\0\x10\x10\0\0\0\0\0\0",
    );
    assert_eq!(all_commands(&path).len(), ALL.len());
}

#[test]
fn huge_length_fields_are_errors_not_allocations() {
    let dir = temp_dir("lengths");
    // The run record's custom event (at 112) claims 2 GiB of payload.
    let mut log = basic_log();
    log[113..117].copy_from_slice(&i32::MAX.to_le_bytes());
    let path = write_log(&dir, "ce.fdr", &log);
    let e = fdr(&["account", &path]).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!("fdr: {path}: at byte offset 112: custom event claims a payload of 2147483647 bytes; expected 0 to 1048576")
    );
    log[113..117].copy_from_slice(&(-5i32).to_le_bytes());
    let path = write_log(&dir, "neg.fdr", &log);
    assert!(fdr(&["info", &path])
        .unwrap_err()
        .to_string()
        .contains("claims a payload of -5 bytes"));

    // The first block's extents claim u64::MAX bytes.
    let mut log = basic_log();
    log[33..41].copy_from_slice(&u64::MAX.to_le_bytes());
    let path = write_log(&dir, "ext.fdr", &log);
    let errs = all_commands(&path);
    assert_eq!(errs.len(), ALL.len());
    for (_, e) in errs {
        assert_eq!(
            e.to_string(),
            format!(
                "fdr: {path}: at byte offset 807: a new block starts here but the previous block's \
                 extents promised {} more bytes",
                u64::MAX - (807 - 48)
            )
        );
    }

    // A function-table entry's name length (after magic, tag, id, line, kind) is u32::MAX.
    let mut log = basic_log();
    let name_len_at = 296 + 16 + 4 + 1 + 4 + 4 + 1;
    assert_eq!(
        u32::from_le_bytes(log[name_len_at..name_len_at + 4].try_into().unwrap()),
        9
    );
    log[name_len_at..name_len_at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
    let path = write_log(&dir, "name.fdr", &log);
    let e = fdr(&["stack", &path]).unwrap_err();
    assert!(
        e.to_string().starts_with(&format!(
            "fdr: {path}: at byte offset 296: malformed fdr record"
        )),
        "{e}"
    );
}

#[test]
fn deep_stacks_of_a_corrupt_log_are_refused() {
    use fdr_testkit::synth::LogBuilder;
    let mut log = LogBuilder::new(1000);
    let mut b = log.block(1, 0, 0);
    for i in 0..(fdr_format::limits::MAX_CALL_DEPTH as u64 + 1) {
        b.enter(1, i);
    }
    b.finish();
    let dir = temp_dir("deep");
    let path = write_log(&dir, "deep.fdr", &log.finish());
    let e = fdr(&["account", &path]).unwrap_err();
    assert!(
        e.to_string()
            .contains("calls are nested more than 1048576 deep"),
        "{e}"
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn random_bit_flips_never_panic(flips in prop::collection::vec((0usize..1263, 0u8..8), 1..8)) {
        let mut log = basic_log();
        for (at, bit) in flips {
            let at = at % log.len();
            log[at] ^= 1 << bit;
        }
        let dir = temp_dir("flips");
        let path = write_log(&dir, "f.fdr", &log);
        let errs = all_commands(&path);
        assert_located(&path, &errs);
    }

    #[test]
    fn random_bytes_after_a_valid_header_never_panic(body in prop::collection::vec(any::<u8>(), 0..600)) {
        let mut log = fdr_format::FileHeader::default().encode().to_vec();
        log.extend_from_slice(&body);
        let dir = temp_dir("random");
        let path = write_log(&dir, "r.fdr", &log);
        let errs = all_commands(&path);
        assert_located(&path, &errs);
    }
}
