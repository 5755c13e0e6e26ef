//! Writing copied buffers out as one self-describing log.
//!
//! The file is an XRay FDR version 5 log: the 32-byte header, then the leading block whose custom
//! events carry fdr's run record, the function table and the thread list (`fdr_format::lead`),
//! then one block per copied buffer, each thread's in time order. `docs/FORMAT.md` has the
//! details.

use std::io::{self, Write};

use fdr_format::lead_block;

use crate::output::log_parts::LogParts;

/// Writes `parts` as a whole log on `out`.
pub(crate) fn write<W: Write + ?Sized>(out: &mut W, parts: &LogParts) -> io::Result<()> {
    let mut out = io::BufWriter::with_capacity(1 << 16, out);
    out.write_all(&parts.header.encode())?;
    out.write_all(&lead_block(&parts.start, &parts.records))?;
    let blocks: Vec<_> = parts
        .copied
        .blocks
        .iter()
        .map(|b| le_bytes(&b.words))
        .collect();
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
