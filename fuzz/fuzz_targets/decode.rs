//! Feeds arbitrary bytes to every layer of the reader, in memory: raw records with the block
//! grammar and the backwards-time check, the event decoder in shares, one-pass accounting, and
//! the two-pass replay behind `stack`, `convert` and `flame`, and a window's calls in one pass
//! and in two, which must be the same. Any panic, overflow or unbounded allocation is a bug;
//! errors are the expected outcome. `scripts/fuzz` runs it with seeds.

#![no_main]

use fdr_cli::commands::account::{Account, SortKey};
use fdr_cli::model::pass::plan_decoder;
use fdr_cli::model::replay::replay_decoder;
use fdr_cli::commands::flame::{Chart, Limits, graph_lines};
use fdr_cli::model::names::Names;
use fdr_cli::progress::Progress;
use fdr_cli::model::trie::Trie;
use fdr_cli::units::Clock;
use fdr_format::events::EventDecoder;
use fdr_format::reader::Reader;
use fdr_format::verify::{BlockVerifier, TimeCheck};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
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
    let hidden = Progress::hidden();
    if let Ok(dec) = EventDecoder::new(data) {
        let mut acc = Account::default();
        if let Ok(d) = replay_decoder(dec, "fuzz", &mut acc, None, &hidden, 0) {
            let names = Names::new(&d.info);
            let rows = acc.rows(
                &names,
                &Clock::new(d.info.header.cycle_frequency),
                SortKey::Total,
                None,
            );
            let _ = fdr_cli::render::account::write(
                &rows,
                fdr_cli::render::account::Format::Json,
                &mut std::io::sink(),
            );
        }
    }
    let Ok(dec) = EventDecoder::new(data) else {
        return;
    };
    let Ok(plan) = plan_decoder(dec, "fuzz", &hidden) else {
        return;
    };
    let names = Names::new(&plan.info);
    let clock = Clock::new(plan.info.header.cycle_frequency);
    let tiny = Limits {
        frames: 64,
        bytes: 4096,
        depth: 4,
    };
    // Small limits, so that short inputs reach the merged and elided paths.
    let mut trie = Trie::with_limits(64, 4);
    if let Ok(dec) = EventDecoder::new(data) {
        if replay_decoder(dec, "fuzz", &mut trie, Some(&plan), &hidden, 1).is_ok() {
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
    // The one engine, run both ways: the same calls (or the same refusal, which the plan
    // already met when it is the log's).
    let small = fdr_format::window::Limits { calls: 1 << 16, arg_values: 1 << 16 };
    if let Ok(one) = fdr_format::window::calls_with(data, &small) {
        let mut dec = EventDecoder::new(data).unwrap();
        let mut c = fdr_format::window::Collector::planned(small);
        let how = fdr_format::replay::Replay { initial: &plan.initial, ..Default::default() };
        let read = fdr_format::replay::replay(&mut dec, &mut c, &how);
        assert!(read.is_ok(), "one pass read it, two did not: {read:?}");
        let two = c.finish(dec.info(), dec.threads()).expect("one pass finished it");
        assert_eq!(one.calls, two.calls);
        assert_eq!(one.tasks, two.tasks);
    }
    let mut chart = Chart::new(tiny);
    if let Ok(dec) = EventDecoder::new(data) {
        if replay_decoder(dec, "fuzz", &mut chart, Some(&plan), &hidden, 1).is_ok() {
            let tids: Vec<i32> = plan.threads.iter().map(|t| t.tid).collect();
            let mut notes = Vec::new();
            if let Ok(lines) = chart.lines(&names, &clock, &tids, &mut notes) {
                let bytes: usize = lines.iter().map(|l| l.len() + 1).sum();
                assert!(bytes <= tiny.bytes, "{bytes} bytes");
            }
        }
    }
});
