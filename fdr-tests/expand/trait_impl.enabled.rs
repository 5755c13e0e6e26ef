impl crate::codec::Decode for Frame<'_> {
    #[inline]
    fn decode(bytes: &[u8]) -> Self {
        #[::fdr::__private_v1::linkme::distributed_slice(::fdr::__private_v1::FUNCTIONS)]
        # [linkme (crate = :: fdr :: __private_v1 :: linkme)]
        static __FDR_FN: ::fdr::__private_v1::FnDesc = ::fdr::__private_v1::FnDesc::new(
            ::core::concat!(
                "<",
                ::core::module_path!(),
                "::Frame as ",
                ::core::env!("CARGO_CRATE_NAME"),
                "::codec::Decode>::decode"
            ),
            ::core::file!(),
            ::core::line!(),
            ::fdr::__private_v1::FnKindTag::Function,
            &[],
        );
        let __fdr_guard = ::fdr::__private_v1::CallGuard::enter(&__FDR_FN);
        {
            Frame::parse(bytes)
        }
    }
}
