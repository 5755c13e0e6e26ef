impl crate::codec::Decode for Frame<'_> {
    fn decode(bytes: &[u8]) -> Self {
        #[::fdr::__private::linkme::distributed_slice(::fdr::__private::FUNCTIONS)]
        # [linkme (crate = :: fdr :: __private :: linkme)]
        static __FDR_FN: ::fdr::__private::FnDesc = ::fdr::__private::FnDesc::new(
            ::core::concat!(
                "<",
                ::core::module_path!(),
                "::Frame as ",
                ::core::env!("CARGO_CRATE_NAME"),
                "::codec::Decode>::decode"
            ),
            ::core::file!(),
            ::core::line!(),
            ::fdr::__private::FnKindTag::Function,
            &[],
        );
        let __fdr_guard = ::fdr::__private::CallGuard::enter(&__FDR_FN);
        {
            Frame::parse(bytes)
        }
    }
}
