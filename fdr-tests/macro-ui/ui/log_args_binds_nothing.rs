use fdr::instrument_fdr;

#[instrument_fdr(log_args)]
fn ignores(_: u32, (_, _): (u8, u8)) {}

struct Counter(u32);

impl Counter {
    #[instrument_fdr(log_args)]
    fn bump(&mut self) {
        self.0 += 1;
    }
}

fn main() {
    ignores(1, (2, 3));
    Counter(0).bump();
}
