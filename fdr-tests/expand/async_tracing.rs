#[instrument_fdr(log_args(key))]
#[tracing::instrument(skip(db))]
async fn lookup(db: &Db, key: u64) -> u64 {
    db.ready().await;
    key
}
