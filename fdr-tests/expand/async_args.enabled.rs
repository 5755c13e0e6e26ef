#[inline]
pub fn store<T: Into<u64>>(
    n: u64,
    __fdr_arg1: (u8, u8),
    __fdr_arg2: Guard,
    r: T,
) -> impl ::core::future::Future<Output = impl Display> {
    fn __fdr_path() -> &'static str {
        ::fdr::__private_v1::type_name_of(__fdr_path)
    }
    static __FDR_ARG_KINDS: [::fdr::__private_v1::AtomicU8; 1usize] =
        [::fdr::__private_v1::AtomicU8::new(0)];
    #[::fdr::__private_v1::linkme::distributed_slice(::fdr::__private_v1::FUNCTIONS)]
    # [linkme (crate = :: fdr :: __private_v1 :: linkme)]
    static __FDR_FN: ::fdr::__private_v1::FnDesc = ::fdr::__private_v1::FnDesc::nested(
        ::core::concat!(::core::module_path!(), "::store"),
        __fdr_path,
        ::core::file!(),
        ::core::line!(),
        ::fdr::__private_v1::FnKindTag::Async,
        &["n"],
    )
    .with_arg_kinds(&__FDR_ARG_KINDS);
    ::fdr::__private_v1::Instrumented::started_with_args(
        &__FDR_FN,
        {
            #[allow(unused_variables)]
            let (a, b) = &__fdr_arg1;
            {
                #[allow(unused_imports)]
                use ::fdr::__private_v1::{ViaFallback as _, ViaLogArg as _};
                #[allow(non_camel_case_types, dead_code)]
                enum n {}
                let __fdr_args =
                    ((&::fdr::__private_v1::ArgProbe::<_, n>::new(&n)).fdr_arg_kinded(),);
                if __FDR_FN.arg_kinds_unnoted() {
                    __FDR_FN.note_arg_kinds(&[__fdr_args.0 .1]);
                }
                [__fdr_args.0 .0]
            }
        },
        ::fdr::__private_v1::TaskStart::now(&__FDR_FN),
        async move {
            #[allow(unreachable_code, unreachable_patterns)]
            if let ::core::option::Option::Some(__fdr_ret) = ::core::option::Option::None::<_> {
                return __fdr_ret;
            }
            let mut n = n;
            let __fdr_arg1 = __fdr_arg1;
            let (a, b) = __fdr_arg1;
            let __fdr_arg2 = __fdr_arg2;
            let ref r = r;
            {
                n += u64::from(a + b);
                n
            }
        },
    )
}
