#[instrument_fdr]
impl crate::codec::Decode for Frame<'_> {
    fn decode(bytes: &[u8]) -> Self {
        Frame::parse(bytes)
    }
}
