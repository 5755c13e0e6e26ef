fn scope() {
    let __fdr_scope = {
        #[::fdr::__private_v1::linkme::distributed_slice(::fdr::__private_v1::FUNCTIONS)]
        # [linkme (crate = :: fdr :: __private_v1 :: linkme)]
        static __FDR_SCOPE: ::fdr::__private_v1::FnDesc = ::fdr::__private_v1::FnDesc::new(
            ::core::concat!(::core::module_path!(), "::parse_header"),
            ::core::file!(),
            ::core::line!(),
            ::fdr::__private_v1::FnKindTag::Scope,
            &[],
        );
        ::fdr::__private_v1::CallGuard::enter(&__FDR_SCOPE)
    };
}
