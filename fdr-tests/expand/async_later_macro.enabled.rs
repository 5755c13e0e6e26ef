#[tokio::main(flavor = "current_thread")]
#[must_use]
async fn serve(port: u16) -> u16 {
    fn __fdr_path() -> &'static str {
        ::fdr::__private_v1::type_name_of(__fdr_path)
    }
    #[::fdr::__private_v1::linkme::distributed_slice(::fdr::__private_v1::FUNCTIONS)]
    # [linkme (crate = :: fdr :: __private_v1 :: linkme)]
    static __FDR_FN: ::fdr::__private_v1::FnDesc = ::fdr::__private_v1::FnDesc::nested(
        ::core::concat!(::core::module_path!(), "::serve"),
        __fdr_path,
        ::core::file!(),
        ::core::line!(),
        ::fdr::__private_v1::FnKindTag::Async,
        &[],
    );
    #[::fdr::__private_v1::linkme::distributed_slice(::fdr::__private_v1::FUNCTIONS)]
    # [linkme (crate = :: fdr :: __private_v1 :: linkme)]
    static __FDR_AWAIT_0: ::fdr::__private_v1::FnDesc = ::fdr::__private_v1::FnDesc::nested(
        ::core::concat!(::core::module_path!(), "::serve"),
        __fdr_path,
        ::core::file!(),
        ::core::line!(),
        ::fdr::__private_v1::FnKindTag::Await,
        &[],
    )
    .at_column(::core::column!());
    ::fdr::__private_v1::Instrumented::started(
        &__FDR_FN,
        ::fdr::__private_v1::TaskStart::now(&__FDR_FN),
        async move {
            ::fdr::__private_v1::Awaited::new(
                &__FDR_AWAIT_0,
                &__FDR_FN,
                ::core::future::IntoFuture::into_future(tokio::task::yield_now()),
            )
            .await;
            port
        },
    )
    .await
}
