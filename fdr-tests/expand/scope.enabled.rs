fn scope() {
    let __fdr_scope = {
        #[::fdr::__private::linkme::distributed_slice(::fdr::__private::FUNCTIONS)]
        # [linkme (crate = :: fdr :: __private :: linkme)]
        static __FDR_SCOPE: ::fdr::__private::FnDesc = ::fdr::__private::FnDesc::new(
            ::core::concat!(::core::module_path!(), "::parse_header"),
            ::core::file!(),
            ::core::line!(),
            ::fdr::__private::FnKindTag::Scope,
            &[],
        );
        ::fdr::__private::CallGuard::enter(&__FDR_SCOPE)
    };
}
