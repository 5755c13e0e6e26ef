//! Feeds arbitrary bytes to the profile decoder (`fdr_format::profile`) and, when they decode,
//! to everything `fdr profile` and `fdr flame` compute from a profile: every view (per
//! function, tree, callers and callees; merged and per thread) in text and JSON, the pprof
//! export (plain and gzipped) and the flame graph's lines. Any panic, overflow or unbounded
//! allocation is a bug; decoding errors are the expected outcome. `scripts/fuzz` runs it.

#![no_main]

use fdr_cli::commands::flame::profile_drawing;
use fdr_cli::commands::profile::{report, Options, View};
use fdr_cli::render;
use fdr_format::profile::Profile;
use libfuzzer_sys::fuzz_target;

// Only its check of characters a terminal acts on is used here.
#[allow(dead_code)]
#[path = "../../fdr-cli/tests/common/fuzz_check.rs"]
mod fuzz_check;

fuzz_target!(|data: &[u8]| {
    let Ok(p) = Profile::decode(data) else {
        return;
    };
    for view in [View::Functions, View::Tree, View::Function("*".into())] {
        for threads in [false, true] {
            let opts = Options {
                view: view.clone(),
                threads,
                min_ns: (data.len() % 3 == 0).then_some(100),
                ..Options::default()
            };
            let r = match report(&p, "fuzz", &opts) {
                Ok(r) => r,
                Err(e) => {
                    // Only a pattern can fail: a profile without calls has no function to match.
                    assert!(matches!(opts.view, View::Function(_)), "{e}");
                    continue;
                }
            };
            for format in [render::profile::Format::Text, render::profile::Format::Json] {
                let mut out = Vec::new();
                render::profile::write(&r, format, &mut out).expect("write to memory");
                let text = std::str::from_utf8(&out).expect("the report is UTF-8");
                if let Some(c) = text.chars().find(|&c| fuzz_check::acts(c, false)) {
                    panic!("{view:?} {format:?}: raw U+{:04X} in the output", c as u32);
                }
                // (Trees nest deeper than serde_json's default recursion limit allows.)
                if format == render::profile::Format::Json && view != View::Tree {
                    serde_json::from_str::<serde_json::Value>(text)
                        .unwrap_or_else(|e| panic!("{view:?}: invalid JSON: {e}"));
                }
            }
        }
    }
    for (threads, gzip) in [(false, true), (true, false)] {
        let mut out = Vec::new();
        if let Err(e) = render::pprof::write(&p, threads, gzip, &mut out, "fuzz") {
            assert!(e.to_string().contains("frames"), "{e}");
        }
    }
    if let Ok(d) = profile_drawing("fuzz", &p) {
        assert!(!d.lines.is_empty());
    }
});
