use fdr::instrument_fdr;

#[instrument_fdr(log_args(count, size))]
fn resize(count: u32, len: usize) -> usize {
    count as usize + len
}

#[instrument_fdr(log_args(x))]
fn none() {}

#[instrument_fdr(log_args(n, n))]
fn twice(n: u32) -> u32 {
    n
}

#[instrument_fdr(log_args())]
fn empty(n: u32) -> u32 {
    n
}

struct S;

impl S {
    #[instrument_fdr(log_args(self))]
    fn method(&self, n: u32) -> u32 {
        n
    }
}

fn main() {}
