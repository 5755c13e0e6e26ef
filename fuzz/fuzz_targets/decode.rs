//! Feeds arbitrary bytes to every layer of the reader: raw records with the block grammar,
//! one-pass accounting, and the two-pass replay behind `stack`, `convert` and `flame`. Any
//! panic, overflow or unbounded allocation is a bug; errors are the expected outcome.
//!
//! ```text
//! cargo install cargo-fuzz
//! cd fuzz && cargo +nightly fuzz run decode -- -max_len=4096
//! ```
//!
//! Seeds: `cargo run -p fdr-cli --example genlog -- fuzz/corpus/decode/seed.fdr 200 2`.

#![no_main]

use fdr_cli::account::{Account, SortKey};
use fdr_cli::calls::{plan_decoder, replay_decoder};
use fdr_cli::names::Names;
use fdr_cli::progress::Progress;
use fdr_cli::stack::Trie;
use fdr_cli::units::Clock;
use fdr_format::events::EventDecoder;
use fdr_format::reader::Reader;
use fdr_format::verify::BlockVerifier;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(mut r) = Reader::new(data) {
        let mut v = BlockVerifier::new();
        while let Ok(Some((at, rec))) = r.next_record() {
            if v.record(at, &rec).is_err() {
                break;
            }
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
            let _ = fdr_cli::account::write(
                &rows,
                fdr_cli::account::Format::Json,
                &mut std::io::sink(),
            );
        }
    }
    if let Ok(dec) = EventDecoder::new(data) {
        if let Ok(plan) = plan_decoder(dec, "fuzz", &hidden) {
            let mut trie = Trie::default();
            if let Ok(dec) = EventDecoder::new(data) {
                if replay_decoder(dec, "fuzz", &mut trie, Some(&plan), &hidden, 1).is_ok() {
                    let names = Names::new(&plan.info);
                    let _ = trie.folded(&names, &Clock::new(plan.info.header.cycle_frequency));
                }
            }
        }
    }
});
