use fdr::instrument_fdr;

#[instrument_fdr(always, skip)]
fn free() {}

struct S;

#[instrument_fdr]
impl S {
    #[instrument_fdr(skip, always)]
    fn a(&self) {}
}

#[instrument_fdr]
mod m {
    #[instrument_fdr(always, skip)]
    pub fn f() {}

    // `skip` on an item of a module leaves it out; beside an option that records, it is a
    // contradiction.
    #[instrument_fdr(skip, trigger = "1ms")]
    pub fn g() {}
}

fn main() {
    free();
    S.a();
    m::f();
    m::g();
}
