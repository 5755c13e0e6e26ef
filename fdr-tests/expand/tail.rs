#[instrument_fdr(tail)]
fn step(state: &mut State, n: u32) -> u32 {
    if n == 0 {
        return 0;
    }
    state.advance(n - 1)
}
