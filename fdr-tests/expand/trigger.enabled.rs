#[inline]
pub fn handle(request: u32, body: &[u8]) -> usize {
    fn __fdr_path() -> &'static str {
        ::fdr::__private_v1::type_name_of(__fdr_path)
    }
    static __FDR_ARG_KINDS: [::fdr::__private_v1::AtomicU8; 1usize] =
        [::fdr::__private_v1::AtomicU8::new(0)];
    #[::fdr::__private_v1::linkme::distributed_slice(::fdr::__private_v1::FUNCTIONS)]
    # [linkme (crate = :: fdr :: __private_v1 :: linkme)]
    static __FDR_FN: ::fdr::__private_v1::FnDesc = ::fdr::__private_v1::FnDesc::nested(
        ::core::concat!(::core::module_path!(), "::handle"),
        __fdr_path,
        ::core::file!(),
        ::core::line!(),
        ::fdr::__private_v1::FnKindTag::Function,
        &["request"],
    )
    .with_trigger(50_000_000)
    .with_arg_kinds(&__FDR_ARG_KINDS);
    let __fdr_guard = ::fdr::__private_v1::CallGuard::enter_args(&__FDR_FN, &{
        #[allow(unused_imports)]
        use ::fdr::__private_v1::{ViaFallback as _, ViaLogArg as _};
        #[allow(non_camel_case_types, dead_code)]
        enum request {}
        let __fdr_args =
            ((&::fdr::__private_v1::ArgProbe::<_, request>::new(&request)).fdr_arg_kinded(),);
        if __FDR_FN.arg_kinds_unnoted() {
            __FDR_FN.note_arg_kinds(&[__fdr_args.0 .1]);
        }
        [__fdr_args.0 .0]
    });
    {
        serve(request, body)
    }
}
