#[instrument_fdr(log_args(len, r#type), name = "io::read")]
fn read(buf: &mut [u8], len: usize, r#type: u8) -> usize {
    buf.len().min(len) + r#type as usize
}
