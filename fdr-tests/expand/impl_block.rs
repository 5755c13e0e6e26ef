#[instrument_fdr]
impl<T: Clone> Cache<T> {
    pub const fn new() -> Self {
        Cache { items: Vec::new() }
    }
    pub fn get(&self, i: usize) -> Option<T> {
        self.items.get(i).cloned()
    }
    #[instrument_fdr(skip)]
    pub fn len(&self) -> usize {
        self.items.len()
    }
    #[fdr::instrument_fdr(log_args)]
    pub fn resize(&mut self, n: usize) {
        self.items.truncate(n);
    }
}
