impl Interval {
    pub fn lower(&self) -> u32 {
        self.lower
    }
    pub fn set_lower(&mut self, lower: u32) {
        self.lower = lower;
    }
    pub fn is_empty(&self) -> bool {
        self.upper < self.lower
    }
    pub fn bounds(&self) -> Option<(u32, u32)> {
        if self.is_valid {
            Some((self.lower, self.upper))
        } else {
            None
        }
    }
    pub fn len(&self) -> u32 {
        self.upper.saturating_sub(self.lower)
    }
    pub fn upper(&self) -> u32 {
        self.upper
    }
    pub fn sum(&self) -> u64 {
        let mut total = 0;
        for i in self.lower..self.upper {
            total += u64::from(i);
        }
        total
    }
}
