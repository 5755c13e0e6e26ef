//! Writing copied buffers out as one self-describing log.
//!
//! The file is an XRay FDR version 5 log: the 32-byte header, then the leading block whose custom
//! events carry fdr's run record, the function table and the thread list (`fdr_format::lead`),
//! then one block per copied buffer, each thread's in time order. `docs/FORMAT.md` has the
//! details.

use std::io::{self, Write};
use std::sync::atomic::Ordering;

use fdr_format::{lead_block, Extension, FileHeader, LeadStart, ReasonInfo, ThreadInfo};

use crate::buffer_copy::{self, Copied};
use crate::session::Session;
use crate::{age_cut, clock, function_table};

/// What the log says about the moment it was taken.
pub(crate) struct Facts {
    pub snapshot: bool,
    pub end_tsc: u64,
    /// The counter's frequency the log's times are read with.
    pub ticks_per_second: u64,
    pub reason: ReasonInfo,
}

/// Copies the session's buffers (the window by age applied) and writes them as a log.
pub(crate) fn write_session<W: Write + ?Sized>(
    out: &mut W,
    session: &Session,
    snapshot: bool,
    mut reason: ReasonInfo,
) -> io::Result<()> {
    let mut copied = buffer_copy::copy_pool(session.pool());
    let end_tsc = clock::now().0;
    // Read once: before the calibration window has passed, each reading is a new measurement.
    let ticks_per_second = session.ticks_per_second();
    if let Some(age) = session.setup().config.get_max_age() {
        let ticks = (age.as_nanos() * u128::from(ticks_per_second) / 1_000_000_000)
            .min(u128::from(u64::MAX)) as u64;
        age_cut::keep_newer(&mut copied, end_tsc.saturating_sub(ticks));
    }
    reason.suppressed = session.triggers().suppressed.load(Ordering::Relaxed);
    let facts = Facts {
        snapshot,
        end_tsc,
        ticks_per_second,
        reason,
    };
    write_log(out, session, &copied, facts)
}

/// Writes the whole log.
fn write_log<W: Write + ?Sized>(
    out: &mut W,
    session: &Session,
    copied: &Copied,
    facts: Facts,
) -> io::Result<()> {
    let mut out = io::BufWriter::with_capacity(1 << 16, out);
    let cal = &session.setup().calibration;
    let header = FileHeader {
        constant_tsc: true,
        nonstop_tsc: cal.source.is_counter(),
        cycle_frequency: facts.ticks_per_second,
        buffer_size: session.setup().buffer_size as u64,
        ..FileHeader::default()
    };
    out.write_all(&header.encode())?;

    let threads = session.threads().threads();
    let mut run = session.setup().run_info(facts.ticks_per_second);
    run.end_tsc = facts.end_tsc;
    run.snapshot = facts.snapshot;
    run.records_dropped = session.threads().dropped_total();
    run.buffers_recycled = session.pool().recycled.load(Ordering::Relaxed);
    run.buffers_missed = copied.missed;
    run.args_dropped = session.counters().args_dropped();
    run.calls_unattached = session.counters().unattached();
    run.calls_erased = session.pool().erased_total();
    run.probes = session.counters().probes();
    let mut records = vec![
        Extension::Run(run),
        Extension::Reason(facts.reason),
        Extension::Options(session.setup().config.to_options()),
    ];
    records.extend(function_table::records());
    for t in threads {
        records.push(Extension::Thread(ThreadInfo {
            tid: t.tid,
            name: t.name,
            records_dropped: t.dropped,
        }));
    }
    let start = LeadStart {
        tid: copied.blocks.first().map_or(0, |b| b.tid),
        pid: session.setup().pid,
        start_secs: session.setup().start_wall.0,
        start_nanos: session.setup().start_wall.1,
        start_tsc: session.setup().start_tsc,
    };
    out.write_all(&lead_block(&start, &records))?;
    let blocks: Vec<_> = copied.blocks.iter().map(|b| le_bytes(&b.words)).collect();
    write_all_vectored(&mut out, &blocks)?;
    out.flush()
}

