use fdr::instrument_fdr;

/// Another crate's type, as an extractor is to a web handler: no `LogArg`, and the orphan rule
/// forbids implementing it here.
struct Path<T>(T);

#[instrument_fdr(log_args(p))]
fn item(p: Path<u64>) -> u64 {
    p.0
}

#[instrument_fdr(log_args(value))]
fn generic<T: Copy>(value: T) -> T {
    value
}

/// What the note says to do instead, which compiles.
#[instrument_fdr(log_args(id))]
fn item_by_id(Path(id): Path<u64>) -> u64 {
    id
}

fn main() {
    let _ = item(Path(7)) + item_by_id(Path(7));
    generic(7u8);
}
