use fdr::instrument_fdr;

#[instrument_fdr]
struct Point {
    x: u32,
}

#[instrument_fdr]
enum Mode {
    On,
}

#[instrument_fdr]
const LIMIT: u32 = 5;

#[instrument_fdr]
static COUNT: u32 = 0;

#[instrument_fdr]
type Alias = u32;

fn main() {}
