impl Point {
    #[inline]
    pub fn x(&self) -> i32 {
        #[::fdr::__private_v1::linkme::distributed_slice(::fdr::__private_v1::FUNCTIONS)]
        # [linkme (crate = :: fdr :: __private_v1 :: linkme)]
        static __FDR_FN: ::fdr::__private_v1::FnDesc = ::fdr::__private_v1::FnDesc::new(
            ::core::concat!(::core::module_path!(), "::Point::x"),
            ::core::file!(),
            ::core::line!(),
            ::fdr::__private_v1::FnKindTag::Function,
            &[],
        );
        let __fdr_guard = ::fdr::__private_v1::CallGuard::enter(&__FDR_FN);
        {
            self.x
        }
    }
}
