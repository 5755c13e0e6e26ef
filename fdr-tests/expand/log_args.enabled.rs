fn read(buf: &mut [u8], len: usize, r#type: u8) -> usize {
    #[::fdr::__private::linkme::distributed_slice(::fdr::__private::FUNCTIONS)]
    # [linkme (crate = :: fdr :: __private :: linkme)]
    static __FDR_FN: ::fdr::__private::FnDesc = ::fdr::__private::FnDesc::new(
        ::core::concat!("io::read"),
        ::core::file!(),
        ::core::line!(),
        ::fdr::__private::FnKindTag::Function,
        &["len", "type"],
    );
    let __fdr_guard = ::fdr::__private::CallGuard::enter_args(&__FDR_FN, &{
        #[allow(unused_imports)]
        use ::fdr::__private::{ViaFallback as _, ViaLogArg as _};
        #[allow(non_camel_case_types, dead_code)]
        enum len {}
        #[allow(non_camel_case_types, dead_code)]
        enum r#type {}
        [
            (&::fdr::__private::ArgProbe::<_, len>::new(&len)).fdr_arg(),
            (&::fdr::__private::ArgProbe::<_, r#type>::new(&r#type)).fdr_arg(),
        ]
    });
    {
        buf.len().min(len) + r#type as usize
    }
}
