//! Runs every `fdr` command on arbitrary bytes written to a file, exactly as the command line
//! does (`fdr_cli::run`), and checks what comes out: no panic, no usage error, and outputs that
//! are what they claim to be: text with nothing a terminal would act on, Chrome and account
//! JSON that parse, an FXT stream of whole words starting with its magic record. Errors (the
//! expected outcome for most inputs) must be just as clean. `scripts/fuzz` runs it with seeds.

#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;

#[path = "../../fdr-cli/tests/common/fuzz_check.rs"]
mod fuzz_check;

fn log_path() -> &'static PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| std::env::temp_dir().join(format!("fdr-fuzz-{}.fdr", std::process::id())))
}

fuzz_target!(|data: &[u8]| {
    let path = log_path();
    std::fs::write(path, data).expect("write the input");
    fuzz_check::every_command_is_clean(path);
});
