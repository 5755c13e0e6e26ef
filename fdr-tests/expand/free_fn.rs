// Cannot take long, and annotated alone: recorded all the same.
/// Adds.
#[instrument_fdr]
#[inline]
pub fn add(a: u32, b: u32) -> u32 {
    a + b
}
