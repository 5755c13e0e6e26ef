use fdr::instrument_fdr;

#[instrument_fdr(log_arg)]
fn f(x: u32) -> u32 {
    x
}

#[instrument_fdr(tail, "name")]
fn g() {}

#[instrument_fdr(tail skip)]
fn h() {}

fn main() {}
