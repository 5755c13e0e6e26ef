// A mistake in an annotated `async fn`'s body is reported as rustc reports it in the `async fn`:
// at the user's code, against the declared output type.

#[fdr::instrument_fdr]
async fn wrong_value() -> u32 {
    "not a number"
}

#[fdr::instrument_fdr]
async fn wrong_return(x: u32) -> u32 {
    if x == 0 {
        return "zero";
    }
    x
}

#[fdr::instrument_fdr]
async fn moved(s: String) -> usize {
    drop(s);
    s.len()
}

fn main() {}
