#[doc = " Adds."]
#[inline]
pub fn add(a: u32, b: u32) -> u32 {
    fn __fdr_path() -> &'static str {
        ::fdr::__private::type_name_of(__fdr_path)
    }
    #[::fdr::__private::linkme::distributed_slice(::fdr::__private::FUNCTIONS)]
    # [linkme (crate = :: fdr :: __private :: linkme)]
    static __FDR_FN: ::fdr::__private::FnDesc = ::fdr::__private::nested_desc(
        ::core::concat!(::core::module_path!(), "::add"),
        __fdr_path,
        ::core::file!(),
        ::core::line!(),
        ::fdr::__private::FnKindTag::Function,
        &[],
    );
    let __fdr_guard = ::fdr::__private::CallGuard::enter(&__FDR_FN);
    {
        a + b
    }
}
