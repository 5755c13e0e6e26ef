#[instrument_fdr]
pub unsafe extern "C" fn sum<'a, T, const N: usize>(items: &'a [T; N]) -> impl Iterator<Item = &'a T>
where
    T: Copy + 'a,
{
    items.iter()
}
