use fdr::instrument_fdr;

struct S;

#[instrument_fdr(trigger = "50ms")]
impl S {
    fn a(&self) -> u32 {
        std::process::id()
    }
}

#[instrument_fdr(trigger = "50ms")]
trait T {
    fn b(&self) {}
}

#[instrument_fdr(name = "m")]
mod named {}

#[instrument_fdr(log_args)]
mod logged {}

#[instrument_fdr(tail)]
mod tailed {}

#[instrument_fdr(trigger = "1s")]
mod triggered {}

#[instrument_fdr(skip)]
mod skipped {}

// The misannotated module is kept as written: its functions are still there to call.
#[instrument_fdr(trigger = "10ms")]
mod kept {
    pub fn run() -> u32 {
        std::process::id()
    }
}

fn main() {
    S.a();
    kept::run();
}
