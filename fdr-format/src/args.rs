//! How a logged argument's 64 bits are read: the kind of value its type records
//! (`fdr::LogArg::KIND`), which the function table keeps for each argument, so that a reader
//! shows `-3`, `true`, `1.5` or `"alice"` instead of the bits.

/// The kind of value a logged argument's 64 bits hold.
///
/// ```
/// use fdr_format::args::{text_bits, ArgKind};
/// assert_eq!(ArgKind::Signed.show(u64::MAX), "-1");
/// assert_eq!(ArgKind::F64.show(1.5f64.to_bits()), "1.5");
/// assert_eq!(ArgKind::Text.show(text_bits(b"alice")), "\"alice\"");
/// assert_eq!(ArgKind::Text.show(text_bits(b"a rather long key")), "\"a rathe…\" (17 bytes)");
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum ArgKind {
    /// An unsigned integer; also what a log written before the kinds says of every argument.
    #[default]
    Unsigned = 0,
    /// A signed integer, sign-extended.
    Signed = 1,
    /// `bool`: 0 or 1.
    Bool = 2,
    /// `char`: its scalar value.
    Char = 3,
    /// `f32`: its bits.
    F32 = 4,
    /// `f64`: its bits.
    F64 = 5,
    /// A pointer: its address.
    Pointer = 6,
    /// Text (`&str`, `String`): its first [`TEXT_BYTES`] bytes, and its length (up to 255) in the
    /// last byte: a bounded prefix, taken without allocating.
    Text = 7,
}

/// How many bytes of a text argument are kept.
pub const TEXT_BYTES: usize = 7;

impl ArgKind {
    /// The kind's code in the function table.
    pub const fn code(self) -> u8 {
        self as u8
    }

    /// The kind of `code`; an unknown code (a newer writer's) reads as [`ArgKind::Unsigned`].
    ///
    /// ```
    /// use fdr_format::args::ArgKind;
    /// assert_eq!(ArgKind::from_code(7), ArgKind::Text);
    /// assert_eq!(ArgKind::from_code(200), ArgKind::Unsigned);
    /// ```
    pub fn from_code(code: u8) -> ArgKind {
        match code {
            1 => ArgKind::Signed,
            2 => ArgKind::Bool,
            3 => ArgKind::Char,
            4 => ArgKind::F32,
            5 => ArgKind::F64,
            6 => ArgKind::Pointer,
            7 => ArgKind::Text,
            _ => ArgKind::Unsigned,
        }
    }

    /// `value` as a person reads it (text in quotes, with control characters escaped).
    pub fn show(self, value: u64) -> String {
        match self {
            ArgKind::Unsigned => value.to_string(),
            ArgKind::Signed => (value as i64).to_string(),
            ArgKind::Bool => (value != 0).to_string(),
            ArgKind::Char => match char::from_u32(value as u32) {
                Some(c) => format!("{c:?}"),
                None => value.to_string(),
            },
            ArgKind::F32 => f32::from_bits(value as u32).to_string(),
            ArgKind::F64 => f64::from_bits(value).to_string(),
            ArgKind::Pointer => format!("{value:#x}"),
            ArgKind::Text => {
                let bytes = value.to_le_bytes();
                let len = usize::from(bytes[TEXT_BYTES]);
                let kept = &bytes[..len.min(TEXT_BYTES)];
                // A character cut by the prefix is left out, not shown broken.
                let text = match std::str::from_utf8(kept) {
                    Ok(s) => s,
                    Err(e) => std::str::from_utf8(&kept[..e.valid_up_to()]).unwrap_or(""),
                };
                let quoted: String = text.escape_debug().collect();
                match len {
                    n if n <= TEXT_BYTES => format!("\"{quoted}\""),
                    255 => format!("\"{quoted}…\" (255 bytes or more)"),
                    n => format!("\"{quoted}…\" ({n} bytes)"),
                }
            }
        }
    }
}

/// The 64 bits a text argument is logged as: its first [`TEXT_BYTES`] bytes, then its length
/// (255 for 255 or more).
///
/// ```
/// let bits = fdr_format::args::text_bits(b"hi");
/// assert_eq!(bits.to_le_bytes(), [b'h', b'i', 0, 0, 0, 0, 0, 2]);
/// ```
#[inline]
pub const fn text_bits(s: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    let mut i = 0;
    while i < TEXT_BYTES && i < s.len() {
        b[i] = s[i];
        i += 1;
    }
    b[TEXT_BYTES] = if s.len() > 255 { 255 } else { s.len() as u8 };
    u64::from_le_bytes(b)
}
