//! What the `commands` fuzz target checks of every `fdr` command on one input: no panic, no
//! usage error, and outputs that are what they claim to be (text with nothing a terminal would
//! act on, Chrome and account JSON that parse, an FXT stream of whole words starting with its
//! magic record); errors just as clean. The fuzz target (`fuzz/fuzz_targets/commands.rs`)
//! includes this file by path, and `tests/fuzz_regressions.rs` runs its findings through it.

use std::ffi::OsString;
use std::path::Path;

/// The commands, the log path going after the subcommand.
pub const COMMANDS: &[&[&str]] = &[
    &["info"],
    &["dump", "--verify"],
    &["account"],
    &["account", "--format", "csv", "--sort", "p99"],
    &["account", "--format", "json", "--threads", "2"],
    &["stack"],
    &["stack", "--format", "folded"],
    &["convert", "--format", "chrome", "-o", "-"],
    &["convert", "--format", "fxt", "-o", "-"],
    &["flame", "-o", "-"],
    &["flame", "--chart", "-o", "-"],
    &["calls"],
    &["calls", "--format", "json", "--depth", "3"],
    &["replay"],
    // The tasks and their links are listed when a function is chosen.
    &["calls", "--function", "*"],
    // Tasks as trees, in JSON; waits by await site.
    &[
        "calls",
        "--format",
        "json",
        "--function",
        "*",
        "--threads",
        "2",
    ],
    &["account", "--by", "await", "--format", "json"],
    // The trigger's call (or a crash's open calls; else the error that names no call), and a
    // function's slowest calls and tasks, in JSON.
    &["explain"],
    &[
        "explain",
        "--function",
        "*",
        "--top",
        "4",
        "--format",
        "json",
    ],
    &["account", "--by", "await"],
    &["dump"],
    &[
        "account",
        "--format",
        "json",
        "--function",
        "*",
        "--min",
        "10ns",
    ],
    &["stack", "--from", "1us", "--to", "1ms", "--thread", "1"],
    &["diff"],
    // A log is refused, a profile (FDRPROF) read; nested tree JSON is left to the `profile`
    // target (it may nest deeper than the JSON parser's recursion limit).
    &["profile"],
    &["profile", "--tree", "--threads"],
    &["profile", "--format", "json", "--function", "*"],
    // A crash box is recovered (its log to a device, so nothing is created, the box kept); a
    // log or a profile is refused.
    &["recover", "--keep", "-o", "/dev/null"],
];

/// Characters a terminal acts on: C0 and C1 controls, DEL, bidirectional controls, line and
/// paragraph separators. Text outputs may hold newlines (and SVG tabs and carriage returns).
pub fn acts(c: char, svg: bool) -> bool {
    let allowed = c == '\n' || (svg && (c == '\t' || c == '\r'));
    (c.is_control() && !allowed)
        || matches!(
            c,
            '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{2028}' | '\u{2029}'
                | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
        )
}

/// Runs every command of [`COMMANDS`] on the log at `path` and checks what comes out.
pub fn every_command_is_clean(path: &Path) {
    for cmd in COMMANDS {
        let mut args: Vec<OsString> = cmd.iter().map(OsString::from).collect();
        args.insert(1, path.as_os_str().to_os_string());
        if cmd[0] == "diff" {
            args.insert(1, path.as_os_str().to_os_string());
        }
        let mut out = Vec::new();
        match fdr_cli::run(&args, &mut out) {
            Err(e) => {
                assert_eq!(e.exit_code(), 1, "{cmd:?}: {e}");
                let msg = e.to_string();
                assert!(
                    !msg.chars().any(|c| acts(c, false)),
                    "{cmd:?}: raw control in {msg:?}"
                );
            }
            Ok(()) => {
                let chrome = cmd.contains(&"chrome");
                let json = cmd.contains(&"json");
                // (calls --format json and account --format json both parse as JSON below.)
                if cmd.contains(&"fxt") {
                    assert_eq!(out.len() % 8, 0, "FXT is whole words");
                    assert_eq!(out[..8], 0x0016_5478_4604_0010u64.to_le_bytes());
                    continue;
                }
                let text = std::str::from_utf8(&out).expect("text output is UTF-8");
                let svg = cmd[0] == "flame";
                // An SVG's script and style come first and never change: names start at the
                // title.
                let names = match text.find("id=\"title\"") {
                    Some(at) if svg => &text[at..],
                    _ => text,
                };
                if let Some(c) = names.chars().find(|&c| acts(c, svg)) {
                    panic!("{cmd:?}: raw U+{:04X} in the output", c as u32);
                }
                if chrome || json {
                    serde_json::from_str::<serde_json::Value>(text)
                        .unwrap_or_else(|e| panic!("{cmd:?}: invalid JSON: {e}"));
                }
            }
        }
    }
}
