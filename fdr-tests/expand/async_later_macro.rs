#[instrument_fdr]
#[tokio::main(flavor = "current_thread")]
#[must_use]
async fn serve(port: u16) -> u16 {
    tokio::task::yield_now().await;
    port
}
