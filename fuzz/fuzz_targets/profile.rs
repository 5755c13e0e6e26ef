//! Feeds arbitrary bytes to the profile decoder (`fdr_format::profile`) and, when they decode,
//! to everything `fdr profile` and `fdr flame` compute from a profile: every view (per
//! function, tree, callers and callees; merged and per thread) in text and JSON, the pprof
//! export (plain and gzipped) and the flame graph's lines. Any panic, overflow or unbounded
//! allocation is a bug; decoding errors are the expected outcome. `scripts/fuzz` runs it.

#![no_main]

use libfuzzer_sys::fuzz_target;

#[allow(dead_code)]
#[path = "../../fdr-cli/tests/common/fuzz_check.rs"]
mod fuzz_check;

fuzz_target!(|data: &[u8]| {
    for text in fdr_cli::fuzz::profile(data) {
        if let Some(c) = text.chars().find(|&c| fuzz_check::acts(c, false)) {
            panic!("raw U+{:04X} in a report", c as u32);
        }
    }
});
