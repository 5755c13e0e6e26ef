#[inline]
pub unsafe extern "C" fn sum<'a, T, const N: usize>(
    items: &'a [T; N],
) -> impl Iterator<Item = &'a T>
where
    T: Copy + 'a,
{
    fn __fdr_path() -> &'static str {
        ::fdr::__private_v1::type_name_of(__fdr_path)
    }
    #[::fdr::__private_v1::linkme::distributed_slice(::fdr::__private_v1::FUNCTIONS)]
    # [linkme (crate = :: fdr :: __private_v1 :: linkme)]
    static __FDR_FN: ::fdr::__private_v1::FnDesc = ::fdr::__private_v1::FnDesc::nested(
        ::core::concat!(::core::module_path!(), "::sum"),
        __fdr_path,
        ::core::file!(),
        ::core::line!(),
        ::fdr::__private_v1::FnKindTag::Function,
        &[],
    );
    let __fdr_guard = ::fdr::__private_v1::CallGuard::enter(&__FDR_FN);
    {
        items.iter()
    }
}
