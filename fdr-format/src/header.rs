//! The 32-byte file header of an XRay log.

use crate::FormatError;

/// Size of the file header in bytes.
pub const HEADER_SIZE: usize = 32;
/// The log version fdr writes: XRay FDR version 5.
pub const FDR_VERSION: u16 = 5;
/// The XRay log type of FDR mode (0 is the basic, naive mode).
pub const FDR_LOG_TYPE: u16 = 1;

/// The file header: version, type, TSC properties, cycle frequency and buffer size.
///
/// ```
/// use fdr_format::FileHeader;
/// let h = FileHeader { cycle_frequency: 2_000_000_000, buffer_size: 65536, ..FileHeader::default() };
/// let bytes = h.encode();
/// assert_eq!(FileHeader::decode(&bytes).unwrap(), h);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileHeader {
    /// Log version; fdr writes 5.
    pub version: u16,
    /// Log type; 1 is FDR.
    pub log_type: u16,
    /// The timestamp counter ticks at a constant rate.
    pub constant_tsc: bool,
    /// The timestamp counter keeps ticking in deep sleep states.
    pub nonstop_tsc: bool,
    /// Timestamp ticks per second (calibrated by fdr).
    pub cycle_frequency: u64,
    /// Bytes per buffer in the recorder that wrote the log.
    pub buffer_size: u64,
}

impl Default for FileHeader {
    fn default() -> Self {
        FileHeader {
            version: FDR_VERSION,
            log_type: FDR_LOG_TYPE,
            constant_tsc: true,
            nonstop_tsc: true,
            cycle_frequency: 1_000_000_000,
            buffer_size: 0,
        }
    }
}

impl FileHeader {
    /// The header's 32 bytes.
    pub fn encode(&self) -> [u8; HEADER_SIZE] {
        let mut b = [0u8; HEADER_SIZE];
        b[0..2].copy_from_slice(&self.version.to_le_bytes());
        b[2..4].copy_from_slice(&self.log_type.to_le_bytes());
        let bits = u32::from(self.constant_tsc) | (u32::from(self.nonstop_tsc) << 1);
        b[4..8].copy_from_slice(&bits.to_le_bytes());
        b[8..16].copy_from_slice(&self.cycle_frequency.to_le_bytes());
        b[16..24].copy_from_slice(&self.buffer_size.to_le_bytes());
        b
    }

    /// Reads a header, checking that it is an FDR version 5 log with a usable frequency.
    pub fn decode(b: &[u8]) -> Result<FileHeader, FormatError> {
        if b.len() < HEADER_SIZE {
            return Err(FormatError::new(
                b.len() as u64,
                format!(
                    "the file is {} bytes long, shorter than the {HEADER_SIZE}-byte XRay header",
                    b.len()
                ),
            ));
        }
        let u16_at = |i: usize| u16::from_le_bytes([b[i], b[i + 1]]);
        let u64_at = |i: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&b[i..i + 8]);
            u64::from_le_bytes(w)
        };
        let version = u16_at(0);
        let log_type = u16_at(2);
        if log_type != FDR_LOG_TYPE {
            return Err(FormatError::new(
                2,
                format!(
                    "expected XRay log type 1 (flight data recorder), found {log_type}; \
                     this is not an fdr log"
                ),
            ));
        }
        if version != FDR_VERSION {
            return Err(FormatError::new(
                0,
                format!("expected XRay FDR log version 5, found version {version}"),
            ));
        }
        let bits = u32::from_le_bytes([b[4], b[5], b[6], b[7]]);
        let cycle_frequency = u64_at(8);
        if cycle_frequency == 0 {
            return Err(FormatError::new(
                8,
                "the header's cycle frequency is 0, so no time can be computed".to_string(),
            ));
        }
        Ok(FileHeader {
            version,
            log_type,
            constant_tsc: bits & 1 != 0,
            nonstop_tsc: bits & 2 != 0,
            cycle_frequency,
            buffer_size: u64_at(16),
        })
    }
}
