//! Where a box's bytes come from: a file read piece by piece (what recovery reads of a box is
//! its header, its table, its slots and the part of each buffer its owner published, never the
//! whole box: a sparse box of gigabytes with a few megabytes written costs those megabytes), or
//! bytes already in memory (tests, fuzzing).

use crate::FormatError;

/// Bytes of a box, read at offsets. Every read is bounded by [`Source::size`].
pub trait Source {
    /// The box's size in bytes.
    fn size(&self) -> u64;
    /// `n` bytes at `at`; an error (naming `what`) past the end or when the read fails.
    fn read_at(&self, at: u64, n: usize, what: &str) -> Result<Vec<u8>, FormatError>;
}

fn past_end(at: u64, size: u64, what: &str) -> FormatError {
    FormatError::new(
        at,
        format!(
            "the crash box ends at byte {size} before its {what} (a box cut short: it cannot be \
             recovered)"
        ),
    )
}

impl Source for [u8] {
    fn size(&self) -> u64 {
        self.len() as u64
    }

    fn read_at(&self, at: u64, n: usize, what: &str) -> Result<Vec<u8>, FormatError> {
        usize::try_from(at)
            .ok()
            .and_then(|a| self.get(a..a.checked_add(n)?))
            .map(<[u8]>::to_vec)
            .ok_or_else(|| past_end(at, self.size(), what))
    }
}

/// A box file, read where needed. Its size is the one it had when opened: a file that grows
/// meanwhile is read no further, one that shrinks fails the read that passes its end.
#[derive(Debug)]
pub struct FileSource {
    file: std::fs::File,
    size: u64,
}

impl FileSource {
    /// Reads `file`, of `size` bytes.
    pub fn new(file: std::fs::File, size: u64) -> FileSource {
        FileSource { file, size }
    }

    /// The file.
    pub fn file(&self) -> &std::fs::File {
        &self.file
    }
}

impl Source for FileSource {
    fn size(&self) -> u64 {
        self.size
    }

    fn read_at(&self, at: u64, n: usize, what: &str) -> Result<Vec<u8>, FormatError> {
        if at.checked_add(n as u64).map_or(true, |end| end > self.size) {
            return Err(past_end(at, self.size, what));
        }
        let mut buf = vec![0u8; n];
        read_exact_at(&self.file, &mut buf, at).map_err(|e| {
            FormatError::new(at, format!("cannot read the crash box's {what}: {e}"))
        })?;
        Ok(buf)
    }
}

#[cfg(unix)]
fn read_exact_at(f: &std::fs::File, buf: &mut [u8], at: u64) -> std::io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(f, buf, at)
}

#[cfg(windows)]
fn read_exact_at(f: &std::fs::File, mut buf: &mut [u8], mut at: u64) -> std::io::Result<()> {
    use std::os::windows::fs::FileExt;
    while !buf.is_empty() {
        match f.seek_read(buf, at)? {
            0 => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            n => {
                buf = &mut buf[n..];
                at += n as u64;
            }
        }
    }
    Ok(())
}

#[cfg(not(any(unix, windows)))]
fn read_exact_at(f: &std::fs::File, buf: &mut [u8], at: u64) -> std::io::Result<()> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = f;
    f.seek(SeekFrom::Start(at))?;
    f.read_exact(buf)
}
