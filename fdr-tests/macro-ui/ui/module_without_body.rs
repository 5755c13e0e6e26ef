use fdr::instrument_fdr;

// rustc reports its own errors about an attribute on a module in another file (and here the file
// does not exist); ours says what to write.
#[instrument_fdr]
mod elsewhere;

fn main() {}
