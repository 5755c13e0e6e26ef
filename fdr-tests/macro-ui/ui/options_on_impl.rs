use fdr::instrument_fdr;

struct S;

#[instrument_fdr(name = "s")]
impl S {
    fn a(&self) {}
}

#[instrument_fdr(tail)]
impl S {
    fn b(&self) {}
}

#[instrument_fdr(log_args(n))]
impl S {
    fn c(&self, n: u32) -> u32 {
        n
    }
}

fn main() {}
