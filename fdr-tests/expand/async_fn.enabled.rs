async fn fetch(&self, key: &str) -> Result<Vec<u8>, Error> {
    fn __fdr_path() -> &'static str {
        ::fdr::__private::type_name_of(__fdr_path)
    }
    #[::fdr::__private::linkme::distributed_slice(::fdr::__private::FUNCTIONS)]
    # [linkme (crate = :: fdr :: __private :: linkme)]
    static __FDR_FN: ::fdr::__private::FnDesc = ::fdr::__private::nested_desc(
        ::core::concat!(::core::module_path!(), "::fetch"),
        __fdr_path,
        ::core::file!(),
        ::core::line!(),
        ::fdr::__private::FnKindTag::Async,
        &[],
    );
    ::fdr::__private::Instrumented::new(&__FDR_FN, async move {
        let value = self.store.get(key).await?;
        Ok(value)
    })
    .await
}
