use fdr::instrument_fdr;

#[instrument_fdr(name = 5)]
fn a() {}

#[instrument_fdr(name)]
fn b() {}

#[instrument_fdr(name = "")]
fn c() {}

#[instrument_fdr(name = some::path)]
fn d() {}

fn main() {}
