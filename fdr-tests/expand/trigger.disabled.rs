pub fn handle(request: u32, body: &[u8]) -> usize {
    serve(request, body)
}
