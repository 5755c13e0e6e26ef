impl<T: Clone> Cache<T> {
    pub const fn new() -> Self {
        Cache { items: Vec::new() }
    }
    pub fn get(&self, i: usize) -> Option<T> {
        self.items.get(i).cloned()
    }
    pub fn len(&self) -> usize {
        self.items.len()
    }
    pub fn resize(&mut self, n: usize) {
        self.items.truncate(n);
    }
}
