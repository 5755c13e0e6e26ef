#[inline]
fn serve(&self, rx: Receiver<u32>) -> impl ::core::future::Future<Output = u32> {
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
    #[::fdr::__private_v1::linkme::distributed_slice(::fdr::__private_v1::FUNCTIONS)]
    # [linkme (crate = :: fdr :: __private_v1 :: linkme)]
    static __FDR_AWAIT_1: ::fdr::__private_v1::FnDesc = ::fdr::__private_v1::FnDesc::nested(
        ::core::concat!(::core::module_path!(), "::serve"),
        __fdr_path,
        ::core::file!(),
        ::core::line!(),
        ::fdr::__private_v1::FnKindTag::Await,
        &[],
    )
    .at_column(::core::column!());
    #[::fdr::__private_v1::linkme::distributed_slice(::fdr::__private_v1::FUNCTIONS)]
    # [linkme (crate = :: fdr :: __private_v1 :: linkme)]
    static __FDR_AWAIT_2: ::fdr::__private_v1::FnDesc = ::fdr::__private_v1::FnDesc::nested(
        ::core::concat!(::core::module_path!(), "::serve"),
        __fdr_path,
        ::core::file!(),
        ::core::line!(),
        ::fdr::__private_v1::FnKindTag::Await,
        &[],
    )
    .at_column(::core::column!());
    #[::fdr::__private_v1::linkme::distributed_slice(::fdr::__private_v1::FUNCTIONS)]
    # [linkme (crate = :: fdr :: __private_v1 :: linkme)]
    static __FDR_AWAIT_3: ::fdr::__private_v1::FnDesc = ::fdr::__private_v1::FnDesc::nested(
        ::core::concat!(::core::module_path!(), "::serve"),
        __fdr_path,
        ::core::file!(),
        ::core::line!(),
        ::fdr::__private_v1::FnKindTag::Await,
        &[],
    )
    .at_column(::core::column!());
    #[::fdr::__private_v1::linkme::distributed_slice(::fdr::__private_v1::FUNCTIONS)]
    # [linkme (crate = :: fdr :: __private_v1 :: linkme)]
    static __FDR_AWAIT_4: ::fdr::__private_v1::FnDesc = ::fdr::__private_v1::FnDesc::nested(
        ::core::concat!(::core::module_path!(), "::serve"),
        __fdr_path,
        ::core::file!(),
        ::core::line!(),
        ::fdr::__private_v1::FnKindTag::Await,
        &[],
    )
    .at_column(::core::column!());
    #[::fdr::__private_v1::linkme::distributed_slice(::fdr::__private_v1::FUNCTIONS)]
    # [linkme (crate = :: fdr :: __private_v1 :: linkme)]
    static __FDR_AWAIT_5: ::fdr::__private_v1::FnDesc = ::fdr::__private_v1::FnDesc::nested(
        ::core::concat!(::core::module_path!(), "::serve"),
        __fdr_path,
        ::core::file!(),
        ::core::line!(),
        ::fdr::__private_v1::FnKindTag::Await,
        &[],
    )
    .at_column(::core::column!());
    #[::fdr::__private_v1::linkme::distributed_slice(::fdr::__private_v1::FUNCTIONS)]
    # [linkme (crate = :: fdr :: __private_v1 :: linkme)]
    static __FDR_AWAIT_6: ::fdr::__private_v1::FnDesc = ::fdr::__private_v1::FnDesc::nested(
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
            #[allow(unreachable_code, unreachable_patterns)]
            if let ::core::option::Option::Some(__fdr_ret) = ::core::option::Option::None::<u32> {
                return __fdr_ret;
            }
            let _ = &self;
            let rx = rx;
            {
                let a = ::fdr::__private_v1::Awaited::new(
                    &__FDR_AWAIT_1,
                    &__FDR_FN,
                    ::core::future::IntoFuture::into_future(
                        ::fdr::__private_v1::Awaited::new(
                            &__FDR_AWAIT_0,
                            &__FDR_FN,
                            ::core::future::IntoFuture::into_future(self.db.get(1)),
                        )
                        .await
                        .len(),
                    ),
                )
                .await;
                let later = async { self.db.get(2).await };
                let v = tokio::select! { biased ; v = :: fdr :: __private_v1 :: Awaited :: new (& __FDR_AWAIT_2 , & __FDR_FN , :: core :: future :: IntoFuture :: into_future (rx) ,) => v . unwrap () , _ = :: fdr :: __private_v1 :: Awaited :: new (& __FDR_AWAIT_3 , & __FDR_FN , :: core :: future :: IntoFuture :: into_future (tokio :: time :: sleep (LIMIT)) ,) , if self . bounded => { :: fdr :: __private_v1 :: Awaited :: new (& __FDR_AWAIT_4 , & __FDR_FN , :: core :: future :: IntoFuture :: into_future (self . late ()) ,) . await } , else => 0 , };
                let (x, y) = tokio::join!(
                    ::fdr::__private_v1::Awaited::new(
                        &__FDR_AWAIT_5,
                        &__FDR_FN,
                        ::core::future::IntoFuture::into_future(later),
                    ),
                    ::fdr::__private_v1::Awaited::new(
                        &__FDR_AWAIT_6,
                        &__FDR_FN,
                        ::core::future::IntoFuture::into_future(self.db.get(3)),
                    )
                );
                println!("{}", self.db.get(4).await);
                a + v + x + y
            }
        },
    )
}
