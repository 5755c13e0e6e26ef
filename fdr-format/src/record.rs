//! The two record shapes of an XRay FDR version 5 log and how they are packed.
//!
//! A function record is 8 bytes, a metadata record 16. Both are little-endian. The writer keeps
//! its buffers as arrays of 64-bit words, so every encoder here returns whole words: one word for
//! a function record, two for a metadata record. Byte 0 of a record says which shape it is: bit 0
//! set means metadata.

/// Size in bytes of a function record.
pub const FUNCTION_RECORD_SIZE: usize = 8;
/// Size in bytes of a metadata record.
pub const METADATA_RECORD_SIZE: usize = 16;
/// The largest function id a function record can carry (28 bits).
pub const MAX_FUNCTION_ID: u32 = (1 << 28) - 1;

/// What a function record says happened.
///
/// ```
/// use fdr_format::FnKind;
/// assert_eq!(FnKind::from_bits(2), Some(FnKind::TailExit));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum FnKind {
    /// The function was entered.
    Enter = 0,
    /// The function returned (or unwound).
    Exit = 1,
    /// The function left through a tail call: its frame is gone, the callee's exit follows.
    TailExit = 2,
    /// The function was entered and its arguments follow as call-argument records.
    EnterArgs = 3,
}

impl FnKind {
    /// Decodes the 3-bit kind field; kinds 4 to 7 are not defined.
    pub fn from_bits(bits: u8) -> Option<FnKind> {
        match bits {
            0 => Some(FnKind::Enter),
            1 => Some(FnKind::Exit),
            2 => Some(FnKind::TailExit),
            3 => Some(FnKind::EnterArgs),
            _ => None,
        }
    }

    /// True for the kinds that open a call.
    pub fn is_entry(self) -> bool {
        matches!(self, FnKind::Enter | FnKind::EnterArgs)
    }
}

/// The kinds of metadata record, as numbered by XRay.
///
/// ```
/// use fdr_format::MetaKind;
/// assert_eq!(MetaKind::from_byte(0x0f), Some(MetaKind::BufferExtents));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum MetaKind {
    /// Starts a thread's buffer: the thread id.
    NewBuffer = 0,
    /// Marks the end of a buffer (version 1 and 2 logs; version 5 uses extents instead).
    EndOfBuffer = 1,
    /// The thread is now on another CPU: CPU number and full timestamp.
    NewCpuId = 2,
    /// The timestamp delta did not fit 32 bits: full timestamp.
    TscWrap = 3,
    /// Wall-clock time when the buffer was started.
    WalltimeMarker = 4,
    /// A payload of arbitrary bytes follows the record.
    CustomEvent = 5,
    /// One argument of the preceding enter-with-arguments record.
    CallArgument = 6,
    /// The number of bytes of the block that follow this record.
    BufferExtents = 7,
    /// A typed payload follows the record.
    TypedEvent = 8,
    /// The process id.
    Pid = 9,
}

impl MetaKind {
    /// Decodes byte 0 of a metadata record (`(kind << 1) | 1`).
    pub fn from_byte(byte: u8) -> Option<MetaKind> {
        if byte & 1 == 0 {
            return None;
        }
        Some(match byte >> 1 {
            0 => MetaKind::NewBuffer,
            1 => MetaKind::EndOfBuffer,
            2 => MetaKind::NewCpuId,
            3 => MetaKind::TscWrap,
            4 => MetaKind::WalltimeMarker,
            5 => MetaKind::CustomEvent,
            6 => MetaKind::CallArgument,
            7 => MetaKind::BufferExtents,
            8 => MetaKind::TypedEvent,
            9 => MetaKind::Pid,
            _ => return None,
        })
    }

    /// Byte 0 of a metadata record of this kind.
    pub const fn byte(self) -> u8 {
        ((self as u8) << 1) | 1
    }
}

