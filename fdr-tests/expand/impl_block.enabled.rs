impl<T: Clone> Cache<T> {
    pub const fn new() -> Self {
        Cache { items: Vec::new() }
    }
    #[inline]
    pub fn get(&self, i: usize) -> Option<T> {
        #[::fdr::__private_v1::linkme::distributed_slice(::fdr::__private_v1::FUNCTIONS)]
        # [linkme (crate = :: fdr :: __private_v1 :: linkme)]
        static __FDR_FN: ::fdr::__private_v1::FnDesc = ::fdr::__private_v1::FnDesc::new(
            ::core::concat!(::core::module_path!(), "::Cache::get"),
            ::core::file!(),
            ::core::line!(),
            ::fdr::__private_v1::FnKindTag::Function,
            &[],
        );
        let __fdr_guard = ::fdr::__private_v1::CallGuard::enter(&__FDR_FN);
        {
            self.items.get(i).cloned()
        }
    }
    pub fn len(&self) -> usize {
        self.items.len()
    }
    #[inline]
    pub fn resize(&mut self, n: usize) {
        static __FDR_ARG_KINDS: [::fdr::__private_v1::AtomicU8; 1usize] =
            [::fdr::__private_v1::AtomicU8::new(0)];
        #[::fdr::__private_v1::linkme::distributed_slice(::fdr::__private_v1::FUNCTIONS)]
        # [linkme (crate = :: fdr :: __private_v1 :: linkme)]
        static __FDR_FN: ::fdr::__private_v1::FnDesc = ::fdr::__private_v1::FnDesc::new(
            ::core::concat!(::core::module_path!(), "::Cache::resize"),
            ::core::file!(),
            ::core::line!(),
            ::fdr::__private_v1::FnKindTag::Function,
            &["n"],
        )
        .with_arg_kinds(&__FDR_ARG_KINDS);
        let __fdr_guard = ::fdr::__private_v1::CallGuard::enter_args(&__FDR_FN, &{
            #[allow(unused_imports)]
            use ::fdr::__private_v1::{ViaFallback as _, ViaLogArg as _};
            #[allow(non_camel_case_types, dead_code)]
            enum n {}
            let __fdr_args = ((&::fdr::__private_v1::ArgProbe::<_, n>::new(&n)).fdr_arg_kinded(),);
            if __FDR_FN.arg_kinds_unnoted() {
                __FDR_FN.note_arg_kinds(&[__fdr_args.0 .1]);
            }
            [__fdr_args.0 .0]
        });
        {
            self.items.truncate(n);
        }
    }
}
