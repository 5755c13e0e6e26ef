use fdr::instrument_fdr;

#[instrument_fdr(trigger = "auto:k=0.5")]
fn k_below_one() {}

#[instrument_fdr(trigger = "auto:k=many")]
fn k_not_a_number() {}

#[instrument_fdr(trigger = "auto:5")]
fn no_k() {}

#[instrument_fdr(trigger = "automatic")]
fn not_auto() {}

fn main() {}
