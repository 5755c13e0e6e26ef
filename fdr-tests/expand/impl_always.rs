#[instrument_fdr(always)]
impl Point {
    pub fn x(&self) -> i32 {
        self.x
    }
}
