#[instrument_fdr(trigger = "50ms", log_args(request))]
pub fn handle(request: u32, body: &[u8]) -> usize {
    serve(request, body)
}
