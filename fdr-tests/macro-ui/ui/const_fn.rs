use fdr::instrument_fdr;

#[instrument_fdr]
const fn square(x: u32) -> u32 {
    x * x
}

fn main() {
    square(2);
}
