#[tracing::instrument(skip(db))]
# [:: fdr :: __private_v1 :: deferred_task ({ fn __fdr_path () -> & 'static str { :: fdr :: __private_v1 :: type_name_of (__fdr_path) } static __FDR_ARG_KINDS : [:: fdr :: __private_v1 :: AtomicU8 ; 1usize] = [:: fdr :: __private_v1 :: AtomicU8 :: new (0)] ; # [:: fdr :: __private_v1 :: linkme :: distributed_slice (:: fdr :: __private_v1 :: FUNCTIONS)] # [linkme (crate = :: fdr :: __private_v1 :: linkme)] static __FDR_FN : :: fdr :: __private_v1 :: FnDesc = :: fdr :: __private_v1 :: FnDesc :: nested (:: core :: concat ! (:: core :: module_path ! () , "::lookup") , __fdr_path , :: core :: file ! () , :: core :: line ! () , :: fdr :: __private_v1 :: FnKindTag :: Async , & ["key"] ,) . with_arg_kinds (& __FDR_ARG_KINDS) ; } ({ # [allow (unused_imports)] use :: fdr :: __private_v1 :: { ViaFallback as _ , ViaLogArg as _ } ; # [allow (non_camel_case_types , dead_code)] enum key { } let __fdr_args = ((& :: fdr :: __private_v1 :: ArgProbe :: < _ , key > :: new (& key)) . fdr_arg_kinded () ,) ; if __FDR_FN . arg_kinds_unnoted () { __FDR_FN . note_arg_kinds (& [__fdr_args . 0 . 1]) ; } [__fdr_args . 0 . 0] }))]
async fn lookup(db: &Db, key: u64) -> u64 {
    #[::fdr::__private_v1::linkme::distributed_slice(::fdr::__private_v1::FUNCTIONS)]
    # [linkme (crate = :: fdr :: __private_v1 :: linkme)]
    static __FDR_AWAIT_0: ::fdr::__private_v1::FnDesc = ::fdr::__private_v1::FnDesc::nested(
        ::core::concat!(::core::module_path!(), "::lookup"),
        __fdr_path,
        ::core::file!(),
        ::core::line!(),
        ::fdr::__private_v1::FnKindTag::Await,
        &[],
    )
    .at_column(::core::column!());
    ::fdr::__private_v1::Awaited::new(
        &__FDR_AWAIT_0,
        &__FDR_FN,
        ::core::future::IntoFuture::into_future(db.ready()),
    )
    .await;
    key
}
