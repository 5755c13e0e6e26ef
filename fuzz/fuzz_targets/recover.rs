//! Feeds arbitrary bytes to the crash-box reader, in memory: what a box says
//! (`crash_box::read_info`), the box turned into a log (`crash_box::recover`), and, when that
//! succeeds, the log read back whole by the event decoder and summarised as `fdr info BOX`
//! prints it. Any panic, overflow or unbounded allocation is a bug, and so is a recovered log
//! that does not decode: `recover` promises a valid log. Errors are the expected outcome for
//! most inputs. `scripts/fuzz` runs it with seed boxes (`genlog --shape box`).

#![no_main]

use fdr_format::crash_box;
use fdr_format::events::EventDecoder;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let info = crash_box::read_info(data);
    let Ok(r) = crash_box::recover(data) else {
        return;
    };
    assert_eq!(
        info.as_ref().ok(),
        Some(&r.info),
        "recover reads what read_info reads"
    );
    let _ = crash_box::liveness(&r.info);
    let _ = r.info.death();
    let mut dec = EventDecoder::new(&r.log[..]).expect("a recovered log has a valid header");
    if let Err(e) = dec.for_each(|_, _| Ok::<(), fdr_format::FormatError>(())) {
        panic!("the log recovered from a box does not decode: {e}");
    }
    assert_eq!(
        dec.info().reason.as_ref().map(|x| x.reason),
        Some(fdr_format::Reason::Crash)
    );
    fdr_cli::fuzz::crash_box(data);
});
