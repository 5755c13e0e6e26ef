use fdr::instrument_fdr;

struct Request {
    id: u32,
}

#[instrument_fdr(log_args)]
fn handle(request: Request, retries: u32) -> u32 {
    request.id + retries
}

#[instrument_fdr(log_args(name))]
fn greet(name: String) -> usize {
    name.len()
}

#[instrument_fdr(log_args(value))]
fn generic<T>(value: T) -> T {
    value
}

fn main() {
    handle(Request { id: 1 }, 0);
    greet(String::new());
    generic(1);
}
