use fdr::instrument_fdr;

fn next(x: u32) -> u32 {
    x + 1
}

#[instrument_fdr(tail)]
fn ends_with_sum(x: u32) -> u32 {
    next(x) + 1
}

#[instrument_fdr(tail)]
fn ends_with_statement(x: u32) {
    next(x);
}

#[instrument_fdr(tail)]
fn empty() {}

#[instrument_fdr(tail)]
async fn later(x: u32) -> u32 {
    next(x)
}

fn main() {}
