//! Streaming decoder of raw records.
//!
//! [`Reader`] yields the records of a log one at a time, in file order, each with its byte
//! offset. It holds one window of the file in memory (64 KiB, growing to 1 MiB while the file
//! is larger, or to one record's size if a payload needs more), so a reader's memory does not
//! grow with the file. It checks what it must to stay in bounds (a payload may not run past its
//! block or past [`MAX_EVENT_PAYLOAD`]) and reports anything it cannot make sense of as a
//! [`FormatError`] naming the offset; it never panics on any input.

use std::io::{self, Read, Seek, SeekFrom};

use crate::limits::MAX_EVENT_PAYLOAD;
use crate::{
    decode_function_record, meta_bytes, FileHeader, FnKind, FormatError, MetaKind, MetaWords,
    FUNCTION_RECORD_SIZE, HEADER_SIZE, METADATA_RECORD_SIZE,
};

/// The largest window the reader keeps (bigger only to hold one large payload).
const WINDOW: usize = 1 << 20;
/// The window a reader starts with: small logs never pay for a large one.
const FIRST_WINDOW: usize = 64 << 10;

/// One record as stored in the file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Record<'a> {
    /// A function record: id, kind and timestamp delta from the previous record.
    Function {
        /// 28-bit function id.
        id: u32,
        /// Enter, exit, tail exit or enter-with-arguments.
        kind: FnKind,
        /// Ticks since the previous record of the block.
        delta: u32,
    },
    /// Start of a thread's block.
    NewBuffer {
        /// Thread id.
        tid: i32,
    },
    /// End of a buffer (older log versions).
    EndOfBuffer,
    /// The thread moved to another CPU; the timestamp restarts from `tsc`.
    NewCpuId {
        /// CPU number.
        cpu: u16,
        /// Full timestamp.
        tsc: u64,
    },
    /// The timestamp restarts from `tsc` because a delta overflowed 32 bits.
    TscWrap {
        /// Full timestamp.
        tsc: u64,
    },
    /// Wall-clock time at the start of the block.
    Walltime {
        /// Seconds since the Unix epoch.
        secs: i64,
        /// Microseconds within the second.
        micros: i32,
    },
    /// A custom event and its payload.
    CustomEvent {
        /// Ticks since the previous record.
        delta: i32,
        /// The payload bytes.
        payload: &'a [u8],
    },
    /// One argument of the preceding enter-with-arguments record.
    CallArgument {
        /// The argument's 64 bits.
        value: u64,
    },
    /// How many bytes of the block follow this record.
    BufferExtents {
        /// Byte count.
        size: u64,
    },
    /// A typed event and its payload.
    TypedEvent {
        /// Ticks since the previous record.
        delta: i32,
        /// The event's type tag.
        event_type: u16,
        /// The payload bytes.
        payload: &'a [u8],
    },
    /// The process id.
    Pid {
        /// Process id.
        pid: i32,
    },
}

/// Reads the records of a log in order.
///
/// ```
/// use fdr_format::reader::{Reader, Record};
/// use fdr_format::{meta, meta_bytes, FileHeader, function_record, FnKind};
/// let mut file = FileHeader::default().encode().to_vec();
/// file.extend_from_slice(&meta_bytes(meta::buffer_extents(8)));
/// file.extend_from_slice(&function_record(1, FnKind::Enter, 5).to_le_bytes());
/// let mut r = Reader::new(&file[..]).unwrap();
/// assert_eq!(r.next_record().unwrap().unwrap().1, Record::BufferExtents { size: 8 });
/// assert_eq!(
///     r.next_record().unwrap().unwrap(),
///     (48, Record::Function { id: 1, kind: FnKind::Enter, delta: 5 })
/// );
/// assert!(r.next_record().unwrap().is_none());
/// ```
pub struct Reader<R> {
    inner: R,
    header: FileHeader,
    buf: Vec<u8>,
    /// Start of unread bytes in `buf`.
    pos: usize,
    /// End of valid bytes in `buf`.
    end: usize,
    /// File offset of `buf[pos]`.
    offset: u64,
    eof: bool,
    /// Bytes left in the current block according to its extents record, if any.
    block_left: Option<u64>,
    /// Offset of the current block's extents record.
    block_at: u64,
    /// Moves the input forward by that many bytes, for inputs that can seek.
    seek: Option<fn(&mut R, u64) -> io::Result<()>>,
    /// The input's length, for inputs that can seek.
    input_len: u64,
}

