//! Turning a function's arguments into the 64-bit values of call-argument records.

/// A value that can be logged as one 64-bit call argument by `#[instrument_fdr(log_args)]`.
///
/// Implemented for integers (sign-extended), `bool`, `char`, floats (their bits), raw pointers
/// (their address) and references to any of these. Implement it for your own types to log them:
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
/// ```
pub trait LogArg {
    /// The 64 bits to record.
    fn fdr_arg(&self) -> u64;
}

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
            #[inline(always)]
            fn fdr_arg(&self) -> u64 { *self as i64 as u64 }
        }
    )*};
}
unsigned!(u8 u16 u32 u64 u128 usize);
signed!(i8 i16 i32 i64 i128 isize);

impl LogArg for bool {
    #[inline(always)]
    fn fdr_arg(&self) -> u64 {
        u64::from(*self)
    }
}

impl LogArg for char {
    #[inline(always)]
    fn fdr_arg(&self) -> u64 {
        u64::from(*self as u32)
    }
}

impl LogArg for f32 {
    #[inline(always)]
    fn fdr_arg(&self) -> u64 {
        u64::from(self.to_bits())
    }
}

impl LogArg for f64 {
    #[inline(always)]
    fn fdr_arg(&self) -> u64 {
        self.to_bits()
    }
}

impl<T: ?Sized> LogArg for *const T {
    #[inline(always)]
    fn fdr_arg(&self) -> u64 {
        self.cast::<()>() as usize as u64
    }
}

impl<T: ?Sized> LogArg for *mut T {
    #[inline(always)]
    fn fdr_arg(&self) -> u64 {
        self.cast::<()>() as usize as u64
    }
}

impl<T: LogArg + ?Sized> LogArg for &T {
    #[inline(always)]
    fn fdr_arg(&self) -> u64 {
        (**self).fdr_arg()
    }
}

impl<T: LogArg + ?Sized> LogArg for &mut T {
    #[inline(always)]
    fn fdr_arg(&self) -> u64 {
        (**self).fdr_arg()
    }
}

impl<T: LogArg + ?Sized> LogArg for Box<T> {
    #[inline(always)]
    fn fdr_arg(&self) -> u64 {
        (**self).fdr_arg()
    }
}
