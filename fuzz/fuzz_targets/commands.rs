//! Runs every `fdr` command on arbitrary bytes written to a file, exactly as the command line
//! does (`fdr_cli::run`), and checks what comes out: no panic, no usage error, and outputs that
//! are what they claim to be: text with nothing a terminal would act on, Chrome and account
//! JSON that parse, an FXT stream of whole words starting with its magic record. Errors (the
//! expected outcome for most inputs) must be just as clean. `scripts/fuzz` runs it with seeds.

#![no_main]

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;

/// The commands, the log path going after the subcommand.
const COMMANDS: &[&[&str]] = &[
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
];

/// Characters a terminal acts on: C0 and C1 controls, DEL, bidirectional controls, line and
/// paragraph separators. Text outputs may hold newlines (and SVG tabs and carriage returns).
fn acts(c: char, svg: bool) -> bool {
    let allowed = c == '\n' || (svg && (c == '\t' || c == '\r'));
    (c.is_control() && !allowed)
        || matches!(
            c,
            '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{2028}' | '\u{2029}'
                | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
        )
}

fn log_path() -> &'static PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| std::env::temp_dir().join(format!("fdr-fuzz-{}.fdr", std::process::id())))
}

fuzz_target!(|data: &[u8]| {
    let path = log_path();
    std::fs::write(path, data).expect("write the input");
    for cmd in COMMANDS {
        let mut args: Vec<OsString> = cmd.iter().map(OsString::from).collect();
        args.insert(1, path.clone().into_os_string());
        if cmd[0] == "diff" {
            args.insert(1, path.clone().into_os_string());
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
});
