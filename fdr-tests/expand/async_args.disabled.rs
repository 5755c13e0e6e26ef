pub async fn store<T: Into<u64>>(mut n: u64, (a, b): (u8, u8), _: Guard, ref r: T) -> impl Display {
    n += u64::from(a + b);
    n
}
