fn read(buf: &mut [u8], len: usize, r#type: u8) -> usize {
    #[::fdr::__private_v1::linkme::distributed_slice(::fdr::__private_v1::FUNCTIONS)]
    # [linkme (crate = :: fdr :: __private_v1 :: linkme)]
    static __FDR_FN: ::fdr::__private_v1::FnDesc = ::fdr::__private_v1::FnDesc::new(
        ::core::concat!("io::read"),
        ::core::file!(),
        ::core::line!(),
        ::fdr::__private_v1::FnKindTag::Function,
        &["len", "type"],
    );
    let __fdr_guard = ::fdr::__private_v1::CallGuard::enter_args(&__FDR_FN, &{
        #[allow(unused_imports)]
        use ::fdr::__private_v1::{ViaFallback as _, ViaLogArg as _};
        #[allow(non_camel_case_types, dead_code)]
        enum len {}
        #[allow(non_camel_case_types, dead_code)]
        enum r#type {}
        [
            (&::fdr::__private_v1::ArgProbe::<_, len>::new(&len)).fdr_arg(),
            (&::fdr::__private_v1::ArgProbe::<_, r#type>::new(&r#type)).fdr_arg(),
        ]
    });
    {
        buf.len().min(len) + r#type as usize
    }
}
