//! Turning a function's arguments into the 64-bit values of call-argument records.

/// A value that can be logged as one 64-bit call argument by `#[instrument_fdr(log_args)]`.
///
/// Implemented for integers (sign-extended), `bool`, `char`, floats (their bits), raw pointers
/// (their address), text (`str`, `String`: the first 7 bytes and the length, see
/// [`ArgKind::Text`]; no allocation, no hashing of the whole text) and references and boxes of
/// any of these. [`LogArg::KIND`] tells a reader how to show the bits (`-3`, `true`, `1.5`,
/// `"alice"`). Implement it for your own types to log them:
///
/// ```
/// use fdr_runtime::LogArg;
/// struct UserId(u32);
/// impl LogArg for UserId {
///     fn fdr_arg(&self) -> u64 {
///         u64::from(self.0)
///     }
/// }
/// assert_eq!(UserId(7).fdr_arg(), 7);
/// assert_eq!((-1i8).fdr_arg(), u64::MAX);
/// assert_eq!(1.5f64.fdr_arg(), 1.5f64.to_bits());
/// assert_eq!("alice".fdr_arg().to_le_bytes(), *b"alice\0\0\x05");
/// assert_eq!(<&str as LogArg>::KIND, fdr_runtime::ArgKind::Text);
/// ```
pub trait LogArg {
    /// How the bits read: the function table keeps it for each argument (the default, an
    /// unsigned integer).
    const KIND: ArgKind = ArgKind::Unsigned;

    /// The 64 bits to record.
    fn fdr_arg(&self) -> u64;
}

pub use fdr_format::args::ArgKind;

macro_rules! unsigned {
    ($($t:ty)*) => {$(
        impl LogArg for $t {
            #[inline(always)]
            fn fdr_arg(&self) -> u64 { *self as u64 }
        }
    )*};
}
macro_rules! signed {
    ($($t:ty)*) => {$(
        impl LogArg for $t {
            const KIND: ArgKind = ArgKind::Signed;
            #[inline(always)]
            fn fdr_arg(&self) -> u64 { *self as i64 as u64 }
        }
    )*};
}
unsigned!(u8 u16 u32 u64 u128 usize);
signed!(i8 i16 i32 i64 i128 isize);

impl LogArg for bool {
    const KIND: ArgKind = ArgKind::Bool;
    #[inline(always)]
    fn fdr_arg(&self) -> u64 {
        u64::from(*self)
    }
}

impl LogArg for char {
    const KIND: ArgKind = ArgKind::Char;
    #[inline(always)]
    fn fdr_arg(&self) -> u64 {
        u64::from(*self as u32)
    }
}

impl LogArg for f32 {
    const KIND: ArgKind = ArgKind::F32;
    #[inline(always)]
    fn fdr_arg(&self) -> u64 {
        u64::from(self.to_bits())
    }
}

impl LogArg for f64 {
    const KIND: ArgKind = ArgKind::F64;
    #[inline(always)]
    fn fdr_arg(&self) -> u64 {
        self.to_bits()
    }
}

impl<T: ?Sized> LogArg for *const T {
    const KIND: ArgKind = ArgKind::Pointer;
    #[inline(always)]
    fn fdr_arg(&self) -> u64 {
        self.cast::<()>() as usize as u64
    }
}

impl<T: ?Sized> LogArg for *mut T {
    const KIND: ArgKind = ArgKind::Pointer;
    #[inline(always)]
    fn fdr_arg(&self) -> u64 {
        self.cast::<()>() as usize as u64
    }
}

impl<T: LogArg + ?Sized> LogArg for &T {
    const KIND: ArgKind = T::KIND;
    #[inline(always)]
    fn fdr_arg(&self) -> u64 {
        (**self).fdr_arg()
    }
}

impl<T: LogArg + ?Sized> LogArg for &mut T {
    const KIND: ArgKind = T::KIND;
    #[inline(always)]
    fn fdr_arg(&self) -> u64 {
        (**self).fdr_arg()
    }
}

impl<T: LogArg + ?Sized> LogArg for Box<T> {
    const KIND: ArgKind = T::KIND;
    #[inline(always)]
    fn fdr_arg(&self) -> u64 {
        (**self).fdr_arg()
    }
}

impl LogArg for str {
    const KIND: ArgKind = ArgKind::Text;
    #[inline(always)]
    fn fdr_arg(&self) -> u64 {
        fdr_format::args::text_bits(self.as_bytes())
    }
}

impl LogArg for String {
    const KIND: ArgKind = ArgKind::Text;
    #[inline(always)]
    fn fdr_arg(&self) -> u64 {
        self.as_str().fdr_arg()
    }
}
