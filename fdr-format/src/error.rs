use std::fmt;

/// A log that cannot be read: where it went wrong and what was expected there.
///
/// ```
/// use fdr_format::FormatError;
/// let e = FormatError::new(64, "expected a BufferExtents record".to_string());
/// assert_eq!(e.to_string(), "at byte offset 64: expected a BufferExtents record");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormatError {
    /// Byte offset in the file where the problem starts.
    pub offset: u64,
    /// What was wrong, in words a user can act on.
    pub message: String,
}

impl FormatError {
    /// An error at `offset`.
    pub fn new(offset: u64, message: String) -> FormatError {
        FormatError { offset, message }
    }
}

impl fmt::Display for FormatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "at byte offset {}: {}", self.offset, self.message)
    }
}

impl std::error::Error for FormatError {}
