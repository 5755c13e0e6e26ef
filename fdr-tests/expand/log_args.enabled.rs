#[inline]
fn read(buf: &mut [u8], len: usize, r#type: u8) -> usize {
    static __FDR_ARG_KINDS: [::fdr::__private_v1::AtomicU8; 2usize] = [
        ::fdr::__private_v1::AtomicU8::new(0),
        ::fdr::__private_v1::AtomicU8::new(0),
    ];
    #[::fdr::__private_v1::linkme::distributed_slice(::fdr::__private_v1::FUNCTIONS)]
    # [linkme (crate = :: fdr :: __private_v1 :: linkme)]
    static __FDR_FN: ::fdr::__private_v1::FnDesc = ::fdr::__private_v1::FnDesc::new(
        ::core::concat!("io::read"),
        ::core::file!(),
        ::core::line!(),
        ::fdr::__private_v1::FnKindTag::Function,
        &["len", "type"],
    )
    .with_arg_kinds(&__FDR_ARG_KINDS);
    let __fdr_guard = ::fdr::__private_v1::CallGuard::enter_args(&__FDR_FN, &{
        #[allow(unused_imports)]
        use ::fdr::__private_v1::{ViaFallback as _, ViaLogArg as _};
        #[allow(non_camel_case_types, dead_code)]
        enum len {}
        #[allow(non_camel_case_types, dead_code)]
        enum r#type {}
        let __fdr_args = (
            (&::fdr::__private_v1::ArgProbe::<_, len>::new(&len)).fdr_arg_kinded(),
            (&::fdr::__private_v1::ArgProbe::<_, r#type>::new(&r#type)).fdr_arg_kinded(),
        );
        if __FDR_FN.arg_kinds_unnoted() {
            __FDR_FN.note_arg_kinds(&[__fdr_args.0 .1, __fdr_args.1 .1]);
        }
        [__fdr_args.0 .0, __fdr_args.1 .0]
    });
    {
        buf.len().min(len) + r#type as usize
    }
}
