impl Point {
    pub fn x(&self) -> i32 {
        self.x
    }
}
