//! The entry points of the fuzz targets (`fuzz/`, run by `scripts/fuzz`), built only with the
//! `fuzzing` feature: arbitrary bytes through every layer of the reader and every analysis, in
//! memory, with the checks that must hold whatever the input. Any panic is a finding; errors
//! are the expected outcome. Not part of the `fdr` command's interface.

use fdr_format::events::EventDecoder;
use fdr_format::first_pass::window_stacks;
use fdr_format::profile::Profile;
use fdr_format::reader::Reader;
use fdr_format::verify::{BlockVerifier, TimeCheck};
use fdr_format::window::{calls_with, WindowLimits};

use crate::commands::account::{Account, SortKey};
use crate::commands::flame::{graph_lines, profile_drawing, Chart, FlameLimits};
use crate::commands::info::box_summary;
use crate::commands::profile::{report, ProfileOptions, View};
use crate::model::engine::{replay_decoder, Silent};
use crate::model::names::Names;
use crate::model::pass::plan_decoder;
use crate::model::trie::Trie;
use crate::render;
use crate::units::TickRate;

/// A log's bytes through the raw reader with the block grammar and the backwards-time check,
/// the event decoder in shares, one-pass accounting, the two-pass replay behind `stack`,
/// `convert` and `flame` (with limits small enough for short inputs to reach the merged and
/// elided paths), and a window's calls, whose callers come first.
pub fn decode(data: &[u8]) {
    if let Ok(mut r) = Reader::new(data) {
        let mut v = BlockVerifier::new();
        let mut time = TimeCheck::default();
        while let Ok(Some((at, rec))) = r.next_record() {
            if let Some(b) = time.record(&rec) {
                assert!(b.to < b.from);
            }
            if v.record(at, &rec).is_err() {
                break;
            }
        }
    }
    for k in 0..2 {
        if let Ok(mut dec) = EventDecoder::new(data) {
            dec.share(2, k);
            while let Ok(Some(_)) = dec.next_event() {}
        }
    }
    if let Ok(dec) = EventDecoder::new(data) {
        let mut acc = Account::default();
        if let Ok(d) = replay_decoder(dec, "fuzz", &mut acc, None, &Silent, 0) {
            let names = Names::new(&d.info);
            let clock = TickRate::new(d.info.header.cycle_frequency);
            let rows = acc.rows(&names, &clock, SortKey::Total, None);
            let _ = render::account::write(
                &rows,
                render::account::AccountFormat::Json,
                &mut std::io::sink(),
            );
        }
    }
    let Ok(dec) = EventDecoder::new(data) else {
        return;
    };
    let Ok(plan) = plan_decoder(dec, "fuzz", &Silent) else {
        return;
    };
    let names = Names::new(&plan.info);
    let clock = TickRate::new(plan.info.header.cycle_frequency);
    let tiny = FlameLimits {
        frames: 64,
        bytes: 4096,
        depth: 4,
    };
    let mut trie = Trie::with_limits(64, 4);
    if let Ok(dec) = EventDecoder::new(data) {
        if replay_decoder(dec, "fuzz", &mut trie, Some(&plan), &Silent, 1).is_ok() {
            let folded = trie.folded(&names, &clock);
            let mut notes = Vec::new();
            let lines = graph_lines(&trie, &names, &clock, tiny, &mut notes);
            let sum = |lines: &[String]| -> u64 {
                lines
                    .iter()
                    .map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap())
                    .fold(0, u64::saturating_add)
            };
            assert_eq!(
                sum(&lines),
                sum(&folded),
                "the graph keeps every nanosecond"
            );
            let frames: usize = lines.iter().map(|l| l.matches(';').count() + 1).sum();
            assert!(frames <= tiny.frames, "{frames} frames");
        }
    }
    // A window's calls, as `fdr export` and the runtime's exporter take them: the plan's first
    // pass is theirs, each caller comes before its callees on their thread, and the calls open
    // when a window started are under all the others.
    let small = WindowLimits {
        calls: 1 << 16,
        arg_values: 1 << 16,
    };
    if let Ok(w) = calls_with(data, &small) {
        let stacks = window_stacks(&mut EventDecoder::new(data).expect("read once"));
        assert_eq!(stacks.as_ref().ok(), Some(&plan.initial));
        for (i, c) in w.calls.iter().enumerate() {
            if let Some(p) = c.parent {
                let p = &w.calls[p];
                assert!(
                    c.parent < Some(i) && p.thread == c.thread,
                    "{c:?} under {p:?}"
                );
                assert!(!c.inferred_start || p.inferred_start, "{c:?} under {p:?}");
            }
        }
    }
    let mut chart = Chart::new(tiny);
    if let Ok(dec) = EventDecoder::new(data) {
        if replay_decoder(dec, "fuzz", &mut chart, Some(&plan), &Silent, 1).is_ok() {
            let tids: Vec<i32> = plan.threads.iter().map(|t| t.tid).collect();
            let mut notes = Vec::new();
            if let Ok(lines) = chart.lines(&names, &clock, &tids, &mut notes) {
                let bytes: usize = lines.iter().map(|l| l.len() + 1).sum();
                assert!(bytes <= tiny.bytes, "{bytes} bytes");
            }
        }
    }
}

/// A profile's bytes through every report `fdr profile` makes (text and JSON, by function, as
/// a tree and around every function, with threads or merged), pprof (gzipped or not) and the
/// flame graph. Returns the text reports, for the caller to check what a terminal would do
/// with them; checks here that the JSON ones parse.
pub fn profile(data: &[u8]) -> Vec<String> {
    let mut texts = Vec::new();
    let Ok(p) = Profile::decode(data) else {
        return texts;
    };
    for view in [View::Functions, View::Tree, View::Function("*".into())] {
        for threads in [false, true] {
            let opts = ProfileOptions {
                view: view.clone(),
                threads,
                min_ns: (data.len() % 3 == 0).then_some(100),
                ..ProfileOptions::default()
            };
            let r = match report(&p, "fuzz", &opts) {
                Ok(r) => r,
                Err(e) => {
                    assert!(matches!(opts.view, View::Function(_)), "{e}");
                    continue;
                }
            };
            for format in [
                render::profile::ProfileFormat::Text,
                render::profile::ProfileFormat::Json,
            ] {
                let mut out = Vec::new();
                render::profile::write(&r, format, &mut out).expect("write to memory");
                let text = String::from_utf8(out).expect("the report is UTF-8");
                if format == render::profile::ProfileFormat::Json && view != View::Tree {
                    serde_json::from_str::<serde_json::Value>(&text)
                        .unwrap_or_else(|e| panic!("{view:?}: invalid JSON: {e}"));
                }
                texts.push(text);
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
    texts
}

/// A crash box's bytes as `fdr info` summarizes and prints it; the caller has checked that it
/// recovers.
pub fn crash_box(data: &[u8]) {
    let s = box_summary("fuzz.box", data, None, &Silent).expect("it recovered once");
    render::info::write_box(&s, &mut std::io::sink()).expect("written to a sink");
}
