//! Feeds arbitrary bytes to every layer of the reader, in memory: raw records with the block
//! grammar and the backwards-time check, the event decoder in shares, one-pass accounting, and
//! the two-pass replay behind `stack`, `convert` and `flame`, and a window's calls in one pass
//! and in two, which must be the same. Any panic, overflow or unbounded allocation is a bug;
//! errors are the expected outcome. `scripts/fuzz` runs it with seeds.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    fdr_cli::fuzz::decode(data);
});