/// Writes `parts` in as few system calls as the writer takes (`writev` for a file): one
/// `write` per 64 KiB block took twice as long as the copy itself.
fn write_all_vectored<W: Write + ?Sized>(
    out: &mut W,
    parts: &[std::borrow::Cow<'_, [u8]>],
) -> io::Result<()> {
    // Past this many slices a `writev` fails (IOV_MAX is 1024 on Linux).
    const MAX_SLICES: usize = 1024;
    let mut at = 0;
    let mut offset = 0;
    while at < parts.len() {
        if offset == parts[at].len() {
            at += 1;
            offset = 0;
            continue;
        }
        let end = (at + MAX_SLICES).min(parts.len());
        let mut slices: Vec<io::IoSlice<'_>> = Vec::with_capacity(end - at);
        slices.push(io::IoSlice::new(&parts[at][offset..]));
        slices.extend(parts[at + 1..end].iter().map(|p| io::IoSlice::new(p)));
        let mut n = match out.write_vectored(&slices) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        // Step over what was written: whole parts, then into the next one.
        while at < parts.len() && n >= parts[at].len() - offset {
            n -= parts[at].len() - offset;
            at += 1;
            offset = 0;
        }
        offset += n;
    }
    Ok(())
}

/// A block's words as the log's little-endian bytes, in one piece (a write per word made
/// snapshots three times slower).
fn le_bytes(words: &[u64]) -> std::borrow::Cow<'_, [u8]> {
    if cfg!(target_endian = "little") {
        // SAFETY: `u64` has no padding and every byte pattern is a valid `u8`; the slice covers
        // exactly the words' memory, and on a little-endian target that memory already is the
        // log's byte order.
        std::borrow::Cow::Borrowed(unsafe {
            std::slice::from_raw_parts(words.as_ptr().cast::<u8>(), std::mem::size_of_val(words))
        })
    } else {
        std::borrow::Cow::Owned(words.iter().flat_map(|w| w.to_le_bytes()).collect())
    }
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;
    use std::io::{self, Write};

    use super::write_all_vectored;

    /// Takes at most `max` bytes per call, of as many slices as that spans, and is interrupted
    /// every third call.
    struct Trickle {
        got: Vec<u8>,
        max: usize,
        calls: usize,
    }

    impl Write for Trickle {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.write_vectored(&[io::IoSlice::new(buf)])
        }
        fn write_vectored(&mut self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
            self.calls += 1;
            if self.calls % 3 == 0 {
                return Err(io::ErrorKind::Interrupted.into());
            }
            let mut n = 0;
            for b in bufs {
                let take = b.len().min(self.max - n);
                self.got.extend_from_slice(&b[..take]);
                n += take;
                if n == self.max {
                    break;
                }
            }
            Ok(n)
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    #[cfg_attr(miri, ignore = "safe code only, and eight minutes under Miri")]
    fn partial_vectored_writes_write_every_byte_once_in_order() {
        let parts: Vec<Vec<u8>> = (0..300u32)
            .map(|i| (0..(i % 37) as u8).map(|b| b ^ i as u8).collect())
            .collect();
        let want: Vec<u8> = parts.concat();
        for max in [1, 7, 64, 1 << 20] {
            let mut out = Trickle {
                got: Vec::new(),
                max,
                calls: 0,
            };
            let cows: Vec<Cow<'_, [u8]>> = parts.iter().map(|p| Cow::Borrowed(&p[..])).collect();
            write_all_vectored(&mut out, &cows).unwrap();
            assert_eq!(out.got, want, "at most {max} bytes per call");
        }
    }

    #[test]
    fn a_writer_that_takes_nothing_is_an_error() {
        struct Full;
        impl Write for Full {
            fn write(&mut self, _: &[u8]) -> io::Result<usize> {
                Ok(0)
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let err = write_all_vectored(&mut Full, &[Cow::Borrowed(&b"abc"[..])]).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::WriteZero);
    }
}