/// Packs a function record into the word the writer stores.
///
/// ```
/// use fdr_format::{function_record, FnKind};
/// let w = function_record(5, FnKind::Exit, 100);
/// assert_eq!(w.to_le_bytes(), [0x52, 0, 0, 0, 100, 0, 0, 0]);
/// ```
#[inline(always)]
pub const fn function_record(id: u32, kind: FnKind, delta: u32) -> u64 {
    function_record_head(id, kind) as u64 | ((delta as u64) << 32)
}

/// The low half of a function record: id and kind, without the delta.
#[inline(always)]
pub const fn function_record_head(id: u32, kind: FnKind) -> u32 {
    ((id & MAX_FUNCTION_ID) << 4) | ((kind as u32) << 1)
}

/// Splits a function record word into (id, kind, delta). `None` if it is not a function record
/// or its kind is undefined.
///
/// ```
/// use fdr_format::{decode_function_record, function_record, FnKind};
/// let w = function_record(7, FnKind::TailExit, 9);
/// assert_eq!(decode_function_record(w), Some((7, FnKind::TailExit, 9)));
/// ```
#[inline]
pub fn decode_function_record(word: u64) -> Option<(u32, FnKind, u32)> {
    let lo = word as u32;
    if lo & 1 != 0 {
        return None;
    }
    let kind = FnKind::from_bits(((lo >> 1) & 7) as u8)?;
    Some((lo >> 4, kind, (word >> 32) as u32))
}

/// A metadata record as the two words the writer stores.
pub type MetaWords = [u64; 2];

fn meta(kind: MetaKind, data: [u8; 15]) -> MetaWords {
    let mut bytes = [0u8; 16];
    bytes[0] = kind.byte();
    bytes[1..].copy_from_slice(&data);
    let mut lo = [0u8; 8];
    let mut hi = [0u8; 8];
    lo.copy_from_slice(&bytes[..8]);
    hi.copy_from_slice(&bytes[8..]);
    [u64::from_le_bytes(lo), u64::from_le_bytes(hi)]
}

fn data_with(parts: &[&[u8]]) -> [u8; 15] {
    let mut data = [0u8; 15];
    let mut at = 0;
    for p in parts {
        data[at..at + p.len()].copy_from_slice(p);
        at += p.len();
    }
    data
}

/// Metadata encoders. Each returns the record as two little-endian words.
///
/// ```
/// use fdr_format::meta;
/// let [lo, _hi] = meta::pid(42);
/// assert_eq!(lo.to_le_bytes()[0], 0x13);
/// ```
pub mod meta {
    use super::*;

    /// `NewBuffer`: the id of the thread that owns the block.
    pub fn new_buffer(tid: i32) -> MetaWords {
        meta(MetaKind::NewBuffer, data_with(&[&tid.to_le_bytes()]))
    }
    /// `EndOfBuffer`.
    pub fn end_of_buffer() -> MetaWords {
        meta(MetaKind::EndOfBuffer, [0; 15])
    }
    /// `NewCPUId`: CPU number and the full timestamp that later deltas build on.
    pub fn new_cpu_id(cpu: u16, tsc: u64) -> MetaWords {
        meta(
            MetaKind::NewCpuId,
            data_with(&[&cpu.to_le_bytes(), &tsc.to_le_bytes()]),
        )
    }
    /// `TSCWrap`: the full timestamp, for a delta that did not fit 32 bits.
    pub fn tsc_wrap(tsc: u64) -> MetaWords {
        meta(MetaKind::TscWrap, data_with(&[&tsc.to_le_bytes()]))
    }
    /// `WalltimeMarker`: seconds and microseconds of the wall clock.
    pub fn walltime(secs: i64, micros: i32) -> MetaWords {
        meta(
            MetaKind::WalltimeMarker,
            data_with(&[&secs.to_le_bytes(), &micros.to_le_bytes()]),
        )
    }
    /// `CustomEvent` header: `size` payload bytes follow the record; `delta` advances the clock.
    pub fn custom_event(size: i32, delta: i32) -> MetaWords {
        meta(
            MetaKind::CustomEvent,
            data_with(&[&size.to_le_bytes(), &delta.to_le_bytes()]),
        )
    }
    /// `CallArgument`: one 64-bit argument.
    pub fn call_argument(value: u64) -> MetaWords {
        meta(MetaKind::CallArgument, data_with(&[&value.to_le_bytes()]))
    }
    /// `BufferExtents`: how many bytes of the block follow this record.
    pub fn buffer_extents(size: u64) -> MetaWords {
        meta(MetaKind::BufferExtents, data_with(&[&size.to_le_bytes()]))
    }
    /// `Pid`: the process id.
    pub fn pid(pid: i32) -> MetaWords {
        meta(MetaKind::Pid, data_with(&[&pid.to_le_bytes()]))
    }
}

