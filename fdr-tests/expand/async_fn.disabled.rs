async fn fetch(&self, key: &str) -> Result<Vec<u8>, Error> {
    let value = self.store.get(key).await?;
    Ok(value)
}
