use fdr::instrument_fdr;

#[instrument_fdr(log_args, name = "a", log_args(x))]
fn f(x: u32) -> u32 {
    x
}

#[instrument_fdr(name = "a", name = "b")]
fn g() {}

fn main() {}