/// Seeks `r` forward by `n` bytes.
fn seek_forward<R: Seek>(r: &mut R, n: u64) -> io::Result<()> {
    let n = i64::try_from(n).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    r.seek(SeekFrom::Current(n)).map(|_| ())
}

impl<R: Read + Seek> Reader<R> {
    /// Reads and checks the file header of an input that can seek (a file): blocks skipped
    /// with [`Reader::skip_block`] are then seeked over instead of read.
    ///
    /// ```
    /// use fdr_format::reader::{Reader, Record};
    /// use fdr_format::{meta, meta_bytes, FileHeader};
    /// let mut file = FileHeader::default().encode().to_vec();
    /// for size in [100_000, 0] {
    ///     file.extend_from_slice(&meta_bytes(meta::buffer_extents(size)));
    ///     file.extend_from_slice(&vec![0xee; size as usize]);
    /// }
    /// let mut r = Reader::seekable(std::io::Cursor::new(&file)).unwrap();
    /// r.next_record().unwrap();
    /// r.skip_block().unwrap();
    /// assert_eq!(r.next_record().unwrap().unwrap(), (100_048, Record::BufferExtents { size: 0 }));
    /// ```
    pub fn seekable(mut inner: R) -> Result<Reader<R>, FormatError> {
        let failed = |e: io::Error| FormatError::new(0, format!("reading the log failed: {e}"));
        let at = inner.stream_position().map_err(failed)?;
        let len = inner.seek(SeekFrom::End(0)).map_err(failed)?;
        inner.seek(SeekFrom::Start(at)).map_err(failed)?;
        let mut r = Reader::new(inner)?;
        r.seek = Some(seek_forward::<R>);
        r.input_len = len.saturating_sub(at);
        Ok(r)
    }
}

impl<R: Read> Reader<R> {
    /// Reads and checks the file header.
    pub fn new(inner: R) -> Result<Reader<R>, FormatError> {
        let mut r = Reader {
            inner,
            header: FileHeader::default(),
            buf: vec![0; FIRST_WINDOW],
            pos: 0,
            end: 0,
            offset: 0,
            eof: false,
            block_left: None,
            block_at: 0,
            seek: None,
            input_len: 0,
        };
        let have = r.fill(HEADER_SIZE)?;
        r.header = FileHeader::decode(&r.buf[r.pos..r.pos + have])?;
        r.pos += HEADER_SIZE;
        r.offset = HEADER_SIZE as u64;
        Ok(r)
    }

    /// The file header.
    pub fn header(&self) -> &FileHeader {
        &self.header
    }

    /// Byte offset of the next record.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Bytes left in the current block, by its extents record (`None` before the first block).
    pub fn block_left(&self) -> Option<u64> {
        self.block_left
    }

