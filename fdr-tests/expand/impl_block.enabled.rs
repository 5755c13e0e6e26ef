impl<T: Clone> Cache<T> {
    pub const fn new() -> Self {
        Cache { items: Vec::new() }
    }
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
    pub fn resize(&mut self, n: usize) {
        #[::fdr::__private_v1::linkme::distributed_slice(::fdr::__private_v1::FUNCTIONS)]
        # [linkme (crate = :: fdr :: __private_v1 :: linkme)]
        static __FDR_FN: ::fdr::__private_v1::FnDesc = ::fdr::__private_v1::FnDesc::new(
            ::core::concat!(::core::module_path!(), "::Cache::resize"),
            ::core::file!(),
            ::core::line!(),
            ::fdr::__private_v1::FnKindTag::Function,
            &["n"],
        );
        let __fdr_guard = ::fdr::__private_v1::CallGuard::enter_args(&__FDR_FN, &{
            #[allow(unused_imports)]
            use ::fdr::__private_v1::{ViaFallback as _, ViaLogArg as _};
            #[allow(non_camel_case_types, dead_code)]
            enum n {}
            [(&::fdr::__private_v1::ArgProbe::<_, n>::new(&n)).fdr_arg()]
        });
        {
            self.items.truncate(n);
        }
    }
}
