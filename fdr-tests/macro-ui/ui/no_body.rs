use fdr::instrument_fdr;

trait Service {
    #[instrument_fdr]
    fn call(&self) -> u32;
}

#[instrument_fdr]
trait Store {
    #[instrument_fdr]
    fn get(&self) -> u32;
}

fn main() {}