    /// Makes at least `n` bytes available at `pos` unless the input ends first; returns how many
    /// are available (up to `n`).
    fn fill(&mut self, n: usize) -> Result<usize, FormatError> {
        if self.end - self.pos >= n {
            return Ok(n);
        }
        if self.pos > 0 {
            self.buf.copy_within(self.pos..self.end, 0);
            self.end -= self.pos;
            self.pos = 0;
        }
        if self.buf.len() < n {
            self.buf.resize(n, 0);
        }
        while self.end < n && !self.eof {
            match self.inner.read(&mut self.buf[self.end..]) {
                Ok(0) => self.eof = true,
                Ok(k) => self.end += k,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    return Err(FormatError::new(
                        self.offset + (self.end - self.pos) as u64,
                        format!("reading the log failed: {e}"),
                    ))
                }
            }
        }
        // The input filled the window: it is larger, so read more at a time from now on.
        if self.end == self.buf.len() && self.buf.len() < WINDOW {
            let grown = (self.buf.len() * 2).min(WINDOW);
            self.buf.resize(grown, 0);
        }
        Ok((self.end - self.pos).min(n))
    }

    fn truncated(&self, what: &str, need: usize, have: usize) -> FormatError {
        FormatError::new(
            self.offset,
            format!(
                "the file ends {have} bytes into a {need}-byte {what}; it was cut short \
                 (was it copied while still being written?)"
            ),
        )
    }

    /// The next record and its offset, `None` at the end of the file.
    pub fn next_record(&mut self) -> Result<Option<(u64, Record<'_>)>, FormatError> {
        if self.fill(1)? == 0 {
            return Ok(None);
        }
        let at = self.offset;
        let first = self.buf[self.pos];
        let rec = if first & 1 == 0 {
            self.function_record(at, first)?
        } else {
            self.metadata_record(at, first)?
        };
        Ok(Some((at, rec)))
    }

    /// The function record at `at`, whose first byte is `first`.
    fn function_record(&mut self, at: u64, first: u8) -> Result<Record<'_>, FormatError> {
        let have = self.fill(FUNCTION_RECORD_SIZE)?;
        if have < FUNCTION_RECORD_SIZE {
            return Err(self.truncated("function record", FUNCTION_RECORD_SIZE, have));
        }
        self.consume_block(FUNCTION_RECORD_SIZE as u64, "function record")?;
        let mut w = [0u8; 8];
        w.copy_from_slice(&self.buf[self.pos..self.pos + 8]);
        let word = u64::from_le_bytes(w);
        let Some((id, kind, delta)) = decode_function_record(word) else {
            return Err(FormatError::new(
                at,
                format!(
                    "function record with undefined kind {} (byte 0x{first:02x}); \
                     expected enter, exit, tail exit or enter-with-arguments",
                    (first >> 1) & 7
                ),
            ));
        };
        self.advance(FUNCTION_RECORD_SIZE);
        Ok(Record::Function { id, kind, delta })
    }

    /// The metadata record at `at`, whose first byte is `first`, with its payload if it is an
    /// event.
    fn metadata_record(&mut self, at: u64, first: u8) -> Result<Record<'_>, FormatError> {
        let have = self.fill(METADATA_RECORD_SIZE)?;
        if have < METADATA_RECORD_SIZE {
            return Err(self.truncated("metadata record", METADATA_RECORD_SIZE, have));
        }
        let Some(kind) = MetaKind::from_byte(first) else {
            return Err(FormatError::new(
                at,
                format!(
                    "metadata record of unknown kind {} (byte 0x{first:02x}); expected kinds 0 to 9",
                    first >> 1
                ),
            ));
        };
        let mut m = [0u8; 16];
        m.copy_from_slice(&self.buf[self.pos..self.pos + 16]);
        if kind == MetaKind::BufferExtents {
            return self.extents(at, u64_at(&m, 1));
        }
        self.consume_block(METADATA_RECORD_SIZE as u64, "metadata record")?;
        if let Some(rec) = simple_record(kind, &m) {
            self.advance(METADATA_RECORD_SIZE);
            return Ok(rec);
        }
        self.event(at, kind, &m)
    }

    /// The extents record at `at`, which opens a block of `size` bytes; it is not itself
    /// counted in any block.
    fn extents(&mut self, at: u64, size: u64) -> Result<Record<'_>, FormatError> {
        if let Some(left) = self.block_left {
            if left != 0 {
                return Err(FormatError::new(
                    at,
                    format!(
                        "a new block starts here but the previous block's extents promised \
                         {left} more bytes"
                    ),
                ));
            }
        }
        self.block_left = Some(size);
        self.block_at = at;
        self.advance(METADATA_RECORD_SIZE);
        Ok(Record::BufferExtents { size })
    }

    /// The custom or typed event at `at` (`kind`), whose first 16 bytes are `m`, with its
    /// payload: the length comes from the file, so it is bounded before it is used.
    fn event(&mut self, at: u64, kind: MetaKind, m: &[u8; 16]) -> Result<Record<'_>, FormatError> {
        let size = i32_at(m, 1);
        let delta = i32_at(m, 5);
        let event_type = u16_at(m, 9);
        let what = if kind == MetaKind::CustomEvent {
            "custom event"
        } else {
            "typed event"
        };
        if size < 0 || size as usize > MAX_EVENT_PAYLOAD {
            return Err(FormatError::new(
                at,
                format!(
                    "{what} claims a payload of {size} bytes; expected 0 to {MAX_EVENT_PAYLOAD}"
                ),
            ));
        }
        let size = size as usize;
        self.consume_block(size as u64, &format!("{what} payload"))?;
        let need = METADATA_RECORD_SIZE + size;
        let have = self.fill(need)?;
        if have < need {
            return Err(self.truncated(what, need, have));
        }
        let start = self.pos + METADATA_RECORD_SIZE;
        self.advance(need);
        let payload = &self.buf[start..start + size];
        Ok(if kind == MetaKind::CustomEvent {
            Record::CustomEvent { delta, payload }
        } else {
            Record::TypedEvent {
                delta,
                event_type,
                payload,
            }
        })
    }

    /// The unread bytes of the current block that are already in memory, reading more first if
    /// fewer than `min` are buffered; empty outside a block. It never goes past the block's
    /// extents. For callers that decode runs of records themselves: they must hand back what
    /// they used with [`Reader::consume`].
    ///
    /// ```
    /// use fdr_format::reader::Reader;
    /// use fdr_format::{meta, meta_bytes, FileHeader, function_record, FnKind};
    /// let mut file = FileHeader::default().encode().to_vec();
    /// file.extend_from_slice(&meta_bytes(meta::buffer_extents(8)));
    /// file.extend_from_slice(&function_record(1, FnKind::Enter, 5).to_le_bytes());
    /// file.extend_from_slice(&[0xff; 4]); // past the block: not offered
    /// let mut r = Reader::new(&file[..]).unwrap();
    /// r.next_record().unwrap();
    /// assert_eq!(r.block_bytes(8).unwrap().len(), 8);
    /// r.consume(8);
    /// assert_eq!(r.offset(), 56);
    /// assert!(r.block_bytes(8).unwrap().is_empty());
    /// ```
    pub fn block_bytes(&mut self, min: usize) -> Result<&[u8], FormatError> {
        let left = match self.block_left {
            Some(l) if l > 0 => l,
            _ => return Ok(&[]),
        };
        if self.end - self.pos < min {
            self.fill(min)?;
        }
        let avail = ((self.end - self.pos) as u64).min(left) as usize;
        Ok(&self.buf[self.pos..self.pos + avail])
    }

    /// Marks `n` bytes returned by [`Reader::block_bytes`] as read.
    ///
    /// # Panics
    ///
    /// If `n` is more than the last `block_bytes` returned.
    pub fn consume(&mut self, n: usize) {
        assert!(n <= self.end - self.pos, "consumed more than was buffered");
        if let Some(left) = self.block_left.as_mut() {
            assert!(n as u64 <= *left, "consumed past the block");
            *left -= n as u64;
        }
        self.advance(n);
    }

    /// Skips what is left of the current block without decoding it, for readers that share a
    /// log's blocks between them. Fails, like reading would, if the input ends first.
    ///
    /// ```
    /// use fdr_format::reader::{Reader, Record};
    /// use fdr_format::{meta, meta_bytes, FileHeader};
    /// let mut file = FileHeader::default().encode().to_vec();
    /// for size in [32, 0] {
    ///     file.extend_from_slice(&meta_bytes(meta::buffer_extents(size)));
    ///     file.extend_from_slice(&vec![0xee; size as usize]); // not valid records: never read
    /// }
    /// let mut r = Reader::new(&file[..]).unwrap();
    /// r.next_record().unwrap();
    /// r.skip_block().unwrap();
    /// assert_eq!(r.next_record().unwrap().unwrap(), (80, Record::BufferExtents { size: 0 }));
    /// ```
    pub fn skip_block(&mut self) -> Result<(), FormatError> {
        let Some(mut left) = self.block_left else {
            return Ok(());
        };
        let buffered = (self.end - self.pos) as u64;
        if let Some(seek) = self.seek.filter(|_| left > buffered && !self.eof) {
            // Past what is buffered: move the input instead of reading the bytes. A block that
            // runs past the end of the input is found when the next read comes up short.
            let past = left - buffered;
            let read = self.offset + buffered;
            if read.saturating_add(past) > self.input_len {
                let have = self.input_len.saturating_sub(self.offset);
                return Err(FormatError::new(
                    self.input_len,
                    format!(
                        "the file ends {} bytes before the end of the block whose extents \
                         record is at byte offset {}; it was cut short",
                        left - have,
                        self.block_at
                    ),
                ));
            }
            if let Err(e) = seek(&mut self.inner, past) {
                return Err(FormatError::new(
                    self.offset,
                    format!("skipping a block of the log failed: {e}"),
                ));
            }
            self.pos = self.end;
            self.offset += left;
            self.block_left = Some(0);
            return Ok(());
        }
        while left > 0 {
            if self.pos == self.end && self.fill(1)? == 0 {
                return Err(FormatError::new(
                    self.offset,
                    format!(
                        "the file ends {left} bytes before the end of the block whose extents \
                         record is at byte offset {}; it was cut short",
                        self.block_at
                    ),
                ));
            }
            let n = ((self.end - self.pos) as u64).min(left) as usize;
            self.advance(n);
            left -= n as u64;
            self.block_left = Some(left);
        }
        Ok(())
    }

    fn advance(&mut self, n: usize) {
        self.pos += n;
        self.offset += n as u64;
    }

    /// Charges `n` bytes to the current block, refusing records that overrun it.
    fn consume_block(&mut self, n: u64, what: &str) -> Result<(), FormatError> {
        if let Some(left) = self.block_left {
            if n > left {
                return Err(FormatError::new(
                    self.offset,
                    format!(
                        "a {n}-byte {what} runs past the end of its block, which had {left} \
                         bytes left by its extents record"
                    ),
                ));
            }
            self.block_left = Some(left - n);
        }
        Ok(())
    }
}