/// Turns a metadata record's two words back into its 16 bytes.
pub fn meta_bytes(words: MetaWords) -> [u8; 16] {
    let mut out = [0u8; 16];
    out[..8].copy_from_slice(&words[0].to_le_bytes());
    out[8..].copy_from_slice(&words[1].to_le_bytes());
    out
}

/// Number of bytes that a block's `BufferExtents` covers besides itself before the first event:
/// `NewBuffer`, `WalltimeMarker`, `Pid`, `NewCPUId`.
pub const BLOCK_PREAMBLE_AFTER_EXTENTS: usize = 4 * METADATA_RECORD_SIZE;

/// Size in bytes of a whole block preamble, extents included.
pub const BLOCK_PREAMBLE_SIZE: usize = 5 * METADATA_RECORD_SIZE;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn function_record_layout_matches_xray() {
        let w = function_record(0x0abc_def1, FnKind::EnterArgs, 0xdead_beef);
        let b = w.to_le_bytes();
        // Type bit clear, kind 3 in bits 1..3, id in bits 4..31.
        assert_eq!(
            u32::from_le_bytes([b[0], b[1], b[2], b[3]]),
            (0x0abc_def1 << 4) | (3 << 1)
        );
        assert_eq!(u32::from_le_bytes([b[4], b[5], b[6], b[7]]), 0xdead_beef);
        assert_eq!(
            decode_function_record(w),
            Some((0x0abc_def1, FnKind::EnterArgs, 0xdead_beef))
        );
    }

    #[test]
    fn ids_are_truncated_to_28_bits() {
        let w = function_record(0xffff_ffff, FnKind::Enter, 0);
        assert_eq!(decode_function_record(w).unwrap().0, MAX_FUNCTION_ID);
    }

    #[test]
    fn metadata_layouts() {
        let b = meta_bytes(meta::new_cpu_id(3, 0x1122_3344_5566_7788));
        assert_eq!(b[0], 0x05);
        assert_eq!(&b[1..3], &3u16.to_le_bytes());
        assert_eq!(&b[3..11], &0x1122_3344_5566_7788u64.to_le_bytes());
        let b = meta_bytes(meta::walltime(-2, 999_999));
        assert_eq!(b[0], 0x09);
        assert_eq!(&b[1..9], &(-2i64).to_le_bytes());
        assert_eq!(&b[9..13], &999_999i32.to_le_bytes());
        let b = meta_bytes(meta::buffer_extents(4096));
        assert_eq!(b[0], 0x0f);
        assert_eq!(&b[1..9], &4096u64.to_le_bytes());
        assert_eq!(meta_bytes(meta::pid(7))[0], 0x13);
        assert_eq!(meta_bytes(meta::custom_event(10, 0))[0], 0x0b);
        assert_eq!(meta_bytes(meta::call_argument(1))[0], 0x0d);
        assert_eq!(meta_bytes(meta::tsc_wrap(1))[0], 0x07);
        assert_eq!(meta_bytes(meta::new_buffer(1))[0], 0x01);
        assert_eq!(meta_bytes(meta::end_of_buffer())[0], 0x03);
        for k in 0..=9u8 {
            let kind = MetaKind::from_byte((k << 1) | 1).unwrap();
            assert_eq!(kind as u8, k);
        }
        assert_eq!(MetaKind::from_byte(0x15), None);
        assert_eq!(MetaKind::from_byte(0x02), None);
    }
}
