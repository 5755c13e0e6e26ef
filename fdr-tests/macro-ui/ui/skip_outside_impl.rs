use fdr::instrument_fdr;

#[instrument_fdr(skip)]
fn free() {}

struct S;

#[instrument_fdr(skip)]
impl S {
    fn a(&self) {}
}

impl S {
    #[instrument_fdr(skip)]
    fn b(&self) {}
}

#[instrument_fdr]
impl S {
    #[instrument_fdr(skip, log_args)]
    fn c(&self, n: u32) -> u32 {
        n
    }
}

fn main() {}