/// What a metadata record's two words say by themselves, decoded as the reader decodes them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MetaHead {
    /// A whole record: one with no payload.
    Record(Record<'static>),
    /// A custom or typed event's header; its payload is the `size` bytes after it (a size the
    /// caller bounds: nothing is checked here).
    Event {
        /// [`MetaKind::CustomEvent`] or [`MetaKind::TypedEvent`].
        kind: MetaKind,
        /// Ticks since the previous record.
        delta: i32,
        /// The payload's length in bytes, as written (negative in a corrupt record).
        size: i32,
        /// A typed event's type tag (0 for a custom event).
        event_type: u16,
    },
}

/// Decodes the metadata record `words` (its two words as a buffer holds them) without a
/// reader, for code that walks a buffer in memory: `None` for an extents record (which opens a
/// block rather than being in one) and for a byte that is no metadata kind.
///
/// ```
/// use fdr_format::reader::{meta_head, MetaHead, Record};
/// use fdr_format::{meta, MetaKind};
/// assert_eq!(
///     meta_head(meta::new_cpu_id(3, 1000)),
///     Some(MetaHead::Record(Record::NewCpuId { cpu: 3, tsc: 1000 }))
/// );
/// assert!(matches!(
///     meta_head(meta::custom_event(12, -5)),
///     Some(MetaHead::Event { kind: MetaKind::CustomEvent, delta: -5, size: 12, .. })
/// ));
/// ```
pub fn meta_head(words: MetaWords) -> Option<MetaHead> {
    let m = meta_bytes(words);
    let kind = MetaKind::from_byte(m[0])?;
    match kind {
        MetaKind::BufferExtents => None,
        MetaKind::CustomEvent | MetaKind::TypedEvent => Some(MetaHead::Event {
            kind,
            delta: i32_at(&m, 5),
            size: i32_at(&m, 1),
            event_type: if kind == MetaKind::TypedEvent {
                u16_at(&m, 9)
            } else {
                0
            },
        }),
        _ => simple_record(kind, &m).map(MetaHead::Record),
    }
}

/// A metadata record without a payload, from its 16 bytes `m`; `None` for an event (or an
/// extents record, which the reader reads itself).
fn simple_record(kind: MetaKind, m: &[u8; 16]) -> Option<Record<'static>> {
    match kind {
        MetaKind::NewBuffer => Some(Record::NewBuffer { tid: i32_at(m, 1) }),
        MetaKind::EndOfBuffer => Some(Record::EndOfBuffer),
        MetaKind::NewCpuId => Some(Record::NewCpuId {
            cpu: u16_at(m, 1),
            tsc: u64_at(m, 3),
        }),
        MetaKind::TscWrap => Some(Record::TscWrap { tsc: u64_at(m, 1) }),
        MetaKind::WalltimeMarker => Some(Record::Walltime {
            secs: u64_at(m, 1) as i64,
            micros: i32_at(m, 9),
        }),
        MetaKind::CallArgument => Some(Record::CallArgument {
            value: u64_at(m, 1),
        }),
        MetaKind::Pid => Some(Record::Pid { pid: i32_at(m, 1) }),
        MetaKind::CustomEvent | MetaKind::TypedEvent | MetaKind::BufferExtents => None,
    }
}

fn u16_at(m: &[u8; 16], i: usize) -> u16 {
    u16::from_le_bytes([m[i], m[i + 1]])
}

fn i32_at(m: &[u8; 16], i: usize) -> i32 {
    i32::from_le_bytes([m[i], m[i + 1], m[i + 2], m[i + 3]])
}

fn u64_at(m: &[u8; 16], i: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&m[i..i + 8]);
    u64::from_le_bytes(w)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{function_record, meta, meta_bytes};

    fn sample() -> Vec<u8> {
        let mut f = FileHeader::default().encode().to_vec();
        let payload = b"hello";
        let mut block = Vec::new();
        block.extend_from_slice(&meta_bytes(meta::new_buffer(9)));
        block.extend_from_slice(&meta_bytes(meta::walltime(1, 2)));
        block.extend_from_slice(&meta_bytes(meta::pid(3)));
        block.extend_from_slice(&meta_bytes(meta::new_cpu_id(1, 1000)));
        block.extend_from_slice(&meta_bytes(meta::custom_event(payload.len() as i32, 0)));
        block.extend_from_slice(payload);
        block.extend_from_slice(&function_record(4, FnKind::EnterArgs, 0).to_le_bytes());
        block.extend_from_slice(&meta_bytes(meta::call_argument(77)));
        block.extend_from_slice(&function_record(4, FnKind::Exit, 10).to_le_bytes());
        f.extend_from_slice(&meta_bytes(meta::buffer_extents(block.len() as u64)));
        f.extend_from_slice(&block);
        f
    }

    fn all(bytes: &[u8]) -> Result<Vec<String>, FormatError> {
        let mut r = Reader::new(bytes)?;
        let mut out = Vec::new();
        while let Some((_, rec)) = r.next_record()? {
            out.push(format!("{rec:?}"));
        }
        Ok(out)
    }

    /// Found by fuzzing `fdr`: a block whose extents claim nearly 2^64 bytes, skipped on a
    /// seekable input, overflowed the check that the block ends inside the file.
    #[test]
    fn skipping_a_block_that_claims_almost_2_64_bytes_is_an_error_not_an_overflow() {
        let mut file = FileHeader::default().encode().to_vec();
        file.extend_from_slice(&meta_bytes(meta::buffer_extents(u64::MAX - 7)));
        file.extend_from_slice(&[0xee; 64]);
        let mut r = Reader::seekable(std::io::Cursor::new(&file)).unwrap();
        r.next_record().unwrap();
        let e = r.skip_block().unwrap_err();
        assert_eq!(e.offset, file.len() as u64);
        assert!(
            e.to_string().contains(
                "before the end of the block whose extents record is at byte offset 32; it was \
                 cut short"
            ),
            "{e}"
        );
    }

    #[test]
    fn reads_every_record_kind_in_order() {
        let recs = all(&sample()).unwrap();
        assert_eq!(recs.len(), 9);
        assert!(recs[5].starts_with("CustomEvent { delta: 0, payload: [104"));
        assert_eq!(recs[7], "CallArgument { value: 77 }");
    }

    /// A log as the runtime writes it: a leading block of extension records, then blocks of two
    /// threads with every kind of event.
    fn multi_block() -> Vec<u8> {
        use crate::{
            block_preamble, lead_block, task_payload, BlockStart, Extension, FunctionInfo,
            LeadStart, RunInfo, TaskKind, BLOCK_PREAMBLE_AFTER_EXTENTS,
        };
        let mut f = FileHeader::default().encode().to_vec();
        let lead = LeadStart {
            tid: 9,
            pid: 3,
            start_secs: 1,
            start_nanos: 0,
            start_tsc: 10,
        };
        let records = [
            Extension::Run(RunInfo {
                program: "p".into(),
                ..RunInfo::default()
            }),
            Extension::Function(FunctionInfo {
                id: 4,
                name: "a::b".into(),
                args: vec!["x".into()],
                ..FunctionInfo::default()
            }),
        ];
        f.extend_from_slice(&lead_block(&lead, &records));
        for (tid, tsc) in [(9, 1000u64), (8, 1100), (9, 2000)] {
            let mut events: Vec<u8> = Vec::new();
            events.extend_from_slice(&function_record(4, FnKind::EnterArgs, 5).to_le_bytes());
            events.extend_from_slice(&meta_bytes(meta::call_argument(77)));
            events.extend_from_slice(&meta_bytes(meta::custom_event(16, 3)));
            events.extend(
                task_payload(TaskKind::Created, 4, 1)
                    .iter()
                    .flat_map(|w| w.to_le_bytes()),
            );
            events.extend_from_slice(&meta_bytes(meta::tsc_wrap(tsc << 33)));
            events.extend_from_slice(&function_record(4, FnKind::Exit, 10).to_le_bytes());
            events.extend_from_slice(&meta_bytes(meta::custom_event(5, 0)));
            events.extend_from_slice(b"other");
            events.extend_from_slice(&function_record(4, FnKind::Enter, 1).to_le_bytes());
            let start = BlockStart {
                tid,
                wall_secs: 1,
                wall_micros: 2,
                pid: 3,
                cpu: 0,
                tsc,
            };
            let extents = (BLOCK_PREAMBLE_AFTER_EXTENTS + events.len()) as u64;
            for w in block_preamble(&start, extents) {
                f.extend_from_slice(&w.to_le_bytes());
            }
            f.extend_from_slice(&events);
        }
        f
    }

    #[test]
    fn every_truncation_is_an_error_not_a_panic() {
        let f = multi_block();
        // Where each record starts and ends, from reading the whole log.
        let mut spans = Vec::new();
        let mut r = Reader::new(&f[..]).unwrap();
        let mut at = HEADER_SIZE as u64;
        while let Some((start, _)) = r.next_record().unwrap() {
            assert_eq!(start, at, "records follow each other");
            at = r.offset();
            spans.push((start as usize, at as usize));
        }
        assert_eq!(at as usize, f.len());
        assert!(spans.len() > 30, "{} records", spans.len());
        for n in 0..f.len() {
            let got = all(&f[..n]);
            if n < HEADER_SIZE {
                let e = got.expect_err("a cut header");
                assert!(e.message.contains("shorter than"), "cut at {n}: {e}");
                continue;
            }
            match spans.iter().find(|&&(s, e)| s < n && n < e) {
                // Inside a record: an error at the record's start, saying the file was cut.
                Some(&(start, _)) => {
                    let e = got.expect_err("a cut record");
                    assert_eq!(e.offset, start as u64, "cut at {n}: {e}");
                    assert!(e.message.contains("cut short"), "cut at {n}: {e}");
                }
                // On a record boundary: exactly the records before the cut.
                None => {
                    let recs = got.unwrap_or_else(|e| panic!("cut at {n}: {e}"));
                    let whole = spans.iter().filter(|&&(_, e)| e <= n).count();
                    assert_eq!(recs.len(), whole, "cut at {n}");
                }
            }
        }
    }

    #[test]
    fn every_truncation_of_a_block_is_a_grammar_error_naming_the_offset() {
        use crate::events::EventDecoder;
        let f = multi_block();
        // Block ends, from the extents records.
        let mut ends = vec![HEADER_SIZE];
        while let Some(&at) = ends.last().filter(|&&at| at < f.len()) {
            let mut size = [0u8; 8];
            size.copy_from_slice(&f[at + 1..at + 9]);
            ends.push(at + METADATA_RECORD_SIZE + u64::from_le_bytes(size) as usize);
        }
        assert_eq!((ends.len(), ends.last()), (5, Some(&f.len())));
        for n in HEADER_SIZE..f.len() {
            let mut d = EventDecoder::new(&f[..n]).unwrap();
            let r = loop {
                match d.next_event() {
                    Ok(Some(_)) => {}
                    Ok(None) => break Ok(()),
                    Err(e) => break Err(e),
                }
            };
            if ends.contains(&n) {
                assert!(r.is_ok(), "cut at block end {n}: {r:?}");
            } else {
                let e = r.expect_err("a cut block");
                assert!(e.offset <= n as u64, "cut at {n}: {e}");
                assert!(e.message.contains("cut short"), "cut at {n}: {e}");
            }
        }
    }

    #[test]
    fn skipping_by_seeking_reads_the_same_and_finds_the_same_cuts() {
        use crate::events::EventDecoder;
        let f = multi_block();
        let run = |d: &mut dyn FnMut() -> Result<Option<(u32, u64)>, FormatError>| {
            let mut seen = Vec::new();
            loop {
                match d() {
                    Ok(Some(e)) => seen.push(e),
                    Ok(None) => return Ok(seen),
                    Err(e) => return Err(e),
                }
            }
        };
        for n in HEADER_SIZE..=f.len() {
            let mut plain = EventDecoder::new(&f[..n]).unwrap();
            plain.keep_threads(|tid, _| tid == 8);
            let mut seek = EventDecoder::seekable(io::Cursor::new(&f[..n])).unwrap();
            seek.keep_threads(|tid, _| tid == 8);
            let a = run(&mut || plain.next_event().map(|e| e.map(|e| (e.thread, e.tsc))));
            let b = run(&mut || seek.next_event().map(|e| e.map(|e| (e.thread, e.tsc))));
            assert_eq!(a, b, "cut at {n}");
        }
    }

    #[test]
    fn huge_payload_lengths_are_refused() {
        let mut f = FileHeader::default().encode().to_vec();
        f.extend_from_slice(&meta_bytes(meta::custom_event(i32::MAX, 0)));
        let e = all(&f).unwrap_err();
        assert_eq!(e.offset, 32);
        assert!(e.message.contains("claims a payload"), "{e}");
    }

    #[test]
    fn records_past_the_block_end_are_refused() {
        let mut f = FileHeader::default().encode().to_vec();
        f.extend_from_slice(&meta_bytes(meta::buffer_extents(8)));
        f.extend_from_slice(&meta_bytes(meta::pid(1)));
        let e = all(&f).unwrap_err();
        assert!(e.message.contains("runs past the end of its block"), "{e}");
    }

    #[test]
    fn records_across_window_refills_read_the_same_as_at_once() {
        // A log much larger than the first window, read through a reader that hands out a few
        // bytes at a time: every record comes back whole and in order.
        struct Trickle<'a>(&'a [u8], usize);
        impl Read for Trickle<'_> {
            fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
                let n = out.len().min(self.1).min(self.0.len());
                out[..n].copy_from_slice(&self.0[..n]);
                self.0 = &self.0[n..];
                Ok(n)
            }
        }
        let mut f = FileHeader::default().encode().to_vec();
        let mut block = Vec::new();
        block.extend_from_slice(&meta_bytes(meta::new_buffer(9)));
        block.extend_from_slice(&meta_bytes(meta::walltime(1, 2)));
        block.extend_from_slice(&meta_bytes(meta::new_cpu_id(1, 1000)));
        for i in 0..100_000u32 {
            block.extend_from_slice(&function_record(i, FnKind::Enter, i).to_le_bytes());
            if i % 1000 == 0 {
                let payload = vec![i as u8; 70_000];
                block.extend_from_slice(&meta_bytes(meta::custom_event(70_000, 0)));
                block.extend_from_slice(&payload);
            }
        }
        f.extend_from_slice(&meta_bytes(meta::buffer_extents(block.len() as u64)));
        f.extend_from_slice(&block);
        for chunk in [7, 4096, 1 << 20] {
            let mut r = Reader::new(Trickle(&f, chunk)).unwrap();
            let (mut fns, mut events) = (0u32, 0u32);
            while let Some((_, rec)) = r.next_record().unwrap() {
                match rec {
                    Record::Function { id, delta, .. } => {
                        assert_eq!((id, delta), (fns, fns));
                        fns += 1;
                    }
                    Record::CustomEvent { payload, .. } => {
                        assert_eq!(payload.len(), 70_000);
                        assert!(payload.iter().all(|&b| b == (events * 1000) as u8));
                        events += 1;
                    }
                    _ => {}
                }
            }
            assert_eq!((fns, events), (100_000, 100), "chunk {chunk}");
            assert!(r.buf.len() <= WINDOW, "the window stays bounded");
        }
    }
}
